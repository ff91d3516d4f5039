//! What a hostile or broken bridge must not do to mcpatch (issue 29, items 5,
//! 6, 7, 12 and 14): grow its memory without bound (an endless stderr line, a
//! flood of requests while it never reads its stdin), stop the reading of its
//! stderr with a byte that is not UTF-8, make mcpatch run another file than
//! the install's, outlive mcpatch, or see mcpatch's environment (tokens).
//! The bridges are the real fixture bridge on the real MCP SDK and the real
//! mcp-remote 0.15.1, wrapped in `sh -c` for the hostile part.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::bridge::{
    fixture, marked_processes, processes_left, scenario, verdict, verify_bridge, MARKER,
};
use super::mcp_remote::{copy_node_modules, json, output_within_five_minutes};
use super::*;

/// Most memory mcpatch may hold while it checks a bridge, however the bridge behaves.
const RSS_LIMIT_KB: u64 = 100 * 1024;

/// The fixture bridge `mode`, started by a shell that first runs `before`
/// (the URL comes last, as `verify --command` appends it).
fn wrapped(before: &str, mode: &str) -> String {
    wrapped_with(before, mode, "")
}

/// [`wrapped`], the bridge's own output redirected by `redirect` (e.g. `2>/dev/null`).
fn wrapped_with(before: &str, mode: &str, redirect: &str) -> String {
    let fixture = fixture(mode);
    format!("/bin/sh -c '{before} exec \"$0\" \"$@\" {redirect}' {fixture}")
}

/// Resident memory of `pid` in kB (0 once it is gone).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Run `cmd` to the end, killing it and failing the test as soon as its
/// memory passes [`RSS_LIMIT_KB`]; returns its output and its peak memory.
fn run_within_memory(mut cmd: std::process::Command, what: &str) -> (Output, u64) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Read the pipes aside so a full pipe never stalls mcpatch.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let started = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let rss = rss_kb(pid);
        peak = peak.max(rss);
        if rss > RSS_LIMIT_KB || started.elapsed() > Duration::from_secs(180) {
            child.kill().ok();
            child.wait().ok();
            panic!(
                "{what}: mcpatch grew to {} MB (limit {} MB) after {:?}",
                rss / 1024,
                RSS_LIMIT_KB / 1024,
                started.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    };
    (output, peak)
}

fn verify_json_command(sb: &Sandbox, command: &str, extra: &[&str]) -> std::process::Command {
    let mut args = vec!["verify", "--json", "--command", command];
    args.extend_from_slice(extra);
    let mut c = sb.command(&args);
    c.env(MARKER, sb.root());
    c
}

#[test]
fn an_endless_stderr_line_does_not_grow_mcpatch_and_the_bridge_is_still_judged() {
    let sb = Sandbox::new();
    // `tr` writes one line without end on the bridge's stderr for as long as it
    // runs; the bridge's own lines go elsewhere, so no newline ever comes.
    let command = wrapped_with(
        "/usr/bin/tr \"\\000\" x </dev/zero >&2 &",
        "correct",
        "2>/dev/null",
    );
    let cmd = verify_json_command(&sb, &command, &["--scenario", "expired-404"]);
    let (o, peak) = run_within_memory(cmd, "an endless stderr line");
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    assert_eq!(verdict(&v, "expired-404"), "SEAMLESS", "{v:#}");
    let kept = scenario(&v, "expired-404")["stderr"].as_str().unwrap();
    assert_eq!(kept, format!("{}…", "x".repeat(1000)));
    assert!(peak < RSS_LIMIT_KB, "{peak}");
    assert_eq!(processes_left(sb.root()), vec![]);
}

#[test]
fn a_bridge_that_floods_requests_and_never_reads_does_not_grow_mcpatch() {
    let sb = Sandbox::new();
    // Requests as fast as the pipe takes them (`yes` repeats its line), each
    // naming a method of 100 kB that an answer quotes; stdin is never read.
    let command = r#"/bin/sh -c 'm=$(/usr/bin/head -c 100000 /dev/zero | /usr/bin/tr "\000" x); exec /usr/bin/yes "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$m\"}"'"#;
    let cmd = verify_json_command(
        &sb,
        command,
        &["--scenario", "expired-404", "--startup-timeout", "4"],
    );
    let (o, peak) = run_within_memory(cmd, "a flood of requests");
    eprintln!("peak {peak} kB");
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    assert_eq!(verdict(&v, "expired-404"), "HANG", "{v:#}");
    assert_eq!(
        scenario(&v, "expired-404")["note"],
        "no answer to initialize within 4 s (the start-up limit, --startup-timeout); the bridge was still running"
    );
    assert_eq!(processes_left(sb.root()), vec![]);
}

