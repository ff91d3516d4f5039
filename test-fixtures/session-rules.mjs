// Drives ONE plugin instance of a real @deepseek-ai/dsh-mcp-client lib/index.js
// step by step for the seamless-recovery rule tests, and reports what its caller
// and its logger saw as JSON lines on stdout.
// argv: <file URL of lib/index.js> <config JSON>
// config: { url, toolCallTimeoutMs, reconnect, steps: [...] } where a step is
//   { "call": tool, "args": {...}, "id": "c1", "abortMs": n? }   call and wait for it
//   { "spawn": tool, "args": {...}, "id": "c1", "abortMs": n? }  call without waiting
//   { "wait": "label" }   print {"event":"waiting","label"} and wait for a line on stdin
//   { "settle": true }    wait for every spawned call
import { createInterface } from "node:readline";

const [targetUrl, configJson] = process.argv.slice(2);
const cfg = JSON.parse(configJson);
const started = Date.now();
const emit = (event, data = {}) => process.stdout.write(JSON.stringify({ event, t: Date.now() - started, ...data }) + "\n");
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

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

const mod = await import(targetUrl);
await mod.apply(ctx, {
  transport: "streamable-http",
  serverName: "fake",
  url: cfg.url,
  headers: {},
  toolCallTimeoutMs: cfg.toolCallTimeoutMs,
  failOnStartupError: true,
  ...(cfg.reconnect ? { reconnect: cfg.reconnect } : {}),
});
emit("ready", { tools: [...tools.keys()].sort() });

async function call(step) {
  const def = tools.get(`mcp__fake__${step.call ?? step.spawn}`);
  const start = Date.now();
  const signal = step.abortMs === undefined ? new AbortController().signal : AbortSignal.timeout(step.abortMs);
  try {
    if (!def) throw new Error("tool not registered");
    await def.execute({ ...step.args, call_id: step.id }, { signal });
    emit("call", { id: step.id, ok: true, ms: Date.now() - start });
  } catch (e) {
    emit("call", { id: step.id, ok: false, ms: Date.now() - start, error: String(e?.message ?? e), name: e?.name ?? null });
  }
}

const spawned = [];
for (const step of cfg.steps) {
  if (step.call) await call(step);
  else if (step.spawn) spawned.push(call(step));
  else if (step.wait) {
    emit("waiting", { label: step.wait });
    await lines.next();
  } else if (step.settle) await Promise.all(spawned.splice(0));
}
await Promise.all(spawned);
emit("done");
for (const d of disposers.reverse()) {
  try { await d(); } catch {}
}
process.exit(0);
