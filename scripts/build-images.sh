#!/usr/bin/env bash
# Build tuxlab's sandbox images locally, without any container registry.
#
#   ./scripts/build-images.sh                 # every image, each only if missing or out of date
#   ./scripts/build-images.sh busybox         # tuxlab/sandbox-busybox:latest (seconds; used by the tests)
#   ./scripts/build-images.sh debian          # tuxlab/sandbox-debian:latest  (debootstrap: minutes)
#   ./scripts/build-images.sh tools           # tuxlab/sandbox-tools:latest   (seconds; every sandbox needs it)
#   ./scripts/build-images.sh --force all     # rebuild even if present and up to date
#
# Every image is labelled org.tuxlab.recipe=<first 16 hex digits of this file's
# sha256>; an image with another recipe label (an older script) is rebuilt. The
# tools image's recipe also covers the sources of the Go programs it carries.
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

# What the images are made of is all in this file (packages, the files it
# writes, the build steps): its hash is the recipe every image is labelled with.
RECIPE=$(sha256sum "${BASH_SOURCE[0]}" 2>/dev/null | cut -c1-16) || true
[ ${#RECIPE} = 16 ] || die "cannot compute the sha256 of ${BASH_SOURCE[0]} (sha256sum, from coreutils, is needed)"

usage() {
	sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
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
# the text-processing and troubleshooting lessons. Generated with a fixed seed
# and bash's own integer arithmetic (no awk rand(), which differs between awks),
# so every build writes the same bytes. Addresses are from the documentation
# ranges only (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24: RFC 5737).
LOG_SEED=20241120
LOG_YEAR=2024

# rnd N: R = a pseudo-random number in 0..N-1 (an LCG; no subshell, so the state carries on).
rnd() {
	LOG_SEED=$(((LOG_SEED * 1103515245 + 12345) % 2147483648))
	R=$(((LOG_SEED >> 16) % $1))
}
# pick NAME: P = a random element of array NAME.
pick() {
	local -n _arr=$1
	rnd "${#_arr[@]}"
	P=${_arr[R]}
}
# Timestamps from T, seconds since 2024-11-20 00:00:00 UTC.
ts_syslog() { printf -v TS 'Nov %2d %02d:%02d:%02d' $((20 + T / 86400)) $((T / 3600 % 24)) $((T / 60 % 60)) $((T % 60)); }
ts_nginx() { printf -v TS '%02d/Nov/%d:%02d:%02d:%02d +0000' $((20 + T / 86400)) "$LOG_YEAR" $((T / 3600 % 24)) $((T / 60 % 60)) $((T % 60)); }
ts_iso() {
	rnd 1000
	printf -v TS '%d-11-%02dT%02d:%02d:%02d.%03dZ' "$LOG_YEAR" $((20 + T / 86400)) $((T / 3600 % 24)) $((T / 60 % 60)) $((T % 60)) "$R"
}

# shellcheck disable=SC2034 # the arrays are read through pick's nameref
gen_auth_log() {
	local n=0 pid=2100 sess=40 port ip user last_cron=-1 alice=0
	local -a bad_users=(admin test oracle ubuntu guest postgres ftpuser pi git support)
	local -a attackers=(203.0.113.7 203.0.113.7 203.0.113.7 203.0.113.45 198.51.100.23 198.51.100.77)
	local -a deploy_cmds=("/usr/bin/systemctl restart nginx" "/usr/bin/systemctl status nginx"
		"/usr/bin/apt-get update" "/usr/bin/tail -n 50 /var/log/nginx/error.log" "/usr/bin/journalctl -u nginx --since today")
	local -a alice_cmds=("/usr/bin/less /var/log/syslog" "/usr/bin/du -sh /var/log" "/usr/bin/find /var/log -size +10M")
	T=$((6 * 3600 + 2))
	line() { ts_syslog; printf '%s web01 %s\n' "$TS" "$1"; n=$((n + 1)); }
	while [ "$n" -lt 200 ]; do
		rnd 600; T=$((T + 30 + R))
		# cron's hourly job at minute 17, as Debian's /etc/crontab has it
		if [ $((T / 60 % 60)) -ge 17 ] && [ $((T / 60 % 60)) -lt 22 ] && [ "$last_cron" != $((T / 3600)) ]; then
			last_cron=$((T / 3600)); pid=$((pid + 7))
			line "CRON[$pid]: pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)"
			T=$((T + 1))
			line "CRON[$pid]: pam_unix(cron:session): session closed for user root"
			continue
		fi
		rnd 20; pid=$((pid + 3 + R))
		rnd 100; port=$((32768 + R * 300 + pid % 300))
		rnd 10
		case $R in
		0 | 1 | 2 | 3) # password guessing for accounts that do not exist
			pick attackers; ip=$P; pick bad_users; user=$P
			line "sshd[$pid]: Invalid user $user from $ip port $port"
			line "sshd[$pid]: Failed password for invalid user $user from $ip port $port ssh2"
			line "sshd[$pid]: Connection closed by invalid user $user $ip port $port [preauth]"
			;;
		4) # and for root
			pick attackers; ip=$P
			line "sshd[$pid]: Failed password for root from $ip port $port ssh2"
			rnd 2
			if [ "$R" = 0 ]; then
				line "sshd[$pid]: Failed password for root from $ip port $port ssh2"
				line "sshd[$pid]: error: maximum authentication attempts exceeded for root from $ip port $port ssh2 [preauth]"
				line "sshd[$pid]: Disconnecting authenticating user root $ip port $port: Too many authentication failures [preauth]"
			else
				line "sshd[$pid]: Connection closed by authenticating user root $ip port $port [preauth]"
			fi
			;;
		5 | 6) # deploy logs in with its key and uses sudo
			sess=$((sess + 1))
			line "sshd[$pid]: Accepted publickey for deploy from 192.0.2.10 port $port ssh2: ED25519 SHA256:9s3bM2QeX1oGk7cR0uLr5yVt8wZpNfHaJdEiK4mCq6U"
			line "sshd[$pid]: pam_unix(sshd:session): session opened for user deploy(uid=1001) by (uid=0)"
			line "systemd-logind[512]: New session $sess of user deploy."
			pick deploy_cmds
			T=$((T + 15))
			line "sudo:   deploy : TTY=pts/0 ; PWD=/home/deploy ; USER=root ; COMMAND=$P"
			line "sudo: pam_unix(sudo:session): session opened for user root(uid=0) by deploy(uid=1001)"
			line "sudo: pam_unix(sudo:session): session closed for user root"
			rnd 300; T=$((T + 60 + R))
			line "sshd[$pid]: Received disconnect from 192.0.2.10 port $port:11: disconnected by user"
			line "sshd[$pid]: Disconnected from user deploy 192.0.2.10 port $port"
			line "sshd[$pid]: pam_unix(sshd:session): session closed for user deploy"
			line "systemd-logind[512]: Session $sess logged out. Waiting for processes to exit."
			line "systemd-logind[512]: Removed session $sess."
			;;
		7) # alice logs in with a password; her sudo does not always go well
			sess=$((sess + 1)) alice=$((alice + 1))
			line "sshd[$pid]: Accepted password for alice from 192.0.2.25 port $port ssh2"
			line "sshd[$pid]: pam_unix(sshd:session): session opened for user alice(uid=1002) by (uid=0)"
			line "systemd-logind[512]: New session $sess of user alice."
			pick alice_cmds
			T=$((T + 40))
			if [ "$alice" = 2 ]; then # her second session: the wrong password, three times
				P="/usr/bin/cat /etc/shadow"
				line "sudo: pam_unix(sudo:auth): authentication failure; logname=alice uid=1002 euid=0 tty=/dev/pts/1 ruser=alice rhost=  user=alice"
				line "sudo:    alice : 3 incorrect password attempts ; TTY=pts/1 ; PWD=/home/alice ; USER=root ; COMMAND=$P"
			else
				line "sudo:    alice : TTY=pts/1 ; PWD=/home/alice ; USER=root ; COMMAND=$P"
				line "sudo: pam_unix(sudo:session): session opened for user root(uid=0) by alice(uid=1002)"
				line "sudo: pam_unix(sudo:session): session closed for user root"
			fi
			;;
		*) # scanners that give up before authenticating
			pick attackers; ip=$P
			rnd 2
			if [ "$R" = 0 ]; then
				line "sshd[$pid]: Connection closed by $ip port $port [preauth]"
			else
				line "sshd[$pid]: Received disconnect from $ip port $port:11: Bye Bye [preauth]"
				line "sshd[$pid]: Disconnected from $ip port $port [preauth]"
			fi
			;;
		esac
	done
	unset -f line
}

