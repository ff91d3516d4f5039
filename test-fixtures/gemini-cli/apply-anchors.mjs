// Reference implementation of mcpatch's content anchors (the Rust port is checked against it).
//
// A target manifest may carry `anchors`: exact code fragments that must each match exactly
// once in the file, else the file is refused naming the anchor that did not match.
//   "placeholder": "[A-Za-z_$][A-Za-z0-9_$]*"  what a {{NAME}} placeholder matches: an
//                  identifier, taken greedily (maximal munch, no backtracking), as bundlers
//                  rename identifiers (McpClient -> McpClient2, result -> result2)
//   "anchors": [{ "name": …,
//                 "match": [lines…],     joined with "\n", no trailing newline; literal bytes
//                                        except {{NAME}} (NAME = [A-Z][A-Z0-9_]*); it starts
//                                        and ends with literal text; a NAME used twice must
//                                        capture the same identifier both times
//                 "replace": "fragments/<name>.js",  the replacement: the file's text minus
//                                        its one final "\n", {{NAME}} replaced by the capture
//                 "replace_sha256": … }] sha256 of that fragment file, as stored; a fragment
//                                        may only use the names its anchor captures
//   "patch_marker": a string every replacement contains; a file that contains it is already
//                  patched: apply leaves it alone (idempotent).
// An anchor matches at every offset where its whole text matches; it must match at exactly
// one offset, and anchors must not overlap. All anchors are matched against the original
// text, then all are replaced at once.
// argv: <manifest.json> <file> [--out <path>]
// stdout: JSON {status: "patched" | "already-patched", anchors: [{name, offset, captures}]}
// exit 1 with "error: …" naming the anchor (and the count found) when the file is refused.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const IDENT_START = /[A-Za-z_$]/;
const IDENT_PART = /[A-Za-z0-9_$]/;

/** Splits an anchor text into literal and placeholder parts. */
export function parseAnchor(name, text) {
  const parts = [];
  const re = /\{\{([A-Za-z0-9_]*)\}\}/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(m[1])) throw new Error(`anchor \`${name}\`: bad placeholder {{${m[1]}}}; use {{NAME}} with NAME in A-Z, 0-9, _`);
    parts.push({ lit: text.slice(last, m.index) }, { ph: m[1] });
    last = m.index + m[0].length;
  }
  parts.push({ lit: text.slice(last) });
  const cleaned = parts.filter((p) => p.ph !== undefined || p.lit.length > 0);
  if (cleaned.length === 0 || cleaned[0].lit === undefined || cleaned.at(-1).lit === undefined)
    throw new Error(`anchor \`${name}\` must start and end with literal text`);
  for (let i = 1; i < cleaned.length; i++)
    if (cleaned[i].ph !== undefined && cleaned[i - 1].ph !== undefined)
      throw new Error(`anchor \`${name}\`: two placeholders must be separated by literal text`);
  for (const p of cleaned) if (p.lit !== undefined && p.lit.includes("{{")) throw new Error(`anchor \`${name}\`: stray "{{"`);
  return cleaned;
}

/** Tries the anchor at `at`; returns {end, captures} or null. */
function matchAt(src, parts, at) {
  let i = at;
  const captures = {};
  for (const p of parts) {
    if (p.lit !== undefined) {
      if (!src.startsWith(p.lit, i)) return null;
      i += p.lit.length;
    } else {
      if (i >= src.length || !IDENT_START.test(src[i])) return null;
      let j = i + 1;
      while (j < src.length && IDENT_PART.test(src[j])) j++;
      const id = src.slice(i, j);
      if (p.ph in captures && captures[p.ph] !== id) return null;
      captures[p.ph] = id;
      i = j;
    }
  }
  return { end: i, captures };
}

/** Every offset where the anchor matches. */
export function findAnchor(src, parts) {
  const found = [];
  const first = parts[0].lit;
  for (let at = src.indexOf(first); at >= 0; at = src.indexOf(first, at + 1)) {
    const m = matchAt(src, parts, at);
    if (m) found.push({ start: at, ...m });
  }
  return found;
}

