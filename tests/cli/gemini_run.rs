//! The real gemini-cli's three MCP tool calls across a server restart, on
//! installs patched by mcpatch: for each proven release, in a sandbox install,
//! test-fixtures/gemini-cli/driver.mjs runs the real CLI headless (a fake Gemini
//! API on 127.0.0.1 asks for the tool three times; the TypeScript SDK server
//! restarts after call 1; all inside a fresh network namespace) once unpatched
//! on 404 (stuck), then on the install `mcpatch apply` patched on 404, 400 and
//! 401 (seamless); the newest release also with calls 2 and 3 sent together, a
//! server gone for good and calls that time out (each error reported
//! unchanged, each call sent once). The verdicts are those of
//! test-fixtures/gemini-cli/prove.sh's `summary`.

use std::time::Duration;

use serde_json::Value;

use super::*;

/// What a run must show (prove.sh's expectations).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Call 1 answered; calls 2 and 3 fail on the lost session, no new session.
    Stuck,
    /// All three answered; one new session, one initialize and one tools/list
    /// after the restart; each call run once.
    Seamless,
    /// The server is gone: calls 2 and 3 fail with the network error unchanged, each sent once.
    NetworkErrorOnce,
    /// Calls 2 and 3 time out: reported unchanged, each run once.
    TimeoutOnce,
}

/// One driver.mjs run: the lost-session answer and an extra scenario flag.
#[derive(Clone, Copy)]
struct Run {
    variant: &'static str,
    extra: Option<&'static str>,
    expect: Expect,
}

const fn run(variant: &'static str, extra: Option<&'static str>, expect: Expect) -> Run {
    Run {
        variant,
        extra,
        expect,
    }
}

/// The runs of every release once patched: the three ways servers answer a lost session.
const PATCHED: [Run; 3] = [
    run("404", None, Expect::Seamless),
    run("400", None, Expect::Seamless),
    run("401", None, Expect::Seamless),
];

/// The newest release's further runs once patched (404).
const PATCHED_NEWEST: [Run; 3] = [
    run("404", Some("--parallel"), Expect::Seamless),
    run("404", Some("--stop"), Expect::NetworkErrorOnce),
    run("404", Some("--slow"), Expect::TimeoutOnce),
];

/// How long the CLI may take in one run (the driver kills it then), and how
/// long the driver may take in all: generous, the machine is shared.
const CLI_TIMEOUT_MS: &str = "90000";
const DRIVER_LIMIT: Duration = Duration::from_secs(150);

/// At most this many CLI runs of one test at once (each loads a 16 MB bundle).
const AT_ONCE: usize = 3;

/// The runs need a network namespace whose only interface is lo, so the real
/// CLI can reach nothing but the loopback fakes: fail loudly without one.
fn require_netns() {
    let o = std::process::Command::new("unshare")
        .args(["-rn", "true"])
        .output();
    let why = match o {
        Ok(o) if o.status.success() => return,
        Ok(o) => stderr(&o).trim().to_string(),
        Err(e) => e.to_string(),
    };
    panic!(
        "cannot create a network namespace with `unshare -rn true`: {why}\nhelp: the real gemini-cli runs inside one so that it can reach only 127.0.0.1; install util-linux's unshare and allow unprivileged user namespaces (e.g. sysctl kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0)"
    );
}

