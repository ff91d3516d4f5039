// Proves the mcp-sdk patch with a real client library from a real project (fetch.sh's
// .cache/mcp-sdk/projects/<name>) against the real TypeScript SDK stateful server
// (test-fixtures/mcp-remote/session-server.cjs with --no-id-400: requests that carry no session id answered 400),
// restarted mid-session as a new process on the same port.
// With --patched the project is copied (hard links) and every copy of @modelcontextprotocol/sdk and
// @modelcontextprotocol/client in its node_modules is patched with apply-anchors.mjs (the manifest's
// anchor sets), the way `mcpatch apply` patches them; without it the project runs as installed.
//
// Steps: connect, 1 call; restart; 3 calls at once (they must share one new initialize); restart;
// 3 calls one after another; then 3 calls the server fails on a live session without losing it
// (fail-500, fail-400 "Invalid params", fail-jsonrpc): each must fail and reach the server once.
// stdout: one JSON verdict {kind, project, answer, patched, verdict: SEAMLESS|STUCK|PARTIAL|BROKEN,
//   after_restart: {ok, failed}, new_sessions: [n per restart], initialize_with_session,
//   other_failures: {text: {ok, arrivals}}, sent_twice, calls: [...], errors: [...]}
//   SEAMLESS: every call after each restart answered, exactly one new session per restart, no
//   other failure answered ok or sent twice. STUCK: every call after the restarts failed.
// exit: 0 when the run completed (whatever its verdict), 2 on bad arguments, 3 when the harness
//   itself could not run (server or client would not start).
// argv: --kind KIND (library-client.mjs) --project DIR --answer 404|400|401 [--patched]
//       [--node PATH] [--sdk PREFIX of the server's SDK, default .cache/mcp-servers/ts-sdk-1.32.2]
//       [--call-timeout-ms N] [--log FILE] [--mutant FILE: patched, then this mutant of
//       test-fixtures/patch-mutants/mcp-sdk/ applied]
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { patchPackage } from "./apply-anchors.mjs";

const args = process.argv.slice(2);
const opt = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const kind = opt("--kind");
const project = opt("--project") && path.resolve(opt("--project"));
const answer = opt("--answer");
const mutant = opt("--mutant") && path.resolve(opt("--mutant"));
const patched = args.includes("--patched") || Boolean(mutant);
const node = opt("--node", process.execPath);
const sdk = path.resolve(opt("--sdk", path.join(repo, ".cache", "mcp-servers", "ts-sdk-1.32.2")));
const callTimeoutMs = opt("--call-timeout-ms", "8000");
const logFile = opt("--log");
if (!kind || !project || !["404", "400", "401"].includes(answer)) {
  console.error("usage: prove.mjs --kind KIND --project DIR --answer 404|400|401 [--patched] [--node PATH] [--sdk PREFIX] [--call-timeout-ms N] [--log FILE]");
  process.exit(2);
}
for (const [what, dir, how] of [
  ["project", project, "test-fixtures/mcp-sdk/fetch.sh"],
  ["server SDK", sdk, "scripts/fetch-fixtures.sh"],
]) {
  if (!existsSync(path.join(dir, ".done"))) {
    console.error(`prove.mjs: the ${what} ${dir} is not fetched (no .done); run ${how}`);
    process.exit(3);
  }
}
const log = logFile ? createWriteStream(logFile) : null;
const note = (s) => log?.write(`${new Date().toISOString()} ${s}\n`);
const scratch = mkdtempSync(path.join(tmpdir(), "mcpatch-sdk-prove-"));
const children = new Set();
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true });
});
for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(s, () => process.exit(130));
const fail = (why) => {
  console.error(`prove.mjs: ${why}`);
  process.exit(3);
};
setTimeout(() => fail("the run took longer than 180 s"), 180_000).unref();

/** Every @modelcontextprotocol/{sdk,client} package folder under a node_modules tree. */
function sdkCopies(nodeModules, found = []) {
  if (!existsSync(nodeModules)) return found;
  for (const name of readdirSync(nodeModules)) {
    if (name.startsWith(".")) continue;
    const dir = path.join(nodeModules, name);
    if (name.startsWith("@")) {
      for (const sub of readdirSync(dir)) {
        const pkg = path.join(dir, sub);
        if (name === "@modelcontextprotocol" && (sub === "sdk" || sub === "client")) found.push(pkg);
        sdkCopies(path.join(pkg, "node_modules"), found);
      }
    } else sdkCopies(path.join(dir, "node_modules"), found);
  }
  return found;
}

let runProject = project;
const patchedFiles = [];
if (patched) {
  runProject = path.join(scratch, "project");
  execFileSync("cp", ["-al", project, runProject]);
  const manifest = path.join(repo, "patches", "mcp-sdk", "manifest.json");
  const copies = sdkCopies(path.join(runProject, "node_modules"));
  if (copies.length === 0) fail(`no @modelcontextprotocol/sdk or client in ${project}/node_modules`);
  for (const pkg of copies) {
    let r;
    try {
      r = patchPackage(manifest, pkg, undefined, mutant);
    } catch (e) {
      fail(`cannot patch ${pkg}: ${e.message}`);
    }
    patchedFiles.push(...r.files.map((f) => ({ package: `${r.package}@${r.version}`, at: path.relative(runProject, pkg), ...f })));
  }
}

