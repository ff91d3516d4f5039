// One real MCP client library, loaded from a real project's node_modules, calling the `echo` tool of a
// server (prove.mjs runs it). Kinds:
//   sdk1-esm, sdk1-cjs        @modelcontextprotocol/sdk 1.x Client + StreamableHTTPClientTransport
//   client2-esm, client2-cjs  @modelcontextprotocol/client 2.x Client + StreamableHTTPClientTransport
//   langchain, langchain-reconnect   @langchain/mcp-adapters MultiServerMCPClient (http; reconnect on/off)
//   mastra                    @mastra/mcp MCPClient (its tool's execute)
//   openai                    @openai/agents MCPServerStreamableHttp (callTool)
// Protocol: stdin lines are JSON {id, texts: [..], at_once: bool}; for each, the calls are made (all at
// once or one after another, each with its own deadline) and one stdout line answers
// {id, calls: [{text, ok, error}]}. The first line on stdout is {ready: true} once connected (or
// {ready: false, error}). Exits when stdin closes. Logs to stderr.
// argv: --kind KIND --project DIR --url URL [--call-timeout-ms N]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const args = process.argv.slice(2);
const opt = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const kind = opt("--kind");
const project = path.resolve(opt("--project", "."));
const url = opt("--url");
const callTimeoutMs = Number(opt("--call-timeout-ms", "8000"));
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const log = (s) => process.stderr.write(`library-client(${kind}): ${s}\n`);

/** The entry file of package `name` in the project, for `import` (esm) or `require` (cjs), read from its package.json. */
function entry(name, cond, sub = ".") {
  const dir = path.join(project, "node_modules", name);
  const pj = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
  const pick = (e) => {
    if (typeof e === "string") return e;
    if (!e || typeof e !== "object") return undefined;
    for (const c of [cond, "node", "default"]) if (c in e) { const r = pick(e[c]); if (r) return r; }
    return undefined;
  };
  const target = pj.exports ? pick(typeof pj.exports === "string" || !(sub in pj.exports) ? pj.exports : pj.exports[sub]) : sub === "." ? (cond === "import" && pj.module) || pj.main : sub;
  if (!target) throw new Error(`${dir}: no ${cond} entry for ${sub}`);
  return path.join(dir, target);
}
const load = async (name, cond, sub) => {
  const file = entry(name, cond, sub);
  return cond === "import" ? import(pathToFileURL(file).href) : createRequire(path.join(project, "package.json"))(file);
};

async function connect() {
  if (kind.startsWith("sdk1-") || kind.startsWith("client2-")) {
    const cond = kind.endsWith("-esm") ? "import" : "require";
    const pkg = kind.startsWith("sdk1-") ? "@modelcontextprotocol/sdk" : "@modelcontextprotocol/client";
    // sdk 1.x maps "./*" to dist/esm/* (import) and dist/cjs/* (require): the files its users load.
    const file = (rel) => path.join(project, "node_modules", pkg, "dist", cond === "import" ? "esm" : "cjs", rel);
    const direct = (rel) => (cond === "import" ? import(pathToFileURL(file(rel)).href) : createRequire(path.join(project, "package.json"))(file(rel)));
    const { Client } = kind.startsWith("sdk1-") ? await direct("client/index.js") : await load(pkg, cond);
    const { StreamableHTTPClientTransport } = kind.startsWith("sdk1-") ? await direct("client/streamableHttp.js") : await load(pkg, cond);
    const client = new Client({ name: "mcpatch-prove", version: "1.0.0" }, { capabilities: {} });
    client.onerror = (e) => log(`client error: ${e?.message ?? e}`);
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return { call: (text) => client.callTool({ name: "echo", arguments: { text } }), close: () => client.close() };
  }
  if (kind.startsWith("langchain")) {
    const { MultiServerMCPClient } = await load("@langchain/mcp-adapters", "import");
    const reconnect = kind === "langchain-reconnect";
    const client = new MultiServerMCPClient({ mcpServers: { s: { transport: "http", url, ...(reconnect ? { reconnect: { enabled: true, maxAttempts: 3, delayMs: 100 } } : {}) } } });
    const tools = await client.getTools();
    const echo = tools.find((t) => t.name.endsWith("echo"));
    if (!echo) throw new Error(`no echo tool among ${tools.map((t) => t.name).join(", ")}`);
    return { call: (text) => echo.invoke({ text }), close: () => client.close() };
  }
  if (kind === "mastra") {
    const { MCPClient } = await load("@mastra/mcp", "import");
    const mcp = new MCPClient({ servers: { s: { url: new URL(url) } } });
    const tools = await mcp.listTools();
    const echo = Object.entries(tools).find(([n]) => n.endsWith("echo"))?.[1];
    if (!echo) throw new Error(`no echo tool among ${Object.keys(tools).join(", ")}`);
    return { call: (text) => echo.execute({ text }, {}), close: () => mcp.disconnect() };
  }
  if (kind === "openai") {
    const { MCPServerStreamableHttp } = await load("@openai/agents", "import");
    const server = new MCPServerStreamableHttp({ url, name: "s" });
    await server.connect();
    return { call: (text) => server.callTool("echo", { text }), close: () => server.close() };
  }
  throw new Error(`unknown kind ${kind}`);
}

const withDeadline = (p) => {
  let timer;
  return Promise.race([p, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${callTimeoutMs} ms`)), callTimeoutMs); })]).finally(() => clearTimeout(timer));
};
async function one(lib, text) {
  try {
    const result = await withDeadline(lib.call(text));
    const seen = JSON.stringify(result ?? null);
    const ok = seen.includes(text) && !/"isError":true/.test(seen) && !/"error"/i.test(seen.slice(0, 40));
    return ok ? { text, ok } : { text, ok: false, error: seen.slice(0, 400) };
  } catch (e) {
    return { text, ok: false, error: String(e?.message ?? e).slice(0, 400) };
  }
}

let lib;
try {
  lib = await connect();
  say({ ready: true });
} catch (e) {
  say({ ready: false, error: String(e?.stack ?? e) });
  process.exit(1);
}
const rl = createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on("line", (line) => {
  queue = queue.then(async () => {
    const { id, texts, at_once } = JSON.parse(line);
    const calls = [];
    if (at_once) calls.push(...(await Promise.all(texts.map((t) => one(lib, t)))));
    else for (const t of texts) calls.push(await one(lib, t));
    say({ id, calls });
  });
});
rl.on("close", async () => {
  await queue;
  await Promise.race([Promise.resolve(lib.close()).catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
  process.exit(0);
});
