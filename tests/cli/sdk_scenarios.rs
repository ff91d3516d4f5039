//! SDK-level scenarios the SDK targets' hosts make possible, on copies of real
//! npm projects with the real patched SDKs: a caller's own timeout and abort
//! signal on a call (abort-waiting, deadline-waiting, deadline-resend: the
//! host gives them to the installed client), and the new initialize's params
//! after a loss (the witness records them; invariant same-initialize). Each
//! test passes the patched release, then catches the catalogue's mutant
//! (test-fixtures/patch-mutants/) that breaks the rule.

use super::ai_sdk_mcp::{patched_2_0_99, project_copy as ai_project, PKG};
use serde_json::Value;

use super::mcp_sdk::{mutate_builds, project_copy as sdk_project, CJS, ESM, SDK};
use super::*;

/// `verify --strict --json --target TARGET --scenario S...` of `project`:
/// the exit code, each run as (build, scenario, verdict), and each run's note.
pub(super) fn strict_runs(
    sb: &Sandbox,
    target: &str,
    project: &Path,
    scenarios: &[&str],
) -> (i32, Vec<(String, String, String)>, Vec<String>) {
    let mut args = vec!["--strict", "--target", target];
    for s in scenarios {
        args.extend(["--scenario", s]);
    }
    runs_and_notes(sb, project, &args, "strict verify of the project's SDK")
}

/// `verify --json ARGS --path PROJECT` (`what` names it if it hangs): the
/// exit code, each run as (build, scenario, verdict), and each run's note.
pub(super) fn runs_and_notes(
    sb: &Sandbox,
    project: &Path,
    args: &[&str],
    what: &str,
) -> (i32, Vec<(String, String, String)>, Vec<String>) {
    let mut all = vec!["verify", "--json"];
    all.extend_from_slice(args);
    all.extend(["--path", project.to_str().unwrap()]);
    let o = output_within(sb.command(&all), std::time::Duration::from_secs(180), what);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    let runs = v["installs"][0]["scenarios"]
        .as_array()
        .unwrap_or_else(|| panic!("no scenarios: {v:#}"));
    let field = |s: &Value, f: &str| s[f].as_str().unwrap_or_default().to_string();
    (
        code(&o),
        runs.iter()
            .map(|s| (field(s, "build"), field(s, "name"), field(s, "verdict")))
            .collect(),
        runs.iter().map(|s| field(s, "note")).collect(),
    )
}

