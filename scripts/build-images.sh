#!/usr/bin/env bash
# Build tuxlab's sandbox images locally, without any container registry.
#
#   ./scripts/build-images.sh                 # every image, each only if missing or out of date
#   ./scripts/build-images.sh busybox         # tuxlab/sandbox-busybox:latest (seconds; used by the tests)
#   ./scripts/build-images.sh debian          # tuxlab/sandbox-debian:latest  (debootstrap: minutes)
#   ./scripts/build-images.sh tools           # tuxlab/sandbox-tools:latest   (seconds; every sandbox needs it)
#   ./scripts/build-images.sh --force all     # rebuild even if present and up to date
#
# Every image is labelled org.tuxlab.recipe=<first 16 hex digits of a sha256 of
# this file and of scripts/image-fixtures/>; an image with another recipe label
# (an older script or other fixtures) is rebuilt. The tools image's recipe also
# covers the sources of the Go programs it carries.
#
# Root filesystems are assembled on this machine (Debian's busybox-static and
# bash-static packages; debootstrap from the Debian mirror apt is configured
# with; Go for the tools image's programs) and loaded with
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
TOOLS_IMAGE=tuxlab/sandbox-tools:latest
# Go programs the tools image carries in /tuxlab/bin, each a directory of this
# repository built static (CGO_ENABLED=0 -trimpath) and named after it. One
# that does not exist (yet) is left out.
TOOLS_GO_PROGRAMS=(./cmd/tuxlab-tty)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOCKER=${DOCKER:-docker}
SUITE=${TUXLAB_DEBIAN_SUITE:-bookworm}
PATH_VALUE=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LEARNER_UID=1000

# Packages the Debian image adds to debootstrap's minbase (the lessons use them).
DEBIAN_PACKAGES=(
	bash coreutils util-linux findutils grep sed gawk procps psmisc iproute2 iputils-ping
	netbase dnsutils curl ca-certificates less nano vim-tiny sudo man-db manpages cron
	logrotate openssh-client acl tar gzip xz-utils fdisk e2fsprogs lsof file systemd
	passwd adduser perl-base at openssh-server patch bzip2 tmux netcat-openbsd rsync zip
	unzip bc jq tree htop
	# Not a lesson tool: resolves the container's own hostname when the engine's
	# /etc/hosts lacks it (--network none), so sudo does not warn "unable to resolve host".
	libnss-myhostname
)
DROPPED=()

say() { printf '==> %s\n' "$*"; }
warn() { printf '==> WARNING: %s\n' "$*" >&2; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 1; }

# What the images are made of is this file (packages, the files it writes, the
# build steps) and the files it copies in from FIXTURES: their hash is the
# recipe every image is labelled with.
FIXTURES=$REPO/scripts/image-fixtures
recipe() {
	{
		sha256sum <"${BASH_SOURCE[0]}"
		cd "$FIXTURES" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
	} | sha256sum | cut -c1-16
}
RECIPE=$(recipe 2>/dev/null) || true
[ ${#RECIPE} = 16 ] || die "cannot hash ${BASH_SOURCE[0]} and $FIXTURES (sha256sum, from coreutils, is needed)"

usage() {
	sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

# ---------------------------------------------------------------- arguments
FORCE=0
TARGET=
for arg in "$@"; do
	case $arg in
	--force | -f) FORCE=1 ;;
	-h | --help) usage 0 ;;
	busybox | debian | tools | all)
		[ -z "$TARGET" ] || die "give one target (busybox, debian, tools or all), not '$TARGET' and '$arg'"
		TARGET=$arg
		;;
	*) printf 'unknown argument: %s\n\n' "$arg" >&2; usage 2 ;;
	esac
done
TARGET=${TARGET:-all}

