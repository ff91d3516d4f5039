//! Unit tests of the judges of the two scenarios where reconnecting stops or
//! must not: `losses-apart` (three losses apart, each after a healthy session
//! that served nothing: RESET when each is a new outage, STUCK when a call
//! that met one fails unsent) and `reconnect-disabled` (FAILED-FAST at once,
//! LATE when a call waits, MUTE without the words or the reason).

use super::*;

const LOST: &str = "Streamable HTTP error: Error POSTing to endpoint: {\"error\":{\"code\":-32001,\"message\":\"Session not found\"}}";
const FAILED_500: &str = "Streamable HTTP error: Error POSTing to endpoint: Internal Server Error";

/// A call of the `fail` tool on `session`: it ran and failed with HTTP 500.
fn failed_500(t_ms: u64, session: &str, id: &str) -> WitnessEntry {
    WitnessEntry {
        executed: Some(true),
        call_ok: Some(false),
        ..call(t_ms, session, id, 500)
    }
}

/// c1 works on s1; then three times 1.6 s apart the server drops every
/// session and a call (c2, c3, c4) meets the loss, is sent again on the next
/// session and fails there with 500; c5 works on s4.
fn losses_apart() -> Run {
    let mut witness = vec![init(0, "s1"), list(2, "s1"), call(4, "s1", "c1", 200)];
    for (k, (lost, new, id)) in [("s1", "s2", "c2"), ("s2", "s3", "c3"), ("s3", "s4", "c4")]
        .into_iter()
        .enumerate()
    {
        let t = 10 + 1600 * k as u64;
        witness.extend([
            control(t, "invalidate: dropped 1 session(s)"),
            call(t + 2, lost, id, 404),
            init(t + 4, new),
            list(t + 6, new),
            failed_500(t + 8, new, id),
        ]);
    }
    witness.push(call(4900, "s4", "c5", 200));
    Run {
        witness,
        dropped: vec!["s1".into(), "s2".into(), "s3".into()],
        counts: counts(&[
            ("c1", 1, 1),
            ("c2", 2, 1),
            ("c3", 2, 1),
            ("c4", 2, 1),
            ("c5", 1, 1),
        ]),
        calls: vec![
            seen("c1", "echo", None, 2),
            seen("c2", "outage1", Some(FAILED_500), 9),
            seen("c3", "outage2", Some(FAILED_500), 9),
            seen("c4", "outage3", Some(FAILED_500), 9),
            seen("c5", LAST_CALL, None, 2),
        ],
        seamless: true,
        per_call_recovery: false,
    }
}

#[test]
fn the_losses_come_after_the_policys_max_delay_and_outnumber_its_attempts() {
    let policy = Policy::for_scenario(ScenarioName::LossesApart);
    // Each new session stays healthy long enough to end its outage, with room for a busy machine...
    assert!(LOSSES_APART_HEALTHY >= policy.max_delay() + std::time::Duration::from_millis(300));
    // ...and losses counted as one outage use up the attempts: the client gives up.
    assert!(LOSSES_APART as u32 > policy.max_attempts());
    assert_eq!(
        Policy::for_scenario(ScenarioName::ReconnectDisabled).max_attempts(),
        0
    );
}

fn judge_apart(run: &Run) -> Judgement {
    run.judge_with(ScenarioName::LossesApart, Expectation::Reset, Policy::Brief)
}

#[test]
fn losses_apart_each_sent_again_on_a_new_session_reset() {
    let j = judge_apart(&losses_apart());
    assert_eq!((j.verdict, j.ok), ("RESET", true), "{}", j.note);
    assert_eq!(
        j.note,
        "3 losses 1.5 s apart, each after a healthy session: each call that met one was sent again on a new session, the call after them worked; 4 handshakes"
    );
}

#[test]
fn a_call_that_met_a_later_loss_and_failed_unsent_is_stuck() {
    // The client gave up at the third loss: c4 fails unsent, the tools are gone.
    let mut run = losses_apart();
    run.witness.truncate(run.witness.len() - 4);
    run.counts
        .insert("c4".into(), CallCount { sent: 1, ran: 0 });
    run.counts.remove("c5");
    run.calls[3] = seen("c4", "outage3", Some(LOST), 7);
    run.calls[4] = seen("c5", LAST_CALL, Some("tool not registered"), 0);
    let j = judge_apart(&run);
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        format!("call c4 met the lost session of loss 3 of 3 (the session before it had stayed healthy 1.5 s) and failed after 7 ms without being sent again on a new session: {LOST}")
    );
    // The first loss has no healthy session of 1.5 s before it: not said.
    let mut run = losses_apart();
    run.witness.drain(5..);
    run.counts = counts(&[("c1", 1, 1), ("c2", 1, 0)]);
    run.calls.truncate(1);
    run.calls.push(seen("c2", "outage1", Some(LOST), 7));
    assert_eq!(
        judge_apart(&run).note,
        format!("call c2 met the lost session of loss 1 of 3 and failed after 7 ms without being sent again on a new session: {LOST}")
    );
}

