//! Unit tests of the judges: a call cut mid-run (NOT-RETRIED), a slow re-list, the first reconnect's start, hangs and timeouts, waiting calls (TIMELY) and calls once reconnecting stopped (FAIL-FAST).

use super::*;

/// The server restarts under the slow call k1 on s1; c2 then works on s2.
fn cut(sent: u32, failed_after: usize) -> Run {
    let mut calls = vec![seen("k1", "slow", Some("Connection closed"), 700)];
    for i in 0..failed_after {
        calls.push(seen(&format!("f{i}"), "echo", Some("Not connected"), 1));
    }
    calls.push(seen("c2", "echo", None, 3));
    let mut counts = counts(&[("k1", sent, 1), ("c2", 1, 1)]);
    for i in 0..failed_after {
        counts.insert(format!("f{i}"), CallCount::default());
    }
    Run {
        witness: vec![
            init(0, "s1"),
            list(5, "s1"),
            WitnessEntry {
                call_ok: None,
                executed: Some(true),
                ..call(10, "s1", "k1", 200)
            },
            control(500, "restart: sessions lost"),
            init(800, "s2"),
            list(810, "s2"),
            call(820, "s2", "c2", 200),
        ],
        dropped: vec!["s1".into()],
        counts,
        calls,
        seamless: true,
        per_call_recovery: false,
    }
}

#[test]
fn a_cut_call_sent_once_with_calls_working_after_the_restart_is_not_retried() {
    let j = cut(1, 0).judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!((j.verdict, j.ok, j.failed_calls), ("NOT-RETRIED", true, 1));
    assert_eq!(
        (j.trigger_ms, j.trigger_error.as_deref()),
        (Some(700), Some("Connection closed"))
    );
    assert_eq!(j.note, "the cut call failed once and was not sent again (its tool ran 1 time(s)); calls worked again after the restart");
    // The current revision lets no other call fail; an earlier one may.
    let j = cut(1, 1).judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!((j.verdict, j.ok, j.failed_calls), ("NOT-RETRIED", false, 2));
    assert!(
        j.note
            .ends_with("; 1 call(s) besides the cut one failed after the restart"),
        "{}",
        j.note
    );
    let mut run = cut(1, 1);
    run.seamless = false;
    let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!((j.verdict, j.ok), ("NOT-RETRIED", true));
}

#[test]
fn a_cut_call_sent_again_never_made_answered_or_never_followed_by_a_working_call_fails() {
    let j = cut(2, 0).judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!((j.verdict, j.ok), ("REPEATED", false));
    let mut run = cut(2, 0);
    run.witness.insert(
        4,
        WitnessEntry {
            executed: Some(false),
            ..call(790, "s1", "k1", 404)
        },
    );
    run.counts
        .insert("k1".into(), CallCount { sent: 2, ran: 1 });
    let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!(j.verdict, "REPEATED");
    assert_eq!(
        j.note,
        "the call cut while its tool ran was sent 2 time(s); it must be sent once and never again"
    );
    let j = cut(0, 0).judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!(j.verdict, "BROKEN");
    assert_eq!(
        j.note,
        "the call cut while its tool ran was sent 0 time(s); it must be sent once and never again"
    );

    let mut run = cut(1, 0);
    run.calls.remove(0);
    let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        ("BROKEN", "the slow call was never made")
    );

    let mut run = cut(1, 0);
    run.calls[0] = seen("k1", "slow", None, 700);
    let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "the caller got a success for a call the server never answered"
        )
    );

    let mut run = cut(1, 0);
    run.witness[6].session_sent = Some("s1".into());
    let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        "the cut call was not sent again, but no call worked after the server came back"
    );
    // A call that worked before the restart does not count.
    let mut run = cut(1, 0);
    run.witness.truncate(6);
    run.witness.insert(3, call(20, "s1", "c0", 200));
    let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
    assert_eq!(j.verdict, "STUCK", "{}", j.note);
}

// ---- the rules of the current revision ----

