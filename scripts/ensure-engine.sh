#!/usr/bin/env bash
# Make sure a container engine answers, on storage that bounds each sandbox's
# disk, with sandbox networks kept off the host: install Debian's docker.io
# when it is missing (as root), give an engine this script installed a btrfs
# data root with quotas, start the daemon when none runs, wait until it
# answers, and add the firewall rules for sandbox networks.
#
#   ./scripts/ensure-engine.sh     # exit 0 when `docker version` reaches a daemon
#
# Storage, TUXLAB_ENGINE_STORAGE:
#   auto (default)  btrfs for an engine whose storage this script manages:
#                   one it installed, or moved to btrfs when asked (recorded
#                   in /var/lib/tuxlab/engine-managed); an engine installed
#                   otherwise is left as it is, and the script says how to
#                   move it
#   btrfs           move the engine to btrfs now, whoever installed it (it is
#                   restarted; its containers stay behind in its old data
#                   root, tuxlab's sandbox images are carried over); later
#                   runs keep it there
#   keep            never touch the engine's storage
# The btrfs file system lives in /var/lib/tuxlab/engine.img, mounted at
# /var/lib/tuxlab/engine (fstab, and a docker.service drop-in under systemd);
# the daemon gets "storage-driver": "btrfs" and "data-root" in
# /etc/docker/daemon.json. TUXLAB_ENGINE_DISK_GB sizes a new image (default:
# 20% of the free space of /var/lib/tuxlab, at least 8 and at most 64 GiB);
# an existing image is never reformatted. See docs/operations.md.
#
# LXCFS (Debian's lxcfs, needs /dev/fuse): installed when missing and
# started, so that sandboxes see their own memory, CPUs and load
# (tuxlab binds its files from /var/lib/lxcfs; docs/sandboxes.md). Under
# systemd its unit runs it (with a drop-in for -l --enable-cfs); otherwise it
# runs in the background, logging to /var/log/tuxlab-lxcfs.log. Without it
# sandboxes work, seeing the host's numbers; in CI it is required.
#
# With DOCKER_HOST set, it only checks that engine. Logs of a daemon it starts go
# to /var/log/tuxlab-dockerd.log.
set -euo pipefail

say() { printf '==> %s\n' "$*" >&2; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 1; }

STATE=/var/lib/tuxlab
IMG=$STATE/engine.img
MNT=$STATE/engine
DATA_ROOT=$MNT/docker
MANAGED_MARK=$STATE/engine-managed
DAEMON_JSON=/etc/docker/daemon.json
POOL=10.213.0.0/16 # sandbox networks (internal/sandbox/docker: networkPool)
BRIDGES=tlsb-+     # their bridge interfaces (internal/sandbox/docker: BridgePrefix)

answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
has_systemd() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null; }
driver() { docker info --format '{{.Driver}}' 2>/dev/null; }

