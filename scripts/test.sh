#!/usr/bin/env bash
# Run tuxlab's whole test suite on SQLite and PostgreSQL.
#
#   ./scripts/test.sh            # installs what it needs on Debian (as root), then go test ./...
#   ./scripts/test.sh -run Admin # extra arguments go to go test
#
# It installs and starts PostgreSQL when it can (root on Debian) and points the
# tests at it with TUXLAB_TEST_POSTGRES_URL. Set TUXLAB_TEST_POSTGRES_URL yourself
# to use another server; set TUXLAB_TEST_NO_POSTGRES=1 to test on SQLite alone.
#
# Sandbox tests need a container engine and the sandbox images: busybox for the
# API tests, debian for proving every bundled laboratory and exam check on the
# image it targets. The script installs and starts the engine and builds the
# images when it can (the debian one takes a few minutes the first time), and
# then sets TUXLAB_TEST_DOCKER=1, which makes a missing engine or image fail the tests.
# TUXLAB_TEST_NO_DOCKER=1 skips that set-up (and the sandbox tests skip).
#
# Machine tests need QEMU and the machine image (scripts/build-machine-image.sh,
# from the debian image): installed and built when missing, then
# TUXLAB_TEST_MACHINE=1. TUXLAB_TEST_NO_MACHINE=1 skips that (the tests skip).
#
# The password reset tests send mail to a real SMTP server: Mailpit, installed
# from the Go module proxy into Go's bin directory when missing, and started by
# the tests themselves on free ports. TUXLAB_TEST_SMTP=1 then makes a missing
# mailpit fail them. TUXLAB_TEST_NO_SMTP=1 skips that set-up (the tests skip).
#
# The browser test drives headless Chromium through the web interface; the script
# installs chromium and node (apt) and e2e's playwright-core (npm ci), then sets
# TUXLAB_TEST_BROWSER=1. TUXLAB_TEST_NO_BROWSER=1 skips that set-up (the test skips).
# Its screenshots, one per page, are kept in artifacts/screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '==> %s\n' "$*" >&2; }

need_root_apt() {
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		say "cannot install $* here: run as root on Debian, or install it yourself"
		return 1
	fi
}

apt_install() {
	need_root_apt "$@" || return 1
	if [ -z "${TUXLAB_APT_UPDATED:-}" ]; then
		say "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		export TUXLAB_APT_UPDATED=1
	fi
	say "installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

command -v go >/dev/null || { say "Go is missing: install Go 1.26 or newer (https://go.dev/doc/install)"; exit 1; }

# PostgreSQL: a local cluster with a role that may create the per-test databases.
if [ -z "${TUXLAB_TEST_POSTGRES_URL:-}" ] && [ -z "${TUXLAB_TEST_NO_POSTGRES:-}" ]; then
	if ! command -v pg_lsclusters >/dev/null || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
		apt_install postgresql
	fi
	ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -1)
	if [ -z "$(pg_lsclusters -h | awk -v v="$ver" '$1==v')" ]; then
		say "creating PostgreSQL $ver cluster"
		pg_createcluster "$ver" main >/dev/null
	fi
	if ! pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main"' | grep -q online; then
		say "starting PostgreSQL $ver"
		pg_ctlcluster "$ver" main start
	fi
	port=$(pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $3}')
	runuser -u postgres -- psql -q -p "$port" -v ON_ERROR_STOP=1 >/dev/null <<-'SQL'
		DO $$ BEGIN
		  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tuxlab_test') THEN
		    CREATE ROLE tuxlab_test LOGIN CREATEDB PASSWORD 'tuxlab_test';
		  END IF;
		END $$;
		-- Dropping a test database WITH (FORCE) may have to end an autovacuum worker.
		GRANT pg_signal_backend TO tuxlab_test;
	SQL
	export TUXLAB_TEST_POSTGRES_URL="postgres://tuxlab_test:tuxlab_test@127.0.0.1:$port/postgres?sslmode=disable"
fi

# The container engine and the test image.
if [ -z "${TUXLAB_TEST_NO_DOCKER:-}" ]; then
	if ./scripts/ensure-engine.sh && ./scripts/build-images.sh all; then
		export TUXLAB_TEST_DOCKER=1
	elif [ -n "${CI:-}" ]; then
		say "CI needs the container engine for the sandbox tests"; exit 1
	else
		say "no container engine: the sandbox tests will skip (TUXLAB_TEST_DOCKER is not set)"
	fi
