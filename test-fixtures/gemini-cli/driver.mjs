// Proves mcpatch's gemini-cli patch on a real installed @google/gemini-cli: runs the real CLI
// headless (`node bundle/gemini.js -p … --yolo -o json`) with an isolated HOME whose
// settings.json points one MCP server entry at a local stateful TypeScript SDK server
// (mcp-server.cjs), and GOOGLE_GEMINI_BASE_URL at a fake Gemini API served here on
// 127.0.0.1. The fake model asks for the MCP tool `echo` three times (texts call-1..call-3);
// after the first tool result it restarts the MCP server on the same port, so calls 2 and 3
// meet a server that no longer knows the CLI's session and answers 404, 400 or 401 (the
// variant). No real model, loopback only (with --netns the whole run is inside a fresh
// network namespace whose only interface is lo), bounded in time, every child killed.
// With --parallel, the model asks for calls 2 and 3 in one answer (two function calls), so the
// CLI may send them together on the lost session.
// With --stop, the MCP server is stopped after the first call and its port then resets every
// connection once it has read the request (logged "reset <POST json-rpc method | GET …>"):
// calls 2 and 3 meet a network error, which a patched CLI must report unchanged, sent once.
// With --slow, the server is not restarted, but answers calls 2 and 3 only after 6 s while the
// CLI's timeout for this server is 2 s: both time out, which a patched CLI must report
// unchanged, sent once (server log "call echo call-N" once each).
// argv: <package dir> <404|400|401> [--node <node binary>] [--sdk <ts sdk prefix>]
//       [--timeout-ms N] [--netns] [--parallel] [--stop] [--slow] [--keep]
// stdout: one JSON object: {version, variant, calls: [{n, ok, text}], answered, exit_code,
//         timed_out, restarts, server: {sessions_issued, tool_calls_run, lost_tool_calls,
//         reset_tool_calls, initialize_after_restart, tools_list_after_restart},
//         cli_tool_stats, mcp: [server log lines], cli_stderr_tail}
// exit: 0 when the run completed (whatever the verdict), 1 on a harness failure.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, realpathSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  if (i < 0) return dflt;
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
};
const flag = (name) => {
  const i = argv.indexOf(name);
  if (i >= 0) argv.splice(i, 1);
  return i >= 0;
};
const repo = path.resolve(here, "../..");
const nodeBin = path.resolve(opt("--node", process.execPath));
const sdkPrefix = opt("--sdk", path.join(repo, ".cache/mcp-servers/ts-sdk-1.32.2"));
const timeoutMs = Number(opt("--timeout-ms", "120000"));
const netns = flag("--netns");
const keep = flag("--keep");
const parallel = flag("--parallel");
const stop = flag("--stop");
const slow = flag("--slow");
const [pkgArg, variant] = argv;
if (!pkgArg || !["404", "400", "401"].includes(variant)) {
  console.error("usage: driver.mjs <package dir> <404|400|401> [--node N] [--sdk P] [--timeout-ms N] [--netns] [--parallel] [--stop] [--slow] [--keep]");
  process.exit(2);
}

if (netns && !process.env.MCPATCH_GEMINI_IN_NETNS) {
  // Re-run this driver in a new user + network namespace: only lo exists, so nothing the CLI
  // does can leave the machine.
  const self = fileURLToPath(import.meta.url);
  const rest = process.argv.slice(2).filter((a) => a !== "--netns");
  const r = spawnSync(
    "unshare",
    ["-rn", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', process.execPath, self, ...rest],
    { stdio: "inherit", env: { ...process.env, MCPATCH_GEMINI_IN_NETNS: "1" } },
  );
  process.exit(r.status ?? 1);
}

const pkgDir = realpathSync(pkgArg);
const pkg = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8"));
const bin = path.join(pkgDir, typeof pkg.bin === "string" ? pkg.bin : pkg.bin.gemini);
const work = mkdtempSync(path.join(tmpdir(), "mcpatch-gemini-"));
const home = path.join(work, "home");
const project = path.join(work, "project");
mkdirSync(path.join(home, ".gemini"), { recursive: true, mode: 0o700 });
mkdirSync(project, { recursive: true });

const children = new Set();
const killAll = () => {
  for (const c of children) {
    try {
      process.kill(-c.pid, "SIGKILL");
    } catch {}
  }
};
process.on("exit", () => {
  killAll();
  if (!keep) rmSync(work, { recursive: true, force: true });
});
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, () => process.exit(1));