# ---------------------------------------------------------------- helpers
is_root() { [ "$(id -u)" = 0 ]; }

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# image_recipe IMAGE: the image's org.tuxlab.recipe label ("none" when it has
# none); fails when the image is not there.
image_recipe() {
	local r
	r=$("$DOCKER" image inspect -f '{{index .Config.Labels "org.tuxlab.recipe"}}' "$1" 2>/dev/null) || return 1
	case $r in '' | '<no value>') r=none ;; esac
	printf '%s\n' "$r"
}

# image_current IMAGE RECIPE: present and built by this very script (and, for
# the tools image, from these Go sources).
image_current() { [ "$(image_recipe "$1" 2>/dev/null)" = "$2" ]; }

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
SMOKE_CID=
cleanup() {
	if [ -n "$SMOKE_CID" ]; then "$DOCKER" rm -f "$SMOKE_CID" >/dev/null 2>&1 || true; fi
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

# smoke NAME IMAGE WHAT CMD...: run the new image once (WHAT says what CMD
# checks); a broken image is removed so the next run rebuilds it instead of
# calling it present.
smoke() {
	local name=$1 image=$2 what=$3 out
	shift 3
	say "[$name] smoke test: $what"
	if ! out=$("$DOCKER" run --rm --network none "$image" "$@" 2>&1); then
		printf '%s\n' "$out" | sed 's/^/    /' >&2
		"$DOCKER" image rm "$image" >/dev/null 2>&1 || true
		die "$image does not work (output above); it was removed. Fix the cause and run again"
	fi
	printf '%s\n' "$out" | sed 's/^/    /'
}

# smoke_idle NAME IMAGE: start tuxlab-idle as a sandbox does (under --init, as
# root, stop signal SIGRTMIN+3, no capabilities at all). SIGTERM, SIGINT and
# SIGHUP to PID 1 must leave it running; `docker stop` must end it with status
# 0, which only its SIGRTMIN+3 trap gives (137: it ignored the signal and was
# killed after the timeout; 165: the signal killed it untrapped).
smoke_idle() {
	local name=$1 image=$2 sig running code
	say "[$name] smoke test: tuxlab-idle survives SIGTERM, SIGINT, SIGHUP and stops on SIGRTMIN+3"
	SMOKE_CID=$("$DOCKER" run -d --network none --cap-drop ALL --init --user root \
		--stop-signal SIGRTMIN+3 "$image" /usr/local/sbin/tuxlab-idle) ||
		smoke_failed "$image" "it does not start a container"
	sleep 1 # its traps are set within milliseconds of the start
	for sig in TERM INT HUP; do
		"$DOCKER" kill -s "$sig" "$SMOKE_CID" >/dev/null 2>&1 || true
	done
	sleep 0.5
	running=$("$DOCKER" inspect -f '{{.State.Running}}' "$SMOKE_CID" 2>/dev/null || true)
	[ "$running" = true ] ||
		smoke_failed "$image" "tuxlab-idle ended on SIGTERM/SIGINT/SIGHUP (docker logs: $("$DOCKER" logs "$SMOKE_CID" 2>&1 | tail -n 3))"
	"$DOCKER" stop -t 10 "$SMOKE_CID" >/dev/null || smoke_failed "$image" "docker stop failed"
	code=$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$SMOKE_CID" 2>/dev/null || true)
	[ "$code" = 0 ] || smoke_failed "$image" "tuxlab-idle did not exit 0 on SIGRTMIN+3 (exit status $code)"
	"$DOCKER" rm -f "$SMOKE_CID" >/dev/null 2>&1 || true
	SMOKE_CID=
	printf '    tuxlab-idle ok\n'
}

# smoke_failed IMAGE WHY: remove the broken image (so the next run rebuilds it) and stop.
smoke_failed() {
	"$DOCKER" image rm -f "$1" >/dev/null 2>&1 || true
	die "$1 does not work: $2; it was removed. Fix the cause and run again"
}

size_of() { "$DOCKER" image inspect -f '{{.Size}}' "$1" | awk '{printf "%.1f MB", $1 / 1000000}'; }

# ---------------------------------------------------------------- both images
# write_idle ROOT: /usr/local/sbin/tuxlab-idle, the sandbox's keep-alive (the
# server runs it as the container's command). Root-owned in both archives.
write_idle() {
	mkdir -p "$1/usr/local/sbin"
	cat >"$1/usr/local/sbin/tuxlab-idle" <<'EOF'
#!/bin/sh
# tuxlab-idle: the process that keeps a tuxlab sandbox running.
#
# A sandbox container runs this as its command, under the engine's init
# (docker run --init), and lives as long as it does. It waits without any
# child process, so a lesson's `pgrep sleep` or `pkill sleep` finds only the
# learner's own: it blocks in the shell's built-in `read` on a FIFO that
# nothing ever writes to. Like systemd on a real server it ignores SIGTERM,
# SIGINT and SIGHUP (so `sudo kill 1` leaves the sandbox up), and it exits at
# once on SIGRTMIN+3 (signal 37, systemd's "halt"), the sandbox's stop signal.
# Plain POSIX sh: it runs under dash and BusyBox ash.

trap '' HUP INT TERM
trap 'exit 0' 37

fifo=
for dir in /run /tmp; do
	rm -f "$dir/tuxlab-idle.$$" 2>/dev/null
	if mkfifo -m 600 "$dir/tuxlab-idle.$$" 2>/dev/null; then
		fifo=$dir/tuxlab-idle.$$
		break
	fi
done
if [ -z "$fifo" ]; then
	echo "tuxlab-idle: cannot create a FIFO in /run or /tmp" >&2
	exit 1
fi
# Opened read-write, the FIFO always has a writer (this process), so `read`
# never sees end-of-file; it returns only when a trapped signal arrives.
exec 3<>"$fifo"
rm -f "$fifo"
while :; do
	read -r _ <&3
done
EOF
	chmod 0755 "$1/usr/local/sbin/tuxlab-idle"
}

# ---------------------------------------------------------------- busybox
build_busybox() {
	local start=$SECONDS bb root tarball applet n=0
	say "[busybox] building $BUSYBOX_IMAGE"
	apt_install busybox-static
	bb=$(dpkg-query -L busybox-static | awk '/\/bin\/busybox$/ && !f {print; f = 1}')
	[ -x "${bb:-/nonexistent}" ] || die "busybox-static is installed but has no /bin/busybox; reinstall it (apt-get install --reinstall busybox-static)"
	root=$WORK/busybox-rootfs
	say "[busybox] root file system from $bb ($("$bb" 2>&1 | head -1 | awk '{print $1, $2}'))"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/sbin,etc,home/learner,root,tmp,var/tmp,proc,sys,dev,run}
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
	write_idle "$root"
	chmod 0755 "$root" "$root/home" "$root/home/learner" "$root/run"
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
		'LABEL org.tuxlab.image=busybox' \
		"LABEL org.tuxlab.recipe=$RECIPE"
	# shellcheck disable=SC2016 # expanded in the container
	smoke busybox "$BUSYBOX_IMAGE" "the user, the basic tools, tuxlab-idle" sh -c 'id; for c in sh echo stty sleep cat id ps mkfifo; do command -v $c >/dev/null || { echo "missing $c"; exit 1; }; done; echo tools-ok; [ -x /usr/local/sbin/tuxlab-idle ] || { echo "missing /usr/local/sbin/tuxlab-idle"; exit 1; }; echo tuxlab-idle-present'
	smoke_idle busybox "$BUSYBOX_IMAGE"
	say "[busybox] built $BUSYBOX_IMAGE in $(elapsed $((SECONDS - start))), $(size_of "$BUSYBOX_IMAGE")"
}

