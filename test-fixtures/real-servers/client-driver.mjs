// Drives a REAL installed @deepseek-ai/dsh-mcp-client against one MCP server, for the
// real-server tests. Loads its lib/index.js by file URL (so the install's own MCP SDK
// resolves) with the host contract mcpatch's verify harness uses: apply(ctx, config),
// tools registered as mcp__<serverName>__<tool>, execute(args, {signal}).
// Then takes one JSON command per stdin line:
//   {"call": "<tool>", "args": {...}}   one tool call
//   {"quit": true}                      dispose the client and exit
// and reports JSON lines on stdout: {"event": "ready", "tools": [...]},
// {"event": "call", "ok": true, "text": ...} or {"event": "call", "ok": false, "error": ...},
// {"event": "log", ...} for the client's own log, {"event": "fatal", "error": ...}.
// argv: <lib/index.js> <config JSON: url, serverName, callTimeoutMs, reconnect>
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [target, configJson] = process.argv.slice(2);
const cfg = JSON.parse(configJson);
const started = Date.now();
const emit = (event, data = {}) =>
  process.stdout.write(JSON.stringify({ event, t: Date.now() - started, ...data }) + "\n");

const tools = new Map();
const disposers = [];
const log = (level) => (msg) => emit("log", { level, msg: String(msg) });
const ctx = {
  root: {},
  tools: {
    register(def) {
      tools.set(def.name, def);
      return () => {
        if (tools.get(def.name) === def) tools.delete(def.name);
      };
    },
  },
  logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
  effect(fn) {
    const d = fn();
    if (typeof d === "function") disposers.push(d);
    return d;
  },
  get() {
    return undefined;
  },
};

let mod;
try {
  mod = await import(pathToFileURL(target).href);
  await mod.apply(ctx, {
    transport: "streamable-http",
    serverName: cfg.serverName,
    url: cfg.url,
    headers: {},
    toolCallTimeoutMs: cfg.callTimeoutMs,
    failOnStartupError: true,
    reconnect: cfg.reconnect,
  });
} catch (e) {
  emit("fatal", { error: String(e?.stack ?? e) });
  process.exit(3);
}
emit("ready", { tools: [...tools.keys()].sort() });

async function call(name, args) {
  const def = tools.get(`mcp__${cfg.serverName}__${name}`);
  if (!def) return emit("call", { ok: false, error: "tool not registered" });
  try {
    const r = await def.execute(args, { signal: AbortSignal.timeout(cfg.callTimeoutMs) });
    const text = Array.isArray(r?.content) ? r.content.map((c) => c?.text ?? "").join("") : "";
    if (r?.isError) emit("call", { ok: false, error: text });
    else emit("call", { ok: true, text });
  } catch (e) {
    emit("call", { ok: false, error: String(e?.message ?? e) });
  }
}

// One command at a time, in order.
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  if (cmd.quit) break;
  await call(cmd.call, cmd.args ?? {});
}
for (const d of disposers.reverse()) {
  try {
    await d();
  } catch {}
}
process.exit(0);
