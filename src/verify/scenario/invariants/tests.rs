//! The unit tests of the rules every run must keep (invariants.rs), each
//! rule held on small witness logs made by hand.

use super::*;
// The caller's view and the server's counts, as the judges' tests write them.
use crate::verify::scenario::tests::{counts, seen};

fn entry(
    seq: u64,
    t: u64,
    method: &str,
    rpc: &str,
    sent: Option<&str>,
    status: u16,
) -> WitnessEntry {
    WitnessEntry {
        seq,
        t_ms: t,
        answered_ms: t + 1,
        http_method: method.into(),
        rpc_method: (!rpc.is_empty()).then(|| rpc.to_string()),
        session_sent: sent.map(str::to_string),
        status,
        ..Default::default()
    }
}

/// One run's evidence and what was expected of it, owned, with what most
/// tests share: a seamless, per-call client under `Policy::Short` whose lost
/// session is answered "Session not found", no deadlines, words or logs.
#[derive(Clone)]
struct Case {
    witness: Vec<WitnessEntry>,
    dropped: Vec<String>,
    counts: HashMap<String, CallCount>,
    calls: Vec<HarnessCall>,
    per_call_recovery: bool,
    deadlines: HashMap<String, u64>,
    words: HashMap<String, &'static str>,
    reconnect: Reconnect,
    last_call: &'static str,
    logs: Vec<String>,
    loss_log: Option<&'static str>,
}

impl Case {
    fn new(witness: Vec<WitnessEntry>) -> Case {
        Case {
            witness,
            dropped: Vec::new(),
            counts: HashMap::new(),
            calls: Vec::new(),
            per_call_recovery: false,
            deadlines: HashMap::new(),
            words: HashMap::new(),
            reconnect: Reconnect::PerCall,
            last_call: "none",
            logs: Vec::new(),
            loss_log: None,
        }
    }

    fn ev(&self) -> Evidence<'_> {
        Evidence {
            witness: &self.witness,
            dropped: &self.dropped,
            counts: &self.counts,
            calls: &self.calls,
            policy: crate::verify::scenario::Policy::Short,
            seamless: true,
            per_call_recovery: self.per_call_recovery,
        }
    }

    fn x(&self) -> Expected<'_> {
        Expected {
            deadlines: &self.deadlines,
            words: &self.words,
            lost_words: "Session not found",
            reconnect: self.reconnect,
            last_call: self.last_call,
            logs: &self.logs,
            loss_log: self.loss_log,
        }
    }
}

