//! `mcpatch verify --command`: stdio MCP bridges checked against the fake
//! server — small bridges of our own on the real MCP SDK
//! (test-fixtures/bridges/bridge.cjs) and real mcp-remote releases from the
//! npm registry (scripts/fetch-fixtures.sh).

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::*;

/// The environment variable that marks every process a test's verify starts.
pub(super) const MARKER: &str = "MCPATCH_BRIDGE_TEST_MARKER";

fn node() -> PathBuf {
    node22_dir().join("node")
}

fn quoted(p: &Path) -> String {
    let s = p.to_str().unwrap();
    assert!(!s.contains('\''), "{s}");
    format!("'{s}'")
}

/// The command line of the fixture bridge in `mode`.
pub(super) fn fixture(mode: &str) -> String {
    fixture_with(&format!("{mode} "))
}

/// The fixture bridge's command line with `args` (ending in a space) before the SDK's folder.
pub(super) fn fixture_with(args: &str) -> String {
    let sdk = cache().join("mcp-servers").join(format!("ts-sdk-{TS_SDK}"));
    assert!(
        sdk.join(".done").is_file(),
        "the TypeScript MCP SDK is missing from {}: run scripts/fetch-fixtures.sh",
        sdk.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/bridges/bridge.cjs");
    format!(
        "{} {} {args}{}",
        quoted(&node()),
        quoted(&script),
        quoted(&sdk)
    )
}

/// The command line of the real mcp-remote `version`, installed (not through npx).
fn mcp_remote(version: &str) -> String {
    let dir = cache().join("mcp-remote").join(version);
    assert!(
        dir.join(".done").is_file(),
        "mcp-remote@{version} is missing from {}: run scripts/fetch-fixtures.sh (needs npm and the npm registry)",
        dir.display()
    );
    format!(
        "{} {}",
        quoted(&node()),
        quoted(&dir.join("node_modules/mcp-remote/dist/proxy.js"))
    )
}

/// `verify --json --command CMD --scenario ...`, with every process it starts marked.
pub(super) fn verify_bridge(
    sb: &Sandbox,
    command: &str,
    scenarios: &[&str],
    extra: &[&str],
) -> (Output, Value, Duration) {
    let mut args = vec!["verify", "--json", "--command", command];
    for s in scenarios {
        args.extend(["--scenario", s]);
    }
    args.extend_from_slice(extra);
    let started = Instant::now();
    let o = sb.command(&args).env(MARKER, sb.root()).output().unwrap();
    let took = started.elapsed();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "verify --json is not JSON ({e}): {}{}",
            stdout(&o),
            stderr(&o)
        )
    });
    (o, v, took)
}

pub(super) fn scenario<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name} in {v:#}"))
}

pub(super) fn verdict(v: &Value, name: &str) -> String {
    scenario(v, name)["verdict"].as_str().unwrap().to_string()
}

/// (check id, status) of a scenario's conformance checks.
fn checks(v: &Value, name: &str) -> Vec<(String, String)> {
    scenario(v, name)["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn both_checks(renegotiate: &str, continues: &str) -> Vec<(String, String)> {
    vec![
        (
            "client-session-renegotiate-on-404".into(),
            renegotiate.into(),
        ),
        (
            "client-session-continues-after-renegotiation".into(),
            continues.into(),
        ),
    ]
}

/// [`marked_processes`] once the kernel has finished the ones mcpatch killed
/// (SIGKILL was sent before it exited), waiting a little, bounded.
pub(super) fn processes_left(marker: &Path) -> Vec<(u32, String)> {
    let mut left = marked_processes(marker);
    for _ in 0..400 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
        left = marked_processes(marker);
    }
    left
}

/// Live (not zombie) processes whose environment holds `marker`: pid and command line.
pub(super) fn marked_processes(marker: &Path) -> Vec<(u32, String)> {
    let needle = format!("{MARKER}={}", marker.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let marked = env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes());
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            marked.then(|| (pid, String::from_utf8_lossy(&cmd).replace('\0', " ")))
        })
        .collect()
}

