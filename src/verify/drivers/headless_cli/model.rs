//! The fake Gemini API a headless gemini-cli talks to during `verify`: mcpatch
//! plays the model. Each request of the CLI's conversation is held until the
//! plan asks for the next tool calls (answered as `functionCall` parts), and
//! the `functionResponse` parts of the next request are what the CLI made of
//! each call. Requests outside the conversation (routing, next-speaker and
//! loop checks) get a neutral JSON answer. Loopback only; no real model.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};

use crate::error::Result;

/// Largest request body read (a conversation carries every tool declaration).
const MAX_REQUEST_BYTES: usize = 32 << 20;
/// Longest a request of the conversation waits for the plan's next turn
/// before the model ends the conversation.
const TURN_WAIT: Duration = Duration::from_secs(60);
/// The text the model ends the conversation with.
pub const LAST_WORDS: &str = "mcpatch verify: done.";

/// One tool call the model asks for.
#[derive(Debug, Clone)]
pub struct AskedCall {
    /// The call's id (also `call_id` in its arguments, as the fake server counts it).
    pub id: String,
    /// The tool's name on the fake server (`echo`, `slow`, ...).
    pub tool: String,
    pub args: Value,
}

/// What the CLI made of one call.
#[derive(Debug, Clone)]
pub struct Answer {
    pub ok: bool,
    pub error: Option<String>,
    /// From the model's answer asking for the call to the request carrying its result.
    pub ms: u64,
}

#[derive(Default)]
struct Conversation {
    /// Turns the plan asked for, not yet handed to the CLI.
    turns: VecDeque<Vec<AskedCall>>,
    /// Calls handed to the CLI and not yet answered, in the order asked: id, when, result slot.
    asked: Vec<(String, Instant, oneshot::Sender<Answer>)>,
    /// Calls queued with their result slots (moved to `asked` when handed out).
    slots: HashMap<String, oneshot::Sender<Answer>>,
    /// The tool names the CLI declared in its first request of the conversation.
    declared: Option<Vec<String>>,
    /// The plan has ended: the next request gets the last words.
    finished: bool,
    /// Requests the model could not place (method, path).
    stray: Vec<String>,
}

struct Shared {
    conversation: Mutex<Conversation>,
    /// A turn was queued, or the plan ended.
    turn: Notify,
    /// The CLI's first request of the conversation came.
    declared: Notify,
}

fn lock(shared: &Shared) -> MutexGuard<'_, Conversation> {
    shared
        .conversation
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The fake Gemini API, served on 127.0.0.1 until dropped.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeModel {
    pub async fn start() -> Result<FakeModel> {
        let (listener, addr) = crate::verify::fake_server::bind_loopback(0).await?;
        let shared = Arc::new(Shared {
            conversation: Mutex::new(Conversation::default()),
            turn: Notify::new(),
            declared: Notify::new(),
        });
        let app = Router::new()
            .fallback(answer)
            .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeModel { addr, shared, task })
    }

    /// The base URL the CLI is given (`GOOGLE_GEMINI_BASE_URL`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The tool names the CLI declared, once its conversation started.
    pub async fn declared(&self) -> Vec<String> {
        loop {
            let notified = self.shared.declared.notified();
            if let Some(d) = lock(&self.shared).declared.clone() {
                return d;
            }
            notified.await;
        }
    }

    /// Ask for `calls` in the next turn; each receiver gets what the CLI made of its call.
    pub fn ask(&self, calls: Vec<AskedCall>) -> Vec<oneshot::Receiver<Answer>> {
        let mut receivers = Vec::with_capacity(calls.len());
        {
            let mut c = lock(&self.shared);
            for call in &calls {
                let (tx, rx) = oneshot::channel();
                c.slots.insert(call.id.clone(), tx);
                receivers.push(rx);
            }
            c.turns.push_back(calls);
        }
        self.shared.turn.notify_one();
        receivers
    }

    /// End the conversation: the next request gets the last words.
    pub fn finish(&self) {
        lock(&self.shared).finished = true;
        self.shared.turn.notify_one();
    }

    /// Requests the model could not place.
    pub fn stray(&self) -> Vec<String> {
        lock(&self.shared).stray.clone()
    }
}

/// The name the CLI declared for the fake server's tool `tool` (it may prefix
/// it with the server's name).
pub fn declared_name<'a>(declared: &'a [String], tool: &str) -> Option<&'a str> {
    declared
        .iter()
        .map(String::as_str)
        .find(|d| *d == tool || d.ends_with(&format!("_{tool}")))
}

fn function_declarations(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
        .flatten()
        .filter_map(|f| f.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The `functionResponse` parts of the conversation's last message.
fn function_responses(body: &Value) -> Vec<Value> {
    body.get("contents")
        .and_then(Value::as_array)
        .and_then(|c| c.last())
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("functionResponse").cloned())
        .collect()
}

/// What a `functionResponse` says of its call: worked, or the error the CLI
/// would show the model.
fn judged(response: &Value) -> (bool, Option<String>) {
    let r = response.get("response").unwrap_or(&Value::Null);
    match r.get("error") {
        Some(e) => {
            let text = e
                .as_str()
                .map(str::to_string)
                .or_else(|| e.get("message").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_else(|| e.to_string());
            (false, Some(text))
        }
        None => (true, None),
    }
}

/// Whether a request is one of the conversation (it declares tools and asks
/// for no JSON answer), not a side request of the CLI.
fn in_conversation(body: &Value) -> bool {
    let json_mode = body
        .pointer("/generationConfig/responseMimeType")
        .and_then(Value::as_str)
        .is_some_and(|m| m.contains("json"))
        || body.pointer("/generationConfig/responseSchema").is_some()
        || body
            .pointer("/generationConfig/responseJsonSchema")
            .is_some();
    !json_mode && !function_declarations(body).is_empty()
}

fn candidate(parts: Vec<Value>) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "mcpatch-fake-model",
    })
}

