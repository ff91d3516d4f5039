//! Scenarios that sharpen the fixed table for a client that recovers in its
//! own tool-call path: answers of the replaced session that come only once
//! the new one is up (`late-answers`), a second loss after a recovery
//! (`lost-again`), and a connection cut while the server and its session live
//! on (`cut-kept`), a new session that gets no answer in time
//! (`reinit-timeout`), and a new session that no longer lists a tool the
//! model still knows (`tools-changed`); the verdicts of the last two, and of
//! the announcement that ends `late-answers`, are judged here. Each runs in a
//! few seconds. They run by default only for
//! the drivers that ask for them ([`for_driver_default`]: gemini-cli's, whose
//! patch catalogue they close), and for every other driver only when named.

use std::time::Duration;

use super::evidence::{Evidence, HarnessCall, Judgement};
use super::judges::judge_recovery;
use super::table::{Expectation, Plan, Scenario, ScenarioName, REFUSED_CALL, REINIT_DELAY};
use crate::verify::fake_server::late::{relisted_after_announcement, DROPPED_TOOL};
use crate::verify::fake_server::reload::ReloadCycle;
use crate::verify::fake_server::{LostSessionAnswer, ServerBehaviour, WitnessEntry};

/// `late-answers`: how long after the loss the calls that ran before it, and
/// the last call answered as lost, get their answers: past the new session's
/// held-back initialize ([`REINIT_DELAY`]) and its tool list, within the
/// client's 3 s limit per request.
pub const LATE_OLD_ANSWERS: Duration = Duration::from_millis(1800);

/// `lost-again`: every session forgotten twice, 2 s apart, one call after each.
pub const LOST_AGAIN: ReloadCycle = ReloadCycle {
    every: Duration::from_secs(2),
    times: 2,
};

/// `reinit-timeout`: the client's limit per request, for a driver that sets
/// it (gemini-cli's server `timeout`), and how late the refusal of the first
/// new session comes, past it. The limit is short so the call after the one
/// that timed out comes within the time a call may still be sent on the lost
/// session (the invariant nothing-on-lost-session), as in `refused-once`.
pub const REINIT_TIMEOUT_CALL: Duration = Duration::from_millis(1000);
pub const REFUSAL_DELAY: Duration = Duration::from_millis(1500);

/// Whether `name` is one of these scenarios.
pub fn is_extra(name: ScenarioName) -> bool {
    matches!(
        name,
        ScenarioName::LateAnswers
            | ScenarioName::LostAgain
            | ScenarioName::CutKept
            | ScenarioName::ReinitTimeout
            | ScenarioName::ToolsChanged
    )
}

/// `tools-changed`: the label of the call of the tool the new session no longer lists.
pub const DROPPED_CALL: &str = "dropped-tool";

/// These scenarios, in the order verify reports them.
pub fn rows(base: &ServerBehaviour) -> Vec<Scenario> {
    vec![
        Scenario {
            name: ScenarioName::LateAnswers,
            what: "as concurrent-loss; the 2 calls that ran first, and the 404 to a call of another tool (add) among them, are answered only after the new session is up (1.8 s); then the new session announces a changed tool list",
            behaviour: ServerBehaviour {
                reinit_delay: Some(REINIT_DELAY),
                late_old_answers: Some(LATE_OLD_ANSWERS),
                announce_tools_changed: true,
                ..base.clone()
            },
            plan: Plan::Concurrent,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::LostAgain,
            what: "forgets every session twice, 2 s apart, one call after each: a second loss after a recovery; answers 404 + JSON-RPC -32001",
            behaviour: ServerBehaviour {
                reload: Some(LOST_AGAIN),
                lost_session: LostSessionAnswer::NotFoundJsonRpc,
                ..base.clone()
            },
            plan: Plan::Reload,
            expect: Expectation::Reloaded,
        },
        Scenario {
            name: ScenarioName::CutKept,
            what: "cuts the connection of a slow tool's call while it runs, and keeps listening and keeping the session",
            behaviour: ServerBehaviour {
                restart_during_slow_call: true,
                cut_keeps_listening: true,
                ..base.clone()
            },
            plan: Plan::Cut,
            expect: Expectation::NoRetry,
        },
        Scenario {
            name: ScenarioName::ReinitTimeout,
            what: "drops the session; the first new initialize gets no answer within the client's 1 s limit (a 503 after 1.5 s), later ones are answered",
            behaviour: ServerBehaviour {
                refuse_first_reinit: true,
                refusal_delay: Some(REFUSAL_DELAY),
                ..base.clone()
            },
            plan: Plan::RefusedOnce,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::ToolsChanged,
            what: "drops the session; the new session no longer lists the tool add (a new release); the model then asks for add",
            behaviour: ServerBehaviour {
                drop_tool_after_loss: true,
                ..base.clone()
            },
            plan: Plan::ToolsChanged,
            expect: Expectation::Recover,
        },
    ]
}

