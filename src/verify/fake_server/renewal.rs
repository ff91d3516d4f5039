//! A refusal that comes back late (`late_sessionless_refusal`, the scenario
//! `call-during-renewal`): once some session was lost, a request sent without
//! a session id is answered 400 "No valid session ID provided", as the
//! TypeScript SDK's stateful examples answer it, but only once the client's new
//! session is up. A call a client sent while its new session was starting then
//! meets its refusal when its transport has a session again, as it does
//! against a real server whose answers are slow; answered at once, the refusal
//! would reach it while the session is still missing and hide that case.

use std::time::Duration;

use super::sessions::{lock, Shared};

/// The words of the refusal (the TypeScript SDK examples' own).
pub(super) const SESSIONLESS_WORDS: &str = "Bad Request: No valid session ID provided";
/// Longest a refusal waits for a new session: a client that never starts one
/// (unhealed) gets it then, well within a call's timeout.
pub(super) const HOLD_LIMIT: Duration = Duration::from_millis(1500);
/// Longest a held answer waits, after the new session's initialize was
/// answered, for the client to show it has that session (see [`renewed`]);
/// a client that sends nothing on it gets the answer this much later. The
/// hold limits bound it.
pub(super) const SETTLE: Duration = Duration::from_millis(600);
/// How long a held answer still waits after the new session's
/// `notifications/initialized` came: the client has its session only once
/// that notification's own answer reached it and its renewal returned, which
/// a loaded machine can take a while to do.
pub(super) const AFTER_INITIALIZED: Duration = Duration::from_millis(150);
const POLL: Duration = Duration::from_millis(10);

/// Whether a request without a session id gets the late refusal now.
pub(super) fn applies(shared: &Shared) -> bool {
    shared.behaviour.late_sessionless_refusal && !lock(&shared.dropped).order.is_empty()
}

/// Wait until the session opened after the latest loss is up (see
/// [`renewed`]), at most `limit`.
pub(super) async fn until_renewed(shared: &Shared, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline && !renewed(shared) {
        tokio::time::sleep(POLL).await;
    }
}