# advise: say how the engine bounds sandbox disks, and how to bound them for real.
advise() {
	local d fs
	d=$(driver) || return 0
	fs=$(docker info --format '{{range .DriverStatus}}{{if eq (index . 0) "Backing Filesystem"}}{{index . 1}}{{end}}{{end}}' 2>/dev/null || true)
	case $d/$fs in
	btrfs/* | zfs/*) say "storage: $d, with disk quotas: the engine bounds each sandbox's disk" ;;
	overlay2/xfs) say "storage: overlay2 on xfs: the engine bounds each sandbox's disk if the file system is mounted with pquota (tuxlab finds out, and watches otherwise)" ;;
	*) say "storage: $d${fs:+ on $fs}, without disk quotas: tuxlab watches sandboxes' disk use instead; for a hard bound run TUXLAB_ENGINE_STORAGE=btrfs $0 as root (docs/operations.md)" ;;
	esac
}

if command -v docker >/dev/null && [ -n "${DOCKER_HOST:-}" ]; then
	answers && exit 0
fi
[ -z "${DOCKER_HOST:-}" ] || die "the engine at DOCKER_HOST=$DOCKER_HOST does not answer"
if [ "$(id -u)" != 0 ]; then
	command -v docker >/dev/null && answers && { advise; exit 0; }
	die "no container engine answers: install docker.io and start it (as root: ./scripts/ensure-engine.sh)"
fi

apt_updated=${TUXLAB_APT_UPDATED:-}
apt_install() {
	command -v apt-get >/dev/null || die "cannot install $*: no apt-get; install it yourself"
	if [ -z "$apt_updated" ]; then
		say "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		apt_updated=1
	fi
	say "installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ---------------------------------------------------------------- the engine
storage=${TUXLAB_ENGINE_STORAGE:-auto}
case $storage in auto | btrfs | keep) ;; *) die "TUXLAB_ENGINE_STORAGE=$storage: say auto, btrfs or keep" ;; esac
if ! command -v dockerd >/dev/null; then
	if command -v docker >/dev/null && answers; then
		say "an engine answers, but its daemon is not on this machine's PATH: its storage is left as it is"
		storage=keep
	else
		command -v apt-get >/dev/null || die "no dockerd and no apt-get: install a Docker engine yourself"
		apt_install docker.io
		mkdir -p "$STATE"
		echo "docker.io installed by scripts/ensure-engine.sh on $(date -u +%FT%TZ)" >"$MANAGED_MARK"
	fi
fi
if [ "$storage" = auto ]; then
	[ -f "$MANAGED_MARK" ] && storage=btrfs || storage=keep
fi

# ---------------------------------------------------------------- btrfs storage
# disk_gb: the size of a new image, in GiB.
disk_gb() {
	if [ -n "${TUXLAB_ENGINE_DISK_GB:-}" ]; then
		[[ $TUXLAB_ENGINE_DISK_GB =~ ^[1-9][0-9]*$ ]] || die "TUXLAB_ENGINE_DISK_GB=$TUXLAB_ENGINE_DISK_GB: give a whole number of GiB"
		echo "$TUXLAB_ENGINE_DISK_GB"
		return
	fi
	local free
	free=$(df -Pk "$STATE" | awk 'NR == 2 {print int($4 / 1048576)}')
	local gb=$((free / 5))
	[ "$gb" -le 64 ] || gb=64
	[ "$gb" -ge 8 ] || gb=8
	[ "$((gb * 2))" -le "$free" ] || die "only $free GiB free under $STATE: make room, or set TUXLAB_ENGINE_DISK_GB, or TUXLAB_ENGINE_STORAGE=keep"
	echo "$gb"
}

# ensure_btrfs_mounted: the image (made when missing, never reformatted),
# mounted at $MNT with quotas on, and mounted again at boot.
ensure_btrfs_mounted() {
	mkdir -p "$STATE" || die "cannot make $STATE"
	command -v mkfs.btrfs >/dev/null || apt_install btrfs-progs || die "cannot install btrfs-progs"
	if [ ! -e "$IMG" ]; then
		local gb
		gb=$(disk_gb)
		say "making a ${gb} GiB btrfs file system for the engine in $IMG"
		rm -f "$IMG.new"
		fallocate -l "${gb}G" "$IMG.new" 2>/dev/null || truncate -s "${gb}G" "$IMG.new" || die "cannot make $IMG"
		mkfs.btrfs -q -L tuxlab-engine "$IMG.new" >/dev/null || die "mkfs.btrfs failed on $IMG.new"
		mv "$IMG.new" "$IMG" || die "cannot make $IMG"
	fi
	[ "$(blkid -o value -s TYPE "$IMG" 2>/dev/null)" = btrfs ] ||
		die "$IMG exists and holds no btrfs file system: it is not reformatted; move it away and run again"
	mkdir -p "$MNT" || die "cannot make $MNT"
	if ! mountpoint -q "$MNT"; then
		# An engine started while the image is not mounted must not write to
		# the directory beneath: it stays immutable.
		chattr +i "$MNT" 2>/dev/null || true
		mount -o loop "$IMG" "$MNT" || die "cannot mount $IMG (loop devices?): set TUXLAB_ENGINE_STORAGE=keep to leave the engine as it is"
	fi
	[ "$(findmnt -n -o FSTYPE --target "$MNT")" = btrfs ] || die "$MNT is mounted, but not from a btrfs file system"
	btrfs quota enable "$MNT" || die "cannot enable quotas on $MNT"
	if ! awk -v m="$MNT" '$2 == m {found = 1} END {exit !found}' /etc/fstab 2>/dev/null; then
		say "adding $MNT to /etc/fstab"
		printf '%s %s btrfs loop,nofail 0 0 # tuxlab: the container engine data root\n' "$IMG" "$MNT" >>/etc/fstab ||
			die "cannot add $MNT to /etc/fstab"
	fi
	if has_systemd && [ ! -f /etc/systemd/system/docker.service.d/tuxlab-storage.conf ]; then
		mkdir -p /etc/systemd/system/docker.service.d
		printf '# tuxlab: the engine data root is a btrfs image, mounted from /etc/fstab\n[Unit]\nRequiresMountsFor=%s\n' "$MNT" \
			>/etc/systemd/system/docker.service.d/tuxlab-storage.conf
		systemctl daemon-reload || die "systemctl daemon-reload failed"
	fi
}

# configure_daemon: daemon.json asks for btrfs on $DATA_ROOT; it reports
# (status 0) whether it changed anything.
configure_daemon() {
	local cur
	mkdir -p "$(dirname "$DAEMON_JSON")"
	if [ -s "$DAEMON_JSON" ]; then
		command -v jq >/dev/null || apt_install jq
		cur=$(jq -r '[."storage-driver", ."data-root"] | @tsv' "$DAEMON_JSON") || die "$DAEMON_JSON is not valid JSON: fix it and run again"
		[ "$cur" != "btrfs	$DATA_ROOT" ] || return 1
		cp -p "$DAEMON_JSON" "$DAEMON_JSON.tuxlab-$(date +%Y%m%d%H%M%S)"
		jq --arg root "$DATA_ROOT" '."storage-driver" = "btrfs" | ."data-root" = $root' "$DAEMON_JSON" >"$DAEMON_JSON.new"
		mv "$DAEMON_JSON.new" "$DAEMON_JSON"
	else
		printf '{\n  "storage-driver": "btrfs",\n  "data-root": "%s"\n}\n' "$DATA_ROOT" >"$DAEMON_JSON"
	fi
	say "$DAEMON_JSON: storage-driver btrfs, data-root $DATA_ROOT"
	return 0
}

# stop_engine: stop the running daemon and wait until it is gone.
stop_engine() {
	local pid
	if has_systemd; then
		systemctl stop docker.socket docker 2>/dev/null || true
		return
	fi
	pid=$(cat /var/run/docker.pid 2>/dev/null || true)
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
		die "a daemon answers but /var/run/docker.pid names none: stop it yourself and run again"
	fi
	say "stopping dockerd (pid $pid)"
	kill "$pid"
	for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
	die "dockerd (pid $pid) did not stop within 60 s"
}

start_engine() {
	if has_systemd; then
		say "starting docker with systemctl"
		systemctl start docker || true
		answers && return
	fi
	say "starting dockerd (log: /var/log/tuxlab-dockerd.log)"
	nohup dockerd >>/var/log/tuxlab-dockerd.log 2>&1 &
}

wait_engine() {
	for _ in $(seq 60); do
		answers && { say "container engine ready: $(docker version --format 'Docker {{.Server.Version}}, API {{.Server.APIVersion}}')"; return; }
		sleep 1
	done
	die "dockerd did not come up within 60 s: see /var/log/tuxlab-dockerd.log"
}

carry=
if [ "$storage" = btrfs ]; then
	if [ -n "${CI:-}" ]; then
		ensure_btrfs_mounted # CI tests the quota branch: a failure is fatal
	elif ! (ensure_btrfs_mounted); then
		say "WARNING: no btrfs storage for the engine (above); it keeps its storage, and tuxlab watches sandboxes' disk use instead"
		storage=keep
	fi
fi
if [ "$storage" = btrfs ] && configure_daemon && answers; then
	# Images live in the data root: carry tuxlab's over, so nothing is built again.
	mapfile -t images < <(docker image ls --format '{{.Repository}}:{{.Tag}}' 'tuxlab/*' 2>/dev/null | grep -v '<none>' || true)
	if [ ${#images[@]} -gt 0 ]; then
		carry=$STATE/images-carried.tar
		say "saving ${images[*]} to carry them over"
		docker save -o "$carry" "${images[@]}"
	fi
	say "restarting the engine on its btrfs data root (containers of the old data root stay there)"
	stop_engine
fi
answers || start_engine
wait_engine
if [ -n "$carry" ]; then
	say "loading the carried images"
	docker load -i "$carry" >/dev/null && rm -f "$carry"
fi
if [ "$storage" = btrfs ]; then
	[ "$(driver)" = btrfs ] ||
		die "the engine runs on $(driver), not btrfs, although $DAEMON_JSON asks for btrfs: see /var/log/tuxlab-dockerd.log or journalctl -u docker"
	[ -f "$MANAGED_MARK" ] || echo "engine storage moved to btrfs by scripts/ensure-engine.sh on $(date -u +%FT%TZ)" >"$MANAGED_MARK"
fi
advise

# ---------------------------------------------------------------- LXCFS
LXCFS_DIR=/var/lib/lxcfs # internal/sandbox/docker: LXCFSDir
LXCFS_ARGS=(-l --enable-cfs) # per-container load average; CPUs from the CFS quota
lxcfs_live() { timeout 2 head -n 1 "$LXCFS_DIR/proc/meminfo" 2>/dev/null | grep -q '^MemTotal:'; }

# ensure_lxcfs: lxcfs installed, and answering at $LXCFS_DIR.
ensure_lxcfs() {
	lxcfs_live && return 0
	[ -e /dev/fuse ] || { say "no /dev/fuse: LXCFS cannot run"; return 1; }
	command -v lxcfs >/dev/null || apt_install lxcfs || return 1
	# A mount left behind by a dead lxcfs answers every stat with ENOTCONN
	# (mkdir and mountpoint fail on it), so it is found in the mount table.
	if awk -v d="$LXCFS_DIR" '$2 == d {found=1} END {exit !found}' /proc/self/mounts; then
		say "unmounting the stale LXCFS at $LXCFS_DIR"
		fusermount -u "$LXCFS_DIR" 2>/dev/null || umount -l "$LXCFS_DIR" || return 1
	fi
	mkdir -p "$LXCFS_DIR" || return 1
	if has_systemd && systemctl cat lxcfs.service >/dev/null 2>&1; then
		if [ ! -f /etc/systemd/system/lxcfs.service.d/tuxlab.conf ]; then
			mkdir -p /etc/systemd/system/lxcfs.service.d
			printf '# tuxlab: per-container load average, CPUs from the CFS quota\n[Service]\nExecStart=\nExecStart=/usr/bin/lxcfs %s %s\n' \
				"${LXCFS_ARGS[*]}" "$LXCFS_DIR" >/etc/systemd/system/lxcfs.service.d/tuxlab.conf
			systemctl daemon-reload || return 1
		fi
		say "starting lxcfs with systemctl"
		systemctl enable lxcfs >/dev/null 2>&1 || true
		systemctl restart lxcfs || true
	fi
	if ! lxcfs_live; then
		say "starting lxcfs (log: /var/log/tuxlab-lxcfs.log)"
		# Its own session: it must outlive the shell (and process group) that started it.
		setsid -f lxcfs "${LXCFS_ARGS[@]}" "$LXCFS_DIR" >>/var/log/tuxlab-lxcfs.log 2>&1 </dev/null
	fi
	for _ in $(seq 20); do
		lxcfs_live && return 0
		sleep 0.5
	done
	say "lxcfs did not answer at $LXCFS_DIR within 10 s: see /var/log/tuxlab-lxcfs.log"
	return 1
}
if ensure_lxcfs; then
	say "LXCFS answers at $LXCFS_DIR: sandboxes see their own memory, CPUs and load"
elif [ -n "${CI:-}" ]; then
	die "LXCFS is required in CI (the sandbox tests check what a sandbox sees)"
else
	say "WARNING: no LXCFS (above): sandboxes see the host's memory, CPUs and load (docs/sandboxes.md)"
fi

# ---------------------------------------------------------------- firewall
# Sandbox networks reach nothing on the host: tuxlab makes their bridges
# without a host address; these rules drop, besides, anything from them to
# the host (INPUT) and anything they would send out of the pool (DOCKER-USER).
# They do not survive a reboot: run this script at boot, or save them.
rule() {
	local cmd=$1
	shift
	"$cmd" -C "$@" 2>/dev/null || "$cmd" -I "$@"
}
firewall() {
	rule iptables INPUT -s "$POOL" -j DROP &&
		rule iptables INPUT -i "$BRIDGES" -j DROP || return 1
	if iptables -L DOCKER-USER -n >/dev/null 2>&1; then
		rule iptables DOCKER-USER -s "$POOL" ! -d "$POOL" -j DROP || return 1
	fi
	if command -v ip6tables >/dev/null; then
		rule ip6tables INPUT -i "$BRIDGES" -j DROP || return 1
	fi
}
if ! command -v iptables >/dev/null; then
	say "WARNING: no iptables: sandbox networks rely on having no host address alone (docs/sandboxes.md)"
elif firewall; then
	say "firewall: sandbox networks ($POOL, $BRIDGES) reach nothing on the host"
else
	say "WARNING: could not add the firewall rules for sandbox networks (above): they rely on having no host address alone (docs/sandboxes.md)"
fi
