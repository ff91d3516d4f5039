//! The GET stream the fake server keeps for a session (`get_stream`, the
//! `get-stream-loss` scenario): answered 200 `text/event-stream` with one
//! event carrying an id (so every SDK release may resume it), held open while
//! the session lives, and cut (the connection closed mid-stream, as a server
//! that dies or forgets the session does) once the session is gone, so the
//! client's reconnect meets the loss with no call made. Kept apart from
//! answers.rs, which only routes a GET here.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use tokio::sync::mpsc;

use super::behaviour::WitnessEntry;
use super::sessions::{lock, Shared};
use super::SESSION_HEADER;

/// How often an open stream looks whether its session is still held.
const WATCH_EVERY: Duration = Duration::from_millis(20);
/// The note of the witness entry of a stream cut because its session is gone.
pub const STREAM_CUT_NOTE: &str = "get stream cut: its session is gone";
/// The one event a stream sends when it opens: an id to resume from, and a
/// log notification every client ignores unless it asked for logs.
const OPENING_EVENT: &str = "id: open-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"stream open\"}}\n\n";

/// Answer a GET on `/mcp` that arrived at `arrived` ms carrying `session`: a
/// held stream (logged here), or `None` for a GET without a session id or
/// with one the server does not hold (the caller answers and logs it).
pub(super) fn open(
    shared: &std::sync::Arc<Shared>,
    arrived: u64,
    session: Option<&str>,
) -> Option<Response> {
    let id = session?;
    if !lock(&shared.sessions).contains_key(id) {
        return None;
    }
    shared.log(WitnessEntry {
        seq: 0,
        t_ms: arrived,
        answered_ms: shared.now_ms(),
        http_method: "GET".into(),
        rpc_method: None,
        session_sent: Some(id.to_string()),
        status: 200,
        session_issued: None,
        call_id: None,
        executed: None,
        call_ok: None,
        note: Some("get stream opened".into()),
        initialize: None,
    });
    let (tx, rx) = mpsc::channel(2);
    let _ = tx.try_send(Ok(Bytes::from_static(OPENING_EVENT.as_bytes())));
    let watcher = shared.clone();
    let id = id.to_string();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                // The client went away (or a restart closed the connection).
                _ = tx.closed() => return,
                _ = tokio::time::sleep(WATCH_EVERY) => {}
            }
            if !lock(&watcher.sessions).contains_key(&id) {
                watcher.note(format!("{STREAM_CUT_NOTE} ({id})"));
                let _ = tx
                    .send(Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the session of this stream is gone",
                    )))
                    .await;
                return;
            }
        }
    });
    let mut response = (StatusCode::OK, Body::new(Events { rx })).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(session.unwrap_or_default()) {
        headers.insert(SESSION_HEADER, v);
    }
    Some(response)
}

/// The body of a held stream: what the watcher sends; an error ends the
/// response without its last chunk, so the client sees the connection cut.
struct Events {
    rx: mpsc::Receiver<Result<Bytes, io::Error>>,
}

impl http_body::Body for Events {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.rx
            .poll_recv(cx)
            .map(|next| next.map(|r| r.map(Frame::data)))
    }
}
