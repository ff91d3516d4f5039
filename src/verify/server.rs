//! The bundled fake stateful MCP server: Streamable HTTP on 127.0.0.1 over a
//! real HTTP stack (hyper + axum), with sessions it can drop, prune, forget or
//! lose in a restart, a count of how often each tool call was sent and run,
//! and a witness log of every request it saw. Verdicts come from that log and
//! those counts, never from what a client claims.
//!
//! It listens on loopback only and refuses foreign `Host` and `Origin`
//! headers, closes connections that stall (a head, a body or an answer that
//! does not move), and everything it keeps is bounded (connections, sessions,
//! the witness log and the client text in it, the remembered ids), so
//! `mcpatch serve` can stay up for days.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, Notify, Semaphore};
use tokio::task::JoinSet;

use super::reload::{self, ReloadCycle};
use crate::error::{Error, Result};

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Protocol revisions the server speaks, newest first.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const SESSION_HEADER: &str = "mcp-session-id";
const PROTOCOL_HEADER: &str = "mcp-protocol-version";
/// Longest text a witness entry keeps of anything a client sent; longer is cut
/// and ends with `…`.
const WITNESS_TEXT_LIMIT: usize = 256;
/// Longest the `slow` tool may be asked to run.
const MAX_SLOW_MS: u64 = 10_000;
/// How long the answers of calls that ran before a concurrent loss are held back,
/// so they reach the client after the session-lost answers of the others.
pub const RAN_BEFORE_LOSS_DELAY: Duration = Duration::from_millis(100);
/// Longest a held call waits for the rest of its batch.
const HOLD_LIMIT: Duration = Duration::from_secs(5);
/// Longest a GET waits for its session's first tool list (`get_not_found`).
const GET_HOLD_LIMIT: Duration = Duration::from_secs(5);

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
    /// route; the answer waits until the session has listed its tools, so it reaches a
    /// client that is already connected.
    pub get_not_found: bool,
    /// Drop every session right after answering its first tool list.
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
    /// Once the plan starts it (`/control/reload`), forget every session again
    /// and again, as a server restarted on every save (reload.rs).
    pub reload: Option<ReloadCycle>,
}

impl Default for ServerBehaviour {
    fn default() -> Self {
        ServerBehaviour {
            lost_session: LostSessionAnswer::NotFoundJsonRpc,
            idle_limit: None,
            persist_sessions: false,
            strict_initialize: false,
            get_not_found: false,
            forget_after_list: false,
            restart_during_slow_call: false,
            reinit_delay: None,
            relist_delay: None,
            refuse_reinit: false,
            reload: None,
        }
    }
}

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
#[derive(Debug, Clone, Serialize)]
pub struct WitnessEntry {
    /// Position in the log since the server started (never reused).
    pub seq: u64,
    /// Milliseconds since the server started, when the request arrived.
    pub t_ms: u64,
    /// Milliseconds since the server started, when it was answered.
    pub answered_ms: u64,
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
}

/// How often one call id was sent and how often its tool ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CallCount {
    /// tools/call requests carrying this id that reached the server.
    pub sent: u32,
    /// Times the tool ran for it.
    pub ran: u32,
}

struct Session {
    last_seen: Instant,
    protocol_version: String,
    listed: bool,
}

/// Every session id the server dropped on purpose, bounded: the oldest are forgotten first.
#[derive(Default)]
struct Remembered {
    order: VecDeque<String>,
    set: HashSet<String>,
}

