#!/usr/bin/env bash
# Mutation testing of mcpatch's core with cargo-mutants (pinned, installed into
# the ignored .cache/). A mutant is one small change to one function (a return
# value replaced, an operator swapped, a `!` deleted); a mutant that no test
# catches is a way to break the code that no test notices. Not part of CI.
#
#   scripts/mutants.sh [--base REF]         the mutants in the change against REF
#                                           (default main): `git diff REF...HEAD`
#   scripts/mutants.sh --all [--shard K/N]  the whole core, or its K-th part of N
#                                           (K from 0; run K = 0..N-1 for all of it)
#   scripts/mutants.sh --check-selection    prove the test selection (below) on this
#                                           tree: every core function logs the tests
#                                           that reach it during one full test run
# Options: --file PATH (repeatable): only these core files; --re REGEX (repeatable):
# only the mutants whose name (as --list shows it) matches, e.g. the missed ones of
# an earlier run, to confirm new tests catch them; --list: list the
# mutants and the cli tests each file's mutants leave out, test nothing; --timeout SECS:
# per mutant test run (default: 3x the measured run of its tests, at least 120);
# --unit-only: run the unit tests alone (seconds a mutant, not the cli tests' minutes):
# its "missed" are the mutants no unit test catches, to kill with unit tests before
# a run with the cli tests pays for each of them (a miss there runs every selected
# cli test: up to 40 min on 2 cores).
#
# It tests the committed HEAD, in a copy at target/mutants/tree (uncommitted
# changes are not in it), one file and one mutant at a time, building in
# target/mutants/target. Results: target/mutants/out/<run>/<file>/mutants.out.
# Exit: 0 every mutant tested was caught or unviable; 2 some were missed;
# 3 some timed out (none missed); 4 the tests fail on the unmutated HEAD;
# 1 a usage or setup error.
#
# Test selection: cargo-mutants runs the test command once per mutant, and the
# integration tests take minutes. A mutant lives in one function of one file,
# so only a test during which that function runs can catch it. For each file
# the script leaves out the tests of tests/cli that cannot run any of its code,
# found from the tree's text, over-approximating wherever it cannot be exact
# (see `select` below): a module runs the modules it names (transitively); a
# command runs main.rs, lib.rs's `run` and its own arm of that match; a test
# runs the commands named by string literals in it and in the helpers, consts
# and types it names (in its file, main.rs, and other test files), and the
# library code it names through `mcpatch::`. The unit tests always run.
# `--check-selection` checks that claim against what the tests really run.
# Tests run under cargo-nextest: one process per test, fast tests first, and
# no new test starts after the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

CARGO_MUTANTS_VERSION=27.1.0
NEXTEST_VERSION=0.9.143 # installed into .cache/ only when cargo-nextest is missing or older than 0.9.100
CORE=(src/apply.rs src/revert.rs src/backup.rs src/replace.rs src/transaction.rs
  src/identity.rs src/classify.rs src/stage.rs src/verify/scenario/table.rs
  src/verify/scenario/judges.rs src/verify/scenario/invariants.rs
  src/verify/scenario/invariants/closing.rs src/verify/scenario/invariants/relisted.rs)
WORK=$ROOT/target/mutants
TREE=$WORK/tree

die() {
  echo "error: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

mode=diff base=main shard="" list=0 timeout="" unit_only=0 files=() res=()
while (($#)); do
  case "$1" in
  --base) base=${2:?--base needs a git ref}; shift ;;
  --all) mode=all ;;
  --shard) shard=${2:?--shard needs K/N}; shift ;;
  --file) files+=("${2:?--file needs a path}"); shift ;;
  --re) res+=("${2:?--re needs a regular expression}"); shift ;;
  --list) list=1 ;;
  --unit-only) unit_only=1 ;;
  --timeout) timeout=${2:?--timeout needs seconds}; shift ;;
  --check-selection) mode=check ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
if [[ -n $shard ]]; then
  if ! [[ $shard =~ ^([0-9]+)/([0-9]+)$ ]] || ((BASH_REMATCH[1] >= BASH_REMATCH[2])); then
    die "--shard takes K/N with 0 <= K < N (e.g. 0/4), not '$shard'"
  fi
