// mcpatch verify harness: loads a REAL @deepseek-ai/dsh-mcp-client lib/index.js
// (by file URL, so the install's own dependencies resolve), gives it a minimal
// host context, points it at mcpatch's fake MCP server, drives tool calls as
// the scenario plan says, and reports what happened as JSON lines on stdout.
// It talks to nothing but the fake server.
const [targetUrl, configJson] = process.argv.slice(2);
const cfg = JSON.parse(configJson);
const started = Date.now();
const emit = (event, data = {}) => process.stdout.write(JSON.stringify({ event, t: Date.now() - started, ...data }) + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let shim = false;
if (typeof Promise.withResolvers !== "function") {
  // Spec-equivalent shim (ES2024 Promise.withResolvers) so the check can run on Node < 22.
  Promise.withResolvers = function withResolvers() {
    let resolve, reject;
    const promise = new this((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
  shim = true;
}
emit("node", { version: process.version, shim });

const tools = new Map();
const disposers = [];
const log = (level) => (msg) => emit("log", { level, msg: String(msg) });
const ctx = {
  root: {},
  tools: {
    register(def) {
      tools.set(def.name, def);
      return () => { if (tools.get(def.name) === def) tools.delete(def.name); };
    },
  },
  logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
  effect(fn) { const d = fn(); if (typeof d === "function") disposers.push(d); return d; },
  get() { return undefined; },
};

async function call(name, args) {
  const def = tools.get(`mcp__${cfg.serverName}__${name}`);
  const at = Date.now() - started;
  if (!def) { emit("call", { name, at, ok: false, error: "tool not registered" }); return false; }
  try {
    const r = await def.execute(args, { signal: AbortSignal.timeout(cfg.callTimeoutMs) });
    const text = Array.isArray(r?.content) ? r.content.map((c) => c?.text ?? "").join("") : "";
    emit("call", { name, at, ok: true, text });
    return true;
  } catch (e) {
    emit("call", { name, at, ok: false, error: String(e?.message ?? e) });
    return false;
  }
}

async function control(what) {
  const r = await fetch(`${cfg.controlBase}/control/${what}`, { method: "POST" });
  emit("control", { what, status: r.status });
}

async function pollUntilRecovered() {
  const deadline = Date.now() + cfg.deadlineMs;
  while (Date.now() < deadline) {
    if (await call("echo", { text: "after" })) { emit("recovered"); return; }
    await sleep(cfg.pollMs);
  }
  emit("deadline");
}

let mod;
try {
  mod = await import(targetUrl);
} catch (e) {
  emit("fatal", { error: `cannot load ${targetUrl}: ${e?.stack ?? e}` });
  process.exit(3);
}
const config = {
  transport: "streamable-http",
  serverName: cfg.serverName,
  url: cfg.url,
  headers: {},
  toolCallTimeoutMs: cfg.callTimeoutMs,
  failOnStartupError: true,
  ...(cfg.reconnect ? { reconnect: cfg.reconnect } : {}),
};
try {
  await mod.apply(ctx, config);
} catch (e) {
  emit("fatal", { error: `apply() failed: ${e?.stack ?? e}` });
  process.exit(3);
}
emit("ready", { tools: [...tools.keys()].sort() });

await call("echo", { text: "before" });
switch (cfg.plan) {
  case "invalidate":
    await control("invalidate");
    await pollUntilRecovered();
    break;
  case "idle":
    await sleep(cfg.idleMs);
    emit("idled", { ms: cfg.idleMs });
    await pollUntilRecovered();
    break;
  case "restart":
    await control("restart");
    await sleep(400);
    await pollUntilRecovered();
    break;
  case "ordinary":
    for (const kind of ["http500", "http400", "jsonrpc", "tool"]) await call("fail", { kind });
    await sleep(cfg.settleMs);
    await call("add", { a: 2, b: 3 });
    await call("echo", { text: "after" });
    break;
  case "settle":
    await sleep(cfg.settleMs);
    await call("echo", { text: "after" });
    break;
  default:
    emit("fatal", { error: `unknown plan ${cfg.plan}` });
}
emit("tools", { tools: [...tools.keys()].sort() });
for (const d of disposers.reverse()) {
  try { await d(); } catch {}
}
emit("done");
process.exit(0);
