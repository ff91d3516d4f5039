// Finds the bundle chunk of an installed @google/gemini-cli that really holds the loaded
// `McpClient` class: a release ships 3-4 copies of it in different hashed chunks, and only
// the one reachable from the package's bin entry is ever loaded. This is the reference for
// mcpatch's Rust port: start at package.json's `bin` file, follow every relative import
// specifier (static `import … from "./x.js"`, `import "./x.js"`, `export … from "./x.js"`,
// and dynamic `import("./x.js")` with a string literal), breadth-first, and report the
// reachable files that declare the class.
// argv: <package dir> [class declaration, default "var McpClient = class {"] [--all]
// stdout: the package-relative path of the one reachable chunk holding the declaration
//         (--all: one line per reachable file, "<path>\t<static|dynamic>\t<has declaration>")
// exit 1 (with a message on stderr) when zero or more than one reachable file holds it.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const all = args.includes("--all");
const [pkgDir, decl = "var McpClient = class {"] = args.filter((a) => a !== "--all");
if (!pkgDir) {
  console.error("usage: reachable.mjs <package dir> [declaration] [--all]");
  process.exit(2);
}
const root = realpathSync(pkgDir);
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin?.gemini;
if (!bin) {
  console.error(`error: ${root}/package.json has no bin entry "gemini"`);
  process.exit(1);
}

// Static imports: esbuild writes them as one block at the top of each chunk, after an
// optional shebang and the banner line gemini's build adds ("const require = …"); the
// block is read statement by statement and ends at the first other statement, so code
// examples in strings and comments further down are never taken for imports.
const HEAD = /(?:\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/|(?:import|export)\s*(?:[\w$*{},\s]*?\s*from\s*)?["']([^"'\n]+)["'];?)/y;
function staticImports(src) {
  let i = 0;
  if (src.startsWith("#!")) i = src.indexOf("\n") + 1;
  const banner = "const require = ";
  if (src.startsWith(banner, i)) i = src.indexOf("\n", i) + 1;
  const specs = [];
  for (;;) {
    HEAD.lastIndex = i;
    const m = HEAD.exec(src);
    if (!m || m[0].length === 0) break;
    if (m[1] !== undefined) specs.push(m[1]);
    i = HEAD.lastIndex;
  }
  return specs;
}
// Dynamic imports: `import("./x.js")` with a relative string literal, anywhere in the file.
// JSDoc types such as import('./list.d.ts') look the same; only specifiers naming an
// existing .js file of the package are followed.
const DYNAMIC = /\bimport\(\s*["'](\.{1,2}\/[^"'\n]+\.js)["']\s*\)/g;

const seen = new Map(); // abs path -> "static" | "dynamic" (how it was first reached)
const queue = [[path.resolve(root, bin), "static"]];
while (queue.length) {
  const [file, how] = queue.shift();
  if (seen.has(file)) continue;
  if (!file.startsWith(root + path.sep)) {
    console.error(`error: ${file} is outside the package ${root}`);
    process.exit(1);
  }
  seen.set(file, how);
  const src = readFileSync(file, "utf8");
  for (const spec of staticImports(src)) {
    if (!spec.startsWith("./") && !spec.startsWith("../")) continue; // node:… and packages
    const target = path.resolve(path.dirname(file), spec);
    if (!existsSync(target)) {
      console.error(`error: ${path.relative(root, file)} imports ${spec}, which does not exist`);
      process.exit(1);
    }
    queue.push([target, how]);
  }
  for (const m of src.matchAll(DYNAMIC)) {
    const target = path.resolve(path.dirname(file), m[1]);
    if (existsSync(target)) queue.push([target, "dynamic"]);
  }
}

const holders = [];
for (const [file, how] of seen) {
  const has = readFileSync(file, "utf8").includes(decl);
  const rel = path.relative(root, file);
  if (all) console.log(`${rel}\t${how}\t${has}`);
  if (has) holders.push(rel);
}
if (holders.length !== 1) {
  console.error(`error: ${holders.length} files reachable from ${bin} declare ${JSON.stringify(decl)}: ${holders.join(", ") || "none"}`);
  process.exit(1);
}
if (!all) console.log(holders[0]);
