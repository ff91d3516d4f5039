// Writes patches/mcp-sdk/manifest.json's hashes from the real releases (never typed by hand):
// each anchor's `replace_sha256` (of its fragment file) and `revisions`: for each release under
// .cache/mcp-sdk/packs/<package>@<version>/package (test-fixtures/mcp-sdk/fetch.sh), each file the
// manifest lists is patched with test-fixtures/mcp-sdk/apply-anchors.mjs (in memory), checked with
// `node --check`, and recorded as an "original" revision (with `patched_sha256`) and a "patched" one.
// argv: [--write] [--node PATH]   without --write it prints the revisions and changes nothing
// exit 1 when a release's file is refused by the anchors or its patched text does not parse.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { applyAnchors } from "../gemini-cli/apply-anchors.mjs";
import { loadSet } from "./apply-anchors.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const manifestPath = path.join(repo, "patches", "mcp-sdk", "manifest.json");
const packs = path.join(repo, ".cache", "mcp-sdk", "packs");
const args = process.argv.slice(2);
const write = args.includes("--write");
const node = args.includes("--node") ? args[args.indexOf("--node") + 1] : process.execPath;
const sha = (b) => createHash("sha256").update(b).digest("hex");
const semver = (v) => v.split(/[.-]/).map((x) => (/^\d+$/.test(x) ? x.padStart(6, "0") : x)).join(".");

const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
for (const set of Object.values(manifest.anchor_sets))
  for (const a of set) a.replace_sha256 = sha(readFileSync(path.join(path.dirname(manifestPath), a.replace)));
// The anchors are loaded from the updated manifest text (so their sha256 check passes).
const tmp = mkdtempSync(path.join(tmpdir(), "mcpatch-sdk-releases-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
const tmpManifest = path.join(path.dirname(manifestPath), `.manifest-${process.pid}.json`);
writeFileSync(tmpManifest, JSON.stringify(manifest));
let sets;
try {
  sets = Object.fromEntries(Object.keys(manifest.anchor_sets).map((n) => [n, loadSet(tmpManifest, n)]));
} finally {
  rmSync(tmpManifest, { force: true });
}

if (!existsSync(path.join(packs, "@modelcontextprotocol"))) {
  console.error(`error: no releases in ${packs}; run test-fixtures/mcp-sdk/fetch.sh --packs-only`);
  process.exit(1);
}
const byHash = new Map();
let failed = false;
for (const entry of manifest.packages) {
  const [scope, name] = entry.package.split("/");
  const dirs = readdirSync(path.join(packs, scope)).filter((d) => d.startsWith(`${name}@`) && existsSync(path.join(packs, scope, d, ".done")));
  dirs.sort((a, b) => (semver(a.split("@")[1]) < semver(b.split("@")[1]) ? -1 : 1));
  for (const d of dirs) {
    const version = d.split("@")[1];
    const pkg = path.join(packs, scope, d, "package");
    for (const f of entry.files) {
      const file = path.join(pkg, f.find.path);
      const src = readFileSync(file);
      let r;
      try {
        r = applyAnchors(src.toString("utf8"), sets[f.anchors]);
      } catch (e) {
        console.error(`error: ${entry.package}@${version} ${f.find.path}: ${e.message}`);
        failed = true;
        continue;
      }
      const out = path.join(tmp, `${name}-${version}-${f.role}${path.extname(f.find.path)}`);
      writeFileSync(out, r.text);
      try {
        execFileSync(node, ["--check", out], { stdio: ["ignore", "ignore", "pipe"] });
      } catch (e) {
        console.error(`error: ${entry.package}@${version} ${f.find.path}: the patched file does not parse: ${e.stderr}`);
        failed = true;
        continue;
      }
      const before = sha(src);
      const after = sha(Buffer.from(r.text));
      const add = (key, rev) => {
        const seen = byHash.get(key);
        if (seen) seen.versions.push(version);
        else byHash.set(key, rev);
      };
      add(before, { sha256: before, versions: [version], package: entry.package, file: f.find.path, kind: "original",
        note: `affected: the ${f.role.toUpperCase()} Streamable HTTP client transport of ${entry.package} ${version}; the anchors match, the patch is proven on it`,
        patched_sha256: after });
      add(after, { sha256: after, versions: [version], package: entry.package, file: f.find.path, kind: "patched",
        note: `the session-loss patch applied to ${entry.package} ${version} (${f.role})`, original_sha256: before });
      console.log(`${entry.package}@${version} ${f.role}: ${before.slice(0, 12)} -> ${after.slice(0, 12)}`);
    }
  }
}
if (failed) process.exit(1);
manifest.revisions = [...byHash.values()];
if (write) {
  const text = JSON.stringify(manifest, null, 2) + "\n";
  writeFileSync(manifestPath + ".tmp", text);
  renameSync(manifestPath + ".tmp", manifestPath);
  console.log(`wrote ${manifest.revisions.length} revisions to ${manifestPath}`);
}
