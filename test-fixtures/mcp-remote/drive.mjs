// Drives a real mcp-remote over stdio, as a desktop host does, against the real
// TypeScript SDK stateful server (session-server.cjs), restarts the server
// mid-session and counts the calls that fail.
//
// Steps: initialize, notifications/initialized, tools/list, 2 tools/call; restart
// the server (every session is lost); 3 tools/call one after another; restart
// again; 3 tools/call at once (they must share one new session); then 4 calls
// the server fails without losing the session (HTTP 500, HTTP 400 "Invalid
// params", a JSON-RPC error, a cut connection): each must reach the host as an
// error and reach the server exactly once (never sent twice). Every call has
// its own deadline (a call not answered in time counts as hung, and as failed);
// the whole run has one too. Every child is killed at the end, whatever happens.
//
// argv: --package <installed mcp-remote folder> --sdk <TS SDK prefix> --answer <404|400|401>
//       [--node PATH] [--call-timeout-ms N] [--log FILE]
//       [--bridge JSON]  another stdio bridge to drive instead of mcp-remote: a JSON array
//                        [program, args...] where "{url}" is the server's URL (the ai-sdk-mcp
//                        target's host: test-fixtures/ai-sdk-mcp/prove.mjs); --package is then unused
//       [--settle-ms N]  wait N ms after the first restart before the one-by-one calls, so a
//                        client's GET stream meets the restarted server first (default 0)
// stdout: one JSON object: { answer, failed, hung, calls, sessions_after_restart,
//         not_session_loss: { kind: { answered, arrivals } }, ... }
// exit: 0 when the run completed (whatever it counted), 2 on bad arguments,
//       3 when the harness itself could not run (server or bridge would not start).
import { spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const pkg = opt("--package");
const sdkPrefix = opt("--sdk");
const answer = opt("--answer");
const node = opt("--node", process.execPath);
const callTimeoutMs = Number(opt("--call-timeout-ms", "8000"));
const logFile = opt("--log");
const bridgeCommand = opt("--bridge") ? JSON.parse(opt("--bridge")) : undefined;
const settleMs = Number(opt("--settle-ms", "0"));
if ((!pkg && !bridgeCommand) || !sdkPrefix || !["404", "400", "401"].includes(answer)) {
  console.error("usage: drive.mjs --package DIR --sdk PREFIX --answer 404|400|401 [--node PATH] [--call-timeout-ms N] [--log FILE]");
  process.exit(2);
}
const RUN_DEADLINE_MS = 120_000;
const here = dirname(fileURLToPath(import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "mcpatch-mcp-remote-"));
const log = logFile ? createWriteStream(logFile) : null;
const note = (line) => log?.write(`${new Date().toISOString()} ${line}\n`);
const children = new Set();

function killAll() {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
}
process.on("exit", () => {
  killAll();
  rmSync(scratch, { recursive: true, force: true });
});
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => process.exit(130));
const runTimer = setTimeout(() => {
  console.error(`drive.mjs: the run took longer than ${RUN_DEADLINE_MS} ms; killing every child`);
  process.exit(3);
}, RUN_DEADLINE_MS);

// ---- the server -------------------------------------------------------------------
let server;
const sessions = [];
let initializeWithSession = 0;
const arrivals = new Map();
function startServer(port) {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [join(here, "session-server.cjs"), sdkPrefix, String(port), answer], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(child);
    const lines = createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error("the server did not listen within 15 s")), 15_000);
    lines.on("line", (line) => {
      note(`server: ${line}`);
      const m = /^listening (\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
      const s = /^session issued (\S+)/.exec(line);
      if (s) sessions.push(s[1]);
      if (line.startsWith("initialize with session ")) initializeWithSession++;
      const a = /^arrival (\S+)/.exec(line);
      if (a) arrivals.set(a[1], (arrivals.get(a[1]) ?? 0) + 1);
    });
    child.stderr.on("data", (d) => note(`server stderr: ${String(d).trimEnd()}`));
    child.on("exit", (code, signal) => {
      note(`server exited ${code ?? signal}`);
      clearTimeout(timer);
      reject(new Error(`the server exited (${code ?? signal}) before it listened`));
    });
    server = child;
  });
}
async function stopServer() {
  const child = server;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

// ---- the bridge, driven as a host drives it ----------------------------------------
let bridge;
const waiting = new Map();
let nextId = 1;
let bridgeStderr = "";
function startBridge(url) {
  const [program, ...programArgs] = bridgeCommand
    ? bridgeCommand.map((a) => a.replaceAll("{url}", url))
    : [node, join(pkg, "dist", "proxy.js"), url, "--transport", "http-only"];
  bridge = spawn(program, programArgs, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, MCP_REMOTE_CONFIG_DIR: join(scratch, "mcp-auth"), HOME: scratch, BROWSER: "false" },
  });
  children.add(bridge);
  createInterface({ input: bridge.stdout }).on("line", (line) => {
    note(`bridge -> host: ${line.slice(0, 400)}`);
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    const settle = waiting.get(message.id);
    if (settle) {
      waiting.delete(message.id);
      settle(message);
    }
  });
  bridge.stderr.on("data", (d) => {
    bridgeStderr += d;
    for (const l of String(d).trimEnd().split("\n")) note(`bridge stderr: ${l}`);
  });
  bridge.on("exit", (code, signal) => note(`bridge exited ${code ?? signal}`));
}
function request(method, params, timeoutMs = callTimeoutMs) {
  const id = nextId++;
  const line = JSON.stringify({ jsonrpc: "2.0", id, method, params });
  note(`host -> bridge: ${line}`);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      resolve({ hung: true });
    }, timeoutMs);
    waiting.set(id, (message) => {
      clearTimeout(timer);
      resolve(message);
    });
    bridge.stdin.write(line + "\n");
  });
}
function notify(method, params) {
  bridge.stdin.write(JSON.stringify({ jsonrpc: "2.0", method, params }) + "\n");
}

