#!/usr/bin/env bash
# Build tuxlab's sandbox images locally, without any container registry.
#
#   ./scripts/build-images.sh                 # both images, each only if missing
#   ./scripts/build-images.sh busybox         # tuxlab/sandbox-busybox:latest (seconds; used by the tests)
#   ./scripts/build-images.sh debian          # tuxlab/sandbox-debian:latest  (debootstrap: minutes)
#   ./scripts/build-images.sh --force all     # rebuild even if present
#
# Root filesystems are assembled on this machine (Debian's busybox-static package;
# debootstrap from the Debian mirror apt is configured with) and loaded with
# `docker import`. Build tools are installed with apt-get when missing.
# See docs/sandbox-images.md.
#
# Environment (all optional):
#   DOCKER                 container engine CLI (default: docker)
#   TUXLAB_DEBIAN_SUITE    Debian release for the debian image (default: bookworm)
#   TUXLAB_DEBIAN_MIRROR   Debian mirror URL (default: the one apt uses for that suite)
#   TMPDIR                 where the temporary root filesystems go (default: /var/tmp;
#                          must allow exec and device files, so not a noexec tmpfs)
set -euo pipefail

BUSYBOX_IMAGE=tuxlab/sandbox-busybox:latest
DEBIAN_IMAGE=tuxlab/sandbox-debian:latest
DOCKER=${DOCKER:-docker}
SUITE=${TUXLAB_DEBIAN_SUITE:-bookworm}
PATH_VALUE=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LEARNER_UID=1000

# Packages the Debian image adds to debootstrap's minbase (the lessons use them).
DEBIAN_PACKAGES=(
	bash coreutils util-linux findutils grep sed gawk procps psmisc iproute2 iputils-ping
	netbase dnsutils curl ca-certificates less nano vim-tiny sudo man-db manpages cron
	logrotate openssh-client acl tar gzip xz-utils fdisk e2fsprogs lsof file systemd
	passwd adduser perl-base
	# Not a lesson tool: resolves the container's own hostname when the engine's
	# /etc/hosts lacks it (--network none), so sudo does not warn "unable to resolve host".
	libnss-myhostname
)
DROPPED=()

say() { printf '==> %s\n' "$*"; }
warn() { printf '==> WARNING: %s\n' "$*" >&2; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 1; }

usage() {
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

# ---------------------------------------------------------------- arguments
FORCE=0
TARGET=
for arg in "$@"; do
	case $arg in
	--force | -f) FORCE=1 ;;
	-h | --help) usage 0 ;;
	busybox | debian | all)
		[ -z "$TARGET" ] || die "give one target (busybox, debian or all), not '$TARGET' and '$arg'"
		TARGET=$arg
		;;
	*) printf 'unknown argument: %s\n\n' "$arg" >&2; usage 2 ;;
	esac
done
TARGET=${TARGET:-all}

# ---------------------------------------------------------------- helpers
is_root() { [ "$(id -u)" = 0 ]; }

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

image_present() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

check_engine() {
	command -v "$DOCKER" >/dev/null ||
		die "no container engine ('$DOCKER' not found): install docker.io (apt-get install docker.io) and start dockerd"
	"$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
		die "cannot reach the container engine (${DOCKER_HOST:-default socket}): start it (systemctl start docker, or dockerd >/tmp/dockerd.log 2>&1 &), or run as root / a member of the docker group"
}

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

pkg_has_candidate() {
	local c
	c=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')
	[ -n "$c" ] && [ "$c" != "(none)" ]
}

# apt_quiet ARGS...: apt-get, its output shown only when it fails.
apt_quiet() {
	local out
	if ! out=$(NEEDRESTART_SUSPEND=1 DEBIAN_FRONTEND=noninteractive apt-get -q "$@" 2>&1); then
		printf '%s\n' "$out" | tail -n 30 | sed 's/^/    | /' >&2
		return 1
	fi
}

