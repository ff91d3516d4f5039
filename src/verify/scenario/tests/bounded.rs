//! Unit tests of the judges: the `forgetful` server: BOUNDED or UNBOUNDED reconnecting.

use super::*;

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

#[test]
fn a_per_call_client_that_never_tries_a_new_session_is_bounded_and_said_so() {
    // An unpatched SDK client: every call fails on the one session, no new initialize.
    let mut run = forgetful(&[0], 5);
    run.per_call_recovery = true;
    let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert_eq!((j.verdict, j.ok), ("BOUNDED", true), "{}", j.note);
    assert_eq!(
        j.note,
        "1 handshake for 8 calls, no new session tried (bound 9: at most one new session per call), every call ended within its timeout (slowest 5 ms), none sent more than twice"
    );
    // One new session: tried.
    let mut run = forgetful(&[0, 10], 5);
    run.per_call_recovery = true;
    let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
    assert!(
        j.note.starts_with("2 handshakes for 8 calls (bound 9:"),
        "{}",
        j.note
    );
}

// ---- not retried ----