#[test]
fn losses_apart_with_a_failed_last_call_or_nothing_tested_is_not_reset() {
    let mut run = losses_apart();
    run.witness.pop();
    run.counts
        .insert("c5".into(), CallCount { sent: 1, ran: 0 });
    run.calls[4] = seen("c5", LAST_CALL, Some("Not connected"), 3);
    let j = judge_apart(&run);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "STUCK",
            "the call after the 3 losses (c5) failed: Not connected"
        )
    );
    // A call that never met the loss tested nothing.
    let mut run = losses_apart();
    run.witness.remove(4);
    run.counts
        .insert("c2".into(), CallCount { sent: 1, ran: 1 });
    let j = judge_apart(&run);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "call c2 (loss 1 of 3) never met the lost session: nothing was tested"
        )
    );
    // Fewer calls than losses.
    let mut run = losses_apart();
    run.calls.remove(3);
    assert_eq!(
        judge_apart(&run).note,
        "the run made 2 of the 3 calls that meet a loss: nothing was tested past it"
    );
}

const DISABLED: &str = "mcp-client(fake): the server no longer recognises the session (Session not found) and reconnect is disabled";

/// s1 lost at 100 ms; c2 (waiting) meets it; c3 (after) is made next, on the
/// lost session the client keeps; reconnect is disabled.
fn disabled(waiting_error: &str, waiting_ms: u64, after_error: &str, after_ms: u64) -> Run {
    Run {
        witness: vec![
            init(0, "s1"),
            list(5, "s1"),
            call(10, "s1", "c1", 200),
            control(100, "invalidate: dropped 1 session(s)"),
            call(110, "s1", "c2", 404),
        ],
        dropped: vec!["s1".into()],
        counts: counts(&[("c1", 1, 1), ("c2", 1, 0)]),
        calls: vec![
            seen("c1", "echo", None, 2),
            seen("c2", "waiting", Some(waiting_error), waiting_ms),
            seen("c3", "after", Some(after_error), after_ms),
        ],
        seamless: true,
        per_call_recovery: false,
    }
}

fn judge_disabled(run: &Run) -> Judgement {
    run.judge_with(
        ScenarioName::ReconnectDisabled,
        Expectation::FailFast,
        Policy::Disabled,
    )
}

#[test]
fn with_reconnect_disabled_both_calls_fail_within_a_second_saying_why() {
    let j = judge_disabled(&disabled(LOST, 1000, DISABLED, 1));
    assert_eq!((j.verdict, j.ok), ("FAILED-FAST", true), "{}", j.note);
    assert_eq!(
        j.note,
        "with reconnect disabled, the waiting call failed after 1000 ms and the next after 1 ms, with the server's words"
    );
    // The waiting call's limit is 1 s here, not gave-up's 3 s.
    let j = judge_disabled(&disabled(LOST, 1001, DISABLED, 1));
    // Late only: the judge may give a loaded machine a second run.
    assert_eq!((j.verdict, j.ok, j.late_only), ("LATE", false, true));
    assert_eq!(
        j.note,
        "call waiting failed only after 1001 ms: with reconnect disabled it must fail at once (limit 1000 ms, its timeout 6000 ms)"
    );
    let j = judge_disabled(&disabled(LOST, 10, LOST, 1));
    assert_eq!((j.verdict, j.ok), ("MUTE", false));
    assert!(
        j.note.starts_with("the error of call after does not carry the server's words (\"Session not found\") and why reconnecting stopped (\"reconnect is disabled\")"),
        "{}",
        j.note
    );
}

#[test]
fn with_reconnect_disabled_a_run_whose_call_never_met_the_loss_or_worked_is_broken() {
    let mut run = disabled(LOST, 10, DISABLED, 1);
    run.witness.pop();
    let j = judge_disabled(&run);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "call waiting never met the lost session: nothing was tested"
        )
    );
    // Another call met the loss; the waiting one ran on the live session.
    let mut run = disabled(LOST, 10, DISABLED, 1);
    run.witness[2] = call(10, "s1", "c1", 404);
    run.witness[4] = call(110, "s1", "c2", 200);
    let j = judge_disabled(&run);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "call waiting never met the lost session: nothing was tested"
        )
    );
    let mut run = disabled(LOST, 10, DISABLED, 1);
    run.witness
        .extend([init(120, "s2"), list(122, "s2"), call(124, "s2", "c3", 200)]);
    run.counts
        .insert("c3".into(), CallCount { sent: 1, ran: 1 });
    run.calls[2] = seen("c3", "after", None, 20);
    let j = judge_disabled(&run);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "call after succeeded although reconnect is disabled"
        )
    );
}
