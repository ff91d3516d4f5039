//! The fake server's answers on `/mcp`: a POST validated and dispatched
//! (initialize, tools/list, tools/call, notifications), a GET's stream, a
//! DELETE, and the answers to a session it does not know, in each of the
//! shapes real servers give them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::behaviour::{InitializeParams, LostSessionAnswer, WitnessEntry};
use super::renewal;
use super::sessions::{lock, HeldFate, Session, Shared};
use super::{
    GET_HOLD_LIMIT, HOLD_LIMIT, MAX_BODY_BYTES, MAX_SLOW_MS, PROTOCOL_HEADER, PROTOCOL_VERSIONS,
    SESSION_HEADER,
};

/// One answer plus what the witness log should record about it.
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) body: Option<Value>,
    pub(super) text: Option<&'static str>,
    pub(super) session_issued: Option<String>,
    pub(super) rpc_method: Option<String>,
    pub(super) call_id: Option<String>,
    pub(super) executed: Option<bool>,
    pub(super) call_ok: Option<bool>,
    pub(super) allow: Option<&'static str>,
    /// A `WWW-Authenticate` header, as a bearer-token server sends with a 401.
    pub(super) www_authenticate: Option<&'static str>,
    /// For initialize: its params, as the witness records them.
    pub(super) initialize: Option<InitializeParams>,
    /// Sent as an SSE stream that announces a changed tool list first (late.rs).
    pub(super) announce: Option<String>,
}

impl Answer {
    pub(super) fn json(status: StatusCode, body: Value) -> Self {
        Answer {
            status,
            body: Some(body),
            text: None,
            session_issued: None,
            rpc_method: None,
            call_id: None,
            executed: None,
            call_ok: None,
            allow: None,
            www_authenticate: None,
            initialize: None,
            announce: None,
        }
    }

    pub(super) fn text(status: StatusCode, text: &'static str) -> Self {
        Answer {
            body: None,
            text: Some(text),
            ..Answer::json(status, Value::Null)
        }
    }

    pub(super) fn empty(status: StatusCode) -> Self {
        Answer {
            body: None,
            ..Answer::json(status, Value::Null)
        }
    }

    pub(super) fn method(mut self, m: &str) -> Self {
        self.rpc_method = Some(m.to_string());
        self
    }
}

pub(super) fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// What a POST asks for once it has been validated.
pub(super) enum Dispatch {
    /// Answered already.
    Done(Answer),
    /// Refused, but only once the new session is up (renewal.rs).
    Late(Answer),
    /// A tools/call on a live session: run it (it may be held, slow or cut).
    Call {
        id: Value,
        params: Value,
        session: String,
    },
}

