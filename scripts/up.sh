#!/usr/bin/env bash
# Bring tuxlab up on the embedded default: SQLite in ./data and the bundled
# curriculum. Installs and starts the container engine and builds the sandbox
# images when they are missing (as root on Debian), builds the binary, and runs
# `tuxlab serve` in the foreground. Without an engine it still serves: sandbox
# routes answer 503 until one appears. TUXLAB_NO_ENGINE=1 skips the engine set-up.
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

say "building tuxlab"
go build -o ./tuxlab ./cmd/tuxlab

say "starting tuxlab on ${TUXLAB_ADDR:-127.0.0.1:8000} (data in ${TUXLAB_DATA_DIR:-./data}); Ctrl-C stops it"
say "learners: open http://${TUXLAB_ADDR:-127.0.0.1:8000} in a browser and sign up"
say "first admin: ./tuxlab user create --username admin --email you@your.domain --role admin"
exec ./tuxlab serve "$@"
