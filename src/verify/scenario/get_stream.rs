//! The `get-stream-loss` scenario's verdict: the server keeps the client's GET
//! stream open, drops the session while no call is made and cuts the stream,
//! so the first request that meets the loss is the client's own GET
//! reconnect. A healed client starts one new session and opens its GET stream
//! on it without waiting for a call, and later calls work there (SEAMLESS). A
//! client that only reports the GET's failure is STUCK until a call comes
//! (mcp-sdk mutant 18), and so is one that never opens the stream again. Kept
//! apart from judges.rs, which routes the scenario here.

use std::time::Duration;

use super::evidence::{Evidence, Judgement};
use crate::verify::fake_server::WitnessEntry;

/// How long the plan waits, with no call, for a GET stream on a new session
/// after cutting the old one: past the SDK's default first reconnect delay
/// (1 s) and its second (1.5 s), with room for a loaded machine.
pub const GET_REOPEN_WAIT: Duration = Duration::from_millis(6000);
/// The longest a healed client may take from the session-lost answer to its
/// GET to the GET on the new session. The mcp-sdk patch starts the new session
/// at once (about 10 ms); the DSH plugin starts it when the SDK gives the
/// stream up after its second reconnect, 1.5 s later (about 2 s in all).
pub const GET_REOPEN_LIMIT: Duration = Duration::from_millis(4000);

fn fresh_initialize(e: &WitnessEntry) -> bool {
    e.rpc_method.as_deref() == Some("initialize") && e.status == 200 && e.session_sent.is_none()
}

fn is_call(e: &WitnessEntry) -> bool {
    e.rpc_method.as_deref() == Some("tools/call")
}

/// Judge a `get-stream-loss` run; `base` carries the counts every judge fills.
pub(super) fn judge(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let w = ev.witness;
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let Some(dropped_at) = w.iter().position(|e| {
        e.http_method == "CONTROL" && e.note.as_deref().is_some_and(|n| n.contains("dropped"))
    }) else {
        return verdict(
            "BROKEN",
            "the server never dropped the session: nothing was tested".into(),
        );
    };
    if !w[..dropped_at]
        .iter()
        .any(|e| e.http_method == "GET" && e.status == 200)
    {
        return verdict(
            "BROKEN",
            "the client opened no GET stream before the session was dropped: nothing was tested"
                .into(),
        );
    }
    let dead = |e: &WitnessEntry| {
        e.session_sent
            .as_ref()
            .is_some_and(|s| ev.dropped.contains(s))
    };
    // Only what happened before the next call counts: the loss must be met,
    // and healed, with no call made.
    let first_call = w[dropped_at..]
        .iter()
        .position(is_call)
        .map_or(w.len(), |i| i + dropped_at);
    let until_call = match w.get(first_call) {
        Some(c) => format!("before the next call ({} ms)", c.t_ms),
        None => "and no call came".into(),
    };
    let Some(lost_get) = w[dropped_at..first_call]
        .iter()
        .position(|e| e.http_method == "GET" && dead(e) && e.status >= 400)
        .map(|i| i + dropped_at)
    else {
        return verdict(
            "STUCK",
            format!("the client never opened its GET stream again after the server cut it, so nothing met the loss {until_call}"),
        );
    };
    let loss = &w[lost_get];
    let Some(new_init) = w[lost_get..first_call]
        .iter()
        .position(fresh_initialize)
        .map(|i| i + lost_get)
    else {
        return verdict(
            "STUCK",
            format!(
                "the GET stream met the loss at {} ms (HTTP {}), but no new session started {until_call}",
                loss.answered_ms, loss.status
            ),
        );
    };
    let fresh = w[new_init].session_issued.clone().unwrap_or_default();
    let on_fresh = |e: &WitnessEntry| e.session_sent.as_deref() == Some(fresh.as_str());
    let Some(reopened) = w[new_init..first_call]
        .iter()
        .find(|e| e.http_method == "GET" && on_fresh(e) && e.status == 200)
    else {
        return verdict(
            "STUCK",
            format!(
                "a new session started at {} ms after the GET stream met the loss, but no GET stream opened on it {until_call}",
                w[new_init].t_ms
            ),
        );
    };
    let reopen_ms = reopened.t_ms.saturating_sub(loss.answered_ms);
    let limit = GET_REOPEN_LIMIT.as_millis() as u64;
    if reopen_ms > limit {
        return Judgement {
            late_only: true,
            ..verdict(
                "STUCK",
                format!("the GET stream opened on the new session only {reopen_ms} ms after it met the loss (limit {limit} ms)"),
            )
        };
    }
    let established = w[new_init].answered_ms;
    let dead_later = w.iter().filter(|e| dead(e) && e.t_ms > established).count();
    if dead_later > 0 {
        return verdict(
            "STUCK",
            format!("{dead_later} request(s) still carried the dead session id after the new session was established"),
        );
    }
    let Some(called) = w[first_call.min(w.len())..]
        .iter()
        .find(|e| is_call(e) && on_fresh(e) && e.call_ok == Some(true))
    else {
        return verdict(
            "STUCK",
            "the GET stream opened on a new session, but no tool call succeeded on it".into(),
        );
    };
    let later_inits = w[new_init + 1..]
        .iter()
        .filter(|e| fresh_initialize(e))
        .count();
    let mut note = format!(
        "the GET stream met the loss; one fresh initialize without the dead id and a GET stream on the new session {reopen_ms} ms later, with no call made; calls succeeded"
    );
    if later_inits > 0 {
        note.push_str(&format!("; {later_inits} more initialize(s) after it"));
    }
    Judgement {
        verdict: if base.failed_calls == 0 && later_inits == 0 {
            "SEAMLESS"
        } else {
            "RECOVERED"
        },
        recovery_ms: Some(called.answered_ms.saturating_sub(loss.answered_ms)),
        note,
        ..base
    }
}