pub(super) async fn mcp(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let arrived = shared.now_ms();
    let method = request.method().clone();
    let headers = request.headers().clone();
    let session_sent = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let answer = match method {
        Method::POST => {
            let body = tokio::time::timeout(
                shared.limits.body_read_timeout,
                axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES),
            )
            .await;
            match body {
                Ok(Ok(bytes)) => {
                    match handle_post(&shared, &headers, session_sent.as_deref(), bytes) {
                        Dispatch::Done(a) => {
                            let after_loss = !lock(&shared.dropped).order.is_empty();
                            let reinit = a.session_issued.is_some() && after_loss;
                            if let (true, Some(delay)) = (reinit, shared.behaviour.reinit_delay) {
                                tokio::time::sleep(delay).await;
                            }
                            let relist = after_loss
                                && a.status == StatusCode::OK
                                && a.rpc_method.as_deref() == Some("tools/list");
                            if let (true, Some(delay)) = (relist, shared.behaviour.relist_delay) {
                                tokio::time::sleep(delay).await;
                            }
                            let refusal = super::late::refusal_delay(
                                &shared.behaviour,
                                a.status,
                                a.rpc_method.as_deref(),
                            );
                            if !refusal.is_zero() {
                                tokio::time::sleep(refusal).await;
                            }
                            a
                        }
                        Dispatch::Late(a) => {
                            renewal::until_renewed(&shared, renewal::HOLD_LIMIT).await;
                            a
                        }
                        Dispatch::Call {
                            id,
                            params,
                            session,
                        } => {
                            let unanswered = Unanswered::watch(&shared, call_id_of(&params));
                            let answer = call_tool(&shared, &id, &params, &session).await;
                            unanswered.answered();
                            answer
                        }
                    }
                }
                Ok(Err(_)) => Answer::json(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    rpc_error(&Value::Null, -32600, "Request body too large"),
                ),
                Err(_) => Answer::json(
                    StatusCode::REQUEST_TIMEOUT,
                    rpc_error(&Value::Null, -32600, "Request body not received in time"),
                ),
            }
        }
        Method::DELETE => handle_delete(&shared, session_sent.as_deref()),
        Method::GET if shared.behaviour.get_stream => {
            match super::get_stream::open(&shared, arrived, session_sent.as_deref()) {
                Some(stream) => return stream,
                // No session id, or one the server does not hold: refused as a POST would be.
                None if session_sent.is_none() => Answer::text(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: Mcp-Session-Id header is required",
                ),
                None => lost_session(&shared, &Value::Null),
            }
        }
        Method::GET if shared.behaviour.get_not_found => {
            wait_until_called(&shared, session_sent.as_deref()).await;
            Answer::text(StatusCode::NOT_FOUND, "Not Found")
        }
        _ => Answer {
            allow: Some("POST, DELETE"),
            ..Answer::text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
        },
    };
    shared.log(WitnessEntry {
        seq: 0,
        t_ms: arrived,
        answered_ms: shared.now_ms(),
        http_method: method.to_string(),
        rpc_method: answer.rpc_method.clone(),
        session_sent,
        status: answer.status.as_u16(),
        session_issued: answer.session_issued.clone(),
        call_id: answer.call_id.clone(),
        executed: answer.executed,
        call_ok: answer.call_ok,
        note: None,
        initialize: answer.initialize.clone(),
    });
    let mut response = match (&answer.body, answer.text) {
        (Some(body), _) if answer.announce.is_some() => {
            super::late::announcing(&shared, answer.announce.as_deref().unwrap_or(""), body)
        }
        (Some(body), _) => (answer.status, axum::Json(body.clone())).into_response(),
        (None, Some(text)) => (answer.status, text).into_response(),
        (None, None) => (answer.status, Body::empty()).into_response(),
    };
    if let Some(id) = &answer.session_issued {
        if let Ok(v) = HeaderValue::from_str(id) {
            response.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    if let Some(challenge) = answer.www_authenticate {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
    }
    if let Some(allow) = answer.allow {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    response
}

/// Hold a GET until its session has sent its first tool call (or is gone), bounded.
/// A call proves the client finished connecting: an answer that came while it was
/// still listing tools could reach it before it counts errors as a lost session.
pub(super) async fn wait_until_called(shared: &Shared, session: Option<&str>) {
    let Some(id) = session else { return };
    let deadline = tokio::time::Instant::now() + GET_HOLD_LIMIT;
    loop {
        let notified = shared.called.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let ready = lock(&shared.sessions).get(id).is_none_or(|s| s.called);
        if ready || tokio::time::timeout_at(deadline, notified).await.is_err() {
            return;
        }
    }
}

pub(super) fn handle_delete(shared: &Shared, session: Option<&str>) -> Answer {
    let Some(id) = session else {
        return Answer::text(
            StatusCode::BAD_REQUEST,
            "Bad Request: Mcp-Session-Id header is required",
        );
    };
    match lock(&shared.sessions).remove(id) {
        Some(_) => Answer::empty(StatusCode::OK),
        None => lost_session(shared, &Value::Null),
    }
}

pub(super) fn lost_session(shared: &Shared, id: &Value) -> Answer {
    match shared.behaviour.lost_session {
        LostSessionAnswer::NotFoundJsonRpc => Answer::json(
            StatusCode::NOT_FOUND,
            rpc_error(id, -32001, "Session not found"),
        ),
        LostSessionAnswer::BadRequestNoValidSession => Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(
                &Value::Null,
                -32000,
                "Bad Request: No valid session ID provided",
            ),
        ),
        LostSessionAnswer::NotFoundText => {
            Answer::text(StatusCode::NOT_FOUND, "Not Found: Session not found")
        }
        LostSessionAnswer::NotFoundPlain => Answer::text(StatusCode::NOT_FOUND, "Not Found"),
        LostSessionAnswer::UnauthorizedText => {
            Answer::text(StatusCode::UNAUTHORIZED, "Unauthorized: Session not found")
        }
        LostSessionAnswer::ForbiddenSessionExpired => {
            Answer::text(StatusCode::FORBIDDEN, "Forbidden: session expired")
        }
        LostSessionAnswer::InternalErrorSessionExpired => Answer::text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal Server Error: session expired",
        ),
    }
}