impl Remembered {
    fn insert(&mut self, id: String, cap: usize) {
        if cap == 0 || !self.set.insert(id.clone()) {
            return;
        }
        self.order.push_back(id);
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}

/// A batch of tool calls held until all have arrived, then split: some run (they were
/// running when the session dropped), the rest are answered as a lost session.
struct HeldBatch {
    size: usize,
    run_first: usize,
    waiting: Vec<oneshot::Sender<HeldFate>>,
}

#[derive(Debug, Clone, Copy)]
enum HeldFate {
    /// Ran before the session dropped; the answer goes out after a delay.
    RanBeforeLoss,
    /// Arrived on a session that is gone: rejected before running.
    Lost,
}

struct Witness {
    entries: VecDeque<WitnessEntry>,
    next_seq: u64,
}

struct Shared {
    started: Instant,
    behaviour: ServerBehaviour,
    limits: ServerLimits,
    sessions: Mutex<HashMap<String, Session>>,
    witness: Mutex<Witness>,
    /// Session ids the server dropped on purpose (invalidate, prune, restart, forget, evict).
    dropped: Mutex<Remembered>,
    calls: Mutex<HashMap<String, CallCount>>,
    held: Mutex<Option<HeldBatch>>,
    counter: AtomicU64,
    restart: Notify,
    /// Some session listed its tools (wakes GETs waiting for that).
    listed: Notify,
    /// Listener generation: 1 at start, +1 after each restart once listening again.
    generation: AtomicU64,
    /// How many times the reload cycle has forgotten every session.
    reloads: Arc<AtomicU32>,
    /// The reload cycle, once started.
    reload_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The secret every `/control/*` request must carry (`Authorization: Bearer
    /// TOKEN`): another local user can reach 127.0.0.1 but not this.
    control_token: String,
    /// Initializes still to refuse with 503 (`/control/refuse`, an explored outage).
    refuse_next: AtomicU64,
}

/// The header value a control request must carry.
pub const CONTROL_HEADER: &str = "Authorization";

/// A fresh secret for one server's control routes: 128 bits from the
/// kernel's random source, in hex.
fn new_control_token() -> Result<String> {
    use std::io::Read;
    let source = std::path::Path::new("/dev/urandom");
    let mut bytes = [0u8; 16];
    std::fs::File::open(source)
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| {
            Error::io(
                "read",
                source,
                e,
                "mcpatch needs the kernel's random source for the fake server's control secret",
            )
        })?;
    Ok(hex::encode(bytes))
}

/// Lock a mutex, carrying on with the data if a holder panicked (the data stays consistent:
/// every critical section here leaves it whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Cut `text` to [`WITNESS_TEXT_LIMIT`] bytes, so a client cannot make one
/// witness entry as large as its request.
fn clip(text: &mut String) {
    if text.len() > WITNESS_TEXT_LIMIT {
        let mut end = WITNESS_TEXT_LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
        // Truncating keeps the allocation: give it back.
        text.shrink_to_fit();
    }
}

impl Shared {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn log(&self, mut entry: WitnessEntry) {
        clip(&mut entry.http_method);
        let texts = [
            &mut entry.rpc_method,
            &mut entry.session_sent,
            &mut entry.session_issued,
            &mut entry.call_id,
            &mut entry.note,
        ];
        for text in texts.into_iter().flatten() {
            clip(text);
        }
        let mut w = lock(&self.witness);
        entry.seq = w.next_seq;
        w.next_seq += 1;
        w.entries.push_back(entry);
        while w.entries.len() > self.limits.witness_entries.max(1) {
            w.entries.pop_front();
        }
    }

