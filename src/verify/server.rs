//! The bundled fake stateful MCP server: Streamable HTTP on 127.0.0.1 over a
//! real HTTP stack (hyper + axum), with sessions it can drop, prune or lose in
//! a restart, and a witness log of every request it saw. Verdicts come from
//! that log, never from what a client claims.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use axum::Router;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::error::{Error, Result};

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Protocol revisions the server speaks, newest first.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const SESSION_HEADER: &str = "mcp-session-id";
const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// How the server answers a request whose session it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostSessionAnswer {
    /// 404 + JSON-RPC -32001 "Session not found" (TypeScript SDK transport).
    NotFoundJsonRpc,
    /// 400 + JSON-RPC -32000 "Bad Request: No valid session ID provided" (TS SDK examples).
    BadRequestNoValidSession,
    /// 404 + text "Not Found: Session not found" (rmcp >= 0.17).
    NotFoundText,
    /// 401 + text "Unauthorized: Session not found" (rmcp < 0.17).
    UnauthorizedText,
    /// 403 + text "Forbidden: session expired" (a gateway in front of the server).
    ForbiddenSessionExpired,
    /// 500 + text "Internal Server Error: session expired" (a framework's unhandled error).
    InternalErrorSessionExpired,
}

/// The server's behaviour, set per scenario.
#[derive(Debug, Clone)]
pub struct ServerBehaviour {
    pub lost_session: LostSessionAnswer,
    /// Prune sessions idle longer than this.
    pub idle_limit: Option<Duration>,
    /// Keep sessions across a restart (persisted store).
    pub persist_sessions: bool,
    /// Reject an initialize that carries a session id, like servers that refuse a duplicate initialize.
    pub strict_initialize: bool,
    /// Answer the optional GET stream with 404 instead of 405, like servers with no GET route.
    pub get_not_found: bool,
}

impl Default for ServerBehaviour {
    fn default() -> Self {
        ServerBehaviour {
            lost_session: LostSessionAnswer::NotFoundJsonRpc,
            idle_limit: None,
            persist_sessions: false,
            strict_initialize: false,
            get_not_found: false,
        }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone, Serialize)]
pub struct WitnessEntry {
    /// Milliseconds since the server started.
    pub t_ms: u64,
    pub http_method: String,
    /// The JSON-RPC method, if the body was a request or notification.
    pub rpc_method: Option<String>,
    /// The `Mcp-Session-Id` the client sent.
    pub session_sent: Option<String>,
    /// The HTTP status answered.
    pub status: u16,
    /// A session id issued by this answer (initialize).
    pub session_issued: Option<String>,
    /// For tools/call: whether the result was a success (not an error of any kind).
    pub call_ok: Option<bool>,
    /// Control events (invalidate, restart) and other notes.
    pub note: Option<String>,
}

struct Session {
    last_seen: Instant,
    protocol_version: String,
}

struct Shared {
    started: Instant,
    behaviour: ServerBehaviour,
    sessions: Mutex<HashMap<String, Session>>,
    witness: Mutex<Vec<WitnessEntry>>,
    /// Session ids the server dropped on purpose (invalidate, prune, restart).
    dropped: Mutex<Vec<String>>,
    counter: AtomicU64,
    restart: tokio::sync::Notify,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn log(&self, entry: WitnessEntry) {
        self.witness.lock().expect("witness lock").push(entry);
    }

    fn note(&self, note: String) {
        self.log(WitnessEntry {
            t_ms: self.now_ms(),
            http_method: "CONTROL".into(),
            rpc_method: None,
            session_sent: None,
            status: 0,
            session_issued: None,
            call_ok: None,
            note: Some(note),
        });
    }

    fn new_session_id(&self) -> String {
        use std::hash::{BuildHasher, Hasher};
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(n);
        h.write_u128(self.started.elapsed().as_nanos());
        format!("{:016x}{:08x}", h.finish(), n)
    }

    /// Drop every live session, remembering their ids.
    fn invalidate_all(&self, why: &str) {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        let ids: Vec<String> = sessions.drain().map(|(id, _)| id).collect();
        drop(sessions);
        self.note(format!("{why}: dropped {} session(s)", ids.len()));
        self.dropped.lock().expect("dropped lock").extend(ids);
    }
}

