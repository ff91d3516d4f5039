//! The fake server under hostile clients: foreign `Host` and `Origin` headers,
//! slow and idle connections, floods of sessions and an exhausted descriptor
//! table. What it holds stays bounded and a normal client is still answered.
//!
//! Outcomes are decided by events (a connection closed, an answer arrived,
//! one before the other); the time bounds only stop a broken server from
//! hanging the test, and the one a normal client must be answered within
//! behind idle connections follows from the header timeout.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use mcpatch::verify::fake_server::{FakeServer, ServerBehaviour, ServerLimits};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Limits small enough to reach in a test, with timeouts short enough to wait out.
fn small_limits() -> ServerLimits {
    ServerLimits {
        max_connections: 8,
        header_read_timeout: Duration::from_millis(400),
        body_read_timeout: Duration::from_millis(400),
        write_timeout: Duration::from_millis(400),
        max_sessions: 16,
        witness_entries: 64,
        remembered_ids: 32,
    }
}

/// Small bounds on what the server keeps, with the default timeouts: floods of
/// pipelined requests must never be cut by a timeout on a busy machine.
fn flood_limits() -> ServerLimits {
    let small = small_limits();
    ServerLimits {
        max_sessions: small.max_sessions,
        witness_entries: small.witness_entries,
        remembered_ids: small.remembered_ids,
        ..ServerLimits::default()
    }
}

async fn start(limits: ServerLimits) -> FakeServer {
    FakeServer::start_with_limits(ServerBehaviour::default(), limits, 0)
        .await
        .unwrap()
}

/// The `Authorization` value the server's control routes take.
fn bearer(server: &FakeServer) -> String {
    format!("Bearer {}", server.control_token())
}

/// A normal HTTP client (reqwest), never routed through a proxy.
fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// A normal client that closes each connection after its answer, so it never
/// holds one of the server's connection slots between requests.
fn http_no_keepalive() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

/// Status and body of one request.
async fn answer(request: reqwest::RequestBuilder) -> (u16, String) {
    let r = request.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

fn initialize_message() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "limits", "version": "0"}}})
}

/// A POST of `message` to the MCP endpoint, on `session` if given.
fn mcp_post(
    http: &reqwest::Client,
    server: &FakeServer,
    session: Option<&str>,
    message: &Value,
) -> reqwest::RequestBuilder {
    let mut r = http
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(message.to_string());
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r
}

/// Initialize a session; returns its id.
async fn initialize(http: &reqwest::Client, server: &FakeServer) -> String {
    let r = mcp_post(http, server, None, &initialize_message())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.headers()["mcp-session-id"].to_str().unwrap().to_string()
}

/// tools/list on `session`: status and body.
async fn list_tools(http: &reqwest::Client, server: &FakeServer, session: &str) -> (u16, String) {
    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"});
    answer(mcp_post(http, server, Some(session), &list)).await
}

const LOST_SESSION: &str =
    r#"{"error":{"code":-32001,"message":"Session not found"},"id":8,"jsonrpc":"2.0"}"#;

async fn connect(server: &FakeServer) -> TcpStream {
    TcpStream::connect(server.addr()).await.unwrap()
}

fn is_reset(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe
    )
}

/// Read until the server closes the connection; panics if it is still open after `bound`.
async fn read_to_close(stream: &mut (impl AsyncRead + Unpin + ?Sized), bound: Duration) -> Vec<u8> {
    let mut out = Vec::new();
    let read = tokio::time::timeout(bound, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if is_reset(&e) => break,
                Err(e) => panic!("reading from the server failed: {e}"),
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "the server kept the connection open longer than {bound:?}; it sent: {:?}",
        String::from_utf8_lossy(&out)
    );
    out
}

/// Whether the server has closed `stream` (checked without waiting).
fn closed_by_server(stream: &TcpStream) -> bool {
    let mut buf = [0u8; 1];
    match stream.try_read(&mut buf) {
        Ok(0) => true,
        Ok(_) => panic!("an idle connection received data"),
        Err(e) if e.kind() == ErrorKind::WouldBlock => false,
        Err(e) if is_reset(&e) => true,
        Err(e) => panic!("checking an idle connection failed: {e}"),
    }
}

