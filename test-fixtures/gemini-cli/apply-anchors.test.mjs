// Unit cases for the anchor reference (apply-anchors.mjs), the behaviour mcpatch's Rust port
// must reproduce. Run: node --test test-fixtures/gemini-cli/apply-anchors.test.mjs
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { applyAnchors, findAnchor, loadAnchors, parseAnchor } from "./apply-anchors.mjs";

const MARK = "(mcpatch: t)";
function manifest(anchors) {
  const dir = mkdtempSync(path.join(tmpdir(), "anchors-"));
  const list = anchors.map(([name, match, replace]) => {
    const file = `${name}.js`;
    writeFileSync(path.join(dir, file), replace + "\n");
    return { name, match, replace: file, replace_sha256: createHash("sha256").update(replace + "\n").digest("hex") };
  });
  const p = path.join(dir, "manifest.json");
  writeFileSync(p, JSON.stringify({ patch_marker: MARK, placeholder: "[A-Za-z_$][A-Za-z0-9_$]*", anchors: list }));
  return loadAnchors(p);
}

test("placeholders capture whole identifiers and are substituted", () => {
  const m = manifest([["a", ["var X = class {", "  s = {{S}}.D;"], `var X = class {\n  s = {{S}}.D; /* ${MARK} */ t = {{S}}.C;`]]);
  const r = applyAnchors("var X = class {\n  s = Status2.D;\n}", m);
  assert.equal(r.status, "patched");
  assert.equal(r.text, `var X = class {\n  s = Status2.D; /* ${MARK} */ t = Status2.C;\n}`);
  assert.deepEqual(r.anchors, [{ name: "a", offset: 0, captures: { S: "Status2" } }]);
});

test("an identifier is taken whole: no backtracking into a shorter one", () => {
  const parts = parseAnchor("a", "x {{A}}2;");
  assert.equal(findAnchor("x abc2;", parts).length, 0);
  assert.equal(findAnchor("x abc 2;", parts).length, 0);
});

test("a name used twice must capture the same identifier", () => {
  const parts = parseAnchor("a", "({{A}}, {{A}})");
  assert.equal(findAnchor("(a1, a1)", parts).length, 1);
  assert.equal(findAnchor("(a1, a2)", parts).length, 0);
});

test("zero or several matches refuse the file, naming the anchor", () => {
  const m = manifest([["first", ["f("], `f( // ${MARK}`], ["second", ["g({{A}})"], `g({{A}}) // ${MARK}`]]);
  assert.throws(() => applyAnchors("f(g(1)", m), /^Error: anchor `second` matched 0 times \(expected exactly once\)$/);
  assert.throws(() => applyAnchors("f( g(a) g(b)", m), /^Error: anchor `second` matched 2 times \(expected exactly once\)$/);
  assert.throws(() => applyAnchors("g(a) f( f(", m), /^Error: anchor `first` matched 2 times/);
});

test("overlapping anchors are refused", () => {
  const m = manifest([["x", ["abc"], `abc${MARK}`], ["y", ["bcd"], `bcd${MARK}`]]);
  assert.throws(() => applyAnchors("abcd", m), /^Error: anchors `x` and `y` overlap$/);
});

test("a file holding the marker is already patched and left alone", () => {
  const m = manifest([["a", ["f();"], `f(); // ${MARK}`]]);
  const once = applyAnchors("f();\n", m);
  const twice = applyAnchors(once.text, m);
  assert.equal(twice.status, "already-patched");
  assert.equal(twice.text, once.text);
});

test("bad anchors are refused when the manifest is read", () => {
  assert.throws(() => parseAnchor("a", "{{A}} = 1"), /must start and end with literal text/);
  assert.throws(() => parseAnchor("a", "x {{A}}{{B}} y"), /two placeholders must be separated/);
  assert.throws(() => parseAnchor("a", "x {{a}} y"), /bad placeholder \{\{a\}\}/);
  assert.throws(() => manifest([["a", ["x"], "no marker"]]), /does not contain the patch marker/);
  assert.throws(() => manifest([["a", ["x"], `x {{B}} ${MARK}`]]), /a\.js uses \{\{B\}\}, which anchor `a` does not capture$/);
});
