// Why this exists: mcpatch's stdio-bridge verify drives a stdio MCP server; @ai-sdk/mcp is a
// library, not a program. This host makes the INSTALLED library one: it loads the very build
// file mcpatch patched (ESM or CJS, resolved through the package's own package.json "exports"),
// opens `createMCPClient({ transport: { type: "http", url } })` against <url>, and serves
// tools/list and tools/call over stdio (newline-delimited JSON-RPC, written by hand), forwarding
// each to that client. Nothing else of the client is touched: what verify sees is what an app
// built on @ai-sdk/mcp sees.
// argv: <package-dir> <esm|cjs> <url>
// The client is created with maxRetries: 0 where the release has that option (2.0.9x), so a
// failed call is sent by the client exactly once and verify judges only the transport.
// stderr: one line per failure; exit 2 on bad arguments, 3 when the package cannot be loaded.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [pkgArg, build, url] = process.argv.slice(2);
if (!pkgArg || !["esm", "cjs"].includes(build) || !url) {
  process.stderr.write("usage: ai-sdk-host.mjs <package-dir> <esm|cjs> <url>\n");
  process.exit(2);
}
const pkg = resolve(pkgArg);
const fail = (why) => {
  process.stderr.write(`ai-sdk-host: ${why}\n`);
  process.exit(3);
};

let manifest;
try {
  manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
} catch (error) {
  fail(`cannot read ${join(pkg, "package.json")}: ${error.message}`);
}
const root = manifest.exports?.["."];
const pick = (entry) => (typeof entry === "string" ? entry : typeof entry?.default === "string" ? entry.default : undefined);
const rel =
  build === "esm"
    ? pick(root?.import) ?? manifest.module
    : pick(root?.require) ?? (manifest.type === "module" ? undefined : manifest.main);
if (!rel) fail(`${pkg} (@ai-sdk/mcp ${manifest.version}) has no ${build === "esm" ? "ESM" : "CJS"} build in its package.json`);
const file = join(pkg, rel);

let lib;
try {
  lib = build === "esm" ? await import(pathToFileURL(file).href) : createRequire(import.meta.url)(file);
} catch (error) {
  fail(`cannot load ${file}: ${error.message}`);
}
const create = lib.createMCPClient ?? lib.experimental_createMCPClient;
if (typeof create !== "function") fail(`${file} exports no createMCPClient`);

let client;
let connecting;
const connect = () =>
  (connecting ??= create({ transport: { type: "http", url }, maxRetries: 0, name: "mcpatch-ai-sdk-host" }).then((c) => {
    client = c;
    return c;
  }));

const out = (message) => {
  try {
    process.stdout.write(`${JSON.stringify(message)}\n`);
  } catch {
    process.exit(0);
  }
};
process.stdout.on("error", () => process.exit(0));
const words = (error) => {
  let text = error instanceof Error ? error.message : String(error);
  if (error?.responseBody && !text.includes(error.responseBody)) text += ` ${error.responseBody}`;
  return text;
};

async function handle(request) {
  const { id, method, params } = request;
  if (method === "initialize") {
    return {
      protocolVersion: params?.protocolVersion ?? "2025-06-18",
      capabilities: { tools: {} },
      serverInfo: { name: "mcpatch-ai-sdk-host", version: manifest.version ?? "0" },
    };
  }
  if (method === "ping") return {};
  const c = await connect();
  if (method === "tools/list") return c.listTools({ params: params?.cursor ? { cursor: params.cursor } : undefined });
  // The arguments go by both names: 1.x's callTool takes `args`, 2.x's `arguments`.
  const args = params?.arguments ?? {};
  if (method === "tools/call") return c.callTool({ name: params?.name, args, arguments: args });
  throw Object.assign(new Error(`method not found: ${method}`), { code: -32601, id });
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    out({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } });
    return;
  }
  if (request.id === undefined) return; // notifications: nothing to forward
  handle(request).then(
    (result) => out({ jsonrpc: "2.0", id: request.id, result }),
    (error) => {
      process.stderr.write(`ai-sdk-host: ${request.method} failed: ${words(error)}\n`);
      out({ jsonrpc: "2.0", id: request.id, error: { code: typeof error?.code === "number" ? error.code : -32603, message: words(error) } });
    },
  );
});
lines.on("close", () => {
  Promise.resolve(client?.close()).finally(() => process.exit(0));
});