# shellcheck disable=SC2034 # the arrays are read through pick's nameref
gen_syslog() {
	local n=0 pid=3000 hour=-1 up oom_done='' certbot_done='' api=1042
	local -a units=("apt-daily.service - Daily apt download activities" "man-db.service - Daily man-db regeneration"
		"logrotate.service - Rotate log files" "e2scrub_all.service - Online ext4 Metadata Check for All Filesystems"
		"systemd-tmpfiles-clean.service - Cleanup of Temporary Directories" "phpsessionclean.service - Clean php session files")
	local -a ports=(23 22 3389 445 8080 5900 1433)
	local -a blocked=(203.0.113.7 203.0.113.45 198.51.100.77 198.51.100.23)
	T=$((5 * 3600 + 59 * 60 + 58))
	line() { ts_syslog; printf '%s web01 %s\n' "$TS" "$1"; n=$((n + 1)); }
	# a boot
	line "kernel: [    0.000000] Linux version 6.1.0-27-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.115-1 (2024-11-01)"
	line "kernel: [    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-6.1.0-27-amd64 root=UUID=3f1c2b7e-5a4d-4e8f-9b0a-1c2d3e4f5a6b ro quiet"
	line "kernel: [    0.004211] DMI: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.2-debian-1.16.2-1 04/01/2014"
	line "kernel: [    0.112408] Memory: 2006412K/2096696K available (14336K kernel code, 2332K rwdata)"
	line "kernel: [    1.284551] EXT4-fs (vda1): mounted filesystem with ordered data mode. Quota mode: none."
	line "kernel: [    2.019377] virtio_net virtio1 ens3: renamed from eth0"
	T=$((T + 3))
	line "systemd[1]: systemd 252.31-1~deb12u1 running in system mode (+PAM +AUDIT +SELINUX +APPARMOR +IMA +SMACK +SECCOMP +GCRYPT -GNUTLS +OPENSSL +ACL +BLKID +CURL +ELFUTILS +FIDO2 +IDN2 -IDN +IPTC +KMOD +LIBCRYPTSETUP +LIBFDISK +PCRE2 -PWQUALITY +P11KIT +QRENCODE +TPM2 +BZIP2 +LZ4 +XZ +ZLIB +ZSTD -BPF_FRAMEWORK -XKBCOMMON +UTMP +SYSVINIT default-hierarchy=unified)"
	line "systemd[1]: Detected virtualization kvm."
	line "systemd[1]: Hostname set to <web01>."
	for up in "systemd-journald.service - Journal Service" "systemd-timesyncd.service - Network Time Synchronization" \
		"cron.service - Regular background program processing daemon" "ssh.service - OpenBSD Secure Shell server" \
		"systemd-logind.service - User Login Management" "rsyslog.service - System Logging Service" \
		"nginx.service - A high performance web server and a reverse proxy server"; do
		line "systemd[1]: Starting ${up}..."
		T=$((T + 1))
		line "systemd[1]: Started ${up}."
	done
	line "systemd-timesyncd[488]: Initial synchronization to time server 192.0.2.123:123 (ntp.example.net)."
	line "kernel: [   14.882310] EXT4-fs (vda2): warning: mounting fs with errors, running e2fsck is recommended"
	line "systemd[1]: Reached target multi-user.target - Multi-User System."
	line "systemd[1]: Startup finished in 2.104s (kernel) + 12.871s (userspace) = 14.975s."
	while [ "$n" -lt 200 ]; do
		rnd 600; T=$((T + 60 + R))
		if [ $((T / 3600)) != "$hour" ] && [ $((T / 60 % 60)) -ge 17 ]; then
			hour=$((T / 3600)); pid=$((pid + 11))
			line "CRON[$pid]: (root) CMD (cd / && run-parts --report /etc/cron.hourly)"
			continue
		fi
		rnd 14
		case $R in
		0 | 1 | 2)
			pick units; up=$P
			line "systemd[1]: Starting ${up}..."
			rnd 20; T=$((T + 1 + R))
			line "systemd[1]: ${up%% - *}: Deactivated successfully."
			line "systemd[1]: Finished ${up}."
			;;
		3 | 4 | 5)
			pick blocked; rnd 1000
			printf -v up '[%5d.%06d]' $((T - 6 * 3600)) $((R * 997))
			line "kernel: $up [UFW BLOCK] IN=ens3 OUT= MAC=52:54:00:12:34:56:52:54:00:65:43:21:08:00 SRC=$P DST=192.0.2.5 LEN=44 TOS=0x00 PREC=0x00 TTL=243 ID=$((R * 61)) PROTO=TCP SPT=$((40000 + R * 17)) DPT=${ports[R % 7]} WINDOW=1024 RES=0x00 SYN URGP=0"
			;;
		6)
			pid=$((pid + 5))
			line "CRON[$pid]: (www-data) CMD (/usr/local/bin/cleanup-uploads.sh)"
			;;
		7)
			pid=$((pid + 5))
			line "backup.sh[$pid]: starting incremental backup to 198.51.100.200"
			rnd 3
			if [ "$R" = 0 ]; then
				T=$((T + 30))
				line "backup.sh[$pid]: ERROR: cannot reach backup host 198.51.100.200: Connection timed out"
			else
				T=$((T + 95))
				line "backup.sh[$pid]: backup finished: $((1200 + R * 37)) files, $((300 + R * 11)) MB"
			fi
			;;
		8)
			rnd 9
			line "orders-api[$api]: warning: disk usage on /var is $((86 + R))%"
			;;
		9)
			line "rsyslogd[498]: [origin software=\"rsyslogd\" swVersion=\"8.2302.0\" x-pid=\"498\" x-info=\"https://www.rsyslog.com\"] rsyslogd was HUPed"
			;;
		10)
			line "systemd-timesyncd[488]: Timed out waiting for reply from 192.0.2.123:123 (ntp.example.net)."
			;;
		11)
			pid=$((pid + 5))
			line "systemd[1]: Started session-$((pid % 97)).scope - Session $((pid % 97)) of User deploy."
			;;
		12)
			if [ -z "$certbot_done" ]; then
				certbot_done=1; pid=$((pid + 5))
				line "systemd[1]: Starting certbot.service - Certbot..."
				T=$((T + 31))
				line "certbot[$pid]: An unexpected error occurred: Timeout during connect (likely firewall problem)"
				line "systemd[1]: certbot.service: Main process exited, code=exited, status=1/FAILURE"
				line "systemd[1]: certbot.service: Failed with result 'exit-code'."
				line "systemd[1]: Failed to start certbot.service - Certbot."
			else
				line "systemd[1]: Started session-$((pid % 97)).scope - Session $((pid % 97)) of User alice."
			fi
			;;
		*)
			if [ -z "$oom_done" ]; then
				oom_done=1
				line "kernel: [$(printf '%5d' $((T - 6 * 3600))).204117] orders-api invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0"
				line "kernel: [$(printf '%5d' $((T - 6 * 3600))).204398] Out of memory: Killed process $api (orders-api) total-vm:2461736kB, anon-rss:1488212kB, file-rss:0kB, shmem-rss:0kB, UID:998 pgtables:3320kB oom_score_adj:0"
				line "systemd[1]: orders-api.service: A process of this unit has been killed by the OOM killer."
				line "systemd[1]: orders-api.service: Main process exited, code=killed, status=9/KILL"
				line "systemd[1]: orders-api.service: Failed with result 'oom-kill'."
				T=$((T + 5))
				line "systemd[1]: orders-api.service: Scheduled restart job, restart counter is at 1."
				line "systemd[1]: Started orders-api.service - Orders API."
				pid=$((pid + 3)); api=$pid
			else
				line "systemd[1]: Starting apt-daily-upgrade.service - Daily apt upgrade and clean activities..."
				T=$((T + 9))
				line "systemd[1]: apt-daily-upgrade.service: Deactivated successfully."
				line "systemd[1]: Finished apt-daily-upgrade.service - Daily apt upgrade and clean activities."
			fi
			;;
		esac
	done
	unset -f line
}

