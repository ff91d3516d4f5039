// mcpatch's verify host for the mcp-sdk target: it drives the INSTALLED MCP TypeScript SDK (the very files
// mcpatch patches) so the stdio-bridge verify driver can judge it like any bridge. It loads the install's own
// Client and StreamableHTTPClientTransport, connects to the fake server at <url>, and acts as a stdio MCP
// server to its parent (newline-delimited JSON-RPC on stdin/stdout, by hand: no SDK server):
//   initialize          answered here once the installed Client has connected (an error if it could not);
//                       capabilities.experimental "mcpatch/within": this host passes a call's own bounds
//   tools/list          forwarded to the installed Client (client.listTools)
//   tools/call          forwarded to the installed Client (client.callTool); an error thrown by the SDK
//                       becomes a JSON-RPC error carrying the SDK error's message. params._meta
//                       "mcpatch/within" {timeoutMs, abortMs} (verify's deadline and abort scenarios):
//                       the caller's own bounds on this call, given to the Client as its `timeout`
//                       and as a `signal` aborted after abortMs; not sent on
//   mcpatch/report      what the host saw of the Client, asked at the end of a run:
//                       {answersToUnsent, examples, signIns}: how many answers the Client's Protocol got
//                       for a request id it never sent (its onerror "Received a response for an unknown
//                       message ID", the id not among those the Client sent; an answer that came after its
//                       call gave up is not counted), up to 5 of them (escaped, cut to 300 characters),
//                       and how often the SDK's auth flow asked the authProvider to sign in
//   ping                answered here; notifications are ignored; anything else: -32601
// initialize params.capabilities.experimental "mcpatch/auth" (verify's OAuth scenarios): the transport is
// made with a minimal authProvider (a fixed bearer token; asked to sign in, it counts it and throws
// SIGN_IN), and the answer declares "mcpatch/auth" {fetchHook: whether the transport takes a fetch
// function}; without it the transport has none, as before.
// Logs go to stderr only (control characters escaped). Exits when stdin closes, closing the client.
// argv: <package-dir> <esm|cjs> <url> [<build-folder>]
//   @modelcontextprotocol/sdk 1.x:    dist/esm/client/{index,streamableHttp}.js or dist/cjs/client/…
//   @modelcontextprotocol/client 2.x: dist/index.mjs or dist/index.cjs
//   <build-folder>: a copy of the folder of those files (verify's mirror, beside the original, holding
//   the file to check); the same file names are loaded from it instead.
// env: MCPATCH_SDK_HOST_TIMEOUT_MS  the Client's per-request timeout (default: the SDK's own, 60 s)
// exit: 0 after stdin closed; 2 on bad arguments; 3 when the install cannot be loaded.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const clean = (s) => String(s).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
const log = (line) => {
  try {
    process.stderr.write(`sdk-host: ${clean(line)}\n`);
  } catch {
    // stderr closed: nothing to tell.
  }
};

const [pkgDir, build, url, buildDir] = process.argv.slice(2);
if (!pkgDir || !["esm", "cjs"].includes(build) || !url) {
  log("usage: sdk-host.mjs <package-dir> <esm|cjs> <url> [<build-folder>]");
  process.exit(2);
}

/** The install's Client and StreamableHTTPClientTransport, from the files of its `build`. */
async function loadInstall() {
  const pj = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8"));
  const files =
    pj.name === "@modelcontextprotocol/client"
      ? build === "esm" ? ["dist/index.mjs", "dist/index.mjs"] : ["dist/index.cjs", "dist/index.cjs"]
      : build === "esm" ? ["dist/esm/client/index.js", "dist/esm/client/streamableHttp.js"] : ["dist/cjs/client/index.js", "dist/cjs/client/streamableHttp.js"];
  const load = async (rel) => {
    const abs = buildDir ? path.resolve(buildDir, path.basename(rel)) : path.resolve(pkgDir, rel);
    return build === "esm" ? import(pathToFileURL(abs).href) : createRequire(import.meta.url)(abs);
  };
  const { Client } = await load(files[0]);
  const { StreamableHTTPClientTransport } = await load(files[1]);
  if (typeof Client !== "function" || typeof StreamableHTTPClientTransport !== "function")
    throw new Error(`${pkgDir} (${pj.name} ${pj.version}, ${build}) exports no Client or StreamableHTTPClientTransport`);
  return { Client, StreamableHTTPClientTransport, name: pj.name, version: pj.version };
}

let sdk;
try {
  sdk = await loadInstall();
} catch (e) {
  log(`cannot load the MCP SDK from ${pkgDir} (${build}): ${e?.message ?? e}`);
  process.exit(3);
}
log(`loaded ${sdk.name} ${sdk.version} (${build}) from ${buildDir ?? pkgDir}`);

const timeoutMs = Number(process.env.MCPATCH_SDK_HOST_TIMEOUT_MS) || undefined;
const requestOptions = timeoutMs ? { timeout: timeoutMs } : undefined;
const client = new sdk.Client({ name: "mcpatch-sdk-host", version: "1.0.0" }, { capabilities: {} });