/// A running fake server; dropping it stops it.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runtime_task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Bind 127.0.0.1:`port` (0: the OS picks) and serve.
    pub async fn start(behaviour: ServerBehaviour, port: u16) -> Result<FakeServer> {
        let bind = SocketAddr::from(([127, 0, 0, 1], port));
        let listener = TcpListener::bind(bind)
            .await
            .map_err(|source| Error::ServerBind {
                addr: bind.to_string(),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::ServerBind {
            addr: bind.to_string(),
            source,
        })?;
        let shared = Arc::new(Shared {
            started: Instant::now(),
            behaviour,
            sessions: Mutex::new(HashMap::new()),
            witness: Mutex::new(Vec::new()),
            dropped: Mutex::new(Vec::new()),
            counter: AtomicU64::new(0),
            restart: tokio::sync::Notify::new(),
        });
        let runtime_task = tokio::spawn(supervise(listener, addr, shared.clone()));
        Ok(FakeServer {
            addr,
            shared,
            runtime_task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Drop every session now.
    pub fn invalidate(&self) {
        self.shared.invalidate_all("invalidate");
    }

    /// Stop and start again on the same port, closing every open connection.
    pub fn restart(&self) {
        self.shared.restart.notify_one();
    }

    /// Everything the server saw so far.
    pub fn witness(&self) -> Vec<WitnessEntry> {
        self.shared.witness.lock().expect("witness lock").clone()
    }

    /// Session ids dropped on purpose.
    pub fn dropped_sessions(&self) -> Vec<String> {
        self.shared.dropped.lock().expect("dropped lock").clone()
    }

    pub fn live_sessions(&self) -> usize {
        self.shared.sessions.lock().expect("sessions lock").len()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.runtime_task.abort();
    }
}

/// Serve until a restart is asked for, then close everything and serve again on the same address.
async fn supervise(first: TcpListener, addr: SocketAddr, shared: Arc<Shared>) {
    let mut listener = Some(first);
    loop {
        let l = match listener.take() {
            Some(l) => l,
            None => {
                let mut bound = None;
                for _ in 0..100 {
                    match TcpListener::bind(addr).await {
                        Ok(l) => {
                            bound = Some(l);
                            break;
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    }
                }
                match bound {
                    Some(l) => l,
                    None => {
                        shared.note(format!("restart: could not bind {addr} again"));
                        return;
                    }
                }
            }
        };
        let mut connections = JoinSet::new();
        let app = router(shared.clone());
        loop {
            tokio::select! {
                accepted = l.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let service = hyper_util::service::TowerToHyperService::new(app.clone());
                    connections.spawn(async move {
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let _ = hyper::server::conn::http1::Builder::new()
                            .keep_alive(true)
                            .serve_connection(io, service)
                            .await;
                    });
                }
                _ = shared.restart.notified() => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        // Down: listener closed, every open connection cut.
        drop(l);
        connections.abort_all();
        while connections.join_next().await.is_some() {}
        if shared.behaviour.persist_sessions {
            shared.note("restart: sessions kept (persisted store)".into());
        } else {
            shared.invalidate_all("restart");
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/mcp", any(mcp))
        .route("/control/invalidate", post(control_invalidate))
        .route("/control/restart", post(control_restart))
        .route("/control/witness", any(control_witness))
        .with_state(shared)
}

async fn control_invalidate(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    shared.invalidate_all("invalidate");
    (StatusCode::OK, "sessions dropped\n")
}

async fn control_restart(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let s = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        s.restart.notify_one();
    });
    (StatusCode::OK, "restarting\n")
}

async fn control_witness(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let w = shared.witness.lock().expect("witness lock").clone();
    axum::Json(w)
}

/// One answer plus what the witness log should record about it.
struct Answer {
    status: StatusCode,
    body: Option<Value>,
    text: Option<&'static str>,
    session_issued: Option<String>,
    rpc_method: Option<String>,
    call_ok: Option<bool>,
    allow: Option<&'static str>,
}

impl Answer {
    fn json(status: StatusCode, body: Value) -> Self {
        Answer {
            status,
            body: Some(body),
            text: None,
            session_issued: None,
            rpc_method: None,
            call_ok: None,
            allow: None,
        }
    }

    fn text(status: StatusCode, text: &'static str) -> Self {
        Answer {
            status,
            body: None,
            text: Some(text),
            session_issued: None,
            rpc_method: None,
            call_ok: None,
            allow: None,
        }
    }

    fn empty(status: StatusCode) -> Self {
        Answer {
            status,
            body: None,
            text: None,
            session_issued: None,
            rpc_method: None,
            call_ok: None,
            allow: None,
        }
    }

    fn method(mut self, m: &str) -> Self {
        self.rpc_method = Some(m.to_string());
        self
    }
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

async fn mcp(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let headers = request.headers().clone();
    let session_sent = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let answer = match method {
        Method::POST => match axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await {
            Ok(bytes) => handle_post(&shared, &headers, session_sent.as_deref(), bytes),
            Err(_) => Answer::json(
                StatusCode::PAYLOAD_TOO_LARGE,
                rpc_error(&Value::Null, -32600, "Request body too large"),
            ),
        },
        Method::DELETE => handle_delete(&shared, session_sent.as_deref()),
        Method::GET if shared.behaviour.get_not_found => {
            Answer::text(StatusCode::NOT_FOUND, "Not Found")
        }
        _ => Answer {
            allow: Some("POST, DELETE"),
            ..Answer::text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
        },
    };
    shared.log(WitnessEntry {
        t_ms: shared.now_ms(),
        http_method: method.to_string(),
        rpc_method: answer.rpc_method.clone(),
        session_sent,
        status: answer.status.as_u16(),
        session_issued: answer.session_issued.clone(),
        call_ok: answer.call_ok,
        note: None,
    });
    let mut response = match (&answer.body, answer.text) {
        (Some(body), _) => (answer.status, axum::Json(body.clone())).into_response(),
        (None, Some(text)) => (answer.status, text).into_response(),
        (None, None) => (answer.status, Body::empty()).into_response(),
    };
    if let Some(id) = &answer.session_issued {
        if let Ok(v) = HeaderValue::from_str(id) {
            response.headers_mut().insert(SESSION_HEADER, v);
        }
    }
    if let Some(allow) = answer.allow {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    response
}

fn handle_delete(shared: &Shared, session: Option<&str>) -> Answer {
    let Some(id) = session else {
        return Answer::text(
            StatusCode::BAD_REQUEST,
            "Bad Request: Mcp-Session-Id header is required",
        );
    };
    match shared.sessions.lock().expect("sessions lock").remove(id) {
        Some(_) => Answer::empty(StatusCode::OK),
        None => lost_session(shared, &Value::Null),
    }
}

fn lost_session(shared: &Shared, id: &Value) -> Answer {
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

fn handle_post(
    shared: &Shared,
    headers: &HeaderMap,
    session: Option<&str>,
    bytes: Bytes,
) -> Answer {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type
        .to_ascii_lowercase()
        .starts_with("application/json")
    {
        return Answer::json(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            rpc_error(
                &Value::Null,
                -32000,
                "Unsupported Media Type: Content-Type must be application/json",
            ),
        );
    }
    if let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) {
        let a = accept.to_ascii_lowercase();
        if !(a.contains("application/json") || a.contains("*/*")) {
            return Answer::json(
                StatusCode::NOT_ACCEPTABLE,
                rpc_error(
                    &Value::Null,
                    -32000,
                    "Not Acceptable: Client must accept application/json",
                ),
            );
        }
    }
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => {
            return Answer::json(
                StatusCode::BAD_REQUEST,
                rpc_error(&Value::Null, -32700, "Parse error"),
            )
        }
    };
    if message.is_array() {
        return Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(
                &Value::Null,
                -32600,
                "Invalid Request: batches are not supported",
            ),
        );
    }
    let Some(obj) = message.as_object() else {
        return Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(&Value::Null, -32600, "Invalid Request"),
        );
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(
                obj.get("id").unwrap_or(&Value::Null),
                -32600,
                "Invalid Request: jsonrpc must be \"2.0\"",
            ),
        );
    }
    let id = obj.get("id").cloned();
    let Some(rpc_method) = obj
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        // A response to a server request, or something malformed.
        if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) {
            return Answer::empty(StatusCode::ACCEPTED);
        }
        return Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(&Value::Null, -32600, "Invalid Request"),
        );
    };
    if let Some(id) = &id {
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            return Answer::json(
                StatusCode::BAD_REQUEST,
                rpc_error(
                    &Value::Null,
                    -32600,
                    "Invalid Request: id must be a string or an integer",
                ),
            )
            .method(&rpc_method);
        }
    }
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    if rpc_method == "initialize" {
        return initialize(shared, session, id.as_ref(), &params).method(&rpc_method);
    }
    // Everything else needs a live session.
    let Some(session) = session else {
        return Answer::json(
            StatusCode::BAD_REQUEST,
            rpc_error(
                &Value::Null,
                -32000,
                "Bad Request: Mcp-Session-Id header is required",
            ),
        )
        .method(&rpc_method);
    };
    let id_or_null = id.clone().unwrap_or(Value::Null);
    {
        let mut sessions = shared.sessions.lock().expect("sessions lock");
        if let Some(limit) = shared.behaviour.idle_limit {
            let now = Instant::now();
            let stale: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| now.duration_since(s.last_seen) > limit)
                .map(|(k, _)| k.clone())
                .collect();
            for k in &stale {
                sessions.remove(k);
            }
            if !stale.is_empty() {
                drop(sessions);
                shared.note(format!("idle timeout: pruned {} session(s)", stale.len()));
                shared.dropped.lock().expect("dropped lock").extend(stale);
                sessions = shared.sessions.lock().expect("sessions lock");
            }
        }
        match sessions.get_mut(session) {
            Some(s) => {
                s.last_seen = Instant::now();
                if let Some(v) = headers.get(PROTOCOL_HEADER).and_then(|v| v.to_str().ok()) {
                    if !PROTOCOL_VERSIONS.contains(&v) || v != s.protocol_version {
                        return Answer::json(
                            StatusCode::BAD_REQUEST,
                            rpc_error(
                                &id_or_null,
                                -32000,
                                "Bad Request: Unsupported protocol version",
                            ),
                        )
                        .method(&rpc_method);
                    }
                }
            }
            None => return lost_session(shared, &id_or_null).method(&rpc_method),
        }
    }
    let Some(id) = id else {
        // A notification.
        return Answer::empty(StatusCode::ACCEPTED).method(&rpc_method);
    };
    let answer = match rpc_method.as_str() {
        "ping" => Answer::json(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        ),
        "tools/list" => Answer::json(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tool_list()}}),
        ),
        "tools/call" => call_tool(&id, &params),
        _ => Answer::json(StatusCode::OK, rpc_error(&id, -32601, "Method not found")),
    };
    answer.method(&rpc_method)
}

