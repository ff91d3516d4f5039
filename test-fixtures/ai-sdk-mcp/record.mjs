// Records patches/ai-sdk-mcp/manifest.json's `revisions` from real releases, never by hand:
// for each release prove.mjs proved (every patched run SEAMLESS and every unpatched run STUCK in
// the proof log given), each build file of the fetched install (.cache/ai-sdk-mcp/<version>) is
// hashed, patched with the manifest's anchors and hashed again; one `original` and one `patched`
// revision per distinct file hash. With --survey, releases are also packed from the npm registry
// (npm pack, into .cache/ai-sdk-mcp-packs/) and only reported: whether the anchors fit each build
// file (a release the anchors fit but no proof covers is left to mcpatch's strict verify).
// argv: --proof <prove.mjs stdout file> [--write] [--survey a,b,c]
// stdout: one line per release and build file; with --write the manifest is rewritten in place
// (through a temp file and rename: never half-written).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildFiles, manifest, patchText, repo, sha256, targetDir } from "./install.mjs";

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const proofFile = opt("--proof");
if (!proofFile) {
  console.error("usage: record.mjs --proof <prove.mjs output> [--write] [--survey a,b,c]");
  process.exit(2);
}
const proofLine = readFileSync(proofFile, "utf8").split("\n").find((l) => l.startsWith('{"runs"'));
if (!proofLine) {
  console.error(`record.mjs: ${proofFile} holds no {"runs": ...} line; run test-fixtures/ai-sdk-mcp/prove.mjs > ${proofFile}`);
  process.exit(2);
}
const { runs } = JSON.parse(proofLine);
const byVersion = new Map();
for (const r of runs) byVersion.set(r.version, [...(byVersion.get(r.version) ?? []), r]);
const proven = [...byVersion].filter(([, rs]) =>
  rs.some((r) => r.patched) && rs.every((r) => (r.patched ? r.verdict === "SEAMLESS" : r.verdict === "STUCK")) &&
  [404, 400, 401].every((a) => rs.some((r) => r.patched && r.answer === a)),
).map(([v]) => v);
const notProven = [...byVersion.keys()].filter((v) => !proven.includes(v));
if (notProven.length) console.log(`not proven (left out): ${notProven.join(", ")}`);

const cmp = (a, b) => a.localeCompare(b, "en", { numeric: true });
const revisions = new Map();
for (const v of proven.sort(cmp)) {
  const pkg = join(repo, ".cache", "ai-sdk-mcp", v, "node_modules", "@ai-sdk", "mcp");
  const { files } = buildFiles(pkg);
  const builds = new Set(runs.filter((r) => r.version === v && r.patched).map((r) => r.build));
  for (const f of files) {
    if (!builds.has(f.role)) {
      console.log(`${v} ${f.role} ${f.rel}: no patched run of this build in the proof; left out`);
      continue;
    }
    const original = readFileSync(f.path);
    const patched = Buffer.from(patchText(f, original.toString("utf8")));
    const o = sha256(original);
    const p = sha256(patched);
    console.log(`${v} ${f.role} ${f.rel}: ${o} -> ${p}`);
    const add = (sha, rev) => {
      const have = revisions.get(sha);
      if (have) have.versions.push(v);
      else revisions.set(sha, { sha256: sha, versions: [v], file: f.rel, build: f.role, ...rev });
    };
    add(o, { kind: "original", note: `affected: @ai-sdk/mcp's ${f.role.toUpperCase()} build; its HTTP transport drops or keeps a lost session and never initializes again; the anchor fits, the patch is proven on it (STUCK before, SEAMLESS after, on 404, 400 and 401)`, patched_sha256: p });
    add(p, { kind: "patched", note: "patched by mcpatch (ai-sdk-mcp-session-loss): seamless", original_sha256: o });
  }
}

for (const v of (opt("--survey") ?? "").split(",").filter(Boolean)) {
  const dir = join(repo, ".cache", "ai-sdk-mcp-packs", v);
  if (!existsSync(join(dir, ".done"))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const tgz = execFileSync("npm", ["pack", "--silent", "--loglevel=error", `@ai-sdk/mcp@${v}`], { cwd: dir, encoding: "utf8" }).trim().split("\n").pop();
    execFileSync("tar", ["xzf", join(dir, tgz), "-C", dir]);
    rmSync(join(dir, tgz));
    writeFileSync(join(dir, ".done"), "");
  }
  let files;
  try {
    ({ files } = buildFiles(join(dir, "package")));
  } catch (error) {
    console.log(`survey ${v}: ${error.message}`);
    continue;
  }
  for (const f of files) {
    const text = readFileSync(f.path, "utf8");
    let verdict;
    try {
      patchText(f, text);
      verdict = "anchors fit";
    } catch (error) {
      const lacking = manifest.unsupported_reasons.find((u) => !text.includes(u.lacks));
      verdict = `refused: ${error.message}${lacking ? ` (${lacking.note})` : ""}`;
    }
    console.log(`survey ${v} ${f.role} ${f.rel}: ${verdict}`);
  }
}

if (args.includes("--write")) {
  const out = { ...manifest, revisions: [...revisions.values()].sort((a, b) => (a.kind === b.kind ? cmp(a.versions[0], b.versions[0]) : a.kind === "original" ? -1 : 1)) };
  const path = join(targetDir, "manifest.json");
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(out, null, 2)}\n`, { mode: 0o644 });
  renameSync(tmp, path);
  console.log(`wrote ${revisions.size} revisions to ${path}`);
}