#[test]
fn a_bridge_that_renegotiates_and_resends_passes_every_scenario_it_can_run() {
    let sb = Sandbox::new();
    let (o, v, _) = verify_bridge(&sb, &fixture("correct"), &[], &[]);
    assert_eq!(code(&o), 0, "{v:#}\n{}", stderr(&o));
    assert_eq!(v["overall"], "SEAMLESS");
    let got: Vec<(String, String)> = v["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("expired-404", "SEAMLESS"),
        ("expired-400", "SEAMLESS"),
        ("expired-401", "SEAMLESS"),
        ("idle-timeout", "SEAMLESS"),
        ("restart", "SEAMLESS"),
        ("restart-persisted", "HELD"),
        ("ordinary-errors", "HELD"),
        ("sse-404", "HELD"),
        ("strict-reinit", "SEAMLESS"),
        ("concurrent-loss", "SEAMLESS"),
        ("call-during-renewal", "SEAMLESS"),
        ("forgetful", "BOUNDED"),
        ("cut-mid-call", "NOT-RETRIED"),
        ("refused-once", "RECOVERED"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, want);
    // The conformance suite's checks, for every scenario whose server answers 404.
    for name in [
        "expired-404",
        "idle-timeout",
        "restart",
        "strict-reinit",
        "concurrent-loss",
        "call-during-renewal",
    ] {
        assert_eq!(
            checks(&v, name),
            both_checks("SUCCESS", "SUCCESS"),
            "{name}"
        );
    }
    for name in [
        "expired-400",
        "expired-401",
        "restart-persisted",
        "cut-mid-call",
    ] {
        assert_eq!(checks(&v, name), vec![], "{name}");
    }
    let left_out: Vec<&str> = v["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        left_out,
        [
            "expired-404-sdk2",
            "slow-timeout",
            "slow-relist",
            "abort-waiting",
            "deadline-waiting",
            "deadline-resend",
            "long-backoff",
            "gave-up",
            "losses-apart",
            "reconnect-disabled",
            "auth-session-401",
            "auth-token-401",
            "get-stream-loss",
            "expired-404 (default policy)"
        ]
    );
    assert_eq!(
        v["left_out"][7]["why"],
        "its verdict measures the DSH plugin's reconnect policy (backoff and attempts per outage), which a bridge does not share"
    );
    assert_eq!(v["error"], Value::Null);
    // The documented example has the shape of this real run.
    let readme = doc("verify.md");
    let at = readme
        .find("`verify --command ... --json` prints one object")
        .expect("docs/verify.md shows verify --command --json");
    let start = at + readme[at..].find("```json\n").unwrap() + 8;
    let end = start + readme[start..].find("```").unwrap();
    let example: Value = serde_json::from_str(&readme[start..end]).unwrap();
    assert_eq!(
        shape(&example),
        shape(&v),
        "README: {example:#}\nreal: {v:#}"
    );
}

/// Keys, recursively (an array by its first element); values are not compared.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.first().map(shape).into_iter().collect()),
        _ => Value::Null,
    }
}

#[test]
fn a_bridge_that_keeps_the_dead_session_id_is_stuck_and_fails_both_checks() {
    let sb = Sandbox::new();
    let (o, v, _) = verify_bridge(&sb, &fixture("keeps-dead-session"), &["expired-404"], &[]);
    assert_eq!(code(&o), 1, "{v:#}");
    assert_eq!(verdict(&v, "expired-404"), "STUCK");
    assert!(
        scenario(&v, "expired-404")["note"]
            .as_str()
            .unwrap()
            .starts_with("no new initialize after the session was lost; "),
        "{v:#}"
    );
    assert_eq!(checks(&v, "expired-404"), both_checks("FAILURE", "FAILURE"));
    assert_eq!(
        scenario(&v, "expired-404")["checks"][0]["error_message"],
        "after the 404 the client never sent a new initialize without a session id"
    );
    assert_eq!(v["overall"], "STUCK");
}

#[test]
fn a_bridge_that_stops_answering_hangs_within_the_call_deadline_and_leaves_no_process() {
    let sb = Sandbox::new();
    let (o, v, took) = verify_bridge(&sb, &fixture("stops-answering"), &["expired-404"], &[]);
    assert_eq!(code(&o), 1, "{v:#}");
    assert_eq!(verdict(&v, "expired-404"), "HANG");
    assert_eq!(
        scenario(&v, "expired-404")["note"],
        "call c2 (echo) got no answer within 5000 ms; the bridge was still running"
    );
    assert!(took < Duration::from_secs(40), "took {took:?}");
    // The bridge and the process it started are gone with it.
    assert_eq!(processes_left(sb.root()), vec![]);
}

#[test]
fn a_bridge_that_exits_is_broken_with_the_tail_of_its_stderr() {
    let sb = Sandbox::new();
    let (o, v, _) = verify_bridge(&sb, &fixture("exits"), &["expired-404"], &["-v"]);
    assert_eq!(code(&o), 1, "{v:#}");
    let s = scenario(&v, "expired-404");
    assert_eq!(s["verdict"], "BROKEN");
    assert_eq!(s["exit"], "exit status: 3");
    let note = s["note"].as_str().unwrap();
    assert!(
        note.starts_with("the bridge's stdout ended while call c2 (echo) waited (exit status: 3); its stderr ended: bridge(exits): session "),
        "{note}"
    );
    assert!(
        note.contains(
            " | bridge(exits): giving up: Streamable HTTP error: Error POSTing to endpoint: "
        ),
        "{note}"
    );
    let kept = s["stderr"].as_str().unwrap();
    assert!(
        kept.lines()
            .last()
            .unwrap()
            .starts_with("bridge(exits): giving up: "),
        "{kept}"
    );
    // -v prints it.
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "--- stderr of the bridge (expired-404) ---\n{kept}\n--- end ---\n"
        )),
        "{err}"
    );
}

