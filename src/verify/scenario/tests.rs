//! Unit tests of the scenario table and its judges, on hand-written witness
//! logs and caller views.

use std::collections::HashMap;

use super::judges::*;
use super::*;
use crate::verify::fake_server::{CallCount, WitnessEntry, ORDINARY_ERROR_WORDS};

#[test]
fn one_handshake_is_singular() {
    assert_eq!(counted(1, "handshake"), "1 handshake");
    assert_eq!(counted(0, "call"), "0 calls");
    assert_eq!(counted(3, "call"), "3 calls");
}

// ---- verdicts from hand-made witness logs ----
//
// The integration tests run the real client against the fake server; these
// give each judge a log that reaches one of its branches exactly, edges
// included, so a judge that decides from the wrong thing fails here.

fn entry(
    t_ms: u64,
    http: &str,
    rpc: Option<&str>,
    sent: Option<&str>,
    status: u16,
) -> WitnessEntry {
    WitnessEntry {
        seq: t_ms,
        t_ms,
        answered_ms: t_ms + 1,
        http_method: http.into(),
        rpc_method: rpc.map(str::to_string),
        session_sent: sent.map(str::to_string),
        status,
        session_issued: None,
        call_id: None,
        executed: None,
        call_ok: None,
        note: None,
    }
}

/// A fresh initialize at `t_ms` that issues `issued`.
fn init(t_ms: u64, issued: &str) -> WitnessEntry {
    WitnessEntry {
        session_issued: Some(issued.into()),
        ..entry(t_ms, "POST", Some("initialize"), None, 200)
    }
}

fn list(t_ms: u64, session: &str) -> WitnessEntry {
    entry(t_ms, "POST", Some("tools/list"), Some(session), 200)
}

/// A tools/call of `id` on `session`: run and succeeded (200), or rejected
/// before the tool ran (any other status).
fn call(t_ms: u64, session: &str, id: &str, status: u16) -> WitnessEntry {
    WitnessEntry {
        call_id: Some(id.into()),
        executed: Some(status == 200),
        call_ok: Some(status == 200),
        ..entry(t_ms, "POST", Some("tools/call"), Some(session), status)
    }
}

fn control(t_ms: u64, note: &str) -> WitnessEntry {
    WitnessEntry {
        note: Some(note.into()),
        ..entry(t_ms, "CONTROL", None, None, 200)
    }
}

fn seen(id: &str, name: &str, error: Option<&str>, ms: u64) -> HarnessCall {
    HarnessCall {
        call_id: id.into(),
        name: name.into(),
        ok: error.is_none(),
        error: error.map(str::to_string),
        ms,
    }
}

fn counts(of: &[(&str, u32, u32)]) -> HashMap<String, CallCount> {
    of.iter()
        .map(|&(id, sent, ran)| (id.to_string(), CallCount { sent, ran }))
        .collect()
}

struct Run {
    witness: Vec<WitnessEntry>,
    dropped: Vec<String>,
    counts: HashMap<String, CallCount>,
    calls: Vec<HarnessCall>,
    seamless: bool,
    per_call_recovery: bool,
}

impl Run {
    fn judge(&self, name: ScenarioName, expect: Expectation) -> Judgement {
        let ev = Evidence {
            witness: &self.witness,
            dropped: &self.dropped,
            counts: &self.counts,
            calls: &self.calls,
            policy: Policy::Short,
            seamless: self.seamless,
            per_call_recovery: self.per_call_recovery,
        };
        judge(&find(name), expect, &ev)
    }

    fn judge_with(&self, name: ScenarioName, expect: Expectation, policy: Policy) -> Judgement {
        let ev = Evidence {
            witness: &self.witness,
            dropped: &self.dropped,
            counts: &self.counts,
            calls: &self.calls,
            policy,
            seamless: self.seamless,
            per_call_recovery: self.per_call_recovery,
        };
        judge(&find(name), expect, &ev)
    }
}

