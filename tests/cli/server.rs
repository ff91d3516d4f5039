//! The fake server alone: malformed input, the MCP rules it enforces, and the
//! witness verdict against hand-written clients.

use std::time::Duration;

use mcpatch::verify::scenario::{self, HarnessCall};
use mcpatch::verify::server::{FakeServer, LostSessionAnswer, ServerBehaviour};
use serde_json::{json, Value};

/// A minimal hand-written MCP client over reqwest.
struct HandClient {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
}

struct Reply {
    status: u16,
    session: Option<String>,
    body: String,
    headers: reqwest::header::HeaderMap,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

impl HandClient {
    fn new(server: &FakeServer) -> Self {
        HandClient {
            http: reqwest::Client::new(),
            url: server.url(),
            session: None,
        }
    }

    async fn raw(
        &self,
        method: reqwest::Method,
        content_type: &str,
        body: Vec<u8>,
        session: Option<&str>,
    ) -> Reply {
        let mut req = self
            .http
            .request(method, &self.url)
            .header("content-type", content_type)
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let session = headers
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_string());
        Reply {
            status,
            session,
            body: r.text().await.unwrap(),
            headers,
        }
    }

    async fn post(&self, message: Value) -> Reply {
        self.raw(
            reqwest::Method::POST,
            "application/json",
            message.to_string().into_bytes(),
            self.session.as_deref(),
        )
        .await
    }

    async fn initialize(&mut self, version: &str) -> Reply {
        self.session = None;
        let r = self
            .post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "hand", "version": "0"}}}))
            .await;
        self.session = r.session.clone();
        let n = self
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(n.status, 202);
        r
    }

    async fn call_echo(&self) -> Reply {
        self.post(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}))
            .await
    }

    async fn list(&self) -> Reply {
        self.post(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
            .await
    }
}

async fn start(behaviour: ServerBehaviour) -> FakeServer {
    FakeServer::start(behaviour, 0).await.unwrap()
}

#[tokio::test]
async fn initialize_negotiates_the_protocol_and_issues_a_fresh_session() {
    let server = start(ServerBehaviour::default()).await;
    assert!(server.url().starts_with("http://127.0.0.1:"));
    let mut c = HandClient::new(&server);
    let r = c.initialize("2025-06-18").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-06-18");
    let first = r.session.clone().unwrap();
    let r = c.initialize("1999-01-01").await;
    assert_eq!(
        r.json()["result"]["protocolVersion"],
        "2025-11-25",
        "unknown versions get the latest"
    );
    assert_ne!(r.session.unwrap(), first);
    let list = c.list().await;
    assert_eq!(list.status, 200);
    assert!(list.json()["result"]["tools"].as_array().unwrap().len() >= 2);
    let call = c.call_echo().await;
    assert_eq!(call.json()["result"]["content"][0]["text"], "hi");
    let ping = c
        .post(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
        .await;
    assert_eq!(ping.json()["result"], json!({}));
}

/// What, HTTP method, content type, body, session, expected status, expected JSON-RPC code.
type MalformedCase<'a> = (
    &'a str,
    reqwest::Method,
    &'a str,
    Vec<u8>,
    Option<&'a str>,
    u16,
    Option<i64>,
);

#[tokio::test]
async fn malformed_input_gets_the_right_status_and_never_disturbs_other_sessions() {
    let server = start(ServerBehaviour::default()).await;
    let mut healthy = HandClient::new(&server);
    healthy.initialize("2025-06-18").await;
    let c = HandClient::new(&server);
    let s = healthy.session.clone();
    let cases: Vec<MalformedCase> = vec![
        (
            "bad json",
            reqwest::Method::POST,
            "application/json",
            b"{not json".to_vec(),
            None,
            400,
            Some(-32700),
        ),
        (
            "wrong content type",
            reqwest::Method::POST,
            "text/plain",
            b"{}".to_vec(),
            None,
            415,
            None,
        ),
        (
            "huge body",
            reqwest::Method::POST,
            "application/json",
            vec![b' '; 2 << 20],
            None,
            413,
            Some(-32600),
        ),
        (
            "batch",
            reqwest::Method::POST,
            "application/json",
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec(),
            s.as_deref(),
            400,
            Some(-32600),
        ),
        (
            "not an object",
            reqwest::Method::POST,
            "application/json",
            b"42".to_vec(),
            None,
            400,
            Some(-32600),
        ),
        (
            "wrong jsonrpc version",
            reqwest::Method::POST,
            "application/json",
            br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.to_vec(),
            s.as_deref(),
            400,
            Some(-32600),
        ),
        (
            "unknown method",
            reqwest::Method::POST,
            "application/json",
            br#"{"jsonrpc":"2.0","id":1,"method":"nope/nope"}"#.to_vec(),
            s.as_deref(),
            200,
            Some(-32601),
        ),
        (
            "no session",
            reqwest::Method::POST,
            "application/json",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec(),
            None,
            400,
            Some(-32000),
        ),
        (
            "GET",
            reqwest::Method::GET,
            "application/json",
            vec![],
            s.as_deref(),
            405,
            None,
        ),
        (
            "PUT",
            reqwest::Method::PUT,
            "application/json",
            vec![],
            s.as_deref(),
            405,
            None,
        ),
    ];
    for (what, method, ct, body, session, status, rpc_code) in cases {
        let r = c.raw(method, ct, body, session).await;
        assert_eq!(r.status, status, "{what}: {}", r.body);
        if let Some(code) = rpc_code {
            assert_eq!(r.json()["error"]["code"], code, "{what}: {}", r.body);
        }
        if status == 405 {
            assert_eq!(r.headers.get("allow").unwrap(), "POST, DELETE");
        }
        let ok = healthy.call_echo().await;
        assert_eq!(ok.status, 200, "after {what} the other session still works");
    }
    let r = reqwest::Client::new()
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "text/html")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 406);
    assert_eq!(server.live_sessions(), 1);
}