# shellcheck disable=SC2034 # the arrays are read through pick's nameref
gen_nginx_log() {
	local n ip ua req path status size ref
	local -a clients=(198.51.100.14 198.51.100.14 198.51.100.14 198.51.100.52 198.51.100.52 192.0.2.25 192.0.2.44
		192.0.2.44 203.0.113.88 203.0.113.88 192.0.2.10 203.0.113.7 203.0.113.7 198.51.100.23)
	local -a browsers=("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"
		"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15")
	local -a pages=("/ 200 5321" "/index.html 200 5321" "/about 200 3120" "/blog/ 200 8740" "/blog 301 169"
		"/blog/2024/11/backups-that-work 200 12044" "/css/site.css 200 18210" "/css/site.css 304 0"
		"/js/app.js 200 48211" "/images/logo.png 200 7310" "/favicon.ico 404 153" "/login 200 2210"
		"/api/orders 200 1843" "/api/orders 200 1843" "/api/orders 500 79" "/products/42 200 4410" "/products/999 404 153")
	local -a probes=("/wp-login.php 404 153" "/.env 404 153" "/phpmyadmin/ 404 153" "/.git/config 404 153"
		"/admin 403 153" "/cgi-bin/luci 404 153" "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php 404 153")
	T=$((6 * 3600 + 4 * 60 + 11))
	for ((n = 0; n < 300; n++)); do
		rnd 150; T=$((T + 5 + R))
		pick clients; ip=$P
		ref="-"
		case $ip in
		203.0.113.7 | 198.51.100.23) # vulnerability scanners
			pick probes; req=$P
			rnd 2; [ "$R" = 0 ] && ua="python-requests/2.31.0" || ua="Mozilla/5.0 zgrab/0.x"
			;;
		192.0.2.10) # the monitoring host
			req="/api/health 200 15"; ua="Monitoring-Agent/3.2 (+https://monitor.example.net)"
			;;
		203.0.113.88) # a search engine
			pick pages; req=$P
			ua="Mozilla/5.0 (compatible; ExampleBot/2.1; +http://www.example.com/bot.html)"
			;;
		192.0.2.44) # a script
			rnd 4; [ "$R" = 0 ] && req="/api/orders 500 79" || req="/api/orders 200 1843"
			ua="curl/7.88.1"
			;;
		*)
			pick pages; req=$P
			ua=${browsers[${ip##*.} % ${#browsers[@]}]} # one browser per client
			rnd 3; [ "$R" = 0 ] && ref="https://www.example.com/"
			;;
		esac
		read -r path status size <<<"$req"
		ts_nginx
		if [ "$path" = /login ] && [ $((n % 4)) = 1 ]; then
			printf '%s - - [%s] "POST /login HTTP/1.1" 302 0 "https://www.example.com/login" "%s"\n' "$ip" "$TS" "$ua"
		elif [ "$path" = /api/orders ] && [ $((n % 5)) = 2 ] && [ "$ip" != 203.0.113.88 ]; then
			[ "$status" = 500 ] || status=201
			printf '%s - - [%s] "POST /api/orders HTTP/1.1" %s %s "-" "%s"\n' "$ip" "$TS" "$status" "$size" "$ua"
		else
			printf '%s - - [%s] "GET %s HTTP/1.1" %s %s "%s" "%s"\n' "$ip" "$TS" "$path" "$status" "$size" "$ref" "$ua"
		fi
	done
}

gen_app_log() {
	local n order=10480
	T=$((6 * 3600 + 1 * 60 + 40))
	ts_iso; printf '%s INFO  [main] orders-api 2.4.1 starting (pid 1042)\n' "$TS"
	T=$((T + 2)); ts_iso; printf '%s INFO  [main] connected to database db01:5432/orders\n' "$TS"
	T=$((T + 1)); ts_iso; printf '%s INFO  [main] listening on 127.0.0.1:8081\n' "$TS"
	for ((n = 3; n < 100; n++)); do
		rnd 500; T=$((T + 30 + R))
		ts_iso
		rnd 20
		case $R in
		0 | 1 | 2 | 3 | 4 | 5 | 6)
			order=$((order + 1)); rnd 9
			printf '%s INFO  [worker-%d] order %d created for customer %d (%d items)\n' "$TS" $((order % 4 + 1)) "$order" $((300 + order * 7 % 97)) $((R + 1))
			;;
		7 | 8 | 9 | 10)
			rnd 400
			printf '%s INFO  [http-%d] GET /api/orders 200 in %d ms\n' "$TS" $((R % 8 + 1)) $((12 + R))
			;;
		11 | 12)
			printf '%s INFO  [scheduler] cache refreshed: %d products\n' "$TS" $((1200 + n))
			;;
		13 | 14)
			rnd 3000
			# shellcheck disable=SC2016 # a literal $1: the query's placeholder
			printf '%s WARN  [db-pool] slow query (%d ms): SELECT * FROM orders WHERE customer_id = $1\n' "$TS" $((2000 + R))
			;;
		15)
			printf '%s WARN  [payments] payment gateway answered 503, retrying (attempt 2/3) for order %d\n' "$TS" "$order"
			;;
		16)
			printf '%s WARN  [main] disk usage on /var is above 85%%\n' "$TS"
			;;
		17)
			printf '%s ERROR [payments] payment gateway timeout after 30000 ms for order %d\n' "$TS" "$order"
			;;
		18)
			printf '%s ERROR [db-pool] database connection lost: connection refused (db01:5432), reconnecting\n' "$TS"
			;;
		*)
			printf '%s ERROR [mailer] could not send confirmation for order %d: 451 4.7.1 try again later\n' "$TS" "$order"
			;;
		esac
	done
}

