//! What a scenario sets the fake server to do (its behaviour, its limits) and
//! what the server records of each request (the witness log's entries, each
//! call id's counts): the fake server's public vocabulary.

use std::time::Duration;

use serde::Serialize;

use super::reload::ReloadCycle;

/// How the server answers a request whose session it does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostSessionAnswer {
    /// 404 + JSON-RPC -32001 "Session not found" (TypeScript SDK transport).
    NotFoundJsonRpc,
    /// 400 + JSON-RPC -32000 "Bad Request: No valid session ID provided" (TS SDK examples).
    BadRequestNoValidSession,
    /// 404 + text "Not Found: Session not found" (rmcp >= 0.17).
    NotFoundText,
    /// 404 + text "Not Found", naming no session: a server restarted behind a
    /// router or framework that answers an unknown session with its default 404.
    NotFoundPlain,
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
    /// Answer the optional GET stream with 404 instead of 405, like servers with no GET
    /// route; the answer waits until the session has sent a tool call, so it reaches a
    /// client that is already connected.
    pub get_not_found: bool,
    /// Keep a GET stream open for each live session and cut it once the
    /// session is gone, so a client's reconnect meets the loss (get_stream.rs).
    pub get_stream: bool,
    /// Lose every session at its first use: right after answering its tool
    /// list, or, for a session never listed (a client that renews its session
    /// in its transport and sends the refused call again at once), at its
    /// first tool call, answered as a lost session before the tool runs.
    pub forget_after_list: bool,
    /// Restart (cutting every connection) as soon as the `slow` tool starts running.
    pub restart_during_slow_call: bool,
    /// Answer an initialize this much later once some session was lost, so calls
    /// made while a client replaces its session meet the replacement under way.
    pub reinit_delay: Option<Duration>,
    /// Answer a tools/list this much later once some session was lost, so a client
    /// that sends calls on its new session before the tools are re-listed shows it.
    pub relist_delay: Option<Duration>,
    /// Answer every initialize with 503 once some session was lost, so a client's
    /// reconnect attempts all fail and it gives up.
    pub refuse_reinit: bool,
    /// Answer the first initialize once some session was lost with 503 and
    /// [`REFUSED_ONCE_WORDS`], once; every later initialize is answered as usual,
    /// so a client that tries a new session again on its next call recovers.
    pub refuse_first_reinit: bool,
    /// Once the plan starts it (`/control/reload`), forget every session again
    /// and again, as a server restarted on every save (reload.rs).
    pub reload: Option<ReloadCycle>,
    /// The server stands for an OAuth-protected one: the client under test is
    /// made with an `authProvider` (only drivers whose client can take one run
    /// such a scenario). The server itself checks no token.
    pub oauth: bool,
    /// Once some session was lost, answer a request sent without a session id
    /// 400 "No valid session ID provided" (as the TypeScript SDK's examples do)
    /// only after the new session is up (renewal.rs): a call a client sent
    /// while its new session started gets its refusal late.
    pub late_sessionless_refusal: bool,
    /// Every tool's description names the session it was listed on
    /// (tool_defs.rs), so a host's registered tools show which session's
    /// definitions they are.
    pub tools_name_session: bool,
    /// In a concurrent loss ([`FakeServer::hold_calls`](super::FakeServer::hold_calls)),
    /// answer the calls that ran before the loss, and a held call of the late
    /// tool (`LATE_LOST_TOOL`, late.rs) answered as
    /// lost, only this much later: past a held-back new initialize, so they
    /// reach the client once its new session is up (late.rs).
    pub late_old_answers: Option<Duration>,
    /// A restart cuts every open connection but keeps listening and keeps
    /// the sessions: a connection cut while the server stays up (late.rs).
    pub cut_keeps_listening: bool,
    /// Answer the refused first new session ([`ServerBehaviour::refuse_first_reinit`])
    /// only this much later: past the client's limit per request, so the client
    /// sees its own timeout, never the refusal's words (late.rs).
    pub refusal_delay: Option<Duration>,
    /// Once some session was lost, answer each successful tool call on a
    /// live session that was not held in a batch as an SSE stream whose first
    /// event is `notifications/tools/list_changed` (late.rs): a client still
    /// listening to its new session lists the tools again.
    pub announce_tools_changed: bool,
    /// Once some session was lost, list the tools without
    /// `DROPPED_TOOL` (late.rs), as a server restarted
    /// with a new release that no longer has it (late.rs).
    pub drop_tool_after_loss: bool,
    /// Prune an idle session ([`ServerBehaviour::idle_limit`]) only once it
    /// has sent a tool call: a client still starting up (a CLI that loads,
    /// lists the tools and asks its model first) is not idle yet.
    pub idle_only_after_a_call: bool,
}

