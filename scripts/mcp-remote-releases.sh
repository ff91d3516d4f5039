#!/usr/bin/env bash
# Regenerates the known revisions of the mcp-remote target from the npm registry.
#
# For every mcp-remote release from the first that has the Streamable HTTP client
# up to 0.15.1: `npm pack` it into .cache/mcp-remote-releases/ (ignored, kept
# between runs), find the file the patches touch by content (the bundle chunk
# holding `function mcpProxy(`; chunk names change with every release), hash it,
# and try each patch of patches/mcp-remote/manifest.json in order: a patch fits
# when its `requires` strings are in the file, none of its `refuses` strings
# are, and it applies with no fuzz under both GNU patch and `git apply`, and the
# result passes `node --check`. State: `affected` (kind `original`) with the
# first patch that fits, and the patched file as kind `patched`; otherwise
# `unsupported` with the reason. Each earlier revision of that patch
# (`earlier_patches` entries whose `replaced_by` names it) is put on the release the
# same way, and its result becomes an `outdated` revision naming that diff
# (`apply` takes it out again to upgrade); an earlier revision that does not fit
# a release the current one fits is an error.
#
# usage: scripts/mcp-remote-releases.sh [--write] [--last VERSION]
#   prints the table, then the revisions as JSON; --write also replaces the
#   manifest's `revisions` and each patch's `fits` with them.
# usage: scripts/mcp-remote-releases.sh --install VERSION[,VERSION...]
#   installs those releases with their dependencies (`npm install`) into
#   .cache/mcp-remote-releases/install/<version>/, the installs
#   test-fixtures/mcp-remote/prove.mjs drives; idempotent (`.done` markers).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/.cache/mcp-remote-releases"
manifest="$root/patches/mcp-remote/manifest.json"
last="0.15.1"
write=0
install=""
while [ $# -gt 0 ]; do
  case "$1" in
    --write) write=1 ;;
    --last) last="${2:?--last needs a version}"; shift ;;
    --install) install="${2:?--install needs versions, e.g. 0.15.1,0.1.44}"; shift ;;
    *) echo "mcp-remote-releases.sh: unknown argument $1 (usage: [--write] [--last VERSION] | --install V[,V...])" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$install" ]; then
  IFS=, read -ra wanted <<<"$install"
  for v in "${wanted[@]}"; do
    dir="$cache/install/$v"
    [ -f "$dir/.done" ] && continue
    rm -rf "$dir" && mkdir -p "$dir"
    echo "installing mcp-remote@$v into $dir" >&2
    npm install --prefix "$dir" "mcp-remote@$v" --no-audit --no-fund --ignore-scripts --silent \
      || { echo "mcp-remote-releases.sh: npm install mcp-remote@$v failed" >&2; exit 1; }
    [ -f "$dir/node_modules/mcp-remote/dist/proxy.js" ] \
      || { echo "mcp-remote-releases.sh: $dir/node_modules/mcp-remote/dist/proxy.js is missing after npm install" >&2; exit 1; }
    touch "$dir/.done"
  done
  exit 0
fi
for tool in npm node patch git tar sha256sum; do
  command -v "$tool" >/dev/null || { echo "mcp-remote-releases.sh: $tool is required and not on PATH" >&2; exit 1; }
done
[ -f "$manifest" ] || { echo "mcp-remote-releases.sh: $manifest is missing" >&2; exit 1; }
mkdir -p "$cache/tgz" "$cache/x"