/// Judge a `tools-changed` run: the recovery, judged without the call of the
/// tool the new session no longer lists; that call fails in the client,
/// never reaching the server: a client that kept the old session's tools
/// beside the re-listed ones sends it (STALE).
pub(super) fn judge_tools_changed(
    ev: &Evidence<'_>,
    base: Judgement,
    relist_tools: bool,
) -> Judgement {
    let Some(dropped) = ev.calls.iter().find(|c| c.name == DROPPED_CALL) else {
        return Judgement {
            verdict: "BROKEN",
            note: format!("the call of the tool the new session no longer lists ({DROPPED_TOOL}) was never made"),
            ..base
        };
    };
    let others: Vec<HarnessCall> = ev
        .calls
        .iter()
        .filter(|c| c.name != DROPPED_CALL)
        .cloned()
        .collect();
    // Its requests, if it made any, are judged below, not as the recovery's.
    let witness: Vec<WitnessEntry> = ev
        .witness
        .iter()
        .filter(|e| e.call_id.as_deref() != Some(dropped.call_id.as_str()))
        .cloned()
        .collect();
    let rest = Evidence {
        calls: &others,
        witness: &witness,
        ..*ev
    };
    let base = Judgement {
        failed_calls: others.iter().filter(|c| !c.ok).count(),
        ..base
    };
    let j = judge_recovery(&rest, base, relist_tools);
    if !matches!(j.verdict, "SEAMLESS" | "RECOVERED") {
        return j;
    }
    let sent = ev
        .witness
        .iter()
        .filter(|e| e.call_id.as_deref() == Some(dropped.call_id.as_str()))
        .count();
    if sent > 0 || dropped.ok {
        return Judgement {
            verdict: "STALE",
            note: format!(
                "call {} asked for {DROPPED_TOOL}, which the new session no longer lists, and was sent to the server {sent} time(s){}: the old session's tools were kept beside the new session's",
                dropped.call_id,
                if dropped.ok { " and worked" } else { "" }
            ),
            ..j
        };
    }
    j
}

/// Judge a `late-answers` run from the recovery judge's verdict `j`: the
/// last answer on the new session announced a changed tool list
/// (`notifications/tools/list_changed`, after the replaced session's late
/// answers), and the client listed the tools of that session again; a client
/// whose late errors of the old session marked the server gone stops
/// listening (DEAF).
pub(super) fn judge_announced(ev: &Evidence<'_>, j: Judgement) -> Judgement {
    if !matches!(j.verdict, "SEAMLESS" | "RECOVERED") {
        return j;
    }
    match relisted_after_announcement(ev.witness) {
        Some(true) => j,
        Some(false) => Judgement {
            verdict: "DEAF",
            note: "the new session announced a changed tool list (notifications/tools/list_changed) after the old session's late answers, and the client never listed its tools again".into(),
            ..j
        },
        None => Judgement {
            verdict: "BROKEN",
            note: "no answer on the new session announced a changed tool list: the last call after the late answers was not made or failed".into(),
            ..j
        },
    }
}

/// Judge a `reinit-timeout` run from the recovery judge's verdict `j`: the
/// call that met the loss, if it failed, carries the server's words to it
/// (the lost session's answer): its new session's initialize got no answer
/// at all, so those are the only words the server said (MUTE otherwise).
pub(super) fn judge_unanswered_reinit(
    scenario: &Scenario,
    ev: &Evidence<'_>,
    j: Judgement,
) -> Judgement {
    if !matches!(j.verdict, "SEAMLESS" | "RECOVERED") {
        return j;
    }
    let Some(call) = ev.calls.iter().find(|c| c.name == REFUSED_CALL) else {
        return Judgement {
            verdict: "BROKEN",
            note: "the call that meets the loss was never made".into(),
            ..j
        };
    };
    let words = scenario.behaviour.lost_session.words();
    let error = call.error.as_deref().unwrap_or("");
    if ev.seamless && !call.ok && !error.contains(words) {
        return Judgement {
            verdict: "MUTE",
            note: format!(
                "the error of call {} (its new session got no answer in time) does not carry the server's words to it ({words:?}): {error:?}",
                call.call_id
            ),
            ..j
        };
    }
    j
}

/// The scenarios a driver that asks for them adds to its default set (no
/// `--scenario` named): all of them.
pub fn for_driver_default() -> Vec<Scenario> {
    rows(&ServerBehaviour::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extra_scenarios_are_in_the_table_and_run_only_when_named_by_default() {
        let all = super::super::all();
        for s in for_driver_default() {
            assert!(is_extra(s.name), "{}", s.name);
            assert!(all.iter().any(|a| a.name == s.name), "{}", s.name);
            assert!(super::super::reload::by_name_only(&s), "{}", s.name);
        }
        assert_eq!(
            all.iter().filter(|s| is_extra(s.name)).count(),
            for_driver_default().len()
        );
        // Late enough to come after the held-back new session, early enough for a 3 s request limit.
        assert!(LATE_OLD_ANSWERS > REINIT_DELAY * 3);
        assert!(LATE_OLD_ANSWERS < Duration::from_millis(2500));
    }
}
