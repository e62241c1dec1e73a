#!/usr/bin/env bash
# Bring tuxlab up on the embedded default: SQLite in ./data and the bundled
# curriculum. Installs and starts the container engine and builds the sandbox
# images when they are missing (as root on Debian), builds the binary, and runs
# `tuxlab serve` in the foreground. Without an engine it still serves: sandbox
# routes answer 503 until one appears. TUXLAB_NO_ENGINE=1 skips the engine set-up.
# Machines (virtual machines, docs/machines.md): as root, QEMU is installed and
# the machine image built (a few minutes the first time, then cached) when they
# are missing; without them machine templates answer 503 and containers work.
# TUXLAB_NO_MACHINES=1 skips that.
#
#   ./scripts/up.sh                 # http://127.0.0.1:8000
#   TUXLAB_ADDR=0.0.0.0:8080 ./scripts/up.sh
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '==> %s\n' "$*" >&2; }

command -v go >/dev/null || { say "Go is missing: install Go 1.26 or newer (https://go.dev/doc/install)"; exit 1; }

if [ -z "${TUXLAB_NO_ENGINE:-}" ]; then
	if ./scripts/ensure-engine.sh; then
		./scripts/build-images.sh all || say "sandbox images could not be built: sandboxes answer 503 until scripts/build-images.sh succeeds"
	else
		say "no container engine: tuxlab serves lessons; sandbox routes answer 503 until an engine runs"
	fi
fi

if [ -z "${TUXLAB_NO_MACHINES:-}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	if ! command -v qemu-system-x86_64 >/dev/null || ! command -v qemu-img >/dev/null; then
		say "installing QEMU for machines (apt-get install qemu-system-x86 qemu-utils)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 qemu-utils >/dev/null ||
			say "QEMU could not be installed: machine templates answer 503"
	fi
	if command -v qemu-system-x86_64 >/dev/null && docker image inspect tuxlab/sandbox-debian:latest >/dev/null 2>&1; then
		./scripts/build-machine-image.sh || say "the machine image could not be built: machine templates answer 503 until scripts/build-machine-image.sh succeeds"
	fi
fi

say "building tuxlab"
go build -o ./tuxlab ./cmd/tuxlab

say "starting tuxlab on ${TUXLAB_ADDR:-127.0.0.1:8000} (data in ${TUXLAB_DATA_DIR:-./data}); Ctrl-C stops it"
say "learners: open http://${TUXLAB_ADDR:-127.0.0.1:8000} in a browser and sign up"
say "first admin: ./tuxlab user create --username admin --email you@your.domain --role admin"
exec ./tuxlab serve "$@"