impl Default for ServerBehaviour {
    fn default() -> Self {
        ServerBehaviour {
            lost_session: LostSessionAnswer::NotFoundJsonRpc,
            idle_limit: None,
            persist_sessions: false,
            strict_initialize: false,
            get_not_found: false,
            get_stream: false,
            forget_after_list: false,
            restart_during_slow_call: false,
            reinit_delay: None,
            relist_delay: None,
            refuse_reinit: false,
            refuse_first_reinit: false,
            reload: None,
            oauth: false,
            late_sessionless_refusal: false,
            tools_name_session: false,
            late_old_answers: None,
            cut_keeps_listening: false,
            refusal_delay: None,
            announce_tools_changed: false,
            drop_tool_after_loss: false,
            idle_only_after_a_call: false,
        }
    }
}

/// The words of the 503 that refuses the first new session
/// ([`ServerBehaviour::refuse_first_reinit`]): a caller whose call met the
/// refusal must get to see them.
pub const REFUSED_ONCE_WORDS: &str = "session store unavailable, cannot open a session now";

/// The words of the 503 that refuses the initializes an explored run arms
/// ([`FakeServer::refuse_next`](super::FakeServer::refuse_next), `/control/refuse`).
pub const REFUSED_WORDS: &str = "the server is shutting down";

/// Bounds on what the server holds, so no client can grow it without limit.
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// A connection that does not send a whole request head within this is
    /// closed, however its bytes trickle in (this also closes idle keep-alive
    /// connections).
    pub header_read_timeout: Duration,
    /// A request body must arrive within this.
    pub body_read_timeout: Duration,
    /// A connection whose answer cannot be written for this long (the client
    /// stopped reading) is closed.
    pub write_timeout: Duration,
    /// Live sessions; past it the least recently used one is evicted.
    pub max_sessions: usize,
    /// Witness entries kept; the oldest go first.
    pub witness_entries: usize,
    /// Dropped session ids and call ids remembered.
    pub remembered_ids: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 256,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_sessions: 10_000,
            witness_entries: 100_000,
            remembered_ids: 100_000,
        }
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WitnessEntry {
    /// Position in the log since the server started (never reused).
    pub seq: u64,
    /// Milliseconds since the server started, when the request arrived.
    pub t_ms: u64,
    /// Milliseconds since the server started, when it was answered.
    pub answered_ms: u64,
    /// The HTTP method; for a path the server does not serve, the method
    /// and the path (`GET /register`, unrouted.rs).
    pub http_method: String,
    /// The JSON-RPC method, if the body was a request or notification.
    pub rpc_method: Option<String>,
    /// The `Mcp-Session-Id` the client sent.
    pub session_sent: Option<String>,
    /// The HTTP status answered.
    pub status: u16,
    /// A session id issued by this answer (initialize).
    pub session_issued: Option<String>,
    /// For tools/call: the caller's `call_id` argument, if any.
    pub call_id: Option<String>,
    /// For tools/call: whether the tool ran (false when the request was rejected first).
    pub executed: Option<bool>,
    /// For tools/call: whether the result was a success (not an error of any kind).
    pub call_ok: Option<bool>,
    /// Control events (invalidate, restart, prune) and other notes.
    pub note: Option<String>,
    /// For initialize: what its params said, so a rule can compare a new
    /// session's initialize with the client's first.
    pub initialize: Option<InitializeParams>,
}

/// The params of an initialize a rule compares, each as compact JSON (object
/// keys sorted) cut to the witness's text limit: `"absent"` for a field the
/// client left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitializeParams {
    pub protocol_version: String,
    pub capabilities: String,
    pub client_info: String,
}

impl InitializeParams {
    /// The compared fields of an initialize's `params`.
    pub fn of(params: &serde_json::Value) -> Self {
        let field = |name: &str| {
            params
                .get(name)
                .map_or_else(|| "absent".to_string(), |v| v.to_string())
        };
        InitializeParams {
            protocol_version: field("protocolVersion"),
            capabilities: field("capabilities"),
            client_info: field("clientInfo"),
        }
    }
}

/// How often one call id was sent and how often its tool ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CallCount {
    /// tools/call requests carrying this id that reached the server.
    pub sent: u32,
    /// Times the tool ran for it.
    pub ran: u32,
}

impl LostSessionAnswer {
    /// The words of this answer that a caller must get to see.
    pub fn words(self) -> &'static str {
        match self {
            LostSessionAnswer::NotFoundJsonRpc
            | LostSessionAnswer::NotFoundText
            | LostSessionAnswer::UnauthorizedText => "Session not found",
            LostSessionAnswer::BadRequestNoValidSession => "No valid session ID provided",
            LostSessionAnswer::NotFoundPlain => "Not Found",
            LostSessionAnswer::ForbiddenSessionExpired
            | LostSessionAnswer::InternalErrorSessionExpired => "session expired",
        }
    }
}
