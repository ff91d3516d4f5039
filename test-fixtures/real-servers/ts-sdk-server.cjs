// A real MCP server built with the TypeScript MCP SDK (@modelcontextprotocol/sdk 1.x,
// fetched by scripts/fetch-fixtures.sh), in the SDK's documented Streamable HTTP
// patterns (its README and dist/esm/examples/server/):
//   stateful:  a StreamableHTTPServerTransport per session, kept by session id; a
//              request with an id the map does not hold gets the examples' own
//              answer (404, JSON-RPC -32001 "Session not found"); DELETE ends it.
//   stateless: a new server and transport per request, no session id
//              (simpleStatelessStreamableHttp), GET and DELETE answered 405.
// With a bearer token, every route sits behind the SDK's requireBearerAuth, whose
// verifier (like careless servers) repeats a wrong token in its error.
// argv: <prefix the SDK is installed in> <stateful|stateless> <port, 0 = any free> [bearer token]
// stdout: "listening <url>" once it accepts connections, "session issued <id>"
// for each session it opens, "session closed <id>" when one ends.
"use strict";
const { createRequire } = require("node:module");
const { randomUUID } = require("node:crypto");
const path = require("node:path");

const [prefix, mode, portArg, bearer] = process.argv.slice(2);
if (!prefix || !["stateful", "stateless"].includes(mode) || portArg === undefined) {
  console.error("usage: ts-sdk-server.cjs <sdk prefix> <stateful|stateless> <port> [bearer token]");
  process.exit(2);
}
const sdkRequire = createRequire(path.join(path.resolve(prefix), "noop.js"));
const sdk = (p) => sdkRequire(`@modelcontextprotocol/sdk/${p}`);
const { McpServer } = sdk("server/mcp.js");
const { StreamableHTTPServerTransport } = sdk("server/streamableHttp.js");
const { createMcpExpressApp } = sdk("server/express.js");
const { isInitializeRequest } = sdk("types.js");
const { requireBearerAuth } = sdk("server/auth/middleware/bearerAuth.js");
const { InvalidTokenError } = sdk("server/auth/errors.js");
const z = sdkRequire("zod/v4");

const getServer = () => {
  const server = new McpServer({ name: "mcpatch-fixture-ts", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns its text.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
};

const app = createMcpExpressApp();
if (bearer) {
  app.use(
    requireBearerAuth({
      verifier: {
        async verifyAccessToken(token) {
          if (token !== bearer) throw new InvalidTokenError(`Invalid token ${token}`);
          return { token, clientId: "fixture", scopes: [], expiresAt: Date.now() / 1000 + 3600 };
        },
      },
    }),
  );
}

if (mode === "stateful") {
  const transports = new Map();
  app.post("/mcp", async (req, res) => {
    const sessionId = req.headers["mcp-session-id"];
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
          if (id && transports.delete(id)) console.log(`session closed ${id}`);
        };
        await getServer().connect(transport);
      } else if (!transport && sessionId) {
        // Unknown or expired session ID - the client should start a new session
        res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
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
      res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      return;
    }
    await transport.handleRequest(req, res);
  };
  app.get("/mcp", sessionRoute);
  app.delete("/mcp", sessionRoute);
} else {
  app.post("/mcp", async (req, res) => {
    const server = getServer();
    try {
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
      res.on("close", () => {
        transport.close();
        server.close();
      });
    } catch (error) {
      console.error("error handling MCP request:", error);
      if (!res.headersSent) {
        res.status(500).json({ jsonrpc: "2.0", error: { code: -32603, message: "Internal server error" }, id: null });
      }
    }
  });
  const notAllowed = (req, res) => {
    res.writeHead(405).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null }));
  };
  app.get("/mcp", notAllowed);
  app.delete("/mcp", notAllowed);
}

const listener = app.listen(Number(portArg), "127.0.0.1", (error) => {
  if (error) {
    console.error(`cannot listen on 127.0.0.1:${portArg}: ${error.message}`);
    process.exit(1);
  }
  console.log(`listening http://127.0.0.1:${listener.address().port}/mcp`);
});
