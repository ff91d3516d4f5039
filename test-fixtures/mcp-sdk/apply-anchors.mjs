// The mcp-sdk target's patch applied the way mcpatch applies it, for the proofs and releases.sh:
// patches/mcp-sdk/manifest.json names, per package and file, an anchor set (`anchor_sets`); this picks
// the set of the file's package and role and applies it with the reference applier
// (test-fixtures/gemini-cli/apply-anchors.mjs: exact-once matching, fragments sha256-checked).
// argv: <manifest.json> <package folder> [--out-dir DIR] [--mutant FILE]   patches every file of the package in place,
//        or writes the patched files under DIR/<file path> (the package folder is left alone)
// stdout: JSON {package, version, files: [{role, file, status, before, after}]}
// exit 1 with "error: <file>: …" naming the anchor when a file is refused (then nothing is written).
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { applyAnchors, parseAnchor } from "../gemini-cli/apply-anchors.mjs";

const sha = (b) => createHash("sha256").update(b).digest("hex");

/** The anchors of anchor set `name`, loaded as the reference applier loads a manifest's `anchors`. */
export function loadSet(manifestPath, name) {
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  const set = manifest.anchor_sets?.[name];
  if (!Array.isArray(set) || set.length === 0) throw new Error(`${manifestPath}: no anchor set \`${name}\``);
  const anchors = set.map((a) => {
    const fragPath = path.join(path.dirname(manifestPath), a.replace);
    const raw = readFileSync(fragPath);
    if (sha(raw) !== a.replace_sha256) throw new Error(`${fragPath}: sha256 ${sha(raw)}, the manifest expects ${a.replace_sha256}`);
    let replace = raw.toString("utf8");
    if (!replace.endsWith("\n")) throw new Error(`${fragPath} must end with a newline`);
    replace = replace.slice(0, -1);
    if (!replace.includes(manifest.patch_marker)) throw new Error(`${fragPath} does not contain the patch marker ${manifest.patch_marker}`);
    return { name: a.name, parts: parseAnchor(a.name, a.match.join("\n")), replace };
  });
  return { manifest, anchors };
}

/**
 * A mutant of test-fixtures/patch-mutants/mcp-sdk/ applied to a patched text: each `search` must match
 * exactly once (a mutant that no longer applies is an error, never a pass).
 */
export function mutate(text, mutantPath, where) {
  const mutant = JSON.parse(readFileSync(mutantPath, "utf8"));
  for (const { search, with: by } of mutant.replace) {
    const at = text.indexOf(search);
    if (at < 0 || text.indexOf(search, at + 1) >= 0)
      throw new Error(`${where}: mutant ${path.basename(mutantPath)}: its search ${JSON.stringify(search.slice(0, 60))} matches ${at < 0 ? 0 : "more than one"} times (expected exactly once)`);
    text = text.slice(0, at) + by + text.slice(at + search.length);
  }
  return text;
}

/** Patches every file the manifest lists for the package in `pkgDir` (then applies `mutant`, if given); returns what it did. */
export function patchPackage(manifestPath, pkgDir, outDir, mutant) {
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  const pj = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8"));
  const entry = manifest.packages.find((p) => p.package === pj.name);
  if (!entry) throw new Error(`${pkgDir}: package ${pj.name} is not one the manifest lists`);
  const results = entry.files.map((f) => {
    const file = path.join(pkgDir, f.find.path);
    const src = readFileSync(file, "utf8");
    let r;
    try {
      r = applyAnchors(src, loadSet(manifestPath, f.anchors));
    } catch (e) {
      throw new Error(`${file}: ${e.message}`);
    }
    if (mutant) r.text = mutate(r.text, mutant, file);
    return { role: f.role, file: f.find.path, status: r.status, text: r.text, before: sha(Buffer.from(src)), after: sha(Buffer.from(r.text)) };
  });
  // Both files or neither: everything is matched before anything is written.
  for (const r of results) {
    const dest = outDir ? path.join(outDir, r.file) : path.join(pkgDir, r.file);
    mkdirSync(path.dirname(dest), { recursive: true });
    writeFileSync(dest + ".mcpatch-tmp", r.text);
    renameSync(dest + ".mcpatch-tmp", dest);
  }
  return { package: pj.name, version: pj.version, files: results.map(({ text, ...rest }) => rest) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const oi = args.indexOf("--out-dir");
  const outDir = oi >= 0 ? args.splice(oi, 2)[1] : undefined;
  const mi = args.indexOf("--mutant");
  const mutant = mi >= 0 ? args.splice(mi, 2)[1] : undefined;
  const [manifestPath, pkgDir] = args;
  if (!manifestPath || !pkgDir) {
    console.error("usage: apply-anchors.mjs <manifest.json> <package folder> [--out-dir DIR] [--mutant FILE]");
    process.exit(2);
  }
  try {
    console.log(JSON.stringify(patchPackage(manifestPath, pkgDir, outDir, mutant)));
  } catch (e) {
    console.error(`error: ${e.message}`);
    process.exit(1);
  }
}