/// A client that meets the loss of s1 with call c2 at 110 ms, starts s2 at
/// once, lists its tools and sends c2 again, answered at `answered_ms`.
fn seamless_recovery(status: u16, answered_ms: u64) -> Run {
    let mut again = call(125, "s2", "c2", 200);
    again.answered_ms = answered_ms;
    Run {
        witness: vec![
            init(0, "s1"),
            list(5, "s1"),
            call(10, "s1", "c1", 200),
            entry(50, "GET", None, Some("s1"), 404),
            control(100, "invalidate: dropped 1 session(s)"),
            entry(105, "GET", None, Some("s1"), 404),
            call(110, "s1", "c2", status),
            init(112, "s2"),
            list(121, "s2"),
            again,
        ],
        dropped: vec!["s1".into()],
        counts: counts(&[("c1", 1, 1), ("c2", 2, 1)]),
        calls: vec![seen("c1", "echo", None, 2), seen("c2", "echo", None, 20)],
        seamless: true,
        per_call_recovery: false,
    }
}

#[test]
fn a_fresh_session_with_no_failed_call_is_seamless_and_timed_from_the_failed_post() {
    let j = seamless_recovery(404, 130).judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!(
        (
            j.verdict,
            j.ok,
            j.recovery_ms,
            j.trigger_ms,
            j.failed_calls,
            j.initialize_count
        ),
        ("SEAMLESS", true, Some(20), Some(20), 0, 2)
    );
    assert_eq!(
        j.note,
        "one fresh initialize without the dead id, tools re-listed, calls succeeded"
    );
    assert_eq!(j.trigger_error, None);
    // A 400 answer is a failed request too.
    let j = seamless_recovery(400, 130).judge(ScenarioName::Expired400, Expectation::Seamless);
    assert_eq!((j.verdict, j.recovery_ms), ("SEAMLESS", Some(20)));
    // Recovered answers a plain `recover` expectation as well.
    let j = seamless_recovery(404, 130).judge(ScenarioName::Expired404, Expectation::Recover);
    assert_eq!((j.verdict, j.ok), ("SEAMLESS", true));
}

#[test]
fn recovery_at_the_policys_deadline_counts_and_a_millisecond_later_is_stuck() {
    let deadline = Policy::Short.deadline().as_millis() as u64;
    let j = seamless_recovery(404, 110 + deadline)
        .judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!((j.verdict, j.recovery_ms), ("SEAMLESS", Some(deadline)));
    let j = seamless_recovery(404, 111 + deadline)
        .judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        format!("recovered only after {} ms, past the {deadline} ms a healthy client needs under this policy", deadline + 1)
    );
}

#[test]
fn a_failed_call_makes_it_recovered_which_passes_recover_but_not_seamless() {
    let mut run = seamless_recovery(404, 130);
    run.calls[1] = seen("c2", "echo", Some("Session not found"), 3);
    run.calls.push(seen("c3", "echo", None, 4));
    run.counts = counts(&[("c1", 1, 1), ("c2", 1, 0), ("c3", 1, 1)]);
    run.witness[9].call_id = Some("c3".into());
    let j = run.judge(ScenarioName::Expired404, Expectation::Recover);
    assert_eq!((j.verdict, j.ok, j.failed_calls), ("RECOVERED", true, 1));
    assert_eq!(
        (j.trigger_ms, j.trigger_error.as_deref()),
        (Some(3), Some("Session not found"))
    );
    assert_eq!(
        j.note,
        "one fresh initialize without the dead id, tools re-listed, calls succeeded; 1 call(s) failed before it recovered"
    );
    let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
    assert_eq!(
        j.note,
        "one fresh initialize without the dead id, tools re-listed, calls succeeded"
    );
}

#[test]
fn the_clock_starts_at_the_drop_and_a_failed_handshake_is_not_the_new_session() {
    let mut run = seamless_recovery(404, 130);
    // Before the drop: another control event, and a request that failed.
    run.witness.insert(3, control(30, "armed: next calls held"));
    run.witness
        .insert(4, entry(40, "POST", Some("ping"), Some("s1"), 404));
    // After the loss: a handshake the server failed, then the one that worked.
    run.witness
        .insert(9, entry(111, "POST", Some("initialize"), None, 503));
    let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!(
        (j.verdict, j.recovery_ms),
        ("SEAMLESS", Some(20)),
        "{}",
        j.note
    );
    assert_eq!(
        j.note,
        "one fresh initialize without the dead id, tools re-listed, calls succeeded"
    );
}

