// mcpatch's verify host for the ai-sdk-mcp target: @ai-sdk/mcp is a library, not a program, so this
// makes the INSTALLED library (the very build file mcpatch patches) one that the stdio-bridge verify
// machinery can drive, with the same contract as patches/mcp-sdk/sdk-host.mjs. It loads the install's
// createMCPClient from the build named (through the package's own package.json "exports": 2.x has one
// ESM build, dist/index.js; 1.x an ESM dist/index.mjs and a CJS dist/index.js), opens
// createMCPClient({ transport: { type: "http", url } }) against the fake server at <url>, and acts as a
// stdio MCP server to its parent (newline-delimited JSON-RPC on stdin/stdout, by hand):
//   initialize   answered here once the installed client has connected (an error if it could not);
//                capabilities.experimental "mcpatch/within" when the client hands a caller's signal to
//                its transport (see passesSignal): only then can a patch end a call waiting on a new
//                session by it, and verify runs its deadline and abort scenarios
//   tools/list   forwarded to the installed client (client.listTools)
//   tools/call   forwarded to the installed client (client.callTool; the arguments go by both names:
//                1.x takes `args`, 2.x `arguments`); an error thrown by the client becomes a JSON-RPC
//                error carrying its message (and the server's body when the client kept it apart).
//                params._meta "mcpatch/within" {timeoutMs, abortMs} (verify's deadline and abort
//                scenarios): the caller's own bounds on this call, given to the client as its
//                `timeout` option and as an abort signal (`signal`, and 1.x's `abortSignal`) that
//                fires at the earlier of the two (a release without the option is bounded by the
//                signal); not sent on
//   ping         answered here; notifications are ignored; anything else: -32601
// The client is created with maxRetries: 0 (an option of 2.0.9x; older releases ignore it): 2.0.9x
// retries a tool call on 5xx/408/409/429 by itself, which verify would count as a second send.
// Logs go to stderr only (control characters escaped). Exits when stdin closes, closing the client.
// argv: <package-dir> <esm|cjs> <url> [<build-folder>]
//   <build-folder>: a copy of the folder of the build file (verify's mirror, beside the original,
//   holding the file to check); the file of the same name is loaded from it instead.
// env: MCPATCH_SDK_HOST_TIMEOUT_MS  a per-call deadline given to the client (its `timeout` option
//   where the release has one, and an abort signal)
// exit: 0 after stdin closed; 2 on bad arguments; 3 when the install cannot be loaded.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const clean = (s) => String(s).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
const log = (line) => {
  try {
    process.stderr.write(`ai-sdk-host: ${clean(line)}\n`);
  } catch {
    // stderr closed: nothing to tell.
  }
};

const [pkgDir, build, url, buildDir] = process.argv.slice(2);
if (!pkgDir || !["esm", "cjs"].includes(build) || !url) {
  log("usage: ai-sdk-host.mjs <package-dir> <esm|cjs> <url> [<build-folder>]");
  process.exit(2);
}

/** The build file of the install named by its package.json, or why there is none. */
function buildFile(pj) {
  const root = pj.exports?.["."];
  const pick = (e) => (typeof e === "string" ? e : typeof e?.default === "string" ? e.default : undefined);
  const rel =
    build === "esm"
      ? pick(root?.import) ?? pj.module
      : pick(root?.require) ?? (pj.type === "module" || root !== undefined ? undefined : pj.main);
  if (!rel) throw new Error(`${pj.name} ${pj.version} has no ${build === "esm" ? "ESM" : "CJS"} build (package.json "exports")`);
  return buildDir ? path.resolve(buildDir, path.basename(rel)) : path.resolve(pkgDir, rel);
}

let lib;
let pj;
try {
  pj = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8"));
  const file = buildFile(pj);
  lib = build === "esm" ? await import(pathToFileURL(file).href) : createRequire(import.meta.url)(file);
  if (typeof lib.createMCPClient !== "function") throw new Error(`${file} exports no createMCPClient`);
  log(`loaded ${pj.name} ${pj.version} (${build}) from ${file}`);
} catch (e) {
  log(`cannot load @ai-sdk/mcp from ${pkgDir} (${build}): ${e?.message ?? e}`);
  process.exit(3);
}

