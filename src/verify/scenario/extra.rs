//! Scenarios that sharpen the fixed table for a client that recovers in its
//! own tool-call path: answers of the replaced session that come only once
//! the new one is up (`late-answers`), a second loss after a recovery
//! (`lost-again`), and a connection cut while the server and its session live
//! on (`cut-kept`), a new session that gets no answer in time
//! (`reinit-timeout`), and a new session that no longer lists a tool the
//! model still knows (`tools-changed`); the verdicts of the last two, and of
//! the announcement that ends `late-answers`, are judged here. Each runs in a
//! few seconds. They run by default only for
//! the drivers that ask for them (table.rs's `for_driver_default`: gemini-cli's, whose
//! patch catalogue they close), and for every other driver only when named.

use super::evidence::{Evidence, HarnessCall, Judgement};
use super::table::{Scenario, DROPPED_CALL, REFUSED_CALL};
use crate::verify::fake_server::late::{relisted_after_announcement, DROPPED_TOOL};
use crate::verify::fake_server::WitnessEntry;

/// How the recovery of a run is judged (judges.rs's `judge_recovery`), given
/// by the caller so this file does not import the judges that dispatch to it.
pub(super) type JudgeRecovery = fn(&Evidence<'_>, Judgement, bool) -> Judgement;

/// Judge a `tools-changed` run: the recovery, judged without the call of the
/// tool the new session no longer lists; that call fails in the client,
/// never reaching the server: a client that kept the old session's tools
/// beside the re-listed ones sends it (STALE).
pub(super) fn judge_tools_changed(
    ev: &Evidence<'_>,
    base: Judgement,
    relist_tools: bool,
    judge_recovery: JudgeRecovery,
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::verify::scenario::table::{
        for_driver_default, is_extra, LATE_OLD_ANSWERS, REINIT_DELAY,
    };

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