#[test]
fn more_handshakes_or_an_initialize_with_the_dead_id_are_named() {
    let mut run = seamless_recovery(404, 130);
    run.witness
        .insert(8, entry(111, "POST", Some("initialize"), Some("s1"), 400));
    run.witness.push(init(140, "s3"));
    let j = run.judge(ScenarioName::StrictReinit, Expectation::Seamless);
    assert_eq!(
        (j.verdict, j.ok, j.initialize_count),
        ("RECOVERED", false, 3)
    );
    assert_eq!(
        j.note,
        "fresh initialize without the dead id, tools re-listed, calls succeeded; 1 more initialize(s) after it; 1 initialize(s) carried a session id"
    );
}

#[test]
fn each_missing_step_of_recovery_is_stuck_with_its_reason() {
    let stuck = |run: &Run| {
        let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("STUCK", false), "{}", j.note);
        j.note
    };
    let mut run = seamless_recovery(404, 130);
    run.witness.remove(4);
    assert_eq!(
        stuck(&run),
        "the session was never invalidated under the client (no request carried a dropped id)"
    );
    let mut run = seamless_recovery(404, 130);
    run.witness[4].note = Some("pruned 1 idle session(s)".into());
    assert_eq!(
        run.judge(ScenarioName::IdleTimeout, Expectation::Seamless)
            .verdict,
        "SEAMLESS"
    );
    let mut run = seamless_recovery(404, 130);
    run.witness.truncate(7);
    run.witness.push(call(150, "s1", "c3", 404));
    assert_eq!(
        stuck(&run),
        "no new initialize after the session was lost; 2 request(s) kept the dead session id"
    );
    let mut run = seamless_recovery(404, 130);
    run.witness.remove(8);
    assert_eq!(
        stuck(&run),
        "a new session started but its tools were never listed again"
    );
    let mut run = seamless_recovery(404, 130);
    run.witness[9].call_ok = Some(false);
    assert_eq!(
        stuck(&run),
        "a new session started and listed tools, but no tool call succeeded on it"
    );
    let mut run = seamless_recovery(404, 130);
    run.witness
        .push(entry(150, "POST", Some("tools/call"), Some("s1"), 404));
    assert_eq!(
        stuck(&run),
        "1 request(s) still carried the dead session id after the new session was established"
    );
    // A request sent the moment the new session was established is not after it.
    let mut run = seamless_recovery(404, 130);
    run.witness
        .push(entry(113, "POST", Some("tools/call"), Some("s1"), 404));
    run.witness.sort_by_key(|e| e.t_ms);
    assert_eq!(
        run.judge(ScenarioName::Expired404, Expectation::Seamless)
            .verdict,
        "SEAMLESS"
    );
    // An answer to a request sent before the new session was established is fine.
    let mut run = seamless_recovery(404, 130);
    let mut late = call(111, "s1", "c1", 404);
    late.answered_ms = 200;
    run.witness.push(late);
    run.counts = counts(&[("c1", 2, 1), ("c2", 2, 1)]);
    assert_eq!(
        run.judge(ScenarioName::Expired404, Expectation::Seamless)
            .verdict,
        "SEAMLESS"
    );
}

#[test]
fn a_tool_run_twice_or_sent_again_after_it_may_have_run_is_repeated() {
    let repeated = |of: &[(&str, u32, u32)]| {
        let mut run = seamless_recovery(404, 130);
        run.counts = counts(of);
        let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("REPEATED", false), "{}", j.note);
        j.note
    };
    assert_eq!(
        repeated(&[("c1", 1, 1), ("c2", 2, 2)]),
        "call c2 ran 2 times: a tool call was sent again after it ran"
    );
    assert_eq!(
        repeated(&[("c1", 1, 1), ("c2", 3, 1)]),
        "call c2 was sent 3 times: more than the one repeat a lost session allows"
    );
    // Sent twice after an answer other than a lost session (the tool may have run).
    let mut run = seamless_recovery(500, 130);
    run.witness[6].executed = Some(true);
    let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!(j.verdict, "REPEATED");
    assert_eq!(
        j.note,
        "call c2 was sent again although its first send was not answered as a lost session: the tool may have run twice"
    );
    // So is a repeat after a 500 that came before the tool ran.
    let mut run = seamless_recovery(500, 130);
    run.witness[6].executed = Some(false);
    assert_eq!(
        run.judge(ScenarioName::Expired404, Expectation::Seamless)
            .verdict,
        "REPEATED"
    );
    // Each lost-session status allows the one repeat.
    for status in [400, 401, 404] {
        let j =
            seamless_recovery(status, 130).judge(ScenarioName::Expired401, Expectation::Seamless);
        assert_eq!(j.verdict, "SEAMLESS", "{status}: {}", j.note);
    }
}

