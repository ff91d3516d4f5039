//! mcp-remote's patch catalogue (test-fixtures/patch-mutants/mcp-remote, run
//! whole by `scripts/patch-mutants.sh --target mcp-remote`): four of its
//! mutants, each on the real release of its patch family, go through the same
//! steps as the script (apply, the mutant's search/replace on the patched
//! chunk, `verify --strict`) and are caught by what the catalogue found
//! missing (the stdio host's rules, `late-answers` run on a bridge); the
//! unmutated patched release passes the same runs.

use std::path::Path;

use serde_json::Value;

use super::mcp_remote::{chunk_of, json, output_within_five_minutes, project};
use super::mcp_sdk::mutate_builds;
use super::*;

/// A patched copy of mcp-remote `version` in the sandbox: its project folder.
fn patched(sb: &Sandbox, version: &str, name: &str) -> PathBuf {
    let dir = project(sb, version, name);
    let o = sb.run(&["apply", "--path", dir.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
    dir
}

/// `verify --strict --json` of `dir` with one scenario: the exit code and that
/// scenario's (verdict, note).
fn strict_one(sb: &Sandbox, dir: &Path, scenario: &str) -> (i32, String, String) {
    let path = dir.to_str().unwrap();
    let o = output_within_five_minutes(sb.command(&[
        "verify",
        "--strict",
        "--json",
        "--path",
        path,
        "--scenario",
        scenario,
    ]));
    let v: Value = json(&o);
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(s["name"], scenario, "{v:#}");
    (
        code(&o),
        s["verdict"].as_str().unwrap_or_default().to_string(),
        s["note"].as_str().unwrap_or_default().to_string(),
    )
}

/// A scenario's exit code, verdict and note ([`strict_one`]).
type Verdict = (i32, String, String);

/// What `verify --strict` says of `scenario`: on mcp-remote `release` patched
/// by `apply` (the control), then on the same copy broken by the catalogue's
/// `mutant`.
fn control_then_mutant(release: &str, scenario: &str, mutant: &str) -> (Verdict, Verdict) {
    let sb = Sandbox::new();
    let dir = patched(&sb, release, "p");
    let control = strict_one(&sb, &dir, scenario);
    let pkg = dir.join("node_modules/mcp-remote");
    mutate_builds(&pkg, &[chunk_of(release).as_str()], "mcp-remote", mutant);
    (control, strict_one(&sb, &dir, scenario))
}

#[test]
fn the_bridges_own_initialize_answered_to_the_host_is_caught_and_the_patched_release_passes() {
    let (control, (rc, verdict, note)) =
        control_then_mutant("0.1.44", "expired-404", "23-initialize-answer-leaks");
    assert_eq!(
        (control.0, control.1.as_str()),
        (0, "SEAMLESS"),
        "the control: {}",
        control.2
    );
    assert_eq!((rc, verdict.as_str()), (1, "BROKEN"), "{note}");
    let lead = "invariant answers-to-host-ids: 1 answer(s) to ids the host never sent reached the host, the first: an answer to no request of mcpatch: ";
    assert!(note.starts_with(lead), "{note}");
    let answer: Value =
        serde_json::from_str(&note[lead.len()..]).unwrap_or_else(|e| panic!("{e}: {note}"));
    assert_eq!(answer["id"], "mcpatch-reinit-1", "{note}");
    assert!(answer["result"]["protocolVersion"].is_string(), "{note}");
}

#[test]
fn a_repeat_that_meets_the_loss_again_and_fails_without_the_servers_words_is_caught() {
    let (control, (rc, verdict, note)) =
        control_then_mutant("0.15.1", "forgetful", "20-second-loss-words-dropped");
    assert_eq!(
        (control.0, control.1.as_str()),
        (0, "BOUNDED"),
        "the control: {}",
        control.2
    );
    assert_eq!((rc, verdict.as_str()), (1, "BROKEN"), "{note}");
    assert_eq!(
        note,
        "invariant server-words: call c1 (echo) met a lost session and failed with \"mcp-remote: the remote server no longer recognises the new session either\", without the server's words \"Session not found\""
    );
}

#[test]
fn a_401_naming_the_session_taken_for_a_sign_in_is_caught_though_the_bridge_recovers() {
    let (control, (rc, verdict, note)) =
        control_then_mutant("0.15.1", "expired-401", "07-fetch-hook-off");
    assert_eq!(
        (control.0, control.1.as_str()),
        (0, "SEAMLESS"),
        "the control: {}",
        control.2
    );
    assert_eq!((rc, verdict.as_str()), (1, "BROKEN"), "{note}");
    // The request's number in the server's log varies with the bridge's start-up.
    let lead = "invariant session-401-not-sign-in: the server answered tools/call on a lost session with 401 naming the session (request ";
    let tail = "), and the client then went to the OAuth sign-in path: GET /.well-known/oauth-protected-resource/mcp and 4 more; a 401 naming the session is a loss, taken before any sign-in";
    assert!(note.starts_with(lead) && note.ends_with(tail), "{note}");
    let number = &note[lead.len()..note.len() - tail.len()];
    assert!(number.parse::<u64>().is_ok(), "{note}");
}

#[test]
fn a_loss_answered_late_after_the_new_session_is_up_starts_no_second_session() {
    let (control, (rc, verdict, note)) =
        control_then_mutant("0.15.1", "late-answers", "14-renewed-session-renewed-again");
    assert_eq!(
        (control.0, control.1.as_str(), control.2.as_str()),
        (
            0,
            "SEAMLESS",
            "one fresh initialize without the dead id, calls succeeded"
        ),
        "the control"
    );
    assert_eq!(
        (rc, verdict.as_str(), note.as_str()),
        (
            1,
            "RECOVERED",
            "fresh initialize without the dead id, calls succeeded; 1 more initialize(s) after it"
        )
    );
}
