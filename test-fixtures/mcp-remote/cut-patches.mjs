// Cuts mcpatch's mcp-remote session-loss patches (patches/mcp-remote/*.patch) from
// real releases. Each patch only inserts code at spots whose lines the bundler
// does not rename (esbuild renames `error2` / `error51` between releases), so
// one diff fits every release of its family; the driver and
// scripts/mcp-remote-releases.sh prove which releases each one fits.
// argv: <out dir> <release root: <root>/<version>/package/dist/chunk-*.js>
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [outDir, root] = process.argv.slice(2);
if (!outDir || !root) {
  console.error("usage: cut-patches.mjs <out dir> <release root>");
  process.exit(2);
}

const MARK = "(mcpatch: mcp-remote-session-loss)";

// The narrow predicate of mcpatch's session-loss rules (the same words as
// dsh-mcp-client-session-loss revision 2).
const PREDICATE = `  /** Server words that name the request's session as gone (400/401 bodies of common MCP servers). */
  const mcpatchSessionLostMessage = /\\bno valid (?:mcp-)?session\\b|\\b(?:invalid|unknown|expired|missing)(?: or expired)? (?:mcp-)?session\\b|\\bsession(?:[ -]id)? (?:is )?(?:not found|invalid|unknown|expired)\\b|\\bsession[ -]id(?: header)? (?:is )?(?:missing|required)\\b|\\bsession (?:has )?expired\\b|\\bserver not initialized\\b/i;
  /**
  * Whether a failed send means the server no longer recognises the session
  * the request carried ${MARK}. Deliberately narrow: HTTP 404
  * (SDK 1.x numeric \`code\`, SDK 2.x numeric \`status\`), or a 400/401 whose
  * body names the session as missing, invalid, unknown, expired or not found.
  * Errors of the optional GET stream never count. Everything else (network,
  * timeouts, 5xx, other 4xx, JSON-RPC errors) surfaces unchanged.
  */
  function mcpatchIsSessionLost(error) {
    if (typeof error !== "object" || error === null) return false;
    const status = typeof error.status === "number" ? error.status : typeof error.code === "number" ? error.code : void 0;
    const message = typeof error.message === "string" ? error.message : "";
    if (/\\bSSE stream\\b/i.test(message)) return false;
    if (status === 404) return true;
    if (status !== 400 && status !== 401) return false;
    return mcpatchSessionLostMessage.test(message);
  }
  /**
  * The server's words for a loss, quoted so the bridge's sign-in path (which
  * starts on any message containing "Unauthorized") does not take an old
  * rmcp "Unauthorized: Session not found" for a demand to sign in.
  */
  function mcpatchWords(error) {
    return String(error?.message ?? error).slice(0, 300).replace(/Unauthorized/g, "unauthorized");
  }
  /**
  * A 401 whose body names the session is a lost session, not a demand to sign
  * in: the SDK would start OAuth on any 401, so such an answer to a request
  * that carried a session id becomes an error with \`status\` 401 and the body
  * here, before the SDK sees it.
  */
  const mcpatchFetch = transportToServer._fetch;
  if ("_fetch" in transportToServer) transportToServer._fetch = async (url, init) => {
    const response = await (mcpatchFetch ?? fetch)(url, init);
    if (response.status !== 401 || !new Headers(init?.headers).has("mcp-session-id")) return response;
    const text = await response.clone().text().catch(() => "");
    if (!mcpatchSessionLostMessage.test(text)) return response;
    await response.body?.cancel().catch(() => {});
    const method = init?.method ?? "GET";
    throw Object.assign(new Error(method === "POST" ? \`Error POSTing to endpoint: \${text}\` : \`HTTP 401 to \${method}: \${text}\`), { status: 401 });
  };
`;

// The release's own shared re-initialize (0.1.45 and later).
const OWN_REINIT = `  /** The release's own shared re-initialize (\`reinitInFlight\`) ${MARK}. */
  const mcpatchReinitInFlight = () => reinitInFlight;
  const mcpatchReinitialize = () => reinitializeSession();
`;

