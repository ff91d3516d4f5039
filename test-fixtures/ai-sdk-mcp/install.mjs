// The ai-sdk-mcp target's files and anchors as the fixtures see them: which build files of an
// installed @ai-sdk/mcp mcpatch patches (resolved through the package's own package.json
// "exports", as the manifest's `find: { export, condition }` says) and the anchors of
// patches/ai-sdk-mcp/manifest.json applied with the reference applier
// (test-fixtures/gemini-cli/apply-anchors.mjs). Shared by prove.mjs and record.mjs.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { applyAnchors, parseAnchor } from "../gemini-cli/apply-anchors.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "..", "..");
export const targetDir = join(repo, "patches", "ai-sdk-mcp");
export const manifest = JSON.parse(readFileSync(join(targetDir, "manifest.json"), "utf8"));
export const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

/** The package entry of the manifest for this package name. */
function entryFor(name) {
  const entry = manifest.packages.find((p) => p.package === name);
  if (!entry) throw new Error(`patches/ai-sdk-mcp/manifest.json has no package entry for ${name}`);
  return entry;
}

/** The anchor set a file entry names (`anchors`: a key of the manifest's `anchor_sets`). */
function anchorSet(file) {
  const set = manifest.anchor_sets?.[file.anchors];
  if (!Array.isArray(set) || set.length === 0) throw new Error(`patches/ai-sdk-mcp/manifest.json: file role ${file.role} names anchor set \`${file.anchors}\`, which anchor_sets lacks`);
  return set;
}

/** The anchors of a file entry, loaded as apply-anchors.mjs's loadAnchors does. */
export function anchorsOf(file) {
  const anchors = anchorSet(file).map((a) => {
    const fragPath = join(targetDir, a.replace);
    const raw = readFileSync(fragPath);
    if (sha256(raw) !== a.replace_sha256) throw new Error(`${fragPath}: sha256 ${sha256(raw)}, the manifest expects ${a.replace_sha256}`);
    const replace = raw.toString("utf8");
    if (!replace.endsWith("\n")) throw new Error(`${fragPath} must end with a newline`);
    if (!replace.includes(manifest.patch_marker)) throw new Error(`${fragPath} does not hold the marker ${manifest.patch_marker}`);
    return { name: a.name, parts: parseAnchor(a.name, a.match.join("\n")), replace: replace.slice(0, -1) };
  });
  return { manifest, anchors };
}

/** The build files of an installed package folder: [{ role, rel, path }] (absent optional builds left out). */
export function buildFiles(pkg) {
  const meta = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  const entry = entryFor(meta.name);
  const pick = (e) => (typeof e === "string" ? e : typeof e?.default === "string" ? e.default : undefined);
  const files = [];
  for (const f of entry.files) {
    const exp = meta.exports?.[f.find.export];
    const rel = pick(exp?.[f.find.condition]);
    if (!rel) {
      if (f.optional) continue;
      throw new Error(`${pkg}: package.json exports["${f.find.export}"] has no "${f.find.condition}" build`);
    }
    const path = join(pkg, rel);
    if (!existsSync(path)) throw new Error(`${path} is named by package.json but missing`);
    files.push({ role: f.role, rel: rel.replace(/^\.\//, ""), path, spec: f });
  }
  return { version: meta.version, name: meta.name, entry, files };
}

/** The patched text of one build file (`file`: an entry of buildFiles' files, or a manifest
 * file entry); throws naming the anchor that does not fit. */
export function patchText(file, text) {
  return applyAnchors(text, anchorsOf(file.spec ?? file)).text;
}

/** `text` with a mutant's replacements (test-fixtures/patch-mutants/ai-sdk-mcp/*.json), each
 * search string matching exactly once; throws naming the string otherwise. */
export function mutate(text, mutant, where) {
  for (const { search, with: by } of mutant.replace) {
    const count = text.split(search).length - 1;
    if (count !== 1) throw new Error(`a search string of the mutant matches ${count} times in ${where} (expected exactly once): ${JSON.stringify(search.slice(0, 80))}`);
    text = text.replace(search, () => by);
  }
  return text;
}