    fn note(&self, note: String) {
        let now = self.now_ms();
        self.log(WitnessEntry {
            seq: 0,
            t_ms: now,
            answered_ms: now,
            http_method: "CONTROL".into(),
            rpc_method: None,
            session_sent: None,
            status: 0,
            session_issued: None,
            call_id: None,
            executed: None,
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

    fn remember_dropped(&self, ids: impl IntoIterator<Item = String>) {
        let mut d = lock(&self.dropped);
        for id in ids {
            d.insert(id, self.limits.remembered_ids);
        }
    }

    /// Drop every live session, remembering their ids.
    fn invalidate_all(&self, why: &str) {
        let ids: Vec<String> = lock(&self.sessions).drain().map(|(id, _)| id).collect();
        self.note(format!("{why}: dropped {} session(s)", ids.len()));
        self.remember_dropped(ids);
    }

    fn drop_session(&self, id: &str, why: &str) {
        if lock(&self.sessions).remove(id).is_some() {
            self.note(format!("{why}: dropped 1 session(s)"));
            self.remember_dropped([id.to_string()]);
        }
    }

    fn count_call(&self, call_id: Option<&str>, ran: bool) {
        let Some(id) = call_id else { return };
        let mut calls = lock(&self.calls);
        if !calls.contains_key(id) && calls.len() >= self.limits.remembered_ids {
            return;
        }
        let c = calls.entry(id.to_string()).or_default();
        if ran {
            c.ran += 1;
        } else {
            c.sent += 1;
        }
    }
}

/// A running fake server; dropping it stops it.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runtime_task: tokio::task::JoinHandle<()>,
}

/// A listener on 127.0.0.1:`port` (0: the OS picks), and the address it got.
pub(crate) async fn bind_loopback(port: u16) -> Result<(TcpListener, SocketAddr)> {
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
    Ok((listener, addr))
}

impl FakeServer {
    /// Bind 127.0.0.1:`port` (0: the OS picks) and serve with the default limits.
    pub async fn start(behaviour: ServerBehaviour, port: u16) -> Result<FakeServer> {
        Self::start_with_limits(behaviour, ServerLimits::default(), port).await
    }

    /// Bind 127.0.0.1:`port` (0: the OS picks) and serve within `limits`.
    pub async fn start_with_limits(
        behaviour: ServerBehaviour,
        limits: ServerLimits,
        port: u16,
    ) -> Result<FakeServer> {
        let (listener, addr) = bind_loopback(port).await?;
        let control_token = new_control_token()?;
        let shared = Arc::new(Shared {
            started: Instant::now(),
            behaviour,
            limits,
            sessions: Mutex::new(HashMap::new()),
            witness: Mutex::new(Witness {
                entries: VecDeque::new(),
                next_seq: 0,
            }),
            dropped: Mutex::new(Remembered::default()),
            calls: Mutex::new(HashMap::new()),
            held: Mutex::new(None),
            counter: AtomicU64::new(0),
            restart: Notify::new(),
            listed: Notify::new(),
            generation: AtomicU64::new(1),
            reloads: Arc::new(AtomicU32::new(0)),
            reload_task: Mutex::new(None),
            control_token,
            refuse_next: AtomicU64::new(0),
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

    /// The secret the control routes take (`Authorization: Bearer TOKEN`).
    pub fn control_token(&self) -> &str {
        &self.shared.control_token
    }

    /// Drop every session now.
    pub fn invalidate(&self) {
        self.shared.invalidate_all("invalidate");
    }

    /// Stop and start again on the same port, closing every open connection.
    pub fn restart(&self) {
        self.shared.restart.notify_one();
    }

    /// Start the behaviour's reload cycle (once; without one, nothing happens).
    pub fn start_reloads(&self) {
        start_reloads(&self.shared);
    }

    /// How many times the reload cycle forgets every session in all (0 without one).
    pub fn reloads_planned(&self) -> u32 {
        self.shared.behaviour.reload.map_or(0, |c| c.times)
    }

    /// How long the reload cycle waits between two restarts (zero without one).
    pub fn reload_every(&self) -> Duration {
        self.shared
            .behaviour
            .reload
            .map_or(Duration::ZERO, |c| c.every)
    }

    /// How many times the reload cycle has forgotten every session so far.
    pub fn reloads(&self) -> u32 {
        self.shared.reloads.load(Ordering::SeqCst)
    }

    /// The listener generation: 1 at start, +1 each time a restart is listening again.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// Hold the next `size` tool calls until all have arrived; then the first
    /// `run_first` run (their answers go out a little later) and the session is
    /// dropped under the rest, which are answered as a lost session.
    pub fn hold_calls(&self, size: usize, run_first: usize) {
        arm(&self.shared, size, run_first);
    }

    /// Every entry of the witness log still kept, oldest first.
    pub fn witness(&self) -> Vec<WitnessEntry> {
        lock(&self.shared.witness).entries.iter().cloned().collect()
    }

    /// Witness entries with `seq >= from`, oldest first, without copying the rest.
    pub fn witness_since(&self, from: u64) -> Vec<WitnessEntry> {
        let w = lock(&self.shared.witness);
        let skip = w.entries.partition_point(|e| e.seq < from);
        w.entries.iter().skip(skip).cloned().collect()
    }

    /// Session ids dropped on purpose (the most recent ones, within the limits).
    pub fn dropped_sessions(&self) -> Vec<String> {
        lock(&self.shared.dropped).order.iter().cloned().collect()
    }

    /// How often each call id was sent and run.
    pub fn call_counts(&self) -> HashMap<String, CallCount> {
        lock(&self.shared.calls).clone()
    }

    pub fn live_sessions(&self) -> usize {
        lock(&self.shared.sessions).len()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.shared.reload_task).take() {
            task.abort();
        }
        self.runtime_task.abort();
    }
}

fn arm(shared: &Shared, size: usize, run_first: usize) {
    let size = size.clamp(1, 64);
    *lock(&shared.held) = Some(HeldBatch {
        size,
        run_first: run_first.min(size),
        waiting: Vec::new(),
    });
    shared.note(format!(
        "armed: the next {size} tool call(s) are held; {} run, then the session is lost under the rest",
        run_first.min(size)
    ));
}

/// Serve until a restart is asked for, then close everything and serve again on the same address.
async fn supervise(first: TcpListener, addr: SocketAddr, shared: Arc<Shared>) {
    let mut listener = Some(first);
    let permits = Arc::new(Semaphore::new(shared.limits.max_connections.max(1)));
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
                    Some(l) => {
                        let g = shared.generation.fetch_add(1, Ordering::SeqCst) + 1;
                        shared.note(format!("restart: listening again (generation {g})"));
                        l
                    }
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
            while connections.try_join_next().is_some() {}
            let permit = tokio::select! {
                p = permits.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => return,
                },
                _ = shared.restart.notified() => break,
            };
            let accepted = tokio::select! {
                a = l.accept() => a,
                _ = shared.restart.notified() => break,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of descriptors or a transient error: back off instead of spinning.
                    drop(permit);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            let header_timeout = shared.limits.header_read_timeout;
            let io = StallLimited::new(stream, shared.limits.write_timeout);
            connections.spawn(async move {
                let _permit = permit;
                let io = hyper_util::rt::TokioIo::new(io);
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .keep_alive(true)
                    .serve_connection(io, service)
                    .await;
            });
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

/// A connection that fails once a write has waited `limit` without progress (the
/// client stopped reading its answers), so it cannot hold a connection slot for
/// ever: hyper has no write timeout of its own.
struct StallLimited {
    stream: TcpStream,
    limit: Duration,
    /// Running while a write is waiting.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl StallLimited {
    fn new(stream: TcpStream, limit: Duration) -> Self {
        StallLimited {
            stream,
            limit,
            stalled: None,
        }
    }

    /// Pass on a write's outcome; a write still waiting fails once it has waited `limit`.
    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        outcome: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if outcome.is_ready() {
            self.stalled = None;
            return outcome;
        }
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading its answer",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for StallLimited {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for StallLimited {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.bounded(cx, outcome)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.bounded(cx, outcome)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.stream).poll_flush(cx);
        this.bounded(cx, outcome)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.stream).poll_shutdown(cx);
        this.bounded(cx, outcome)
    }
}

fn router(shared: Arc<Shared>) -> Router {
    let control = Router::new()
        .route("/control/invalidate", post(control_invalidate))
        .route("/control/restart", post(control_restart))
        .route("/control/hold", post(control_hold))
        .route("/control/reload", post(control_reload))
        .route("/control/ready", get(control_ready))
        .route("/control/refuse", post(control_refuse))
        .route("/control/witness", get(control_witness))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            with_control_token,
        ));
    Router::new()
        .route("/mcp", any(mcp))
        .merge(control)
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            loopback_only,
        ))
        .with_state(shared)
}

