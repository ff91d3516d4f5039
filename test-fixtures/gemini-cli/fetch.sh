#!/usr/bin/env bash
# Fetch the gemini-cli releases that prove.sh proves patches/gemini-cli on, from the npm
# registry into the ignored .cache/gemini-cli/<version> (about 130 MB each), installed like
# `npm install -g`: .cache/gemini-cli/<version>/lib/node_modules/@google/gemini-cli (bin:
# bundle/gemini.js). Run at the end of scripts/fetch-fixtures.sh: tests/cli/gemini.rs runs them
# on copies. 0.51.0 is the first whose bundled SDK throws a plain
# Error("Error POSTing to endpoint (HTTP 404): ...") instead of a StreamableHTTPError.
# Idempotent: a finished fetch leaves a .done marker and is not repeated.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$repo/.cache"
command -v npm >/dev/null || { echo "error: npm is not on PATH; install Node.js and npm (apt-get install nodejs npm)" >&2; exit 2; }
# shellcheck source=../../scripts/side-by-side.sh
source "$repo/scripts/side-by-side.sh"
fetch_release() { # <version>
  local v="$1" dest="$CACHE/gemini-cli/$1"
  if [[ ! -f "$dest/.done" ]]; then
    rm -rf "$dest.partial"; mkdir -p "$dest.partial"
    echo "fetching -g @google/gemini-cli@$v -> $dest" >&2
    npm install --no-audit --no-fund --ignore-scripts --loglevel=error --prefix "$dest.partial" -g "@google/gemini-cli@$v" >&2
    touch "$dest.partial/.done"; rm -rf "$dest"; mv "$dest.partial" "$dest"
  fi
  [[ -f "$dest/lib/node_modules/@google/gemini-cli/bundle/gemini.js" ]] || {
    echo "error: $dest has no lib/node_modules/@google/gemini-cli/bundle/gemini.js; delete that folder and run again" >&2; exit 2; }
}
for v in 0.45.2 0.47.0 0.51.0 0.56.0 0.61.0; do side_by_side fetch_release "$v"; done
side_by_side_wait