fi

# Machines (internal/sandbox/qemu): QEMU and the machine image, built from the
# debian sandbox image when missing or out of date (a few minutes the first
# time, cached in /var/lib/tuxlab/machine). TUXLAB_TEST_MACHINE=1 then makes a
# missing QEMU or image fail the machine tests; TUXLAB_TEST_NO_MACHINE=1 skips
# this set-up (and the machine tests skip).
if [ -z "${TUXLAB_TEST_NO_MACHINE:-}" ] && [ -n "${TUXLAB_TEST_DOCKER:-}" ]; then
	machine_ok=1
	if ! command -v qemu-system-x86_64 >/dev/null || ! command -v qemu-img >/dev/null; then
		apt_install qemu-system-x86 qemu-utils || machine_ok=
	fi
	if [ -n "$machine_ok" ] && ./scripts/build-machine-image.sh; then
		export TUXLAB_TEST_MACHINE=1
	elif [ -n "${CI:-}" ]; then
		say "CI needs QEMU and the machine image for the machine tests"; exit 1
	else
		say "no QEMU or machine image: the machine tests will skip (TUXLAB_TEST_MACHINE is not set)"
	fi
fi

# Mailpit, the SMTP server of the password reset tests (internal/httpapi/reset_test.go).
mailpit_version=v1.33.1
if [ -z "${TUXLAB_TEST_NO_SMTP:-}" ]; then
	gobin=$(go env GOBIN)
	gobin=${gobin:-$(go env GOPATH)/bin}
	if [ ! -x "$gobin/mailpit" ] || ! go version -m "$gobin/mailpit" 2>/dev/null | grep -q "mod[[:space:]]*github.com/axllent/mailpit[[:space:]]*$mailpit_version"; then
		say "installing mailpit $mailpit_version (go install)"
		if ! GOBIN="$gobin" go install "github.com/axllent/mailpit@$mailpit_version"; then
			if [ -n "${CI:-}" ]; then say "CI needs mailpit for the password reset tests"; exit 1; fi
			say "no mailpit: the SMTP tests will skip (TUXLAB_TEST_SMTP is not set)"
		fi
	fi
	if [ -x "$gobin/mailpit" ]; then
		export TUXLAB_TEST_SMTP=1 TUXLAB_TEST_MAILPIT="$gobin/mailpit"
	fi
fi

# The browser test (internal/web/e2e_test.go): Debian's chromium driven by playwright-core
# at the version e2e/package-lock.json pins. Once both are here TUXLAB_TEST_BROWSER=1 makes
# a missing browser fail the test; screenshots land in artifacts/screenshots/.
# TUXLAB_TEST_NO_BROWSER=1 skips this set-up (and the browser test skips).
if [ -z "${TUXLAB_TEST_NO_BROWSER:-}" ]; then
	browser_ok=1
	if ! command -v chromium >/dev/null; then apt_install chromium || browser_ok=; fi
	if [ -n "$browser_ok" ] && ! { command -v node >/dev/null && command -v npm >/dev/null; }; then
		apt_install nodejs npm || browser_ok=
	fi
	if [ -n "$browser_ok" ]; then
		say "npm ci in e2e/ (playwright-core, axe-core)"
		(cd e2e && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || browser_ok=
	fi
	if [ -n "$browser_ok" ]; then
		export TUXLAB_TEST_BROWSER=1
	elif [ -n "${CI:-}" ]; then
		say "CI needs chromium, node and e2e/node_modules for the browser test"; exit 1
	else
		say "no browser: the browser test will skip (TUXLAB_TEST_BROWSER is not set)"
	fi
fi

if [ -n "${TUXLAB_TEST_POSTGRES_URL:-}" ]; then
	say "testing on SQLite and PostgreSQL"
else
	say "testing on SQLite only (TUXLAB_TEST_NO_POSTGRES is set)"
fi
race=()
if command -v gcc >/dev/null; then race=(-race); fi
go test "${race[@]}" -count=1 -timeout 50m ./... "$@"