#[test]
fn a_byte_that_is_not_utf8_on_stderr_is_shown_replaced_and_stderr_is_still_drained() {
    let sb = Sandbox::new();
    let command = wrapped("printf \"bad \\377 byte\\n\" >&2;", "correct");
    let (o, v, _) = verify_bridge(&sb, &command, &["expired-404"], &[]);
    assert_eq!(code(&o), 0, "{v:#}");
    assert_eq!(verdict(&v, "expired-404"), "SEAMLESS", "{v:#}");
    let kept = scenario(&v, "expired-404")["stderr"].as_str().unwrap();
    let lines: Vec<&str> = kept.lines().collect();
    assert_eq!(lines[0], "bad \u{fffd} byte", "{kept}");
    // The bridge's own lines after it were read too.
    assert!(
        lines[1..]
            .iter()
            .any(|l| l.starts_with("bridge(correct): session ")),
        "{kept}"
    );
}

/// An npm project holding mcp-remote `version` in the folder `dir`.
fn project_at(dir: &Path, version: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        format!(r#"{{"name":"p","version":"1.0.0","dependencies":{{"mcp-remote":"{version}"}}}}"#),
    )
    .unwrap();
    copy_node_modules(version, &dir.join("node_modules"));
}

#[test]
fn verify_runs_the_installed_bridge_whose_path_holds_a_template_word_and_refuses_one_not_utf8() {
    let sb = Sandbox::new();
    let dir = sb.root().join("{url}").join("p");
    project_at(&dir, "0.15.1");
    let mut cmd = sb.command(&["verify", "--json", "--scenario", "expired-404", "--path"]);
    cmd.arg(&dir);
    let o = output_within_five_minutes(cmd);
    let v = json(&o);
    let install = &v["installs"][0];
    assert_eq!(install["target"], "mcp-remote", "{v:#}");
    // mcp-remote 0.15.1 recovers from a 404 unpatched: the installed file ran,
    // not one at a path with the server's URL put in.
    assert_eq!(install["scenarios"][0]["verdict"], "SEAMLESS", "{v:#}");
    assert_eq!(code(&o), 0, "{v:#}");

    // Node reads `caf\xe9` as `caf\u{fffd}`: a folder of that name (anyone's)
    // would run in its place. mcpatch refuses to start node on it.
    let odd = sb.root().join(OsStr::from_bytes(b"caf\xe9")).join("p");
    project_at(&odd, "0.15.1");
    let decoy = sb.root().join("caf\u{fffd}").join("p");
    project_at(&decoy, "0.15.1");
    let mut cmd = sb.command(&["verify", "--scenario", "expired-404", "--path"]);
    cmd.arg(&odd);
    let o = output_within_five_minutes(cmd);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let shown = sb.normalize(&o.stderr);
    assert!(
        shown.contains("error: node cannot load [SANDBOX]/caf\u{fffd}/p/node_modules/mcp-remote: its path is not UTF-8 (as a URL: file://[SANDBOX]/caf%E9/p/node_modules/mcp-remote)\nhelp: nothing was changed; node cannot import a module from such a path, so no host can load it: reinstall it under a folder whose name is UTF-8\n"),
        "{shown}"
    );
}

/// Whether a child of `parent` runs with `word` in its command line.
fn children_running(parent: u32, word: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // The parent's pid is the second field after the command's name in parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        ppid == Some(parent)
            && std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(word))
    })
}

/// Processes other than `except` whose environment holds `needle` (NAME=value).
fn processes_with_env(needle: &str, except: u32) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != except && *pid != std::process::id())
        .filter_map(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let has = env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes());
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            has.then(|| (pid, String::from_utf8_lossy(&cmd).replace('\0', " ")))
        })
        .collect()
}