/// A map of call labels to `value`s.
fn by_label<T: Copy>(of: &[(&str, T)]) -> HashMap<String, T> {
    of.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

#[test]
fn a_session_used_before_its_initialized_notification_breaks_the_handshake_rule() {
    let mut init = entry(0, 0, "POST", "initialize", None, 200);
    init.session_issued = Some("a".into());
    let call = entry(2, 20, "POST", "tools/call", Some("a"), 200);
    let mut w = vec![init.clone(), call.clone()];
    assert_eq!(
        used_before_initialized(&w).as_deref(),
        Some("tools/call (request 2) used session a before the client sent its notifications/initialized: the handshake of that session was never finished")
    );
    w.insert(
        1,
        entry(1, 10, "POST", "notifications/initialized", Some("a"), 202),
    );
    assert_eq!(used_before_initialized(&w), None);
    // A refused call, or a session whose initialize the witness no longer holds, is not judged.
    let refused = entry(2, 20, "POST", "tools/call", Some("a"), 404);
    assert_eq!(used_before_initialized(&[init.clone(), refused]), None);
    let refused = entry(2, 20, "POST", "tools/call", Some("a"), 400);
    assert_eq!(used_before_initialized(&[init, refused]), None);
    assert_eq!(used_before_initialized(&[call]), None);
}

#[test]
fn a_request_on_a_lost_session_after_its_answer_breaks_the_rule_but_one_delete_does_not() {
    let mut init = entry(2, 200, "POST", "initialize", None, 200);
    init.session_issued = Some("b".into());
    let mut w = vec![
        entry(0, 0, "POST", "tools/call", Some("a"), 404),
        entry(1, 100, "POST", "tools/call", Some("a"), 404),
        init,
        entry(3, 300, "POST", "tools/list", Some("b"), 200),
        entry(4, 350, "POST", "tools/call", Some("a"), 404),
        // 100 ms after the client first used its new session: still in flight.
        entry(8, 400, "POST", "tools/call", Some("a"), 404),
        entry(5, 600, "DELETE", "", Some("a"), 404),
        entry(6, 700, "POST", "notifications/cancelled", Some("a"), 404),
    ];
    // In flight (sent before the client used its new session), the DELETE, a notification.
    assert_eq!(sent_after_loss(&w), None);
    w.push(entry(7, 700, "POST", "tools/list", Some("a"), 404));
    let v = sent_after_loss(&w).expect("a violation");
    assert_eq!(
        v.note,
        "invariant nothing-on-lost-session: POST tools/list was sent on session a 699 ms after the server answered that session as lost, after the client had used a new session"
    );
}

#[test]
fn an_outage_refused_past_the_policy_excuses_giving_up_and_a_healthy_session_resets_it() {
    let init = |t, status| entry(0, t, "POST", "initialize", None, status);
    // Two refusals in one outage with 2 attempts: giving up was right.
    let w = vec![init(0, 200), init(100, 503), init(300, 503)];
    assert!(gave_up_rightly(&w, &[], 2, 1000));
    // One refusal per outage, each after 2 s healthy: never past the policy.
    let w = vec![
        init(0, 200),
        init(2000, 503),
        init(2200, 200),
        init(5000, 503),
        init(5200, 200),
    ];
    assert!(!gave_up_rightly(&w, &[], 2, 1000));
}

#[test]
fn a_per_call_client_may_fail_a_call_only_on_a_refused_new_session_with_its_words() {
    let mut lost = entry(1, 10, "POST", "tools/call", Some("a"), 404);
    lost.call_id = Some("c1".into());
    let case = Case {
        dropped: vec!["a".into()],
        counts: counts(&[("c1", 1, 0)]),
        deadlines: by_label(&[("c1", 3000)]),
        per_call_recovery: true,
        last_call: "c1",
        ..Case::new(vec![
            entry(0, 0, "POST", "initialize", None, 200),
            lost,
            entry(2, 20, "POST", "initialize", None, 503),
        ])
    };
    let judge = |error: &str, reconnect: Reconnect| {
        let case = Case {
            calls: vec![seen("c1", "c1", Some(error), 30)],
            reconnect,
            ..case.clone()
        };
        repeat_after_loss(&case.ev(), &case.x())
            .or_else(|| words_carried(&case.ev(), &case.x()))
            .map(|v| v.invariant)
    };
    let refused = format!("Error POSTing to endpoint: Service Unavailable: {REFUSED_WORDS}");
    assert_eq!(judge(&refused, Reconnect::PerCall), None);
    // Without the refusal's words it was never sent again: stuck.
    assert_eq!(
        judge("Session not found", Reconnect::PerCall),
        Some("repeat-after-loss")
    );
    // A client with a policy tries again after a refusal: no excuse there.
    let policy = Reconnect::Policy {
        max_attempts: 5,
        max_delay_ms: 1000,
    };
    assert_eq!(judge(&refused, policy), Some("repeat-after-loss"));
}

#[test]
fn a_call_failed_without_reaching_the_server_needs_an_earlier_call_answered_as_lost() {
    let mut lost = entry(1, 10, "POST", "tools/call", Some("a"), 404);
    lost.call_id = Some("c2".into());
    let case = Case {
        dropped: vec!["a".into()],
        // c0 counted but never sent: it did not reach the server either.
        counts: counts(&[("c1", 1, 1), ("c2", 1, 0), ("c0", 0, 0)]),
        ..Case::new(vec![entry(0, 0, "POST", "initialize", None, 200), lost])
    };
    let call =
        |id: &str, ok: bool| seen(id, id, (!ok).then_some("lost and reconnect is disabled"), 1);
    let judge = |calls: Vec<HarnessCall>| {
        no_invented_loss(
            &Case {
                calls,
                ..case.clone()
            }
            .ev(),
            &case.deadlines,
        )
    };
    // c3 failed on its own after c2 met a lost session: the client knew.
    assert_eq!(
        judge(vec![
            call("c1", false),
            call("c2", false),
            call("c3", false)
        ]),
        None
    );
    // c0 failed on its own before any call met a loss: invented.
    let v = judge(vec![call("c0", false), call("c1", true)]).expect("a violation");
    assert_eq!(
        v.note,
        "invariant no-invented-loss: call c0 (c0) failed after 1 ms without reaching the server, though no earlier call met a lost session: lost and reconnect is disabled"
    );
}

#[test]
fn a_call_its_own_signal_ended_before_it_reached_the_server_invented_no_loss() {
    // A loaded machine: the caller's 100 ms abort fired before the request
    // left the client, and no call had met a lost session yet.
    let case = Case {
        counts: counts(&[("c1", 0, 0)]),
        deadlines: HashMap::from([("2:echo".to_string(), 100)]),
        ..Case::new(vec![entry(0, 0, "POST", "initialize", None, 200)])
    };
    let judge = |ms: u64| {
        no_invented_loss(
            &Case {
                calls: vec![seen("c1", "2:echo", Some("Request was aborted"), ms)],
                ..case.clone()
            }
            .ev(),
            &case.deadlines,
        )
        .map(|v| v.note)
    };
    assert_eq!(judge(100), None);
    assert_eq!(judge(90), None);
    // Failed well before its own signal: the client gave up on its own.
    assert_eq!(
        judge(60),
        Some("invariant no-invented-loss: call c1 (2:echo) failed after 60 ms without reaching the server, though no earlier call met a lost session: Request was aborted".into())
    );
}

#[test]
fn more_sessions_than_losses_break_the_rule() {
    let mut w = vec![
        entry(0, 0, "POST", "initialize", None, 200),
        entry(1, 10, "POST", "tools/call", Some("a"), 404),
        entry(2, 20, "POST", "initialize", None, 200),
        // A refused new session and other answered requests open nothing.
        entry(3, 21, "POST", "initialize", None, 503),
        entry(4, 22, "POST", "tools/list", Some("b"), 200),
    ];
    let dropped = vec!["a".to_string()];
    assert_eq!(one_initialize_per_loss(&w, &dropped), None);
    w.push(entry(5, 30, "POST", "initialize", None, 200));
    assert_eq!(
        one_initialize_per_loss(&w, &dropped).map(|v| v.note),
        Some("invariant one-initialize-per-loss: 3 sessions were opened for 1 lost session(s): more than one new session per loss".into())
    );
}

#[test]
fn the_log_may_say_a_session_was_lost_only_as_often_as_one_was() {
    let mut init = entry(0, 0, "POST", "initialize", None, 200);
    init.session_issued = Some("a".into());
    let mut control = entry(3, 30, "CONTROL", "", Some("c"), 0);
    control.note = Some("dropped".into());
    let witness = vec![
        init,
        // Answered as lost: the one loss.
        entry(1, 10, "POST", "tools/call", Some("a"), 404),
        // An ordinary error on a live session, and the server's own note
        // about another session: neither is a loss.
        entry(2, 20, "POST", "tools/call", Some("b"), 400),
        control,
    ];
    let dropped = vec!["a".to_string(), "c".to_string()];
    let words = "session lost, reconnecting";
    let logs = |n: usize| vec![format!("[mcp] {words}"); n];
    assert_eq!(
        logs_tell_the_truth(&witness, &dropped, &logs(1), words),
        None
    );
    assert_eq!(
        logs_tell_the_truth(&witness, &dropped, &logs(2), words).map(|v| v.note),
        Some("invariant logs-tell-the-truth: the log said 2 time(s) that a lost session is being replaced, for 1 lost session(s)".into())
    );
    // Among every rule, for a client that names such a line: its last
    // call works on the new session.
    let mut witness = witness;
    let mut renewed = entry(4, 40, "POST", "initialize", None, 200);
    renewed.session_issued = Some("d".into());
    let mut last = entry(6, 60, "POST", "tools/call", Some("d"), 200);
    (last.call_id, last.executed) = (Some("c1".into()), Some(true));
    witness.extend([
        renewed,
        entry(5, 50, "POST", "notifications/initialized", Some("d"), 202),
        last,
    ]);
    let case = Case {
        dropped,
        counts: counts(&[("c1", 1, 1)]),
        calls: vec![seen("c1", "c1", None, 5)],
        per_call_recovery: true,
        last_call: "c1",
        logs: logs(2),
        loss_log: Some(words),
        ..Case::new(witness)
    };
    assert_eq!(
        check_all(&case.ev(), &case.x()).map(|v| v.invariant),
        Some("logs-tell-the-truth")
    );
    // A client that writes no such line is not judged on its log.
    let case = Case {
        loss_log: None,
        ..case
    };
    assert_eq!(check_all(&case.ev(), &case.x()), None);
}
#[test]
fn a_call_still_waiting_at_the_end_is_a_hang_and_an_initialize_with_a_lost_id_is_broken() {
    let witness = vec![entry(0, 0, "POST", "initialize", None, 200)];
    let call = |error: &str| seen("c1", "1:echo", Some(error), 9000);
    let judge = |calls: Vec<HarnessCall>, witness: &[WitnessEntry]| {
        let case = Case {
            dropped: vec!["a".into()],
            calls,
            ..Case::new(witness.to_vec())
        };
        check_common(&case.ev()).map(|v| (v.verdict, v.note))
    };
    assert_eq!(
        judge(vec![call(NEVER_SETTLED)], &witness),
        Some((
            "HANG",
            "invariant call-ends: call c1 (1:echo) never settled: its caller was still waiting after 9000 ms".into()
        ))
    );
    assert_eq!(judge(vec![call("MCP error -32603: boom")], &witness), None);
    let with_old_id = vec![entry(4, 40, "POST", "initialize", Some("a"), 200)];
    assert_eq!(
        judge(vec![], &with_old_id),
        Some((
            "BROKEN",
            "invariant fresh-initialize: an initialize (request 4) carried the lost session id a"
                .into()
        ))
    );
}

#[test]
fn only_a_refused_request_makes_a_session_lost() {
    let ran = |seq, t| {
        let mut e = entry(seq, t, "POST", "tools/call", Some("a"), 200);
        e.executed = Some(true);
        e
    };
    // A healthy session used 3 s apart, and one whose id an initialize
    // carried (refused: a rule of its own, fresh-initialize) and a call
    // then served: no session was answered as lost.
    assert_eq!(sent_after_loss(&[ran(0, 0), ran(1, 3000)]), None);
    let old_id_init = entry(0, 0, "POST", "initialize", Some("a"), 404);
    assert_eq!(sent_after_loss(&[old_id_init, ran(1, 3000)]), None);
    // A call refused on it is a loss (answered at 1 ms): a call more than
    // 2 s later is late, one 2 s later is not yet.
    let refused = entry(0, 0, "POST", "tools/call", Some("a"), 404);
    assert_eq!(
        sent_after_loss(&[refused.clone(), ran(1, 2002)]).map(|v| v.note),
        Some("invariant nothing-on-lost-session: POST tools/call was sent on session a 2001 ms after the server answered that session as lost".into())
    );
    assert_eq!(sent_after_loss(&[refused, ran(1, 2001)]), None);
}

#[test]
fn a_call_may_end_up_to_the_slack_past_its_deadline_and_no_later() {
    let case = Case {
        deadlines: by_label(&[("1:slow", 3000)]),
        last_call: "1:slow",
        ..Case::new(Vec::new())
    };
    let ended = |ms| {
        let c = [seen("c1", "1:slow", Some("timed out"), ms)];
        calls_in_time(&c, &case.x()).map(|v| (v.verdict, v.note))
    };
    assert_eq!(ended(3700), None);
    assert_eq!(
        ended(3701),
        Some((
            "LATE",
            "invariant call-ends: call c1 (1:slow) ended after 3701 ms, past its 3000 ms deadline"
                .into()
        ))
    );
}

#[test]
fn a_failed_call_carries_the_servers_words_unless_its_own_deadline_ended_it() {
    let mut ran = entry(1, 10, "POST", "tools/call", Some("a"), 200);
    (ran.call_id, ran.executed) = (Some("c1".into()), Some(true));
    let mut lost = entry(2, 20, "POST", "tools/call", Some("a"), 404);
    lost.call_id = Some("c2".into());
    let case = Case {
        dropped: vec!["a".into()],
        deadlines: by_label(&[("1:fail", 3000), ("2:lost", 3000)]),
        words: by_label(&[("1:fail", "boom")]),
        per_call_recovery: true,
        last_call: "3:last",
        ..Case::new(vec![
            entry(0, 0, "POST", "initialize", None, 200),
            ran,
            lost,
        ])
    };
    let judge = |id: &str, name: &str, ok: bool, error: &str, ms: u64| {
        let mut call = seen(id, name, (!error.is_empty()).then_some(error), ms);
        call.ok = ok;
        let case = Case {
            calls: vec![call],
            ..case.clone()
        };
        words_carried(&case.ev(), &case.x()).map(|v| v.note)
    };
    // The tool ran and failed: its words reach the caller, however late.
    assert_eq!(
        judge("c1", "1:fail", false, "MCP error -32603: boom", 10),
        None
    );
    let without = Some("invariant server-words: call c1 (1:fail) failed with \"MCP error -32603: Internal error\", without the server's words \"boom\"".to_string());
    assert_eq!(
        judge(
            "c1",
            "1:fail",
            false,
            "MCP error -32603: Internal error",
            10
        ),
        without
    );
    assert_eq!(
        judge(
            "c1",
            "1:fail",
            false,
            "MCP error -32603: Internal error",
            5000
        ),
        without
    );
    // A call that worked is not judged.
    assert_eq!(judge("c1", "1:fail", true, "", 10), None);
    // It met a lost session: the loss answer's words, unless its own
    // deadline ended it first (700 ms of slack).
    assert_eq!(judge("c2", "2:lost", false, "Session not found", 10), None);
    assert_eq!(
        judge("c2", "2:lost", false, "fetch failed", 10),
        Some("invariant server-words: call c2 (2:lost) met a lost session and failed with \"fetch failed\", without the server's words \"Session not found\"".into())
    );
    assert_eq!(judge("c2", "2:lost", false, "fetch failed", 2300), None);
    // It never reached the server: nothing to carry.
    assert_eq!(
        judge("c3", "3:last", false, "connect ECONNREFUSED", 10),
        None
    );
}

#[test]
fn with_reconnect_disabled_a_call_that_met_a_loss_fails_within_a_second() {
    let mut lost = entry(1, 10, "POST", "tools/call", Some("a"), 404);
    lost.call_id = Some("c1".into());
    let case = Case {
        dropped: vec!["a".into()],
        reconnect: Reconnect::Disabled,
        last_call: "2:last",
        ..Case::new(vec![entry(0, 0, "POST", "initialize", None, 200), lost])
    };
    let judge = |calls: Vec<HarnessCall>| {
        let case = Case {
            calls,
            ..case.clone()
        };
        reconnect_kept(&case.ev(), &case.x()).map(|v| v.note)
    };
    let call = |id: &str, ok: bool, ms: u64| {
        seen(
            id,
            &format!("{id}:echo"),
            (!ok).then_some("Session not found"),
            ms,
        )
    };
    // Another call, which met no loss, may work.
    assert_eq!(
        judge(vec![call("c1", false, 1000), call("c2", true, 5)]),
        None
    );
    assert_eq!(
        judge(vec![call("c1", false, 1001)]),
        Some("invariant fail-at-once: with reconnect disabled, call c1 (c1:echo) met a lost session and failed after 1001 ms; it must fail within 1000 ms".into())
    );
    assert_eq!(
        judge(vec![call("c1", true, 10)]),
        Some("invariant fail-at-once: with reconnect disabled, call c1 (c1:echo) met a lost session and succeeded after 10 ms; it must fail within 1000 ms".into())
    );
}

#[test]
fn the_last_call_must_work_unless_the_policy_let_the_client_give_up() {
    let init = |seq, t, status| entry(seq, t, "POST", "initialize", None, status);
    // Two refused new sessions in one outage.
    let case = Case {
        last_call: "9:last",
        ..Case::new(vec![init(0, 0, 200), init(1, 100, 503), init(2, 300, 503)])
    };
    let judge = |reconnect: Reconnect, calls: &[HarnessCall]| {
        let case = Case {
            reconnect,
            calls: calls.to_vec(),
            ..case.clone()
        };
        reconnect_kept(&case.ev(), &case.x()).map(|v| (v.verdict, v.note))
    };
    let call =
        |id: &str, name: &str, ok: bool| seen(id, name, (!ok).then_some("Service Unavailable"), 10);
    let failed_last = [call("c1", "1:echo", true), call("c9", "9:last", false)];
    let two_attempts = Reconnect::Policy {
        max_attempts: 2,
        max_delay_ms: 1000,
    };
    assert_eq!(judge(two_attempts, &failed_last), None);
    let stuck = Some((
        "STUCK",
        "invariant recovers: the last call (c9), made once the client had its time to recover, failed: Service Unavailable".to_string(),
    ));
    let five_attempts = Reconnect::Policy {
        max_attempts: 5,
        max_delay_ms: 1000,
    };
    assert_eq!(judge(five_attempts, &failed_last), stuck);
    assert_eq!(judge(Reconnect::PerCall, &failed_last), stuck);
    assert_eq!(
        judge(
            Reconnect::PerCall,
            &[call("c9", "9:last", true), call("c1", "1:echo", false)]
        ),
        None
    );
    assert_eq!(
        judge(Reconnect::PerCall, &[call("c1", "1:echo", true)]),
        Some((
            "STUCK",
            "invariant recovers: the last call was never made".into()
        ))
    );
}

#[test]
fn a_failed_last_call_is_excused_by_its_own_deadline_or_a_per_call_clients_refused_session() {
    let case = Case {
        deadlines: by_label(&[("9:last", 3000)]),
        last_call: "9:last",
        ..Case::new(vec![entry(0, 0, "POST", "initialize", None, 200)])
    };
    let judge = |reconnect: Reconnect, error: &str, ms: u64| {
        let case = Case {
            calls: vec![seen("c9", "9:last", Some(error), ms)],
            reconnect,
            ..case.clone()
        };
        last_call_works(&case.ev(), &case.x()).map(|v| v.invariant)
    };
    let policy = Reconnect::Policy {
        max_attempts: 5,
        max_delay_ms: 1000,
    };
    // Ended within 700 ms of its 3000 ms deadline: by the deadline.
    assert_eq!(judge(policy, "timed out", 2300), None);
    assert_eq!(judge(policy, "timed out", 2299), Some("recovers"));
    let refused = format!("Service Unavailable: {REFUSED_WORDS}");
    assert_eq!(judge(Reconnect::PerCall, &refused, 10), None);
    assert_eq!(judge(policy, &refused, 10), Some("recovers"));
}

#[test]
fn a_call_that_met_a_loss_and_failed_unsent_is_stuck_unless_its_deadline_or_the_policy_ended_it() {
    let mut lost = entry(1, 10, "POST", "tools/call", Some("a"), 404);
    lost.call_id = Some("c1".into());
    let mut ordinary = entry(2, 20, "POST", "tools/call", Some("b"), 500);
    ordinary.call_id = Some("c2".into());
    let case = Case {
        dropped: vec!["a".into()],
        counts: counts(&[("c1", 1, 0), ("c2", 1, 0)]),
        deadlines: by_label(&[("c1:echo", 3000)]),
        ..Case::new(vec![
            entry(0, 0, "POST", "initialize", None, 200),
            lost,
            ordinary,
        ])
    };
    let judge = |reconnect: Reconnect, id: &str, ms: u64| {
        let case = Case {
            calls: vec![seen(
                id,
                &format!("{id}:echo"),
                Some("Session not found"),
                ms,
            )],
            reconnect,
            ..case.clone()
        };
        repeat_after_loss(&case.ev(), &case.x()).map(|v| v.note)
    };
    assert_eq!(
        judge(Reconnect::PerCall, "c1", 2299),
        Some("invariant repeat-after-loss: call c1 (c1:echo) met a lost session and failed after 2299 ms without being sent again: Session not found".into())
    );
    // Within 700 ms of its deadline, its deadline ended it.
    assert_eq!(judge(Reconnect::PerCall, "c1", 2300), None);
    // With reconnect disabled it must fail.
    assert_eq!(judge(Reconnect::Disabled, "c1", 10), None);
    // An ordinary error met no loss.
    assert_eq!(judge(Reconnect::PerCall, "c2", 10), None);
}

#[test]
fn a_new_session_that_failed_again_before_it_stayed_healthy_long_enough_is_the_same_outage() {
    let init = |t, status| entry(0, t, "POST", "initialize", None, status);
    // A refusal, a new session at 200 ms (the 2nd attempt), and another refusal
    // 1 s later: within 1000 + 300 ms of health, still the same outage.
    let w = vec![
        init(0, 200),
        init(100, 503),
        init(200, 200),
        init(1200, 503),
    ];
    assert!(gave_up_rightly(&w, &[], 2, 1000));
    // 1.4 s later: a new outage, its first attempt.
    let w = vec![
        init(0, 200),
        init(100, 503),
        init(200, 200),
        init(1600, 503),
    ];
    assert!(!gave_up_rightly(&w, &[], 2, 1000));
}

#[test]
fn the_last_allowed_attempt_that_worked_but_was_lost_again_soon_used_up_the_policy() {
    let init = |t, status| entry(0, t, "POST", "initialize", None, status);
    let dropped = vec!["a".to_string()];
    // The 2nd attempt works (answered at 201 ms); its session is lost at `at`.
    let lost_at = |at| {
        let w = vec![
            init(0, 200),
            init(100, 503),
            init(200, 200),
            entry(9, at, "POST", "tools/call", Some("a"), 404),
        ];
        gave_up_rightly(&w, &dropped, 2, 1000)
    };
    // Within 1000 + 300 ms of its answer: lost again soon.
    assert!(lost_at(201));
    assert!(lost_at(1500));
    // Before it was answered, or once it had stayed healthy: not.
    assert!(!lost_at(100));
    assert!(!lost_at(1501));
}