/// Whether a `Host` header names this machine's loopback (with any port).
fn is_loopback_host(host: &str) -> bool {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((inside, after)) => match after {
                "" => (inside, None),
                _ => match after.strip_prefix(':') {
                    Some(port) => (inside, Some(port)),
                    None => return false,
                },
            },
            None => return false,
        },
        None => match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let bracketed = host.starts_with('[');
    let name_ok = if bracketed {
        name.parse::<std::net::Ipv6Addr>()
            .is_ok_and(|ip| ip.is_loopback())
    } else {
        name.eq_ignore_ascii_case("localhost")
            || name
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    port_ok && name_ok
}

/// Whether an `Origin` header is a loopback origin (`http://localhost:PORT` and the like).
fn is_loopback_origin(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    rest.is_some_and(|r| !r.contains('/') && is_loopback_host(r))
}

/// Refuse requests a web page or DNS rebinding could send: a `Host` that is not
/// loopback, or any `Origin` that is not loopback (the MCP spec asks servers to
/// validate Origin).
async fn loopback_only(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    // The host a request is for: the target's authority when it has one
    // (absolute form), and the Host header. Every one of them must be
    // loopback, whichever a proxy or framework in front would pick.
    let host_headers_ok = headers
        .get_all(header::HOST)
        .iter()
        .all(|v| v.to_str().is_ok_and(is_loopback_host));
    let host_ok = match request.uri().authority() {
        Some(authority) => host_headers_ok && is_loopback_host(authority.as_str()),
        None => host_headers_ok && headers.contains_key(header::HOST),
    };
    let origin_ok = headers
        .get_all(header::ORIGIN)
        .iter()
        .all(|v| v.to_str().is_ok_and(is_loopback_origin));
    if host_ok && origin_ok {
        return next.run(request).await;
    }
    let what = if host_ok { "Origin" } else { "Host" };
    let now = shared.now_ms();
    shared.log(WitnessEntry {
        seq: 0,
        t_ms: now,
        answered_ms: now,
        http_method: request.method().to_string(),
        rpc_method: None,
        session_sent: None,
        status: 403,
        session_issued: None,
        call_id: None,
        executed: None,
        call_ok: None,
        note: Some(format!("refused: {what} is not loopback")),
    });
    (
        StatusCode::FORBIDDEN,
        format!("Forbidden: {what} is not loopback\n"),
    )
        .into_response()
}