/// `text` with the number after each "request " (they vary) written N.
fn requests_as_n(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("request ") {
        out.push_str(&rest[..at + "request ".len()]);
        rest = rest[at + "request ".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('N');
    }
    out.push_str(rest);
    out
}

/// `text` with each run of digits written N.
pub(super) fn numbers_as_n(text: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// Each of `builds` on each of `scenarios`, each run `verdict`.
pub(super) fn all_runs(
    builds: &[&str],
    scenarios: &[&str],
    verdict: &str,
) -> Vec<(String, String, String)> {
    builds
        .iter()
        .flat_map(|b| {
            scenarios
                .iter()
                .map(move |s| (b.to_string(), s.to_string(), verdict.to_string()))
        })
        .collect()
}

#[test]
fn a_patched_sdk_call_ends_by_its_callers_abort_or_timeout_and_a_patch_that_sends_it_again_is_repeated(
) {
    let sb = Sandbox::new();
    let project = sdk_project(&sb, "sdk-1.32.2");
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let scenarios = ["abort-waiting", "deadline-waiting"];
    let (rc, runs, _) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!(
        (rc, runs),
        (0, all_runs(&["esm", "cjs"], &scenarios, "TIMELY"))
    );
    mutate_builds(
        &project.join("node_modules").join(SDK),
        &[ESM, CJS],
        "mcp-sdk",
        "16-abort-ignored",
    );
    let (rc, runs, notes) = strict_runs(&sb, "mcp-sdk", &project, &scenarios);
    assert_eq!(
        (rc, runs),
        (1, all_runs(&["esm", "cjs"], &scenarios, "REPEATED"))
    );
    assert_eq!(
        notes.iter().map(|n| numbers_as_n(n)).collect::<Vec<_>>(),
        [
            "call cN was sent N times; once its abort signal has passed it must not be sent again",
            "call cN was sent N times; once its toolCallTimeoutMs has passed it must not be sent again",
        ]
        .repeat(2)
    );
}

#[test]
fn a_patched_create_mcp_client_lets_a_repeat_go_at_its_callers_deadline_and_one_without_the_signal_is_late(
) {
    let sb = Sandbox::new();
    let project = patched_2_0_99(&sb);
    let scenarios = ["deadline-resend"];
    let (rc, runs, _) = strict_runs(&sb, "ai-sdk-mcp", &project, &scenarios);
    assert_eq!((rc, runs), (0, all_runs(&["esm"], &scenarios, "TIMELY")));
    mutate_builds(
        &project.join(PKG),
        &["dist/index.js"],
        "ai-sdk-mcp",
        "10-resend-ignores-abort",
    );
    let (rc, runs, notes) = strict_runs(&sb, "ai-sdk-mcp", &project, &scenarios);
    assert_eq!((rc, runs), (1, all_runs(&["esm"], &scenarios, "LATE")));
    assert_eq!(
        notes.iter().map(|n| numbers_as_n(n)).collect::<Vec<_>>(),
        ["the server answered the repeat of call cN N ms after the call first reached it, past its toolCallTimeoutMs of N ms: the client kept the repeat's request open and sent no notifications/cancelled"]
    );
}

#[test]
fn a_create_mcp_client_whose_new_initialize_is_not_its_first_is_broken() {
    let sb = Sandbox::new();
    let project = patched_2_0_99(&sb);
    let scenarios = ["expired-404"];
    let (rc, runs, _) = strict_runs(&sb, "ai-sdk-mcp", &project, &scenarios);
    assert_eq!((rc, runs), (0, all_runs(&["esm"], &scenarios, "SEAMLESS")));
    mutate_builds(
        &project.join(PKG),
        &["dist/index.js"],
        "ai-sdk-mcp",
        "15-initialize-new-params",
    );
    let (rc, runs, notes) = strict_runs(&sb, "ai-sdk-mcp", &project, &scenarios);
    assert_eq!((rc, runs), (1, all_runs(&["esm"], &scenarios, "BROKEN")));
    assert_eq!(
        notes.iter().map(|n| requests_as_n(n)).collect::<Vec<_>>(),
        ["invariant same-initialize: the initialize of request N sent protocolVersion \"2025-06-18\", not the \"2025-11-25\" of the client's first (request N): a new session must start with the first initialize's params"]
    );
}

#[test]
fn a_create_mcp_client_that_hands_its_transport_no_signal_has_the_deadline_and_abort_scenarios_left_out_saying_why(
) {
    // 2.0.0 looks at a call's signal only once an answer comes: patched or not, a
    // call waiting on a new session cannot end by it, so its host declares no bounds.
    let sb = Sandbox::new();
    let project = ai_project(&sb, "2.0.0", &["dist/index.js"]);
    let p = project.to_str().unwrap();
    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let why = "the installed client does not hand a caller's abort signal to its transport, so no patch can end a call that waits on a new session by it (its host declares no mcpatch/within)";
    let o = output_within(
        sb.command(&[
            "verify",
            "--json",
            "--strict",
            "--target",
            "ai-sdk-mcp",
            "--scenario",
            "expired-404",
            "--scenario",
            "abort-waiting",
            "--scenario",
            "deadline-resend",
            "--path",
            p,
        ]),
        std::time::Duration::from_secs(180),
        "strict verify of @ai-sdk/mcp 2.0.0",
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    let install = &v["installs"][0];
    let runs: Vec<(&str, &str)> = install["scenarios"]
        .as_array()
        .unwrap_or_else(|| panic!("no scenarios: {v:#}"))
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        (code(&o), runs),
        (0, vec![("expired-404", "SEAMLESS")]),
        "{v:#}"
    );
    assert_eq!(
        install["left_out"],
        serde_json::json!([
            {"name": "expired-404 (default policy)", "why": "the second expired-404 run under the DSH plugin's default reconnect policy has no counterpart: a bridge has one behaviour, checked against the same deadline as every scenario"},
            {"name": "abort-waiting", "why": why},
            {"name": "deadline-resend", "why": why},
        ])
    );
    // Nothing asked for can run: an error naming why, not a verdict.
    let o = sb.run(&[
        "verify",
        "--target",
        "ai-sdk-mcp",
        "--path",
        p,
        "--scenario",
        "abort-waiting",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        sb.normalize(&o.stderr).contains(&format!("error: no scenario asked for runs against ai-sdk-mcp:\n  - abort-waiting: {why}\nhelp: leave out --scenario, or name a scenario ai-sdk-mcp can run\n")),
        "{}",
        stderr(&o)
    );
}
