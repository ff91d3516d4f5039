//! Unit tests of the judges: `refused-once` (the first new session refused,
//! the server healthy afterwards): RECOVERED with the server's words, MUTE
//! without them, STUCK when no new session follows the refusal.

use super::*;
use crate::verify::fake_server::REFUSED_ONCE_WORDS;

/// The refused words as a client's error carries them.
fn refused_error() -> String {
    format!("Error POSTing to endpoint: Service Unavailable: {REFUSED_ONCE_WORDS}")
}

/// Call c1 works on s1; the session is dropped; c2 meets the loss, the new
/// initialize is refused (503) and c2 fails with `c2_error`; c3 meets the
/// loss again, s2 starts, its tools are listed and c3's repeat works on it.
fn refused_then_recovered(c2_error: &str) -> Run {
    Run {
        witness: vec![
            init(0, "s1"),
            list(2, "s1"),
            call(4, "s1", "c1", 200),
            control(10, "invalidate: dropped 1 session(s)"),
            call(12, "s1", "c2", 404),
            entry(14, "POST", Some("initialize"), None, 503),
            call(20, "s1", "c3", 404),
            init(22, "s2"),
            list(24, "s2"),
            call(26, "s2", "c3", 200),
        ],
        dropped: vec!["s1".into()],
        counts: counts(&[("c1", 1, 1), ("c2", 1, 0), ("c3", 2, 1)]),
        calls: vec![
            seen("c1", "echo", None, 3),
            seen("c2", REFUSED_CALL, Some(c2_error), 5),
            seen("c3", "echo", None, 8),
        ],
        seamless: true,
        per_call_recovery: false,
    }
}

fn expect() -> Expectation {
    find(ScenarioName::RefusedOnce).expectation(true)
}

#[test]
fn a_refused_new_session_then_a_working_one_is_recovered_which_the_current_revision_passes() {
    let j = refused_then_recovered(&refused_error()).judge(ScenarioName::RefusedOnce, expect());
    assert_eq!(
        (j.verdict, j.ok, j.failed_calls, j.initialize_count),
        ("RECOVERED", true, 1, 2)
    );
    assert_eq!(
        j.note,
        "one fresh initialize without the dead id, tools re-listed, calls succeeded; 1 call(s) failed before it recovered"
    );
    assert_eq!(j.trigger_error, Some(refused_error()));
}

#[test]
fn a_refused_call_without_the_servers_words_is_mute() {
    let j = refused_then_recovered("session lost").judge(ScenarioName::RefusedOnce, expect());
    assert_eq!((j.verdict, j.ok), ("MUTE", false));
    assert_eq!(
        j.note,
        format!("the error of call c2 (the new session refused) does not carry the server's words ({REFUSED_ONCE_WORDS:?}): \"session lost\"")
    );
    // A client not held to the current revision is not asked for the words.
    let mut run = refused_then_recovered("session lost");
    run.seamless = false;
    let j = run.judge(ScenarioName::RefusedOnce, expect());
    assert_eq!((j.verdict, j.ok), ("RECOVERED", true));
}

#[test]
fn no_new_session_after_the_refusal_is_stuck() {
    // The refusal was kept as the answer: c3 fails too, no new initialize.
    let mut run = refused_then_recovered(&refused_error());
    run.witness.truncate(7);
    run.calls[2] = seen("c3", "echo", Some(&refused_error()), 2);
    run.counts = counts(&[("c1", 1, 1), ("c2", 1, 0), ("c3", 1, 0)]);
    let j = run.judge(ScenarioName::RefusedOnce, expect());
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        "no new initialize after the session was lost; 2 request(s) kept the dead session id"
    );
}

#[test]
fn a_recovery_the_server_never_refused_tested_nothing() {
    let mut run = refused_then_recovered(&refused_error());
    run.witness.remove(5);
    let j = run.judge(ScenarioName::RefusedOnce, expect());
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        "the server never refused a new session: nothing was tested"
    );
}

#[test]
fn recovered_in_refused_once_is_the_best_it_has_and_counts_as_seamless_overall() {
    assert_eq!(
        overall_verdict(ScenarioName::RefusedOnce, "RECOVERED"),
        "SEAMLESS"
    );
    assert_eq!(
        overall_verdict(ScenarioName::Expired404, "RECOVERED"),
        "RECOVERED"
    );
    assert_eq!(overall_verdict(ScenarioName::RefusedOnce, "STUCK"), "STUCK");
}

#[test]
fn a_client_whose_call_rides_through_the_refusal_is_seamless_and_passes() {
    // The DSH plugin: it tries a new session again after its backoff, within the call.
    let mut run = refused_then_recovered(&refused_error());
    run.calls[1] = seen("c2", REFUSED_CALL, None, 150);
    run.witness.push(call(27, "s2", "c2", 200));
    run.counts = counts(&[("c1", 1, 1), ("c2", 2, 1), ("c3", 2, 1)]);
    let j = run.judge(ScenarioName::RefusedOnce, expect());
    assert_eq!(
        (j.verdict, j.ok, j.failed_calls),
        ("SEAMLESS", true, 0),
        "{}",
        j.note
    );
}