#[test]
fn a_success_the_server_never_ran_is_broken() {
    let mut run = seamless_recovery(404, 130);
    run.counts = counts(&[("c1", 1, 1), ("c2", 2, 0)]);
    let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        "the caller got a success for call c2 that the server never ran"
    );
    run.counts = counts(&[("c1", 1, 1)]);
    assert_eq!(
        run.judge(ScenarioName::Expired404, Expectation::Seamless)
            .verdict,
        "BROKEN"
    );
}

// ---- hold ----

/// One session s1 kept throughout; the calls named, each on s1.
fn held(calls: &[(&str, &str, Option<&str>)]) -> Run {
    let mut witness = vec![init(0, "s1"), list(5, "s1")];
    for (i, (id, _, error)) in calls.iter().enumerate() {
        witness.push(call(
            10 + i as u64,
            "s1",
            id,
            if error.is_none() { 200 } else { 500 },
        ));
    }
    Run {
        witness,
        dropped: vec![],
        counts: counts(
            &calls
                .iter()
                .map(|(id, _, e)| (*id, 1, u32::from(e.is_none())))
                .collect::<Vec<_>>(),
        ),
        calls: calls
            .iter()
            .map(|(id, name, e)| seen(id, name, *e, 2))
            .collect(),
        seamless: true,
        per_call_recovery: false,
    }
}

#[test]
fn a_kept_session_is_held_and_a_second_handshake_is_recycled() {
    let run = held(&[("c1", "echo", None), ("c2", "echo", None)]);
    let j = run.judge(ScenarioName::RestartPersisted, Expectation::Hold);
    assert_eq!((j.verdict, j.ok), ("HELD", true));
    assert_eq!(
        j.note,
        "kept working on the same session, no new initialize"
    );

    let mut run = held(&[("c1", "echo", None), ("c2", "echo", None)]);
    run.witness.push(init(20, "s2"));
    let j = run.judge(ScenarioName::RestartPersisted, Expectation::Hold);
    assert_eq!((j.verdict, j.ok), ("RECYCLED", false));
    assert_eq!(
        j.note,
        "2 initialize handshakes: a healthy session was thrown away"
    );
}

#[test]
fn hold_is_broken_without_a_session_a_call_or_a_working_last_call() {
    let broken = |run: &Run| {
        let j = run.judge(ScenarioName::RestartPersisted, Expectation::Hold);
        assert_eq!((j.verdict, j.ok), ("BROKEN", false), "{}", j.note);
        j.note
    };
    let mut run = held(&[("c1", "echo", None)]);
    run.witness.remove(0);
    assert_eq!(broken(&run), "the client never started a session");
    let run = held(&[]);
    assert_eq!(broken(&run), "no call was made");
    let mut run = held(&[("c1", "echo", None), ("c2", "echo", None)]);
    run.witness.pop();
    assert_eq!(broken(&run), "tools did not work again on the kept session");
    let mut run = held(&[("c1", "echo", None), ("c2", "echo", None)]);
    run.witness[3].session_sent = Some("s9".into());
    assert_eq!(broken(&run), "tools did not work again on the kept session");
}

#[test]
fn sse_404_holds_only_when_the_get_404_came_after_the_tool_list() {
    let mut run = held(&[("c1", "echo", None)]);
    run.witness
        .insert(1, entry(2, "GET", None, Some("s1"), 404));
    // After the list: a GET stream that opened, which is no GET 404.
    run.witness.push(entry(20, "GET", None, Some("s1"), 200));
    let j = run.judge(ScenarioName::Sse404, Expectation::Hold);
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        "the client never met the GET 404 after it connected: nothing was tested"
    );
    run.witness.push(entry(30, "GET", None, Some("s1"), 404));
    let j = run.judge(ScenarioName::Sse404, Expectation::Hold);
    assert_eq!((j.verdict, j.ok), ("HELD", true));
    assert_eq!(
        j.note,
        "the GET 404 changed nothing: same session, no new initialize"
    );
}