/// Send `request` (which must ask for `Connection: close` or be HTTP/1.0) and
/// return the whole response with its `date` line removed.
async fn raw_exchange(server: &FakeServer, request: &str) -> String {
    let mut stream = connect(server).await;
    stream.write_all(request.as_bytes()).await.unwrap();
    let response = read_to_close(&mut stream, Duration::from_secs(10)).await;
    without_date(&String::from_utf8_lossy(&response))
}

fn without_date(response: &str) -> String {
    response
        .split_inclusive("\r\n")
        .filter(|line| !line.to_ascii_lowercase().starts_with("date:"))
        .collect()
}

/// A raw response as hyper writes it for a plain-text body, without its `date` line.
fn raw_text_response(version: &str, status: &str, body: &str) -> String {
    format!(
        "{version} {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n{}\r\n{body}",
        body.len(),
        if version == "HTTP/1.1" {
            "connection: close\r\n"
        } else {
            ""
        }
    )
}

/// Every route the server has, with a method it answers and a body for it.
fn routes() -> Vec<(reqwest::Method, &'static str, String)> {
    use reqwest::Method;
    vec![
        (Method::POST, "/mcp", initialize_message().to_string()),
        (Method::GET, "/mcp", String::new()),
        (Method::DELETE, "/mcp", String::new()),
        (Method::POST, "/control/invalidate", String::new()),
        (Method::POST, "/control/restart", String::new()),
        (Method::POST, "/control/hold?size=1", String::new()),
        (Method::GET, "/control/ready", String::new()),
        (Method::GET, "/control/witness", String::new()),
        (Method::GET, "/no/such/route", String::new()),
        (Method::GET, "/control/invalidate", String::new()),
    ]
}

/// Send every route with `header` set to `value`; each must be refused with
/// `refusal`, leave the server's state alone, and be logged in the witness.
async fn assert_every_route_refused(server: &FakeServer, header: &str, value: &str, refusal: &str) {
    let http = http();
    let session = initialize(&http, server).await;
    let live = server.live_sessions();
    let before = server.witness().len();
    for (method, path, body) in routes() {
        let (status, text) = answer(
            http.request(method.clone(), format!("http://{}{path}", server.addr()))
                .header(header, value)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", &session)
                .body(body),
        )
        .await;
        assert_eq!(
            (status, text.as_str()),
            (403, refusal),
            "{method} {path} with {header}: {value}"
        );
    }
    let refusal_note = refusal.trim_end().replace("Forbidden:", "refused:");
    let logged: Vec<(String, u16, Option<String>)> = server.witness()[before..]
        .iter()
        .map(|e| (e.http_method.clone(), e.status, e.note.clone()))
        .collect();
    let expected: Vec<(String, u16, Option<String>)> = routes()
        .into_iter()
        .map(|(m, _, _)| (m.to_string(), 403, Some(refusal_note.clone())))
        .collect();
    assert_eq!(logged, expected, "{header}: {value}");
    // Nothing was run: the session is still live and no restart or hold happened.
    assert_eq!(list_tools(&http, server, &session).await.0, 200);
    assert_eq!(server.live_sessions(), live);
    assert_eq!(server.generation(), 1);
}