// ---- the MCP server, restartable on the same port ----
const mcpLog = [];
let mcpPort = 0;
let mcp;
function startMcp() {
  return new Promise((resolve, reject) => {
    const child = spawn(nodeBin, [path.join(here, "mcp-server.cjs"), sdkPrefix, variant, String(mcpPort), slow ? "6000" : "0"], {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    children.add(child);
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        mcpLog.push(line);
        const m = /^listening http:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
        if (m) {
          mcpPort = Number(m[1]);
          resolve(child);
        }
      }
    });
    child.stderr.on("data", (d) => mcpLog.push(`stderr: ${String(d).trimEnd()}`));
    child.on("exit", (code, sig) => {
      children.delete(child);
      reject(new Error(`MCP server exited before listening (${code ?? sig})`));
    });
    child.on("error", (e) => reject(new Error(`cannot start the MCP server: ${e.message}`)));
  });
}
let resetter;
function resetPort() {
  resetter = createNetServer((sock) => {
    let buf = "";
    sock.on("data", (d) => {
      buf += d;
      const head = buf.indexOf("\r\n\r\n");
      if (head < 0) return;
      const verb = buf.slice(0, buf.indexOf(" "));
      const rpc = /"method"\s*:\s*"([^"]+)"/.exec(buf.slice(head));
      if (verb === "POST" && !rpc) return; // the body has not arrived yet
      mcpLog.push(`reset ${verb}${rpc ? ` ${rpc[1]}` : ""}`);
      sock.resetAndDestroy();
    });
    sock.on("error", () => {});
  });
  return new Promise((r) => resetter.listen(mcpPort, "127.0.0.1", r));
}
async function restartMcp() {
  const old = mcp;
  const gone = new Promise((r) => old.on("exit", r));
  process.kill(-old.pid, "SIGKILL");
  await gone;
  if (stop) {
    mcpLog.push("-- stopped --");
    await resetPort();
    return;
  }
  mcpLog.push("-- restarted --");
  mcp = await startMcp();
}

// ---- the fake Gemini API ----
const calls = []; // index n-1: {n, ok, text}
let restarts = 0;
let unknownRequests = [];
const TOOL_TEXT = (n) => `call-${n}`;
function echoName(body) {
  for (const t of body.tools ?? [])
    for (const f of t.functionDeclarations ?? []) if (/(^|_)echo$/.test(f.name)) return f.name;
  return undefined;
}
function functionResponses(body) {
  const out = [];
  for (const c of body.contents ?? [])
    for (const p of c.parts ?? []) if (p.functionResponse && /(^|_)echo$/.test(p.functionResponse.name)) out.push(p.functionResponse);
  return out;
}
const candidate = (parts) => ({
  candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
  usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
  modelVersion: "fake",
});
async function answer(body) {
  const name = echoName(body);
  if (!name) {
    // An auxiliary request (routing, next-speaker check, ...): a neutral JSON text.
    return candidate([{ text: JSON.stringify({ reasoning: "fake", next_speaker: "user", model_choice: "flash", complexity_reasoning: "fake", complexity_score: 1 }) }]);
  }
  const responses = functionResponses(body);
  responses.forEach((r, i) => {
    const text = JSON.stringify(r.response);
    calls[i] ??= { n: i + 1, ok: text.includes(TOOL_TEXT(i + 1)) && !/"error"/.test(text), text: text.slice(0, 400) };
  });
  if (responses.length === 1 && restarts === 0 && !slow) {
    restarts++;
    await restartMcp();
  }
  if (parallel && responses.length === 1) {
    return candidate([2, 3].map((n) => ({ functionCall: { name, args: { text: TOOL_TEXT(n) } } })));
  }
  if (responses.length < 3) {
    return candidate([{ functionCall: { name, args: { text: TOOL_TEXT(responses.length + 1) } } }]);
  }
  return candidate([{ text: "All three calls are done." }]);
}
const api = createServer((req, res) => {
  let raw = "";
  req.on("data", (d) => (raw += d));
  req.on("end", async () => {
    try {
      const url = new URL(req.url, "http://x");
      if (/:countTokens$/.test(url.pathname)) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ totalTokens: 10 }));
        return;
      }
      const m = /:(streamGenerateContent|generateContent)$/.exec(url.pathname);
      if (req.method !== "POST" || !m) {
        unknownRequests.push(`${req.method} ${url.pathname}`);
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"code":404,"message":"fake api: not here"}}');
        return;
      }
      const out = await answer(JSON.parse(raw || "{}"));
      if (m[1] === "streamGenerateContent") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(`data: ${JSON.stringify(out)}\r\n\r\n`);
      } else {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
      }
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  });
});

