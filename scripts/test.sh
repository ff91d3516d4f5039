#!/usr/bin/env bash
# The test command: fetch what the tests need (the real package from the npm
# registry, Node.js 22) into .cache/, then run every test. Fails loudly when a
# prerequisite cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
command -v cargo >/dev/null || { echo "error: cargo is not on PATH; install Rust with rustup" >&2; exit 2; }
command -v systemd-analyze >/dev/null || { echo "error: systemd-analyze is not on PATH (the tests check contrib/systemd/ with it); install it with: apt-get install systemd" >&2; exit 2; }
scripts/fetch-fixtures.sh
cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
# Most tests wait on real clients and servers (restarts, pauses, timeouts) more
# than they use the CPU: four at a time on 2 cores (RUST_TEST_THREADS overrides).
RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" cargo test --locked "$@"
echo "test command: passed in $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s" >&2
