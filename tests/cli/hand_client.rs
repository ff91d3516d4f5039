//! A hand-written MCP client over reqwest and the caller's view of its calls,
//! for the tests of the fake server alone (server.rs): each test drives the
//! server by hand and judges what the server saw.

use std::time::Duration;

use mcpatch::verify::fake_server::{FakeServer, ServerBehaviour};
use mcpatch::verify::scenario::Policy;
use mcpatch::verify::scenario::{self, Evidence, HarnessCall, Judgement, ScenarioName};
use serde_json::{json, Value};

/// A minimal hand-written MCP client over reqwest.
pub(super) struct HandClient {
    pub(super) http: reqwest::Client,
    pub(super) url: String,
    pub(super) session: Option<String>,
}

pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) session: Option<String>,
    pub(super) body: String,
    pub(super) headers: reqwest::header::HeaderMap,
}

impl Reply {
    pub(super) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

impl HandClient {
    pub(super) fn new(server: &FakeServer) -> Self {
        HandClient {
            http: reqwest::Client::new(),
            url: server.url(),
            session: None,
        }
    }

    pub(super) async fn raw(
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

    pub(super) async fn post(&self, message: Value) -> Reply {
        self.raw(
            reqwest::Method::POST,
            "application/json",
            message.to_string().into_bytes(),
            self.session.as_deref(),
        )
        .await
    }

    pub(super) async fn initialize(&mut self, version: &str) -> Reply {
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

    pub(super) async fn call_echo(&self) -> Reply {
        self.call("echo", "c0", json!({"text": "hi"})).await
    }

    /// A tools/call carrying `call_id`, as the harness sends it.
    pub(super) async fn call(&self, tool: &str, call_id: &str, mut args: Value) -> Reply {
        args["call_id"] = json!(call_id);
        self.post(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": args}}))
            .await
    }

    pub(super) async fn list(&self) -> Reply {
        self.post(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
            .await
    }
}

pub(super) async fn start(behaviour: ServerBehaviour) -> FakeServer {
    FakeServer::start(behaviour, 0).await.unwrap()
}

/// Restart the server and wait until it listens again (its generation moves on).
pub(super) async fn restart_and_wait(server: &FakeServer) {
    let next = server.generation() + 1;
    server.restart();
    for _ in 0..1000 {
        if server.generation() >= next {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the fake server did not listen again after a restart");
}

/// What the harness would report: the caller's view of each call.
#[derive(Default)]
pub(super) struct CallerView {
    pub(super) calls: Vec<HarnessCall>,
}

impl CallerView {
    /// Record a call as its caller saw it: a success only for a 200 without any error.
    pub(super) fn saw(&mut self, call_id: &str, name: &str, r: &Reply) -> bool {
        let v = r.json();
        let ok =
            r.status == 200 && v.get("error").is_none() && v["result"]["isError"] != json!(true);
        self.claim(call_id, name, ok, (!ok).then(|| r.body.clone()));
        ok
    }

    /// Record whatever a (possibly lying) client claims.
    pub(super) fn claim(&mut self, call_id: &str, name: &str, ok: bool, error: Option<String>) {
        self.calls.push(HarnessCall {
            call_id: call_id.into(),
            name: name.into(),
            ok,
            error,
            ms: 5,
        });
    }
}

/// Judge what `server` saw against `name`'s expectation for a client carrying the
/// current patch revision (`seamless`) or not.
pub(super) fn judge(
    server: &FakeServer,
    name: ScenarioName,
    view: &CallerView,
    seamless: bool,
) -> Judgement {
    let s = scenario::find(name);
    let witness = server.witness();
    let dropped = server.dropped_sessions();
    let counts = server.call_counts();
    scenario::judge(
        &s,
        s.expectation(seamless),
        &Evidence {
            witness: &witness,
            dropped: &dropped,
            counts: &counts,
            calls: &view.calls,
            policy: Policy::Short,
            seamless,
            per_call_recovery: false,
        },
    )
}

/// A session opened and its tools listed, as the client does on connect.
pub(super) async fn connected(server: &FakeServer) -> HandClient {
    let mut c = HandClient::new(server);
    c.initialize("2025-06-18").await;
    assert_eq!(c.list().await.status, 200);
    c
}

pub(super) async fn reconnect(c: &mut HandClient) {
    c.initialize("2025-06-18").await;
    assert_eq!(c.list().await.status, 200);
}

/// The initialize request as a client sends it, without the handshake's notification.
pub(super) fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hand", "version": "0"}}})
}