# Every release, in the registry's order (oldest first).
versions_json="$(npm view mcp-remote versions --json)"
mapfile -t versions < <(node -e '
  const all = JSON.parse(process.argv[1]);
  const last = all.indexOf(process.argv[2]);
  if (last < 0) { console.error(`mcp-remote ${process.argv[2]} is not on the registry`); process.exit(1); }
  for (const v of all.slice(0, last + 1)) if (!v.includes("-")) console.log(v);
' "$versions_json" "$last")

# Packs and unpacks one release (cached); prints its package folder.
fetch_release() {
  local v="$1" dir="$cache/x/$1"
  if [ ! -f "$dir/.done" ]; then
    if [ ! -f "$cache/tgz/mcp-remote-$v.tgz" ]; then
      (cd "$cache/tgz" && npm pack "mcp-remote@$v" --silent >/dev/null) \
        || { echo "mcp-remote-releases.sh: npm pack mcp-remote@$v failed" >&2; exit 1; }
    fi
    rm -rf "$dir" && mkdir -p "$dir"
    tar xzf "$cache/tgz/mcp-remote-$v.tgz" -C "$dir"
    touch "$dir/.done"
  fi
  echo "$dir/package"
}
has_streamable_http() {
  grep -qs "StreamableHTTPClientTransport" "$(fetch_release "$1")"/dist/*.js
}

# The first release with the Streamable HTTP client (every later one has it too):
# a binary search, so the releases before it are not all packed.
lo=0 hi=$((${#versions[@]} - 1))
has_streamable_http "${versions[$hi]}" || { echo "mcp-remote-releases.sh: $last has no Streamable HTTP client" >&2; exit 1; }
while [ "$lo" -lt "$hi" ]; do
  mid=$(((lo + hi) / 2))
  if has_streamable_http "${versions[$mid]}"; then hi=$mid; else lo=$((mid + 1)); fi
done
first="${versions[$lo]}"
echo "first release with the Streamable HTTP client: $first; releases $first..$last: $((${#versions[@]} - lo))" >&2

list="$cache/releases.txt"
: >"$list"
for v in "${versions[@]:$lo}"; do
  echo "$v $(fetch_release "$v")" >>"$list"
done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
node - "$manifest" "$list" "$scratch" "$write" <<'NODE'
const { readFileSync, writeFileSync, readdirSync, mkdirSync, copyFileSync, rmSync } = require("node:fs");
const { createHash } = require("node:crypto");
const { execFileSync } = require("node:child_process");
const path = require("node:path");
const [manifestPath, listPath, scratch, write] = process.argv.slice(2);
const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
const dir = path.dirname(manifestPath);
const sha = (b) => createHash("sha256").update(b).digest("hex");
const run = (cmd, args, opts = {}) => {
  try {
    execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...opts });
    return "";
  } catch (e) {
    const said = `${e.stderr ?? ""}${e.stdout ?? ""}`.trim();
    return (said || e.message).split("\n")[0] || `${cmd} failed`;
  }
};
const find = manifest.files[0].find;
// Puts one diff on a copy of a release's file: { sha256 } of the result, or { fails } saying why not.
function put(version, pkg, file, name) {
  const work = path.join(scratch, version, name);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(path.join(work, "dist"), { recursive: true });
  const target = path.join(work, "dist", "chunk.js");
  copyFileSync(path.join(pkg, file), target);
  const diff = path.join(dir, name);
  const gitFails = run("git", ["apply", "--check", diff], { cwd: work });
  const out = path.join(work, "patched.mjs");
  const patchFails = run("patch", ["--fuzz=0", "--quiet", "--batch", "--forward", "-o", out, target, diff]);
  if (gitFails || patchFails) return { fails: `${name} does not apply: ${gitFails || patchFails}` };
  const syntax = run(process.execPath, ["--check", out]);
  if (syntax) return { fails: `${name} applies but the result fails node --check: ${syntax}` };
  return { sha256: sha(readFileSync(out)) };
}
const rows = [];
for (const line of readFileSync(listPath, "utf8").trim().split("\n")) {
  const [version, pkg] = line.split(" ");
  const dist = path.join(pkg, path.dirname(find.glob));
  const re = new RegExp("^" + path.basename(find.glob).replace(/[.]/g, "\\.").replace(/\*/g, "[^/]*") + "$");
  const hits = readdirSync(dist).filter((n) => re.test(n)).filter((n) => {
    const t = readFileSync(path.join(dist, n), "utf8");
    return find.contains.every((s) => t.includes(s));
  });
  if (hits.length !== 1) {
    rows.push({ version, file: null, state: "unsupported", reason: `${hits.length} files match ${find.glob} holding ${JSON.stringify(find.contains)}` });
    continue;
  }
  const file = path.join(path.dirname(find.glob), hits[0]);
  const bytes = readFileSync(path.join(pkg, file));
  const text = bytes.toString("utf8");
  const row = { version, file, sha256: sha(bytes), state: "unsupported" };
  const reasons = [];
  for (const p of manifest.patches) {
    const missing = (p.requires ?? []).filter((s) => !text.includes(s));
    const present = (p.refuses ?? []).filter((s) => text.includes(s));
    if (missing.length || present.length) {
      reasons.push(`${p.file}: ${missing.length ? `lacks ${JSON.stringify(missing[0])}` : `has ${JSON.stringify(present[0])}`}`);
      continue;
    }
    const tried = put(version, pkg, file, p.file);
    if (tried.fails) {
      reasons.push(tried.fails);
      continue;
    }
    const outdated = [];
    for (const e of (manifest.earlier_patches ?? []).filter((e) => e.replaced_by === p.file)) {
      const earlier = put(version, pkg, file, e.patch);
      if (earlier.fails) {
        console.error(`mcp-remote-releases.sh: ${version}: ${p.file} fits, but its earlier revision ${earlier.fails}`);
        process.exit(1);
      }
      outdated.push({ patch: e.patch, revision: e.revision, sha256: earlier.sha256 });
    }
    Object.assign(row, { state: "affected", patch: p.file, patched_sha256: tried.sha256, outdated });
    break;
  }
  if (row.state !== "affected") {
    const known = (manifest.unsupported_reasons ?? []).find((u) => !text.includes(u.lacks));
    row.reason = known ? known.note : `no patch fits: ${reasons.join("; ")}`;
  }
  rows.push(row);
}

