// The session bookkeeping the Node test servers share (issue 32): each is a real stateful MCP
// server built on the TypeScript MCP SDK (1.x, fetched by scripts/fetch-fixtures.sh into
// .cache/mcp-servers/ts-sdk-*) in the SDK's documented Streamable HTTP pattern (its README and
// dist/esm/examples/server/): a StreamableHTTPServerTransport per session, kept by session id,
// created for an initialize that names no session, and ended by DELETE. Each server adds only
// what is its own: the answer to a request naming a session it does not hold, the answer to a
// request with no session id, its tool's extras and its own stdout lines.
//   test-fixtures/real-servers/ts-sdk-server.cjs  (tests/cli/real_servers.rs)
//   test-fixtures/mcp-remote/session-server.cjs   (mcp-remote, mcp-sdk and ai-sdk-mcp proofs)
//   test-fixtures/gemini-cli/mcp-server.cjs       (test-fixtures/gemini-cli/driver.mjs)
// stdout written here: "listening <url>" once it accepts connections, "session issued <id>" for
// each session opened, "session closed <id>" when one ends (DELETE, or its transport closes).
"use strict";
const { createRequire } = require("node:module");
const { randomUUID } = require("node:crypto");
const path = require("node:path");

/** The SDK's modules (and its zod), loaded from the prefix the SDK is installed in. */
function loadSdk(prefix) {
  const sdkRequire = createRequire(path.join(path.resolve(prefix), "noop.js"));
  const sdk = (p) => sdkRequire(`@modelcontextprotocol/sdk/${p}`);
  return {
    module: sdk,
    McpServer: sdk("server/mcp.js").McpServer,
    StreamableHTTPServerTransport: sdk("server/streamableHttp.js").StreamableHTTPServerTransport,
    createMcpExpressApp: sdk("server/express.js").createMcpExpressApp,
    isInitializeRequest: sdk("types.js").isInitializeRequest,
    z: sdkRequire("zod/v4"),
  };
}

/** A new McpServer named `name` with the one tool every fixture has: `echo` returns its text,
 * after `beforeEcho(text)` (if given) has run and settled. */
function echoServer(sdk, name, beforeEcho) {
  const server = new sdk.McpServer({ name, version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns its text.", inputSchema: { text: sdk.z.string() } },
    async ({ text }) => {
      if (beforeEcho) await beforeEcho(text);
      return { content: [{ type: "text", text }] };
    },
  );
  return server;
}

/** A JSON-RPC error answer with HTTP `status`. */
function rpcError(res, status, code, message, id = null) {
  res.status(status).json({ jsonrpc: "2.0", error: { code, message }, id });
}

/** How real servers answer a request naming a session they do not hold (after a restart):
 *   404  the TS SDK examples since PR #1770 (and its transport pattern): JSON-RPC -32001 "Session not found"
 *   400  the TS SDK examples before it (and Python SDK <= 1.25):
 *        JSON-RPC -32000 "Bad Request: No valid session ID provided"
 *   401  rmcp < 0.17: text "Unauthorized: Session not found" */
const lostSessionAnswers = {
  404: (res) => rpcError(res, 404, -32001, "Session not found"),
  400: (res) => noValidSessionId(res),
  401: (res) => res.status(401).type("text/plain").send("Unauthorized: Session not found"),
};

/** The SDK examples' answer to a POST that is no initialize and names no session. */
function noValidSessionId(res) {
  rpcError(res, 400, -32000, "Bad Request: No valid session ID provided");
}

/** Serves stateful sessions on POST, GET and DELETE /mcp of `app`; returns the map of open
 * transports by session id.
 *   newServer()                    a new McpServer for a new session
 *   lost(req, res, sessionId)      answers a request naming a session the map does not hold
 *   noSessionPost(req, res)        answers a POST that is no initialize and names no session
 *                                  (default: the SDK examples' 400 "No valid session ID provided")
 *   noSessionStream(req, res)      answers a GET or DELETE that names no session
 *                                  (default: the SDK examples' 400 text "Missing session ID")
 *   beforePost(req, res, sessions) runs first on every POST; returns true when it has answered */
function serveSessions(app, sdk, { newServer, lost, noSessionPost, noSessionStream, beforePost }) {
  const sessions = new Map();
  app.post("/mcp", async (req, res) => {
    if (beforePost?.(req, res, sessions)) return;
    const sessionId = req.headers["mcp-session-id"];
    try {
      let transport = sessionId ? sessions.get(sessionId) : undefined;
      if (!transport && !sessionId && sdk.isInitializeRequest(req.body)) {
        transport = new sdk.StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            sessions.set(id, transport);
            console.log(`session issued ${id}`);
          },
        });
        transport.onclose = () => {
          const id = transport.sessionId;
          if (id && sessions.delete(id)) console.log(`session closed ${id}`);
        };
        await newServer().connect(transport);
      } else if (!transport && sessionId) {
        lost(req, res, sessionId);
        return;
      } else if (!transport) {
        if (noSessionPost) noSessionPost(req, res);
        else noValidSessionId(res);
        return;
      }
      await transport.handleRequest(req, res, req.body);
    } catch (error) {
      internalError(res, error);
    }
  });
  const sessionRoute = async (req, res) => {
    const sessionId = req.headers["mcp-session-id"];
    if (!sessionId) {
      if (noSessionStream) noSessionStream(req, res);
      else res.status(400).send("Missing session ID");
      return;
    }
    const transport = sessions.get(sessionId);
    if (!transport) {
      lost(req, res, sessionId);
      return;
    }
    await transport.handleRequest(req, res);
  };
  app.get("/mcp", sessionRoute);
  app.delete("/mcp", sessionRoute);
  return sessions;
}

/** Logs `error` to stderr and answers 500, unless an answer has already begun. */
function internalError(res, error) {
  console.error("error handling MCP request:", error);
  if (!res.headersSent) rpcError(res, 500, -32603, "Internal server error");
}

/** Listens on 127.0.0.1:`port` (0 = any free) and prints "listening <url>"; exits 1 naming the
 * address if it cannot. On SIGTERM it closes every connection and exits 0, so a driver that
 * restarts it on the same port finds the port free once it has exited. */
function listen(app, port) {
  const listener = app.listen(Number(port), "127.0.0.1", (error) => {
    if (error) {
      console.error(`cannot listen on 127.0.0.1:${port}: ${error.message}`);
      process.exit(1);
    }
    console.log(`listening http://127.0.0.1:${listener.address().port}/mcp`);
  });
  process.on("SIGTERM", () => {
    listener.closeAllConnections?.();
    listener.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 500).unref();
  });
  return listener;
}

module.exports = { loadSdk, echoServer, rpcError, lostSessionAnswers, noValidSessionId, serveSessions, internalError, listen };
