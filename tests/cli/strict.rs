//! `mcpatch verify --strict` on the real client: mcpatch's own patched file and a
//! harmless edit of it pass; representative mutants of the patched JavaScript
//! from the catalogue `scripts/patch-mutants.sh` runs (test-fixtures/patch-mutants)
//! fail, each in the scenario whose check guards the rule it breaks.

use serde_json::Value;

use super::verify::verify_json;
use super::*;

/// A sandbox with the real 0.1.0-rc.8 client patched by `mcpatch apply`; its package folder.
pub(super) fn patched(sb: &Sandbox) -> PathBuf {
    let client = sb.client_install("0.1.0-rc.8", "g");
    let o = sb.run(&["apply", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
    client
}

/// Apply the catalogue's mutant `name` (test-fixtures/patch-mutants/NN-name.json)
/// to the patched file: each search string must match exactly once.
pub(super) fn mutate(client: &Path, name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/patch-mutants");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_stem()
                .and_then(|s| s.to_str())
                .is_some_and(|s| s.get(3..) == Some(name))
        })
        .unwrap_or_else(|| panic!("no mutant {name} in {}", dir.display()));
    let mutant: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    edit_file(&client.join("lib/index.js"), |mut text| {
        for pair in mutant["replace"].as_array().unwrap() {
            let search = pair["search"].as_str().unwrap();
            assert_eq!(
                text.matches(search).count(),
                1,
                "{name}: {search:?} must match exactly once"
            );
            text = text.replacen(search, pair["with"].as_str().unwrap(), 1);
        }
        text
    });
}

fn scenario<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["installs"][0]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v:#}"))
}

#[test]
fn strict_passes_mcpatchs_own_patched_file_and_a_comment_edit_of_it() {
    let sb = Sandbox::new();
    let client = patched(&sb);
    let p = client.to_str().unwrap();
    let (rc, v) = verify_json(&sb, &["--strict", "--path", p]);
    assert_eq!(rc, 0, "{v:#}");
    let install = &v["installs"][0];
    assert_eq!(install["expectations"], "current-revision");
    assert_eq!(install["overall"], "SEAMLESS");
    assert!(install["note"].is_null(), "{install:#}");
    for s in install["scenarios"].as_array().unwrap() {
        assert_eq!(s["ok"], true, "{s:#}");
    }

    let edited = edit_file(&client.join("lib/index.js"), |text| {
        text.replacen(
            "function isSessionLostError(error) {\n",
            "function isSessionLostError(error) {\n\t// a reader's note: nothing else changed\n",
            1,
        )
    });
    assert_ne!(edited, patched_hash());
    let (rc, v) = verify_json(&sb, &["--strict", "--path", p]);
    assert_eq!(rc, 0, "{v:#}");
    assert_eq!(v["installs"][0]["sha256"], edited.as_str());
    assert_eq!(v["installs"][0]["overall"], "SEAMLESS");
    for s in v["installs"][0]["scenarios"].as_array().unwrap() {
        assert_eq!(s["ok"], true, "{s:#}");
    }
}

#[test]
fn a_patch_that_never_sends_the_call_again_passes_relaxed_and_fails_strict() {
    let sb = Sandbox::new();
    let client = patched(&sb);
    let p = client.to_str().unwrap();
    mutate(&client, "resend-never");
    let args = ["--path", p, "--scenario", "expired-404"];
    let (rc, v) = verify_json(&sb, &args);
    assert_eq!(rc, 0, "{v:#}");
    let install = &v["installs"][0];
    assert_ne!(install["state"], "patched");
    assert_eq!(install["expectations"], "relaxed");
    assert_eq!(install["overall"], "RECOVERED");
    assert_eq!(scenario(&v, "expired-404")["expected"], "recover");

    let (rc, v) = verify_json(&sb, &[&["--strict"][..], &args[..]].concat());
    assert_eq!(rc, 1, "{v:#}");
    let install = &v["installs"][0];
    assert_eq!(install["expectations"], "strict");
    assert_eq!(install["overall"], "FAILED");
    assert_eq!(
        install["note"],
        "not the current patch revision, judged by its expectations (--strict): it falls short of them"
    );
    let s = scenario(&v, "expired-404");
    assert_eq!(
        (&s["expected"], &s["verdict"], &s["ok"]),
        (&"seamless".into(), &"RECOVERED".into(), &false.into())
    );
}

