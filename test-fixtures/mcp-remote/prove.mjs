// Proves mcpatch's mcp-remote patches on real releases: for each release, runs
// drive.mjs against the installed (unpatched) package and against a patched copy
// in a temp dir (the manifest's patch for that file's sha256, applied with GNU
// patch, no fuzz), for each way a server answers a lost session. Prints one line
// per run and a JSON summary; exits 1 when a patched run failed a call, started
// more than one new session per restart, sent initialize on a live session, or
// sent a call twice / left it unanswered after a failure that is not session loss.
// argv: --releases DIR (DIR/<version>/node_modules/mcp-remote, made by
//        scripts/mcp-remote-releases.sh --install <versions>)
//       --sdk PREFIX --node PATH [--versions a,b,c] [--unpatched a,b,c] [--answers 404,400,401]
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const releases = opt("--releases");
const sdk = opt("--sdk");
const node = opt("--node", process.execPath);
const list = (s) => (s ? s.split(",").filter(Boolean) : []);
const versions = list(opt("--versions", ""));
const unpatched = list(opt("--unpatched", ""));
const answers = list(opt("--answers", "404,400,401"));
if (!releases || !sdk || (!versions.length && !unpatched.length)) {
  console.error("usage: prove.mjs --releases DIR --sdk PREFIX [--node PATH] [--versions a,b] [--unpatched a,b] [--answers 404,400,401]");
  process.exit(2);
}
const manifestDir = join(repo, "patches", "mcp-remote");
const manifest = JSON.parse(readFileSync(join(manifestDir, "manifest.json"), "utf8"));
const find = manifest.files[0].find;
const sha = (b) => createHash("sha256").update(b).digest("hex");

function chunkOf(pkg) {
  const dist = join(pkg, "dist");
  const hits = readdirSync(dist)
    .filter((n) => /^chunk-.*\.js$/.test(n))
    .filter((n) => find.contains.every((s) => readFileSync(join(dist, n), "utf8").includes(s)));
  if (hits.length !== 1) throw new Error(`${dist}: ${hits.length} chunks hold the proxy`);
  return join(dist, hits[0]);
}

for (const v of [...new Set([...versions, ...unpatched])]) {
  if (!existsSync(join(releases, v, ".done")) || !existsSync(join(releases, v, "node_modules", "mcp-remote", "dist", "proxy.js"))) {
    console.error(`prove.mjs: no finished install of mcp-remote ${v} in ${join(releases, v)}; run scripts/mcp-remote-releases.sh --install ${v}`);
    process.exit(2);
  }
}

const scratch = mkdtempSync(join(tmpdir(), "mcpatch-prove-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => process.exit(130));

/** A copy of the release's install with the manifest's patch applied; its package folder. */
function patchedCopy(version) {
  const from = join(releases, version, "node_modules");
  const to = join(scratch, version, "node_modules");
  cpSync(from, to, { recursive: true });
  const pkg = join(to, "mcp-remote");
  const chunk = chunkOf(pkg);
  const before = sha(readFileSync(chunk));
  const rev = manifest.revisions.find((r) => r.sha256 === before);
  if (!rev || rev.kind !== "original") throw new Error(`${version}: ${chunk} (sha256 ${before}) is not a known affected revision`);
  execFileSync("patch", ["--fuzz=0", "--quiet", "--batch", "--forward", chunk, join(manifestDir, rev.patch)], { stdio: "inherit" });
  const after = sha(readFileSync(chunk));
  if (after !== rev.patched_sha256) throw new Error(`${version}: patched file has sha256 ${after}, the manifest says ${rev.patched_sha256}`);
  return { pkg, patch: rev.patch };
}

const runs = [];
function drive(version, pkg, patched, answer) {
  const logFile = join(tmpdir(), `mcpatch-drive-${version}-${patched ? "patched" : "unpatched"}-${answer}.log`);
  const r = spawnSync(node, [join(here, "drive.mjs"), "--package", pkg, "--sdk", sdk, "--answer", answer, "--node", node, "--log", logFile], {
    encoding: "utf8",
    timeout: 180_000,
  });
  if (r.status !== 0) {
    console.error(r.stderr);
    throw new Error(`drive.mjs exited ${r.status ?? r.signal} for ${version} ${answer} (log ${logFile})`);
  }
  const out = JSON.parse(r.stdout);
  const run = {
    version,
    patched,
    answer: Number(answer),
    calls: out.calls,
    failed: out.failed,
    hung: out.hung,
    sessions_after_restart: out.sessions_after_restart,
    initialize_with_session: out.initialize_with_session,
    not_session_loss: out.not_session_loss,
  };
  runs.push(run);
  const others = Object.entries(out.not_session_loss)
    .map(([k, v]) => `${k.slice(5)} ${v.answered}/${v.arrivals}x`)
    .join(" ");
  console.log(
    `${version.padEnd(7)} ${patched ? "patched  " : "unpatched"} ${answer}: ${out.failed}/${out.calls} failed (${out.hung} hung), ` +
      `new sessions after each restart ${out.sessions_after_restart.join(",")}; not session loss: ${others}`,
  );
  return run;
}

for (const v of unpatched) {
  const pkg = join(releases, v, "node_modules", "mcp-remote");
  for (const a of answers) drive(v, pkg, false, a);
}
let bad = 0;
for (const v of versions) {
  const { pkg, patch } = patchedCopy(v);
  console.log(`${v}: ${patch}`);
  for (const a of answers) {
    const run = drive(v, pkg, true, a);
    const resentOrSwallowed = Object.values(run.not_session_loss).some((v) => v.answered !== "error" || v.arrivals !== 1);
    if (run.failed || run.sessions_after_restart.some((n) => n !== 1) || run.initialize_with_session || resentOrSwallowed) {
      console.log(`${v} ${a}: NOT PROVEN`);
      bad++;
    }
  }
}
console.log(JSON.stringify({ runs }));
process.exit(bad ? 1 : 0);
