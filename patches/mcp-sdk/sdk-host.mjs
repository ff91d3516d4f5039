// PROVISIONAL stand-in (sdk-target) until sdk-patch's sdk-host.mjs lands.
// mcpatch's verify runs it as a stdio bridge:
//   node sdk-host.mjs <package-dir> esm|cjs <url> [<build-dir>]
// It relays JSON-RPC lines between stdin/stdout and the install's own
// StreamableHTTPClientTransport (the file mcpatch patches), loaded from the
// package folder, or from <build-dir>, a copy holding the file to check.
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import readline from "node:readline";

const [pkg, build, url, dir] = process.argv.slice(2);
const two = existsSync(join(pkg, "dist", "index.mjs"));
const file = two
  ? join(dir ?? join(pkg, "dist"), build === "esm" ? "index.mjs" : "index.cjs")
  : join(dir ?? join(pkg, "dist", build, "client"), "streamableHttp.js");
const mod = build === "esm"
  ? await import(pathToFileURL(file).href)
  : createRequire(import.meta.url)(file);
const transport = new mod.StreamableHTTPClientTransport(new URL(url));
transport.onmessage = (m) => process.stdout.write(JSON.stringify(m) + "\n");
transport.onerror = (e) => process.stderr.write(`transport error: ${e?.message ?? e}\n`);
await transport.start();
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  try {
    await transport.send(msg);
  } catch (e) {
    process.stderr.write(`send failed: ${e?.message ?? e}\n`);
    if (msg.id !== undefined) {
      process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32000, message: String(e?.message ?? e) } }) + "\n");
    }
  }
});
rl.on("close", () => transport.close().finally(() => process.exit(0)));