// The server: a process per phase, always on the same port.
let port = 0;
let server;
const servers = [];
function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [path.join(repo, "test-fixtures", "mcp-remote", "session-server.cjs"), sdk, String(port), answer, "--no-id-400"], { stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    const stats = { sessions: 0, initWithSession: 0, arrivals: {} };
    servers.push(stats);
    const timer = setTimeout(() => reject(new Error("the server did not listen within 20 s")), 20_000);
    createInterface({ input: child.stdout }).on("line", (line) => {
      note(`server: ${line}`);
      const m = /^listening (\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        port = Number(new URL(m[1]).port);
        resolve(m[1]);
      } else if (line.startsWith("session issued ")) stats.sessions++;
      else if (line.startsWith("initialize with session ")) stats.initWithSession++;
      else if (line.startsWith("arrival ")) stats.arrivals[line.slice(8)] = (stats.arrivals[line.slice(8)] ?? 0) + 1;
    });
    createInterface({ input: child.stderr }).on("line", (line) => note(`server stderr: ${line}`));
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (port === 0) reject(new Error(`the server exited (${code}) before listening`));
    });
    server = child;
  });
}
async function restart() {
  const old = server;
  await new Promise((resolve) => {
    old.once("exit", resolve);
    old.kill("SIGTERM");
  });
  return startServer();
}

let url;
try {
  url = await startServer();
} catch (e) {
  fail(e.message);
}
const client = spawn(node, [path.join(here, "library-client.mjs"), "--kind", kind, "--project", runProject, "--url", url, "--call-timeout-ms", callTimeoutMs], {
  stdio: ["pipe", "pipe", "pipe"],
});
children.add(client);
createInterface({ input: client.stderr }).on("line", (line) => note(`client stderr: ${line}`));
const waiting = [];
createInterface({ input: client.stdout }).on("line", (line) => {
  note(`client: ${line}`);
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  waiting.shift()?.(msg);
});
const next = () => new Promise((resolve) => waiting.push(resolve));
let n = 0;
const calls = (texts, atOnce) => {
  const p = next();
  client.stdin.write(JSON.stringify({ id: ++n, texts, at_once: atOnce }) + "\n");
  return p.then((m) => m.calls);
};

const ready = await Promise.race([next(), new Promise((r) => setTimeout(() => r({ ready: false, error: "not ready within 30 s" }), 30_000))]);
if (!ready.ready) fail(`the ${kind} client did not start: ${ready.error}`);
const all = [];
const first = await calls(["before-1"], false);
all.push(...first.map((c) => ({ phase: "before", ...c })));
await restart();
const r1 = await calls(["after-1a", "after-1b", "after-1c"], true);
all.push(...r1.map((c) => ({ phase: "after restart 1 (at once)", ...c })));
await restart();
const r2 = await calls(["after-2a", "after-2b", "after-2c"], false);
all.push(...r2.map((c) => ({ phase: "after restart 2 (one by one)", ...c })));
const others = await calls(["fail-500", "fail-400", "fail-jsonrpc"], false);
all.push(...others.map((c) => ({ phase: "other failures", ...c })));
client.stdin.end();
await new Promise((r) => (client.exitCode !== null ? r() : client.once("exit", r)));

const after = [...r1, ...r2];
const okAfter = after.filter((c) => c.ok).length;
const newSessions = servers.slice(1).map((s) => s.sessions);
const last = servers.at(-1);
const otherFailures = Object.fromEntries(others.map((c) => [c.text, { ok: c.ok, arrivals: last.arrivals[c.text] ?? 0, error: c.error }]));
const sentTwice = Object.values(otherFailures).some((o) => o.arrivals > 1);
const othersWrong = Object.values(otherFailures).some((o) => o.ok);
const initWithSession = servers.reduce((a, s) => a + s.initWithSession, 0);
let verdict;
if (!first[0].ok) verdict = "BROKEN";
else if (okAfter === after.length && newSessions.every((x) => x === 1) && !sentTwice && !othersWrong && initWithSession === 0) verdict = "SEAMLESS";
else if (okAfter === 0) verdict = "STUCK";
else verdict = "PARTIAL";
process.stdout.write(JSON.stringify({
  kind, project: path.relative(repo, project), answer: Number(answer), patched, verdict,
  after_restart: { ok: okAfter, failed: after.length - okAfter },
  new_sessions: newSessions, initialize_with_session: initWithSession,
  other_failures: otherFailures, sent_twice: sentTwice,
  patched_files: patchedFiles.length, calls: all,
}) + "\n", () => process.exit(0));