#[test]
fn a_call_sent_on_the_new_session_before_its_tools_are_listed_is_only_recovered() {
    let mut run = seamless_recovery(404, 130);
    run.witness[8].answered_ms = 124;
    run.witness[9].t_ms = 123;
    let j = run.judge(ScenarioName::SlowRelist, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
    assert_eq!(j.note, "call c2 was sent on the new session at 123 ms, before its tools were re-listed (124 ms); one fresh initialize without the dead id, tools re-listed, calls succeeded");
    run.witness[9].t_ms = 124;
    let j = run.judge(ScenarioName::SlowRelist, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
    // Earlier revisions pass with it: they recovered.
    run.witness[9].t_ms = 123;
    run.seamless = false;
    let j = run.judge(ScenarioName::SlowRelist, Expectation::Recover);
    assert_eq!((j.verdict, j.ok), ("RECOVERED", true));
    // A call answered before the held-back list shows before it in the log.
    let mut run = seamless_recovery(404, 130);
    let list = run.witness.remove(8);
    run.witness.push(WitnessEntry {
        answered_ms: 500,
        ..list
    });
    let j = run.judge(ScenarioName::SlowRelist, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
    assert!(
        j.note
            .starts_with("call c2 was sent on the new session at 125 ms, before its tools were re-listed (500 ms)"),
        "{}",
        j.note
    );
}

#[test]
fn the_first_reconnect_must_start_at_once_where_the_first_backoff_is_long() {
    // The loss is answered at 111 ms; s2's initialize arrives `after` ms later.
    let late = |after: u64| {
        let mut run = seamless_recovery(404, 130);
        let t = 111 + after;
        run.witness[7] = init(t, "s2");
        run.witness[8] = list(t + 9, "s2");
        run.witness[9] = call(t + 13, "s2", "c2", 200);
        run.judge_with(
            ScenarioName::LongBackoff,
            Expectation::Seamless,
            Policy::Long,
        )
    };
    let j = late(2500);
    assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
    let j = late(2501);
    assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
    assert_eq!(j.note, "the first reconnect started 2501 ms after the session-lost answer, not at once (limit 2500 ms; the policy's first backoff is 5000 ms); one fresh initialize without the dead id, tools re-listed, calls succeeded");
    // A short first backoff says nothing about it.
    let mut run = seamless_recovery(404, 130);
    run.witness[7] = init(111 + 2501, "s2");
    run.witness[8] = list(111 + 2510, "s2");
    run.witness[9] = call(111 + 2514, "s2", "c2", 200);
    let j = run.judge_with(
        ScenarioName::Expired404,
        Expectation::Seamless,
        Policy::Default,
    );
    assert_eq!(j.verdict, "SEAMLESS", "{}", j.note);
}

#[test]
fn a_call_that_never_settled_is_a_hang_named_by_its_call() {
    let mut run = seamless_recovery(404, 130);
    run.calls
        .push(seen("c3", "echo", Some(NEVER_SETTLED), 6000));
    let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("HANG", false));
    assert_eq!(
        j.note,
        "call c3 (echo) never settled: its caller was still waiting after 6000 ms"
    );
    // An ordinary error with those words in it is no hang.
    run.calls[2].error = Some(format!("Error: {NEVER_SETTLED}"));
    let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_ne!(j.verdict, "HANG");
}

#[test]
fn a_timed_out_call_on_a_healthy_session_holds_only_when_it_timed_out() {
    let run = held(&[
        ("c1", "echo", None),
        ("c2", "slow", Some("MCP error -32001: Request timed out")),
        ("c3", "echo", None),
    ]);
    let j = run.judge(ScenarioName::SlowTimeout, Expectation::Hold);
    assert_eq!((j.verdict, j.ok), ("HELD", true), "{}", j.note);
    assert_eq!(
        j.note,
        "the timed-out call failed once and was not sent again; same session, no new initialize"
    );
    let run = held(&[
        ("c1", "echo", None),
        ("c2", "slow", None),
        ("c3", "echo", None),
    ]);
    let j = run.judge(ScenarioName::SlowTimeout, Expectation::Hold);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "the slow call c2 did not time out: nothing was tested"
        )
    );
    let mut run = held(&[
        ("c1", "echo", None),
        ("c2", "slow", Some("MCP error -32001: Request timed out")),
        ("c3", "echo", None),
    ]);
    run.witness.push(init(30, "s2"));
    let j = run.judge(ScenarioName::SlowTimeout, Expectation::Hold);
    assert_eq!(j.verdict, "RECYCLED");
}

/// The probe c2 meets the loss of s1 at 110 ms and ends after `ms`; s2 starts
/// at 1500 ms and c3 works on it.
fn waited(ms: u64, sent: u32) -> Run {
    Run {
        witness: vec![
            init(0, "s1"),
            list(5, "s1"),
            call(10, "s1", "c1", 200),
            control(100, "invalidate: dropped 1 session(s)"),
            call(110, "s1", "c2", 404),
            init(1500, "s2"),
            list(1510, "s2"),
            call(1520, "s2", "c3", 200),
        ],
        dropped: vec!["s1".into()],
        counts: counts(&[("c1", 1, 1), ("c2", sent, 0), ("c3", 1, 1)]),
        calls: vec![
            seen("c1", "echo", None, 2),
            seen("c2", "probe", Some("This operation was aborted"), ms),
            seen("c3", "echo", None, 3),
        ],
        seamless: true,
        per_call_recovery: false,
    }
}