export function substitute(name, template, captures) {
  return template.replace(/\{\{([A-Za-z0-9_]*)\}\}/g, (whole, ph) => {
    if (!(ph in captures)) throw new Error(`anchor \`${name}\`: the replacement uses {{${ph}}}, which the match does not capture`);
    return captures[ph];
  });
}

/** Loads the manifest's anchors with their replacement fragments (sha256-checked). */
export function loadAnchors(manifestPath) {
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  if (!Array.isArray(manifest.anchors) || manifest.anchors.length === 0) throw new Error(`${manifestPath} has no anchors`);
  if (manifest.placeholder !== "[A-Za-z_$][A-Za-z0-9_$]*") throw new Error(`${manifestPath}: unsupported placeholder pattern ${manifest.placeholder}`);
  const names = new Set();
  const anchors = manifest.anchors.map((a) => {
    if (names.has(a.name)) throw new Error(`${manifestPath}: two anchors named \`${a.name}\``);
    names.add(a.name);
    const fragPath = path.join(path.dirname(manifestPath), a.replace);
    const raw = readFileSync(fragPath);
    const sha = createHash("sha256").update(raw).digest("hex");
    if (sha !== a.replace_sha256) throw new Error(`${fragPath}: sha256 ${sha}, the manifest expects ${a.replace_sha256}`);
    let replace = raw.toString("utf8");
    if (!replace.endsWith("\n")) throw new Error(`${fragPath} must end with a newline`);
    replace = replace.slice(0, -1);
    if (!replace.includes(manifest.patch_marker)) throw new Error(`${fragPath} does not contain the patch marker ${manifest.patch_marker}`);
    const parts = parseAnchor(a.name, a.match.join("\n"));
    const captured = new Set(parts.filter((p) => p.ph !== undefined).map((p) => p.ph));
    for (const m of replace.matchAll(/\{\{([A-Za-z0-9_]*)\}\}/g))
      if (!captured.has(m[1])) throw new Error(`${fragPath} uses {{${m[1]}}}, which anchor \`${a.name}\` does not capture`);
    return { name: a.name, parts, replace };
  });
  return { manifest, anchors };
}

/** Patches `src`; throws naming the first anchor that does not match exactly once. */
export function applyAnchors(src, { manifest, anchors }) {
  if (src.includes(manifest.patch_marker)) return { status: "already-patched", text: src, anchors: [] };
  const hits = [];
  for (const a of anchors) {
    const found = findAnchor(src, a.parts);
    if (found.length !== 1)
      throw new Error(`anchor \`${a.name}\` matched ${found.length} times (expected exactly once)`);
    hits.push({ ...a, ...found[0] });
  }
  hits.sort((x, y) => x.start - y.start);
  for (let i = 1; i < hits.length; i++)
    if (hits[i].start < hits[i - 1].end) throw new Error(`anchors \`${hits[i - 1].name}\` and \`${hits[i].name}\` overlap`);
  let out = "";
  let last = 0;
  for (const h of hits) {
    out += src.slice(last, h.start) + substitute(h.name, h.replace, h.captures);
    last = h.end;
  }
  out += src.slice(last);
  return { status: "patched", text: out, anchors: hits.map((h) => ({ name: h.name, offset: h.start, captures: h.captures })) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const oi = args.indexOf("--out");
  const out = oi >= 0 ? args.splice(oi, 2)[1] : undefined;
  const [manifestPath, file] = args;
  if (!manifestPath || !file) {
    console.error("usage: apply-anchors.mjs <manifest.json> <file> [--out <path>]");
    process.exit(2);
  }
  try {
    const loaded = loadAnchors(manifestPath);
    const src = readFileSync(file, "utf8");
    const r = applyAnchors(src, loaded);
    if (out !== undefined) writeFileSync(out, r.text);
    console.log(JSON.stringify({ status: r.status, anchors: r.anchors }));
  } catch (e) {
    console.error(`error: ${file}: ${e.message}`);
    process.exit(1);
  }
}