// Table.
for (const r of rows) {
  console.error(`${r.version.padEnd(8)} ${(r.file ?? "-").padEnd(24)} ${(r.sha256 ?? "").slice(0, 12).padEnd(12)} ${r.state.padEnd(11)} ${r.patch ?? r.reason}`);
}

// Revisions in the manifest's format: one entry per distinct file hash.
const revisions = [];
const byHash = new Map();
for (const r of rows) {
  if (!r.sha256) continue;
  let rev = byHash.get(r.sha256);
  if (!rev) {
    rev = r.state === "affected"
      ? { sha256: r.sha256, versions: [], file: r.file, kind: "original", patch: r.patch, patched_sha256: r.patched_sha256 }
      : { sha256: r.sha256, versions: [], file: r.file, kind: "unsupported", note: r.reason };
    byHash.set(r.sha256, rev);
    revisions.push(rev);
  }
  rev.versions.push(r.version);
}
for (const rev of [...revisions]) {
  if (rev.kind !== "original") continue;
  revisions.push({ sha256: rev.patched_sha256, versions: rev.versions, file: rev.file, kind: "patched", original_sha256: rev.sha256, patch: rev.patch });
}
// Each earlier revision's result, per original (one entry per distinct hash).
const earlierNote = (e) => `patched by an earlier mcpatch revision (${e.revision}): ${e.falls_short}; run \`mcpatch apply\` to upgrade`;
for (const r of rows) {
  for (const o of r.outdated ?? []) {
    let rev = byHash.get(o.sha256);
    if (!rev) {
      const e = manifest.earlier_patches.find((e) => e.patch === o.patch);
      rev = { sha256: o.sha256, versions: [], file: r.file, kind: "outdated", patch: o.patch, original_sha256: r.sha256, note: earlierNote(e) };
      byHash.set(o.sha256, rev);
      revisions.push(rev);
    }
    rev.versions.push(r.version);
  }
}
for (const rev of revisions) {
  if (rev.kind === "original") rev.note = `affected: ${rev.patch} fits`;
  if (rev.kind === "patched") rev.note = `patched by mcpatch (${rev.patch})`;
}
const fits = {};
for (const r of rows) if (r.patch) (fits[r.patch] ??= []).push(r.version);
const outdatedCount = revisions.filter((r) => r.kind === "outdated").length;
if (outdatedCount) console.error(`outdated revisions (earlier patches on the releases their successor fits): ${outdatedCount}`);
const counts = rows.reduce((c, r) => ((c[r.state] = (c[r.state] ?? 0) + 1), c), {});
console.error(`releases: ${rows.length}; ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(", ")}`);
for (const [p, vs] of Object.entries(fits)) console.error(`${p} fits ${vs.length}: ${vs.join(" ")}`);
console.log(JSON.stringify(revisions, null, 2));
if (write === "1") {
  manifest.revisions = revisions;
  for (const p of manifest.patches) {
    p.fits = fits[p.file] ?? [];
    p.sha256 = sha(readFileSync(path.join(dir, p.file)));
  }
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + "\n");
  console.error(`wrote ${manifestPath}`);
}
NODE