# ---------------------------------------------------------------- sample logs
# Made-up logs of one day (20 November 2024, UTC) of a web server "web01", for
# the text-processing and troubleshooting lessons, with a README saying so.
# They are committed files (scripts/image-fixtures/tuxlab-samples), copied in
# as they are: every build writes the same bytes, and the recipe covers them.
SAMPLE_LOGS=$FIXTURES/tuxlab-samples

# write_sample_logs DIR: the sample logs in DIR (0755), each 0644 and dated
# the end of their day.
write_sample_logs() {
	local d=$1 f
	mkdir -p "$d"
	for f in README auth.log syslog nginx-access.log app.log; do
		[ -s "$SAMPLE_LOGS/$f" ] || die "missing fixture $SAMPLE_LOGS/$f"
		install -m 0644 "$SAMPLE_LOGS/$f" "$d/$f"
	done
	chmod 0755 "$d"
	touch -d '2024-11-20 23:59:00 UTC' "$d"/* "$d"
}

# ---------------------------------------------------------------- sample packages
# write_hello_deb ROOT VERSION: /opt/tuxlab/packages/tuxlab-hello_VERSION_all.deb,
# built with the image's own dpkg-deb, for the dpkg and apt lessons (install,
# upgrade, hold, remove). It is not installed. Same bytes on every build:
# fixed file times, SOURCE_DATE_EPOCH for the archive's own times.
HELLO_EPOCH=1732060800 # 2024-11-20 00:00:00 UTC
write_hello_deb() {
	local root=$1 v=$2 tree
	tree=$root/tmp/tuxlab-hello_$v
	rm -rf "$tree"
	mkdir -p "$tree/DEBIAN" "$tree/usr/bin" "$root/opt/tuxlab/packages"
	cat >"$tree/usr/bin/tuxlab-hello" <<EOF
#!/bin/bash
# tuxlab-hello $v: tuxlab's sample package for the dpkg and apt lessons.
echo "Hello from tuxlab-hello $v"
EOF
	cat >"$tree/DEBIAN/control" <<EOF
Package: tuxlab-hello
Version: $v
Architecture: all
Maintainer: tuxlab <tuxlab@example.org>
Depends: bash
Section: misc
Priority: optional
Description: tuxlab's sample package for the dpkg and apt lessons
 Installs /usr/bin/tuxlab-hello, which prints "Hello from tuxlab-hello $v".
 It lets learners practise dpkg -i, apt install ./file.deb, upgrades,
 apt-mark hold and removal in a tuxlab sandbox.
EOF
	chmod 0755 "$tree" "$tree/DEBIAN" "$tree/usr" "$tree/usr/bin" "$tree/usr/bin/tuxlab-hello" "$root/opt/tuxlab" "$root/opt/tuxlab/packages"
	chmod 0644 "$tree/DEBIAN/control"
	find "$tree" -exec touch -h -d "@$HELLO_EPOCH" {} +
	chroot "$root" /usr/bin/env -i PATH="$PATH_VALUE" LC_ALL=C.UTF-8 SOURCE_DATE_EPOCH="$HELLO_EPOCH" \
		dpkg-deb --root-owner-group -Zxz --build "/tmp/tuxlab-hello_$v" "/opt/tuxlab/packages/tuxlab-hello_${v}_all.deb" 2>&1 | sed 's/^/    /'
	[ -s "$root/opt/tuxlab/packages/tuxlab-hello_${v}_all.deb" ] || die "dpkg-deb did not build tuxlab-hello_${v}_all.deb (output above)"
	chmod 0644 "$root/opt/tuxlab/packages/tuxlab-hello_${v}_all.deb"
	touch -d "@$HELLO_EPOCH" "$root/opt/tuxlab/packages/tuxlab-hello_${v}_all.deb"
	rm -rf "$tree"
}

# chroot_processes ROOT: "PID NAME" of every process whose root directory is
# ROOT, i.e. a daemon that a package's maintainer script left running.
chroot_processes() {
	local p r want
	want=$(readlink -f "$1")
	for p in /proc/[0-9]*; do
		r=$(readlink "$p/root" 2>/dev/null) || continue
		[ "$r" = "$want" ] && printf '%s %s\n' "${p#/proc/}" "$(cat "$p/comm" 2>/dev/null)"
	done
	return 0
}

# no_daemons ROOT STEP: packages must start no service in the build (debootstrap
# and the chroot step both have a policy-rc.d saying no). Should one run anyway,
# it is stopped and the build says so.
no_daemons() {
	local procs pid
	procs=$(chroot_processes "$1")
	[ -n "$procs" ] || return 0
	warn "after $2, processes run in the build's root file system (stopping them): $(tr '\n' ' ' <<<"$procs")"
	while read -r pid _; do kill "$pid" 2>/dev/null || true; done <<<"$procs"
	sleep 1
	procs=$(chroot_processes "$1")
	[ -z "$procs" ] || while read -r pid _; do kill -9 "$pid" 2>/dev/null || true; done <<<"$procs"
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
	no_daemons "$root" debootstrap

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
	no_daemons "$root" "the chroot step"
	umount "$root/proc" || umount -l "$root/proc"
	rm -f "$root/usr/sbin/policy-rc.d"

	# openssh-server's postinst made host keys: every sandbox would share them.
	# A learner makes the sandbox's own with `sudo ssh-keygen -A`.
	say "[debian] removing the SSH host keys made at build time"
	rm -f "$root"/etc/ssh/ssh_host_*
	[ -x "$root/usr/sbin/sshd" ] || warn "no /usr/sbin/sshd in the image (openssh-server left out?)"

	say "[debian] sample packages in /opt/tuxlab/packages (not installed)"
	write_hello_deb "$root" 1.0
	write_hello_deb "$root" 1.1
	say "[debian] sample logs in /var/log/tuxlab-samples"
	write_sample_logs "$root/var/log/tuxlab-samples"
	say "[debian] /usr/local/sbin/tuxlab-idle"
	write_idle "$root"

	say "[debian] hostname, motd, machine-id, resolv.conf"
	echo tuxlab >"$root/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\ttuxlab\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n' >"$root/etc/hosts"
	chmod 0644 "$root/etc/hostname" "$root/etc/hosts"
	# Short lines (under 50 columns): the terminal beside a lesson is often
	# narrow, and on a phone about 45 columns wide.
	printf "Welcome to tuxlab: a Debian %s sandbox.\nYou are 'learner'; sudo gives you root.\nBreak things, that is what it is for.\n" "$SUITE" >"$root/etc/motd"
	awk 'length > 49 { print FILENAME ": line " NR " is " length " columns"; bad = 1 } END { exit bad }' "$root/etc/motd" ||
		die "/etc/motd has a line of 50 columns or more: it would break in a narrow terminal"
	# /etc/motd is shown by login programs, which a container does not run:
	# interactive login shells on a terminal print it (lab checks do not),
	# wrapped at spaces to the terminal's width, never inside a word.
	cat >"$root/etc/profile.d/tuxlab-motd.sh" <<'EOF'
# tuxlab: show /etc/motd in interactive login shells on a terminal only,
# folded at spaces to the terminal's width (a narrow terminal breaks no word).
case $- in *i*)
	if [ -t 0 ] && [ -t 1 ] && [ -r /etc/motd ]; then
		(
			cols=$(stty size 2>/dev/null | cut -d' ' -f2)
			case $cols in '' | *[!0-9]* | 0) cols=80 ;; esac
			fold -s -w "$cols" /etc/motd
		)
	fi
	;;
esac
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
			'LABEL org.tuxlab.image=debian' \
			"LABEL org.tuxlab.recipe=$RECIPE"
	# shellcheck disable=SC2016 # expanded in the container
	smoke debian "$DEBIAN_IMAGE" "sudo, ping, the lesson tools, no SSH host keys, the sample packages and logs, tuxlab-idle" bash -lc 'id && out=$(sudo -n true 2>&1) && [ -z "$out" ] && echo sudo-ok && ping -c1 -W2 127.0.0.1 >/dev/null && echo ping-ok || { echo "$out"; exit 1; }
		PATH=$PATH:/usr/sbin
		for c in at atq tmux patch bzip2 sshd nc rsync zip unzip bc jq tree htop mkfifo; do command -v $c >/dev/null || { echo "missing $c"; exit 1; }; done; echo tools-ok
		! ls /etc/ssh/ssh_host_* >/dev/null 2>&1 || { echo "SSH host keys are in the image"; exit 1; }
		for v in 1.0 1.1; do
			[ "$(dpkg-deb -f /opt/tuxlab/packages/tuxlab-hello_${v}_all.deb Version)" = $v ] || { echo "missing or broken tuxlab-hello_${v}_all.deb"; exit 1; }
		done
		! dpkg -s tuxlab-hello >/dev/null 2>&1 || { echo "tuxlab-hello is installed"; exit 1; }
		echo sample-debs-ok
		for f in README auth.log syslog nginx-access.log app.log; do [ -s /var/log/tuxlab-samples/$f ] && [ -r /var/log/tuxlab-samples/$f ] || { echo "missing /var/log/tuxlab-samples/$f"; exit 1; }; done
		echo sample-logs-ok
		[ -x /usr/local/sbin/tuxlab-idle ] || { echo "missing /usr/local/sbin/tuxlab-idle"; exit 1; }; echo tuxlab-idle-present'
	smoke_idle debian "$DEBIAN_IMAGE"
	say "[debian] built $DEBIAN_IMAGE in $(elapsed $((SECONDS - start))), $(size_of "$DEBIAN_IMAGE")"
}

# ---------------------------------------------------------------- tools
# The tools every sandbox mounts read-only at /.tuxlab (a volume the server
# fills from this image): scripts run with these, never with the sandbox's own
# programs, which root in the sandbox can replace. See docs/sandboxes.md.

# tools_programs: the directories of TOOLS_GO_PROGRAMS that exist, one a line.
tools_programs() {
	local dir
	for dir in "${TOOLS_GO_PROGRAMS[@]}"; do
		if [ -d "$REPO/$dir" ]; then printf '%s\n' "$dir"; fi
	done
}

# tools_recipe: this script's recipe and the Go programs' sources (every file
# of this module's packages they are built from, go.mod, go.sum, the Go
# version), so that changing a program rebuilds the image.
tools_recipe() {
	local programs
	programs=$(tools_programs)
	if [ -z "$programs" ]; then
		printf '%s\n' "$RECIPE"
		return
	fi
	command -v go >/dev/null || die "Go is needed to build ${programs//$'\n'/ } into $TOOLS_IMAGE: install Go (https://go.dev/doc/install)"
	(
		cd "$REPO"
		printf '%s\n' "$RECIPE" "$(go env GOVERSION)"
		# shellcheck disable=SC2086,SC2016 # one directory per word; the braces are a Go template, not shell
		go list -deps -f '{{if and .Module .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}' $programs |
			sed "s|^$REPO/||" | LC_ALL=C sort | xargs -r sha256sum
		sha256sum go.mod go.sum
	) | sha256sum | cut -c1-16
}

build_tools() {
	local start=$SECONDS bb bashs root bin applet n=0 dir name
	say "[tools] building $TOOLS_IMAGE"
	apt_install busybox-static bash-static
	bb=$(dpkg-query -L busybox-static | awk '/\/bin\/busybox$/ && !f {print; f = 1}')
	bashs=$(dpkg-query -L bash-static | awk '/\/bin\/bash-static$/ && !f {print; f = 1}')
	[ -x "${bb:-/nonexistent}" ] || die "busybox-static is installed but has no /bin/busybox; reinstall it (apt-get install --reinstall busybox-static)"
	[ -x "${bashs:-/nonexistent}" ] || die "bash-static is installed but has no /bin/bash-static; reinstall it (apt-get install --reinstall bash-static)"
	root=$WORK/tools-rootfs
	bin=$root/tuxlab/bin
	mkdir -p "$bin"
	cp "$bb" "$bin/busybox"
	cp "$bashs" "$bin/bash"
	# shellcheck disable=SC2016 # $BASH_VERSION is the static bash's, expanded by it
	say "[tools] static bash $("$bashs" -c 'echo "$BASH_VERSION"'), $("$bb" 2>&1 | head -1 | awk '{print $1, $2}')"
	# One link per applet: scripts and the server name each tool by its path.
	while read -r applet; do
		case $applet in '' | busybox | bash | linuxrc) continue ;; esac
		ln -s busybox "$bin/$applet"
		n=$((n + 1))
	done < <("$bb" --list)
	say "[tools] $n BusyBox applet links"
	for dir in "${TOOLS_GO_PROGRAMS[@]}"; do
		name=$(basename "$dir")
		if [ ! -d "$REPO/$dir" ]; then
			say "[tools] $dir does not exist: no $name in the image"
			continue
		fi
		say "[tools] go build $dir (static)"
		(cd "$REPO" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$bin/$name" "$dir") ||
			die "go build $dir failed (output above)"
	done
	chmod 0755 "$root/tuxlab" "$bin" "$bin/busybox" "$bin/bash"
	tar --numeric-owner --owner=0 --group=0 -C "$root" -cf - . |
		import_rootfs tools "$TOOLS_IMAGE" - \
			'CMD ["/tuxlab/bin/sh"]' \
			'LABEL org.tuxlab.image=tools' \
			"LABEL org.tuxlab.recipe=$TOOLS_RECIPE"
	# shellcheck disable=SC2016 # expanded in the container
	smoke tools "$TOOLS_IMAGE" "bash and sh read a script on stdin, env -i, timeout -s KILL, md5sum, the programs" /tuxlab/bin/sh -c 'cd /tuxlab/bin || exit 1
		[ "$(echo "echo \$((6*7)) \${LEAK:-none}" | LEAK=1 ./env -i ./bash -s)" = "42 none" ] && echo bash-ok || exit 1
		[ "$(echo "echo \$((6*7))" | ./env -i ./sh -s)" = 42 ] && echo sh-ok || exit 1
		./timeout -s KILL 1 ./sleep 5; [ $? = 137 ] && echo timeout-ok || exit 1
		[ "$(printf tuxlab | ./md5sum)" = "$(printf tuxlab | ./md5sum -)" ] && ./md5sum ./busybox >/dev/null && echo md5sum-ok || exit 1
		for p in *; do [ -x "$p" ] || { echo "not executable: $p"; exit 1; }; done; echo programs-ok'
	say "[tools] built $TOOLS_IMAGE in $(elapsed $((SECONDS - start))), $(size_of "$TOOLS_IMAGE")"
}

# ---------------------------------------------------------------- main
check_engine

todo=()
case $TARGET in
busybox) todo=(busybox) ;;
debian) todo=(debian) ;;
tools) todo=(tools) ;;
all) todo=(tools busybox debian) ;; # tools first: every sandbox needs it, and it is quick
esac

locked=0
for t in "${todo[@]}"; do
	case $t in busybox) img=$BUSYBOX_IMAGE ;; debian) img=$DEBIAN_IMAGE ;; tools) img=$TOOLS_IMAGE ;; esac
	want=$RECIPE
	if [ "$t" = tools ]; then
		TOOLS_RECIPE=$(tools_recipe)
		want=$TOOLS_RECIPE
	fi
	if [ "$FORCE" = 0 ]; then
		if image_current "$img" "$want"; then
			say "[$t] $img already present (recipe $want; use --force to rebuild)"
			continue
		fi
		if have=$(image_recipe "$img"); then
			[ "$have" = none ] && have="no recipe label" || have="recipe $have"
			say "[$t] $img is present but was built by another version of this script ($have, this one is $want): rebuilding"
		fi
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
		if [ "$FORCE" = 0 ] && image_current "$img" "$want"; then
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
