//! How the fake server takes connections: loopback only (foreign `Host` and
//! `Origin` refused), bounded, stalled connections closed, restarted on the
//! same address when a plan asks; the routes it serves.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::answers::mcp;
use super::control::{
    control_hold, control_invalidate, control_ready, control_refuse, control_reload,
    control_restart, control_witness, with_control_token,
};
use super::sessions::Shared;

/// Serve until a restart is asked for, then close everything and serve again on the same address.
pub(super) async fn supervise(first: TcpListener, addr: SocketAddr, shared: Arc<Shared>) {
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
        if shared.behaviour.cut_keeps_listening {
            // Every open connection cut; the listener and the sessions stay (late.rs).
            connections.abort_all();
            while connections.join_next().await.is_some() {}
            shared.note(super::late::CUT_NOTE.into());
            shared.generation.fetch_add(1, Ordering::SeqCst);
            listener = Some(l);
            continue;
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
pub(super) struct StallLimited {
    pub(super) stream: TcpStream,
    pub(super) limit: Duration,
    /// Running while a write is waiting.
    pub(super) stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl StallLimited {
    pub(super) fn new(stream: TcpStream, limit: Duration) -> Self {
        StallLimited {
            stream,
            limit,
            stalled: None,
        }
    }

    /// Pass on a write's outcome; a write still waiting fails once it has waited `limit`.
    pub(super) fn bounded<T>(
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

pub(super) fn router(shared: Arc<Shared>) -> Router {
    let control = Router::new()
        .route("/control/invalidate", post(control_invalidate))
        .route("/control/restart", post(control_restart))
        .route("/control/hold", post(control_hold))
        .route("/control/reload", post(control_reload))
        .route("/control/ready", get(control_ready))
        .route("/control/refuse", post(control_refuse))
        .route("/control/witness", get(control_witness))
        // Only on these routes: any other path is a plain 404, as a real
        // server's (an OAuth client's discovery of /.well-known/* included),
        // witnessed (unrouted.rs).
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            with_control_token,
        ));
    Router::new()
        .route("/mcp", any(mcp))
        .merge(control)
        .fallback(super::unrouted::unrouted)
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            loopback_only,
        ))
        .with_state(shared)
}

/// Whether a `Host` header names this machine's loopback (with any port).
pub(super) fn is_loopback_host(host: &str) -> bool {
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
pub(super) fn is_loopback_origin(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    rest.is_some_and(|r| !r.contains('/') && is_loopback_host(r))
}

/// Refuse requests a web page or DNS rebinding could send: a `Host` that is not
/// loopback, or any `Origin` that is not loopback (the MCP spec asks servers to
/// validate Origin).
pub(super) async fn loopback_only(
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
    shared.log_refused(
        request.method().to_string(),
        format!("refused: {what} is not loopback"),
    );
    (
        StatusCode::FORBIDDEN,
        format!("Forbidden: {what} is not loopback\n"),
    )
        .into_response()
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
}
