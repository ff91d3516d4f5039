// A stateful MCP server built with the real TypeScript MCP SDK (@modelcontextprotocol/sdk
// 1.x from .cache/mcp-servers/ts-sdk-<v>), for driver.mjs, with the session bookkeeping of
// test-fixtures/sdk-session-server.cjs (the SDK's documented pattern, as
// test-fixtures/real-servers/ts-sdk-server.cjs); what it answers a request whose session id it
// does not hold (after a restart) is chosen per run, to cover how real servers answer:
//   404  JSON-RPC -32001 "Session not found"                        (TS SDK transport pattern)
//   400  JSON-RPC -32000 "Bad Request: No valid session ID provided" (TS SDK 1.x examples)
//   401  text "Unauthorized: Session not found"                      (rmcp < 0.17)
// One tool, `echo`, returns its text.
// argv: <prefix the SDK is installed in> <404|400|401> <port, 0 = any free> [slow ms: echo
//       answers every text but "call-1" only after this long]
// stdout: "listening <url>", "rpc <json-rpc method>" for every POSTed request or notification,
//         "session issued <id>", "session closed <id>", "call echo <text>",
//         "lost <status> <POST json-rpc method | GET | DELETE> <id>" for each request of an unknown session.
"use strict";
const shared = require("../sdk-session-server.cjs");

const [prefix, lost, portArg, slowArg] = process.argv.slice(2);
const slowMs = Number(slowArg ?? 0);
if (!prefix || !["404", "400", "401"].includes(lost) || portArg === undefined) {
  console.error("usage: mcp-server.cjs <sdk prefix> <404|400|401> <port>");
  process.exit(2);
}
const sdk = shared.loadSdk(prefix);

const app = sdk.createMcpExpressApp();
shared.serveSessions(app, sdk, {
  newServer: () =>
    shared.echoServer(sdk, "mcpatch-gemini-fixture", async (text) => {
      console.log(`call echo ${text}`);
      if (slowMs > 0 && text !== "call-1") await new Promise((r) => setTimeout(r, slowMs));
    }),
  lost: (req, res, sessionId) => {
    const method = req.method === "POST" ? `POST ${req.body?.method ?? "?"}` : req.method;
    console.log(`lost ${lost} ${method} ${sessionId}`);
    shared.lostSessionAnswers[lost](res);
  },
  beforePost: (req) => {
    for (const m of [req.body].flat()) if (m?.method) console.log(`rpc ${m.method}`);
    return false;
  },
});
shared.listen(app, portArg);