#[test]
fn an_installed_bridge_gets_a_cleared_environment_without_mcpatchs_tokens() {
    let sb = Sandbox::new();
    let dir = sb.root().join("p");
    project_at(&dir, "0.15.1");
    let secret = format!("MCPATCH_TEST_API_KEY=sk-{}", std::process::id());
    let (name, value) = secret.split_once('=').unwrap();
    let mut cmd = sb.command(&["verify", "--json", "--scenario", "expired-404", "--path"]);
    cmd.arg(&dir).env(name, value).stdout(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    // Watch every process while verify runs: the bridge (node) must never hold the token.
    let mut saw_node = false;
    let mut leaked = Vec::new();
    let started = Instant::now();
    let mut child = child;
    while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(120) {
        for found in processes_with_env(&secret, pid) {
            if found.1.contains("proxy.js") && !leaked.contains(&found) {
                leaked.push(found);
            }
        }
        saw_node |= children_running(pid, "proxy.js");
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = child.wait_with_output().unwrap();
    let v = json(&o);
    assert_eq!(
        v["installs"][0]["scenarios"][0]["verdict"], "SEAMLESS",
        "{v:#}"
    );
    assert!(saw_node, "the bridge was never seen running");
    assert_eq!(leaked, vec![], "the token reached the bridge");
}

#[test]
fn the_dsh_plugin_harness_gets_the_same_cleared_environment() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let secret = format!("MCPATCH_TEST_API_KEY=sk-{}", std::process::id());
    let (name, value) = secret.split_once('=').unwrap();
    let mut cmd = sb.command(&["verify", "--json", "--scenario", "expired-404", "--path"]);
    cmd.arg(&client).env(name, value).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let mut saw_harness = false;
    let mut leaked = Vec::new();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(120) {
        saw_harness |= children_running(pid, "harness.mjs");
        for found in processes_with_env(&secret, pid) {
            if found.1.contains("harness.mjs") && !leaked.contains(&found) {
                leaked.push(found);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        json(&o)["installs"][0]["scenarios"][0]["verdict"],
        "STUCK",
        "{}",
        stdout(&o)
    );
    assert!(saw_harness, "the harness was never seen running");
    assert_eq!(leaked, vec![], "the token reached the plugin's harness");
}

#[test]
fn a_daemon_the_bridge_starts_in_a_session_of_its_own_is_stopped_when_verify_ends() {
    let sb = Sandbox::new();
    // A TERM-ignoring daemon in a new session (so outside the bridge's process group).
    let command = wrapped(
        "/usr/bin/setsid /bin/sh -c \"trap \\\"\\\" TERM; exec /bin/sleep 600\" </dev/null >/dev/null 2>&1 &",
        "correct",
    );
    let (o, v, _) = verify_bridge(&sb, &command, &["expired-404"], &[]);
    assert_eq!(code(&o), 0, "{v:#}");
    assert_eq!(processes_left(sb.root()), vec![]);
}

#[test]
fn after_sigkill_of_mcpatch_the_bridge_and_its_group_do_not_outlive_it() {
    let sb = Sandbox::new();
    // The bridge's own child ignores SIGTERM and lives on unless killed.
    let command = wrapped(
        "/bin/sh -c \"trap \\\"\\\" TERM; exec /bin/sleep 600\" </dev/null >/dev/null 2>&1 &",
        "stops-answering",
    );
    let mut child = sb
        .command(&["verify", "--command", &command, "--scenario", "expired-404"])
        .env(MARKER, sb.root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut during = Vec::new();
    for _ in 0..4000 {
        during = marked_processes(sb.root());
        if during.iter().any(|(_, c)| c.contains("setInterval"))
            && during.iter().any(|(_, c)| c.starts_with("/bin/sleep 600"))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        during.iter().any(|(_, c)| c.starts_with("/bin/sleep 600")),
        "{during:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // Give the kernel and the watcher a moment (bounded) to end them.
    let mut left = marked_processes(sb.root());
    for _ in 0..200 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        left = marked_processes(sb.root());
    }
    let cleanup: Vec<u32> = left.iter().map(|(p, _)| *p).collect();
    for p in &cleanup {
        // SAFETY: kill(2) of a test's own leftover process.
        unsafe { libc::kill(*p as i32, libc::SIGKILL) };
    }
    assert_eq!(left, vec![], "left after SIGKILL of mcpatch");
}
