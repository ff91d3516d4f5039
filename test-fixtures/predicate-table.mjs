// Runs the patched file's isSessionLostError against real MCP SDK error objects
// and SDK 2.x-shaped ones; prints one JSON object: case name -> verdict.
// argv: <patched lib/index.js> <the install's package folder>
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [file, pkg] = process.argv.slice(2);
const text = readFileSync(file, "utf8");
const from = text.indexOf("const SESSION_LOST_MESSAGE = ");
const to = text.indexOf("\n}\n", text.indexOf("function isSessionLostError(")) + 3;
if (from < 0 || to < 3) throw new Error("isSessionLostError not found in " + file);
const isSessionLostError = new Function(text.slice(from, to) + "\nreturn isSessionLostError;")();

const require = createRequire(pathToFileURL(pkg + "/package.json"));
const sdk = (p) => import(pathToFileURL(require.resolve("@modelcontextprotocol/sdk/" + p)));
const { StreamableHTTPError } = await sdk("client/streamableHttp.js");
const { McpError } = await sdk("types.js");
const post = (status, body) => new StreamableHTTPError(status, `Error POSTing to endpoint: ${body}`);
const v2 = (status, code, message) => Object.assign(new Error(message), { name: "SdkHttpError", status, code });

const cases = {
  "404 json -32001": post(404, '{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"Session not found"}}'),
  "404 html": post(404, "<html><body>Not Found</body></html>"),
  "404 rmcp": post(404, "Not Found: Session not found"),
  "404 python": post(404, "Not Found: Invalid or expired session ID"),
  "400 ts examples": post(400, '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}'),
  "400 python text": post(400, "Bad Request: No valid session ID provided"),
  "400 header required": post(400, "Bad Request: Mcp-Session-Id header is required"),
  "400 server not initialized": post(400, '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}'),
  "401 old rmcp": post(401, "Unauthorized: Session not found"),
  "v2 404": v2(404, "HTTP_NOT_FOUND", "Not Found"),
  "v2 400 session": v2(400, "BAD_REQUEST", "Bad Request: No valid session ID provided"),
  "500": post(500, "Internal Server Error"),
  "400 invalid params": post(400, '{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: kind http400 rejected by the server"}}'),
  "400 invalid params naming a session field": post(400, "Invalid params: session_label must be a string"),
  "401 bad token": post(401, "Unauthorized: invalid token"),
  "403": post(403, "Forbidden"),
  "404 on the GET stream": new StreamableHTTPError(404, "Failed to open SSE stream: Not Found"),
  "jsonrpc error": new McpError(-32603, "SSL SYSCALL error: EOF detected"),
  "timeout": new McpError(-32001, "Request timed out"),
  "v2 string code": v2(500, "404", "Internal Server Error"),
  "string code only": Object.assign(new Error("Session not found"), { code: "404" }),
  "plain error naming the session": new Error("Session not found"),
  "fetch failed": new TypeError("fetch failed"),
  "abort": new DOMException("This operation was aborted", "AbortError"),
  "null": null,
  "string": "Session not found",
};
const out = {};
for (const [name, error] of Object.entries(cases)) out[name] = isSessionLostError(error);
console.log(JSON.stringify(out));
