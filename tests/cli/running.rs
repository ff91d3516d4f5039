//! A host loads the client once: after `apply` or `revert`, every DSH started
//! before the file changed still runs the old code. `status`, `apply` and
//! `revert` name those processes (from /proc) with the restart command.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;

const RESTART: &str = "kill $(lsof -ti tcp:3080 -sTCP:LISTEN); dsh web";

/// A child process killed when the test ends, pass or fail.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

/// Start `program args` and wait until its command line starts with `first`
/// (a `#!/usr/bin/env node` script becomes node once env has run it).
fn start(sb: &Sandbox, program: &Path, args: &[&str], first: &str) -> Running {
    let path = std::env::join_paths([sb.root().join("bin"), node22_dir()]).unwrap();
    let child = std::process::Command::new(program)
        .args(args)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", running.pid())).unwrap_or_default();
        if cmdline.starts_with(first.as_bytes()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not become {first}: {:?}",
            program.display(),
            String::from_utf8_lossy(&cmdline)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    running
}

/// A global DSH whose `dsh` bin keeps running, as `dsh web` does.
fn global_dsh_that_runs(sb: &Sandbox) -> PathBuf {
    let client = sb.global_dsh("0.1.0-rc.8");
    let bin = sb
        .root()
        .join("prefix/lib/node_modules/@deepseek-ai/dsh/lib/bin.js");
    std::fs::write(&bin, "#!/usr/bin/env node\nsetInterval(() => {}, 1000);\n").unwrap();
    client
}

fn running_of(v: &Value) -> Value {
    v["installs"][0]["running"].clone()
}

#[test]
fn a_dsh_started_before_apply_is_listed_by_pid_and_one_started_after_is_not() {
    let sb = Sandbox::new();
    let client = global_dsh_that_runs(&sb);
    let p = client.to_str().unwrap();
    let dsh = sb.root().join("bin/dsh");
    let file = client.join("lib/index.js");

    let before = start(&sb, &dsh, &["web"], "node\0");
    // A program that only names the file does not run it.
    let reader = start(
        &sb,
        Path::new("/usr/bin/tail"),
        &["-f", file.to_str().unwrap()],
        "/usr/bin/tail\0",
    );
    std::thread::sleep(Duration::from_millis(300));

    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = status_json(&sb, &["--path", p]);
    let started = running_of(&v)[0]["started"].as_str().unwrap().to_string();
    let command = format!("node {}/bin/dsh web", sb.root().display());
    assert_eq!(
        running_of(&v),
        json!([{"pid": before.pid(), "started": started, "command": command}]),
        "tail (pid {}) reads the file but does not run it",
        reader.pid()
    );
    let id = super::harden::backup_ids(&sb).remove(0);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "patched [SANDBOX]/prefix/lib/node_modules/@deepseek-ai/dsh/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8)
  sha256 now {}, original saved as backup {id}
  1 running process(es) started before the file last changed, so they still run the code it held before:
  pid {} since {started}: node [SANDBOX]/bin/dsh web
  restart them: {RESTART}
restart DSH so it loads the patched client; check it with `mcpatch verify --path [SANDBOX]/prefix/lib/node_modules/@deepseek-ai/dsh/node_modules/@deepseek-ai/dsh-mcp-client`
",
            short(&patched_hash()),
            before.pid()
        )
    );

    // Started after the apply: it loaded the patched file.
    std::thread::sleep(Duration::from_millis(300));
    let after = start(&sb, &dsh, &["web", "--after"], "node\0");
    let v = status_json(&sb, &["--path", p]);
    assert_eq!(
        running_of(&v),
        json!([{"pid": before.pid(), "started": started, "command": command}]),
        "pid {} started after the apply",
        after.pid()
    );
    let o = sb.run(&["status", "--path", p]);
    let text = sb.normalize(&o.stdout);
    assert!(
        text.contains(&format!(
            "  1 running process(es) started before the file last changed, so they still run the code it held before:
  pid {} since {started}: node [SANDBOX]/bin/dsh web
  restart them: {RESTART}
",
            before.pid()
        )),
        "{text}"
    );
    assert!(!text.contains(&format!("pid {} ", after.pid())), "{text}");

    // A revert changes the file again: both now run code that is gone.
    std::thread::sleep(Duration::from_millis(300));
    let o = sb.run(&["revert", "--json", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let pids: Vec<u64> = running_of(&v)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids, {
        let mut both = vec![u64::from(before.pid()), u64::from(after.pid())];
        both.sort();
        both
    });
    assert_eq!(
        running_of(&v)[1]["command"],
        format!("node {}/bin/dsh web --after", sb.root().display())
    );
}

#[test]
fn control_characters_in_a_running_command_line_are_escaped() {
    let sb = Sandbox::new();
    let client = global_dsh_that_runs(&sb);
    let p = client.to_str().unwrap();
    let dsh = sb.root().join("bin/dsh");
    let planted = start(&sb, &dsh, &["\u{1b}]0;owned\u{7}\u{1b}[2J"], "node\0");
    std::thread::sleep(Duration::from_millis(300));
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = sb.normalize(&o.stdout);
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(
        text.contains(": node [SANDBOX]/bin/dsh \\u{1b}]0;owned\\u{7}\\u{1b}[2J\n"),
        "pid {}: {text}",
        planted.pid()
    );
}

#[test]
fn node_running_a_file_of_a_client_outside_a_host_is_listed_with_its_own_restart_advice() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let script = client.join("keep.mjs");
    std::fs::write(&script, "setInterval(() => {}, 1000);\n").unwrap();
    let node = node22_dir().join("node");
    let user = start(
        &sb,
        &node,
        &[script.to_str().unwrap()],
        node.to_str().unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = sb.normalize(&o.stdout);
    assert!(
        text.contains(&format!(
            "  pid {} since {}: {} [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/keep.mjs\n  restart them: stop each of these processes and start it again\n",
            user.pid(),
            status_json(&sb, &["--path", p])["installs"][0]["running"][0]["started"]
                .as_str()
                .unwrap(),
            node.display()
        )),
        "{text}"
    );
}