try {
  mcp = await startMcp();
} catch (e) {
  console.error(`error: ${e.message}\n${mcpLog.join("\n")}`);
  process.exit(1);
}
await new Promise((r) => api.listen(0, "127.0.0.1", r));
const apiUrl = `http://127.0.0.1:${api.address().port}`;

const settings = {
  security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  mcpServers: { fx: { httpUrl: `http://127.0.0.1:${mcpPort}/mcp`, timeout: slow ? 2000 : 15000, trust: true } },
};
writeFileSync(path.join(home, ".gemini", "settings.json"), JSON.stringify(settings, null, 2));

const env = {
  PATH: process.env.PATH,
  HOME: home,
  USERPROFILE: home,
  TMPDIR: work,
  GEMINI_API_KEY: "fake-key-for-loopback",
  GOOGLE_GEMINI_BASE_URL: apiUrl,
  GEMINI_CLI_NO_RELAUNCH: "true",
  NO_COLOR: "1",
  NO_BROWSER: "1",
  CI: "1",
};
const prompt = "Call the echo tool three times, with texts call-1, call-2 and call-3.";
const cli = spawn(nodeBin, [bin, "-p", prompt, "--yolo", "-o", "json"], {
  cwd: project,
  env,
  stdio: ["ignore", "pipe", "pipe"],
  detached: true,
});
children.add(cli);
let stdout = "";
let stderr = "";
cli.stdout.on("data", (d) => (stdout += d));
cli.stderr.on("data", (d) => (stderr += d));
let timedOut = false;
const timer = setTimeout(() => {
  timedOut = true;
  try {
    process.kill(-cli.pid, "SIGKILL");
  } catch {}
}, timeoutMs);
const exitCode = await new Promise((r) => cli.on("exit", (code, sig) => r(code ?? sig)));
children.delete(cli);
clearTimeout(timer);
try {
  process.kill(-cli.pid, "SIGKILL"); // stragglers of the CLI's process group
} catch {}

let cliJson;
try {
  cliJson = JSON.parse(stdout);
} catch {}
const result = {
  version: pkg.version,
  variant: Number(variant),
  parallel,
  stop,
  slow,
  calls,
  answered: calls.filter((c) => c.ok).length,
  exit_code: exitCode,
  timed_out: timedOut,
  restarts,
  server: (() => {
    const count = (re, lines = mcpLog) => lines.filter((l) => re.test(l)).length;
    const cut = mcpLog.findIndex((l) => /^-- (restarted|stopped) --$/.test(l));
    const after = cut < 0 ? [] : mcpLog.slice(cut);
    return {
      sessions_issued: count(/^session issued /),
      tool_calls_run: count(/^call echo /),
      lost_tool_calls: count(/^lost \d+ POST tools\/call /),
      reset_tool_calls: count(/^reset POST tools\/call$/),
      initialize_after_restart: count(/^rpc initialize$/, after),
      tools_list_after_restart: count(/^rpc tools\/list$/, after),
    };
  })(),
  cli_tool_stats: cliJson?.stats?.tools ? { totalCalls: cliJson.stats.tools.totalCalls, totalSuccess: cliJson.stats.tools.totalSuccess, totalFail: cliJson.stats.tools.totalFail } : undefined,
  unknown_api_requests: unknownRequests,
  mcp: mcpLog,
  cli_stdout_head: cliJson ? undefined : stdout.slice(0, 2000),
  cli_stderr_tail: stderr.slice(-3000),
};
console.log(JSON.stringify(result, null, 2));
api.close();
resetter?.close();
if (keep) console.error(`kept ${work}`);
process.exit(0); // the exit handler kills every child and removes the scratch folder
