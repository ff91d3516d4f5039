//! The `losses-apart` scenario's verdict: the server drops the session
//! [`LOSSES_APART`] times, each time after the new session stayed healthy past
//! the policy's `maxDelayMs`, and each loss is met by a call the server fails
//! with HTTP 500 on every session (so no new session ever serves a call, and
//! only its staying healthy can end the outage for the client). Each loss is
//! then a new outage: the call that met it is sent again on a new session
//! (where it fails with the server's 500), and the call after the last loss
//! works (RESET). A client whose attempt counter never starts again adds the
//! losses up until its policy's attempts are used, gives up, and fails a call
//! that met a loss without sending it again (STUCK). Kept apart from
//! judges.rs, which dispatches to it.

use std::collections::HashSet;

use super::evidence::{counted, Evidence, HarnessCall, Judgement};
use super::table::{LAST_CALL, LOSSES_APART, LOSSES_APART_HEALTHY, OUTAGE_CALL};
use crate::verify::fake_server::WitnessEntry;

/// Judge a `losses-apart` run.
pub(super) fn judge(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let dropped: HashSet<&str> = ev.dropped.iter().map(String::as_str).collect();
    // A request answered as lost: sent on a dropped session, rejected before its tool ran.
    let lost = |e: &WitnessEntry| {
        e.session_sent
            .as_deref()
            .is_some_and(|s| dropped.contains(s))
            && e.executed != Some(true)
            && matches!(e.status, 400 | 401 | 404)
    };
    let apart = LOSSES_APART_HEALTHY.as_secs_f64();
    let outages: Vec<&HarnessCall> = ev
        .calls
        .iter()
        .filter(|c| c.name.starts_with(OUTAGE_CALL))
        .collect();
    for (k, c) in outages.iter().enumerate() {
        let which = format!("loss {} of {LOSSES_APART}", k + 1);
        let sends: Vec<&WitnessEntry> = ev
            .witness
            .iter()
            .filter(|e| e.http_method == "POST" && e.call_id.as_deref() == Some(c.call_id.as_str()))
            .collect();
        let error = c.error.as_deref().unwrap_or("no error");
        if sends.is_empty() {
            return verdict(
                "STUCK",
                format!(
                    "call {} ({which}) never reached the server: {error}",
                    c.call_id
                ),
            );
        }
        if !sends.iter().any(|e| lost(e)) {
            return verdict(
                "BROKEN",
                format!(
                    "call {} ({which}) never met the lost session: nothing was tested",
                    c.call_id
                ),
            );
        }
        if c.ok {
            return verdict(
                "BROKEN",
                format!(
                    "call {} ({which}) worked, though the server fails it with HTTP 500 on every session: nothing was tested",
                    c.call_id
                ),
            );
        }
        if sends.iter().all(|e| lost(e)) {
            let healthy = if k == 0 {
                String::new()
            } else {
                format!(" (the session before it had stayed healthy {apart} s)")
            };
            return verdict(
                "STUCK",
                format!(
                    "call {} met the lost session of {which}{healthy} and failed after {} ms without being sent again on a new session: {error}",
                    c.call_id, c.ms
                ),
            );
        }
    }
    if outages.len() < LOSSES_APART {
        return verdict(
            "BROKEN",
            format!(
                "the run made {} of the {LOSSES_APART} calls that meet a loss: nothing was tested past it",
                outages.len()
            ),
        );
    }
    let Some(last) = ev.calls.iter().find(|c| c.name == LAST_CALL) else {
        return verdict(
            "BROKEN",
            "the call after the last loss was never made".into(),
        );
    };
    if !last.ok {
        return verdict(
            "STUCK",
            format!(
                "the call after the {LOSSES_APART} losses ({}) failed: {}",
                last.call_id,
                last.error.as_deref().unwrap_or("no error")
            ),
        );
    }
    verdict(
        "RESET",
        format!(
            "{LOSSES_APART} losses {apart} s apart, each after a healthy session: each call that met one was sent again on a new session, the call after them worked; {}",
            counted(base.initialize_count, "handshake")
        ),
    )
}
