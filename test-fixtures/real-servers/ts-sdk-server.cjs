// A real MCP server built with the TypeScript MCP SDK (@modelcontextprotocol/sdk 1.x,
// fetched by scripts/fetch-fixtures.sh), in the SDK's documented Streamable HTTP
// patterns (its README and dist/esm/examples/server/):
//   stateful:  the session bookkeeping of test-fixtures/sdk-session-server.cjs; a request
//              with an id it does not hold gets the examples' own answer (404, JSON-RPC
//              -32001 "Session not found"); DELETE ends the session.
//   stateless: a new server and transport per request, no session id
//              (simpleStatelessStreamableHttp), GET and DELETE answered 405.
// With a bearer token, every route sits behind the SDK's requireBearerAuth, whose
// verifier (like careless servers) repeats a wrong token in its error.
// argv: <prefix the SDK is installed in> <stateful|stateless> <port, 0 = any free> [bearer token]
// stdout: "listening <url>" once it accepts connections, "session issued <id>"
// for each session it opens, "session closed <id>" when one ends.
"use strict";
const shared = require("../sdk-session-server.cjs");

const [prefix, mode, portArg, bearer] = process.argv.slice(2);
if (!prefix || !["stateful", "stateless"].includes(mode) || portArg === undefined) {
  console.error("usage: ts-sdk-server.cjs <sdk prefix> <stateful|stateless> <port> [bearer token]");
  process.exit(2);
}
const sdk = shared.loadSdk(prefix);
const { requireBearerAuth } = sdk.module("server/auth/middleware/bearerAuth.js");
const { InvalidTokenError } = sdk.module("server/auth/errors.js");

const getServer = () => shared.echoServer(sdk, "mcpatch-fixture-ts");

const app = sdk.createMcpExpressApp();
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
  shared.serveSessions(app, sdk, {
    newServer: getServer,
    lost: (req, res) => shared.lostSessionAnswers[404](res),
  });
} else {
  app.post("/mcp", async (req, res) => {
    const server = getServer();
    try {
      const transport = new sdk.StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
      res.on("close", () => {
        transport.close();
        server.close();
      });
    } catch (error) {
      shared.internalError(res, error);
    }
  });
  const notAllowed = (req, res) => {
    res.writeHead(405).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null }));
  };
  app.get("/mcp", notAllowed);
  app.delete("/mcp", notAllowed);
}

shared.listen(app, portArg);
