#!/usr/bin/env bash
# The test command: fetch what the tests need (the real package from the npm
# registry, Node.js 22) into .cache/, then run every test. Fails loudly when a
# prerequisite cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
command -v cargo >/dev/null || { echo "error: cargo is not on PATH; install Rust with rustup" >&2; exit 2; }
command -v systemd-analyze >/dev/null || { echo "error: systemd-analyze is not on PATH (the tests check contrib/systemd/ with it); install it with: apt-get install systemd" >&2; exit 2; }
cargo fmt --check
# Compile while the fixtures download (the network for one, the CPU for the
# other): on a clean machine this saves most of the build's minutes.
mkdir -p target
build_log="target/test-build.log"
( cargo clippy --locked --all-targets -- -D warnings && cargo test --locked --no-run "$@" ) >"$build_log" 2>&1 &
build=$!
trap 'pkill -TERM -P "$build" 2>/dev/null; kill "$build" 2>/dev/null || true' EXIT
scripts/fetch-fixtures.sh
if ! wait "$build"; then
  cat "$build_log" >&2
  echo "error: clippy or the test build failed (above; also in $build_log)" >&2
  exit 1
fi
trap - EXIT
echo "fixtures fetched and tests built in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s" >&2
# Most tests wait on real clients and servers (restarts, pauses, timeouts) more
# than they use the CPU: four at a time on 2 cores (RUST_TEST_THREADS overrides).
RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" cargo test --locked "$@"
echo "test command: passed in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s" >&2
