// A real stateful MCP server built with the TypeScript MCP SDK (1.x, fetched by
// scripts/fetch-fixtures.sh into .cache/mcp-servers/ts-sdk-*), in the SDK's
// documented pattern (a StreamableHTTPServerTransport per session, kept by id),
// answering a request whose session id it does not hold the way real servers do:
//   404  the SDK examples since PR #1770: JSON-RPC -32001 "Session not found"
//   400  the SDK examples before it (and Python SDK <= 1.25):
//        JSON-RPC -32000 "Bad Request: No valid session ID provided"
//   401  rmcp < 0.17: text "Unauthorized: Session not found"
// Restarting the process loses every session, as a real restart does.
// argv: <prefix the SDK is installed in> <port, 0 = any free> <404|400|401> [--no-id-400]
// With --no-id-400 only a request that NAMES a session the server does not hold gets the chosen
// answer; one with no session id at all gets the SDK examples' 400 "Bad Request: No valid session
// ID provided", whatever the mode (the mcp-sdk proofs: SDK 2.x clients such as @mastra/mcp and
// @openai/agents first probe with `server/discover` and no session id, and would read a 401 there
// as "the server requires authorization", which is not what a server that lost a session does).
// stdout: "listening <url>", "session issued <id>", "arrival <text>", "initialize with session <id>"
// when a client sends initialize while naming a session (a strict server refuses that).
"use strict";
const { createRequire } = require("node:module");
const { randomUUID } = require("node:crypto");
const path = require("node:path");

const [prefix, portArg, answer] = process.argv.slice(2);
const noId400 = process.argv.slice(5).includes("--no-id-400");
if (!prefix || portArg === undefined || !["404", "400", "401"].includes(answer)) {
  console.error("usage: session-server.cjs <sdk prefix> <port> <404|400|401>");
  process.exit(2);
}
const sdkRequire = createRequire(path.join(path.resolve(prefix), "noop.js"));
const sdk = (p) => sdkRequire(`@modelcontextprotocol/sdk/${p}`);
const { McpServer } = sdk("server/mcp.js");
const { StreamableHTTPServerTransport } = sdk("server/streamableHttp.js");
const { createMcpExpressApp } = sdk("server/express.js");
const { isInitializeRequest } = sdk("types.js");
const z = sdkRequire("zod/v4");

const getServer = () => {
  const server = new McpServer({ name: "mcpatch-fixture-mcp-remote", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns its text.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
};

const lost = (res) => {
  if (answer === "404") {
    res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
  } else if (answer === "400") {
    res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null });
  } else {
    res.status(401).type("text/plain").send("Unauthorized: Session not found");
  }
};

// Calls of `echo` whose text starts with "fail-" get a failure that is not a
// session loss, on a live session; each arrival is logged so a test can count
// how often the bridge sent it: fail-500 (HTTP 500), fail-400 (HTTP 400
// "Invalid params"), fail-jsonrpc (a JSON-RPC error in a 200 answer),
// fail-cut (the connection closed with no answer).
const failure = (req, res) => {
  const text = req.body?.method === "tools/call" ? req.body.params?.arguments?.text : undefined;
  if (typeof text !== "string" || !text.startsWith("fail-")) return false;
  if (!transports.has(req.headers["mcp-session-id"])) return false;
  console.log(`arrival ${text}`);
  const id = req.body.id;
  if (text.startsWith("fail-500")) res.status(500).json({ jsonrpc: "2.0", error: { code: -32603, message: "Internal server error" }, id });
  else if (text.startsWith("fail-400")) res.status(400).json({ jsonrpc: "2.0", error: { code: -32602, message: "Invalid params: text rejected by the server" }, id });
  else if (text.startsWith("fail-jsonrpc")) res.status(200).json({ jsonrpc: "2.0", error: { code: -32603, message: "SSL SYSCALL error: EOF detected" }, id });
  else req.socket.destroy();
  return true;
};

const app = createMcpExpressApp();
const transports = new Map();
app.post("/mcp", async (req, res) => {
  const sessionId = req.headers["mcp-session-id"];
  if (failure(req, res)) return;
  try {
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (sessionId && isInitializeRequest(req.body)) console.log(`initialize with session ${sessionId}`);
    if (!transport && !sessionId && isInitializeRequest(req.body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, transport);
          console.log(`session issued ${id}`);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) transports.delete(transport.sessionId);
      };
      await getServer().connect(transport);
    } else if (!transport && !sessionId && noId400) {
      res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null });
      return;
    } else if (!transport) {
      lost(res);
      return;
    }
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    console.error("error handling MCP request:", error);
    if (!res.headersSent) {
      res.status(500).json({ jsonrpc: "2.0", error: { code: -32603, message: "Internal server error" }, id: null });
    }
  }
});
const sessionRoute = async (req, res) => {
  if (noId400 && !req.headers["mcp-session-id"]) {
    res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: Mcp-Session-Id header is required" }, id: null });
    return;
  }
  const transport = transports.get(req.headers["mcp-session-id"]);
  if (!transport) {
    lost(res);
    return;
  }
  await transport.handleRequest(req, res);
};
app.get("/mcp", sessionRoute);
app.delete("/mcp", sessionRoute);

const listener = app.listen(Number(portArg), "127.0.0.1", (error) => {
  if (error) {
    console.error(`cannot listen on 127.0.0.1:${portArg}: ${error.message}`);
    process.exit(1);
  }
  console.log(`listening http://127.0.0.1:${listener.address().port}/mcp`);
});
process.on("SIGTERM", () => {
  listener.closeAllConnections?.();
  listener.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 500).unref();
});