const timeoutMs = Number(process.env.MCPATCH_SDK_HOST_TIMEOUT_MS) || undefined;
/** A call's options: the host's deadline, or the caller's bounds `params._meta` carries. */
const callOptions = (params) => {
  const within = params?._meta?.["mcpatch/within"];
  const ms = (v) => (Number.isInteger(v) && v > 0 ? v : undefined);
  const timeout = ms(within?.timeoutMs) ?? timeoutMs;
  const abort = ms(within?.abortMs);
  const fires = Math.min(timeout ?? Infinity, abort ?? Infinity);
  if (fires === Infinity) return undefined;
  // `signal` for 2.x's request options, `abortSignal` for 1.x's (a tool's execute options).
  const signal = AbortSignal.timeout(fires);
  return { ...(timeout ? { timeout } : {}), signal, abortSignal: signal };
};
let client;
let connected;
const connect = () =>
  (connected ??= lib
    .createMCPClient({
      transport: { type: "http", url },
      maxRetries: 0,
      name: "mcpatch-ai-sdk-host",
      onUncaughtError: (e) => log(`client error: ${e?.message ?? e}`),
    })
    .then((c) => {
      client = c;
      log(`connected to ${url}`);
    }));

/**
 * Whether the connected client hands a request's abort signal to its transport, read from the code of
 * its request method (`transportSignal`, 1.0.10x and 2.0.30 on). Releases that do not (1.0.50, 2.0.0:
 * `this.transport.send(jsonrpcRequest)`) look at the signal only once an answer comes, so a call
 * waiting on a new session cannot end by it, patched or not.
 */
const passesSignal = () => {
  const proto = client && Object.getPrototypeOf(client);
  const code = ["requestOnce", "request"].map((m) => (typeof proto?.[m] === "function" ? Function.prototype.toString.call(proto[m]) : "")).join("\n");
  return /\btransportSignal\b/.test(code);
};

let out = Promise.resolve();
const write = (msg) => {
  out = out.then(
    () =>
      new Promise((resolve) => {
        try {
          process.stdout.write(JSON.stringify(msg) + "\n", () => resolve());
        } catch {
          resolve();
        }
      }),
  );
};
process.stdout.on("error", () => {}); // the parent went away: stdin's end follows.

/** The client's error as a JSON-RPC error: its message, and the server's body when kept apart. */
const errorOf = (e) => {
  let message = String(e?.message ?? e);
  if (typeof e?.responseBody === "string" && e.responseBody && !message.includes(e.responseBody)) message += `: ${e.responseBody}`;
  const cause = e?.cause?.code ?? e?.cause?.message; // fetch's "fetch failed" says why only here
  if (typeof cause === "string" && cause && !message.includes(cause)) message += ` (${cause})`;
  return { code: Number.isInteger(e?.code) && e.code < 0 ? e.code : -32603, message };
};

async function handle(msg) {
  const { id, method, params } = msg;
  if (id === undefined || typeof method !== "string") return; // notifications and stray answers
  try {
    let result;
    if (method === "initialize") {
      await connect();
      result = {
        protocolVersion: typeof params?.protocolVersion === "string" ? params.protocolVersion : "2025-06-18",
        capabilities: { tools: {}, ...(passesSignal() ? { experimental: { "mcpatch/within": {} } } : {}) },
        serverInfo: { name: "mcpatch-ai-sdk-host", version: `${pj.name} ${pj.version} ${build}` },
      };
    } else if (method === "ping") result = {};
    else if (method === "tools/list") {
      await connect();
      result = await client.listTools({ params: params?.cursor ? { cursor: params.cursor } : undefined, options: callOptions() });
    } else if (method === "tools/call") {
      await connect();
      const args = params?.arguments ?? {};
      result = await client.callTool({ name: params?.name, args, arguments: args, options: callOptions(params) });
    } else {
      write({ jsonrpc: "2.0", id, error: { code: -32601, message: `method not found: ${method}` } });
      return;
    }
    write({ jsonrpc: "2.0", id, result });
  } catch (e) {
    if (method !== "initialize") log(`${method} failed: ${e?.message ?? e}`);
    else log(`cannot connect to ${url}: ${e?.message ?? e}`);
    write({ jsonrpc: "2.0", id, error: errorOf(e) });
  }
}

let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
    const line = buffer.slice(0, nl).trim();
    buffer = buffer.slice(nl + 1);
    if (!line) continue;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      log(`not JSON on stdin: ${line.slice(0, 200)}`);
      continue;
    }
    handle(msg);
  }
});
process.stdin.on("end", async () => {
  log("stdin closed; closing the client");
  await Promise.race([Promise.resolve(client?.close()).catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
  await out;
  process.exit(0);
});
