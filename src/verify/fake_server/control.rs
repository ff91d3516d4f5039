//! The fake server's `/control/*` routes, by which a plan makes the server
//! drop sessions, restart, hold or refuse calls, start its reload cycle, or
//! hand over its witness log; each request must carry this run's secret token.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::behaviour::WitnessEntry;
use super::reload;
use super::sessions::{arm, lock, Shared};
use crate::error::{Error, Result};

/// The header value a control request must carry.
pub const CONTROL_HEADER: &str = "Authorization";

/// A fresh secret for one server's control routes: 128 bits from the
/// kernel's random source, in hex.
pub(super) fn new_control_token() -> Result<String> {
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

/// Whether `a` and `b` are equal, in a time that does not depend on where they differ.
pub(super) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Refuse a control request that does not carry this server's token: the
/// loopback address is open to every local user, the token only to this run.
pub(super) async fn with_control_token(
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
    shared.log_refused(
        request.method().to_string(),
        format!(
            "refused: {} without this run's control token",
            crate::output::clean(request.uri().path())
        ),
    );
    (
        StatusCode::FORBIDDEN,
        "Forbidden: the control routes take this run's token (Authorization: Bearer TOKEN)\n",
    )
        .into_response()
}

pub(super) async fn control_invalidate(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    shared.invalidate_all("invalidate");
    (StatusCode::OK, "sessions dropped\n")
}

/// Restart after answering; the answer names the generation to wait for with `/control/ready`.
pub(super) async fn control_restart(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let next = shared.generation.load(Ordering::SeqCst) + 1;
    let s = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        s.restart.notify_one();
    });
    axum::Json(json!({"restarting": true, "generation": next}))
}

#[derive(serde::Deserialize)]
pub(super) struct HoldParams {
    pub(super) size: Option<usize>,
    pub(super) run_first: Option<usize>,
}

pub(super) async fn control_hold(
    State(shared): State<Arc<Shared>>,
    Query(p): Query<HoldParams>,
) -> impl IntoResponse {
    arm(&shared, p.size.unwrap_or(8), p.run_first.unwrap_or(0));
    (StatusCode::OK, "armed\n")
}

#[derive(serde::Deserialize)]
pub(super) struct RefuseParams {
    pub(super) n: Option<u64>,
}

/// Refuse the next `n` initializes with 503, as a server still starting up
/// would (an outage of `n` failed reconnect attempts, for `verify --explore`).
pub(super) async fn control_refuse(
    State(shared): State<Arc<Shared>>,
    Query(p): Query<RefuseParams>,
) -> impl IntoResponse {
    let n = p.n.unwrap_or(1).min(100);
    shared.refuse_next.store(n, Ordering::SeqCst);
    shared.note(format!("refuse: the next {n} initialize(s) get 503"));
    (StatusCode::OK, "armed\n")
}

pub(super) async fn control_ready(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    axum::Json(json!({
        "generation": shared.generation.load(Ordering::SeqCst),
        "reloads": shared.reloads.load(Ordering::SeqCst),
    }))
}

pub(super) async fn control_reload(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    start_reloads(&shared);
    (StatusCode::OK, "reloading\n")
}

/// Start the reload cycle of `shared`'s behaviour, if it has one and it has not started.
pub(super) fn start_reloads(shared: &Arc<Shared>) {
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

/// `GET /control/witness[?since=SEQ]`: what the server's witness log holds
/// (from entry `SEQ` on, for a caller that polls it and keeps what it read).
#[derive(Debug, serde::Deserialize)]
pub(super) struct WitnessSince {
    since: Option<u64>,
}

pub(super) async fn control_witness(
    State(shared): State<Arc<Shared>>,
    Query(from): Query<WitnessSince>,
) -> impl IntoResponse {
    let since = from.since.unwrap_or(0);
    let w: Vec<WitnessEntry> = lock(&shared.witness)
        .entries
        .iter()
        .filter(|e| e.seq >= since)
        .cloned()
        .collect();
    axum::Json(w)
}