/// Whether `a` and `b` are equal, in a time that does not depend on where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Refuse a control request that does not carry this server's token: the
/// loopback address is open to every local user, the token only to this run.
async fn with_control_token(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let expected = format!("Bearer {}", shared.control_token);
    let given = request.headers().get_all(header::AUTHORIZATION);
    let mut values = given.iter();
    let ok = match (values.next(), values.next()) {
        (Some(v), None) => same_secret(v.as_bytes(), expected.as_bytes()),
        _ => false,
    };
    if ok {
        return next.run(request).await;
    }
    let now = shared.now_ms();
    shared.log(WitnessEntry {
        seq: 0,
        t_ms: now,
        answered_ms: now,
        http_method: request.method().to_string(),
        rpc_method: None,
        session_sent: None,
        status: 403,
        session_issued: None,
        call_id: None,
        executed: None,
        call_ok: None,
        note: Some(format!(
            "refused: {} without this run's control token",
            crate::output::clean(request.uri().path())
        )),
    });
    (
        StatusCode::FORBIDDEN,
        "Forbidden: the control routes take this run's token (Authorization: Bearer TOKEN)\n",
    )
        .into_response()
}

async fn control_invalidate(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    shared.invalidate_all("invalidate");
    (StatusCode::OK, "sessions dropped\n")
}

/// Restart after answering; the answer names the generation to wait for with `/control/ready`.
async fn control_restart(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let next = shared.generation.load(Ordering::SeqCst) + 1;
    let s = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        s.restart.notify_one();
    });
    axum::Json(json!({"restarting": true, "generation": next}))
}

#[derive(serde::Deserialize)]
struct HoldParams {
    size: Option<usize>,
    run_first: Option<usize>,
}

async fn control_hold(
    State(shared): State<Arc<Shared>>,
    Query(p): Query<HoldParams>,
) -> impl IntoResponse {
    arm(&shared, p.size.unwrap_or(8), p.run_first.unwrap_or(0));
    (StatusCode::OK, "armed\n")
}

#[derive(serde::Deserialize)]
struct RefuseParams {
    n: Option<u64>,
}

/// Refuse the next `n` initializes with 503, as a server still starting up
/// would (an outage of `n` failed reconnect attempts, for `verify --explore`).
async fn control_refuse(
    State(shared): State<Arc<Shared>>,
    Query(p): Query<RefuseParams>,
) -> impl IntoResponse {
    let n = p.n.unwrap_or(1).min(100);
    shared.refuse_next.store(n, Ordering::SeqCst);
    shared.note(format!("refuse: the next {n} initialize(s) get 503"));
    (StatusCode::OK, "armed\n")
}

async fn control_ready(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    axum::Json(json!({
        "generation": shared.generation.load(Ordering::SeqCst),
        "reloads": shared.reloads.load(Ordering::SeqCst),
    }))
}

async fn control_reload(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    start_reloads(&shared);
    (StatusCode::OK, "reloading\n")
}

/// Start the reload cycle of `shared`'s behaviour, if it has one and it has not started.
fn start_reloads(shared: &Arc<Shared>) {
    let Some(cycle) = shared.behaviour.reload else {
        return;
    };
    let mut task = lock(&shared.reload_task);
    if task.is_some() {
        return;
    }
    let s = shared.clone();
    *task = Some(tokio::spawn(reload::forget_loop(
        cycle,
        shared.reloads.clone(),
        move |n| s.invalidate_all(&format!("{}{n}/{}", reload::NOTE_PREFIX, cycle.times)),
    )));
}

