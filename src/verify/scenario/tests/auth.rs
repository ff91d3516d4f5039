//! Unit tests of the OAuth rules: `auth-token-401`'s judge (AUTH-KEPT when a
//! 401 naming no session is left to the client's auth flow) and the rules on
//! a host's `mcpatch/report` (no answer to an unsent request; the auth flow
//! ran), on hand-written witness logs and reports.

use super::*;
use crate::verify::fake_server::TOKEN_REFUSED_WORDS;
use crate::verify::scenario::auth::TOKEN_REFUSED_CALL;
use crate::verify::scenario::host_report::{check, HostReport, Violation};

/// The error a client gives for the refused call once its auth flow ran.
const SIGN_IN: &str = "the SDK's auth flow asked to sign in";

/// c1 works on s1; c2 (the refused token) gets the 401 and fails with
/// `c2_error`; c3 works on s1 again.
fn token_refused(c2_error: &str) -> Run {
    Run {
        witness: vec![
            init(0, "s1"),
            list(2, "s1"),
            call(4, "s1", "c1", 200),
            call(10, "s1", "c2", 401),
            call(20, "s1", "c3", 200),
        ],
        dropped: vec![],
        counts: counts(&[("c1", 1, 1), ("c2", 1, 0), ("c3", 1, 1)]),
        calls: vec![
            seen("c1", "echo", None, 3),
            seen("c2", TOKEN_REFUSED_CALL, Some(c2_error), 5),
            seen("c3", "echo", None, 3),
        ],
        seamless: true,
        per_call_recovery: false,
    }
}

fn expect() -> Expectation {
    find(ScenarioName::AuthToken401).expectation(true)
}

#[test]
fn a_bad_token_left_to_the_auth_flow_on_the_same_session_is_auth_kept() {
    let j = token_refused(SIGN_IN).judge(ScenarioName::AuthToken401, expect());
    assert_eq!(
        (j.verdict, j.ok, j.failed_calls, j.initialize_count),
        ("AUTH-KEPT", true, 1, 1)
    );
    assert_eq!(
        j.note,
        "the refused call failed once, no new session; calls before and after it worked"
    );
    assert_eq!(j.trigger_error.as_deref(), Some(SIGN_IN));
}

#[test]
fn a_new_session_after_a_bad_token_is_broken() {
    let mut run = token_refused("Error POSTing to endpoint: Unauthorized: invalid token");
    run.witness.insert(4, init(12, "s2"));
    let j = run.judge(ScenarioName::AuthToken401, expect());
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        format!("a new session after a 401 \"{TOKEN_REFUSED_WORDS}\" to a call on a live session (2 initializes): a 401 that names no session is for the client's auth flow, not session loss")
    );
}

#[test]
fn a_refused_call_sent_again_is_repeated() {
    let mut run = token_refused(SIGN_IN);
    run.counts = counts(&[("c1", 1, 1), ("c2", 2, 0), ("c3", 1, 1)]);
    let j = run.judge(ScenarioName::AuthToken401, expect());
    assert_eq!((j.verdict, j.ok), ("REPEATED", false));
}

#[test]
fn a_session_lost_to_a_bad_token_is_stuck() {
    let mut run = token_refused(SIGN_IN);
    run.calls[2] = seen("c3", "echo", Some("Unauthorized"), 3);
    let j = run.judge(ScenarioName::AuthToken401, expect());
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        "call c3 (echo) failed after the refused token: Unauthorized"
    );
}

fn report(answers_to_unsent: u64, sign_ins: u64) -> HostReport {
    HostReport {
        answers_to_unsent,
        examples: (0..answers_to_unsent.min(1))
            .map(|_| "Received a response for an unknown message ID: {\"id\":\"x-1\"}".into())
            .collect(),
        sign_ins,
    }
}

#[test]
fn an_answer_to_a_request_the_client_never_sent_breaks_every_scenario() {
    for name in [ScenarioName::Expired404, ScenarioName::AuthToken401] {
        assert_eq!(
            check(&find(name), &report(2, 1)),
            Some(Violation {
                verdict: "BROKEN",
                note: "the client got 2 answer(s) to a request it never sent, e.g. Received a response for an unknown message ID: {\"id\":\"x-1\"}: an answer the patch's own requests get must stay in the transport".into(),
            }),
            "{name}"
        );
    }
}

#[test]
fn a_bad_token_that_never_reached_the_auth_flow_is_auth_skipped_and_only_there() {
    assert_eq!(
        check(&find(ScenarioName::AuthToken401), &report(0, 0)),
        Some(Violation {
            verdict: "AUTH-SKIPPED",
            note: format!("the 401 \"{TOKEN_REFUSED_WORDS}\" never reached the client's auth flow: its authProvider was not asked to sign in"),
        })
    );
    assert_eq!(
        check(&find(ScenarioName::AuthToken401), &report(0, 1)),
        None
    );
    // Elsewhere no sign-in is asked for, and none is needed.
    assert_eq!(
        check(&find(ScenarioName::AuthSession401), &report(0, 0)),
        None
    );
}

#[test]
fn a_report_is_read_leniently_and_its_examples_escaped_and_bounded() {
    let r = HostReport::of(&serde_json::json!({
        "answersToUnsent": 7,
        "examples": ["a\u{1b}[31mb", 3, "c", "d", "e", "f", "g"],
        "signIns": "many",
    }));
    assert_eq!(r.answers_to_unsent, 7);
    assert_eq!(r.sign_ins, 0);
    assert_eq!(r.examples.len(), 5);
    assert!(!r.examples[0].contains('\u{1b}'), "{:?}", r.examples[0]);
    assert_eq!(
        HostReport::of(&serde_json::json!(null)),
        HostReport::default()
    );
}
