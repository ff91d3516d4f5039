//! Unit tests of the scenario table and its judges, on hand-written witness
//! logs and caller views.

mod auth;
mod bounded;
mod extra;
mod get_stream;
mod hold;
mod recovery;
mod refused;
mod stopping;
mod timing;

use std::collections::HashMap;

use super::evidence::counted;
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
        ..Default::default()
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

pub(super) fn seen(id: &str, name: &str, error: Option<&str>, ms: u64) -> HarnessCall {
    HarnessCall {
        call_id: id.into(),
        name: name.into(),
        ok: error.is_none(),
        error: error.map(str::to_string),
        ms,
    }
}

pub(super) fn counts(of: &[(&str, u32, u32)]) -> HashMap<String, CallCount> {
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
    let harness = include_str!("../../drivers/plugin/harness.mjs");
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
            // The server refuses the new session: a call may fail whatever the revision.
            Expectation::Recover if s.plan == Plan::RefusedOnce => {
                assert_eq!((current, earlier), (s.expect, s.expect))
            }
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

#[test]
fn the_reload_rows_restart_as_their_names_say_and_answer_as_their_servers_do() {
    use crate::verify::fake_server::LostSessionAnswer;
    for (name, cycle, answer, words) in [
        // reload: the SDK's example server, 400 "No valid session ID provided", every 2 s.
        (
            ScenarioName::Reload,
            RELOAD,
            LostSessionAnswer::BadRequestNoValidSession,
            "every 2 s, 15 times",
        ),
        // reload-5s: the SDK's own transport, 404 + JSON-RPC -32001, every 5 s.
        (
            ScenarioName::Reload5s,
            RELOAD_5S,
            LostSessionAnswer::NotFoundJsonRpc,
            "every 5 s, 8 times",
        ),
    ] {
        let s = find(name);
        assert_eq!(s.behaviour.reload, Some(cycle), "{name}");
        assert_eq!(s.behaviour.lost_session, answer, "{name}");
        assert!(s.what.contains(words), "{}", s.what);
        assert_eq!((s.plan, s.expect), (Plan::Reload, Expectation::Reloaded));
    }
    // Of the other rows only lost-again forgets every session on a cycle.
    for s in all() {
        if !matches!(
            s.name,
            ScenarioName::Reload | ScenarioName::Reload5s | ScenarioName::LostAgain
        ) {
            assert_eq!(s.behaviour.reload, None, "{}", s.name);
        }
    }
}
