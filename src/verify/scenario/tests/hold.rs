//! Unit tests of the judges: scenarios in which the session is kept or no session is lost: HELD, RECYCLED.

use super::*;

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