/// Notes a tool call whose request ended before the server answered it: the
/// client closed it (a caller that gave up), or a restart cut it. Only its
/// drop can tell: the server drops a request's handling when its connection
/// closes.
struct Unanswered {
    shared: Arc<Shared>,
    call_id: Option<String>,
}

/// The prefix of the note [`Unanswered`] writes.
pub const UNANSWERED_NOTE: &str = "unanswered: the request of call";

impl Unanswered {
    fn watch(shared: &Arc<Shared>, call_id: Option<String>) -> Self {
        Unanswered {
            shared: shared.clone(),
            call_id,
        }
    }

    /// The server has its answer: nothing to note.
    fn answered(mut self) {
        self.call_id = None;
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(id) = self.call_id.take() {
            self.shared.note(format!(
                "{UNANSWERED_NOTE} {id} ended before its answer (its connection closed)"
            ));
        }
    }
}

/// The `call_id` argument of a tools/call, if the caller sent one.
pub(super) fn call_id_of(params: &Value) -> Option<String> {
    params
        .get("arguments")
        .and_then(|a| a.get("call_id"))
        .and_then(Value::as_str)
        .map(|s| s.chars().take(128).collect())
}

/// Validate a POST; answer everything but tools/call on a live session.
pub(super) fn handle_post(
    shared: &Shared,
    headers: &HeaderMap,
    session: Option<&str>,
    bytes: Bytes,
) -> Dispatch {
    let done = Dispatch::Done;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        return done(Answer::json(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            rpc_error(
                &Value::Null,
                -32000,
                "Unsupported Media Type: Content-Type must be application/json",
            ),
        ));
    }
    if let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) {
        let a = accept.to_ascii_lowercase();
        if !(a.contains("application/json") || a.contains("*/*")) {
            return done(Answer::json(
                StatusCode::NOT_ACCEPTABLE,
                rpc_error(
                    &Value::Null,
                    -32000,
                    "Not Acceptable: Client must accept application/json",
                ),
            ));
        }
    }
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => {
            return done(Answer::json(
                StatusCode::BAD_REQUEST,
                rpc_error(&Value::Null, -32700, "Parse error"),
            ))
        }
    };
    if message.is_array() {
        return done(Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(
                &Value::Null,
                -32600,
                "Invalid Request: batches are not supported",
            ),
        ));
    }
    let Some(obj) = message.as_object() else {
        return done(Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(&Value::Null, -32600, "Invalid Request"),
        ));
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return done(Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(
                obj.get("id").unwrap_or(&Value::Null),
                -32600,
                "Invalid Request: jsonrpc must be \"2.0\"",
            ),
        ));
    }
    let id = obj.get("id").cloned();
    let Some(rpc_method) = obj
        .get("method")
        .and_then(Value::as_str)
        .map(|m| m.chars().take(128).collect::<String>())
    else {
        // A response to a server request, or something malformed.
        if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
            return done(Answer::empty(StatusCode::ACCEPTED));
        }
        return done(Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(&Value::Null, -32600, "Invalid Request"),
        ));
    };
    if let Some(id) = &id {
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            return done(
                Answer::json(
                    StatusCode::BAD_REQUEST,
                    rpc_error(
                        &Value::Null,
                        -32600,
                        "Invalid Request: id must be a string or an integer",
                    ),
                )
                .method(&rpc_method),
            );
        }
    }
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    if rpc_method == "initialize" {
        let mut answer = initialize(shared, session, id.as_ref(), &params).method(&rpc_method);
        answer.initialize = Some(InitializeParams::of(&params));
        return done(answer);
    }
    let call_id = (rpc_method == "tools/call")
        .then(|| call_id_of(&params))
        .flatten();
    if rpc_method == "tools/call" {
        shared.count_call(call_id.as_deref(), false);
    }
    let with_call = |mut a: Answer| {
        if rpc_method == "tools/call" {
            a.call_id = call_id.clone();
            a.executed = Some(false);
            a.call_ok = Some(false);
        }
        a.method(&rpc_method)
    };
    // Everything else needs a live session.
    let Some(session) = session else {
        if renewal::applies(shared) {
            return Dispatch::Late(with_call(sessionless_refusal()));
        }
        return done(with_call(Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(
                &Value::Null,
                -32000,
                "Bad Request: Mcp-Session-Id header is required",
            ),
        )));
    };
    let id_or_null = id.clone().unwrap_or(Value::Null);
    {
        let mut sessions = lock(&shared.sessions);
        if let Some(limit) = shared.behaviour.idle_limit {
            let now = Instant::now();
            let stale: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| now.duration_since(s.last_seen) > limit)
                .filter(|(_, s)| s.called || !shared.behaviour.idle_only_after_a_call)
                .map(|(k, _)| k.clone())
                .collect();
            for k in &stale {
                sessions.remove(k);
            }
            if !stale.is_empty() {
                // Written before the sessions are unlocked, as in `invalidate_all`.
                shared.note(format!("idle timeout: pruned {} session(s)", stale.len()));
                drop(sessions);
                shared.remember_dropped(stale);
                sessions = lock(&shared.sessions);
            }
        }
        match sessions.get_mut(session) {
            Some(s) => {
                s.last_seen = Instant::now();
                if let Some(v) = headers.get(PROTOCOL_HEADER).and_then(|v| v.to_str().ok()) {
                    if !PROTOCOL_VERSIONS.contains(&v) || v != s.protocol_version {
                        return done(with_call(Answer::json(
                            StatusCode::BAD_REQUEST,
                            rpc_error(
                                &id_or_null,
                                -32000,
                                "Bad Request: Unsupported protocol version",
                            ),
                        )));
                    }
                }
            }
            None => return done(with_call(lost_session(shared, &id_or_null))),
        }
    }
    let Some(id) = id else {
        // A notification.
        return done(Answer::empty(StatusCode::ACCEPTED).method(&rpc_method));
    };
    let answer = match rpc_method.as_str() {
        "ping" => Answer::json(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        ),
        "tools/list" => {
            let mut tools = tool_list();
            if shared.behaviour.tools_name_session {
                super::tool_defs::name_session(&mut tools, session);
            }
            let answer = Answer::json(
                StatusCode::OK,
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": super::late::listed(shared, tools)}}),
            );
            if shared.behaviour.forget_after_list {
                shared.drop_session(session, "forgetful: lost the session after its tool list");
            }
            answer
        }
        "tools/call" if shared.behaviour.forget_after_list => {
            // Listed sessions are gone already: this one was never listed.
            shared.drop_session(
                session,
                "forgetful: lost the session at its first tool call (never listed)",
            );
            with_call(lost_session(shared, &id))
        }
        "tools/call" => {
            if let Some(s) = lock(&shared.sessions).get_mut(session) {
                s.called = true;
            }
            shared.called.notify_waiters();
            return Dispatch::Call {
                id,
                params,
                session: session.to_string(),
            };
        }
        _ => Answer::json(StatusCode::OK, rpc_error(&id, -32601, "Method not found")),
    };
    done(answer.method(&rpc_method))
}