/// Run `verify --strict` on the patched client with mutant `name`, in `scenario`
/// only; the scenario's verdict and note.
fn strict_verdict(name: &str, scenario_name: &str) -> (String, String) {
    let sb = Sandbox::new();
    let client = patched(&sb);
    mutate(&client, name);
    let (rc, v) = verify_json(
        &sb,
        &[
            "--strict",
            "--path",
            client.to_str().unwrap(),
            "--scenario",
            scenario_name,
        ],
    );
    assert_eq!(rc, 1, "{name} passed verify --strict: {v:#}");
    let s = scenario(&v, scenario_name);
    assert_eq!(s["ok"], false, "{s:#}");
    (
        s["verdict"].as_str().unwrap().to_string(),
        s["note"].as_str().unwrap().to_string(),
    )
}

#[test]
fn strict_catches_a_predicate_blind_to_the_sdk_2_error_shape() {
    let (verdict, note) = strict_verdict("predicate-ignores-sdk2-status", "expired-404-sdk2");
    assert_eq!(verdict, "STUCK", "{note}");
}

#[test]
fn strict_catches_a_predicate_that_takes_a_request_timeout_for_session_loss() {
    let (verdict, note) = strict_verdict("predicate-counts-request-timeout", "slow-timeout");
    assert_eq!(
        (verdict.as_str(), note.as_str()),
        (
            "RECYCLED",
            "2 initialize handshakes: a healthy session was thrown away"
        )
    );
}

#[test]
fn strict_catches_a_first_reconnect_that_waits_its_backoff() {
    let (verdict, note) = strict_verdict("reconnect-waits-first-backoff", "long-backoff");
    assert_eq!(verdict, "RECOVERED", "{note}");
    assert!(note.starts_with("the first reconnect started "), "{note}");
}

#[test]
fn strict_catches_a_call_sent_before_the_tools_are_re_listed() {
    let (verdict, note) = strict_verdict("resend-before-relist", "slow-relist");
    assert_eq!(verdict, "RECOVERED", "{note}");
    assert!(
        note.contains(", before its tools were re-listed ("),
        "{note}"
    );
}

#[test]
fn strict_catches_a_wait_that_ignores_the_callers_signal() {
    let (verdict, note) = strict_verdict("wait-ignores-abort", "abort-waiting");
    assert_eq!(verdict, "LATE", "{note}");
    assert!(
        note.ends_with(", past its abort signal of 400 ms"),
        "{note}"
    );
}

#[test]
fn strict_catches_a_wait_that_outlives_the_calls_deadline() {
    let (verdict, note) = strict_verdict("wait-outlives-deadline", "deadline-waiting");
    assert_eq!(verdict, "LATE", "{note}");
    assert!(
        note.ends_with(", past its toolCallTimeoutMs of 1000 ms"),
        "{note}"
    );
}

#[test]
fn strict_catches_a_repeat_with_a_fresh_timeout() {
    let (verdict, note) = strict_verdict("resend-gets-fresh-timeout", "deadline-resend");
    assert_eq!(verdict, "LATE", "{note}");
}

#[test]
fn strict_catches_calls_that_wait_on_after_reconnecting_stopped() {
    let (verdict, note) = strict_verdict("stopped-not-checked", "gave-up");
    assert_eq!(verdict, "LATE", "{note}");
    assert!(note.starts_with("call after failed only after "), "{note}");
}

#[test]
fn strict_catches_an_error_without_the_servers_words_after_giving_up() {
    let (verdict, note) = strict_verdict("words-dropped", "gave-up");
    assert_eq!(verdict, "MUTE", "{note}");
    assert!(
        note.starts_with(
            "the error of call after does not carry the server's words (\"Session not found\")"
        ),
        "{note}"
    );
}