#[test]
fn a_waiting_call_is_timely_only_when_it_ends_by_its_signal_and_is_not_sent_again() {
    let j = waited(1100, 1).judge(ScenarioName::AbortWaiting, Expectation::Timely);
    // The probe is what met the loss: its time and error are the trigger's.
    assert_eq!(
        (j.verdict, j.ok, j.trigger_ms, j.trigger_error.as_deref()),
        (
            "TIMELY",
            true,
            Some(1100),
            Some("This operation was aborted")
        ),
        "{}",
        j.note
    );
    assert_eq!(j.note, "call c2 ended after 1100 ms, within its abort signal (400 ms), sent 1 time(s); calls worked again on a new session");
    let j = waited(1101, 1).judge(ScenarioName::AbortWaiting, Expectation::Timely);
    assert_eq!((j.verdict, j.ok, j.late_only), ("LATE", false, true));
    assert_eq!(
        j.note,
        "call c2 ended after 1101 ms, past its abort signal of 400 ms"
    );
    let j = waited(1701, 1).judge(ScenarioName::DeadlineWaiting, Expectation::Timely);
    assert_eq!(
        j.note,
        "call c2 ended after 1701 ms, past its toolCallTimeoutMs of 1000 ms"
    );
    let j = waited(500, 2).judge(ScenarioName::AbortWaiting, Expectation::Timely);
    assert_eq!((j.verdict, j.ok, j.late_only), ("REPEATED", false, false));
    assert_eq!(
        j.note,
        "call c2 was sent 2 times; once its abort signal has passed it must not be sent again"
    );
    let mut run = waited(500, 1);
    run.witness.pop();
    let j = run.judge(ScenarioName::AbortWaiting, Expectation::Timely);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "STUCK",
            "no call worked on a new session after the session was lost"
        )
    );
    let mut run = waited(500, 1);
    run.calls[1] = seen("c2", "probe", None, 500);
    let j = run.judge(ScenarioName::AbortWaiting, Expectation::Timely);
    assert_eq!(j.verdict, "BROKEN");
    let mut run = waited(500, 1);
    run.witness[4].status = 500;
    let j = run.judge(ScenarioName::AbortWaiting, Expectation::Timely);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "call c2 never met the lost session: nothing was tested"
        )
    );
}

#[test]
fn the_repeat_of_a_waiting_call_is_judged_only_when_it_was_sent() {
    let j = waited(3700, 2).judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!((j.verdict, j.ok), ("TIMELY", true), "{}", j.note);
    let j = waited(3701, 2).judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!(
        j.note,
        "call c2 ended after 3701 ms, past its toolCallTimeoutMs of 3000 ms"
    );
    let j = waited(3000, 1).judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "call c2 was not sent again on the new session: the repeat's deadline was not tested"
        )
    );
    let mut run = waited(3000, 1);
    run.seamless = false;
    let j = run.judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!(j.verdict, "TIMELY");
    // A client that never got a call through a new session is stuck, not untested.
    let mut run = waited(3000, 1);
    run.witness.pop();
    let j = run.judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "STUCK",
            "no call worked on a new session after the session was lost"
        )
    );
}

#[test]
fn a_repeat_the_server_answers_past_its_callers_deadline_is_late_unless_it_was_cancelled() {
    // c2 meets the loss at 110 ms; its repeat on s2 is answered at `answered_ms`.
    let repeated = |answered_ms: u64| {
        let mut run = waited(3000, 2);
        let mut again = call(1505, "s2", "c2", 200);
        again.answered_ms = answered_ms;
        run.witness.insert(6, again);
        run.counts = counts(&[("c1", 1, 1), ("c2", 2, 1), ("c3", 1, 1)]);
        run
    };
    // By the deadline (3000 ms after 110 ms) and its 700 ms slack: the caller let it go in time.
    let j = repeated(3810).judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!((j.verdict, j.ok), ("TIMELY", true), "{}", j.note);
    let j = repeated(3811).judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!((j.verdict, j.ok), ("LATE", false));
    assert_eq!(
        j.note,
        "the server answered the repeat of call c2 3701 ms after the call first reached it, past its toolCallTimeoutMs of 3000 ms: the client kept the repeat's request open and sent no notifications/cancelled"
    );
    // The client told the server it gave up: the server may still finish the tool.
    let mut run = repeated(6505);
    run.witness.insert(
        7,
        entry(
            3100,
            "POST",
            Some("notifications/cancelled"),
            Some("s2"),
            202,
        ),
    );
    let j = run.judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!((j.verdict, j.ok), ("TIMELY", true), "{}", j.note);
    // A repeat whose request the client closed is never answered: nothing to judge late.
    let j = waited(3000, 2).judge(ScenarioName::DeadlineResend, Expectation::Timely);
    assert_eq!((j.verdict, j.ok), ("TIMELY", true), "{}", j.note);
}