/** What `mcpatch/report` answers: answers to ids the Client never sent, and sign-ins asked. */
const seen = { answersToUnsent: 0, examples: [], signIns: 0 };
/** Ids of the requests the Client sent through its transport (bounded: the oldest go first). */
const sentIds = new Set();
const UNKNOWN_ID = /^Received a response for an unknown message ID: (.*)$/s;
client.onerror = (e) => {
  const message = String(e?.message ?? e);
  log(`client error: ${message}`);
  const unknown = UNKNOWN_ID.exec(message);
  if (!unknown) return; // a lost session, a GET stream's end, ...: the SDK's own reports of what it met
  let id;
  try {
    id = JSON.parse(unknown[1])?.id;
  } catch {
    // Not the SDK's JSON: counted, as the id cannot be shown to be one the Client sent.
  }
  if (id !== undefined && sentIds.has(id)) return; // a late answer to a call that gave up
  seen.answersToUnsent++;
  if (seen.examples.length < 5) seen.examples.push(clean(message).slice(0, 300));
};

/** The sign-in an OAuth authProvider is asked for ends here: verify has no user to sign in. */
const SIGN_IN = "mcpatch-sdk-host: the SDK's auth flow asked to sign in; verify has no user to sign in";
const signIn = () => {
  seen.signIns++;
  log("the SDK's auth flow asked the authProvider to sign in");
  throw new Error(SIGN_IN);
};
/** A minimal authProvider of the install's kind: client 2.x takes {token, onUnauthorized}; sdk 1.x an
 *  OAuthClientProvider, whose flow asks discoveryState (newer releases) or clientInformation first. */
const authProvider = () =>
  sdk.name === "@modelcontextprotocol/client"
    ? { token: async () => "mcpatch-verify-token", onUnauthorized: async () => signIn() }
    : {
        get redirectUrl() {
          return "http://127.0.0.1/mcpatch-verify-callback";
        },
        get clientMetadata() {
          return { client_name: "mcpatch-sdk-host", redirect_uris: ["http://127.0.0.1/mcpatch-verify-callback"] };
        },
        discoveryState: () => signIn(),
        clientInformation: () => signIn(),
        tokens: () => ({ access_token: "mcpatch-verify-token", token_type: "Bearer" }),
        saveTokens: () => {},
        redirectToAuthorization: () => signIn(),
        saveCodeVerifier: () => {},
        codeVerifier: () => signIn(),
      };

let transport;
let connected;
const connect = (withAuth) => {
  if (connected) return connected;
  transport = new sdk.StreamableHTTPClientTransport(new URL(url), withAuth ? { authProvider: authProvider() } : undefined);
  const send = transport.send;
  transport.send = function (message, options) {
    if (message !== null && typeof message === "object" && "method" in message && message.id !== undefined) {
      if (sentIds.size >= 10000) sentIds.delete(sentIds.values().next().value);
      sentIds.add(message.id);
    }
    return send.apply(this, arguments);
  };
  connected = client.connect(transport).then(() => log(`connected to ${url}${withAuth ? " with an authProvider" : ""}`));
  return connected;
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
process.stderr.on("error", () => {});
process.on("unhandledRejection", (e) => log(`unhandled rejection: ${e?.message ?? e}`));

/** The request options of one call: the host's, and the caller's bounds its `_meta` carries. */
const optionsOf = (params) => {
  const within = params?._meta?.["mcpatch/within"];
  const ms = (v) => (Number.isInteger(v) && v > 0 ? v : undefined);
  const timeout = ms(within?.timeoutMs);
  const abort = ms(within?.abortMs);
  if (timeout === undefined && abort === undefined) return requestOptions;
  return { ...requestOptions, ...(timeout ? { timeout } : {}), ...(abort ? { signal: AbortSignal.timeout(abort) } : {}) };
};

const errorOf = (e) => ({ code: Number.isInteger(e?.code) && e.code < 0 ? e.code : -32603, message: String(e?.message ?? e) });

async function handle(msg) {
  const { id, method, params } = msg;
  if (id === undefined || typeof method !== "string") return; // notifications and stray answers
  try {
    let result;
    if (method === "initialize") {
      const withAuth = params?.capabilities?.experimental?.["mcpatch/auth"] !== undefined;
      await connect(withAuth);
      result = {
        protocolVersion: typeof params?.protocolVersion === "string" ? params.protocolVersion : "2025-06-18",
        // Every release hands a call's signal and timeout to its Protocol, which sends notifications/cancelled.
        capabilities: {
          tools: {},
          // fetchHook: whether the transport takes a fetch function (sdk 1.15 and later, client 2.x), the only
          // place a patch can read a 401's body before the SDK's auth flow takes it.
          experimental: {
            "mcpatch/within": {},
            "mcpatch/report": {},
            ...(withAuth ? { "mcpatch/auth": { fetchHook: "_fetch" in transport } } : {}),
          },
        },
        serverInfo: { name: "mcpatch-sdk-host", version: `${sdk.name} ${sdk.version} ${build}` },
      };
    } else if (method === "ping") result = {};
    else if (method === "mcpatch/report") result = { ...seen, examples: [...seen.examples] };
    else if (method === "tools/list") {
      await connect(false);
      result = await client.listTools(params, requestOptions);
    } else if (method === "tools/call") {
      await connect(false);
      const request = { name: params?.name, arguments: params?.arguments ?? {} };
      const options = optionsOf(params);
      // sdk 1.x: callTool(params, resultSchema, options); client 2.x: callTool(params, options).
      result = sdk.name === "@modelcontextprotocol/client" ? await client.callTool(request, options) : await client.callTool(request, undefined, options);
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
  await Promise.race([(connected ? client.close() : Promise.resolve()).catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
  await out;
  process.exit(0);
});
