#!/usr/bin/env bash
# Fetches the official MCP conformance suite (@modelcontextprotocol/conformance, pinned) from the
# npm registry into .cache/conformance/<version>/, installed as a project installs it:
#   .cache/conformance/<version>/node_modules/@modelcontextprotocol/conformance/dist/index.js
# tests/cli/conformance.rs runs its client scenarios against a conformance client built on the
# installed SDK (test-fixtures/conformance/client.mjs) before and after `mcpatch apply`.
# Run at the end of scripts/fetch-fixtures.sh. Idempotent: a finished fetch leaves a .done marker
# and is not repeated. Fails loudly.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$repo/.cache/conformance"
VERSION=0.1.16
command -v npm >/dev/null || { echo "error: npm is not on PATH; install Node.js and npm (apt-get install nodejs npm)" >&2; exit 2; }
dest="$CACHE/$VERSION"
if [[ ! -f "$dest/.done" ]]; then
  rm -rf "$dest.partial"; mkdir -p "$dest.partial"
  echo '{"name":"mcpatch-conformance-fixture","private":true}' >"$dest.partial/package.json"
  echo "fetching @modelcontextprotocol/conformance@$VERSION -> $dest" >&2
  npm install --no-audit --no-fund --ignore-scripts --loglevel=error --prefix "$dest.partial" \
    "@modelcontextprotocol/conformance@$VERSION" >&2 ||
    { echo "error: npm install @modelcontextprotocol/conformance@$VERSION failed (is the npm registry reachable?)" >&2; exit 1; }
  touch "$dest.partial/.done"; rm -rf "$dest"; mv "$dest.partial" "$dest"
fi
[[ -f "$dest/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]] || {
  echo "error: $dest has no node_modules/@modelcontextprotocol/conformance/dist/index.js; delete that folder and run again" >&2; exit 2; }
