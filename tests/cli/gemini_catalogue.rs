//! gemini-cli's patch catalogue (test-fixtures/patch-mutants/gemini-cli/) on
//! the real CLI: each scenario gemini-cli runs besides the shared table
//! (src/verify/scenario/extra.rs) passes the patched 0.61.0 under `verify
//! --strict`, and fails the broken patch it was written for: the mutant's
//! replacements applied to the patched chunk, as scripts/patch-mutants.sh
//! applies them.

use serde_json::Value;

use super::gemini::{json, original_of};
use super::sdk_scenarios::numbers_as_n;
use super::*;

const VERSION: &str = "0.61.0";

/// A patched copy of gemini-cli 0.61.0 in `sb`: its package folder and its patched chunk.
fn patched(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let pkg = sb.gemini_install(VERSION, "g").canonicalize().unwrap();
    let o = sb.run(&["apply", "--yes", "--quiet", "--path", pkg.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (_, chunk, patched) = original_of(VERSION);
    let chunk = pkg.join(chunk);
    assert_eq!(sha256_file(&chunk), patched);
    (pkg, chunk)
}

/// Apply the catalogue's mutant `name` to `chunk`: each search must match exactly once.
fn mutate(chunk: &Path, name: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test-fixtures/patch-mutants/gemini-cli")
        .join(format!("{name}.json"));
    let mutant: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    edit_file(chunk, |mut text| {
        for pair in mutant["replace"].as_array().unwrap() {
            let search = pair["search"].as_str().unwrap();
            assert_eq!(text.matches(search).count(), 1, "{name}: {search:?}");
            text = text.replacen(search, pair["with"].as_str().unwrap(), 1);
        }
        text
    });
}

/// `verify --strict --scenario <scenario>` of the install at `pkg`: its exit
/// code and the scenario's verdict and note (numbers written N).
fn strict(sb: &Sandbox, pkg: &Path, scenario: &str) -> (i32, String, String) {
    let o = sb.run(&[
        "verify",
        "--json",
        "--strict",
        "--target",
        "gemini-cli",
        "--scenario",
        scenario,
        "--path",
        pkg.to_str().unwrap(),
    ]);
    let v = json(&o);
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(s["name"], scenario, "{v:#}\n{}", stderr(&o));
    (
        code(&o),
        s["verdict"].as_str().unwrap().to_string(),
        numbers_as_n(s["note"].as_str().unwrap()),
    )
}

/// `scenario` on the patched 0.61.0 (`control`: verdict and note), then on
/// the patched chunk broken by `mutant` (`caught`).
fn passes_the_patch_and_catches(
    scenario: &str,
    control: (&str, &str),
    mutant: &str,
    caught: (&str, &str),
) {
    // One CLI at a time: it runs beside the others, as the few-scenario
    // verifies of gemini_verify do.
    let sb = Sandbox::new();
    let (pkg, chunk) = patched(&sb);
    assert_eq!(
        strict(&sb, &pkg, scenario),
        (0, control.0.to_string(), control.1.to_string())
    );
    mutate(&chunk, mutant);
    assert_eq!(
        strict(&sb, &pkg, scenario),
        (1, caught.0.to_string(), caught.1.to_string())
    );
}

#[test]
fn cut_kept_sees_a_cut_connection_taken_for_a_lost_session_as_the_cut_call_sent_again() {
    passes_the_patch_and_catches(
        "cut-kept",
        (
            "NOT-RETRIED",
            "the cut call failed once and was not sent again (its tool ran N time(s)); calls worked again after the restart",
        ),
        "11-predicate-counts-network-error",
        (
            "REPEATED",
            "call cN ran N times: a tool call was sent again after it ran",
        ),
    );
}

#[test]
fn lost_again_sees_a_finished_recovery_kept_as_the_second_loss_stuck() {
    passes_the_patch_and_catches(
        "lost-again",
        (
            "RELOADED",
            "N calls, one after each of N restarts N s apart, each answered within N ms (the slowest N ms); N handshakes",
        ),
        "13-recovery-never-cleared",
        (
            "STUCK",
            r#"N of N calls failed across N restarts N s apart (the first: call cN after N ms: MCP tool 'echo' reported tool error for function call: {"name":"echo","args":{"call_id":"cN","text":"after reload N"}} with response: [{"functionResponse":{"name":"echo","response":{"error":{"message":"Error POSTing to endpoint (HTTP N): {\"error\":{\"code\":-N,\"message\":\"Session not found\"},\"id\":N,\"jsonrpc\":\"N.N\"}","isError":true}}}}])"#,
        ),
    );
}

#[test]
fn late_answers_sees_a_late_loss_on_the_old_session_start_a_second_new_session() {
    passes_the_patch_and_catches(
        "late-answers",
        (
            "SEAMLESS",
            "one fresh initialize without the dead id, tools re-listed, calls succeeded",
        ),
        "14-late-loss-reinitializes-again",
        (
            "RECOVERED",
            "fresh initialize without the dead id, tools re-listed, calls succeeded; N more initialize(s) after it",
        ),
    );
}

#[test]
fn late_answers_sees_the_old_session_closed_under_its_calls_in_flight() {
    passes_the_patch_and_catches(
        "late-answers",
        (
            "SEAMLESS",
            "one fresh initialize without the dead id, tools re-listed, calls succeeded",
        ),
        "25-old-client-closed-at-once",
        (
            "RECOVERED",
            r#"one fresh initialize without the dead id, tools re-listed, calls succeeded; N call(s) failed, the first cN (echo): MCP tool 'echo' reported tool error for function call: {"name":"echo","args":{"call_id":"cN","text":"at once N"}} with response: [{"functionResponse":{"name":"echo","response":{"error":{"message":"MCP error -N: Connection closed","isError":true}}}}]"#,
        ),
    );
}

#[test]
fn reinit_timeout_sees_the_servers_words_hidden_behind_the_new_sessions_timeout() {
    passes_the_patch_and_catches(
        "reinit-timeout",
        (
            "RECOVERED",
            "one fresh initialize without the dead id, tools re-listed, calls succeeded; N call(s) failed before it recovered",
        ),
        "24-failed-recovery-hides-words",
        (
            "MUTE",
            r#"the error of call cN (its new session got no answer in time) does not carry the server's words to it ("Session not found"): "MCP tool 'echo' reported tool error for function call: {\"name\":\"echo\",\"args\":{\"call_id\":\"cN\",\"text\":\"refused\"}} with response: [{\"functionResponse\":{\"name\":\"echo\",\"response\":{\"error\":{\"message\":\"MCP error -N: Request timed out\",\"isError\":true}}}}]""#,
        ),
    );
}

#[test]
fn late_answers_sees_late_errors_of_the_old_session_stop_the_client_listening() {
    passes_the_patch_and_catches(
        "late-answers",
        (
            "SEAMLESS",
            "one fresh initialize without the dead id, tools re-listed, calls succeeded",
        ),
        "26-old-client-errors-not-silenced",
        (
            "DEAF",
            "the new session announced a changed tool list (notifications/tools/list_changed) after the old session's late answers, and the client never listed its tools again",
        ),
    );
}

#[test]
fn tools_changed_sees_the_old_sessions_tools_kept_beside_the_relisted_ones() {
    passes_the_patch_and_catches(
        "tools-changed",
        (
            "SEAMLESS",
            "one fresh initialize without the dead id, tools re-listed, calls succeeded",
        ),
        "17-relist-keeps-old-tools",
        (
            "STALE",
            "call cN asked for add, which the new session no longer lists, and was sent to the server N time(s) and worked: the old session's tools were kept beside the new session's",
        ),
    );
}
