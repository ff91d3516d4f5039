//! Unit tests of the `get-stream-loss` judge (get_stream.rs): the loss met by
//! the client's own GET reconnect, healed with no call made (SEAMLESS), left
//! until the next call (STUCK), and runs that tested nothing (BROKEN).

use super::*;

/// A GET stream `t_ms` on `session`, answered `status` (200: opened).
fn get(t_ms: u64, session: &str, status: u16) -> WitnessEntry {
    entry(t_ms, "GET", None, Some(session), status)
}

/// s1 works and holds its GET stream; the session is dropped at 100 ms and
/// the stream cut; the GET reconnect meets the loss at 1100 ms; s2 starts,
/// its GET stream opens at 1110 ms; then the plan's call works on s2.
fn reopened() -> Run {
    Run {
        witness: vec![
            init(0, "s1"),
            list(5, "s1"),
            get(6, "s1", 200),
            call(10, "s1", "c1", 200),
            control(100, "invalidate: dropped 1 session(s)"),
            control(101, "get stream cut: its session is gone (s1)"),
            get(1100, "s1", 404),
            init(1102, "s2"),
            get(1110, "s2", 200),
            call(1200, "s2", "c2", 200),
        ],
        dropped: vec!["s1".into()],
        counts: counts(&[("c1", 1, 1), ("c2", 1, 1)]),
        calls: vec![seen("c1", "echo", None, 2), seen("c2", "echo", None, 3)],
        seamless: true,
        per_call_recovery: false,
    }
}

fn judged(run: &Run) -> Judgement {
    run.judge(
        ScenarioName::GetStreamLoss,
        find(ScenarioName::GetStreamLoss).expectation(true),
    )
}

#[test]
fn a_get_stream_that_reopens_on_a_new_session_with_no_call_made_is_seamless() {
    let j = judged(&reopened());
    assert_eq!(
        (
            j.verdict,
            j.ok,
            j.failed_calls,
            j.initialize_count,
            j.recovery_ms
        ),
        ("SEAMLESS", true, 0, 2, Some(100))
    );
    assert_eq!(
        j.note,
        "the GET stream met the loss; one fresh initialize without the dead id and a GET stream on the new session 9 ms later, with no call made; calls succeeded"
    );
}

#[test]
fn a_new_session_started_only_by_the_next_call_is_stuck() {
    // mcp-sdk mutant 18: the GET only reports the loss; the call meets it and recovers.
    let mut run = reopened();
    run.witness.truncate(7);
    run.witness.extend([
        call(6100, "s1", "c2", 404),
        init(6102, "s2"),
        list(6104, "s2"),
        call(6106, "s2", "c2", 200),
        get(6107, "s2", 200),
    ]);
    run.counts = counts(&[("c1", 1, 1), ("c2", 2, 1)]);
    let j = judged(&run);
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        "the GET stream met the loss at 1101 ms (HTTP 404), but no new session started before the next call (6100 ms)"
    );
}

#[test]
fn a_stream_never_opened_again_after_the_cut_is_stuck() {
    let mut run = reopened();
    run.witness.truncate(6);
    run.witness.push(call(6100, "s1", "c2", 404));
    run.calls[1] = seen("c2", "echo", Some("Session not found"), 3);
    run.counts = counts(&[("c1", 1, 1), ("c2", 1, 0)]);
    let j = judged(&run);
    assert_eq!((j.verdict, j.ok, j.failed_calls), ("STUCK", false, 1));
    assert_eq!(
        j.note,
        "the client never opened its GET stream again after the server cut it, so nothing met the loss before the next call (6100 ms)"
    );
}

#[test]
fn a_new_session_without_a_get_stream_on_it_is_stuck() {
    let mut run = reopened();
    run.witness.remove(8);
    let j = judged(&run);
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        "a new session started at 1102 ms after the GET stream met the loss, but no GET stream opened on it before the next call (1200 ms)"
    );
}

#[test]
fn a_stream_reopened_past_the_limit_is_stuck_and_one_at_the_limit_passes() {
    let limit = crate::verify::scenario::get_stream::GET_REOPEN_LIMIT.as_millis() as u64;
    let mut run = reopened();
    // The loss answered at 1101 ms; the new GET arrives `limit` later: in time.
    run.witness[8] = get(1101 + limit, "s2", 200);
    run.witness[9] = call(1101 + limit + 50, "s2", "c2", 200);
    assert_eq!(judged(&run).verdict, "SEAMLESS");
    run.witness[8] = get(1102 + limit, "s2", 200);
    let j = judged(&run);
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        format!(
            "the GET stream opened on the new session only {} ms after it met the loss (limit {limit} ms)",
            limit + 1
        )
    );
}

#[test]
fn a_run_with_no_get_stream_before_the_drop_tested_nothing() {
    let mut run = reopened();
    run.witness.remove(2);
    let j = judged(&run);
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        "the client opened no GET stream before the session was dropped: nothing was tested"
    );
}

#[test]
fn a_failed_call_or_a_second_new_session_is_recovered_not_seamless() {
    let mut run = reopened();
    run.calls[1] = seen("c2", "echo", Some("boom"), 3);
    assert_eq!(judged(&run).verdict, "RECOVERED");
    let mut run = reopened();
    run.witness.insert(9, init(1150, "s3"));
    let j = judged(&run);
    assert_eq!(j.verdict, "RECOVERED");
    assert!(
        j.note.ends_with("; 1 more initialize(s) after it"),
        "{}",
        j.note
    );
}