#[tokio::test]
async fn delete_ends_the_session_and_later_requests_get_404() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = HandClient::new(&server);
    c.initialize("2025-06-18").await;
    let r = c
        .raw(
            reqwest::Method::DELETE,
            "application/json",
            vec![],
            c.session.as_deref(),
        )
        .await;
    assert_eq!(r.status, 200);
    let r = c.call_echo().await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["error"],
        json!({"code": -32001, "message": "Session not found"})
    );
}

#[tokio::test]
async fn each_lost_session_answer_uses_the_words_of_real_servers() {
    for (answer, status, words) in [
        (LostSessionAnswer::NotFoundJsonRpc, 404, "Session not found"),
        (
            LostSessionAnswer::BadRequestNoValidSession,
            400,
            "Bad Request: No valid session ID provided",
        ),
        (
            LostSessionAnswer::NotFoundText,
            404,
            "Not Found: Session not found",
        ),
    ] {
        let server = start(ServerBehaviour {
            lost_session: answer,
            ..Default::default()
        })
        .await;
        let mut c = HandClient::new(&server);
        c.initialize("2025-06-18").await;
        server.invalidate();
        let r = c.call_echo().await;
        assert_eq!(r.status, status);
        assert!(r.body.contains(words), "{}", r.body);
    }
}

#[tokio::test]
async fn idle_sessions_are_pruned_after_the_limit() {
    let server = start(ServerBehaviour {
        idle_limit: Some(Duration::from_millis(200)),
        ..Default::default()
    })
    .await;
    let mut c = HandClient::new(&server);
    c.initialize("2025-06-18").await;
    assert_eq!(c.call_echo().await.status, 200);
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(c.call_echo().await.status, 404);
    assert_eq!(server.dropped_sessions(), vec![c.session.clone().unwrap()]);
}

#[tokio::test]
async fn restart_loses_in_memory_sessions_but_keeps_persisted_ones() {
    for (persist, expected) in [(false, 404), (true, 200)] {
        let server = start(ServerBehaviour {
            persist_sessions: persist,
            ..Default::default()
        })
        .await;
        let mut c = HandClient::new(&server);
        c.initialize("2025-06-18").await;
        server.restart();
        tokio::time::sleep(Duration::from_millis(400)).await;
        // A fresh connection: the old ones were closed by the restart.
        c.http = reqwest::Client::new();
        assert_eq!(c.call_echo().await.status, expected, "persist={persist}");
    }
}

#[tokio::test]
async fn a_strict_server_rejects_an_initialize_that_carries_a_session_id() {
    let server = start(ServerBehaviour {
        strict_initialize: true,
        ..Default::default()
    })
    .await;
    let mut c = HandClient::new(&server);
    c.initialize("2025-06-18").await;
    let r = c
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hand", "version": "0"}}}))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "duplicate \"initialize\" received"
    );
}

fn recovery_scenario() -> scenario::Scenario {
    scenario::all()
        .into_iter()
        .find(|s| s.name == "expired-404")
        .unwrap()
}

fn judge(server: &FakeServer) -> scenario::Judgement {
    let calls = [HarnessCall {
        name: "echo".into(),
        ok: true,
        error: None,
    }];
    scenario::judge(
        &recovery_scenario(),
        &server.witness(),
        &server.dropped_sessions(),
        &calls,
        Duration::from_secs(4),
    )
}

#[tokio::test]
async fn a_client_that_never_reinitializes_is_stuck() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = HandClient::new(&server);
    c.initialize("2025-06-18").await;
    assert_eq!(c.call_echo().await.status, 200);
    server.invalidate();
    for _ in 0..3 {
        assert_eq!(c.call_echo().await.status, 404);
    }
    let j = judge(&server);
    assert_eq!(j.verdict, "STUCK");
    assert!(!j.ok);
    assert_eq!(j.initialize_count, 1);
    assert_eq!(
        j.note,
        "no new initialize after the session was lost; 3 request(s) kept the dead session id"
    );
}

