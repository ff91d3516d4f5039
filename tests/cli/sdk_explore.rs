//! `mcpatch verify --explore` through the SDK clients' host: the real
//! installed `Client` and transport of both builds meet plans generated from
//! a seed, each run judged by the invariants for a client that tries one new
//! session per call that meets a loss. Patched: every rule kept; unpatched:
//! the broken rule, with a shrunk plan. A target whose driver runs no plans is
//! refused by name before anything runs.

use serde_json::{json, Value};

use super::mcp_sdk::project_copy;
use super::verify::verify_json;
use super::*;

fn exploration(v: &Value) -> &Value {
    &v["installs"][0]["exploration"]
}

#[test]
fn both_builds_of_a_patched_sdk_keep_every_rule_over_the_explored_runs() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let p = project.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--yes", "--path", p])), 0);
    let (rc, v) = verify_json(
        &sb,
        &["--strict", "--explore-only", "--explore", "3", "--path", p],
    );
    assert_eq!(rc, 0, "{v:#}");
    assert_eq!(v["installs"][0]["overall"], "EXPLORED", "{v:#}");
    assert_eq!(v["installs"][0]["scenarios"], json!([]));
    assert_eq!(
        exploration(&v),
        &json!({"seed": 2026, "runs": 3, "builds": ["esm", "cjs"], "ok": true, "failures": []})
    );
}

#[test]
fn an_unpatched_sdk_breaks_repeat_after_loss_in_each_build_with_a_shrunk_plan() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let p = project.to_str().unwrap();
    // Seed 3656237931: a loss, a call aborted after 100 ms, a call; the new
    // session's tool list held back 400 ms.
    let (rc, v) = verify_json(
        &sb,
        &[
            "--strict",
            "--explore-only",
            "--explore",
            "1",
            "--seed",
            "3656237931",
            "--path",
            p,
        ],
    );
    assert_eq!(rc, 1, "{v:#}");
    assert_eq!(v["installs"][0]["overall"], "FAILED", "{v:#}");
    let e = exploration(&v);
    assert_eq!(e["ok"], false, "{e:#}");
    let failures = e["failures"].as_array().unwrap();
    let builds: Vec<&str> = failures
        .iter()
        .map(|f| f["build"].as_str().unwrap())
        .collect();
    assert_eq!(builds, ["esm", "cjs"], "{e:#}");
    for f in failures {
        assert_eq!(
            (f["invariant"].as_str(), f["verdict"].as_str()),
            (Some("repeat-after-loss"), Some("STUCK")),
            "{f:#}"
        );
        assert_eq!(
            f["plan"],
            json!([
                "one new session per call that meets a loss",
                "server answers a lost session 401 \"Unauthorized: Session not found\"",
                "server holds a new session's tools/list 400 ms",
                "1. server drops every session",
                "2. call echo, aborted after 100 ms, waits for it",
                "3. call echo, waits for it",
                "then: every call ends, pause 1500 ms, call echo (the last call)"
            ]),
            "{f:#}"
        );
        assert_eq!(
            f["shrunk"],
            json!([
                "one new session per call that meets a loss",
                "server answers a lost session 401 \"Unauthorized: Session not found\"",
                "1. server drops every session",
                "then: every call ends, pause 1500 ms, call echo (the last call)"
            ]),
            "{f:#}"
        );
        assert!(
            f["shrunk_note"].as_str().unwrap().starts_with(
                "invariant repeat-after-loss: call c1 (last) met a lost session and failed after "
            ),
            "{f:#}"
        );
    }
}

#[test]
fn explore_of_a_client_whose_driver_runs_no_plans_is_refused_by_name_before_node_runs() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g");
    let o = sb.run(&["verify", "--explore", "2", "--path", pkg.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "error: verify --explore does not drive gemini-cli's client: its calls are turns of the model mcpatch plays, and the CLI asks for the next turn only once every call of the last one has ended, so no call can start while another runs, as the plans' calls that go on need; each plan (and each shrunk one) would also start a CLI of its own, some 200 MB\nhelp: leave out --explore and --explore-only for it (its fixed table of scenarios still runs), or pick another target with --target\n"
    );
}
