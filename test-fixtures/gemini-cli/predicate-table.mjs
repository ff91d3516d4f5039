// Checks the session-loss predicate of a gemini-cli chunk patched by mcpatch
// (McpClient.mcpatchIsSessionLost, read from the patched file's text) against errors shaped
// as the bundled MCP SDKs throw them: a plain Error("Error POSTing to endpoint (HTTP NNN): …")
// from 0.51 on, and the real SDK's StreamableHTTPError (numeric `code`) as in 0.45/0.47,
// plus errors that must reach the model unchanged (tool and JSON-RPC errors, timeouts,
// network errors, the GET stream's 404, 400/401 that do not name the session).
// argv: <patched chunk> [ts sdk prefix, default .cache/mcp-servers/ts-sdk-1.32.2]
// stdout: one line per case; exit 1 if any verdict differs from the expected one.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const [file, sdkPrefix = path.join(here, "../../.cache/mcp-servers/ts-sdk-1.32.2")] = process.argv.slice(2);
const text = readFileSync(file, "utf8");
const head = "  mcpatchIsSessionLost(error) {\n";
const from = text.indexOf(head);
const to = text.indexOf("\n  }\n", from);
if (from < 0 || to < 0) {
  console.error(`error: ${file} has no mcpatchIsSessionLost (not patched by mcpatch?)`);
  process.exit(1);
}
const isLost = new Function("error", text.slice(from + head.length, to));

const require = createRequire(path.join(path.resolve(sdkPrefix), "noop.js"));
const { StreamableHTTPError } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { McpError } = require("@modelcontextprotocol/sdk/types.js");
const plain = (status, body) => new Error(`Error POSTing to endpoint (HTTP ${status}): ${body}`); // 0.51+
const old = (status, body) => new StreamableHTTPError(status, `Error POSTing to endpoint: ${body}`); // 0.45, 0.47
const TS404 = '{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}';
const TS400 = '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}';

const cases = [
  ["plain 404 ts sdk", plain(404, TS404), true],
  ["plain 404 html", plain(404, "<html>Not Found</html>"), true],
  ["plain 404 python", plain(404, "Not Found: Invalid or expired session ID"), true],
  ["plain 400 ts examples", plain(400, TS400), true],
  ["plain 400 header required", plain(400, "Bad Request: Mcp-Session-Id header is required"), true],
  ["plain 400 server not initialized", plain(400, "Bad Request: Server not initialized"), true],
  ["plain 401 old rmcp", plain(401, "Unauthorized: Session not found"), true],
  ["plain 401 expired session", plain(401, "Unauthorized: session expired"), true],
  ["StreamableHTTPError 404", old(404, TS404), true],
  ["StreamableHTTPError 400 ts examples", old(400, TS400), true],
  ["StreamableHTTPError 401 old rmcp", old(401, "Unauthorized: Session not found"), true],
  ["numeric status 404", Object.assign(new Error("Not Found"), { status: 404 }), true],
  ["plain 500", plain(500, "Internal Server Error"), false],
  ["plain 400 invalid params", plain(400, '{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params"}}'), false],
  ["plain 400 naming a session field", plain(400, "Invalid params: session_label must be a string"), false],
  ["plain 401 bad token", plain(401, "Unauthorized: invalid token"), false],
  ["plain 403", plain(403, "Forbidden"), false],
  ["StreamableHTTPError 500", old(500, "Internal Server Error"), false],
  ["StreamableHTTPError 401 bad token", old(401, "Unauthorized: invalid token"), false],
  ["GET stream 404", new StreamableHTTPError(404, "Failed to open SSE stream: Not Found"), false],
  ["GET stream 404 plain", new Error("Failed to open SSE stream: Not Found (HTTP 404)"), false],
  ["jsonrpc error", new McpError(-32603, "SSL SYSCALL error: EOF detected"), false],
  ["timeout", new McpError(-32001, "Request timed out"), false],
  ["connection closed", new McpError(-32000, "Connection closed"), false],
  ["tool text naming HTTP 404", new McpError(-32603, "Error POSTing to endpoint (HTTP 404): upstream"), false],
  ["other text with (HTTP 404)", new Error("upstream answered (HTTP 404): Session not found"), false],
  ["plain error naming the session", new Error("Session not found"), false],
  ["string code", Object.assign(new Error("Session not found"), { code: "404" }), false],
  ["fetch failed", new TypeError("fetch failed"), false],
  ["abort", new DOMException("This operation was aborted", "AbortError"), false],
  ["null", null, false],
  ["string", "Error POSTing to endpoint (HTTP 404): x", false],
];
let bad = 0;
for (const [name, error, want] of cases) {
  const got = isLost(error);
  if (got !== want) bad++;
  console.log(`${got === want ? "ok  " : "FAIL"} ${name}: ${got}${got === want ? "" : ` (expected ${want})`}`);
}
if (bad) {
  console.error(`error: ${bad} of ${cases.length} verdicts differ`);
  process.exit(1);
}
console.log(`all ${cases.length} verdicts as expected`);
