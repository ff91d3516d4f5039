// mcpatch verify harness: loads a REAL @deepseek-ai/dsh-mcp-client lib/index.js
// once (by file URL, so the install's own dependencies resolve), then runs
// every scenario run at once (at most `jobs` together), each as its own plugin
// instance with a minimal host context pointed at its own fake MCP server. It
// drives tool calls as each run's plan says and reports what the caller saw as
// JSON lines on stdout. It talks to nothing but the fake servers.
import { readFileSync as readConfig } from "node:fs";
// The config comes in a private file (it holds the control routes' secrets).
const [targetUrl, configPath] = process.argv.slice(2);
const cfg = JSON.parse(readConfig(configPath, "utf8"));
const started = Date.now();
const emit = (run, event, data = {}) =>
  process.stdout.write(JSON.stringify({ run, event, t: Date.now() - started, ...data }) + "\n");
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
emit(null, "node", { version: process.version, shim });
// How late the event loop ran, sampled every 20 ms: a run that saw a long
// stall (a loaded machine, or a client blocking the loop) may have failed for
// the machine, and is then run again alone.
const stalls = [];
let lastTick = Date.now();
setInterval(() => {
  const now = Date.now();
  if (now - lastTick - 20 > 50) stalls.push([now, now - lastTick - 20]);
  lastTick = now;
}, 20).unref();
const stalledSince = (since) => stalls.reduce((most, [at, ms]) => (at >= since && ms > most ? ms : most), 0);
// One run's stray rejection must not end the others.
process.on("unhandledRejection", (e) => emit(null, "log", { level: "error", msg: `unhandled rejection: ${e?.stack ?? e}` }));

// SDK 2.x error shape: runs that ask for it see every HTTP error of the
// installed SDK 1.x transport (`StreamableHTTPError`, numeric `code`) as the SDK
// 2.x `SdkHttpError` (@modelcontextprotocol/client 2.x: `code` a string such as
// "CLIENT_HTTP_NOT_IMPLEMENTED", the HTTP status in `status`), both where the
// transport throws it and where it reports it through `onerror`.
const sdk2Runs = new Map();
async function sdkModule(sub) {
  const { createRequire } = await import("node:module");
  const { readFileSync, existsSync } = await import("node:fs");
  const path = await import("node:path");
  const { pathToFileURL } = await import("node:url");
  const cjs = createRequire(targetUrl).resolve(`@modelcontextprotocol/sdk/${sub}`);
  let dir = path.dirname(cjs);
  for (;;) {
    const pj = path.join(dir, "package.json");
    if (existsSync(pj) && JSON.parse(readFileSync(pj, "utf8")).name === "@modelcontextprotocol/sdk") break;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no @modelcontextprotocol/sdk package above ${cjs}`);
    dir = up;
  }
  const exportsMap = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")).exports ?? {};
  const esm = exportsMap[`./${sub}`]?.import ?? exportsMap["./*"]?.import?.replace("*", sub);
  if (typeof esm !== "string") throw new Error(`@modelcontextprotocol/sdk exports no ESM ${sub}`);
  return import(pathToFileURL(path.join(dir, esm)).href);
}
if (cfg.runs.some((r) => r.knobs?.sdk2)) {
  try {
    const { StreamableHTTPClientTransport: Transport, StreamableHTTPError } = await sdkModule("client/streamableHttp.js");
    class SdkHttpError extends Error {
      constructor(code, message, data) {
        super(message);
        this.name = "SdkHttpError";
        this.code = code;
        this.data = data;
      }
      get status() { return this.data.status; }
      get statusText() { return this.data.statusText; }
    }
    const reshaped = new WeakMap();
    const reshape = (run, e) => {
      if (!(e instanceof StreamableHTTPError) || typeof e.code !== "number" || e.code < 100) return e;
      if (reshaped.has(e)) return reshaped.get(e);
      const message = String(e.message).replace(/^Streamable HTTP error: /, "");
      const code = /SSE stream/.test(message) ? "CLIENT_HTTP_FAILED_TO_OPEN_STREAM" : "CLIENT_HTTP_NOT_IMPLEMENTED";
      const out = new SdkHttpError(code, message, { status: e.code, text: message });
      reshaped.set(e, out);
      emit(run, "sdk2", { status: e.code });
      return out;
    };
    const runOf = (t) => sdk2Runs.get(t?._url?.href);
    const send = Transport.prototype.send;
    Transport.prototype.send = async function (...args) {
      try {
        return await send.apply(this, args);
      } catch (e) {
        const run = runOf(this);
        throw run === undefined ? e : reshape(run, e);
      }
    };
    Object.defineProperty(Transport.prototype, "onerror", {
      configurable: true,
      get() { return this.__mcpatchOnerror; },
      set(fn) {
        const run = runOf(this);
        this.__mcpatchOnerror = run === undefined || typeof fn !== "function" ? fn : (e) => fn(reshape(run, e));
      },
    });
  } catch (e) {
    emit(null, "fatal", { error: `cannot reshape the SDK's errors as SDK 2.x errors: ${e?.stack ?? e}` });
    process.exit(3);
  }
}