// Releases before 0.1.45 have no re-initialize: this one is shared by every
// request that meets the loss, like 0.1.45's \`reinitInFlight\`.
const ADDED_REINIT = `  /** The client's initialize, repeated (with a new id, no session id) to start a new session ${MARK}. */
  let mcpatchInitialize;
  let mcpatchReinit = null;
  let mcpatchReinitSeq = 0;
  const mcpatchPendingReinit = /* @__PURE__ */ new Map();
  const mcpatchOnmessage = transportToServer.onmessage;
  transportToServer.onmessage = (message, ...rest) => {
    const settle = typeof message?.id === "string" ? mcpatchPendingReinit.get(message.id) : void 0;
    if (settle === void 0) return mcpatchOnmessage?.(message, ...rest);
    mcpatchPendingReinit.delete(message.id);
    settle(message);
  };
  const mcpatchReinitInFlight = () => mcpatchReinit;
  function mcpatchReinitialize() {
    mcpatchReinit ??= mcpatchStartSession().finally(() => {
      mcpatchReinit = null;
    });
    return mcpatchReinit;
  }
  async function mcpatchStartSession() {
    if (mcpatchInitialize === void 0) throw new Error("no initialize request was seen, cannot start a new session");
    transportToServer._sessionId = void 0;
    const id = \`mcpatch-reinit-\${++mcpatchReinitSeq}\`;
    const response = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        mcpatchPendingReinit.delete(id);
        reject(new Error("timed out waiting for the re-initialize response"));
      }, 3e4);
      mcpatchPendingReinit.set(id, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      mcpatchSend({ ...mcpatchInitialize, id }).catch((error) => {
        clearTimeout(timer);
        mcpatchPendingReinit.delete(id);
        reject(error);
      });
    });
    if (response.error) throw new Error(\`server rejected re-initialize: \${JSON.stringify(response.error)}\`);
    const protocolVersion = response.result?.protocolVersion;
    if (typeof protocolVersion === "string") transportToServer.setProtocolVersion?.(protocolVersion);
    await mcpatchSend({ jsonrpc: "2.0", method: "notifications/initialized" });
    log(\`Re-established session \${transportToServer.sessionId ?? "(none)"} after the server lost the previous one\`);
  }
`;

const SEND = (recordsInitialize) => `  /**
  * Session-loss recovery ${MARK}. A request the server
  * answers with session loss was rejected before it ran, so it is sent once
  * more on a new session; requests that meet the loss together, or are made
  * while the new session starts, share one re-initialize. A second failure,
  * for any reason, reaches the client: no loop. Nothing else is sent twice.
  */
  const mcpatchSend = transportToServer.send.bind(transportToServer);
  transportToServer.send = async (message, ...rest) => {
${recordsInitialize ? `    if (message?.method === "initialize") mcpatchInitialize = message;\n` : ""}    const request = typeof message?.method === "string" && message.method !== "initialize" && message.id !== void 0 && message.id !== null;
    if (!request) return mcpatchSend(message, ...rest);
    await mcpatchReinitInFlight()?.catch(() => {});
    const sentWith = transportToServer.sessionId;
    try {
      return await mcpatchSend(message, ...rest);
    } catch (error) {
      if (sentWith === void 0 || !mcpatchIsSessionLost(error)) throw error;
      const words = mcpatchWords(error);
      log(\`The remote server no longer recognises the session (\${words}); re-initializing and sending \${message.method} once more\`);
      try {
        const current = transportToServer.sessionId;
        if (mcpatchReinitInFlight() || current === sentWith || current === void 0) await mcpatchReinitialize();
      } catch (reinitError) {
        // A refused new session leaves the transport with no session id: the lost one is put back, so the
        // next request meets the loss again and tries a new session (revision 2).
        if (transportToServer._sessionId === void 0) transportToServer._sessionId = sentWith;
        throw new Error(\`the remote server no longer recognises the session (\${words}) and starting a new one failed: \${reinitError?.message ?? String(reinitError)}\`);
      }
      try {
        return await mcpatchSend(message, ...rest);
      } catch (retryError) {
        if (!mcpatchIsSessionLost(retryError)) throw retryError;
        throw new Error(\`the remote server no longer recognises the new session either (\${mcpatchWords(retryError)})\`);
      }
    }
  };
`;