#[test]
fn strict_catches_a_loss_logged_at_info_instead_of_warn() {
    let (verdict, note) = strict_verdict("warning-at-info", "expired-404");
    assert_eq!(verdict, "RECOVERED", "{note}");
    assert!(
        note.starts_with("no warning naming the server and its answer was logged for the loss"),
        "{note}"
    );
}

#[test]
fn a_call_that_never_settles_is_named_and_reported_as_a_hang() {
    let (verdict, note) = strict_verdict("wait-never-settles", "gave-up");
    assert_eq!(verdict, "HANG", "{note}");
    // 3 s past its 6 s signal and timeout.
    assert!(
        note.starts_with("call c2 (waiting) never settled: its caller was still waiting after 90"),
        "{note}"
    );
}

/// The installed client replaced by a module that passes for a modified client
/// (it names the supervisor the patch hooks into) and whose `apply` is `body`.
fn hand_made_client(sb: &Sandbox, body: &str) -> PathBuf {
    let client = sb.client_install("0.1.0-rc.8", "g");
    std::fs::write(
        client.join("lib/index.js"),
        format!("// function connectGeneration( function generationDown(generation) generation.onclose = \n{body}\n"),
    )
    .unwrap();
    client
}

#[test]
fn a_client_that_never_settles_a_call_is_reported_by_scenario_and_call() {
    let sb = Sandbox::new();
    let client = hand_made_client(
        &sb,
        "export async function apply(ctx) {\n\tctx.tools.register({ name: \"mcp__fake__echo\", execute: () => new Promise(() => {}) });\n}",
    );
    let (rc, v) = verify_json(
        &sb,
        &[
            "--path",
            client.to_str().unwrap(),
            "--scenario",
            "restart-persisted",
        ],
    );
    assert_eq!(rc, 1, "{v:#}");
    assert!(v["installs"][0]["error"].is_null(), "{v:#}");
    let s = scenario(&v, "restart-persisted");
    assert_eq!(s["verdict"], "HANG", "{s:#}");
    // 3 s past its 3 s signal and timeout, as node's clock tells it (its
    // timers may fire a millisecond before its clock says 6000 ms: seen 5999).
    let note = s["note"].as_str().unwrap();
    let waited: u64 = note
        .strip_prefix("call c1 (echo) never settled: its caller was still waiting after ")
        .and_then(|rest| rest.strip_suffix(" ms"))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("{note}"));
    assert!((5990..7000).contains(&waited), "{note}");
}

#[test]
fn a_client_whose_start_never_settles_is_reported_per_scenario_not_as_a_node_problem() {
    let sb = Sandbox::new();
    // Nothing keeps node alive: it exits 13 with the harness awaiting apply().
    let client = hand_made_client(
        &sb,
        "export async function apply() {\n\tawait new Promise(() => {});\n}",
    );
    let o = sb.run(&[
        "verify",
        "--path",
        client.to_str().unwrap(),
        "--scenario",
        "expired-404",
    ]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("expired-404                   BROKEN (expected RECOVERED)  ")
            && out.contains("  the harness failed this run: the plugin's apply() never settled (node exited 13 with it pending)\n"),
        "{out}"
    );
    assert!(!stderr(&o).contains("Node.js 22"), "{}", stderr(&o));
}