#[test]
fn ordinary_errors_hold_only_when_each_reached_the_caller_with_the_servers_words() {
    let plan: Vec<(String, String, Option<&str>)> = ORDINARY_ERROR_WORDS
        .iter()
        .enumerate()
        .map(|(i, (kind, words))| (format!("e{i}"), format!("fail:{kind}"), Some(*words)))
        .chain([("ok".to_string(), "echo".to_string(), None)])
        .collect();
    let as_refs = |p: &[(String, String, Option<&'static str>)]| {
        held(
            &p.iter()
                .map(|(id, n, e)| (id.as_str(), n.as_str(), *e))
                .collect::<Vec<_>>(),
        )
    };
    let j = as_refs(&plan).judge(ScenarioName::OrdinaryErrors, Expectation::Hold);
    assert_eq!((j.verdict, j.ok), ("HELD", true), "{}", j.note);
    assert_eq!(
        j.note,
        "each error reached the caller once; 5 calls on one session, no new initialize"
    );
    for (i, (kind, words)) in ORDINARY_ERROR_WORDS.iter().enumerate() {
        let mut other = plan.clone();
        other[i].2 = Some("Error: something else");
        let j = as_refs(&other).judge(ScenarioName::OrdinaryErrors, Expectation::Hold);
        assert_eq!(j.verdict, "BROKEN", "{kind}");
        assert_eq!(
            j.note,
            format!(
                "the {kind} error did not reach the caller with the server's words ({words:?})"
            )
        );
    }
}

// ---- bounded ----

/// The forgetful server: every session lost right after its tool list
/// (a call answered 404 at handshake + 2 ms); the client's handshakes
/// start at `inits` (ms).
fn forgetful(inits: &[u64], call_ms: u64) -> Run {
    let mut witness = Vec::new();
    for (i, &t) in inits.iter().enumerate() {
        let s = format!("s{i}");
        witness.push(init(t, &s));
        witness.push(list(t + 1, &s));
        let mut lost = call(t + 2, &s, &format!("c{i}"), 404);
        lost.answered_ms = t + 2;
        witness.push(lost);
    }
    Run {
        witness,
        dropped: vec![],
        counts: HashMap::new(),
        calls: (0..FORGETFUL_CALLS)
            .map(|i| seen(&format!("k{i}"), "echo", Some("Session not found"), call_ms))
            .collect(),
        seamless: true,
        per_call_recovery: false,
    }
}

#[test]
fn forgetful_is_bounded_when_later_reconnects_wait_their_backoff() {
    // Attempt 2 (third handshake) must wait backoff(2) = 200 ms, less 10 ms tolerance.
    let limit = (Policy::Short.call_timeout() + TIMEOUT_SLACK).as_millis() as u64;
    let run = forgetful(&[0, 100, 102 + 190, 1000], limit);
    let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!((j.verdict, j.ok), ("BOUNDED", true), "{}", j.note);
    assert_eq!(
        j.note,
        format!("4 handshakes (bound 6): 3 reconnects, each after the first with the policy's backoff, every call ended within its timeout (slowest {limit} ms), none sent more than twice")
    );
    // One handshake: nothing reconnected, so no backoff is claimed.
    let j = forgetful(&[0], 5).judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!((j.verdict, j.ok), ("BOUNDED", true), "{}", j.note);
    assert_eq!(
        j.note,
        "1 handshake (bound 6): no reconnect, every call ended within its timeout (slowest 5 ms), none sent more than twice"
    );
    let j = forgetful(&[0, 100], 5).judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!(
        j.note,
        "2 handshakes (bound 6): 1 reconnect, every call ended within its timeout (slowest 5 ms), none sent more than twice"
    );
    let run = forgetful(&[0, 100, 102 + 189, 1000], 5);
    let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
    assert_eq!(
        j.note,
        "reconnect attempt 2 started 189 ms after the loss; the policy's backoff is 200 ms"
    );
}

#[test]
fn forgetful_is_unbounded_past_the_handshakes_the_calls_or_the_timeout_allow() {
    let bound = 1 + Policy::Short.max_attempts() as u64;
    let at_bound: Vec<u64> = (0..bound).map(|i| i * 2000).collect();
    let j = forgetful(&at_bound, 5).judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!(j.verdict, "BOUNDED", "{}", j.note);
    let past: Vec<u64> = (0..=bound).map(|i| i * 2000).collect();
    let j = forgetful(&past, 5).judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
    assert_eq!(
        j.note,
        "7 initialize handshakes, more than the 6 the policy allows (1 + 5 attempts)"
    );

    let limit = (Policy::Short.call_timeout() + TIMEOUT_SLACK).as_millis() as u64;
    let j = forgetful(&[0, 3000], limit + 1).judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!(j.verdict, "UNBOUNDED");
    assert_eq!(
        j.note,
        format!("call k0 took {} ms, past its 3000 ms timeout", limit + 1)
    );

    let mut run = forgetful(&[0, 3000], 5);
    run.calls.pop();
    let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!(j.verdict, "UNBOUNDED");
    assert_eq!(
        j.note,
        format!(
            "only {} of {FORGETFUL_CALLS} calls ended",
            FORGETFUL_CALLS - 1
        )
    );
}

#[test]
fn forgetful_allows_a_per_call_client_one_new_session_per_call_and_no_more() {
    // Every one of the 8 calls meets a loss and starts a new session at once: 9 in all.
    let at_once: Vec<u64> = (0..=FORGETFUL_CALLS as u64).map(|i| i * 10).collect();
    let mut run = forgetful(&at_once, 5);
    run.per_call_recovery = true;
    let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!((j.verdict, j.ok), ("BOUNDED", true), "{}", j.note);
    assert_eq!(
        j.note,
        "9 handshakes for 8 calls (bound 9: at most one new session per call), every call ended within its timeout (slowest 5 ms), none sent more than twice"
    );
    // The same run from a client with a reconnect policy waits no backoff: unbounded.
    run.per_call_recovery = false;
    let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!(j.verdict, "UNBOUNDED", "{}", j.note);
    // One more new session than calls: unbounded.
    let past: Vec<u64> = (0..=FORGETFUL_CALLS as u64 + 1).map(|i| i * 10).collect();
    let mut run = forgetful(&past, 5);
    run.per_call_recovery = true;
    let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
    assert_eq!(
        j.note,
        "10 initialize handshakes for 8 calls, more than one new session per call (bound 9)"
    );
}

// ---- not retried ----

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
    assert_eq!(
        (j.verdict, j.ok, j.trigger_ms),
        ("TIMELY", true, Some(1100)),
        "{}",
        j.note
    );
    assert_eq!(j.note, "call c2 ended after 1100 ms, within its abort signal (400 ms), sent 1 time(s); calls worked again on a new session");
    let j = waited(1101, 1).judge(ScenarioName::AbortWaiting, Expectation::Timely);
    assert_eq!((j.verdict, j.ok), ("LATE", false));
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
    assert_eq!((j.verdict, j.ok), ("REPEATED", false));
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

#[test]
fn every_name_has_exactly_one_scenario() {
    use clap::ValueEnum;
    for name in ScenarioName::value_variants() {
        assert_eq!(
            all().iter().filter(|s| s.name == *name).count(),
            1,
            "{name}"
        );
        assert_eq!(name.to_possible_value().unwrap().get_name(), name.as_str());
        assert_eq!(name.to_string(), name.as_str());
    }
    assert_eq!(all().len(), ScenarioName::value_variants().len());
}

#[test]
fn every_plan_is_one_the_harness_runs() {
    let harness = include_str!("../drivers/plugin/harness.mjs");
    for s in all() {
        assert!(
            harness.contains(&format!("case \"{}\":", s.plan.as_str())),
            "harness.mjs has no plan {:?} for {}",
            s.plan.as_str(),
            s.name
        );
    }
}

#[test]
fn recovery_scenarios_expect_seamless_of_the_current_revision_only() {
    for s in all() {
        let (current, earlier) = (s.expectation(true), s.expectation(false));
        match s.expect {
            Expectation::Recover => {
                assert_eq!(
                    (current, earlier),
                    (Expectation::Seamless, Expectation::Recover),
                    "{}",
                    s.name
                )
            }
            e => assert_eq!((current, earlier), (e, e), "{}", s.name),
        }
    }
    assert_eq!(find(ScenarioName::Expired404).expect, Expectation::Recover);
    assert_eq!(find(ScenarioName::CutMidCall).expect, Expectation::NoRetry);
}