#[tokio::test]
async fn foreign_host_headers_are_refused_on_every_route() {
    let server = start(ServerLimits::default()).await;
    let port = server.addr().port();
    for host in [
        "evil.example".to_string(),
        "localhost.evil.example".to_string(),
        // DNS rebinding: a name the attacker controls, resolved to 127.0.0.1.
        format!("attacker.com:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        format!("0.0.0.0:{port}"),
    ] {
        assert_every_route_refused(&server, "host", &host, "Forbidden: Host is not loopback\n")
            .await;
    }
}

#[tokio::test]
async fn a_request_without_a_loopback_host_is_refused_over_raw_http() {
    let server = start(ServerLimits::default()).await;
    let refused = |version| {
        raw_text_response(
            version,
            "403 Forbidden",
            "Forbidden: Host is not loopback\n",
        )
    };
    // HTTP/1.0 needs no Host header: a request without one is not known to be local.
    assert_eq!(
        raw_exchange(&server, "POST /control/invalidate HTTP/1.0\r\n\r\n").await,
        refused("HTTP/1.0")
    );
    // An absolute-form target names the host the request is for; a loopback Host
    // header beside it does not make it local.
    assert_eq!(
        raw_exchange(
            &server,
            "POST http://evil.example/control/invalidate HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .await,
        refused("HTTP/1.1")
    );
    // Two Host headers: refused when either is foreign, whichever comes first.
    for (first, second) in [("127.0.0.1", "evil.example"), ("evil.example", "127.0.0.1")] {
        assert_eq!(
            raw_exchange(
                &server,
                &format!("POST /control/invalidate HTTP/1.1\r\nHost: {first}\r\nHost: {second}\r\nConnection: close\r\n\r\n")
            )
            .await,
            refused("HTTP/1.1")
        );
    }
    let refusals = server
        .witness()
        .iter()
        .filter(|e| e.status == 403 && e.note.as_deref() == Some("refused: Host is not loopback"))
        .count();
    assert_eq!(refusals, 4);
    // A loopback absolute-form target is fine.
    assert_eq!(
        raw_exchange(
            &server,
            &format!(
                "GET http://127.0.0.1:{}/control/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
                server.addr().port(),
                server.control_token()
            )
        )
        .await,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 28\r\nconnection: close\r\n\r\n{\"generation\":1,\"reloads\":0}"
    );
}

#[tokio::test]
async fn loopback_hosts_and_origins_pass() {
    let server = start(ServerLimits::default()).await;
    let port = server.addr().port();
    let http = http();
    let ready = format!("http://{}/control/ready", server.addr());
    for host in [
        "localhost".to_string(),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{port}"),
        format!("127.8.9.10:{port}"),
        "[::1]".to_string(),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = answer(
            http.get(&ready)
                .header("host", &host)
                .header("authorization", bearer(&server)),
        )
        .await;
        assert_eq!(
            (status, body.as_str()),
            (200, r#"{"generation":1,"reloads":0}"#),
            "{host}"
        );
    }
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        "http://localhost:5173".to_string(),
        "https://[::1]:8443".to_string(),
        "http://localhost".to_string(),
    ] {
        let r = mcp_post(&http, &server, None, &initialize_message())
            .header("origin", &origin)
            .header("host", format!("localhost:{port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{origin}");
        assert!(r.headers().contains_key("mcp-session-id"), "{origin}");
    }
    assert!(server.witness().iter().all(|e| e.status != 403));
}

#[tokio::test]
async fn foreign_origins_are_refused_even_with_a_loopback_host() {
    let server = start(ServerLimits::default()).await;
    for origin in [
        "https://evil.example",
        "null",
        "http://localhost.evil.example",
        "http://evil.example:80",
        "http://localhost:3000/path",
        "file://",
        "chrome-extension://abcdefghijklmnop",
    ] {
        assert_every_route_refused(
            &server,
            "origin",
            origin,
            "Forbidden: Origin is not loopback\n",
        )
        .await;
    }
    // A second, foreign Origin beside a loopback one is refused too.
    let port = server.addr().port();
    assert_eq!(
        raw_exchange(
            &server,
            &format!("POST /control/invalidate HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://localhost:{port}\r\nOrigin: https://evil.example\r\nConnection: close\r\n\r\n")
        )
        .await,
        raw_text_response(
            "HTTP/1.1",
            "403 Forbidden",
            "Forbidden: Origin is not loopback\n"
        )
    );
}

#[tokio::test]
async fn a_cors_preflight_from_a_foreign_origin_is_refused() {
    let server = start(ServerLimits::default()).await;
    let http = http();
    for path in ["/mcp", "/control/invalidate", "/control/restart"] {
        let r = http
            .request(
                reqwest::Method::OPTIONS,
                format!("http://{}{path}", server.addr()),
            )
            .header("origin", "https://evil.example")
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type, mcp-session-id",
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{path}");
        let allow: Vec<&str> = r
            .headers()
            .keys()
            .map(|k| k.as_str())
            .filter(|k| k.starts_with("access-control-"))
            .collect();
        assert!(allow.is_empty(), "{path}: {allow:?}");
        assert_eq!(
            r.text().await.unwrap(),
            "Forbidden: Origin is not loopback\n",
            "{path}"
        );
    }
    let logged: Vec<(String, u16)> = server
        .witness()
        .iter()
        .map(|e| (e.http_method.clone(), e.status))
        .collect();
    assert_eq!(logged, vec![("OPTIONS".to_string(), 403); 3]);
}

/// Longest any test waits for the server to close a connection or answer; well
/// below hyper's own 30 s header timeout, so a server that lost its short
/// timeouts fails instead of passing late.
const BOUND: Duration = Duration::from_secs(8);

#[tokio::test]
async fn a_slowloris_head_is_cut_at_the_header_timeout_while_a_normal_client_is_answered() {
    let limits = ServerLimits {
        header_read_timeout: Duration::from_millis(1000),
        ..small_limits()
    };
    let server = start(limits.clone()).await;
    let connected = Instant::now();
    let (mut slow_read, mut slow_write) = connect(&server).await.into_split();
    slow_write
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    // One byte every 50 ms: each arrives well within the timeout, the head never ends.
    let trickle = tokio::spawn(async move {
        while slow_write.write_all(b"a").await.is_ok() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let http = http();
    let session = initialize(&http, &server).await;
    assert_eq!(list_tools(&http, &server, &session).await.0, 200);
    let mut probe = [0u8; 1];
    assert!(
        matches!(slow_read.try_read(&mut probe), Err(e) if e.kind() == ErrorKind::WouldBlock),
        "the normal client was answered only after the slow one was cut"
    );
    let sent = read_to_close(&mut slow_read, BOUND).await;
    assert_eq!(String::from_utf8_lossy(&sent), "", "nothing is answered");
    assert!(connected.elapsed() >= limits.header_read_timeout);
    trickle.abort();
}

#[tokio::test]
async fn a_body_that_never_completes_gets_408_within_the_body_timeout() {
    let limits = ServerLimits {
        body_read_timeout: Duration::from_millis(1000),
        ..small_limits()
    };
    let server = start(limits.clone()).await;
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 200\r\n\r\n";
    let started = Instant::now();
    // A body that stops short.
    let mut stalled = connect(&server).await;
    stalled
        .write_all(format!("{head}{{\"jsonrpc\":").as_bytes())
        .await
        .unwrap();
    // A body trickled one byte every 20 ms: 4 s for all of it.
    let (mut trickled_read, mut trickled_write) = connect(&server).await.into_split();
    trickled_write.write_all(head.as_bytes()).await.unwrap();
    let trickle = tokio::spawn(async move {
        for _ in 0..200 {
            if trickled_write.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    // Meanwhile a normal client is answered, before either slow body times out.
    let http = http();
    let session = initialize(&http, &server).await;
    assert_eq!(list_tools(&http, &server, &session).await.0, 200);
    let mut probe = [0u8; 1];
    assert!(
        matches!(stalled.try_read(&mut probe), Err(e) if e.kind() == ErrorKind::WouldBlock),
        "the normal client was answered only after a slow body timed out"
    );
    // Each slow body is answered 408 and its connection closed.
    let timed_out = "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: 97\r\n\r\n{\"error\":{\"code\":-32600,\"message\":\"Request body not received in time\"},\"id\":null,\"jsonrpc\":\"2.0\"}";
    for conn in [
        &mut stalled as &mut (dyn AsyncRead + Unpin),
        &mut trickled_read,
    ] {
        let answer = read_to_close(conn, BOUND).await;
        assert_eq!(without_date(&String::from_utf8_lossy(&answer)), timed_out);
    }
    assert!(started.elapsed() >= limits.body_read_timeout);
    trickle.abort();
    let logged: Vec<(String, u16)> = server
        .witness()
        .iter()
        .filter(|e| e.status == 408)
        .map(|e| (e.http_method.clone(), e.status))
        .collect();
    assert_eq!(logged, vec![("POST".to_string(), 408); 2]);
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let limits = small_limits();
    let server = start(limits.clone()).await;
    let connected = Instant::now();
    let mut conn = connect(&server).await;
    // Two requests at once on one connection: it is kept alive after the
    // first answer, then idles after the second.
    let ready = format!(
        "GET /control/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {}\r\n\r\n",
        bearer(&server)
    );
    conn.write_all(ready.repeat(2).as_bytes()).await.unwrap();
    let answers = read_to_close(&mut conn, BOUND).await;
    let one_answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 28\r\n\r\n{\"generation\":1,\"reloads\":0}";
    assert_eq!(
        without_date(&String::from_utf8_lossy(&answers)),
        one_answer.repeat(2)
    );
    // The idle time starts after the second answer, so after the connect too.
    assert!(connected.elapsed() >= limits.header_read_timeout);
}

#[tokio::test]
async fn many_idle_connections_are_closed_and_a_normal_client_is_still_answered() {
    let limits = small_limits();
    let idle_count = 3 * limits.max_connections;
    let server = start(limits.clone()).await;
    let mut idle = Vec::new();
    for _ in 0..idle_count {
        idle.push(connect(&server).await);
    }
    // The normal client queues behind every idle connection in the listen
    // backlog (accepted in order). Each idle one holds its slot for at most
    // the header timeout, so max_connections of them go per timeout: the
    // normal one is served within ceil((idle + 1) / max_connections) timeouts.
    let waves = (idle_count + 1).div_ceil(limits.max_connections) as u32;
    let bound = limits.header_read_timeout * waves + Duration::from_secs(4);
    let asked = Instant::now();
    let http = http_no_keepalive();
    let (status, body) = tokio::time::timeout(
        bound,
        answer(
            http.get(format!("http://{}/control/ready", server.addr()))
                .header("authorization", bearer(&server)),
        ),
    )
    .await
    .unwrap_or_else(|_| panic!("a normal client was not answered within {bound:?}"));
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"generation":1,"reloads":0}"#)
    );
    let waited = asked.elapsed();
    // It was accepted only once all but max_connections - 1 of the idle ones were closed.
    let closed = idle.iter().filter(|s| closed_by_server(s)).count();
    assert!(
        closed > idle_count - limits.max_connections,
        "only {closed} of {idle_count} idle connections were closed when a normal client was served after {waited:?}"
    );
    for s in &mut idle {
        assert_eq!(read_to_close(s, BOUND).await, b"");
    }
}

#[tokio::test]
async fn a_flood_of_sessions_stays_within_every_limit() {
    let limits = flood_limits();
    let server = start(limits.clone()).await;
    let http = http();
    let first = initialize(&http, &server).await;
    // Used every few initializes, so it is never the least recently used.
    let kept = initialize(&http, &server).await;
    let mut newest = std::collections::VecDeque::new();
    for i in 0..100 * limits.max_sessions {
        newest.push_back(initialize(&http, &server).await);
        if newest.len() > limits.max_sessions - 1 {
            newest.pop_front();
        }
        if i % (limits.max_sessions / 2) == 0 {
            assert_eq!(list_tools(&http, &server, &kept).await.0, 200);
        }
        assert!(server.live_sessions() <= limits.max_sessions);
        assert!(server.witness().len() <= limits.witness_entries);
        assert!(server.dropped_sessions().len() <= limits.remembered_ids);
    }
    assert_eq!(server.live_sessions(), limits.max_sessions);
    // Evicted sessions are answered as lost; the newest and the one in use still work.
    assert_eq!(
        list_tools(&http, &server, &first).await,
        (404, LOST_SESSION.to_string())
    );
    for id in newest.iter().chain([&kept]) {
        assert_eq!(list_tools(&http, &server, id).await.0, 200, "{id}");
    }
    assert_eq!(server.dropped_sessions().len(), limits.remembered_ids);
    // Call ids: counted up to the limit, never more.
    for i in 0..4 * limits.remembered_ids {
        let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi", "call_id": format!("call-{i}")}}});
        assert_eq!(
            answer(mcp_post(&http, &server, Some(&kept), &call)).await.0,
            200
        );
    }
    let counts = server.call_counts();
    assert_eq!(counts.len(), limits.remembered_ids);
    assert!(
        counts.values().all(|c| c.sent == 1 && c.ran == 1),
        "{counts:?}"
    );
    // The witness ring keeps the newest entries, in order, and `witness_since`
    // reads from any point of it.
    let ring = server.witness();
    assert_eq!(ring.len(), limits.witness_entries);
    let seqs: Vec<u64> = ring.iter().map(|e| e.seq).collect();
    let last = *seqs.last().unwrap();
    let expected: Vec<u64> = (last + 1 - ring.len() as u64..=last).collect();
    assert_eq!(seqs, expected);
    let since = |from| -> Vec<u64> { server.witness_since(from).iter().map(|e| e.seq).collect() };
    assert_eq!(since(0), seqs);
    assert_eq!(since(last - 9), seqs[seqs.len() - 10..]);
    assert_eq!(since(last + 1), Vec::<u64>::new());
}

/// Held by the tests that measure this process's resident memory, so they do
/// not measure each other.
static MEASURING_MEMORY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Resident memory of this process, from /proc/self/status.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no VmRSS line in /proc/self/status:\n{status}"));
    kb * 1024
}

/// A POST of `message` to the MCP endpoint as raw bytes, asking to close the
/// connection after the answer when `last`.
fn raw_post(message: &str, headers: &str, last: bool) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n{headers}{}Content-Length: {}\r\n\r\n{message}",
        if last { "Connection: close\r\n" } else { "" },
        message.len()
    )
}

/// Send `count` requests made by `request(last)` pipelined on one connection
/// (a normal, if greedy, HTTP/1.1 client) and return how many answers had
/// each status, counted as they stream in so the test itself keeps nothing.
async fn pipeline(
    addr: std::net::SocketAddr,
    count: usize,
    request: impl Fn(bool) -> String + Send + 'static,
) -> std::collections::BTreeMap<u16, usize> {
    let (mut read, mut write) = TcpStream::connect(addr).await.unwrap().into_split();
    let writer = tokio::spawn(async move {
        for i in 0..count {
            write
                .write_all(request(i + 1 == count).as_bytes())
                .await
                .unwrap();
        }
        write
    });
    // Status lines ("HTTP/1.1 NNN") split across reads are found through the
    // unscanned tail carried over from the previous read.
    const MARK: &[u8] = b"HTTP/1.1 ";
    let line = MARK.len() + 3;
    let mut statuses = std::collections::BTreeMap::new();
    let mut data = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(60), read.read(&mut buf))
            .await
            .expect("the server stopped answering pipelined requests")
            .unwrap();
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
        let scanned = data.len().saturating_sub(line - 1);
        for start in 0..scanned {
            if data[start..].starts_with(MARK) {
                let code = std::str::from_utf8(&data[start + MARK.len()..start + line])
                    .unwrap()
                    .parse::<u16>()
                    .unwrap();
                *statuses.entry(code).or_insert(0) += 1;
            }
        }
        data.drain(..scanned);
    }
    drop(writer.await.unwrap());
    statuses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_bounded_under_a_flood_of_initializes() {
    let _measuring = MEASURING_MEMORY.lock().await;
    let limits = flood_limits();
    let server = start(limits.clone()).await;
    let init = initialize_message().to_string();
    // Four clients at once, each pipelining its share.
    let flood = |count: usize| {
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let init = init.clone();
            clients.spawn(pipeline(server.addr(), count / 4, move |last| {
                raw_post(&init, "", last)
            }));
        }
        async move {
            while let Some(statuses) = clients.join_next().await {
                let statuses: Vec<_> = statuses.unwrap().into_iter().collect();
                assert_eq!(statuses, [(200, count / 4)]);
            }
        }
    };
    // Warm up to the steady state: every limit reached, buffers allocated.
    flood(2_000).await;
    // The bounded server holds the same few entries before and after: it grew
    // by about 2 MiB here, allocator and thread noise from the tests running
    // beside it. A witness ring that kept everything (two entries per
    // initialize: the answer and the eviction note) grew by about 12 MiB over
    // these 20,000; unbounded sessions and dropped ids add to that. What the
    // server keeps grows on every flood, the noise of a busy process on one:
    // the smaller growth of two floods is the server's.
    let mut growths = Vec::new();
    for _ in 0..2 {
        let before = rss_bytes();
        flood(20_000).await;
        growths.push((rss_bytes().saturating_sub(before), before));
    }
    let (growth, before) = growths.iter().min().copied().unwrap();
    assert!(
        growth < 8 << 20,
        "resident memory grew by {growth} bytes (from {before}) over 20,000 initializes, and by at least that over another 20,000: {growths:?}"
    );
    assert!(server.live_sessions() <= limits.max_sessions);
    assert!(server.witness().len() <= limits.witness_entries);
    assert!(server.dropped_sessions().len() <= limits.remembered_ids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_client_fields_are_clipped_in_the_witness_and_memory_stays_bounded() {
    let _measuring = MEASURING_MEMORY.lock().await;
    // The default witness ring: many entries, so only clipping bounds their size.
    let server = start(ServerLimits {
        header_read_timeout: Duration::from_secs(10),
        ..ServerLimits::default()
    })
    .await;
    let list = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}).to_string();
    let huge_id = "s".repeat(64 * 1024);
    let send = |count: usize| {
        let (list, huge_id) = (list.clone(), huge_id.clone());
        pipeline(server.addr(), count, move |last| {
            raw_post(&list, &format!("Mcp-Session-Id: {huge_id}\r\n"), last)
        })
    };
    assert_eq!(
        send(100).await.into_iter().collect::<Vec<_>>(),
        [(404, 100)]
    );
    let before = rss_bytes();
    assert_eq!(
        send(800).await.into_iter().collect::<Vec<_>>(),
        [(404, 800)]
    );
    let after = rss_bytes();
    // Kept whole, 800 such ids would hold 50 MiB; clipped, a few hundred KiB.
    let growth = after.saturating_sub(before);
    assert!(
        growth < 16 << 20,
        "resident memory grew by {growth} bytes over 800 requests with a 64 KiB session id (from {before} to {after})"
    );
    // A method name as long as a request head.
    let method = "M".repeat(64 * 1024);
    let weird = raw_exchange(
        &server,
        &format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(
        weird.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{weird}"
    );
    let witness = server.witness();
    assert_eq!(witness.len(), 901);
    let clipped = format!("{}…", "s".repeat(256));
    for e in &witness[..900] {
        assert_eq!(
            (e.session_sent.as_deref(), e.status),
            (Some(clipped.as_str()), 404),
            "entry {}",
            e.seq
        );
    }
    assert_eq!(witness[900].http_method, format!("{}…", "M".repeat(256)));
}

#[tokio::test]
async fn a_client_that_stops_reading_its_answers_is_cut_off_and_frees_its_slot() {
    // One connection slot; only the write timeout is short, so nothing but it
    // can free the slot.
    let limits = ServerLimits {
        max_connections: 1,
        write_timeout: small_limits().write_timeout,
        ..ServerLimits::default()
    };
    let server = start(limits.clone()).await;
    let http = http_no_keepalive();
    let session = initialize(&http, &server).await;
    // A client that asks for large answers and never reads them: with a small
    // receive buffer its window closes at once and the server's writes stall.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let (mut stuck_read, mut stuck_write) =
        socket.connect(server.addr()).await.unwrap().into_split();
    let text = "x".repeat(900_000);
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n{call}",
        call.len()
    );
    let writer = tokio::spawn(async move {
        for _ in 0..8 {
            if stuck_write.write_all(request.as_bytes()).await.is_err() {
                break;
            }
        }
        stuck_write
    });
    // The only connection slot is taken until the server gives up on the stuck client.
    let ready = http
        .get(format!("http://{}/control/ready", server.addr()))
        .header("authorization", bearer(&server));
    let (status, body) = tokio::time::timeout(BOUND, answer(ready))
        .await
        .unwrap_or_else(|_| panic!("a normal client was not answered within {BOUND:?}"));
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"generation":1,"reloads":0}"#)
    );
    let got = read_to_close(&mut stuck_read, BOUND).await;
    assert!(got.len() < 8 * 900_000, "the stuck client got every answer");
    writer.abort();
}

/// `mcpatch serve` started by a test with a low descriptor limit; killed when dropped.
struct Serve {
    child: std::process::Child,
    port: u16,
    /// The secret of its control routes, from its banner.
    token: String,
    _sandbox: super::Sandbox,
}

impl Serve {
    fn start(max_descriptors: u64) -> Serve {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let sandbox = super::Sandbox::new();
        let mut command = sandbox.command(&["serve", "--port", "0"]);
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit());
        // SAFETY: the closure runs in the forked child before exec and only
        // calls setrlimit, which is async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: max_descriptors,
                    rlim_max: max_descriptors,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        // Read the port and the control token from the banner, then keep
        // draining the console so it never blocks.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            let mut port = None;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.trim().strip_prefix("MCP endpoint:") {
                    port = url
                        .trim()
                        .trim_start_matches("http://127.0.0.1:")
                        .trim_end_matches("/mcp")
                        .parse::<u16>()
                        .ok();
                }
                let token = line
                    .split_once("Bearer ")
                    .and_then(|(_, rest)| rest.split_once('\''))
                    .map(|(token, _)| token.to_string());
                if let (Some(p), Some(token)) = (port, token) {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send((p, token));
                    }
                }
            }
        });
        let (port, token) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("mcpatch serve did not print its MCP endpoint and control token");
        Serve {
            child,
            port,
            token,
            _sandbox: sandbox,
        }
    }

    /// How many of the descriptor numbers below `limit` are open: at `limit`,
    /// opening one more fails (a descriptor inherited above it does not count).
    fn descriptors_open_below(&self, limit: u64) -> u64 {
        let dir = format!("/proc/{}/fd", self.child.id());
        let open: Vec<u64> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        open.into_iter().filter(|&n| n < limit).count() as u64
    }

    /// CPU time used so far (user + system), from /proc/PID/stat.
    fn cpu_time(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        // Fields after the command name, which ends with the last ')': state is
        // field 3, utime and stime are fields 14 and 15.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // SAFETY: sysconf only reads a configuration value.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        Duration::from_millis(ticks * 1000 / per_second)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn serve_out_of_descriptors_neither_spins_nor_stops_answering() {
    const MAX_DESCRIPTORS: u64 = 64;
    let serve = Serve::start(MAX_DESCRIPTORS);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], serve.port));
    let ready = format!("http://{addr}/control/ready");
    let http = http_no_keepalive();
    let (status, body) = answer(
        http.get(&ready)
            .header("authorization", format!("Bearer {}", serve.token)),
    )
    .await;
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"generation":1,"reloads":0}"#)
    );
    // More idle connections than the server has descriptors for: it accepts
    // until none is left, the rest wait in the backlog and accept fails.
    let mut idle = Vec::new();
    for _ in 0..MAX_DESCRIPTORS + 32 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    let deadline = Instant::now() + BOUND;
    while serve.descriptors_open_below(MAX_DESCRIPTORS) < MAX_DESCRIPTORS {
        assert!(
            Instant::now() < deadline,
            "mcpatch serve did not use up its descriptors: {} of {MAX_DESCRIPTORS} open",
            serve.descriptors_open_below(MAX_DESCRIPTORS)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Out of descriptors with connections waiting: a server retrying accept
    // at once spins (a whole core when it has one; still far above the bound
    // when the machine is busy); one that backs off barely runs.
    let (cpu_before, wall_before) = (serve.cpu_time(), Instant::now());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu, wall) = (serve.cpu_time() - cpu_before, wall_before.elapsed());
    assert!(
        cpu < wall / 10,
        "mcpatch serve used {cpu:?} of CPU in {wall:?} while out of descriptors"
    );
    // A client connects and asks while no descriptor is free (it waits in the
    // backlog), then the idle clients leave: it is answered.
    let mut waiting = TcpStream::connect(addr).await.unwrap();
    waiting
        .write_all(
            format!(
                "GET /control/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
                serve.token
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    drop(idle);
    let answered = read_to_close(&mut waiting, BOUND).await;
    assert_eq!(
        without_date(&String::from_utf8_lossy(&answered)),
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 28\r\nconnection: close\r\n\r\n{\"generation\":1,\"reloads\":0}"
    );
}