async fn control_witness(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let w: Vec<WitnessEntry> = lock(&shared.witness).entries.iter().cloned().collect();
    axum::Json(w)
}

/// One answer plus what the witness log should record about it.
struct Answer {
    status: StatusCode,
    body: Option<Value>,
    text: Option<&'static str>,
    session_issued: Option<String>,
    rpc_method: Option<String>,
    call_id: Option<String>,
    executed: Option<bool>,
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
            call_id: None,
            executed: None,
            call_ok: None,
            allow: None,
        }
    }

    fn text(status: StatusCode, text: &'static str) -> Self {
        Answer {
            body: None,
            text: Some(text),
            ..Answer::json(status, Value::Null)
        }
    }

    fn empty(status: StatusCode) -> Self {
        Answer {
            body: None,
            ..Answer::json(status, Value::Null)
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

/// What a POST asks for once it has been validated.
enum Dispatch {
    /// Answered already.
    Done(Answer),
    /// A tools/call on a live session: run it (it may be held, slow or cut).
    Call {
        id: Value,
        params: Value,
        session: String,
    },
}

async fn mcp(State(shared): State<Arc<Shared>>, request: Request) -> Response {
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
                            a
                        }
                        Dispatch::Call {
                            id,
                            params,
                            session,
                        } => call_tool(&shared, &id, &params, &session).await,
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
        Method::GET if shared.behaviour.get_not_found => {
            wait_until_listed(&shared, session_sent.as_deref()).await;
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

/// Hold a GET until its session has listed its tools (or is gone), bounded.
async fn wait_until_listed(shared: &Shared, session: Option<&str>) {
    let Some(id) = session else { return };
    let deadline = tokio::time::Instant::now() + GET_HOLD_LIMIT;
    loop {
        let notified = shared.listed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let ready = lock(&shared.sessions).get(id).is_none_or(|s| s.listed);
        if ready || tokio::time::timeout_at(deadline, notified).await.is_err() {
            return;
        }
    }
}

fn handle_delete(shared: &Shared, session: Option<&str>) -> Answer {
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

/// The `call_id` argument of a tools/call, if the caller sent one.
fn call_id_of(params: &Value) -> Option<String> {
    params
        .get("arguments")
        .and_then(|a| a.get("call_id"))
        .and_then(Value::as_str)
        .map(|s| s.chars().take(128).collect())
}

/// Validate a POST; answer everything but tools/call on a live session.
fn handle_post(
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
        return done(initialize(shared, session, id.as_ref(), &params).method(&rpc_method));
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
                .map(|(k, _)| k.clone())
                .collect();
            for k in &stale {
                sessions.remove(k);
            }
            if !stale.is_empty() {
                drop(sessions);
                shared.note(format!("idle timeout: pruned {} session(s)", stale.len()));
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
            let answer = Answer::json(
                StatusCode::OK,
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tool_list()}}),
            );
            if let Some(s) = lock(&shared.sessions).get_mut(session) {
                s.listed = true;
            }
            shared.listed.notify_waiters();
            if shared.behaviour.forget_after_list {
                shared.drop_session(session, "forgetful: lost the session after its tool list");
            }
            answer
        }
        "tools/call" => {
            return Dispatch::Call {
                id,
                params,
                session: session.to_string(),
            }
        }
        _ => Answer::json(StatusCode::OK, rpc_error(&id, -32601, "Method not found")),
    };
    done(answer.method(&rpc_method))
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
    let refused = shared
        .refuse_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if refused || (shared.behaviour.refuse_reinit && !lock(&shared.dropped).order.is_empty()) {
        return Answer::text(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: the server is shutting down",
        );
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
                listed: false,
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

fn tool_list() -> Value {
    let call_id = json!({"type": "string", "description": "an id the caller gives each call, counted by the server"});
    json!([
        {"name": "echo", "description": "Returns its text.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "call_id": call_id}, "required": ["text"]}},
        {"name": "add", "description": "Adds two numbers.",
         "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "call_id": call_id}, "required": ["a", "b"]}},
        {"name": "fail", "description": "Fails the way its kind says: http500, http400, jsonrpc, tool.",
         "inputSchema": {"type": "object", "properties": {"kind": {"type": "string"}, "call_id": call_id}, "required": ["kind"]}},
        {"name": "slow", "description": "Returns its text after ms milliseconds (at most 10000).",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "ms": {"type": "number"}, "call_id": call_id}, "required": ["ms"]}}
    ])
}

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
async fn call_tool(shared: &Arc<Shared>, id: &Value, params: &Value, session: &str) -> Answer {
    let call_id = call_id_of(params);
    let fate = hold(shared, session).await;
    let mut answer = match fate {
        Some(HeldFate::Lost) => {
            let mut a = lost_session(shared, id);
            a.executed = Some(false);
            a.call_ok = Some(false);
            a
        }
        Some(HeldFate::RanBeforeLoss) | None => {
            shared.count_call(call_id.as_deref(), true);
            let a = run_tool(shared, id, params, call_id.as_deref()).await;
            if matches!(fate, Some(HeldFate::RanBeforeLoss)) {
                tokio::time::sleep(RAN_BEFORE_LOSS_DELAY).await;
            }
            a
        }
    };
    answer.call_id = call_id;
    answer.executed.get_or_insert(true);
    answer.method("tools/call")
}

/// Wait in the armed batch, if one is armed; the last arrival decides every fate.
async fn hold(shared: &Shared, session: &str) -> Option<HeldFate> {
    let rx = {
        let mut held = lock(&shared.held);
        let batch = held.as_mut()?;
        let (tx, rx) = oneshot::channel();
        batch.waiting.push(tx);
        if batch.waiting.len() >= batch.size {
            let batch = held.take().expect("checked above");
            drop(held);
            let ran = batch.run_first;
            for (i, tx) in batch.waiting.into_iter().enumerate() {
                let fate = if i < ran {
                    HeldFate::RanBeforeLoss
                } else {
                    HeldFate::Lost
                };
                let _ = tx.send(fate);
            }
            // The calls that run were running already; the session goes under the rest.
            shared.drop_session(session, "concurrent loss");
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

async fn run_tool(shared: &Shared, id: &Value, params: &Value, call_id: Option<&str>) -> Answer {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_accepted_and_others_refused() {
        for ok in [
            "127.0.0.1",
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]",
            "[::1]:443",
            "127.1.2.3:9",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "",
            "example.com",
            "evil.localhost.example.com",
            "localhost.evil.com:80",
            "10.0.0.1:80",
            "127.0.0.1:80x",
            "[::1",
            "[::2]:80",
            "::1",
            "localhost:80:90",
            "0.0.0.0",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn only_loopback_origins_are_accepted() {
        assert!(is_loopback_origin("http://localhost:3000"));
        assert!(is_loopback_origin("http://127.0.0.1"));
        assert!(is_loopback_origin("https://[::1]:8443"));
        assert!(!is_loopback_origin("null"));
        assert!(!is_loopback_origin("http://evil.example"));
        assert!(!is_loopback_origin("http://localhost.evil.example"));
        assert!(!is_loopback_origin("http://localhost:3000/path"));
        assert!(!is_loopback_origin("file://"));
    }

    #[test]
    fn clipped_text_keeps_whole_characters_and_gives_back_its_memory() {
        let mut fits = "x".repeat(WITNESS_TEXT_LIMIT);
        clip(&mut fits);
        assert_eq!(fits, "x".repeat(WITNESS_TEXT_LIMIT));
        // Two-byte characters: the limit falls on a boundary, one byte more does not.
        let mut long = "é".repeat(10_000);
        clip(&mut long);
        assert_eq!(long, format!("{}…", "é".repeat(WITNESS_TEXT_LIMIT / 2)));
        assert!(
            long.capacity() < 2 * WITNESS_TEXT_LIMIT,
            "{}",
            long.capacity()
        );
        let mut odd = format!("x{}", "é".repeat(10_000));
        clip(&mut odd);
        assert_eq!(odd, format!("x{}…", "é".repeat(WITNESS_TEXT_LIMIT / 2 - 1)));
    }

    #[test]
    fn remembered_ids_forget_the_oldest_past_the_cap() {
        let mut r = Remembered::default();
        for i in 0..5 {
            r.insert(i.to_string(), 3);
        }
        assert_eq!(r.order, ["2", "3", "4"]);
        assert!(!r.set.contains("0"));
    }
}