/// s1 lost at 100 ms; c2 (waiting) meets it, two initializes are refused;
/// c3 (after) is made once reconnecting stopped.
fn gave_up(waiting_error: &str, waiting_ms: u64, after_error: &str, after_ms: u64) -> Run {
    Run {
        witness: vec![
            init(0, "s1"),
            list(5, "s1"),
            call(10, "s1", "c1", 200),
            control(100, "invalidate: dropped 1 session(s)"),
            call(110, "s1", "c2", 404),
            entry(112, "POST", Some("initialize"), None, 503),
            entry(320, "POST", Some("initialize"), None, 503),
        ],
        dropped: vec!["s1".into()],
        counts: counts(&[("c1", 1, 1), ("c2", 1, 0), ("c3", 0, 0)]),
        calls: vec![
            seen("c1", "echo", None, 2),
            seen("c2", "waiting", Some(waiting_error), waiting_ms),
            seen("c3", "after", Some(after_error), after_ms),
        ],
        seamless: true,
        per_call_recovery: false,
    }
}

const SDK_404: &str = "Streamable HTTP error: Error POSTing to endpoint: {\"error\":{\"code\":-32001,\"message\":\"Session not found\"}}";
const STOPPED: &str = "mcp-client(fake): the server no longer recognises the session (Session not found) and gave up after 2 consecutive failed reconnect attempts";

#[test]
fn calls_fail_fast_with_the_servers_words_once_reconnecting_stopped() {
    let j =
        gave_up(SDK_404, 3000, STOPPED, 1000).judge(ScenarioName::GaveUp, Expectation::FailFast);
    assert_eq!((j.verdict, j.ok), ("FAILED-FAST", true), "{}", j.note);
    assert_eq!(j.note, "once reconnecting stopped (2 refused initialize(s)), the waiting call failed after 3000 ms and the next after 1000 ms, with the server's words");
    let j = gave_up(SDK_404, 3001, STOPPED, 1).judge(ScenarioName::GaveUp, Expectation::FailFast);
    assert_eq!((j.verdict, j.ok), ("LATE", false));
    assert_eq!(j.note, "call waiting failed only after 3001 ms: once reconnecting has stopped it must fail at once (limit 3000 ms, its timeout 6000 ms)");
    let j = gave_up(SDK_404, 300, STOPPED, 1001).judge(ScenarioName::GaveUp, Expectation::FailFast);
    assert_eq!(j.verdict, "LATE");
    let j =
        gave_up("session lost", 300, STOPPED, 1).judge(ScenarioName::GaveUp, Expectation::FailFast);
    assert_eq!((j.verdict, j.ok), ("MUTE", false));
    assert_eq!(j.note, "the error of call waiting does not carry the server's words (\"Session not found\"): \"session lost\"");
    let j = gave_up(
        SDK_404,
        300,
        "mcp-client(fake): the server no longer recognises the session (Session not found)",
        1,
    )
    .judge(ScenarioName::GaveUp, Expectation::FailFast);
    assert_eq!(j.verdict, "MUTE");
    assert!(j.note.starts_with("the error of call after does not carry the server's words (\"Session not found\") and why reconnecting stopped (\"gave up\")"), "{}", j.note);
    // Earlier revisions need not say so.
    let mut run = gave_up("session lost", 300, "Not connected", 1);
    run.seamless = false;
    assert_eq!(
        run.judge(ScenarioName::GaveUp, Expectation::FailFast)
            .verdict,
        "FAILED-FAST"
    );
    let mut run = gave_up(SDK_404, 300, STOPPED, 1);
    run.witness.truncate(5);
    let j = run.judge(ScenarioName::GaveUp, Expectation::FailFast);
    assert_eq!(
        (j.verdict, j.note.as_str()),
        (
            "BROKEN",
            "the client never tried a new session: nothing was tested"
        )
    );
}