pub(super) fn initialize(
    shared: &Shared,
    session: Option<&str>,
    id: Option<&Value>,
    params: &Value,
) -> Answer {
    let Some(id) = id else {
        return Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(
                &Value::Null,
                -32600,
                "Invalid Request: initialize must be a request",
            ),
        );
    };
    let refused = shared
        .refuse_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let after_loss = !lock(&shared.dropped).order.is_empty();
    if refused || (shared.behaviour.refuse_reinit && after_loss) {
        return Answer::text(StatusCode::SERVICE_UNAVAILABLE, REFUSED_TEXT);
    }
    if shared.behaviour.refuse_first_reinit
        && after_loss
        && !shared.refused_once.swap(true, Ordering::SeqCst)
    {
        return Answer::text(StatusCode::SERVICE_UNAVAILABLE, REFUSED_ONCE_TEXT);
    }
    if let Some(sent) = session {
        if shared.behaviour.strict_initialize {
            return Answer::json(
                StatusCode::BAD_REQUEST,
                rpc_error(id, -32600, "duplicate \"initialize\" received"),
            );
        }
        if !lock(&shared.sessions).contains_key(sent) {
            return lost_session(shared, id);
        }
    }
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if PROTOCOL_VERSIONS.contains(&requested) {
        requested
    } else {
        PROTOCOL_VERSIONS[0]
    };
    let session_id = shared.new_session_id();
    let evicted = {
        let mut sessions = lock(&shared.sessions);
        let evicted = if sessions.len() >= shared.limits.max_sessions.max(1) {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(k, _)| k.clone());
            oldest.inspect(|k| {
                sessions.remove(k);
            })
        } else {
            None
        };
        sessions.insert(
            session_id.clone(),
            Session {
                last_seen: Instant::now(),
                protocol_version: version.to_string(),
                called: false,
            },
        );
        evicted
    };
    if let Some(old) = evicted {
        shared.note("session limit: evicted the least recently used session".into());
        shared.remember_dropped([old]);
    }
    Answer {
        session_issued: Some(session_id),
        ..Answer::json(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "mcpatch-fake-server", "version": env!("CARGO_PKG_VERSION")}
            }}),
        )
    }
}