#[test]
fn verify_file_judges_a_file_inside_an_install_by_strict_expectations() {
    use mcpatch::verify::{self, scenario::ScenarioName, Expectations, VerifyOptions};
    let sb = Sandbox::new();
    let client = patched(&sb);
    let spec = mcpatch::registry::session_loss().unwrap();
    let opts = VerifyOptions {
        scenarios: vec![ScenarioName::Expired404],
        node: Some(node22_dir().join("node")),
        strict: true,
        ..VerifyOptions::default()
    };
    let file = client.join("lib/index.js");
    let r = verify::verify_file(&spec, &client, &file, &opts).unwrap();
    assert_eq!(
        (r.expectations, r.overall, r.file.as_path()),
        (Expectations::CurrentRevision, "SEAMLESS", file.as_path())
    );

    mutate(&client, "resend-never");
    let r = verify::verify_file(&spec, &client, &file, &opts).unwrap();
    assert_eq!(
        (r.expectations, r.overall),
        (Expectations::Strict, "FAILED")
    );
    assert!(r.scenarios.iter().all(|s| !s.judgement.ok), "{r:#?}");
    let relaxed = VerifyOptions {
        strict: false,
        ..opts
    };
    let r = verify::verify_file(&spec, &client, &file, &relaxed).unwrap();
    assert_eq!(
        (r.expectations, r.overall),
        (Expectations::Relaxed, "RECOVERED")
    );
}

/// A run that fails beside the others while the harness stalls (here, or by
/// a time limit) is run again alone, and its lone verdict stands. The patched
/// file here blocks its event loop for 600 ms at each lost session, as a
/// loaded machine does: six runs side by side, the blocks add up and the
/// later recoveries are late; alone, none is.
#[test]
fn a_run_failed_beside_the_others_while_the_harness_stalled_is_run_again_alone() {
    let sb = Sandbox::new();
    let client = patched(&sb);
    edit_file(&client.join("lib/index.js"), |t| {
        let at = "\tfunction sessionLost(generation, error) {\n";
        assert_eq!(t.matches(at).count(), 1);
        let block = "\t\tfor (const t = Date.now(); Date.now() - t < 600;);\n";
        t.replacen(at, &format!("{at}{block}"), 1)
    });
    let mut args = vec!["verify", "--json", "--strict", "--explore", "0"];
    for name in [
        "expired-404",
        "expired-400",
        "expired-401",
        "expired-404-sdk2",
        "strict-reinit",
        "idle-timeout",
    ] {
        args.extend(["--scenario", name]);
    }
    args.extend(["--path", client.to_str().unwrap()]);
    let o = sb.run(&args);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{}{err}", stdout(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let scenarios = v["installs"][0]["scenarios"].as_array().unwrap();
    assert_eq!(
        scenarios.len(),
        7,
        "expired-404 once more under the default policy"
    );
    assert!(scenarios.iter().all(|s| s["ok"] == true), "{v:#}");
    let again = scenarios
        .iter()
        .filter(|s| {
            let note = s["note"].as_str().unwrap();
            note.contains(" (run again alone: beside 6 other runs it was STUCK: ")
        })
        .count();
    assert!(again > 0, "{v:#}");
}

/// A run whose client failed to start while every run's client started at
/// once (a connection timed out on a loaded machine) is run again alone. The
/// patched file here makes its second instance's start fail, once.
#[test]
fn a_run_whose_client_failed_to_start_beside_the_others_is_run_again_alone() {
    let sb = Sandbox::new();
    let client = patched(&sb);
    edit_file(&client.join("lib/index.js"), |t| {
        let at = "async function apply(ctx, config) {\n";
        assert_eq!(t.matches(at).count(), 1);
        let once = "\tif ((globalThis.startsSeen = (globalThis.startsSeen ?? 0) + 1) === 2) throw new Error(\"busy\");\n";
        t.replacen(at, &format!("{at}{once}"), 1)
    });
    let (rc, v) = verify_json(
        &sb,
        &[
            "--strict",
            "--explore",
            "0",
            "--scenario",
            "expired-404",
            "--scenario",
            "expired-400",
            "--path",
            client.to_str().unwrap(),
        ],
    );
    assert_eq!(rc, 0, "{v:#}");
    let scenarios = v["installs"][0]["scenarios"].as_array().unwrap();
    let notes: Vec<&str> = scenarios
        .iter()
        .map(|s| s["note"].as_str().unwrap())
        .collect();
    let again = " (run again alone: beside 2 other runs it was BROKEN: the harness failed this run: apply() failed: Error: busy";
    assert_eq!(
        notes.iter().filter(|n| n.contains(again)).count(),
        1,
        "{v:#}"
    );
}