// Where the block goes: after the proxy's handlers are set, before its
// onerror lines; these four lines are the same in every release from 0.0.22 to 0.15.1.
// Equal context before and after: GNU patch takes a hunk with less context on
// one side for one at the start or end of the file.
const BEFORE = [
  "    transportToClient.close().catch(onClientError);",
  "  };",
];
const AFTER = ["  transportToClient.onerror = onClientError;", "  transportToServer.onerror = onServerError;"];

// <= 0.1.38 never answered a request whose send failed.
const FIRE_AND_FORGET = "    transportToServer.send(message).catch(onServerError);";
const ANSWERED = `    transportToServer.send(message).catch((error) => {
      onServerError(error);
      if (message.method === void 0 || message.id === void 0 || message.id === null) return;
      transportToClient.send({
        jsonrpc: "2.0",
        id: message.id,
        error: { code: -32603, message: \`Failed to forward message to remote server: \${error instanceof Error ? error.message : String(error)}\` }
      }).catch(onClientError);
    });`.split("\n");

function findLines(lines, seq, what) {
  const hits = [];
  for (let i = 0; i + seq.length <= lines.length; i++) {
    if (seq.every((s, k) => lines[i + k] === s)) hits.push(i);
  }
  if (hits.length !== 1) throw new Error(`${what}: expected one match, found ${hits.length}`);
  return hits[0];
}

/** One hunk: `at` is the 0-based line of the first context line. */
function hunk(lines, at, before, removed, added, after, delta) {
  const oldLen = before + removed + after;
  const newLen = before + added.length + after;
  const out = [`@@ -${at + 1},${oldLen} +${at + 1 + delta},${newLen} @@`];
  for (let i = at; i < at + before; i++) out.push(" " + lines[i]);
  for (let i = at + before; i < at + before + removed; i++) out.push("-" + lines[i]);
  for (const l of added) out.push("+" + l);
  for (let i = at + before + removed; i < at + oldLen; i++) out.push(" " + lines[i]);
  return { text: out.join("\n"), delta: delta + added.length - removed };
}

function cut(text, family) {
  const lines = text.split("\n");
  const hunks = [];
  let delta = 0;
  if (family === "unanswered") {
    const i = findLines(lines, [FIRE_AND_FORGET, "  };", "  transportToServer.onmessage = (_message) => {"], "fire-and-forget send");
    const h = hunk(lines, i - 3, 3, 1, ANSWERED, 3, delta);
    hunks.push(h.text);
    delta = h.delta;
  }
  const j = findLines(lines, [...BEFORE, ...AFTER], "insertion point");
  const block = PREDICATE + (family === "reinit" ? OWN_REINIT : ADDED_REINIT) + SEND(family !== "reinit");
  const h = hunk(lines, j, BEFORE.length, 0, block.replace(/\n$/, "").split("\n"), AFTER.length, delta);
  hunks.push(h.text);
  return ["--- a/dist/chunk.js", "+++ b/dist/chunk.js", ...hunks, ""].join("\n");
}

const FAMILIES = {
  // file name -> [family, the release it is cut from]
  "session-loss-reinit.patch": ["reinit", "0.15.1"],
  "session-loss-forward.patch": ["forward", "0.1.44"],
  "session-loss-unanswered.patch": ["unanswered", "0.1.38"],
};
for (const [name, [family, version]] of Object.entries(FAMILIES)) {
  const dist = join(root, version, "package", "dist");
  const chunk = readdirSync(dist)
    .filter((n) => /^chunk-.*\.js$/.test(n))
    .map((n) => join(dist, n))
    .find((p) => readFileSync(p, "utf8").includes("function mcpProxy("));
  if (!chunk) throw new Error(`no chunk with function mcpProxy( in ${dist}`);
  writeFileSync(join(outDir, name), cut(readFileSync(chunk, "utf8"), family));
  console.log(`${name}: cut from ${version} (${chunk})`);
}
