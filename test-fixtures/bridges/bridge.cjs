// A small stdio MCP bridge for the tests of `mcpatch verify --command`: a host
// speaks newline-delimited JSON-RPC on stdin/stdout; upstream is a real MCP SDK
// Client over Streamable HTTP. One behaviour per mode:
//   correct             on a lost session (404, or 400/401 naming the session) starts a
//                       new session (one at a time, shared by the calls that meet the loss),
//                       re-lists the tools and sends the failed call again once
//   keeps-dead-session  passes every error on and keeps the dead session id
//   stops-answering     never answers a call whose upstream request failed; also
//                       starts a long-lived child process of its own (for the no-orphans test)
//   exits               exits with status 3, saying why on stderr, when a call fails
// argv: <mode> <prefix the SDK is installed in> <url> (the URL may come anywhere;
// any other argument is a usage error, so a `{url}` left in place shows).
"use strict";
const { createRequire } = require("node:module");
const { spawn } = require("node:child_process");
const path = require("node:path");
const readline = require("node:readline");

const MODES = ["correct", "keeps-dead-session", "stops-answering", "exits"];
const args = process.argv.slice(2);
const url = args.find((a) => /^https?:\/\//.test(a));
const rest = args.filter((a) => a !== url);
if (!url || rest.length !== 2 || !MODES.includes(rest[0])) {
  console.error(`usage: bridge.cjs <${MODES.join("|")}> <sdk prefix> <url>; got ${JSON.stringify(args)}`);
  process.exit(2);
}
const [mode, prefix] = rest;
const sdkRequire = createRequire(path.join(path.resolve(prefix), "noop.js"));
const { Client } = sdkRequire("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = sdkRequire("@modelcontextprotocol/sdk/client/streamableHttp.js");

const log = (msg) => process.stderr.write(`bridge(${mode}): ${msg}\n`);
const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");

if (mode === "stops-answering") {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1 << 30)"], { stdio: "ignore" });
  log(`started helper process ${child.pid}`);
}

async function open() {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: "fixture-bridge", version: "1.0.0" }, { capabilities: {} });
  client.onerror = (e) => log(`upstream: ${e?.message ?? e}`);
  await client.connect(transport);
  log(`session ${transport.sessionId}`);
  return { client, transport, inFlight: 0, replaced: false };
}

// Closing a transport fails the calls still waiting on it: close a replaced
// session only once its last call has its answer.
function closeWhenIdle(u) {
  if (u.replaced && u.inFlight === 0) u.transport.close().catch(() => {});
}

let upstream = null;
let replacing = null;

function sessionLost(e) {
  const status = e?.code;
  // Words naming the session as gone, not any mention of a session ("unknown sessionName argument" is ordinary).
  const gone = /\bno valid (?:mcp-)?session\b|\b(?:invalid|unknown|expired|missing) (?:mcp-)?session\b|\bsession(?:[ -]id)? (?:is )?(?:not found|invalid|unknown|expired)\b/i;
  return status === 404 || ((status === 400 || status === 401) && gone.test(String(e?.message)));
}

// One new session at a time; calls that met the loss of `dead` share it.
function replace(dead) {
  if (upstream !== dead) return Promise.resolve(upstream);
  if (!replacing) {
    replacing = (async () => {
      const fresh = await open();
      await fresh.client.listTools();
      upstream = fresh;
      dead.replaced = true;
      closeWhenIdle(dead);
      return fresh;
    })().finally(() => { replacing = null; });
  }
  return replacing;
}

async function callTool(params) {
  if (replacing) await replacing.catch(() => {});
  const used = upstream;
  used.inFlight++;
  try {
    return await used.client.callTool(params);
  } catch (e) {
    if (mode !== "correct" || !sessionLost(e)) throw e;
    log(`session lost (${e.message}); starting a new one`);
    const fresh = await replace(used);
    fresh.inFlight++;
    try {
      return await fresh.client.callTool(params);
    } finally {
      fresh.inFlight--;
      closeWhenIdle(fresh);
    }
  } finally {
    used.inFlight--;
    closeWhenIdle(used);
  }
}

async function handle(msg) {
  const { id, method, params } = msg;
  if (id === undefined) return; // a notification
  try {
    let result;
    switch (method) {
      case "initialize":
        upstream = await open();
        result = {
          protocolVersion: params?.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "fixture-bridge", version: "1.0.0" },
        };
        break;
      case "ping":
        result = {};
        break;
      case "tools/list":
        result = await upstream.client.listTools(params);
        break;
      case "tools/call":
        result = await callTool(params);
        break;
      default:
        send({ jsonrpc: "2.0", id, error: { code: -32601, message: `method not found: ${method}` } });
        return;
    }
    send({ jsonrpc: "2.0", id, result });
  } catch (e) {
    const message = String(e?.message ?? e);
    if (mode === "stops-answering") {
      log(`not answering call ${id}: ${message}`);
      return;
    }
    if (mode === "exits") {
      log(`giving up: ${message}`);
      process.exit(3);
    }
    send({ jsonrpc: "2.0", id, error: { code: Number.isInteger(e?.code) && e.code < 0 ? e.code : -32603, message } });
  }
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    log(`not JSON: ${line}`);
    return;
  }
  handle(msg);
});
lines.on("close", () => process.exit(0));
