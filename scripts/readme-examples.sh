#!/usr/bin/env bash
# Regenerate the README's example runs (`$ mcpatch ...` blocks) from real runs:
# the readme test compares each with what mcpatch prints in a sandbox (paths,
# backup ids and ports aside) and, with MCPATCH_README_WRITE=1, writes the real
# output in place of any example that no longer matches.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-fixtures.sh
MCPATCH_README_WRITE=1 cargo test --locked --test cli readme -- --test-threads=1
git --no-pager diff --stat README.md
