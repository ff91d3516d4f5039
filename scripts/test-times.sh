#!/usr/bin/env bash
# Where the test command's minutes go: runs scripts/test.sh with each cli
# test's sandbox timing itself (MCPATCH_TEST_TIMES), then prints the slowest
# tests, the sum per test module, and the sum of all (over the threads the
# tests ran on, that sum is the least the cli phase can take).
#
#   scripts/test-times.sh              run the test command, then sum up
#   scripts/test-times.sh FILE [N]     sum up FILE from an earlier run (top N, default 25)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  times="$PWD/target/test-times.txt"
  mkdir -p target
  : >"$times"
  MCPATCH_TEST_TIMES="$times" scripts/test.sh
  set -- "$times"
fi
file=$1
top=${2:-25}
[ -s "$file" ] || { echo "error: $file holds no test times; run scripts/test-times.sh with no argument first" >&2; exit 2; }
# A test with several sandboxes lived as long as its longest.
awk '{ if ($1 > t[$2]) t[$2] = $1 } END { for (n in t) printf "%8.1f %s\n", t[n], n }' "$file" | sort -rn >"$file.per-test"
echo "slowest $top tests (seconds):"
head -n "$top" "$file.per-test"
echo
echo "per module (seconds, tests):"
awk '{ split($2, p, "::"); s[p[1]] += $1; c[p[1]]++ } END { for (m in s) printf "%8.1f %4d %s\n", s[m], c[m], m }' "$file.per-test" | sort -rn
awk '{ s += $1; c++ } END { printf "\nall: %.0f s in %d tests; over 4 threads at least %.0f s\n", s, c, s / 4 }' "$file.per-test"