#[test]
fn the_server_url_replaces_a_url_placeholder_in_the_command() {
    let sb = Sandbox::new();
    // The fixture refuses any argument it does not know: a `{url}` left in place would show.
    let command = fixture_with("{url} correct ");
    let (o, v, _) = verify_bridge(&sb, &command, &["restart-persisted"], &[]);
    assert_eq!(code(&o), 0, "{v:#}");
    assert_eq!(verdict(&v, "restart-persisted"), "HELD");
    assert_eq!(v["command"][2], "{url}", "{v:#}");
}

#[test]
fn command_lines_that_cannot_run_are_refused_with_a_help_line() {
    let sb = Sandbox::new();
    let o = sb.run(&["verify", "--command", "node 'unclosed"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: cannot run the bridge command \"node 'unclosed\": missing closing quote\nhelp: pass --command one command line, quoted as for a shell, e.g. --command 'npx -y mcp-remote@0.15.1'\n"
    );
    let o = sb.run(&["verify", "--command", "bridge", "--path", "/tmp"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: --command cannot be used with --path\nhelp: --command checks a stdio bridge against the fake server; --path belongs to the check of the clients mcpatch finds installed: run one or the other\n"
    );
    let o = sb.run(&[
        "verify",
        "--command",
        "no-such-bridge-program",
        "--scenario",
        "restart-persisted",
    ]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: cannot start the bridge \"no-such-bridge-program\": No such file or directory (os error 2)\nhelp: check that the program exists and is executable (a name is looked up on PATH; no shell runs it)\n"
    );
    let o = sb.run(&["verify", "--command", "bridge", "--scenario", "gave-up"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: no scenario to run against a bridge:\n  - gave-up: its verdict measures the DSH plugin's reconnect policy (backoff and attempts per outage), which a bridge does not share\nhelp: leave out --scenario, or name a scenario a bridge can run\n"
    );
}

#[test]
fn mcp_remote_0_15_1_is_seamless_on_404_and_stuck_on_400_and_401() {
    let sb = Sandbox::new();
    let (o, v, _) = verify_bridge(
        &sb,
        &mcp_remote("0.15.1"),
        &["expired-404", "expired-400", "expired-401"],
        &[],
    );
    assert_eq!(code(&o), 1, "{v:#}");
    assert_eq!(verdict(&v, "expired-404"), "SEAMLESS", "{v:#}");
    assert_eq!(verdict(&v, "expired-400"), "STUCK", "{v:#}");
    // A 401 first sends it into OAuth: a failing verdict, no hang.
    assert_eq!(verdict(&v, "expired-401"), "STUCK", "{v:#}");
    assert_eq!(checks(&v, "expired-404"), both_checks("SUCCESS", "SUCCESS"));
    // Its connection test at start-up is a session of its own, not its host's.
    assert_eq!(scenario(&v, "expired-404")["sessions_before_host"], 1);
    assert_eq!(v["overall"], "STUCK");
}

#[test]
fn mcp_remote_0_1_44_is_stuck_on_404() {
    let sb = Sandbox::new();
    let (o, v, _) = verify_bridge(&sb, &mcp_remote("0.1.44"), &["expired-404"], &[]);
    assert_eq!(code(&o), 1, "{v:#}");
    assert_eq!(verdict(&v, "expired-404"), "STUCK", "{v:#}");
    assert_eq!(checks(&v, "expired-404"), both_checks("FAILURE", "FAILURE"));
}

#[test]
fn mcp_remote_0_1_38_hangs_on_404_within_the_deadline() {
    let sb = Sandbox::new();
    let (o, v, took) = verify_bridge(&sb, &mcp_remote("0.1.38"), &["expired-404"], &[]);
    assert_eq!(code(&o), 1, "{v:#}");
    assert_eq!(verdict(&v, "expired-404"), "HANG", "{v:#}");
    assert!(took < Duration::from_secs(40), "took {took:?}");
    assert_eq!(processes_left(sb.root()), vec![]);
}

#[test]
fn an_interrupted_bridge_verify_leaves_no_process_behind() {
    for (signal, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let sb = Sandbox::new();
        assert_eq!(marked_processes(sb.root()), vec![], "before");
        let child = sb
            .command(&[
                "verify",
                "--command",
                &fixture("stops-answering"),
                "--scenario",
                "expired-404",
            ])
            .env(MARKER, sb.root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the bridge has started its own child: mcpatch, the bridge and its helper.
        let mut during = Vec::new();
        for _ in 0..4000 {
            during = marked_processes(sb.root());
            if during.iter().any(|(_, c)| c.contains("setInterval")) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            during.iter().any(|(_, c)| c.contains("setInterval")) && during.len() >= 3,
            "{during:?}"
        );
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(
            stderr(&o).ends_with(&format!("error: interrupted by {name}: the check stopped; the bridge, every process it started and the fake server were stopped\nhelp: run `mcpatch verify --command ...` again to finish the check\n")),
            "{}",
            stderr(&o)
        );
        assert_eq!(processes_left(sb.root()), vec![], "after {name}");
    }
}

#[test]
fn a_bridge_verify_that_fails_or_panics_mid_run_leaves_no_process_behind() {
    for (var, code_wanted) in [("MCPATCH_TEST_FAIL_AT", 2), ("MCPATCH_TEST_PANIC_AT", 101)] {
        let sb = Sandbox::new();
        let o = sb
            .command(&[
                "verify",
                "--command",
                &fixture("stops-answering"),
                "--scenario",
                "restart-persisted",
            ])
            .env(MARKER, sb.root())
            .env(var, "bridge-ran")
            .output()
            .unwrap();
        assert_eq!(code(&o), code_wanted, "{var}: {}", stderr(&o));
        // The bridge and the helper process it started at once are gone.
        assert_eq!(processes_left(sb.root()), vec![], "{var}");
    }
}

#[test]
fn a_bridge_silent_at_start_up_hangs_after_the_start_up_limit_and_one_that_exits_is_broken() {
    let sb = Sandbox::new();
    let silent = format!("{} -e 'setInterval(() => {{}}, 1 << 30)'", quoted(&node()));
    let (o, v, took) = verify_bridge(
        &sb,
        &silent,
        &["expired-404", "restart-persisted"],
        &["--startup-timeout", "1.5"],
    );
    assert_eq!(code(&o), 1, "{v:#}");
    let s = scenario(&v, "expired-404");
    assert_eq!(s["verdict"], "HANG");
    assert_eq!(
        s["note"],
        "no answer to initialize within 1.5 s (the start-up limit, --startup-timeout); the bridge was still running"
    );
    assert_eq!(v["startup_timeout_ms"], 1500);
    // Not started again for the next scenario: it would wait the whole limit again.
    let s = scenario(&v, "restart-persisted");
    assert_eq!(s["verdict"], "BROKEN");
    assert_eq!(
        s["note"],
        "not run: the bridge did not get through its handshake in expired-404"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_eq!(processes_left(sb.root()), vec![]);

    let script = "process.stderr.write('cannot reach the server\\n'); process.exit(4)";
    let command = format!("{} -e \"{script}\"", quoted(&node()));
    let (o, v, _) = verify_bridge(&sb, &command, &["restart-persisted"], &[]);
    assert_eq!(code(&o), 1, "{v:#}");
    let s = scenario(&v, "restart-persisted");
    assert_eq!(s["verdict"], "BROKEN");
    assert_eq!(
        s["note"],
        "the bridge's stdout ended before it answered initialize (exit status: 4); its stderr ended: cannot reach the server"
    );
    assert_eq!(s["stderr"], "cannot reach the server");
}

#[test]
fn a_bridge_report_fits_the_terminal_width_and_is_whole_into_a_pipe() {
    let sb = Sandbox::new();
    let command = fixture("keeps-dead-session");
    let args = [
        "verify",
        "--command",
        command.as_str(),
        "--scenario",
        "expired-404",
    ];
    for columns in [80, 60] {
        let o = sb
            .cmd(&args)
            .env("COLUMNS", columns.to_string())
            .output()
            .unwrap();
        assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
        let text = stdout(&o);
        for line in text.lines() {
            assert!(
                line.chars().count() <= columns,
                "{columns} columns: {line:?} is {} wide:\n{text}",
                line.chars().count()
            );
        }
        assert!(
            text.lines().any(|l| l.starts_with("expired-404: STUCK")),
            "each scenario on a line of its own:\n{text}"
        );
    }
    // Into a pipe: one row per scenario, whatever its width.
    let o = sb.run(&args);
    let text = stdout(&o);
    assert!(
        text.lines()
            .any(|l| l.starts_with("expired-404") && l.contains("STUCK") && l.len() > 80),
        "{text}"
    );
}