pub(super) fn tool_list() -> Value {
    let call_id = json!({"type": "string", "description": "an id the caller gives each call, counted by the server"});
    json!([
        {"name": "echo", "description": "Returns its text.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "call_id": call_id}, "required": ["text"]}},
        {"name": "add", "description": "Adds two numbers.",
         "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "call_id": call_id}, "required": ["a", "b"]}},
        {"name": "fail", "description": "Fails the way its kind says: http500, http400, jsonrpc, tool, http401token.",
         "inputSchema": {"type": "object", "properties": {"kind": {"type": "string"}, "call_id": call_id}, "required": ["kind"]}},
        {"name": "slow", "description": "Returns its text after ms milliseconds (at most 10000).",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "ms": {"type": "number"}, "call_id": call_id}, "required": ["ms"]}}
    ])
}

/// The late refusal of a request sent without a session id (renewal.rs),
/// with a JSON-RPC body like the real server's.
fn sessionless_refusal() -> Answer {
    Answer::json(
        StatusCode::BAD_REQUEST,
        rpc_error(&Value::Null, -32000, renewal::SESSIONLESS_WORDS),
    )
}

/// The body of the 503 that refuses the initializes armed by `refuse_next`
/// (it ends with [`super::REFUSED_WORDS`]).
pub(super) const REFUSED_TEXT: &str = "Service Unavailable: the server is shutting down";

/// The body of the 503 that refuses the first new session after a loss.
const REFUSED_ONCE_TEXT: &str =
    "Service Unavailable: session store unavailable, cannot open a session now";

/// The body and the `WWW-Authenticate` header of the 401 that refuses a
/// call's bearer token (`fail` kind `http401token`): words naming no session.
pub const TOKEN_REFUSED_WORDS: &str = "Unauthorized: invalid token";
pub const TOKEN_REFUSED_CHALLENGE: &str =
    "Bearer error=\"invalid_token\", error_description=\"The access token is invalid\"";

/// Words of a 400 that mention a session without meaning the session is lost.
pub const HARMLESS_SESSION_WORDS: &str = "Invalid params: unknown sessionName argument";

/// Server words of the ordinary (non-session) errors.
pub const ORDINARY_ERROR_WORDS: &[(&str, &str)] = &[
    ("http500", "Internal Server Error"),
    ("http400", "Invalid params"),
    ("jsonrpc", "SSL SYSCALL error: EOF detected"),
    ("tool", "database connection lost"),
];

/// Run a tools/call that arrived on a live session: held in a batch when one is
/// armed, answered as a lost session when its batch says so, otherwise run.
pub(super) async fn call_tool(
    shared: &Arc<Shared>,
    id: &Value,
    params: &Value,
    session: &str,
) -> Answer {
    let call_id = call_id_of(params);
    let fate = hold(shared, session).await;
    let mut answer = match fate {
        Some(HeldFate::Lost) => {
            let delay = super::late::lost_delay(&shared.behaviour, params);
            if !delay.is_zero() {
                super::late::answer_late(shared, delay).await;
            }
            let mut a = lost_session(shared, id);
            a.executed = Some(false);
            a.call_ok = Some(false);
            a
        }
        Some(HeldFate::RanBeforeLoss) | None => {
            // A refused token is refused before the tool runs.
            let refused = params.get("name").and_then(Value::as_str) == Some("fail")
                && params.pointer("/arguments/kind").and_then(Value::as_str)
                    == Some("http401token");
            if !refused {
                shared.count_call(call_id.as_deref(), true);
            }
            let a = run_tool(shared, id, params, call_id.as_deref()).await;
            if matches!(fate, Some(HeldFate::RanBeforeLoss)) {
                super::late::hold_ran_before_loss(shared).await;
            }
            a
        }
    };
    if fate.is_none() && super::late::announces(shared, answer.call_ok) {
        answer.announce = Some(session.to_string());
    }
    answer.call_id = call_id;
    answer.executed.get_or_insert(true);
    answer.method("tools/call")
}

