// Runs the patch's own isSessionLostError (its JavaScript text, as the test read it
// from the patch embedded in mcpatch) on errors built exactly as the installed MCP
// SDK builds them, so the test can compare every verdict with mcpatch's Rust port.
// argv: <a dsh-mcp-client package folder, whose @modelcontextprotocol/sdk builds the errors>
// stdin: {"source": "<const SESSION_LOST_MESSAGE ... function isSessionLostError ...>",
//         "cases": [{"kind": "post"|"delete"|"sse", "status": n, "body_hex": "..."}
//                   | {"kind": "raw", "status": n|null, "code": n|null, "message": s|null}]}
// stdout: [{"text": <the body as the SDK read it, or null>, "lost": bool}, ...] in case order.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [pkg] = process.argv.slice(2);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const { source, cases } = JSON.parse(input);
const isSessionLostError = new Function(source + "\nreturn isSessionLostError;")();

const require = createRequire(pathToFileURL(pkg + "/package.json"));
const { StreamableHTTPError } = await import(
  pathToFileURL(require.resolve("@modelcontextprotocol/sdk/client/streamableHttp.js"))
);
const prefixes = {
  post: "Error POSTing to endpoint: ",
  delete: "Failed to terminate session: ",
  sse: "Failed to open SSE stream: ",
};

const out = [];
for (const c of cases) {
  if (c.kind === "raw") {
    const e = new Error(c.message ?? "");
    if (c.message === null) e.message = 42;
    if (c.status !== null) e.status = c.status;
    if (c.code !== null) e.code = c.code;
    out.push({ text: null, lost: isSessionLostError(e) });
    continue;
  }
  // The body as `await response.text()` reads it in the SDK.
  const text = await new Response(Buffer.from(c.body_hex, "hex")).text();
  out.push({ text, lost: isSessionLostError(new StreamableHTTPError(c.status, prefixes[c.kind] + text)) });
}
process.stdout.write(JSON.stringify(out));
