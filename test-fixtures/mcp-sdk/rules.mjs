// Checks the rules of the mcp-sdk patch that a restarted real server cannot show, on a patched copy of
// a real SDK release driven as a real Client + StreamableHTTPClientTransport, against a small stateful
// HTTP server written here (it counts initializes, GETs and arrivals and answers as each scenario says).
// Scenarios (each prints {scenario, ok, why, counts}):
//   bare-404           the lost session answered with a bare 404 "Not Found" (no words): recovered, and
//                      the new initialize's answer never reaches the Client
//   get-always-404     every GET answered 404, the session never lost: no new initialize at all
//   get-reopen         the server forgets the session while only the GET stream is open: one new
//                      initialize and a GET on the new session, with no call made
//   auth-401-session   with an OAuth authProvider, 401 "Unauthorized: Session not found": session loss,
//                      the auth flow never starts, the call answered
//   auth-401-token     with an authProvider, 401 "invalid token" (no session words): the SDK's auth
//                      flow starts (the provider's redirectToAuthorization is called), no new initialize
//   abort-during-wait  the new initialize is slow; the call's timeout fires first: it is not sent again
//   call-during-recovery  a call made while the new initialize is under way waits for it and is answered
//   reinit-refused     the new initialize is answered 500 with words: the call fails at once with them;
//                      the next call (server healthy) starts a session and is answered
//   repeat-lost        the repeat is answered 404 too: the call fails with the server's words, once
// argv: --package DIR (an installed @modelcontextprotocol/sdk or /client) --build esm|cjs [--patched]
//       [--only NAME,...] [--mutant FILE: patched, then this mutant applied]
// stdout: one JSON line per scenario; exit 1 when a scenario's expectation fails (unpatched runs
// are expected to fail several: they show what the patch changes); 2 on bad arguments; 3 when the
// patch or the mutant could not be applied.
import { createServer } from "node:http";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { patchPackage } from "./apply-anchors.mjs";

const args = process.argv.slice(2);
const opt = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
let pkg = opt("--package") && path.resolve(opt("--package"));
const build = opt("--build", "esm");
const only = opt("--only", "").split(",").filter(Boolean);
if (!pkg || !["esm", "cjs"].includes(build)) {
  console.error("usage: rules.mjs --package DIR --build esm|cjs [--patched] [--only a,b]");
  process.exit(2);
}
const scratch = mkdtempSync(path.join(tmpdir(), "mcpatch-sdk-rules-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));
if (args.includes("--patched") || args.includes("--mutant")) {
  // The package alone is copied (its dependencies resolve from the original's node_modules via a symlink).
  const copy = path.join(scratch, "node_modules", "@modelcontextprotocol", path.basename(pkg));
  cpSync(path.dirname(path.dirname(pkg)), path.join(scratch, "node_modules"), { recursive: true, dereference: false, verbatimSymlinks: true });
  try {
    patchPackage(path.join(repo, "patches", "mcp-sdk", "manifest.json"), copy, undefined, opt("--mutant") && path.resolve(opt("--mutant")));
  } catch (e) {
    console.error(`rules.mjs: cannot patch ${copy}: ${e.message}`);
    process.exit(3);
  }
  pkg = copy;
}
const pj = JSON.parse((await import("node:fs")).readFileSync(path.join(pkg, "package.json"), "utf8"));
const files = pj.name === "@modelcontextprotocol/client" ? (build === "esm" ? ["dist/index.mjs", "dist/index.mjs"] : ["dist/index.cjs", "dist/index.cjs"])
  : build === "esm" ? ["dist/esm/client/index.js", "dist/esm/client/streamableHttp.js"] : ["dist/cjs/client/index.js", "dist/cjs/client/streamableHttp.js"];
const load = (rel) => (build === "esm" ? import(pathToFileURL(path.join(pkg, rel)).href) : createRequire(import.meta.url)(path.join(pkg, rel)));
const { Client } = await load(files[0]);
const { StreamableHTTPClientTransport } = await load(files[1]);

/** A stateful MCP server over plain HTTP (JSON answers, optional GET stream), as a scenario configures it. */
function server(cfg) {
  const st = { sessions: new Set(), inits: 0, gets: [], arrivals: {}, streams: new Set(), n: 0 };
  const h = createServer(async (req, res) => {
    const sid = req.headers["mcp-session-id"];
    if (req.method === "GET") {
      st.gets.push(sid);
      if (cfg.getAlways404 || !st.sessions.has(sid)) return res.writeHead(404, { "content-type": "application/json" }).end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
      res.writeHead(200, { "content-type": "text/event-stream", "mcp-session-id": sid });
      res.write(": open\n\n");
      st.streams.add(res);
      res.on("close", () => st.streams.delete(res));
      return;
    }
    if (req.method === "DELETE") return res.writeHead(200).end();
    let body = "";
    for await (const c of req) body += c;
    const msg = JSON.parse(body);
    if (msg.method === "initialize") {
      st.inits++;
      if (sid) st.initWithSession = (st.initWithSession ?? 0) + 1;
      const a = cfg.onInit?.(st);
      if (a?.delay) await new Promise((r) => setTimeout(r, a.delay));
      if (a?.status) return res.writeHead(a.status, { "content-type": "text/plain" }).end(a.text);
      const id = `s${++st.n}`;
      st.sessions.add(id);
      return res.writeHead(200, { "content-type": "application/json", "mcp-session-id": id }).end(JSON.stringify({ jsonrpc: "2.0", id: msg.id,
        result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "rules", version: "1" } } }));
    }
    if (!st.sessions.has(sid)) {
      const lost = cfg.lost ?? { status: 404, text: '{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}' };
      return res.writeHead(lost.status, { "content-type": "text/plain" }).end(lost.text);
    }
    if (msg.id === undefined) return res.writeHead(202).end();
    if (msg.method === "tools/call") {
      const t = msg.params.arguments.text;
      st.arrivals[t] = (st.arrivals[t] ?? 0) + 1;
      const a = cfg.onCall?.(st, t, sid);
      if (a?.status) return res.writeHead(a.status, { "content-type": "text/plain" }).end(a.text);
      return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: t }] } }));
    }
    return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: { tools: [] } }));
  });
  st.forget = () => {
    st.sessions.clear();
    for (const r of st.streams) r.destroy();
  };
  return new Promise((resolve) => h.listen(0, "127.0.0.1", () => resolve({ st, url: `http://127.0.0.1:${h.address().port}/mcp`, close: () => { h.closeAllConnections?.(); h.close(); } })));
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// sdk 1.x: callTool(params, resultSchema, options); client 2.x: callTool(params, options).
const call = (client, text, timeout) => (pj.name === "@modelcontextprotocol/client"
  ? client.callTool({ name: "echo", arguments: { text } }, timeout ? { timeout } : undefined)
  : client.callTool({ name: "echo", arguments: { text } }, undefined, timeout ? { timeout } : undefined))
  .then((r) => ({ ok: JSON.stringify(r).includes(text) && !r.isError }), (e) => ({ ok: false, error: String(e?.message ?? e) }));
