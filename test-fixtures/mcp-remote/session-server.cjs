// A real stateful MCP server built with the TypeScript MCP SDK (1.x, fetched by
// scripts/fetch-fixtures.sh into .cache/mcp-servers/ts-sdk-*), with the session bookkeeping
// of test-fixtures/sdk-session-server.cjs (the SDK's documented pattern), answering a request
// whose session id it does not hold the way real servers do (chosen per run: 404, 400 or 401,
// see lostSessionAnswers there). Restarting the process loses every session, as a real
// restart does.
// argv: <prefix the SDK is installed in> <port, 0 = any free> <404|400|401> [--no-id-400]
// Without --no-id-400 a request with no session id at all (other than an initialize) gets the
// chosen answer too. With --no-id-400 only a request that NAMES a session the server does not
// hold gets it; one with no session id gets the SDK examples' 400 "Bad Request: No valid
// session ID provided" (POST) or "Bad Request: Mcp-Session-Id header is required" (GET,
// DELETE), whatever the mode (the mcp-sdk proofs: SDK 2.x clients such as @mastra/mcp and
// @openai/agents first probe with `server/discover` and no session id, and would read a 401
// there as "the server requires authorization", which is not what a server that lost a
// session does).
// stdout: "listening <url>", "session issued <id>", "session closed <id>", "arrival <text>",
// "initialize with session <id>" when a client sends initialize while naming a session (a
// strict server refuses that).
"use strict";
const shared = require("../sdk-session-server.cjs");

const [prefix, portArg, answer] = process.argv.slice(2);
const noId400 = process.argv.slice(5).includes("--no-id-400");
if (!prefix || portArg === undefined || !["404", "400", "401"].includes(answer)) {
  console.error("usage: session-server.cjs <sdk prefix> <port> <404|400|401>");
  process.exit(2);
}
const sdk = shared.loadSdk(prefix);
const lost = (req, res) => shared.lostSessionAnswers[answer](res);

// Calls of `echo` whose text starts with "fail-" get a failure that is not a
// session loss, on a live session; each arrival is logged so a test can count
// how often the bridge sent it: fail-500 (HTTP 500), fail-400 (HTTP 400
// "Invalid params"), fail-jsonrpc (a JSON-RPC error in a 200 answer),
// fail-cut (the connection closed with no answer).
const failure = (req, res, sessions) => {
  const text = req.body?.method === "tools/call" ? req.body.params?.arguments?.text : undefined;
  if (typeof text !== "string" || !text.startsWith("fail-")) return false;
  if (!sessions.has(req.headers["mcp-session-id"])) return false;
  console.log(`arrival ${text}`);
  const id = req.body.id;
  if (text.startsWith("fail-500")) shared.rpcError(res, 500, -32603, "Internal server error", id);
  else if (text.startsWith("fail-400")) shared.rpcError(res, 400, -32602, "Invalid params: text rejected by the server", id);
  else if (text.startsWith("fail-jsonrpc")) shared.rpcError(res, 200, -32603, "SSL SYSCALL error: EOF detected", id);
  else req.socket.destroy();
  return true;
};

const app = sdk.createMcpExpressApp();
shared.serveSessions(app, sdk, {
  newServer: () => shared.echoServer(sdk, "mcpatch-fixture-mcp-remote"),
  lost,
  noSessionPost: noId400 ? (req, res) => shared.noValidSessionId(res) : lost,
  noSessionStream: noId400
    ? (req, res) => shared.rpcError(res, 400, -32000, "Bad Request: Mcp-Session-Id header is required")
    : lost,
  beforePost: (req, res, sessions) => {
    if (failure(req, res, sessions)) return true;
    const sessionId = req.headers["mcp-session-id"];
    if (sessionId && sdk.isInitializeRequest(req.body)) console.log(`initialize with session ${sessionId}`);
    return false;
  },
});
shared.listen(app, portArg);