# apt_install PKG...: install the build tools that are missing; `apt-get update`
# only when apt does not know a package yet, or when an install fails on stale lists.
apt_install() {
	local missing=() p
	command -v dpkg-query >/dev/null || die "this script builds on Debian: no dpkg/apt here to install $*"
	for p in "$@"; do pkg_installed "$p" || missing+=("$p"); done
	[ ${#missing[@]} -gt 0 ] || return 0
	is_root || die "missing build tools: ${missing[*]}; run as root (sudo $0 ...) or apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	for p in "${missing[@]}"; do
		if ! pkg_has_candidate "$p"; then
			say "apt-get update (apt does not know $p yet)"
			apt_quiet update || die "apt-get update failed (output above): check the mirrors in /etc/apt/sources.list and /etc/apt/sources.list.d/, and the network"
			break
		fi
	done
	say "installing build tools: ${missing[*]}"
	if ! apt_quiet install -y --no-install-recommends "${missing[@]}"; then
		say "install failed; apt-get update and one more try"
		apt_quiet update || die "apt-get update failed (output above): check the mirrors in /etc/apt/sources.list and /etc/apt/sources.list.d/, and the network"
		apt_quiet install -y --no-install-recommends "${missing[@]}" ||
			die "could not install ${missing[*]} (output above): install them by hand (apt-get install ${missing[*]}) and run again"
	fi
}

# The base URL apt uses for each suite, from apt's own reading of its sources
# (one-line and deb822 formats, Enabled: no honoured). Output: "URL SUITE" lines.
apt_suites() {
	apt-get update --print-uris 2>/dev/null |
		sed -n "s|^'\(.*\)/dists/\([^/]*\)/InRelease'.*|\1 \2|p" | sort -u
}

mirror_for() { apt_suites | awk -v s="$1" '$2 == s && !f {print $1; f = 1}'; }

# Work directory, removed on exit. Anything mounted inside it is unmounted first,
# and rm never crosses into another file system.
WORK=
unmount_under() {
	local m
	[ -n "$1" ] || return 0
	awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
}
cleanup() {
	[ -n "$WORK" ] && [ -d "$WORK" ] || return 0
	unmount_under "$WORK"
	rm -rf --one-file-system "$WORK" 2>/dev/null || warn "could not remove $WORK entirely; remove it by hand"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# import_rootfs NAME IMAGE TARFILE|- CHANGE...: docker import, replace an older
# image of the same tag (its untagged copy is removed when nothing uses it).
import_rootfs() {
	local name=$1 image=$2 src=$3 old new args=() c
	shift 3
	for c in "$@"; do args+=(--change "$c"); done
	old=$("$DOCKER" image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
	say "[$name] docker import as $image"
	new=$("$DOCKER" import "${args[@]}" --message "tuxlab scripts/build-images.sh" "$src" "$image") ||
		die "docker import of $image failed (see above); fix the engine and run again"
	if [ -n "$old" ] && [ "$old" != "$new" ]; then
		"$DOCKER" image rm "$old" >/dev/null 2>&1 || true
	fi
}

# smoke NAME IMAGE CMD...: run the new image once; a broken image is removed so
# the next run rebuilds it instead of calling it present.
smoke() {
	local name=$1 image=$2 out
	shift 2
	say "[$name] smoke test: $*"
	if ! out=$("$DOCKER" run --rm --network none "$image" "$@" 2>&1); then
		printf '%s\n' "$out" | sed 's/^/    /' >&2
		"$DOCKER" image rm "$image" >/dev/null 2>&1 || true
		die "$image does not work (output above); it was removed. Fix the cause and run again"
	fi
	printf '%s\n' "$out" | sed 's/^/    /'
}

size_of() { "$DOCKER" image inspect -f '{{.Size}}' "$1" | awk '{printf "%.1f MB", $1 / 1000000}'; }

# ---------------------------------------------------------------- busybox
build_busybox() {
	local start=$SECONDS bb root tarball applet n=0
	say "[busybox] building $BUSYBOX_IMAGE"
	apt_install busybox-static
	bb=$(dpkg-query -L busybox-static | awk '/\/bin\/busybox$/ && !f {print; f = 1}')
	[ -x "${bb:-/nonexistent}" ] || die "busybox-static is installed but has no /bin/busybox; reinstall it (apt-get install --reinstall busybox-static)"
	root=$WORK/busybox-rootfs
	say "[busybox] root file system from $bb ($("$bb" 2>&1 | head -1 | awk '{print $1, $2}'))"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,home/learner,root,tmp,var/tmp,proc,sys,dev,run}
	cp "$bb" "$root/bin/busybox"
	chmod 0755 "$root/bin/busybox"
	# Like `busybox --install -s`: one symlink per applet, at the path busybox
	# itself would use (--list-full), or in /bin when it cannot say.
	if "$bb" --list-full >/dev/null 2>&1; then
		while read -r applet; do
			case $applet in '' | bin/busybox | linuxrc) continue ;; esac
			mkdir -p "$root/$(dirname "$applet")"
			[ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
			n=$((n + 1))
		done < <("$bb" --list-full)
	else
		while read -r applet; do
			case $applet in '' | busybox | linuxrc) continue ;; esac
			[ -e "$root/bin/$applet" ] || ln -s /bin/busybox "$root/bin/$applet"
			n=$((n + 1))
		done < <("$bb" --list)
	fi
	say "[busybox] $n applet symlinks"
	cat >"$root/etc/passwd" <<EOF
root:x:0:0:root:/root:/bin/sh
learner:x:$LEARNER_UID:$LEARNER_UID:tuxlab learner:/home/learner:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
	cat >"$root/etc/group" <<EOF
root:x:0:
learner:x:$LEARNER_UID:
nogroup:x:65534:
EOF
	echo tuxlab >"$root/etc/hostname"
	printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
	printf 'export PS1='"'"'\\u@\\h:\\w\\$ '"'"'\n' >"$root/etc/profile"
	chmod 0644 "$root"/etc/{passwd,group,hostname,hosts,profile}
	chmod 0755 "$root" "$root/home" "$root/home/learner"
	chmod 0700 "$root/root"
	chmod 1777 "$root/tmp" "$root/var/tmp"
	# Owners are set in the archive, not on disk, so this step needs no root:
	# everything root:root, then /home/learner appended as 1000:1000.
	tarball=$WORK/busybox-rootfs.tar
	tar --numeric-owner --owner=0 --group=0 -C "$root" --exclude=./home/learner -cf "$tarball" .
	tar --numeric-owner --owner="$LEARNER_UID" --group="$LEARNER_UID" -C "$root" -rf "$tarball" ./home/learner
	import_rootfs busybox "$BUSYBOX_IMAGE" "$tarball" \
		'CMD ["/bin/sh"]' \
		"ENV PATH=$PATH_VALUE" \
		'ENV HOME=/home/learner' \
		'USER learner' \
		'WORKDIR /home/learner' \
		'LABEL org.tuxlab.image=busybox'
	# shellcheck disable=SC2016 # expanded in the container
	smoke busybox "$BUSYBOX_IMAGE" sh -c 'id; for c in sh echo stty sleep cat id ps; do command -v $c >/dev/null || { echo "missing $c"; exit 1; }; done; echo tools-ok'
	say "[busybox] built $BUSYBOX_IMAGE in $(elapsed $((SECONDS - start))), $(size_of "$BUSYBOX_IMAGE")"
}

# ---------------------------------------------------------------- debian
# Show debootstrap's stage lines; per-package lines become a counter.
debootstrap_progress() {
	awk '
		/^I: (Retrieving|Validating) [^ ]+ [^ ]+$/ || /^I: (Extracting|Unpacking|Configuring) [^ ]+\.\.\.$/ {
			if (++n % 100 == 0) { printf "    ... %d package steps\n", n; fflush() }
			next
		}
		{ print "    " $0; fflush() }'
}

# run_debootstrap ROOT MIRROR LOG: debootstrap with DEBIAN_PACKAGES; packages the
# suite does not have are dropped (and reported) and debootstrap runs again.
run_debootstrap() {
	local root=$1 mirror=$2 log=$3 attempt missing p keep
	for attempt in 1 2 3; do
		unmount_under "$root"
		rm -rf --one-file-system "$root"
		say "[debian] debootstrap --variant=minbase $SUITE from $mirror with ${#DEBIAN_PACKAGES[@]} extra packages (a few minutes)"
		if debootstrap --variant=minbase --components=main \
			--include="$(IFS=,; echo "${DEBIAN_PACKAGES[*]}")" \
			"$SUITE" "$root" "$mirror" 2>&1 | tee "$log" | debootstrap_progress; then
			return 0
		fi
		missing=$(sed -n "s/.*Couldn't find these debs: //p" "$log" | tr -s ' ' '\n' | grep -v '^$' || true)
		if [ -z "$missing" ] || [ "$attempt" = 3 ]; then
			tail -n 25 "$root/debootstrap/debootstrap.log" 2>/dev/null | sed 's/^/    | /' >&2 || true
			die "debootstrap failed (output above). Check that $mirror serves $SUITE (apt-get update works?), or set TUXLAB_DEBIAN_MIRROR, and run again"
		fi
		keep=()
		for p in "${DEBIAN_PACKAGES[@]}"; do
			grep -qx -- "$p" <<<"$missing" && DROPPED+=("$p") || keep+=("$p")
		done
		DEBIAN_PACKAGES=("${keep[@]}")
		warn "$SUITE has no package(s): ${missing//$'\n'/ }; building without them"
	done
}

build_debian() {
	local start=$SECONDS mirror root log src suite url cvu proxy apt_opts=() sources f
	say "[debian] building $DEBIAN_IMAGE (Debian $SUITE)"
	is_root || die "the debian image needs root (debootstrap, chroot): run sudo $0 debian"
	apt_install debootstrap

	mirror=${TUXLAB_DEBIAN_MIRROR:-$(mirror_for "$SUITE")}
	if [ -z "$mirror" ]; then
		# No entry for $SUITE (another release on this machine): take the host's
		# Debian archive, the base-suite entry whose path ends in /debian.
		mirror=$(apt_suites | awk '$1 ~ /\/debian$/ && $2 !~ /-/ && !f {print $1; f = 1}')
	fi
	[ -n "$mirror" ] || die "no Debian mirror found in apt's sources (/etc/apt/sources.list, /etc/apt/sources.list.d/): set TUXLAB_DEBIAN_MIRROR=http://your.mirror/debian"
	mirror=${mirror%/}
	say "[debian] mirror $mirror (from apt's configuration)"

	# The host's apt settings that matter to reaching the mirror apply inside
	# the build too (a proxy; a snapshot mirror's expired Valid-Until).
	eval "$(apt-config shell cvu Acquire::Check-Valid-Until proxy Acquire::http::Proxy)"
	if [ "${cvu:-}" = false ]; then apt_opts+=(-o Acquire::Check-Valid-Until=false); fi
	if [ -n "${proxy:-}" ]; then
		apt_opts+=(-o "Acquire::http::Proxy=$proxy")
		export http_proxy=${http_proxy:-$proxy}
	fi

	root=$WORK/debian-rootfs
	log=$WORK/debootstrap.out
	run_debootstrap "$root" "$mirror" "$log"

	say "[debian] apt sources: $SUITE, $SUITE-updates, $SUITE-security as this machine has them"
	sources=
	for suite in "$SUITE" "$SUITE-updates" "$SUITE-security"; do
		url=$(mirror_for "$suite")
		[ "$suite" = "$SUITE" ] && url=$mirror
		[ -n "$url" ] || continue
		sources+="Types: deb
URIs: ${url%/}
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

"
	done
	rm -f "$root/etc/apt/sources.list"
	printf '%s' "$sources" >"$root/etc/apt/sources.list.d/debian.sources"
	# Package lists stay in the image (lessons use apt-cache); kept compressed.
	printf 'Acquire::GzipIndexes "true";\n' >"$root/etc/apt/apt.conf.d/90tuxlab-gzip-indexes"

	# Man pages must not be excluded from dpkg (slim images do that).
	for f in "$root"/etc/dpkg/dpkg.cfg.d/*; do
		[ -f "$f" ] || continue
		if grep -q '^path-exclude.*/usr/share/man' "$f"; then
			warn "removing man page exclusions from ${f#"$root"}"
			sed -i '/^path-exclude.*\/usr\/share\/man/d' "$f"
		fi
	done

	say "[debian] configuring in a chroot: apt-get update, pending updates, user learner, sudo"
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" # start no services in the chroot
	chmod 0755 "$root/usr/sbin/policy-rc.d"
	mount -t proc proc "$root/proc"
	# shellcheck disable=SC2016 # expanded inside the chroot
	chroot "$root" /usr/bin/env -i PATH="$PATH_VALUE" HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		/bin/bash -euo pipefail -c '
		uid=$1; shift
		rm -rf /var/lib/apt/lists/*   # debootstrap leaves them uncompressed: fetch them again
		apt-get "$@" -q update
		apt-get "$@" -q -y -o Dpkg::Options::=--force-confold -o Dpkg::Use-Pty=0 upgrade
		# ping without its cap_net_raw file capability: it then uses ICMP datagram
		# sockets (the engine sets net.ipv4.ping_group_range), so it works in
		# sandboxes without NET_RAW, where a capability-marked binary cannot even start.
		if command -v getcap >/dev/null && getcap /usr/bin/ping | grep -q cap_net_raw; then
			setcap -r /usr/bin/ping
		fi
		grep -q "^hosts:.*myhostname" /etc/nsswitch.conf ||
			sed -i "s/^hosts:\(.*\)files/hosts:\1files myhostname/" /etc/nsswitch.conf
		groupadd --gid "$uid" learner
		useradd --uid "$uid" --gid "$uid" --create-home --home-dir /home/learner \
			--shell /bin/bash --comment "tuxlab learner" learner
		printf "learner ALL=(ALL) NOPASSWD: ALL\n" >/etc/sudoers.d/learner
		chown root:root /etc/sudoers.d/learner
		chmod 0440 /etc/sudoers.d/learner
		visudo -cf /etc/sudoers.d/learner
		visudo -c >/dev/null
		apt-get clean
		' tuxlab-setup "$LEARNER_UID" "${apt_opts[@]}" >"$WORK/chroot.log" 2>&1 || {
		tail -n 30 "$WORK/chroot.log" | sed 's/^/    | /' >&2
		die "configuring the Debian root file system failed (output above); run again, and check the mirror if apt-get failed"
	}
	grep -E '^(Fetched|[0-9]+ upgraded|[EW]: )|parsed OK' "$WORK/chroot.log" | sed 's/^/    /' || true
	umount "$root/proc" || umount -l "$root/proc"
	rm -f "$root/usr/sbin/policy-rc.d"

	say "[debian] hostname, motd, machine-id, resolv.conf"
	echo tuxlab >"$root/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\ttuxlab\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n' >"$root/etc/hosts"
	chmod 0644 "$root/etc/hostname" "$root/etc/hosts"
	printf "Welcome to tuxlab: a Debian %s sandbox. You are 'learner'; sudo gives you root. Break things, that is what it is for.\n" "$SUITE" >"$root/etc/motd"
	# /etc/motd is shown by login programs, which a container does not run:
	# interactive login shells on a terminal print it (lab checks do not).
	cat >"$root/etc/profile.d/tuxlab-motd.sh" <<'EOF'
# tuxlab: show /etc/motd in interactive login shells on a terminal only.
case $- in *i*) [ -t 0 ] && [ -t 1 ] && [ -r /etc/motd ] && cat /etc/motd ;; esac
EOF
	: >"$root/etc/machine-id" # each container is its own machine
	rm -f "$root/var/lib/dbus/machine-id"
	: >"$root/etc/resolv.conf" # the engine provides it at run time
	rm -rf --one-file-system "${root:?}"/tmp/* "${root:?}"/var/tmp/*
	[ -e "$root/usr/share/man/man1/ls.1.gz" ] || die "man pages are missing from the root file system (dpkg path-exclude?); this should not happen with debootstrap"
	ls "$root"/var/lib/apt/lists/*Packages* >/dev/null 2>&1 ||
		die "apt package lists are missing from the root file system; run again"

	# Numeric owners, setuid bits and file capabilities (ping) kept; /dev, /proc,
	# /sys left empty for the engine.
	tar --numeric-owner --xattrs --xattrs-include='security.capability' --one-file-system \
		-C "$root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf - . |
		import_rootfs debian "$DEBIAN_IMAGE" - \
			'CMD ["/bin/bash","-l"]' \
			'ENV LANG=C.UTF-8' \
			"ENV PATH=$PATH_VALUE" \
			'USER learner' \
			'WORKDIR /home/learner' \
			'LABEL org.tuxlab.image=debian'
	# shellcheck disable=SC2016 # expanded in the container
	smoke debian "$DEBIAN_IMAGE" bash -lc 'id && out=$(sudo -n true 2>&1) && [ -z "$out" ] && echo sudo-ok && ping -c1 -W2 127.0.0.1 >/dev/null && echo ping-ok || { echo "$out"; exit 1; }'
	say "[debian] built $DEBIAN_IMAGE in $(elapsed $((SECONDS - start))), $(size_of "$DEBIAN_IMAGE")"
}

# ---------------------------------------------------------------- main
check_engine

todo=()
case $TARGET in
busybox) todo=(busybox) ;;
debian) todo=(debian) ;;
all) todo=(busybox debian) ;;
esac

locked=0
for t in "${todo[@]}"; do
	case $t in busybox) img=$BUSYBOX_IMAGE ;; debian) img=$DEBIAN_IMAGE ;; esac
	if [ "$FORCE" = 0 ] && image_present "$img"; then
		say "[$t] $img already present (use --force to rebuild)"
		continue
	fi
	# One build at a time (the tests may call this concurrently): lock this
	# script's own file, then look again, in case the run we waited for built it.
	if [ "$locked" = 0 ] && command -v flock >/dev/null; then
		exec 9<"$0"
		if ! flock -n 9; then
			say "another build-images.sh is running: waiting for it"
			flock 9
		fi
		locked=1
		if [ "$FORCE" = 0 ] && image_present "$img"; then
			say "[$t] $img already present (built meanwhile)"
			continue
		fi
	fi
	if [ -z "$WORK" ]; then
		WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/tuxlab-images.XXXXXX")
	fi
	"build_$t"
done

if [ ${#DROPPED[@]} -gt 0 ]; then
	warn "left out of $DEBIAN_IMAGE because $SUITE does not have them: ${DROPPED[*]}"
fi
say "tuxlab images:"
"$DOCKER" image ls --filter 'reference=tuxlab/*'