/// Wait in the armed batch, if one is armed; the last arrival decides every fate.
pub(super) async fn hold(shared: &Shared, session: &str) -> Option<HeldFate> {
    let rx = {
        let mut held = lock(&shared.held);
        let batch = held.as_mut()?;
        let (tx, rx) = oneshot::channel();
        batch.waiting.push(tx);
        if batch.waiting.len() >= batch.size {
            let batch = held.take().expect("checked above");
            drop(held);
            // The calls that run were running already; the session goes under
            // the rest. Dropped, and the loss written to the witness, before
            // any call learns its fate: a lost answer (and the client's new
            // session after it) logged before the loss would read as a loss
            // the client never recovered from.
            shared.drop_session(session, "concurrent loss");
            let ran = batch.run_first;
            for (i, tx) in batch.waiting.into_iter().enumerate() {
                let fate = if i < ran {
                    HeldFate::RanBeforeLoss
                } else {
                    HeldFate::Lost
                };
                let _ = tx.send(fate);
            }
        }
        rx
    };
    match tokio::time::timeout(HOLD_LIMIT, rx).await {
        Ok(Ok(fate)) => Some(fate),
        _ => {
            // The batch never filled: release everyone to run normally.
            if let Some(batch) = lock(&shared.held).take() {
                shared.note(format!(
                    "hold: only {} of {} call(s) arrived; released",
                    batch.waiting.len(),
                    batch.size
                ));
            }
            None
        }
    }
}

pub(super) async fn run_tool(
    shared: &Shared,
    id: &Value,
    params: &Value,
    call_id: Option<&str>,
) -> Answer {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let ok = |text: String| {
        let mut a = Answer::json(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}], "isError": false}}),
        );
        a.call_ok = Some(true);
        a
    };
    let failed = |mut a: Answer| {
        a.call_ok = Some(false);
        a
    };
    let text = || {
        args.get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match name {
        "echo" => ok(text()),
        "slow" => {
            if shared.behaviour.restart_during_slow_call {
                shared.note(format!(
                    "slow tool started (call {}); restarting under it",
                    call_id.unwrap_or("-")
                ));
                shared.restart.notify_one();
            }
            let ms = args
                .get("ms")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(MAX_SLOW_MS);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            ok(text())
        }
        "add" => match (
            args.get("a").and_then(Value::as_f64),
            args.get("b").and_then(Value::as_f64),
        ) {
            // Words, not a bare number: gemini-cli reads a tool text that parses as JSON as structured content.
            (Some(a), Some(b)) => ok(format!("sum: {}", a + b)),
            _ => failed(Answer::json(
                StatusCode::OK,
                rpc_error(id, -32602, "Invalid params: a and b must be numbers"),
            )),
        },
        "fail" => match args.get("kind").and_then(Value::as_str).unwrap_or("") {
            "http500" => failed(Answer::text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error",
            )),
            "http400" => failed(Answer::json(
                StatusCode::BAD_REQUEST,
                rpc_error(
                    id,
                    -32602,
                    "Invalid params: kind http400 rejected by the server",
                ),
            )),
            // A 400 whose words mention a session harmlessly: an ordinary error, not a lost session.
            "http400session" => failed(Answer::json(
                StatusCode::BAD_REQUEST,
                rpc_error(id, -32602, HARMLESS_SESSION_WORDS),
            )),
            "jsonrpc" => failed(Answer::json(
                StatusCode::OK,
                rpc_error(id, -32603, "SSL SYSCALL error: EOF detected"),
            )),
            // A bearer-token server refusing the token (RFC 6750), the session kept.
            "http401token" => failed(Answer {
                www_authenticate: Some(TOKEN_REFUSED_CHALLENGE),
                executed: Some(false),
                ..Answer::text(StatusCode::UNAUTHORIZED, TOKEN_REFUSED_WORDS)
            }),
            "tool" => failed(Answer::json(
                StatusCode::OK,
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "database connection lost"}], "isError": true}}),
            )),
            _ => failed(Answer::json(
                StatusCode::OK,
                rpc_error(id, -32602, "Invalid params: unknown kind"),
            )),
        },
        _ => failed(Answer::json(
            StatusCode::OK,
            rpc_error(id, -32602, "Invalid params: unknown tool"),
        )),
    }
}