fn initialize(
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
    if let Some(sent) = session {
        if shared.behaviour.strict_initialize {
            return Answer::json(
                StatusCode::BAD_REQUEST,
                rpc_error(id, -32600, "duplicate \"initialize\" received"),
            );
        }
        if !shared
            .sessions
            .lock()
            .expect("sessions lock")
            .contains_key(sent)
        {
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
    shared.sessions.lock().expect("sessions lock").insert(
        session_id.clone(),
        Session {
            last_seen: Instant::now(),
            protocol_version: version.to_string(),
        },
    );
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

fn tool_list() -> Value {
    json!([
        {"name": "echo", "description": "Returns its text.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        {"name": "add", "description": "Adds two numbers.",
         "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
        {"name": "fail", "description": "Fails the way its kind says: http500, http400, jsonrpc, tool.",
         "inputSchema": {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]}}
    ])
}

/// Server words of the ordinary (non-session) errors.
pub const ORDINARY_ERROR_WORDS: &[(&str, &str)] = &[
    ("http500", "Internal Server Error"),
    ("http400", "Invalid params"),
    ("jsonrpc", "SSL SYSCALL error: EOF detected"),
    ("tool", "database connection lost"),
];

fn call_tool(id: &Value, params: &Value) -> Answer {
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
    match name {
        "echo" => ok(args
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()),
        "add" => match (
            args.get("a").and_then(Value::as_f64),
            args.get("b").and_then(Value::as_f64),
        ) {
            (Some(a), Some(b)) => ok(format!("{}", a + b)),
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
            "jsonrpc" => failed(Answer::json(
                StatusCode::OK,
                rpc_error(id, -32603, "SSL SYSCALL error: EOF detected"),
            )),
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
