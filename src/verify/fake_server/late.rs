//! Answers that come late to an old session, and a cut that keeps the server
//! up: what a client sees when the session it replaced still has calls in
//! flight once the new one is up ([`ServerBehaviour::late_old_answers`]), or
//! when a connection breaks while the server and its sessions live on
//! ([`ServerBehaviour::cut_keeps_listening`]). A client that takes a late
//! answer of the old session for a new loss starts a second session, one
//! that closes the old session under its calls cuts them, and one that takes
//! a cut connection for a lost session starts a session it did not need and
//! sends the cut call again.

use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::behaviour::{ServerBehaviour, WitnessEntry};
use super::sessions::{lock, Shared};
use super::RAN_BEFORE_LOSS_DELAY;

/// The tool whose held call, answered as lost, gets its answer late: a tool
/// other than the batch's `echo` calls.
pub const LATE_LOST_TOOL: &str = "add";

/// The `b` argument that marks the call of [`LATE_LOST_TOOL`] whose lost
/// answer comes late. Any other call of that tool in the batch is answered
/// at once: a client that keeps a session per tool (gemini-cli's tool
/// adapter holds its own client) has then moved that tool to the new session
/// before the late answer of the old one comes, and must not take it for a
/// second loss.
pub const LATE_MARK_B: i64 = 1;

/// The arguments of the call whose lost answer comes late.
pub fn late_call_args(a: usize) -> Value {
    json!({"a": a, "b": LATE_MARK_B})
}

/// How long the answer of a held call that ran before the loss waits.
pub(super) fn ran_before_loss_delay(b: &ServerBehaviour) -> Duration {
    b.late_old_answers.unwrap_or(RAN_BEFORE_LOSS_DELAY)
}

/// Longest a late answer waits, past its delay, for the client's new session
/// to be up: the delay plus this stays within a client's 3 s limit per request.
pub(super) const LATE_HOLD_LIMIT: Duration = Duration::from_millis(1000);

/// Wait `delay`, then until the session opened after the loss is up (at most
/// [`LATE_HOLD_LIMIT`] more): a late answer comes after the client has its
/// new session however slow the machine, so a client that takes it for a
/// second loss is seen doing so, and not only when the new session was quick.
pub(super) async fn answer_late(shared: &Shared, delay: Duration) {
    tokio::time::sleep(delay).await;
    super::renewal::until_renewed(shared, LATE_HOLD_LIMIT).await;
}

/// Hold the answer of a held call that ran before the loss: briefly, or, for
/// late answers, until the new session is up ([`answer_late`]).
pub(super) async fn hold_ran_before_loss(shared: &Shared) {
    let delay = ran_before_loss_delay(&shared.behaviour);
    if shared.behaviour.late_old_answers.is_some() {
        answer_late(shared, delay).await;
    } else {
        tokio::time::sleep(delay).await;
    }
}

/// How long the lost answer of a held call (its tools/call `params`) waits.
pub(super) fn lost_delay(b: &ServerBehaviour, params: &Value) -> Duration {
    match b.late_old_answers {
        Some(late)
            if params.get("name").and_then(Value::as_str) == Some(LATE_LOST_TOOL)
                && params.pointer("/arguments/b").and_then(Value::as_i64) == Some(LATE_MARK_B) =>
        {
            late
        }
        _ => Duration::ZERO,
    }
}

/// How long an answer to a POST (its HTTP `status`, its JSON-RPC method)
/// waits: a refused initialize waits the behaviour's refusal delay.
pub(super) fn refusal_delay(
    b: &ServerBehaviour,
    status: StatusCode,
    method: Option<&str>,
) -> Duration {
    match b.refusal_delay {
        Some(d) if status == StatusCode::SERVICE_UNAVAILABLE && method == Some("initialize") => d,
        _ => Duration::ZERO,
    }
}

/// The start of the note written when an answer announces a changed tool
/// list; the session's id follows.
pub const ANNOUNCED_NOTE: &str = "announced notifications/tools/list_changed on session ";

