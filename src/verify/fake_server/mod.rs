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

mod answers;
mod behaviour;
mod control;
mod get_stream;
pub mod late;
mod listen;
pub mod reload;
mod renewal;
mod sessions;
mod tool_defs;
pub mod unrouted;

pub use answers::{
    HARMLESS_SESSION_WORDS, ORDINARY_ERROR_WORDS, TOKEN_REFUSED_WORDS, UNANSWERED_NOTE,
};
pub use behaviour::{
    CallCount, InitializeParams, LostSessionAnswer, ServerBehaviour, ServerLimits, WitnessEntry,
    REFUSED_ONCE_WORDS, REFUSED_WORDS,
};
pub use control::CONTROL_HEADER;
pub use get_stream::STREAM_CUT_NOTE;
pub use tool_defs::listed_session;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::Notify;

use self::control::{new_control_token, start_reloads};
use self::listen::supervise;
use self::sessions::{arm, lock, Remembered, Shared, Witness};
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
/// Longest a GET waits for its session's first tool call (`get_not_found`).
const GET_HOLD_LIMIT: Duration = Duration::from_secs(5);

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
            called: Notify::new(),
            generation: AtomicU64::new(1),
            reloads: Arc::new(AtomicU32::new(0)),
            reload_task: Mutex::new(None),
            control_token,
            refuse_next: AtomicU64::new(0),
            refused_once: AtomicBool::new(false),
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

    /// Refuse the next `n` initializes with 503 ([`REFUSED_WORDS`]), as a
    /// server still starting up would.
    pub fn refuse_next(&self, n: u64) {
        self.shared.refuse_next.store(n.min(100), Ordering::SeqCst);
        self.shared
            .note(format!("refuse: the next {n} initialize(s) get 503"));
    }

    /// Stop and start again on the same port, closing every open connection.
    pub fn restart(&self) {
        self.shared.restart.notify_one();
    }

    /// Start the behaviour's reload cycle (once; without one, nothing happens).
    pub fn start_reloads(&self) {
        start_reloads(&self.shared);
    }

    /// Whether answers announce a changed tool list once a session was lost
    /// ([`ServerBehaviour::announce_tools_changed`]).
    pub fn announces_tools_changed(&self) -> bool {
        self.shared.behaviour.announce_tools_changed
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
