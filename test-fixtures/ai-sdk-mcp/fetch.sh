#!/usr/bin/env bash
# Fetch the @ai-sdk/mcp releases that prove.mjs proves patches/ai-sdk-mcp on, from the npm
# registry into the ignored .cache/ai-sdk-mcp/<version>, installed as a project installs them
# (`npm install @ai-sdk/mcp@<version> zod@4`): .cache/ai-sdk-mcp/<version>/node_modules/@ai-sdk/mcp.
# 2.x ships one ESM build (dist/index.js); 1.x ships ESM (dist/index.mjs) and CJS (dist/index.js).
# Run at the end of scripts/fetch-fixtures.sh. Idempotent: a finished fetch leaves a .done
# marker and is not repeated. argv: [versions...] (default: the proven set below).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$repo/.cache"
command -v npm >/dev/null || { echo "error: npm is not on PATH; install Node.js and npm (apt-get install nodejs npm)" >&2; exit 2; }
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(2.0.99 2.0.80 2.0.60 2.0.30 2.0.0 1.0.102 1.0.50)
for v in "${versions[@]}"; do
  [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "error: \`$v\` is not a release number (like 2.0.99)" >&2; exit 2; }
done
# shellcheck source=../../scripts/side-by-side.sh
source "$repo/scripts/side-by-side.sh"
fetch_release() { # <version>
  local v="$1" dest="$CACHE/ai-sdk-mcp/$1"
  if [[ ! -f "$dest/.done" ]]; then
    rm -rf "$dest.partial"; mkdir -p "$dest.partial"
    echo '{"name":"mcpatch-ai-sdk-mcp-fixture","private":true}' >"$dest.partial/package.json"
    echo "fetching @ai-sdk/mcp@$v zod@4 -> $dest" >&2
    npm install --no-audit --no-fund --ignore-scripts --loglevel=error --prefix "$dest.partial" "@ai-sdk/mcp@$v" zod@4 >&2
    touch "$dest.partial/.done"; rm -rf "$dest"; mv "$dest.partial" "$dest"
  fi
  [[ -f "$dest/node_modules/@ai-sdk/mcp/package.json" ]] || {
    echo "error: $dest has no node_modules/@ai-sdk/mcp/package.json; delete that folder and run again" >&2; exit 2; }
}
for v in "${versions[@]}"; do side_by_side fetch_release "$v"; done
side_by_side_wait
