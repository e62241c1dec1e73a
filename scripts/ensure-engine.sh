#!/usr/bin/env bash
# Make sure a container engine answers: install Debian's docker.io when it is
# missing (as root), start the daemon when none runs, and wait until it answers.
#
#   ./scripts/ensure-engine.sh     # exit 0 when `docker version` reaches a daemon
#
# With DOCKER_HOST set, it only checks that engine. Logs of a daemon it starts go
# to /var/log/tuxlab-dockerd.log.
set -euo pipefail

say() { printf '==> %s\n' "$*" >&2; }
die() { printf '==> ERROR: %s\n' "$*" >&2; exit 1; }

answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if command -v docker >/dev/null && answers; then
	exit 0
fi
[ -z "${DOCKER_HOST:-}" ] || die "the engine at DOCKER_HOST=$DOCKER_HOST does not answer"
[ "$(id -u)" = 0 ] || die "no container engine answers: install docker.io and start it (as root: ./scripts/ensure-engine.sh)"

if ! command -v dockerd >/dev/null; then
	command -v apt-get >/dev/null || die "no dockerd and no apt-get: install a Docker engine yourself"
	if [ -z "${TUXLAB_APT_UPDATED:-}" ]; then
		say "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
	fi
	say "installing docker.io (the container engine for sandboxes)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null
fi

if ! answers; then
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
		say "starting docker with systemctl"
		systemctl start docker || true
	fi
fi
if ! answers; then
	say "starting dockerd (log: /var/log/tuxlab-dockerd.log)"
	nohup dockerd >/var/log/tuxlab-dockerd.log 2>&1 &
fi
for _ in $(seq 60); do
	answers && { say "container engine ready: $(docker version --format 'Docker {{.Server.Version}}, API {{.Server.APIVersion}}')"; exit 0; }
	sleep 1
done
die "dockerd did not come up within 60 s: see /var/log/tuxlab-dockerd.log"