/// Whether the first session opened after the latest loss is up: its
/// initialize was answered, and then the client sent another request on it
/// (it holds the new id), or its `notifications/initialized` came
/// [`AFTER_INITIALIZED`] ago, or [`SETTLE`] has passed since that answer.
pub(super) fn renewed(shared: &Shared) -> bool {
    let now = shared.now_ms();
    let w = lock(&shared.witness);
    let Some(loss) = w.entries.iter().rposition(|e| {
        e.http_method == "CONTROL" && e.note.as_deref().is_some_and(|n| n.contains("dropped"))
    }) else {
        return false;
    };
    let mut since = w.entries.range(loss..);
    let Some(init) = since.find(|e| {
        e.rpc_method.as_deref() == Some("initialize")
            && e.status == 200
            && e.session_issued.is_some()
    }) else {
        return false;
    };
    let settled = now >= init.answered_ms + SETTLE.as_millis() as u64;
    // `since` goes on after the initialize: its id was issued there.
    settled
        || since.any(|e| {
            e.session_sent == init.session_issued
                && match e.rpc_method.as_deref() {
                    Some("notifications/initialized") => {
                        e.status == 202 && now >= e.t_ms + AFTER_INITIALIZED.as_millis() as u64
                    }
                    _ => true,
                }
        })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::{json, Value};

    use super::*;
    use crate::verify::fake_server::{FakeServer, ServerBehaviour, WitnessEntry};

    async fn post(url: &str, session: Option<&str>, body: Value) -> (u16, Option<String>, Value) {
        let mut req = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let issued = r
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_string());
        let body = r.json().await.unwrap_or(Value::Null);
        (status, issued, body)
    }

    async fn open(url: &str) -> String {
        let id = initialize(url).await;
        initialized(url, &id).await;
        id
    }

    /// The first step of opening a session: its id.
    async fn initialize(url: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let (status, id, _) = post(url, None, init).await;
        assert_eq!(status, 200);
        id.unwrap()
    }

    /// The last step: the session is up once the server has this notification.
    async fn initialized(url: &str, id: &str) {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(post(url, Some(id), note).await.0, 202);
    }

    /// A server that refuses a request without a session id only once the new session is up.
    async fn refusing_late() -> FakeServer {
        FakeServer::start(
            ServerBehaviour {
                late_sessionless_refusal: true,
                ..ServerBehaviour::default()
            },
            0,
        )
        .await
        .unwrap()
    }

    fn call(text: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text, "call_id": text}}})
    }

    #[tokio::test]
    async fn a_call_without_a_session_id_is_refused_only_once_the_new_session_is_initialized() {
        let reinit = Duration::from_millis(400);
        let server = FakeServer::start(
            ServerBehaviour {
                late_sessionless_refusal: true,
                reinit_delay: Some(reinit),
                ..ServerBehaviour::default()
            },
            0,
        )
        .await
        .unwrap();
        let url = server.url();
        // Before any loss a request without an id is refused at once, in the SDK transport's words.
        open(&url).await;
        let (status, _, body) = post(&url, None, call("early")).await;
        assert_eq!(status, 400);
        assert_eq!(
            body["error"]["message"],
            "Bad Request: Mcp-Session-Id header is required"
        );
        server.invalidate();
        let start = Instant::now();
        let renewing = tokio::spawn({
            let url = url.clone();
            async move { open(&url).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, _, body) = post(&url, None, call("late")).await;
        let refused = start.elapsed();
        let id = renewing.await.unwrap();
        assert_eq!(
            (status, body),
            (
                400,
                json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}})
            )
        );
        assert!(refused >= reinit, "refused {refused:?} after the loss");
        // The server answered the refusal once the new session's notification
        // had come, and a while after (counted from when it came, not from
        // when its own answer was written: the server may release the refusal
        // first), so that the client has its renewal back.
        let witness = server.witness();
        let arrived =
            |pick: &dyn Fn(&WitnessEntry) -> bool| witness.iter().rfind(|e| pick(e)).unwrap().t_ms;
        let late = witness
            .iter()
            .find(|e| e.call_id.as_deref() == Some("late"))
            .unwrap();
        assert_eq!((late.status, late.executed), (400, Some(false)));
        let notified = arrived(&|e| {
            e.rpc_method.as_deref() == Some("notifications/initialized")
                && e.session_sent.as_deref() == Some(id.as_str())
        });
        assert!(
            late.answered_ms >= notified + AFTER_INITIALIZED.as_millis() as u64,
            "{witness:#?}"
        );
        // Once the new session is up, a request without an id is refused at once.
        let start = Instant::now();
        assert_eq!(post(&url, None, call("after")).await.0, 400);
        assert!(start.elapsed() < HOLD_LIMIT, "{:?}", start.elapsed());
        assert_eq!(post(&url, Some(&id), call("on-new")).await.0, 200);
    }

    #[tokio::test]
    async fn a_request_on_the_new_session_shows_it_is_up_before_its_initialized_notification() {
        let server = refusing_late().await;
        let url = server.url();
        open(&url).await;
        server.invalidate();
        // A client that calls on its new session at once, without the notification.
        let id = initialize(&url).await;
        let start = Instant::now();
        assert_eq!(post(&url, Some(&id), call("on-new")).await.0, 200);
        assert_eq!(post(&url, None, call("late")).await.0, 400);
        let waited = start.elapsed();
        assert!(waited < SETTLE - Duration::from_millis(200), "{waited:?}");
    }

    #[tokio::test]
    async fn a_refusal_waits_no_longer_than_its_limit_for_a_new_session_that_never_comes() {
        let server = refusing_late().await;
        open(&server.url()).await;
        server.invalidate();
        let start = Instant::now();
        let (status, _, body) = post(&server.url(), None, call("never")).await;
        let waited = start.elapsed();
        assert_eq!(
            (status, &body["error"]["message"]),
            (400, &json!(SESSIONLESS_WORDS))
        );
        assert!(
            waited >= HOLD_LIMIT && waited < HOLD_LIMIT + Duration::from_secs(2),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn a_late_lost_answer_comes_only_once_the_new_session_is_up_however_late_that_is() {
        let late = Duration::from_millis(100);
        let server = FakeServer::start(
            ServerBehaviour {
                late_old_answers: Some(late),
                ..ServerBehaviour::default()
            },
            0,
        )
        .await
        .unwrap();
        let url = server.url();
        let old = open(&url).await;
        server.hold_calls(1, 0);
        let marked = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": crate::verify::fake_server::late::LATE_LOST_TOOL,
                "arguments": crate::verify::fake_server::late::late_call_args(2)}});
        let start = Instant::now();
        let lost = tokio::spawn({
            let url = url.clone();
            async move {
                let answer = post(&url, Some(&old), marked).await;
                (answer.0, Instant::now())
            }
        });
        // The new session comes well past the answer's own delay, as on a slow machine.
        tokio::time::sleep(late * 4).await;
        let new = initialize(&url).await;
        // The session is up once the server has the notification, which is
        // sent after this instant: the answer cannot be released before it
        // (the instant after the notification's own answer may come later
        // than the late answer, which the server may release first).
        let up = Instant::now();
        initialized(&url, &new).await;
        let (status, answered) = lost.await.unwrap();
        assert_eq!(status, 404);
        assert!(
            answered >= up,
            "the late answer came {:?} after the loss, before the new session ({:?})",
            answered - start,
            up - start
        );
        assert!(answered - start < late + super::super::late::LATE_HOLD_LIMIT + late * 4);
        assert_eq!(post(&url, Some(&new), call("on-new")).await.0, 200);
    }
}