let mod;
try {
  mod = await import(targetUrl);
} catch (e) {
  emit(null, "fatal", { error: `cannot load ${targetUrl}: ${e?.stack ?? e}` });
  process.exit(3);
}
if (typeof mod.apply !== "function") {
  emit(null, "fatal", { error: `${targetUrl} has no apply export` });
  process.exit(3);
}

async function runOne(r) {
  const tools = new Map();
  const disposers = [];
  const log = (level) => (msg) => emit(r.id, "log", { level, msg: String(msg) });
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
  const knobs = r.knobs ?? {};
  const toolCallTimeoutMs = knobs.toolCallTimeoutMs ?? r.callTimeoutMs ?? cfg.callTimeoutMs;
  if (knobs.sdk2) sdk2Runs.set(new URL(r.url).href, r.id);
  let calls = 0;
  // `opts.def`: a tool the host kept from before (it may be unregistered since);
  // `opts.signalMs`: when the caller's abort signal fires (default: the call timeout).
  async function call(name, args = {}, label = name, opts = {}) {
    const callId = `c${++calls}`;
    const def = opts.def ?? tools.get(`mcp__${cfg.serverName}__${name}`);
    const start = Date.now();
    const done = (ok, extra) => emit(r.id, "call", { call_id: callId, name: label, ok, ms: Date.now() - start, ...extra });
    if (!def) { done(false, { error: "tool not registered" }); return false; }
    const signalMs = opts.signalMs ?? knobs.signalMs ?? r.callTimeoutMs ?? cfg.callTimeoutMs;
    emit(r.id, "call-start", { call_id: callId, name: label });
    // A call whose promise outlives both its signal and its timeout by the grace never settled.
    const neverSettled = Symbol("never settled");
    let watchdog;
    const settled = new Promise((resolve) => {
      watchdog = setTimeout(() => resolve(neverSettled), Math.max(signalMs, toolCallTimeoutMs) + cfg.settleGraceMs);
    });
    try {
      const res = await Promise.race([def.execute({ ...args, call_id: callId }, { signal: AbortSignal.timeout(signalMs) }), settled]);
      if (res === neverSettled) { done(false, { error: cfg.neverSettled }); return false; }
      done(true, { text: Array.isArray(res?.content) ? res.content.map((c) => c?.text ?? "").join("") : "" });
      return true;
    } catch (e) {
      done(false, { error: String(e?.message ?? e) });
      return false;
    } finally {
      clearTimeout(watchdog);
    }
  }
  const controlAuth = { authorization: `Bearer ${r.controlToken}` };
  const control = async (what, method = "POST") => {
    const res = await fetch(`${r.controlBase}/control/${what}`, { method, headers: controlAuth });
    const text = await res.text();
    emit(r.id, "control", { what, status: res.status });
    try { return JSON.parse(text); } catch { return text; }
  };
  // Wait until the server listens again as generation `g` (an event, not a guess).
  async function listening(g) {
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      try {
        const res = await fetch(`${r.controlBase}/control/ready`, { headers: controlAuth });
        if (res.ok && (await res.json()).generation >= g) return;
      } catch {}
      await sleep(10);
    }
    emit(r.id, "log", { level: "error", msg: `the fake server did not listen again as generation ${g}` });
  }
  // Wait until the server's witness log shows what `match` looks for (an event, not a guess), bounded.
  // Each poll asks only for the entries after those already read.
  const seen = [];
  async function witnessed(match, waitMs = 5000) {
    const until = Date.now() + waitMs;
    while (Date.now() < until) {
      const since = seen.length ? seen[seen.length - 1].seq + 1 : 0;
      const more = await fetch(`${r.controlBase}/control/witness?since=${since}`, { headers: controlAuth }).then((x) => x.json()).catch(() => []);
      if (Array.isArray(more)) seen.push(...more);
      if (match(seen)) return true;
      await sleep(5);
    }
    emit(r.id, "log", { level: "error", msg: "the awaited server event never came" });
    return false;
  }
  async function pollUntilRecovered() {
    const deadline = Date.now() + r.deadlineMs + (knobs.pollExtraMs ?? 0);
    while (Date.now() < deadline) {
      if (await call("echo", { text: "after" })) { emit(r.id, "recovered"); return; }
      await sleep(cfg.pollMs);
    }
    emit(r.id, "deadline");
  }

  const config = {
    transport: "streamable-http",
    serverName: cfg.serverName,
    url: r.url,
    headers: {},
    toolCallTimeoutMs,
    failOnStartupError: true,
    ...(r.reconnect ? { reconnect: r.reconnect } : {}),
  };
  try {
    await mod.apply(ctx, config);
  } catch (e) {
    emit(r.id, "fatal", { error: `apply() failed: ${e?.stack ?? e}` });
    return;
  }
  emit(r.id, "ready", { tools: [...tools.keys()].sort() });
  // Stalls count from here: loading the plugin and its SDK stalls every run at the start.
  const runStarted = Date.now();

  switch (r.plan) {
    case "invalidate":
    case "sdk2":
      await call("echo", { text: "before" });
      await control("invalidate");
      await pollUntilRecovered();
      break;
    case "tools-changed":
      // The new session no longer lists add; the caller still asks for it (extra.rs).
      await call("echo", { text: "before" });
      await control("invalidate");
      await pollUntilRecovered();
      await call("add", { a: 2, b: 3 }, "dropped-tool");
      await call("echo", { text: "after" });
      break;
    case "idle":
      await call("echo", { text: "before" });
      await sleep(r.idleMs);
      emit(r.id, "idled", { ms: r.idleMs });
      await pollUntilRecovered();
      break;
    case "restart": {
      await call("echo", { text: "before" });
      const { generation } = await control("restart");
      await listening(generation);
      await pollUntilRecovered();
      break;
    }
    case "concurrent": {
      await call("echo", { text: "before" });
      await control(`hold?size=${r.concurrent}&run_first=${r.ranBeforeLoss}`);
      const batch = Promise.all(Array.from({ length: r.concurrent }, (_, i) => call("echo", { text: `at once ${i}` })));
      // More calls once the calls that ran before the loss have had their answers (so a
      // client may have closed the lost session by then) and while the new session is
      // still starting (the server holds the re-initialize back much longer).
      const late = (async () => {
        await witnessed((w) => w.some((e) => e.note?.startsWith("concurrent loss")));
        await sleep(r.ranAnswerDelayMs + 50);
        return Promise.all(Array.from({ length: r.lateCalls }, (_, i) => call("echo", { text: `late ${i}` })));
      })();
      const oks = [...(await batch), ...(await late)];
      if (!oks.every(Boolean)) await pollUntilRecovered();
      break;
    }
    case "refused-once":
      await call("echo", { text: "before" });
      await control("invalidate");
      await call("echo", { text: "refused" }, "refused");
      await pollUntilRecovered();
      break;
    // Not run by the plugin driver (it makes the client with no authProvider); kept so every plan has a case.
    case "token-refused":
      await call("echo", { text: "before" });
      await call("fail", { kind: "http401token" }, "token-refused");
      await call("echo", { text: "after" });
      break;
    case "forgetful":
      for (let i = 0; i < r.forgetfulCalls; i++) await call("echo", { text: `again ${i}` });
      break;
    case "cut": {
      await call("echo", { text: "before" });
      const { generation } = await control("ready", "GET");
      await call("slow", { text: "cut", ms: 5000 });
      await listening(generation + 1);
      await pollUntilRecovered();
      break;
    }
    case "relist":
      await call("echo", { text: "before" });
      await control("invalidate");
      await pollUntilRecovered();
      // The new session's tool list is held back: judge once it was answered.
      await witnessed((w) => w.filter((e) => e.rpc_method === "tools/list" && e.status === 200).length >= 2);
      break;
    case "timeout":
      await call("echo", { text: "before" });
      await call("slow", { text: "slow", ms: knobs.slowMs });
      await sleep(r.settleMs);
      await call("echo", { text: "after" });
      break;
    case "abort-waiting":
    case "deadline-waiting":
    case "deadline-resend": {
      await call("echo", { text: "before" });
      await control("invalidate");
      const probe = knobs.probe;
      await call(probe.tool, probe.args, "probe", { signalMs: probe.signalMs });
      await pollUntilRecovered();
      break;
    }
    case "give-up": {
      await call("echo", { text: "before" });
      // The host still holds the tool when reconnecting gives up and unregisters it.
      const kept = tools.get(`mcp__${cfg.serverName}__echo`);
      await control("invalidate");
      await call("echo", { text: "waiting" }, "waiting", { def: kept });
      // Every attempt the policy allows has been refused: reconnecting has stopped.
      await witnessed((w) => w.filter((e) => e.rpc_method === "initialize" && e.status === 503).length >= knobs.attempts);
      await call("echo", { text: "after" }, "after", { def: kept });
      break;
    }
    case "losses-apart": {
      await call("echo", { text: "before" });
      // Each loss is met by a call the server fails on every session, so the
      // new session serves nothing; it stays healthy past the policy's maxDelayMs.
      for (let k = 1; k <= knobs.losses; k++) {
        await control("invalidate");
        await call("fail", { kind: knobs.failKind }, `${knobs.outageLabel}${k}`);
        await sleep(knobs.healthyMs);
      }
      await call("echo", { text: "last" }, knobs.lastLabel);
      break;
    }
    case "reload": {
      await call("echo", { text: "before" });
      await control("reload");
      // Wait until the server has forgotten every session `n` times (an event, not a guess).
      const reloaded = async (n) => {
        const until = Date.now() + knobs.everyMs + 10_000;
        while (Date.now() < until) {
          const ready = await fetch(`${r.controlBase}/control/ready`, { headers: controlAuth }).then((x) => x.json()).catch(() => ({}));
          if ((ready.reloads ?? 0) >= n) return true;
          await sleep(10);
        }
        emit(r.id, "log", { level: "error", msg: `the fake server did not forget its sessions a ${n}. time` });
        return false;
      };
      for (let n = 1; n <= knobs.reloads; n++) {
        if (!(await reloaded(n))) break;
        const start = Date.now();
        const ok = await call("echo", { text: `after reload ${n}` });
        // The verdict is known at the first call that failed or waited: stop there.
        if (!ok || Date.now() - start > knobs.callLimitMs) break;
      }
      break;
    }
    case "ordinary":
      await call("echo", { text: "before" });
      // http400session: a 400 whose words mention a session harmlessly, an ordinary error too.
      for (const kind of ["http500", "http400", "http400session", "jsonrpc", "tool"]) await call("fail", { kind }, `fail:${kind}`);
      await sleep(r.settleMs);
      await call("add", { a: 2, b: 3 });
      await call("echo", { text: "after" });
      break;
    case "stream-loss": {
      await call("echo", { text: "before" });
      const opened = (e) => e.http_method === "GET" && e.status === 200;
      await witnessed((w) => w.some(opened));
      await control("invalidate");
      // No call until a GET stream opens after the drop (only a new session's can), bounded.
      await witnessed((w) => {
        const d = w.findLastIndex((e) => e.http_method === "CONTROL" && e.note?.includes("dropped"));
        return d >= 0 && w.slice(d).some(opened);
      }, knobs.reopenWaitMs);
      await pollUntilRecovered();
      break;
    }
    case "settle": {
      await call("echo", { text: "before" });
      // Wait for the server's GET 404 to reach the connected client, then watch.
      await witnessed((w) => w.some((e) => e.http_method === "GET" && e.status === 404));
      await sleep(r.settleMs);
      await call("echo", { text: "after" });
      break;
    }
    case "explore": {
      // A generated plan (verify --explore): its steps in order; a call that
      // does not wait runs alongside the steps after it. Once every call has
      // ended and the client has had its time to recover, one last call.
      const running = [];
      for (const s of r.steps) {
        switch (s.op) {
          case "call": {
            const p = call(s.tool, s.args, s.label, s.signalMs ? { signalMs: s.signalMs } : {});
            if (s.wait) await p; else running.push(p);
            break;
          }
          case "invalidate": await control("invalidate"); break;
          case "refuse": await control(`refuse?n=${s.n}`); break;
          case "sleep": await sleep(s.ms); break;
          case "outages":
            for (let k = 1; k <= s.n; k++) {
              await control("invalidate");
              await call(s.tool, { ...s.args, text: `outage ${k}` }, `${s.label}${k}`);
              await sleep(s.healthyMs);
            }
            break;
          default: emit(r.id, "fatal", { error: `unknown step ${s.op}` }); return;
        }
      }
      await Promise.all(running);
      await sleep(r.recoverMs);
      await call("echo", { text: "last" }, "last");
      break;
    }
    default:
      emit(r.id, "fatal", { error: `unknown plan ${r.plan}` });
  }
  // What the host has registered at the end, each tool with the description it got.
  const described = [...tools].sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, d]) => [n, String(d.description ?? "")]);
  emit(r.id, "tools", { tools: [...tools.keys()].sort(), described });
  emit(r.id, "done", { stalled_ms: stalledSince(runStarted) });
  for (const d of disposers.reverse()) {
    try { await d(); } catch {}
  }
}

// At most `jobs` runs at once, started in order.
const queue = [...cfg.runs];
const workers = Array.from({ length: Math.max(1, Math.min(cfg.jobs, queue.length)) }, async () => {
  while (queue.length > 0) {
    const r = queue.shift();
    try {
      await runOne(r);
    } catch (e) {
      emit(r.id, "fatal", { error: `run failed: ${e?.stack ?? e}` });
    }
  }
});
await Promise.all(workers);
emit(null, "exit");
process.exit(0);