// ---- the run ------------------------------------------------------------------------
const calls = [];
let failed = 0;
let hung = 0;
async function call(phase, text) {
  const started = Date.now();
  const reply = await request("tools/call", { name: "echo", arguments: { text } });
  const ok = !reply.hung && !reply.error && reply.result?.content?.[0]?.text === text && !reply.result?.isError;
  if (!ok) failed++;
  if (reply.hung) hung++;
  const outcome = reply.hung ? "hung" : ok ? "ok" : `error: ${JSON.stringify(reply.error ?? reply.result).slice(0, 300)}`;
  calls.push({ phase, ms: Date.now() - started, outcome });
  return ok;
}

let result;
try {
  const url = await startServer(0);
  const port = new URL(url).port;
  startBridge(url);
  const init = await request(
    "initialize",
    { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "mcpatch-host", version: "1.0.0" } },
    30_000,
  );
  if (init.hung || init.error) throw new Error(`initialize failed: ${JSON.stringify(init.error ?? "no answer in 30 s")}`);
  notify("notifications/initialized");
  const list = await request("tools/list", {}, 15_000);
  const tools = list.result?.tools?.map((t) => t.name) ?? [];
  if (!tools.includes("echo")) throw new Error(`tools/list did not list echo: ${JSON.stringify(list).slice(0, 300)}`);
  for (let i = 0; i < 2; i++) await call("before restart", `before-${i}`);
  if (failed) throw new Error(`calls failed before any restart: ${JSON.stringify(calls)}`);

  await stopServer();
  await startServer(port);
  if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
  const firstSessions = sessions.length;
  for (let i = 0; i < 3; i++) await call("after restart, one by one", `after-${i}`);
  const sessionsAfterFirst = sessions.length - firstSessions;

  await stopServer();
  await startServer(port);
  const secondSessions = sessions.length;
  await Promise.all([0, 1, 2].map((i) => call("after restart, three at once", `together-${i}`)));
  const sessionsAfterSecond = sessions.length - secondSessions;

  // Failures that are not session loss: an error for the host, one arrival each.
  const notLost = {};
  for (const kind of ["fail-500", "fail-400", "fail-jsonrpc", "fail-cut"]) {
    const reply = await request("tools/call", { name: "echo", arguments: { text: kind } });
    notLost[kind] = { answered: reply.hung ? "hung" : reply.error || reply.result?.isError ? "error" : "ok" };
  }
  // The server logs an arrival on its stdout and the bridge answers on another pipe: under load
  // the answer can come first (seen with fail-cut), so the arrivals are read once the server's
  // output has caught up.
  await new Promise((resolve) => setTimeout(resolve, 500));
  for (const kind of Object.keys(notLost)) notLost[kind].arrivals = arrivals.get(kind) ?? 0;

  result = {
    answer: Number(answer),
    calls: calls.length,
    failed,
    hung,
    sessions_after_restart: [sessionsAfterFirst, sessionsAfterSecond],
    initialize_with_session: initializeWithSession,
    not_session_loss: notLost,
    detail: calls,
  };
} catch (error) {
  console.error(`drive.mjs: ${error.message}`);
  console.error(bridgeStderr.split("\n").slice(-15).join("\n"));
  clearTimeout(runTimer);
  process.exit(3);
}
clearTimeout(runTimer);
console.log(JSON.stringify(result));
bridge.stdin.end();
killAll();
process.exit(0);
