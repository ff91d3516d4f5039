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

use axum::http::StatusCode;
use serde_json::Value;

use super::behaviour::ServerBehaviour;
use super::RAN_BEFORE_LOSS_DELAY;

/// The tool whose held call, answered as lost, gets its answer late: a tool
/// of its own, so no other call's recovery has touched what the client
/// holds for it (an `echo` among the batch's others).
pub const LATE_LOST_TOOL: &str = "add";

/// How long the answer of a held call that ran before the loss waits.
pub(super) fn ran_before_loss_delay(b: &ServerBehaviour) -> Duration {
    b.late_old_answers.unwrap_or(RAN_BEFORE_LOSS_DELAY)
}

/// How long the lost answer of a held call (its tools/call `params`) waits.
pub(super) fn lost_delay(b: &ServerBehaviour, params: &Value) -> Duration {
    match b.late_old_answers {
        Some(late) if params.get("name").and_then(Value::as_str) == Some(LATE_LOST_TOOL) => late,
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

/// The note a restart that keeps listening writes (it starts with
/// `restart:`, as every restart's does).
pub(super) const CUT_NOTE: &str =
    "restart: every open connection cut; still listening, sessions kept";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_late_tools_lost_answer_waits_and_only_when_asked() {
        let late = ServerBehaviour {
            late_old_answers: Some(Duration::from_millis(1800)),
            ..ServerBehaviour::default()
        };
        let add = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
        let echo = json!({"name": "echo", "arguments": {"text": "x"}});
        assert_eq!(lost_delay(&late, &add), Duration::from_millis(1800));
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
