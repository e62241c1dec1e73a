#!/usr/bin/env bash
# Build the machine image: the kernel, initramfs and root file system the QEMU
# driver (internal/sandbox/qemu) boots learners' machines from.
#
#   ./scripts/build-machine-image.sh           # build only if missing or out of date
#   ./scripts/build-machine-image.sh --force   # rebuild even if up to date
#   ./scripts/build-machine-image.sh --print   # print the current image's directory
#
# The root file system is tuxlab/sandbox-debian:latest exported (so the learner
# account, sudo, motd and tools are those of the container sandboxes), with
# Debian's kernel, systemd as init and the system-administration packages of
# MACHINE_PACKAGES installed by apt-get in a chroot (Debian's mirror is the only
# network the build uses), then configured to boot under QEMU. The result is
#
#   $TUXLAB_MACHINE_DIR/<recipe>/{vmlinuz,initrd.img,base.img,kernel.release,packages.txt}
#   $TUXLAB_MACHINE_DIR/<recipe>/{tools.img,tools.id}
#   $TUXLAB_MACHINE_DIR/current -> <recipe>
#
# tools.img is the trusted tools (tuxlab/sandbox-tools:latest's /tuxlab, an
# ext4 without a journal) that the driver attaches read-only to a machine and
# the guest mounts at /.tuxlab; tools.id names the image and its id.
# <recipe> is the first 16 hex digits of a sha256 of this file and of the
# source and tools images' ids: changing either builds a new directory, and `current`
# moves to it once it is complete. Older directories are kept (machines
# created from them still use their base.img as a backing file); remove one by
# hand once no machine uses it. See docs/machines.md.
#
# Environment (all optional):
#   DOCKER              container engine CLI (default: docker)
#   TUXLAB_MACHINE_DIR  where images go (default: /var/lib/tuxlab/machine)
#   TMPDIR              where the temporary root file system goes (default: /var/tmp)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOCKER=${DOCKER:-docker}
SOURCE_IMAGE=tuxlab/sandbox-debian:latest
TOOLS_IMAGE=tuxlab/sandbox-tools:latest
OUT=${TUXLAB_MACHINE_DIR:-/var/lib/tuxlab/machine}

# What a machine adds to the container image: a kernel and an init, and what
# the LFCS-style lessons need a kernel and disks of their own for.
MACHINE_PACKAGES=(
	systemd-sysv udev dbus linux-image-cloud-amd64 initramfs-tools zstd kmod
	lvm2 mdadm cryptsetup cryptsetup-bin nftables quota nfs-common nfs-kernel-server chrony
	apparmor apparmor-utils openssh-server qemu-guest-agent e2fsprogs xfsprogs
	dosfstools parted fdisk procps less iproute2
)

say() { printf '==> %s\n' "$*"; }
die() {
	printf '==> ERROR: %s\n' "$*" >&2
	exit 1
}
elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

FORCE=0
PRINT=0
for arg in "$@"; do
	case $arg in
	--force | -f) FORCE=1 ;;
	--print) PRINT=1 ;;
	-h | --help)
		sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument: $arg (see --help)" ;;
	esac
done

if [ "$PRINT" = 1 ]; then
	[ -f "$OUT/current/.complete" ] || die "no machine image in $OUT: run $0"
	readlink -f "$OUT/current"
	exit 0
fi

for tool in "$DOCKER" chroot mkfs.ext4 tar sha256sum flock; do
	command -v "$tool" >/dev/null || die "$tool is missing (mkfs.ext4: apt-get install e2fsprogs)"
done

# The source and tools images: built by build-images.sh when missing or out of date.
"$REPO/scripts/build-images.sh" debian | sed 's/^/    /'
"$REPO/scripts/build-images.sh" tools | sed 's/^/    /'
IMAGE_ID=$("$DOCKER" image inspect -f '{{.Id}}' "$SOURCE_IMAGE") ||
	die "$SOURCE_IMAGE is not on the engine: run ./scripts/build-images.sh debian"
TOOLS_ID=$("$DOCKER" image inspect -f '{{.Id}}' "$TOOLS_IMAGE") ||
	die "$TOOLS_IMAGE is not on the engine: run ./scripts/build-images.sh tools"