/// Whether a tool call's answer on a live session (`call_ok`: whether it
/// worked) announces a changed tool list: it worked, the behaviour says so,
/// and some session was lost before.
pub(super) fn announces(shared: &Shared, call_ok: Option<bool>) -> bool {
    shared.behaviour.announce_tools_changed
        && call_ok == Some(true)
        && !lock(&shared.dropped).order.is_empty()
}

/// The answer `body` on `session` as an SSE stream: the announcement, then the answer.
pub(super) fn announcing(shared: &Shared, session: &str, body: &Value) -> Response {
    shared.note(format!("{ANNOUNCED_NOTE}{session}"));
    let announcement = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let events =
        format!("event: message\ndata: {announcement}\n\nevent: message\ndata: {body}\n\n");
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        events,
    )
        .into_response()
}

/// Whether the tools were listed again on the session of the last
/// announcement of a changed tool list, after it (`None`: none was made).
pub fn relisted_after_announcement(witness: &[WitnessEntry]) -> Option<bool> {
    let (at, note) = witness.iter().enumerate().rev().find_map(|(i, e)| {
        e.note
            .as_deref()
            .and_then(|n| n.strip_prefix(ANNOUNCED_NOTE))
            .map(|s| (i, s))
    })?;
    Some(witness[at..].iter().any(|e| {
        e.rpc_method.as_deref() == Some("tools/list")
            && e.status == 200
            && e.session_sent.as_deref() == Some(note)
    }))
}

/// The tool a server restarted with a new release no longer lists
/// ([`ServerBehaviour::drop_tool_after_loss`]).
pub const DROPPED_TOOL: &str = "add";

/// The tool list `tools` (a JSON array) as the server lists it now: without
/// [`DROPPED_TOOL`] once some session was lost, when the behaviour says so.
pub(super) fn listed(shared: &Shared, tools: Value) -> Value {
    if !shared.behaviour.drop_tool_after_loss || lock(&shared.dropped).order.is_empty() {
        return tools;
    }
    match tools {
        Value::Array(list) => Value::Array(
            list.into_iter()
                .filter(|t| t.get("name").and_then(Value::as_str) != Some(DROPPED_TOOL))
                .collect(),
        ),
        other => other,
    }
}

/// The note a restart that keeps listening writes (it starts with
/// `restart:`, as every restart's does).
pub(super) const CUT_NOTE: &str =
    "restart: every open connection cut; still listening, sessions kept";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_marked_late_calls_lost_answer_waits_and_only_when_asked() {
        let late = ServerBehaviour {
            late_old_answers: Some(Duration::from_millis(1800)),
            ..ServerBehaviour::default()
        };
        let add = json!({"name": "add", "arguments": late_call_args(6)});
        let unmarked = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
        let echo = json!({"name": "echo", "arguments": {"text": "x"}});
        assert_eq!(lost_delay(&late, &add), Duration::from_millis(1800));
        assert_eq!(lost_delay(&late, &unmarked), Duration::ZERO);
        assert_eq!(lost_delay(&late, &echo), Duration::ZERO);
        assert_eq!(ran_before_loss_delay(&late), Duration::from_millis(1800));
        let usual = ServerBehaviour::default();
        assert_eq!(lost_delay(&usual, &add), Duration::ZERO);
        assert_eq!(ran_before_loss_delay(&usual), RAN_BEFORE_LOSS_DELAY);
    }

    #[test]
    fn only_a_refused_initialize_waits_the_refusal_delay() {
        let slow = ServerBehaviour {
            refusal_delay: Some(Duration::from_millis(3500)),
            ..ServerBehaviour::default()
        };
        let refused = StatusCode::SERVICE_UNAVAILABLE;
        assert_eq!(
            refusal_delay(&slow, refused, Some("initialize")),
            Duration::from_millis(3500)
        );
        assert_eq!(
            refusal_delay(&slow, StatusCode::OK, Some("initialize")),
            Duration::ZERO
        );
        assert_eq!(
            refusal_delay(&slow, refused, Some("tools/call")),
            Duration::ZERO
        );
        let usual = ServerBehaviour::default();
        assert_eq!(
            refusal_delay(&usual, refused, Some("initialize")),
            Duration::ZERO
        );
    }
}
