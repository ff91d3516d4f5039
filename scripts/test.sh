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
if [ $# -gt 0 ]; then
  # Arguments (a filter, --test NAME, ...): one harness, four tests at a time.
  RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" cargo test --locked "$@"
  echo "test command: passed in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s" >&2
  exit 0
fi
cargo test --locked --lib
# Most cli tests wait on real clients and servers (restarts, pauses, timeouts)
# more than they use the CPU: six at a time on 2 cores. The slowest (whole
# tables of the real gemini-cli, explorations that shrink what they find, a
# gated refusal; one to two minutes each) start at once in a harness of their
# own, two at a time, beside the rest four at a time: in one harness they
# would start in name order, and the last of them would run on alone at the
# end. The two filters are each other's complement.
slow=(bridge_explore:: evidence::unknown_revisions::an_unknown_revision_whose explore::a_broken_patch_is_found gemini_verify:: reload::)
rest=()
for f in "${slow[@]}"; do rest+=(--skip "$f"); done
slow_log="target/test-slow.log"
RUST_TEST_THREADS="${MCPATCH_SLOW_THREADS:-2}" cargo test --locked --test cli -- "${slow[@]}" >"$slow_log" 2>&1 &
slow_run=$!
trap 'pkill -TERM -P "$slow_run" 2>/dev/null; kill "$slow_run" 2>/dev/null || true' EXIT
rest_ok=0
RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" cargo test --locked --test cli -- "${rest[@]}" || rest_ok=$?
slow_ok=0
wait "$slow_run" || slow_ok=$?
trap - EXIT
echo "the slowest cli tests, run beside the others (also in $slow_log):" >&2
cat "$slow_log" >&2
if (( rest_ok != 0 || slow_ok != 0 )); then
  echo "error: cli tests failed (above: the slowest tests' harness exited $slow_ok, the others' $rest_ok)" >&2
  exit 1
fi
echo "test command: passed in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s" >&2