RECIPE=$({
	sha256sum <"${BASH_SOURCE[0]}"
	printf '%s\n' "$IMAGE_ID" "$TOOLS_ID"
} | sha256sum | cut -c1-16)
DEST=$OUT/$RECIPE

point_current() {
	[ "$(readlink "$OUT/current" 2>/dev/null)" != "$RECIPE" ] || return 0
	ln -sfn "$RECIPE" "$OUT/current.tmp"
	mv -T "$OUT/current.tmp" "$OUT/current"
}

if [ "$FORCE" = 0 ] && [ -f "$DEST/.complete" ]; then
	point_current
	say "machine image $DEST already present (recipe $RECIPE; --force rebuilds)"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "building the machine image needs root (chroot, device files): sudo $0"
mkdir -p "$OUT"

# One build at a time: tests and CI may call this concurrently.
exec 9>"$OUT/.lock"
if ! flock -n 9; then
	say "another build-machine-image.sh is running: waiting for it"
	flock 9
	if [ "$FORCE" = 0 ] && [ -f "$DEST/.complete" ]; then
		point_current
		say "machine image $DEST built meanwhile"
		exit 0
	fi
fi

START=$SECONDS
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tuxlab-machine.XXXXXX")
ROOT=$WORK/rootfs
CID=
unmount_all() {
	local m
	awk -v d="$WORK/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
}
cleanup() {
	if [ -n "$CID" ]; then "$DOCKER" rm -f "$CID" >/dev/null 2>&1 || true; fi
	unmount_all
	rm -rf --one-file-system "$WORK" "$OUT/.$RECIPE.tmp" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "[machine] recipe $RECIPE: exporting $SOURCE_IMAGE"
mkdir -p "$ROOT"
CID=$("$DOCKER" create "$SOURCE_IMAGE" /bin/true)
"$DOCKER" export "$CID" | tar -xpf - -C "$ROOT" --numeric-owner
"$DOCKER" rm -f "$CID" >/dev/null
CID=
say "[machine] exported in $(elapsed $((SECONDS - START))), $(du -sm "$ROOT" | cut -f1) MB"

say "[machine] apt-get install in a chroot: ${MACHINE_PACKAGES[*]}"
rm -f "$ROOT/etc/resolv.conf"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
in_root() { chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
apt_log=$WORK/apt.log
if ! { in_root apt-get -q update && in_root apt-get -q install -y --no-install-recommends "${MACHINE_PACKAGES[@]}"; } >"$apt_log" 2>&1; then
	tail -n 30 "$apt_log" | sed 's/^/    | /' >&2
	die "apt-get in the chroot failed (output above): check the Debian mirror in the image's sources"
fi
grep -c '^Setting up ' "$apt_log" | sed 's/^/    packages set up: /'
in_root apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT/usr/sbin/policy-rc.d"
# shellcheck disable=SC2016 # a dpkg-query format, not shell
in_root dpkg-query -W -f '${Package} ${Version}\n' >"$WORK/packages.txt"
say "[machine] packages installed at $(elapsed $((SECONDS - START)))"

say "[machine] configuring the guest"
# A small initramfs: the virtio drivers the root disk needs, not every module.
sed -i 's/^MODULES=.*/MODULES=list/' "$ROOT/etc/initramfs-tools/initramfs.conf"
printf '%s\n' virtio_pci virtio_blk virtio_console virtio_net >>"$ROOT/etc/initramfs-tools/modules"
KVER=$(find "$ROOT/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -1)
[ -n "$KVER" ] || die "no kernel was installed in the chroot"
in_root update-initramfs -c -k "$KVER" >/dev/null 2>&1 || in_root update-initramfs -u -k "$KVER" >/dev/null
unmount_all

rm -f "$ROOT/.dockerenv" "$ROOT/etc/resolv.conf" "$ROOT/var/lib/dbus/machine-id"
: >"$ROOT/etc/machine-id" # systemd makes a new one at each machine's first boot
echo machine >"$ROOT/etc/hostname" # the driver names each machine with systemd.hostname=
# Where the host's read-only tools disk is mounted (mount-tools below).
mkdir -p "$ROOT/.tuxlab"
chmod 0755 "$ROOT/.tuxlab"
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$ROOT/etc/hosts"
# The root disk is the overlay, larger than this file system: grow it at first boot.
printf 'LABEL=root / ext4 defaults,errors=remount-ro,x-systemd.growfs 0 1\n' >"$ROOT/etc/fstab"
# Network: DHCP on the one NIC a machine may have (systemd-networkd, no waiting).
# networkd starts when a NIC appears (the udev rule), not at every boot: a
# machine without a NIC (the default) does not pay for it. A lesson may still
# enable it for good (systemctl enable systemd-networkd).
mkdir -p "$ROOT/etc/systemd/network"
printf '[Match]\nName=eth*\n\n[Network]\nDHCP=ipv4\n' >"$ROOT/etc/systemd/network/80-dhcp.network"
in_root systemctl disable systemd-networkd.service >/dev/null 2>&1 || true
in_root systemctl enable systemd-networkd.socket >/dev/null 2>&1
# chrony likewise: with no network it has no time source (the host's clock is
# the guest's). NFS client services start when a lesson mounts a share
# (mount.nfs starts rpc.statd; rpcbind.socket activates rpcbind) or enables
# nfs-client.target. Each of these took 2-7 s of a 1-vCPU boot under TCG.
# The NFS server likewise: a learner enables nfs-server.service (part of a lesson),
# and a machine that serves nothing does not pay for nfsd and mountd at boot.
in_root systemctl disable chrony.service nfs-client.target rpcbind.service nfs-server.service >/dev/null 2>&1 || true
in_root systemctl enable rpcbind.socket >/dev/null 2>&1 || true
printf '%s\n' '# tuxlab: systemd-networkd and chrony start when the machine has a NIC.' \
	'ACTION=="add", SUBSYSTEM=="net", KERNEL=="eth*", TAG+="systemd", ENV{SYSTEMD_WANTS}+="systemd-networkd.service chrony.service"' \
	>"$ROOT/etc/udev/rules.d/80-tuxlab-networkd.rules"
# A lab's private segment (the driver's EnsureNetwork): no DHCP there; the
# driver passes the machine's static address (tuxlab.addr=10.77.N.M/24) and
# the segment's members (tuxlab.hosts=name=addr,...) on the kernel command
# line, which net-config turns into a networkd file (before 80-dhcp) and
# lines of /etc/hosts, each time networkd starts. The machine's own name
# resolves only to its own address. ("+": not as networkd's user, nor in its
# sandbox, which has /etc read-only.)
mkdir -p "$ROOT/usr/local/lib/tuxlab" "$ROOT/etc/systemd/system/systemd-networkd.service.d"
cat >"$ROOT/usr/local/lib/tuxlab/net-config" <<'EOF'
#!/bin/sh
# The static address and host names of a lab's segment, from /proc/cmdline.
addr= hosts=
for w in $(cat /proc/cmdline); do
	case $w in
	tuxlab.addr=*) addr=${w#tuxlab.addr=} ;;
	tuxlab.hosts=*) hosts=${w#tuxlab.hosts=} ;;
	esac
done
[ -n "$addr" ] || exit 0
mkdir -p /run/systemd/network
printf '[Match]\nName=eth0\n\n[Network]\nAddress=%s\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' "$addr" \
	>/run/systemd/network/10-tuxlab-segment.network
self=$(hostname) own=${addr%/*}
tmp=$(mktemp)
grep -v '# tuxlab-segment$' /etc/hosts >"$tmp" || true
# Members the driver announced since this boot began (they joined after it)
# stay: networkd may start after the announcement.
grep '# tuxlab-segment$' /etc/hosts | while read -r ip name _; do
	case ",$hosts," in *",$name="*) ;; *) printf '%s\t%s # tuxlab-segment\n' "$ip" "$name" >>"$tmp" ;; esac
done
echo "$hosts" | tr ',' '\n' | while IFS='=' read -r name ip; do
	[ -n "$name" ] || continue
	[ "$name" != "$self" ] || [ "$ip" = "$own" ] || continue
	printf '%s\t%s # tuxlab-segment\n' "$ip" "$name" >>"$tmp"
done
cat "$tmp" >/etc/hosts
rm -f "$tmp"
EOF
chmod 0755 "$ROOT/usr/local/lib/tuxlab/net-config"
printf '[Service]\nExecStartPre=-+/usr/local/lib/tuxlab/net-config\n' \
	>"$ROOT/etc/systemd/system/systemd-networkd.service.d/tuxlab-segment.conf"
# Units that only slow a boot down or have nothing to do in a machine.
for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
	e2scrub_reap.service getty@tty1.service systemd-pstore.service \
	systemd-networkd-wait-online.service systemd-binfmt.service modprobe@drm.service; do
	ln -sf /dev/null "$ROOT/etc/systemd/system/$u"
done
# The learner may start an SSH server (lessons do); the host's channel below is another sshd.
in_root systemctl disable ssh.service >/dev/null 2>&1 || true

# The host channel: sshd -i on the virtio-serial port tuxlab.ssh, accepting
# only the public key the host passes on the kernel command line
# (tuxlab.key=<base64 ed25519 key>), for root and every user. A port opens once,
# read-write, hence the one <> redirection.
mkdir -p "$ROOT/usr/local/lib/tuxlab"
cat >"$ROOT/usr/local/lib/tuxlab/channel-key" <<'EOF'
#!/bin/sh
# Writes the host's public key from the kernel command line for the tuxlab channel.
set -e
key=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^tuxlab\.key=//p' | tail -n 1)
mkdir -p /run/tuxlab
chmod 0755 /run/tuxlab
umask 022
printf 'ssh-ed25519 %s tuxlab-host\n' "$key" >/run/tuxlab/authorized_keys
EOF
chmod 0755 "$ROOT/usr/local/lib/tuxlab/channel-key"
# The machine's SSH host keys, made at its first boot: ed25519 and ECDSA only.
# (ssh-keygen -A also makes a 3072-bit RSA key: 5-10 s of a boot under TCG.
# A lesson's sshd serves the keys that exist; `ssh-keygen -A` adds RSA.)
cat >"$ROOT/usr/local/lib/tuxlab/host-keys" <<'EOF'
#!/bin/sh
# Makes the machine's missing SSH host keys (ed25519, ECDSA), as the warm start does.
set -e
for t in ed25519 ecdsa; do
	[ -s /etc/ssh/ssh_host_${t}_key ] || ssh-keygen -q -t "$t" -N '' -f /etc/ssh/ssh_host_${t}_key
done
EOF
chmod 0755 "$ROOT/usr/local/lib/tuxlab/host-keys"
# The trusted tools: the host attaches tools.img as a read-only virtio disk
# with the serial tuxlab-tools (after the learner's blank disks, so those stay
# vdb, vdc...). It is mounted at /.tuxlab before each channel sshd starts, so
# before any check runs over the channel, and again if root unmounted or
# covered it. Found by its serial in sysfs: no udev needed.
cat >"$ROOT/usr/local/lib/tuxlab/mount-tools" <<'EOF'
#!/bin/sh
# Mounts the host's read-only tools disk (serial tuxlab-tools) at /.tuxlab.
for f in /sys/block/vd*/serial; do
	[ "$(cat "$f" 2>/dev/null)" = tuxlab-tools ] || continue
	dev=${f%/serial}
	dev=/dev/${dev##*/}
	[ "$(findmnt -rn -o SOURCE --mountpoint /.tuxlab | tail -n 1)" = "$dev" ] && exit 0
	mkdir -p /.tuxlab
	exec mount -t ext4 -o ro,nodev,nosuid "$dev" /.tuxlab
done
exit 0
EOF
chmod 0755 "$ROOT/usr/local/lib/tuxlab/mount-tools"
# The channel's sshd on the port named tuxlab.ssh, found in sysfs rather than
# by udev's /dev/virtio-ports link: the port exists from the initramfs on
# (virtio_console), and waiting for udev to process it after coldplug put the
# channel 5-7 s later in the boot (measured). Ordered after basic.target (file
# systems, tmpfiles, AppArmor profiles loaded) like any service; wanted by
# sysinit.target, not by a target a lesson may change (rescue: not tested yet).
cat >"$ROOT/usr/local/lib/tuxlab/channel" <<'EOF'
#!/bin/sh
# Serves one SSH connection from the host on the virtio-serial port tuxlab.ssh.
for i in $(seq 600); do
	for f in /sys/class/virtio-ports/*/name; do
		if [ "$(cat "$f" 2>/dev/null)" = tuxlab.ssh ]; then
			port=${f%/name}
			exec /usr/sbin/sshd -i -e -o AuthorizedKeysFile=/run/tuxlab/authorized_keys \
				-o PermitRootLogin=prohibit-password -o PasswordAuthentication=no \
				-o KbdInteractiveAuthentication=no -o UseDNS=no -o MaxSessions=200 \
				<>"/dev/${port##*/}" >&0 2>/dev/null
		fi
	done
	sleep 0.1
done
echo "no virtio-serial port named tuxlab.ssh" >&2
exit 1
EOF
chmod 0755 "$ROOT/usr/local/lib/tuxlab/channel"
cat >"$ROOT/etc/systemd/system/tuxlab-channel.service" <<'EOF'
[Unit]
Description=tuxlab host channel (sshd -i on virtio-serial)
IgnoreOnIsolate=yes

[Service]
ExecStartPre=/usr/local/lib/tuxlab/host-keys
ExecStartPre=/bin/mkdir -p /run/sshd
ExecStartPre=/usr/local/lib/tuxlab/channel-key
ExecStartPre=-/usr/local/lib/tuxlab/mount-tools
ExecStart=/usr/local/lib/tuxlab/channel
Restart=always
RestartSec=100ms

[Install]
WantedBy=sysinit.target
EOF
in_root systemctl enable tuxlab-channel.service >/dev/null 2>&1
mkdir -p "$ROOT/etc/systemd/system/qemu-guest-agent.service.d"
printf '[Unit]\nIgnoreOnIsolate=yes\n' >"$ROOT/etc/systemd/system/qemu-guest-agent.service.d/isolate.conf"

# AppArmor's profile cache, compiled here for the guest kernel: without it
# apparmor.service compiles every profile at each machine's first boot (14-41 s
# under TCG). The cache is only used when its features match the running
# kernel's, so the guest kernel is booted once (init= a script that writes
# /sys/kernel/security/apparmor/features to a second disk, then exits) and
# apparmor_parser compiles against what it wrote. The profiles stay enforced:
# the cache only saves their compilation. Without QEMU the image has no cache
# (and boots slower).
apparmor_cache() {
	local probe=$WORK/probe qemu=qemu-system-x86_64 features
	command -v "$qemu" >/dev/null || {
		say "[machine] no $qemu: no AppArmor cache (apparmor.service will compile at each boot)"
		return 0
	}
	mkdir -p "$probe"
	cat >"$ROOT/usr/local/lib/tuxlab/apparmor-features" <<'EOF'
#!/bin/sh
# Build time only: writes this kernel's AppArmor features (a tar) to /dev/vdb.
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mount -t tmpfs tmpfs /mnt
cp -r /sys/kernel/security/apparmor/features /mnt/ && tar -C /mnt -cf /dev/vdb features
sync
EOF
	chmod 0755 "$ROOT/usr/local/lib/tuxlab/apparmor-features"
	mkfs.ext4 -q -F -L root -d "$ROOT" "$probe/root.img" "$(($(du -sm "$ROOT" | cut -f1) * 5 / 4 + 256))M" >/dev/null
	truncate -s 16M "$probe/out.tar"
	timeout 300 "$qemu" -M q35 -m 512 -nodefaults -no-user-config -display none -no-reboot \
		-accel tcg -cpu max -kernel "$ROOT/boot/vmlinuz-$KVER" -initrd "$ROOT/boot/initrd.img-$KVER" \
		-append "console=ttyS0 root=/dev/vda ro panic=-1 init=/usr/local/lib/tuxlab/apparmor-features" \
		-drive "file=$probe/root.img,if=virtio,format=raw,readonly=on" \
		-drive "file=$probe/out.tar,if=virtio,format=raw" \
		-serial "file:$probe/console.log" >/dev/null 2>&1 || true
	rm -f "$ROOT/usr/local/lib/tuxlab/apparmor-features"
	features=$ROOT/tmp/tuxlab-apparmor-features
	mkdir -p "$features"
	if ! tar -C "$features" -xf "$probe/out.tar" 2>/dev/null || [ ! -d "$features/features/domain" ]; then
		tail -n 20 "$probe/console.log" 2>/dev/null | sed 's/^/    | /' >&2
		rm -rf "$features"
		die "could not read the guest kernel's AppArmor features (its console above)"
	fi
	mount -t proc proc "$ROOT/proc"
	in_root apparmor_parser --kernel-features /tmp/tuxlab-apparmor-features/features \
		--write-cache --skip-kernel-load --quiet -- /etc/apparmor.d
	unmount_all
	rm -rf "$features"
	say "[machine] AppArmor cache: $(find "$ROOT/var/cache/apparmor" -type f | wc -l) files in $(ls "$ROOT/var/cache/apparmor")"
}
apparmor_cache

# make_tools_img DIR: DIR/tools.img, the tools image's /tuxlab tree as an ext4
# without a journal (it is only ever mounted read-only), and DIR/tools.id.
make_tools_img() {
	local tree=$WORK/tools used size
	mkdir -p "$tree"
	CID=$("$DOCKER" create "$TOOLS_IMAGE" /tuxlab/bin/true)
	"$DOCKER" export "$CID" | tar -xpf - -C "$tree" --numeric-owner tuxlab
	"$DOCKER" rm -f "$CID" >/dev/null
	CID=
	if [ ! -x "$tree/tuxlab/bin/bash" ] || [ ! -x "$tree/tuxlab/bin/busybox" ]; then
		die "$TOOLS_IMAGE has no /tuxlab/bin/{bash,busybox}"
	fi
	used=$(du -sm "$tree/tuxlab" | cut -f1)
	size=$((used * 5 / 4 + 8))
	mkfs.ext4 -q -F -L tuxlab-tools -O ^has_journal -m 0 -d "$tree/tuxlab" "$1/tools.img" "${size}M"
	chmod 0444 "$1/tools.img"
	printf '%s %s\n' "$TOOLS_IMAGE" "$TOOLS_ID" >"$1/tools.id"
	say "[machine] tools.img ${size} MiB from $TOOLS_IMAGE ($used MiB of files)"
}

say "[machine] kernel $KVER; making base.img"
mkdir -p "$OUT/.$RECIPE.tmp"
TMPDEST=$OUT/.$RECIPE.tmp
cp "$ROOT/boot/vmlinuz-$KVER" "$TMPDEST/vmlinuz"
cp "$ROOT/boot/initrd.img-$KVER" "$TMPDEST/initrd.img"
printf '%s\n' "$KVER" >"$TMPDEST/kernel.release"
cp "$WORK/packages.txt" "$TMPDEST/packages.txt"
# The file system: what the tree holds plus a quarter and 256 MiB, a multiple
# of 64 MiB. Each machine's overlay is at least this large (its disk bound).
used=$(du -sm "$ROOT" | cut -f1)
size=$(((used * 5 / 4 + 256 + 63) / 64 * 64))
mkfs.ext4 -q -F -L root -d "$ROOT" "$TMPDEST/base.img" "${size}M"
chmod 0444 "$TMPDEST/base.img"
make_tools_img "$TMPDEST"
touch "$TMPDEST/.complete"
rm -rf "$DEST"
mv -T "$TMPDEST" "$DEST"
point_current
say "[machine] built $DEST in $(elapsed $((SECONDS - START))): base.img ${size} MiB ($(du -m "$DEST/base.img" | cut -f1) MiB used), vmlinuz $(du -m "$DEST/vmlinuz" | cut -f1) MiB, initrd $(du -m "$DEST/initrd.img" | cut -f1) MiB"
