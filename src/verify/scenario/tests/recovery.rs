//! Unit tests of the judges: recovery (SEAMLESS, RECOVERED, STUCK) and the rules every recovery keeps (no call repeated, no success the server never ran).

use super::*;

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
    // Late only: a driver that ran it beside others runs it again alone.
    assert_eq!((j.verdict, j.ok, j.late_only), ("STUCK", false, true));
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
        "one fresh initialize without the dead id, tools re-listed, calls succeeded; 1 call(s) failed, the first c2 (echo): Session not found"
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

/// `seamless_recovery`, each initialize with these params (s1's, then s2's).
fn recovery_initialized_with(
    first: &crate::verify::fake_server::InitializeParams,
    again: &crate::verify::fake_server::InitializeParams,
) -> Run {
    let mut run = seamless_recovery(404, 130);
    run.witness[0].initialize = Some(first.clone());
    run.witness[7].initialize = Some(again.clone());
    run
}

#[test]
fn a_new_initialize_with_other_params_than_the_first_is_broken() {
    use crate::verify::fake_server::InitializeParams;
    let app = InitializeParams::of(&serde_json::json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {"listChanged": true}, "elicitation": {}},
        "clientInfo": {"name": "my-agent", "version": "1.2.0"},
    }));
    // The same params, keys in another order: one client, judged seamless.
    let same = InitializeParams::of(&serde_json::json!({
        "clientInfo": {"version": "1.2.0", "name": "my-agent"},
        "capabilities": {"elicitation": {}, "roots": {"listChanged": true}},
        "protocolVersion": "2025-06-18",
    }));
    let j = recovery_initialized_with(&app, &same)
        .judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
    let changed = |field: &str, value: serde_json::Value| {
        let mut params = serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": true}, "elicitation": {}},
            "clientInfo": {"name": "my-agent", "version": "1.2.0"},
        });
        params[field] = value;
        let j = recovery_initialized_with(&app, &InitializeParams::of(&params))
            .judge(ScenarioName::Expired404, Expectation::Seamless);
        assert!(!j.ok, "{field}");
        (j.verdict, j.note)
    };
    assert_eq!(
        changed("clientInfo", serde_json::json!({"name": "mcpatch", "version": "0"})),
        ("BROKEN", "invariant same-initialize: the initialize of request 112 sent clientInfo {\"name\":\"mcpatch\",\"version\":\"0\"}, not the {\"name\":\"my-agent\",\"version\":\"1.2.0\"} of the client's first (request 0): a new session must start with the first initialize's params".into())
    );
    assert_eq!(
        changed("capabilities", serde_json::json!({})),
        ("BROKEN", "invariant same-initialize: the initialize of request 112 sent capabilities {}, not the {\"elicitation\":{},\"roots\":{\"listChanged\":true}} of the client's first (request 0): a new session must start with the first initialize's params".into())
    );
    assert_eq!(
        changed("protocolVersion", serde_json::json!("2025-03-26")),
        ("BROKEN", "invariant same-initialize: the initialize of request 112 sent protocolVersion \"2025-03-26\", not the \"2025-06-18\" of the client's first (request 0): a new session must start with the first initialize's params".into())
    );
    // A field left out is named so.
    let mut params = serde_json::json!({"protocolVersion": "2025-06-18", "clientInfo": {"name": "my-agent", "version": "1.2.0"}});
    let j = recovery_initialized_with(&app, &InitializeParams::of(&params))
        .judge(ScenarioName::Expired404, Expectation::Seamless);
    assert!(
        j.note.contains("sent capabilities absent, not the {"),
        "{}",
        j.note
    );
    // An initialize refused before any session started is not the client's first.
    params["capabilities"] = serde_json::json!({});
    let mut run = recovery_initialized_with(&app, &same);
    let mut refused = entry(0, "POST", Some("initialize"), None, 503);
    refused.seq = 0;
    refused.initialize = Some(InitializeParams::of(&params));
    for e in &mut run.witness {
        e.seq += 1;
    }
    run.witness.insert(0, refused);
    let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
    assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
}

#[test]
fn a_run_again_alone_keeps_its_lone_verdict_and_says_what_the_shared_run_saw() {
    let deadline = Policy::Short.deadline().as_millis() as u64;
    let beside = seamless_recovery(404, 111 + deadline)
        .judge(ScenarioName::Expired404, Expectation::Seamless);
    let alone = seamless_recovery(404, 130).judge(ScenarioName::Expired404, Expectation::Seamless);
    // Failed alone too: the lone run is told as it is.
    let failed = seamless_recovery(404, 112 + deadline)
        .judge(ScenarioName::Expired404, Expectation::Seamless);
    let j = crate::verify::scenario::again_alone(&beside, failed, 25);
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    assert_eq!(
        j.note,
        format!("recovered only after {} ms, past the {deadline} ms a healthy client needs under this policy", deadline + 2)
    );
    let j = crate::verify::scenario::again_alone(&beside, alone, 25);
    assert_eq!(
        (j.verdict, j.ok, j.recovery_ms),
        ("SEAMLESS", true, Some(20))
    );
    assert_eq!(
        j.note,
        format!("one fresh initialize without the dead id, tools re-listed, calls succeeded (run again alone: beside 25 other runs it was STUCK: recovered only after {} ms, past the {deadline} ms a healthy client needs under this policy)", deadline + 1)
    );
}
