//! Unit tests of the judges of the extra scenarios, reached through
//! `judge`'s dispatch: `tools-changed` (a tool the new session no longer
//! lists), `late-answers` (a changed tool list announced after the old
//! session's late answers) and `reinit-timeout` (the first new session
//! answered only past the client's limit).

use super::*;
use crate::verify::fake_server::late::ANNOUNCED_NOTE;

fn seamless() -> Expectation {
    Expectation::Seamless
}

/// [`seamless_recovery`], and then call c3 of the tool the new session no
/// longer lists, sent on s2 when `sent` and working when `worked`.
fn dropped_tool_called(sent: bool, worked: bool) -> Run {
    let mut run = seamless_recovery(404, 130);
    if sent {
        run.witness.push(call(140, "s2", "c3", 200));
    }
    run.counts.insert(
        "c3".into(),
        CallCount {
            sent: u32::from(sent),
            ran: u32::from(sent),
        },
    );
    let error = (!worked).then_some("MCP error -32602: Tool add not found");
    run.calls.push(seen("c3", DROPPED_CALL, error, 3));
    run
}

#[test]
fn a_call_of_a_tool_the_new_session_no_longer_lists_sent_to_the_server_is_stale() {
    let j = dropped_tool_called(true, true).judge(ScenarioName::ToolsChanged, seamless());
    assert_eq!((j.verdict, j.ok), ("STALE", false));
    assert_eq!(
        j.note,
        "call c3 asked for add, which the new session no longer lists, and was sent to the server 1 time(s) and worked: the old session's tools were kept beside the new session's"
    );
}

#[test]
fn a_call_of_a_tool_the_new_session_no_longer_lists_that_fails_in_the_client_is_seamless() {
    let j = dropped_tool_called(false, false).judge(ScenarioName::ToolsChanged, seamless());
    assert_eq!(
        (j.verdict, j.ok, j.failed_calls),
        ("SEAMLESS", true, 0),
        "{}",
        j.note
    );
}

#[test]
fn a_tools_changed_run_that_never_called_the_dropped_tool_tested_nothing() {
    let j = seamless_recovery(404, 130).judge(ScenarioName::ToolsChanged, seamless());
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        "the call of the tool the new session no longer lists (add) was never made"
    );
}

/// [`seamless_recovery`], and then the new session announces a changed tool
/// list, and the client lists s2's tools again after it when `relisted`.
fn announced(relisted: bool) -> Run {
    let mut run = seamless_recovery(404, 130);
    run.witness
        .push(control(150, &format!("{ANNOUNCED_NOTE}s2")));
    if relisted {
        run.witness.push(list(155, "s2"));
    }
    run
}

#[test]
fn a_client_that_lists_the_tools_again_after_an_announcement_is_seamless() {
    let j = announced(true).judge(ScenarioName::LateAnswers, seamless());
    assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
}

#[test]
fn a_client_deaf_to_an_announced_tool_list_after_late_answers_is_reported() {
    let j = announced(false).judge(ScenarioName::LateAnswers, seamless());
    assert_eq!((j.verdict, j.ok), ("DEAF", false));
    assert_eq!(
        j.note,
        "the new session announced a changed tool list (notifications/tools/list_changed) after the old session's late answers, and the client never listed its tools again"
    );
    let j = seamless_recovery(404, 130).judge(ScenarioName::LateAnswers, seamless());
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
}

/// Call c1 works on s1; the session is dropped; c2 meets the loss and its new
/// session's initialize is answered only `answered_after_ms` later; then s2's
/// tools are listed and c2 is sent again and works.
fn reinit_answered_late(answered_after_ms: u64) -> Run {
    let mut first = init(20, "s2");
    first.answered_ms = 20 + answered_after_ms;
    let at = first.answered_ms;
    Run {
        witness: vec![
            init(0, "s1"),
            list(2, "s1"),
            call(4, "s1", "c1", 200),
            control(10, "invalidate: dropped 1 session(s)"),
            call(12, "s1", "c2", 404),
            first,
            list(at + 1, "s2"),
            call(at + 2, "s2", "c2", 200),
        ],
        dropped: vec!["s1".into()],
        counts: counts(&[("c1", 1, 1), ("c2", 2, 1)]),
        calls: vec![
            seen("c1", "echo", None, 3),
            seen("c2", REFUSED_CALL, None, at - 10),
        ],
        seamless: true,
        per_call_recovery: false,
    }
}

#[test]
fn a_recovery_that_waits_for_a_new_session_answered_past_the_deadline_is_allowed_that_wait() {
    let expect = find(ScenarioName::ReinitTimeout).expectation(true);
    // Past the policy's deadline (2.6 s), within it and the refusal's delay (3 s).
    let late = Policy::Short.deadline().as_millis() as u64 + 1000;
    let j = reinit_answered_late(late).judge(ScenarioName::ReinitTimeout, expect);
    assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
    // Past both: late.
    let late = (Policy::Short.deadline() + REFUSAL_DELAY).as_millis() as u64 + 100;
    let j = reinit_answered_late(late).judge(ScenarioName::ReinitTimeout, expect);
    assert_eq!((j.verdict, j.ok, j.late_only), ("STUCK", false, true));
}