fi
[[ -z $timeout || $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout takes whole seconds, not '$timeout'"
for f in "${files[@]}"; do
  [[ " ${CORE[*]} " == *" $f "* ]] || die "$f is not a core file; the core is: ${CORE[*]}"
done
((${#files[@]})) || files=("${CORE[@]}")

command -v cargo >/dev/null || die "cargo is not on PATH; install Rust with rustup"
command -v git >/dev/null || die "git is not on PATH (apt-get install git)"
command -v python3 >/dev/null || die "python3 is not on PATH; the test selection runs in it (apt-get install python3)"
mkdir -p "$WORK"
exec 9>"$WORK/lock"
flock -n 9 || die "another scripts/mutants.sh is running in this checkout (it holds $WORK/lock)"

# ---- tools -------------------------------------------------------------------

# cargo install <crate> at <version> into .cache/<crate>, once (a .done marker).
install_tool() { # <crate> <version>
  local crate=$1 version=$2 dest=$ROOT/.cache/$1
  if [[ -f $dest/.done && $(cat "$dest/.done") == "$version" ]]; then return; fi
  echo "installing $crate $version from crates.io into $dest (once; several minutes)" >&2
  rm -rf "$dest.partial"
  cargo install --locked --version "$version" --root "$dest.partial" "$crate" >&2 ||
    die "cannot install $crate $version: \`cargo install --locked --version $version $crate\` failed (it needs the crates.io registry and a Rust toolchain that builds it)"
  local got
  got=$("$dest.partial/bin/$crate" "${crate#cargo-}" --version 2>&1 | head -n1) || true
  [[ $got == "$crate $version"* ]] || die "$dest.partial/bin/$crate says '$got', not version $version"
  echo "$version" >"$dest.partial/.done"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
}
install_tool cargo-mutants "$CARGO_MUTANTS_VERSION"
MUTANTS=$ROOT/.cache/cargo-mutants/bin/cargo-mutants

nextest_ok() { # version on PATH >= 0.9.100 (max-fail, priorities, test names in the environment)
  local v
  v=$(cargo nextest --version 2>/dev/null | head -n1 | awk '{print $2}') || return 1
  [[ $v =~ ^0\.9\.([0-9]+) ]] && ((BASH_REMATCH[1] >= 100))
}
# What running tests needs: cargo-nextest, and in .cache/ the real package and Node.js 22.
ready_to_test() {
  if ! nextest_ok; then
    install_tool cargo-nextest "$NEXTEST_VERSION"
    export PATH=$ROOT/.cache/cargo-nextest/bin:$PATH
    nextest_ok || die "cargo nextest does not run from $ROOT/.cache/cargo-nextest/bin"
  fi
  scripts/fetch-fixtures.sh
}

# ---- the tree under test: a copy of HEAD ---------------------------------------

head=$(git rev-parse HEAD)
if [[ -n $(git status --porcelain --untracked-files=no -- src tests Cargo.toml Cargo.lock) ]]; then
  echo "note: uncommitted changes in src/, tests/ or Cargo.* are not tested: this tests HEAD ${head:0:12}" >&2
fi
# Only files that differ are rewritten, so cargo rebuilds what changed only; a
# file a stopped run left mutated differs from HEAD and is restored here.
mkdir -p "$TREE"
export_dir=$(mktemp -d "$WORK/export.XXXXXX")
trap 'rm -rf "$export_dir"' EXIT
git archive --format=tar HEAD | tar -x -C "$export_dir"
(cd "$TREE" && find . -path ./.cache -prune -o -type f -print0) | while IFS= read -r -d '' f; do
  [[ -e $export_dir/$f ]] || rm -f "$TREE/$f"
done
(cd "$export_dir" && find . -type f -print0) | while IFS= read -r -d '' f; do
  if ! cmp -s "$export_dir/$f" "$TREE/$f" || [[ $(stat -c %a "$export_dir/$f") != $(stat -c %a "$TREE/$f") ]]; then
    mkdir -p "$(dirname "$TREE/$f")"
    cp "$export_dir/$f" "$TREE/$f.mutants-new"
    mv "$TREE/$f.mutants-new" "$TREE/$f"
  fi
done
ln -sfn "$(readlink -f .cache)" "$TREE/.cache"

export CARGO_TARGET_DIR=$WORK/target
# No debug info: faster links on every mutant; panics still name file and line.
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0

# ---- the analysis (python, from the tree's text) --------------------------------
IFS= read -r -d '' ANALYSIS <<'PY' || true
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
OPEN, CLOSE = "([{", ")]}"


def fail(msg):
    print(f"error: {msg}; the test selection in scripts/mutants.sh needs updating", file=sys.stderr)
    sys.exit(2)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def code_mask(text):
    """The text with comments, strings and char literals blanked (same length)."""
    out, i, n = list(text), 0, len(text)

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    def word_before(i):
        return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c in "br" and not word_before(i) and re.match(r'b?r#*"', text[i : i + 64]):
            m = re.match(r'b?r(#*)"', text[i:])
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            blank(i, j)
            i = j
        elif c == '"' or (text.startswith('b"', i) and not word_before(i)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i : i + 16])
            if m:
                blank(i, i + m.end())
                i += m.end()
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


def block_end(code, open_at):
    """Index just past the bracket that closes the one at code[open_at]."""
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] in OPEN:
            depth += 1
        elif code[i] in CLOSE:
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def select(tree, core_files):
    """Per core file: how many tests of tests/cli can run its code, and the
    names of those that cannot (the ones left out)."""
    src = os.path.join(tree, "src")
    files = {}
    for d, _, names in os.walk(src):
        for n in names:
            if n.endswith(".rs"):
                files[os.path.relpath(os.path.join(d, n), src)] = read(os.path.join(d, n))
    if "lib.rs" not in files or "main.rs" not in files:
        fail("src/lib.rs or src/main.rs is missing")
    if re.search(r"^\s*\[\[test\]\]", read(os.path.join(tree, "Cargo.toml")), re.M):
        fail("Cargo.toml declares [[test]] targets; the selection knows tests/cli as the `cli` binary only")

    def module_of(rel):
        if rel == "main.rs":
            return None
        if rel == "lib.rs":
            return ""
        parts = rel[:-3].split("/")
        if parts[-1] == "mod":
            parts.pop()
        return "::".join(parts)

    modules = {module_of(r): code_mask(t) for r, t in files.items() if module_of(r) is not None}
    module_file = {module_of(r): "src/" + r for r in files if module_of(r) is not None}

    def resolve(segs):
        """The module a path names: its longest prefix that is one ('' = the crate root)."""
        for k in range(len(segs), 0, -1):
            if "::".join(segs[:k]) in modules:
                return "::".join(segs[:k])
        return ""

    def use_tree(code, at):
        toks = re.findall(IDENT + r"|::|[{},*]", code[at : block_end(code, at) or len(code)])

        def group(i):
            paths, i = [], i + 1
            while i < len(toks) and toks[i] != "}":
                segs = []
                while i < len(toks) and toks[i] not in ",}":
                    if toks[i] == "{":
                        sub, i = group(i)
                        paths += [segs + p for p in sub]
                        segs = None
                        continue
                    if toks[i] == "as":
                        i += 2
                        continue
                    if toks[i] not in ("::", "*", "self") and segs is not None:
                        segs.append(toks[i])
                    i += 1
                if segs is not None:
                    paths.append(segs)
                i += toks[i : i + 1] == [","]
            return paths, i + 1

        return group(0)[0]

    def refs(code, here, root):
        """Modules named in code (of module `here`; None outside the crate) by
        `root::` paths, and inside the crate by super::, self:: and child modules."""
        bases = [(root, [])]
        if here is not None:
            me = here.split("::") if here else []
            bases += [("super", me[:-1]), ("self", me)]
            bases += [(m.split("::")[-1], m.split("::")) for m in modules if m and m.split("::")[:-1] == me]
        found = set()
        for word, base in bases:
            pat = r"(?<![A-Za-z0-9_:.])" + word + r"\b((?:\s*::\s*" + IDENT + r")*)(\s*::\s*\{)?"
            for m in re.finditer(pat, code):
                if not (m.group(1) or m.group(2)) and word not in ("super", "self"):
                    continue  # a bare name, no path
                segs = base + [s for s in re.split(r"\s*::\s*", m.group(1)) if s]
                if m.group(2):
                    found |= {resolve(segs + tail) for tail in use_tree(code, m.end() - 1)}
                found.add(resolve(segs))
        return found

    def without_unit_tests(code):
        # The unit tests run for every file anyway, and their `super::` is another module.
        while True:
            m = re.search(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+" + IDENT + r"\s*\{", code)
            if not m:
                return code
            end = block_end(code, m.end() - 1)
            if end is None:
                return code
            code = code[: m.start()] + code[end:]

    graph = {m: refs(without_unit_tests(c), m, "crate") - {m, ""} for m, c in modules.items()}
    # cli.rs names verify::scenario's ScenarioName only as the type of clap
    # arguments, which clap parses with the derived ValueEnum (generated code,
    # never mutated): no code written in scenario.rs runs there. Any other use
    # of it in cli.rs keeps the edge.
    if "verify::scenario" in graph.get("cli", set()):
        rest = re.sub(r"\buse\s+crate\s*::\s*verify\s*::\s*scenario\s*::\s*ScenarioName\s*;", "", modules["cli"])
        rest = re.sub(r":\s*(?:Vec\s*<\s*)?ScenarioName\s*>?\s*,", ",", rest)
        if not re.search(r"ScenarioName|scenario\s*::", rest):
            graph["cli"].discard("verify::scenario")

    def closure(start):
        seen, todo = set(), list(start)
        while todo:
            m = todo.pop()
            if m not in seen and m in graph:
                seen.add(m)
                todo += graph[m]
        return seen

    everything = set(modules)

    # The binary: a command runs main.rs, lib.rs's `run` up to its match, and its arm.
    lib = modules[""]
    run_at = lib.find("pub fn run(")
    match_at = lib.find("match cli.command", run_at)
    if run_at < 0 or match_at < 0:
        fail("src/lib.rs has no `pub fn run(` with `match cli.command`")
    common = closure(
        (refs(lib[:match_at], "", "crate") | refs(code_mask(files["main.rs"]), None, "mcpatch")) - {""}
    )
    cli = modules.get("cli", "")
    enum_at = re.search(r"\benum\s+Command\s*\{", cli)
    if not enum_at:
        fail("src/cli.rs has no `enum Command`")
    enum_code = cli[enum_at.end() - 1 : block_end(cli, enum_at.end() - 1)]
    variants, depth = [], 0
    for tok in re.finditer(r"[{}()\[\]]|" + IDENT, enum_code):
        t = tok.group(0)
        if t in OPEN:
            depth += 1
        elif t in CLOSE:
            depth -= 1
        elif depth == 1 and re.match(r"\s*[{(,}]", enum_code[tok.end() :]):
            variants.append(t)
    renamed = re.search(r"#\s*\[\s*command\s*\([^\]]*\b(name|alias|aliases|rename_all)\b", enum_code)
    arms = lib[match_at:]
    commands = {}
    for v in variants:
        name = re.sub(r"(?<!^)([A-Z])", r"-\1", v).lower()
        m = re.search(r"Command\s*::\s*" + v + r"\b\s*(\{[^}]*\}|\([^)]*\))?\s*=>", arms)
        if renamed or not m:
            commands[name] = everything  # cannot tell: all of it
            continue
        nxt = re.search(r"Command\s*::\s*" + IDENT, arms[m.end() :])
        body = arms[m.end() : m.end() + nxt.start() if nxt else len(arms)]
        commands[name] = common | closure(refs(body, "", "crate") - {""})

    # The tests of tests/cli.
    cli_dir = os.path.join(tree, "tests", "cli")
    test_files = {}
    for n in sorted(os.listdir(cli_dir)):
        p = os.path.join(cli_dir, n)
        if n.endswith(".rs") and n != "main.rs":
            test_files[n[:-3]] = read(p)
        elif os.path.isdir(p):
            test_files[n] = "\n".join(
                read(os.path.join(d, f)) for d, _, fs in sorted(os.walk(p)) for f in sorted(fs) if f.endswith(".rs")
            )
    # A string literal that is a command name or starts with one and a space
    # (`"apply --yes"`), unless it indexes a JSON value (`v["status"]`) or is an
    # object key (`"status":`).
    cmd_literal = re.compile(
        r'(?<![A-Za-z0-9_\]\)]\[)"(' + "|".join(map(re.escape, commands)) + r')(?:\s[^"\\\n]*)?"(?!\s*:)'
    )
    attrs = r"\s*(?:#\s*\[[^\]]*\]\s*)*(?:pub(?:\s*\([^)]*\))?\s+)?"

    def use_names(tail):
        """The names a `use` brings into scope ("*" for a glob)."""
        toks = re.findall(IDENT + r"|::|[{},*;]", tail)
        names, stack, last = set(), [None], None
        for i, t in enumerate(toks):
            if t == "{":
                stack.append(last)
            elif t == "}":
                stack.pop()
            elif t == "*":
                names.add("*")
            elif re.match(IDENT, t) and t != "as":
                if i > 0 and toks[i - 1] == "as":
                    names.discard(last)
                    names.add(t)
                elif t == "self":
                    if stack[-1]:
                        names.add(stack[-1])
                else:
                    if (toks[i + 1] if i + 1 < len(toks) else ";") != "::":
                        names.add(t)
                    last = t
        return names

    def items(text, prefix=""):
        """The items of a file and of its inline modules: (names, test or None, raw, code)."""
        code = code_mask(text)
        spans, depth, begin = [], 0, 0
        for i, ch in enumerate(code):
            depth += (ch in OPEN) - (ch in CLOSE)
            if depth == 0 and ch in ";}":
                spans.append((begin, i + 1))
                begin = i + 1
        spans.append((begin, len(code)))
        result = []
        for a, b in spans:
            c = code[a:b]
            inner = re.match(attrs + r"mod\s+(" + IDENT + r")\s*\{", c)
            if inner:
                result += items(text[a + inner.end() : b - 1], prefix + inner.group(1) + "::")
                continue
            names = set(re.findall(r"\b(?:fn|const|static|struct|enum|trait|type|union)\s+(" + IDENT + ")", c))
            names |= set(re.findall(r"\bmacro_rules!\s*(" + IDENT + ")", c))
            use = re.match(attrs + r"use\b", c)
            if use:
                names |= use_names(c[use.end() :])
            imp = re.match(attrs + r"(?:unsafe\s+)?impl\b(?:\s*<[^{]*?>)?\s*(?:[\w:]+(?:<[^{]*?>)?\s+for\s+)?(" + IDENT + ")", c)
            if imp:
                names.add(imp.group(1))
            test = re.match(
                r"\s*(?:#\s*\[[^\]]*\]\s*)*#\s*\[\s*(?:tokio\s*::\s*)?test\b[^\]]*\]\s*(?:#\s*\[[^\]]*\]\s*)*"
                r"(?:pub(?:\s*\([^)]*\))?\s+)?(?:async\s+)?fn\s+(" + IDENT + ")",
                c,
            )
            result.append((names, prefix + test.group(1) if test else None, text[a:b], c))
        return result

    def reach_of_item(raw, code, launcher=False):
        if re.search(r"\bmcpatch\s+as\b", code):
            return set(everything)  # the crate under another name: cannot tell
        if not launcher and re.search(r"\bcargo_bin\b|CARGO_BIN_EXE", code):
            return set(everything)  # starts mcpatch other than through Sandbox::command
        r = set()
        for m in refs(code, None, "mcpatch"):
            r |= everything if m == "" else closure({m})  # `mcpatch::run` and the like: all of it
        for c in set(cmd_literal.findall(raw)):
            r |= commands[c]
        return r

    main_items = items(read(os.path.join(cli_dir, "main.rs")))
    # main.rs's `impl Sandbox` starts mcpatch (its `command`) with the arguments
    # the tests give it, which are the literals looked for above.
    launchers = [i for i, (names, _, _, c) in enumerate(main_items) if "Sandbox" in names and re.match(attrs + r"impl\b", c)]
    per_file = {t: items(text) for t, text in test_files.items()}
    core_mods = {}
    for f in core_files:
        mod = next((m for m, p in module_file.items() if p == f), None)
        if mod is None:
            fail(f"{f} is not a module under src/")
        core_mods[f] = mod
    left_out = {f: [] for f in core_files}
    n_tests = 0
    for t, its in per_file.items():
        others = [o for o in per_file if o != t]
        code_all = "".join(c for _, _, _, c in its)
        # Another test file's items, as `super::o::x`, `crate::o::x` or (through `use super::*`) `o::x`.
        named = set()
        if others:
            named = set(re.findall(r"(?<![A-Za-z0-9_:])(?:(?:super|crate)\s*::\s*)?(" + "|".join(map(re.escape, others)) + r")\s*::", code_all))
        space = its + main_items + [it for o in sorted(named) for it in per_file[o]]
        reach = [
            reach_of_item(raw, code, launcher=k - len(its) in launchers)
            for k, (_, _, raw, code) in enumerate(space)
        ]
        idents = [set(re.findall(IDENT, code)) for _, _, _, code in space]
        for k, (_, test, _, _) in enumerate(its):
            if not test:
                continue
            n_tests += 1
            seen, todo = set(), [k]
            while todo:
                j = todo.pop()
                if j not in seen:
                    seen.add(j)
                    todo += [o for o, (names, _, _, _) in enumerate(space) if names & idents[j] or "*" in names]
            r = set().union(*(reach[j] for j in seen))
            for f, mod in core_mods.items():
                if mod not in r:
                    left_out[f].append(f"{t}::{test}")
    for f in core_files:
        print(f"{f}\t{n_tests - len(left_out[f])}\t{' '.join(sorted(left_out[f]))}")


PROBE = (
    'if let Some(__p) = ::std::env::var_os("MUTANTS_REACH_LOG") {{ let _ = ::std::io::Write::write_all('
    "&mut ::std::fs::OpenOptions::new().create(true).append(true).open(__p).unwrap(), "
    'format!("{{}}\\t{{}}\\t{}\\n", ::std::env::var("NEXTEST_BINARY_ID").unwrap_or_default(), '
    '::std::env::var("NEXTEST_TEST_NAME").unwrap_or_default()).as_bytes()); }} '
)


def instrument(tree, core_files):
    """Make every function of the core files log the test that runs it."""
    for f in core_files:
        path = os.path.join(tree, f)
        text = read(path)
        starts = [m.end() for m in re.finditer(r"\bfn\s+" + IDENT + r"[^;{]*\{", code_mask(text))]
        if not starts:
            fail(f"no function found in {f}")
        for at in reversed(starts):
            text = text[:at] + PROBE.format(f) + text[at:]
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)


def check(selection, log):
    """Fail if a test left out for a file ran a function of it."""
    ran = {}
    for line in open(log, encoding="utf-8"):
        binary, test, f = line.rstrip("\n").split("\t")
        if not test:
            fail(f"a line of {log} names no test: cargo-nextest did not set NEXTEST_TEST_NAME")
        if binary.endswith("::cli"):
            ran.setdefault(f, set()).add(test)
    bad = 0
    for line in open(selection, encoding="utf-8"):
        f, kept, out = line.rstrip("\n").split("\t")
        wrong = sorted(set(out.split()) & ran.get(f, set()))
        for t in wrong:
            print(f"NOT SOUND: {t} was left out for {f} but ran its code")
        bad += len(wrong)
        print(f"{f}: {kept} cli tests kept; {len(ran.get(f, ()))} ran its code in this run, {len(wrong)} of them left out")
    sys.exit(1 if bad else 0)


def plan(selection, preflight, config, timeout_floor, multiplier, threads):
    """From the unmutated run's durations: a test timeout per file, and a
    nextest config that starts the fast tests first."""
    line_re = re.compile(r"^\s*PASS \[\s*([0-9.]+)s\] (?:\(\s*\d+/\d+\) )?(\S+) (\S+)")
    took = {}
    for line in open(preflight, encoding="utf-8", errors="replace"):
        m = line_re.match(line)
        if m:
            took[(m.group(2), m.group(3))] = float(m.group(1))
    if not took:
        fail(f"no test durations in {preflight}")
    for line in open(selection, encoding="utf-8"):
        f, _, out = line.rstrip("\n").split("\t")
        out = set(out.split())
        mine = [d for (b, t), d in took.items() if not (b.endswith("::cli") and t in out)]
        estimate = max(max(mine), sum(mine) / threads)
        print(f"{f}\t{max(timeout_floor, int(multiplier * estimate) + 1)}")
    def priority(seconds):
        return 30 if seconds < 1 else 20 if seconds < 5 else 10 if seconds < 20 else 0

    with open(config, "w", encoding="utf-8") as cfg:
        cfg.write("# Written by scripts/mutants.sh: the fast tests first.\n")
        for level in (30, 20, 10):
            names = sorted({t for (_, t), d in took.items() if priority(d) == level})
            if names:
                expr = " | ".join(f"test(={t})" for t in names)
                cfg.write(f"[[profile.default.overrides]]\nfilter = '{expr}'\npriority = {level}\n")


cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "select":
    select(args[0], args[1:])
elif cmd == "instrument":
    instrument(args[0], args[1:])
elif cmd == "check":
    check(*args)
elif cmd == "plan":
    plan(args[0], args[1], args[2], int(args[3]), float(args[4]), int(args[5]))
else:
    fail(f"unknown analysis {cmd}")
PY
analysis() { python3 -c "$ANALYSIS" "$@"; }

# The nextest filterset of the tests a file's mutants run: all of them but the
# cli tests that cannot run its code.
pkg=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$TREE/Cargo.toml" | head -n1)
filter_for() { # <names left out, space-separated>
  if [[ -z $1 ]]; then
    echo "all()"
    return
  fi
  local t expr=""
  for t in $1; do expr+="${expr:+ | }test(=$t)"; done
  echo "not (binary_id($pkg::cli) & ($expr))"
}

if [[ $mode == check ]]; then
  ready_to_test
  check_tree=$WORK/check-tree
  rm -rf "$check_tree"
  cp -a "$TREE" "$check_tree"
  analysis select "$check_tree" "${files[@]}" >"$WORK/check-selection.tsv"
  analysis instrument "$check_tree" "${files[@]}"
  log=$WORK/check-reach.log
  rm -f "$log"
  # Writable by all: some tests run mcpatch as another user (through setpriv).
  : >"$log"
  chmod 666 "$log"
  echo "running every test once with the core functions logging who runs them (a separate build in $WORK/check-target)" >&2
  (cd "$check_tree" && MUTANTS_REACH_LOG=$log CARGO_TARGET_DIR=$WORK/check-target cargo nextest run --locked --no-fail-fast) ||
    die "the tests fail on the instrumented copy (see above)"
  [[ -s $log ]] || die "no core function logged anything to $log"
  analysis check "$WORK/check-selection.tsv" "$log"
  exit
fi

# ---- which mutants -----------------------------------------------------------

select_args=()
if [[ $mode == diff ]]; then
  git rev-parse --verify --quiet "$base^{commit}" >/dev/null || die "no commit '$base' to compare with; pass --base REF"
  run_name=diff-${base//\//-}
  mapfile -t touched < <(git diff --name-only --no-renames --diff-filter=d "$base...HEAD" -- "${files[@]}")
  if ((${#touched[@]} == 0)); then
    echo "the change against $base ($(git rev-parse --short "$base")...HEAD) touches no core file (${files[*]}): no mutants to test"
    exit 0
  fi
  files=("${touched[@]}")
  git diff --no-color --no-ext-diff --no-renames --src-prefix=a/ --dst-prefix=b/ "$base...HEAD" -- "${files[@]}" >"$WORK/change.diff"
  select_args+=(--in-diff "$WORK/change.diff")
else
  run_name=all
fi
((unit_only)) && run_name+=-unit-only
if [[ -n $shard ]]; then
  select_args+=(--shard "$shard" --sharding round-robin)
  run_name+=-shard-${shard/\//-of-}
fi
if ((${#res[@]})); then
  for re in "${res[@]}"; do select_args+=(--re "$re"); done
  run_name+=-re
fi
((list)) && run_name=list # a listing never replaces a run's results
OUT=$WORK/out/$run_name
rm -rf "$OUT"
mkdir -p "$OUT"

analysis select "$TREE" "${files[@]}" >"$OUT/selection.tsv"
declare -A kept left_out count filter
todo=()
for f in "${files[@]}"; do
  IFS=$'\t' read -r _ "kept[$f]" "left_out[$f]" < <(grep -P "^\Q$f\E\t" "$OUT/selection.tsv")
  if ((unit_only)); then
    filter[$f]="kind(lib)" kept[$f]=0
  else
    filter[$f]=$(filter_for "${left_out[$f]}")
  fi
  "$MUTANTS" mutants --list -d "$TREE" --file "$f" "${select_args[@]}" >"$OUT/${f//\//_}.list" ||
    die "cargo mutants --list failed for $f"
  count[$f]=$(grep -c . "$OUT/${f//\//_}.list" || true)
  ((count[$f] > 0)) && todo+=("$f")
done

echo "mutants of HEAD ${head:0:12} ($([[ $mode == diff ]] && echo "change against $base" || echo "whole core")${shard:+, shard $shard}):"
for f in "${files[@]}"; do
  printf '  %-24s %4d mutants, %3d cli tests can run its code (%d left out)\n' "$f" "${count[$f]}" "${kept[$f]}" \
    "$(wc -w <<<"${left_out[$f]}")"
done
if ((list)); then
  for f in "${files[@]}"; do
    echo "== $f: its mutants run the unit tests and ${kept[$f]} cli tests; the cli tests left out:"
    tr ' ' '\n' <<<"${left_out[$f]}" | sed '/^$/d; s/^/  /'
    echo "== $f: mutants"
    sed 's/^/  /' "$OUT/${f//\//_}.list"
  done
  exit 0
fi
if ((${#todo[@]} == 0)); then
  echo "no mutants to test"
  exit 0
fi

# ---- the unmutated tree: its tests must pass; their times set the budgets ------

ready_to_test

union=""
for f in "${todo[@]}"; do union+="${union:+ | }(${filter[$f]})"; done
echo "running the tests of the unmutated HEAD once (they must pass; their times set each mutant's timeout)" >&2
start=$SECONDS
if ! (cd "$TREE" && cargo nextest run --locked --no-fail-fast --no-tests fail -E "$union") 2>&1 | tee "$OUT/unmutated.log" >&2; then
  echo "error: the tests fail on the unmutated HEAD (see $OUT/unmutated.log): every mutant would look caught; fix them first" >&2
  exit 4
fi
echo "unmutated run: $((SECONDS - start)) s" >&2
threads=$(nproc)
analysis plan "$OUT/selection.tsv" "$OUT/unmutated.log" "$WORK/nextest-order.toml" 120 3 "$threads" >"$OUT/timeouts.tsv"

# ---- the mutants, one file at a time ---------------------------------------------

declare -A took
for f in "${todo[@]}"; do
  t=${timeout:-$(grep -P "^\Q$f\E\t" "$OUT/timeouts.tsv" | cut -f2)}
  slug=${f//\//_}
  echo "== $f: ${count[$f]} mutants, test timeout ${t} s" >&2
  start=$SECONDS
  rc=0
  # --in-place (in the copy) is one job at a time: cargo-mutants refuses --jobs with it.
  "$MUTANTS" mutants --in-place -d "$TREE" --file "$f" --test-tool nextest --baseline skip \
    --timeout "$t" --output "$OUT/$slug" --cargo-arg=--locked "${select_args[@]}" \
    -- -E "${filter[$f]}" --max-fail 1 --no-tests fail \
    --tool-config-file "mutants:$WORK/nextest-order.toml" 2>&1 | tee "$OUT/$slug.log" >&2 || rc=${PIPESTATUS[0]}
  took[$f]=$((SECONDS - start))
  case $rc in
  0 | 2 | 3) ;;
  *) die "cargo mutants stopped with exit code $rc on $f (see $OUT/$slug.log)" ;;
  esac
done

# ---- the counts ------------------------------------------------------------------

lines() { if [[ -f $1 ]]; then grep -c . "$1" || true; else echo 0; fi; }
total=(0 0 0 0 0 0)
{
  echo "mutants of HEAD $head ($([[ $mode == diff ]] && echo "change against $base" || echo "whole core")${shard:+, shard $shard})"
  printf '%-24s %7s %6s %6s %8s %7s %9s %8s\n' FILE MUTANTS CAUGHT MISSED UNVIABLE TIMEOUT CLI-TESTS TIME
  for f in "${todo[@]}"; do
    o=$OUT/${f//\//_}/mutants.out
    c=$(lines "$o/caught.txt") m=$(lines "$o/missed.txt") u=$(lines "$o/unviable.txt") x=$(lines "$o/timeout.txt")
    printf '%-24s %7d %6d %6d %8d %7d %9d %5dm%02ds\n' "$f" "${count[$f]}" "$c" "$m" "$u" "$x" "${kept[$f]}" \
      $((took[$f] / 60)) $((took[$f] % 60))
    total=($((total[0] + count[$f])) $((total[1] + c)) $((total[2] + m)) $((total[3] + u)) $((total[4] + x)) $((total[5] + took[$f])))
  done
  printf '%-24s %7d %6d %6d %8d %7d %9s %5dm%02ds\n' total "${total[0]}" "${total[1]}" "${total[2]}" "${total[3]}" \
    "${total[4]}" "" $((total[5] / 60)) $((total[5] % 60))
  if ((total[2])); then
    echo "missed (no test failed with these changes):"
    for f in "${todo[@]}"; do
      o=$OUT/${f//\//_}/mutants.out/missed.txt
      [[ -f $o ]] && sed 's/^/  /' "$o"
    done
  fi
  if ((total[4])); then
    echo "timed out:"
    for f in "${todo[@]}"; do
      o=$OUT/${f//\//_}/mutants.out/timeout.txt
      [[ -f $o ]] && sed 's/^/  /' "$o"
    done
  fi
  echo "logs: $OUT/<file>/mutants.out/"
} >"$OUT/summary.txt"
cat "$OUT/summary.txt"
((total[2])) && exit 2
((total[4])) && exit 3
exit 0
