// A stateful MCP server built with the real TypeScript MCP SDK (@modelcontextprotocol/sdk
// 1.x from .cache/mcp-servers/ts-sdk-<v>), for driver.mjs. It follows the SDK's documented
// Streamable HTTP pattern (a StreamableHTTPServerTransport per session, kept by session id,
// like test-fixtures/real-servers/ts-sdk-server.cjs); what it answers a request whose session
// id it does not hold (after a restart) is chosen per run, to cover how real servers answer:
//   404  JSON-RPC -32001 "Session not found"                        (TS SDK transport pattern)
//   400  JSON-RPC -32000 "Bad Request: No valid session ID provided" (TS SDK 1.x examples)
//   401  text "Unauthorized: Session not found"                      (rmcp < 0.17)
// One tool, `echo`, returns its text.
// argv: <prefix the SDK is installed in> <404|400|401> <port, 0 = any free> [slow ms: echo
//       answers every text but "call-1" only after this long]
// stdout: "listening <url>", "rpc <json-rpc method>" for every POSTed request or notification,
//         "session issued <id>", "call echo <text>",
//         "lost <status> <POST json-rpc method | GET | DELETE> <id>" for each request of an unknown session.
"use strict";
const { createRequire } = require("node:module");
const { randomUUID } = require("node:crypto");
const path = require("node:path");

const [prefix, lost, portArg, slowArg] = process.argv.slice(2);
const slowMs = Number(slowArg ?? 0);
if (!prefix || !["404", "400", "401"].includes(lost) || portArg === undefined) {
  console.error("usage: mcp-server.cjs <sdk prefix> <404|400|401> <port>");
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
  const server = new McpServer({ name: "mcpatch-gemini-fixture", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns its text.", inputSchema: { text: z.string() } },
    async ({ text }) => {
      console.log(`call echo ${text}`);
      if (slowMs > 0 && text !== "call-1") await new Promise((r) => setTimeout(r, slowMs));
      return { content: [{ type: "text", text }] };
    },
  );
  return server;
};

const answerLost = (req, res, sessionId) => {
  const method = req.method === "POST" ? `POST ${req.body?.method ?? "?"}` : req.method;
  console.log(`lost ${lost} ${method} ${sessionId}`);
  if (lost === "404") {
    res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
  } else if (lost === "400") {
    res.status(400).json({
      jsonrpc: "2.0",
      error: { code: -32000, message: "Bad Request: No valid session ID provided" },
      id: null,
    });
  } else {
    res.status(401).type("text/plain").send("Unauthorized: Session not found");
  }
};

const app = createMcpExpressApp();
const transports = new Map();
app.post("/mcp", async (req, res) => {
  const sessionId = req.headers["mcp-session-id"];
  for (const m of [req.body].flat()) if (m?.method) console.log(`rpc ${m.method}`);
  try {
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport && !sessionId && isInitializeRequest(req.body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, transport);
          console.log(`session issued ${id}`);
        },
      });
      transport.onclose = () => {
        const id = transport.sessionId;
        if (id) transports.delete(id);
      };
      await getServer().connect(transport);
    } else if (!transport && sessionId) {
      answerLost(req, res, sessionId);
      return;
    } else if (!transport) {
      res.status(400).json({
        jsonrpc: "2.0",
        error: { code: -32000, message: "Bad Request: No valid session ID provided" },
        id: null,
      });
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
  const sessionId = req.headers["mcp-session-id"];
  if (!sessionId) {
    res.status(400).send("Missing session ID");
    return;
  }
  const transport = transports.get(sessionId);
  if (!transport) {
    answerLost(req, res, sessionId);
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
