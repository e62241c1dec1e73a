#!/usr/bin/env bash
# Vendor the browser libraries the web interface uses into internal/web/static/vendor/,
# from their npm packages at pinned versions, so the binary embeds them and a learner's
# browser never reaches a CDN. Only the files the pages load are copied, with each
# package's licence; VENDORED.md records name, version, licence and the tarball's integrity.
#
#   ./scripts/vendor-web.sh                      # the pinned versions below
#   XTERM_VERSION=6.0.1 ./scripts/vendor-web.sh  # try another version, then review the diff
#
# Needs npm and a reachable npm registry. The copied files are byte for byte the
# package's own (source-map comments included; the maps are not shipped).
set -euo pipefail
cd "$(dirname "$0")/.."

XTERM_VERSION=${XTERM_VERSION:-6.0.0}
FIT_VERSION=${FIT_VERSION:-0.11.0}
SWAGGER_VERSION=${SWAGGER_VERSION:-5.35.0}
ASCIINEMA_VERSION=${ASCIINEMA_VERSION:-3.18.0}

say() { printf '==> %s\n' "$*" >&2; }
command -v npm >/dev/null || { say "npm is missing: apt-get install npm"; exit 1; }

dest=internal/web/static/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

records=()
# fetch PACKAGE VERSION DIR FILE...: unpack PACKAGE@VERSION and copy FILEs (paths inside the
# package) into $dest/DIR, flattened.
fetch() {
	local pkg=$1 version=$2 dir=$3; shift 3
	say "npm pack $pkg@$version"
	local json tarball integrity license
	json=$(cd "$work" && npm pack --json --silent "$pkg@$version")
	tarball=$(printf '%s' "$json" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[0].filename))')
	integrity=$(printf '%s' "$json" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[0].integrity))')
	mkdir -p "$work/$dir"
	tar -xzf "$work/$tarball" -C "$work/$dir"
	license=$(node -e 'console.log(require(process.argv[1]).license)' "$work/$dir/package/package.json")
	rm -rf "${dest:?}/$dir"
	mkdir -p "$dest/$dir"
	local names=()
	for f in "$@"; do
		cp "$work/$dir/package/$f" "$dest/$dir/"
		names+=("$(basename "$f")")
	done
	records+=("| \`$pkg\` | $version | $license | \`$dir/\`: ${names[*]} | \`$integrity\` |")
}

fetch @xterm/xterm "$XTERM_VERSION" xterm lib/xterm.mjs css/xterm.css LICENSE
fetch @xterm/addon-fit "$FIT_VERSION" xterm-addon-fit lib/addon-fit.mjs LICENSE
fetch swagger-ui-dist "$SWAGGER_VERSION" swagger-ui swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css LICENSE NOTICE
fetch asciinema-player "$ASCIINEMA_VERSION" asciinema-player dist/bundle/asciinema-player.min.js dist/bundle/asciinema-player.css LICENSE

{
	echo "# Vendored browser libraries"
	echo
	echo "Written by \`scripts/vendor-web.sh\`; do not edit by hand. Each directory holds files copied"
	echo "unchanged from the npm package named, at the version named, with the package's licence."
	echo "The integrity is the npm tarball's (\`npm pack --json\`), to compare with the registry's."
	echo
	echo "| package | version | licence | files | tarball integrity |"
	echo "|---|---|---|---|---|"
	printf '%s\n' "${records[@]}"
	echo
	echo "Used by: the terminal of the lesson, lab and exam pages (xterm.js and its fit addon, as ES"
	echo "modules), \`/docs\` (Swagger UI, rendering \`/api/openapi.json\`) and the replay of terminal"
	echo "recordings at \`/recordings/{id}\` (asciinema-player's browser bundle, loaded as a classic script;"
	echo "its terminal emulator is WebAssembly, which the pages' policy allows with 'wasm-unsafe-eval')."
} > "$dest/VENDORED.md"
say "vendored into $dest (see $dest/VENDORED.md)"