async function connect(url, opts = {}) {
  const client = new Client({ name: "rules", version: "1" }, { capabilities: {} });
  // What the Client reports (an answer to a request it never sent shows here as an unknown message id).
  client.errors = [];
  client.onerror = (e) => client.errors.push(String(e?.message ?? e));
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 200, reconnectionDelayGrowFactor: 1, maxRetries: 3 }, ...opts }));
  return client;
}
const authProvider = (log) => ({
  get redirectUrl() { return "http://127.0.0.1/cb"; },
  get clientMetadata() { return { redirect_uris: ["http://127.0.0.1/cb"], client_name: "rules" }; },
  clientInformation: () => ({ client_id: "rules" }),
  tokens: () => ({ access_token: "good", token_type: "bearer" }),
  saveTokens: () => {},
  redirectToAuthorization: () => { log.push("redirectToAuthorization"); },
  saveCodeVerifier: () => {},
  codeVerifier: () => "v",
  invalidateCredentials: () => { log.push("invalidateCredentials"); },
});

const scenarios = {
  async "bare-404"() {
    const s = await server({ lost: { status: 404, text: "Not Found" } });
    const c = await connect(s.url);
    s.st.forget();
    const r = await call(c, "bare");
    await c.close(); s.close();
    const leaked = c.errors.filter((e) => /unknown message id|mcpatch-reinitialize/i.test(e));
    return { ok: r.ok && s.st.inits === 2 && leaked.length === 0, why: `call ${JSON.stringify(r)} (want answered), initializes ${s.st.inits} (want 2), answers the Client got for requests it never sent: ${JSON.stringify(leaked)} (want none)`, counts: { inits: s.st.inits } };
  },
  async "get-always-404"() {
    const s = await server({ getAlways404: true });
    const c = await connect(s.url);
    const r = [await call(c, "a"), (await sleep(800), await call(c, "b")), (await sleep(800), await call(c, "c"))];
    await c.close(); s.close();
    return { ok: s.st.inits === 1 && r.every((x) => x.ok), why: `initializes ${s.st.inits} (want 1), calls ${JSON.stringify(r)}`, counts: { inits: s.st.inits, gets: s.st.gets.length } };
  },
  async "get-reopen"() {
    const s = await server({});
    const c = await connect(s.url);
    await sleep(300);
    s.st.forget();
    await sleep(1500);
    const getsOnNew = s.st.gets.filter((g) => g && s.st.sessions.has(g)).length;
    const r = await call(c, "after");
    await c.close(); s.close();
    return { ok: s.st.inits === 2 && getsOnNew >= 1 && r.ok && s.st.arrivals.after === 1, why: `initializes ${s.st.inits} (want 2), GETs on the new session ${getsOnNew} (want >= 1), call ${JSON.stringify(r)}`, counts: { inits: s.st.inits, gets: s.st.gets } };
  },
  async "auth-401-session"() {
    const log = [];
    const s = await server({ lost: { status: 401, text: "Unauthorized: Session not found" } });
    const c = await connect(s.url, { authProvider: authProvider(log) });
    await call(c, "a");
    s.st.forget();
    const r = await call(c, "b");
    await c.close(); s.close();
    return { ok: r.ok && s.st.inits === 2 && log.length === 0, why: `call ${JSON.stringify(r)}, initializes ${s.st.inits} (want 2), auth steps ${JSON.stringify(log)} (want none)`, counts: { inits: s.st.inits } };
  },
  async "auth-401-token"() {
    const log = [];
    const s = await server({ onCall: (st, t) => (t === "b" ? { status: 401, text: "Unauthorized: invalid token" } : undefined) });
    const c = await connect(s.url, { authProvider: authProvider(log), fetch: (u, i) => (String(u).includes("/mcp") ? fetch(u, i) : Promise.resolve(new Response("no", { status: 404 }))) });
    const r = await call(c, "b");
    await c.close(); s.close();
    return { ok: !r.ok && s.st.inits === 1 && s.st.arrivals.b === 1 && log.includes("redirectToAuthorization"), why: `call ${JSON.stringify(r)} (want the SDK's auth error), initializes ${s.st.inits} (want 1), arrivals ${s.st.arrivals.b} (want 1), auth steps ${JSON.stringify(log)} (want redirectToAuthorization)`, counts: { inits: s.st.inits, auth: log } };
  },
  async "abort-during-wait"() {
    const s = await server({ onInit: (st) => (st.inits > 1 ? { delay: 1500 } : undefined) });
    const c = await connect(s.url);
    s.st.forget();
    const r = await call(c, "slow", 500);
    await sleep(2500);
    await c.close(); s.close();
    return { ok: !r.ok && (s.st.arrivals.slow ?? 0) === 0, why: `call ${JSON.stringify(r)} (want its timeout), arrivals after the wait ${s.st.arrivals.slow ?? 0} (want 0)`, counts: { inits: s.st.inits } };
  },
  async "call-during-recovery"() {
    const s = await server({ onInit: (st) => (st.inits > 1 ? { delay: 1000 } : undefined) });
    const c = await connect(s.url);
    s.st.forget();
    const first = call(c, "first");
    await sleep(300);
    const r2 = await call(c, "meanwhile");
    const r1 = await first;
    await c.close(); s.close();
    return { ok: r1.ok && r2.ok && s.st.inits === 2 && s.st.arrivals.meanwhile === 1, why: `the call that met the loss ${JSON.stringify(r1)}, a call made during the new initialize ${JSON.stringify(r2)} (want both answered), initializes ${s.st.inits} (want 2)`, counts: { inits: s.st.inits } };
  },
  async "reinit-refused"() {
    let refuse = true;
    const s = await server({ onInit: (st) => (st.inits > 1 && refuse ? { status: 500, text: "init refused: quota exceeded" } : undefined) });
    const c = await connect(s.url);
    s.st.forget();
    const r1 = await call(c, "x");
    refuse = false;
    const r2 = await call(c, "y");
    await c.close(); s.close();
    return { ok: !r1.ok && /init refused: quota exceeded/.test(r1.error ?? "") && (s.st.arrivals.x ?? 0) === 0 && r2.ok, why: `first ${JSON.stringify(r1)} (want the server's words), then ${JSON.stringify(r2)} (want answered)`, counts: { inits: s.st.inits } };
  },
  async "repeat-lost"() {
    const s = await server({ onCall: (st, t, sid) => (t === "z" ? { status: 404, text: "Session gone again" } : undefined) });
    const c = await connect(s.url);
    s.st.forget();
    const r = await call(c, "z");
    await c.close(); s.close();
    return { ok: !r.ok && /Session gone again/.test(r.error ?? "") && s.st.arrivals.z === 1 && s.st.inits === 2, why: `call ${JSON.stringify(r)} (want the server's words), arrivals ${s.st.arrivals.z} (want 1), initializes ${s.st.inits} (want 2)`, counts: { inits: s.st.inits } };
  },
};
let bad = 0;
for (const [name, run] of Object.entries(scenarios)) {
  if (only.length && !only.includes(name)) continue;
  let r;
  try {
    r = await Promise.race([run(), sleep(15000).then(() => ({ ok: false, why: "did not finish within 15 s" }))]);
  } catch (e) {
    r = { ok: false, why: `threw: ${e?.stack ?? e}` };
  }
  if (!r.ok) bad = 1;
  console.log(JSON.stringify({ scenario: name, package: `${pj.name}@${pj.version}`, build, ...r }));
}
process.exit(bad);