# write_sample_logs DIR
write_sample_logs() {
	local d=$1 f
	mkdir -p "$d"
	LOG_SEED=20241120
	gen_auth_log >"$d/auth.log"
	gen_syslog >"$d/syslog"
	gen_nginx_log >"$d/nginx-access.log"
	gen_app_log >"$d/app.log"
	cat >"$d/README" <<'EOF'
Sample logs for tuxlab's lessons (grep, awk, sort, uniq, cut, less, tail ...).

They are made up: one day, 20 November 2024 (UTC), of a Debian web server called
web01 that runs nginx, an "orders-api" application and SSH. Every address in them is
from the ranges reserved for documentation (192.0.2.0/24, 198.51.100.0/24,
203.0.113.0/24), so none of them is a real machine. They are written when the
sandbox image is built, identically every time.

  auth.log          sshd logins (accepted and failed), sudo, cron sessions
                    (rsyslog's traditional format, as in /var/log/auth.log)
  syslog            a boot, then kernel, systemd, cron and application messages,
                    with a few errors and warnings
  nginx-access.log  nginx's "combined" format: client, time, request, status,
                    size, referrer, user agent
  app.log           the orders-api's own log: ISO 8601 time, level (INFO, WARN,
                    ERROR), thread, message

Nothing writes to them: copy them to your home directory to edit them.
EOF
	chmod 0755 "$d"
	for f in "$d"/*; do chmod 0644 "$f"; done
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
