#!/usr/bin/env bash
# Fetches the mcp-sdk target's fixtures from the npm registry into .cache/mcp-sdk/:
#   packs/<package>@<version>/   one release of @modelcontextprotocol/sdk (1.x) or
#                                @modelcontextprotocol/client (2.x), `npm pack` unpacked (package/ folder)
#   projects/<name>/             a real project: `npm install --ignore-scripts` of a client library
#                                (plain sdk, @langchain/mcp-adapters, @mastra/mcp, @openai/agents, client 2.x)
# Idempotent: each finished folder has a .done marker and is not fetched again. Fails loudly.
# Usage: test-fixtures/mcp-sdk/fetch.sh [--packs-only | --projects-only]
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE="$PWD/.cache/mcp-sdk"
mkdir -p "$CACHE/packs" "$CACHE/projects"
command -v npm >/dev/null || { echo "error: npm is not on PATH; install Node.js and npm (apt-get install nodejs npm)" >&2; exit 2; }
# shellcheck source=../../scripts/side-by-side.sh
source "$PWD/scripts/side-by-side.sh"

# Every stable release the patch is for (releases.sh hashes all of them; the proofs name some).
SDK1_VERSIONS=(
  1.10.0 1.10.1 1.10.2 1.11.0 1.11.1 1.11.2 1.11.3 1.11.4 1.11.5 1.12.0 1.12.1 1.12.2 1.12.3
  1.13.0 1.13.1 1.13.2 1.13.3 1.14.0 1.15.0 1.15.1 1.16.0 1.17.0 1.17.1 1.17.2 1.17.3 1.17.4 1.17.5
  1.18.0 1.18.1 1.18.2 1.19.1 1.20.0 1.20.1 1.20.2 1.21.0 1.21.1 1.21.2 1.22.0 1.23.0 1.23.1
  1.24.0 1.24.1 1.24.2 1.24.3 1.25.0 1.25.1 1.25.2 1.25.3 1.26.0 1.27.0 1.27.1 1.28.0 1.29.0
  1.30.0 1.30.1 1.31.0 1.32.0 1.32.1 1.32.2
)
CLIENT2_VERSIONS=(2.0.0 2.1.0 2.2.0 2.3.0 2.3.1 2.4.0)

pack() { # <package> <version>
  local dest="$CACHE/packs/$1@$2"
  [[ -f "$dest/.done" ]] && return 0
  rm -rf "$dest.partial"; mkdir -p "$dest.partial"
  echo "fetching $1@$2 (npm pack) -> $dest" >&2
  local tarball
  tarball=$(cd "$dest.partial" && npm pack --silent --loglevel=error "$1@$2") ||
    { echo "error: npm pack $1@$2 failed (is the npm registry reachable?)" >&2; exit 1; }
  tar xzf "$dest.partial/$tarball" -C "$dest.partial"
  rm "$dest.partial/$tarball"
  touch "$dest.partial/.done"; rm -rf "$dest"; mv "$dest.partial" "$dest"
}

project() { # <name> <npm install args...>
  local dest="$CACHE/projects/$1"; shift
  [[ -f "$dest/.done" ]] && return 0
  rm -rf "$dest.partial"; mkdir -p "$dest.partial"
  echo "fetching $* -> $dest" >&2
  (cd "$dest.partial" && echo '{"name":"mcpatch-fixture","private":true,"type":"commonjs"}' > package.json &&
    npm install --no-audit --no-fund --ignore-scripts --loglevel=error "$@" >&2) ||
    { echo "error: npm install $* failed (is the npm registry reachable?)" >&2; exit 1; }
  touch "$dest.partial/.done"; rm -rf "$dest"; mv "$dest.partial" "$dest"
}

if [[ "${1:-}" != --projects-only ]]; then
  for v in "${SDK1_VERSIONS[@]}"; do side_by_side pack @modelcontextprotocol/sdk "$v"; done
  for v in "${CLIENT2_VERSIONS[@]}"; do side_by_side pack @modelcontextprotocol/client "$v"; done
  side_by_side_wait
fi
if [[ "${1:-}" != --packs-only ]]; then
  side_by_side project sdk-1.32.2 @modelcontextprotocol/sdk@1.32.2
  side_by_side project sdk-1.24.0 @modelcontextprotocol/sdk@1.24.0
  side_by_side project sdk-1.17.0 @modelcontextprotocol/sdk@1.17.0
  side_by_side project sdk-1.10.0 @modelcontextprotocol/sdk@1.10.0
  side_by_side project client-2.0.0 @modelcontextprotocol/client@2.0.0
  side_by_side project client-2.4.0 @modelcontextprotocol/client@2.4.0
  side_by_side project langchain-1.1.4 @langchain/mcp-adapters@1.1.4 @modelcontextprotocol/sdk@1.32.2 @langchain/core
  side_by_side project mastra-2.0.0 @mastra/mcp@2.0.0 @mastra/core zod
  side_by_side project openai-agents-0.20.0 @openai/agents@0.20.0 zod
  side_by_side_wait
fi