#[tokio::test]
async fn a_client_that_reinitializes_cleanly_recovers() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = HandClient::new(&server);
    c.initialize("2025-06-18").await;
    server.invalidate();
    assert_eq!(c.call_echo().await.status, 404);
    c.initialize("2025-06-18").await;
    assert_eq!(c.list().await.status, 200);
    assert_eq!(c.call_echo().await.status, 200);
    let j = judge(&server);
    assert_eq!(j.verdict, "RECOVERED", "{}", j.note);
    assert_eq!(j.initialize_count, 2);
    assert!(j.recovery_ms.is_some());
}

#[tokio::test]
async fn a_client_that_reuses_the_dead_id_after_reinitializing_is_stuck() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = HandClient::new(&server);
    c.initialize("2025-06-18").await;
    let dead = c.session.clone();
    server.invalidate();
    assert_eq!(c.call_echo().await.status, 404);
    c.initialize("2025-06-18").await;
    assert_eq!(c.list().await.status, 200);
    assert_eq!(c.call_echo().await.status, 200);
    let stale = HandClient {
        http: reqwest::Client::new(),
        url: server.url(),
        session: dead,
    };
    assert_eq!(stale.call_echo().await.status, 404);
    let j = judge(&server);
    assert_eq!(j.verdict, "STUCK");
    assert_eq!(
        j.note,
        "1 request(s) still carried the dead session id after the new session was established"
    );
}

#[tokio::test]
async fn a_client_that_reinitializes_but_never_relists_tools_is_stuck() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = HandClient::new(&server);
    c.initialize("2025-06-18").await;
    server.invalidate();
    assert_eq!(c.call_echo().await.status, 404);
    c.initialize("2025-06-18").await;
    assert_eq!(c.call_echo().await.status, 200);
    let j = judge(&server);
    assert_eq!(j.verdict, "STUCK");
    assert_eq!(
        j.note,
        "a new session started but its tools were never listed again"
    );
}

/// Drive one scenario with the hand-written client and record its calls as the harness would.
/// `reinit`: start a fresh session whenever a call fails, and once more at the end
/// (a client that recycles sessions).
async fn drive(
    server: &FakeServer,
    scenario: &scenario::Scenario,
    reinit: bool,
) -> Vec<HarnessCall> {
    let mut c = HandClient::new(server);
    let mut calls = Vec::new();
    let mut record = |name: &str, r: &Reply| {
        let v = r.json();
        let ok =
            r.status == 200 && v.get("error").is_none() && v["result"]["isError"] != json!(true);
        calls.push(HarnessCall {
            name: name.into(),
            ok,
            error: (!ok).then(|| r.body.clone()),
        });
        ok
    };
    c.initialize("2025-06-18").await;
    record("echo", &c.call_echo().await);
    match scenario.plan {
        scenario::Plan::Invalidate => server.invalidate(),
        scenario::Plan::Idle => tokio::time::sleep(scenario::IDLE_FOR).await,
        scenario::Plan::Restart => {
            server.restart();
            tokio::time::sleep(Duration::from_millis(400)).await;
            c.http = reqwest::Client::new();
        }
        scenario::Plan::Ordinary => {
            for kind in ["http500", "http400", "jsonrpc", "tool"] {
                let r = c
                    .post(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "fail", "arguments": {"kind": kind}}}))
                    .await;
                record("fail", &r);
            }
        }
        scenario::Plan::Settle => tokio::time::sleep(Duration::from_millis(200)).await,
    }
    let ok = record("echo", &c.call_echo().await);
    if reinit {
        if ok {
            // A client that recycles a healthy session anyway.
            c.initialize("2025-06-18").await;
            c.list().await;
            record("echo", &c.call_echo().await);
        } else {
            c.initialize("2025-06-18").await;
            assert_eq!(c.list().await.status, 200);
            record("echo", &c.call_echo().await);
        }
    }
    calls
}

#[tokio::test]
async fn every_scenario_judges_a_hand_written_client_from_the_witness_log() {
    for s in scenario::all() {
        for reinit in [false, true] {
            let server = start(s.behaviour.clone()).await;
            let calls = drive(&server, &s, reinit).await;
            let j = scenario::judge(
                &s,
                &server.witness(),
                &server.dropped_sessions(),
                &calls,
                Duration::from_secs(4),
            );
            let expected = match (s.expect, reinit) {
                (scenario::Expectation::Recover, false) => "STUCK",
                (scenario::Expectation::Recover, true) => "RECOVERED",
                (scenario::Expectation::Hold, false) => "HELD",
                (scenario::Expectation::Hold, true) => "RECYCLED",
            };
            assert_eq!(
                j.verdict, expected,
                "{} with reinit={reinit}: {}",
                s.name, j.note
            );
            assert_eq!(j.ok, expected == "RECOVERED" || expected == "HELD");
        }
    }
}