/// A neutral answer to a side request: JSON that the CLI's checks read as
/// "nothing to do" (the user speaks next, no loop, the simple model).
fn side_answer() -> Value {
    let text = json!({
        "reasoning": "mcpatch verify",
        "next_speaker": "user",
        "is_loop": false,
        "model_choice": "flash",
        "complexity_reasoning": "mcpatch verify",
        "complexity_score": 1,
    });
    candidate(vec![json!({"text": text.to_string()})])
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let body = match axum::body::to_bytes(request.into_body(), MAX_REQUEST_BYTES).await {
        Ok(b) => b,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "too large").into_response(),
    };
    if path.ends_with(":countTokens") {
        return axum::Json(json!({"totalTokens": 10})).into_response();
    }
    let stream = path.ends_with(":streamGenerateContent");
    if method != axum::http::Method::POST || !(stream || path.ends_with(":generateContent")) {
        lock(&shared).stray.push(format!("{method} {path}"));
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": {"code": 404, "message": "mcpatch fake model: not here"}})),
        )
            .into_response();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let out = if in_conversation(&body) {
        converse(&shared, &body).await
    } else {
        side_answer()
    };
    respond(out, stream)
}

fn respond(out: Value, stream: bool) -> Response {
    if stream {
        let event = format!("data: {out}\r\n\r\n");
        (
            [(header::CONTENT_TYPE, "text/event-stream")],
            Bytes::from(event),
        )
            .into_response()
    } else {
        axum::Json(out).into_response()
    }
}

/// One request of the conversation: settle the calls it answers, then wait
/// for the plan's next turn (or its end).
async fn converse(shared: &Shared, body: &Value) -> Value {
    {
        let mut c = lock(shared);
        if c.declared.is_none() {
            c.declared = Some(function_declarations(body));
            shared.declared.notify_waiters();
        }
        let responses = function_responses(body);
        for (i, response) in responses.iter().enumerate() {
            let id = response.get("id").and_then(Value::as_str);
            // By id when the CLI kept it, else by order within the turn.
            let at = id
                .and_then(|id| c.asked.iter().position(|(a, _, _)| a == id))
                .or_else(|| (i < c.asked.len()).then_some(0));
            let Some(at) = at else { continue };
            let (_, when, slot) = c.asked.remove(at);
            let (ok, error) = judged(response);
            let _ = slot.send(Answer {
                ok,
                error,
                ms: when.elapsed().as_millis() as u64,
            });
        }
    }
    let declared = lock(shared).declared.clone().unwrap_or_default();
    let until = tokio::time::Instant::now() + TURN_WAIT;
    loop {
        let notified = shared.turn.notified();
        {
            let mut c = lock(shared);
            if let Some(turn) = c.turns.pop_front() {
                let now = Instant::now();
                let mut parts = Vec::with_capacity(turn.len());
                for call in turn {
                    let name = declared_name(&declared, &call.tool).unwrap_or(&call.tool);
                    parts.push(
                        json!({"functionCall": {"id": call.id, "name": name, "args": call.args}}),
                    );
                    if let Some(slot) = c.slots.remove(&call.id) {
                        c.asked.push((call.id, now, slot));
                    }
                }
                return candidate(parts);
            }
            if c.finished {
                return candidate(vec![json!({"text": LAST_WORDS})]);
            }
        }
        if tokio::time::timeout_at(until, notified).await.is_err() {
            return candidate(vec![json!({"text": LAST_WORDS})]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_match_with_or_without_the_server_prefix() {
        let declared: Vec<String> = ["read_file", "mcp_fake_echo", "fake__slow", "add"]
            .map(String::from)
            .to_vec();
        assert_eq!(declared_name(&declared, "echo"), Some("mcp_fake_echo"));
        assert_eq!(declared_name(&declared, "slow"), Some("fake__slow"));
        assert_eq!(declared_name(&declared, "add"), Some("add"));
        assert_eq!(declared_name(&declared, "fail"), None);
    }

    #[test]
    fn a_function_response_with_an_error_is_a_failed_call_with_its_text() {
        let ok = json!({"name": "echo", "response": {"output": "x"}});
        assert_eq!(judged(&ok), (true, None));
        let failed =
            json!({"name": "echo", "response": {"error": "MCP tool 'echo' reported tool error"}});
        assert_eq!(
            judged(&failed),
            (false, Some("MCP tool 'echo' reported tool error".into()))
        );
        let nested = json!({"response": {"error": {"message": "boom"}}});
        assert_eq!(judged(&nested), (false, Some("boom".into())));
    }

    #[test]
    fn side_requests_are_told_from_the_conversation() {
        let conv = json!({"tools": [{"functionDeclarations": [{"name": "echo"}]}], "contents": []});
        assert!(in_conversation(&conv));
        let json_mode = json!({"tools": [{"functionDeclarations": [{"name": "echo"}]}],
            "generationConfig": {"responseMimeType": "application/json"}});
        assert!(!in_conversation(&json_mode));
        assert!(!in_conversation(&json!({"contents": []})));
    }
}