/// driver.mjs on the package `pkg`: its JSON report.
fn drive(sb: &Sandbox, pkg: &Path, r: Run) -> Value {
    let node = node22_dir().join("node");
    let tmp = sb.root().join("driver-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut c = std::process::Command::new(&node);
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/gemini-cli/driver.mjs"))
        .arg(pkg)
        .arg(r.variant)
        .arg("--node")
        .arg(&node)
        .args(["--netns", "--timeout-ms", CLI_TIMEOUT_MS])
        .args(r.extra)
        .env("TMPDIR", &tmp);
    let what = format!(
        "driver.mjs {}{}",
        r.variant,
        r.extra.map(|e| format!(" {e}")).unwrap_or_default()
    );
    let o = output_within(c, DRIVER_LIMIT, &what);
    assert_eq!(
        code(&o),
        0,
        "{what} failed (a harness failure, not a verdict):\n{}{}",
        stdout(&o),
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{what}: not one JSON report ({e}):\n{}", stdout(&o)))
}

/// Run each of `runs` on `pkg`, up to [`AT_ONCE`] at a time; reports in order.
fn drive_all(sb: &Sandbox, pkg: &Path, runs: &[Run]) -> Vec<Value> {
    let mut out = Vec::new();
    for batch in runs.chunks(AT_ONCE) {
        std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .iter()
                .map(|&r| s.spawn(move || drive(sb, pkg, r)))
                .collect();
            for h in handles {
                out.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
        });
    }
    out
}

fn count(v: &Value, name: &str) -> u64 {
    v["server"][name].as_u64().unwrap_or(u64::MAX)
}

/// What a failed call's text says after its first `message` (prove.sh's
/// `/message\W+([^\\"]*)/`): e.g. `fetch failed`.
fn error_of(text: &str) -> Option<&str> {
    text.match_indices("message").find_map(|(i, m)| {
        let rest = &text[i + m.len()..];
        let start = rest
            .find(|c: char| c.is_ascii_alphanumeric() || c == '_')
            .unwrap_or(rest.len());
        if start == 0 {
            return None;
        }
        let rest = &rest[start..];
        Some(&rest[..rest.find(['\\', '"']).unwrap_or(rest.len())])
    })
}

/// The distinct errors of the failed calls, in order.
fn errors(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in v["calls"].as_array().into_iter().flatten() {
        if c["ok"] != true {
            let e = error_of(c["text"].as_str().unwrap_or("")).unwrap_or("");
            if !out.iter().any(|o| o == e) {
                out.push(e.to_string());
            }
        }
    }
    out
}

/// One line per run, as prove.sh prints it.
fn summary(v: &Value) -> String {
    let calls = v["calls"].as_array().cloned().unwrap_or_default();
    let t = &v["cli_tool_stats"];
    let errors = errors(v);
    format!(
        "answered {}/3 [{}] cli tools {}/{} exit {}{}; server: sessions {}, after restart initialize {} tools/list {}, tools/call run {}, lost {}, reset {}; errors: {}",
        v["answered"],
        calls
            .iter()
            .map(|c| if c["ok"] == true { "ok" } else { "FAIL" })
            .collect::<Vec<_>>()
            .join(" "),
        t["totalSuccess"],
        t["totalCalls"],
        v["exit_code"],
        if v["timed_out"] == true { " TIMED OUT" } else { "" },
        v["server"]["sessions_issued"],
        v["server"]["initialize_after_restart"],
        v["server"]["tools_list_after_restart"],
        v["server"]["tool_calls_run"],
        v["server"]["lost_tool_calls"],
        v["server"]["reset_tool_calls"],
        if errors.is_empty() {
            "-".to_string()
        } else {
            errors.join(", ")
        },
    )
}

/// Whether the report `v` shows `want` (prove.sh's `summary` expectations).
fn shows(v: &Value, want: Expect) -> bool {
    let answered = v["answered"].as_u64();
    let ok: Vec<bool> = v["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["ok"] == true)
        .collect();
    let sessions = count(v, "sessions_issued");
    let errors = errors(v);
    v["timed_out"] == false
        && match want {
            Expect::Stuck => {
                answered == Some(1)
                    && ok == [true, false, false]
                    && sessions == 1
                    && count(v, "lost_tool_calls") == 2
            }
            Expect::Seamless => {
                answered == Some(3)
                    && ok == [true, true, true]
                    && sessions == 2
                    && count(v, "initialize_after_restart") == 1
                    && count(v, "tools_list_after_restart") == 1
                    && count(v, "tool_calls_run") == 3
            }
            Expect::NetworkErrorOnce => {
                answered == Some(1)
                    && sessions == 1
                    && count(v, "reset_tool_calls") == 2
                    && errors == ["fetch failed"]
            }
            Expect::TimeoutOnce => {
                answered == Some(1)
                    && sessions == 1
                    && count(v, "tool_calls_run") == 3
                    && errors.iter().any(|e| e.contains("timed out"))
            }
        }
}

/// Judge every run; one panic listing each run that missed its expectation,
/// with its summary, calls, server log and the CLI's stderr tail.
fn judge(version: &str, state: &str, runs: &[Run], reports: &[Value]) {
    let mut misses = String::new();
    for (r, v) in runs.iter().zip(reports) {
        if shows(v, r.expect) {
            continue;
        }
        let calls: Vec<String> = v["calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!("  call {} ok={}: {}", c["n"], c["ok"], c["text"]))
            .collect();
        let log: Vec<&str> = v["mcp"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        misses += &format!(
            "{version} {state} {}{}: expected {:?}, got: {}\n{}\n  MCP server log: {}\n  cli stderr tail: {}\n",
            r.variant,
            r.extra.map(|e| format!(" {e}")).unwrap_or_default(),
            r.expect,
            summary(v),
            calls.join("\n"),
            log.join(" | "),
            v["cli_stderr_tail"].as_str().unwrap_or("").trim_end(),
        );
    }
    assert!(misses.is_empty(), "{misses}");
}

/// A sandbox install of `version`: stuck unpatched, then `mcpatch apply`, then
/// seamless on 404, 400 and 401 (and, with `newest`, the further runs).
fn stuck_then_seamless_once_applied(version: &str, newest: bool) {
    require_netns();
    let sb = Sandbox::new();
    let pkg = sb.gemini_install(version, "g").canonicalize().unwrap();
    let path = pkg.to_str().unwrap();

    let unpatched = [run("404", None, Expect::Stuck)];
    judge(
        version,
        "unpatched",
        &unpatched,
        &drive_all(&sb, &pkg, &unpatched),
    );

    let o = sb.run(&["apply", "--target", "gemini-cli", "--yes", "--path", path]);
    assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
    let v = status_json(&sb, &["--path", path]);
    let i = &v["installs"][0];
    assert_eq!(i["state"], "patched", "{version}: {v:#}");
    let file = PathBuf::from(i["file"].as_str().unwrap());
    assert_eq!(
        Some(sha256_file(&file)),
        original_revision("gemini-cli", version).patched_sha256,
        "{version}: the loaded chunk is not the manifest's patched revision"
    );

    let mut runs = PATCHED.to_vec();
    if newest {
        runs.extend(PATCHED_NEWEST);
    }
    judge(version, "patched", &runs, &drive_all(&sb, &pkg, &runs));
}

#[test]
fn release_0_61_0_is_stuck_unpatched_and_once_applied_answers_every_call_sending_none_twice() {
    stuck_then_seamless_once_applied("0.61.0", true);
}

#[test]
fn release_0_56_0_is_stuck_unpatched_and_once_applied_answers_every_call_across_a_restart() {
    stuck_then_seamless_once_applied("0.56.0", false);
}

#[test]
fn release_0_51_0_is_stuck_unpatched_and_once_applied_answers_every_call_across_a_restart() {
    stuck_then_seamless_once_applied("0.51.0", false);
}

#[test]
fn release_0_47_0_is_stuck_unpatched_and_once_applied_answers_every_call_across_a_restart() {
    stuck_then_seamless_once_applied("0.47.0", false);
}

#[test]
fn release_0_45_2_is_stuck_unpatched_and_once_applied_answers_every_call_across_a_restart() {
    stuck_then_seamless_once_applied("0.45.2", false);
}
