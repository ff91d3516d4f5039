//! The fake server alone: malformed input, the MCP rules it enforces, and the
//! witness verdict against hand-written clients.

use std::time::Duration;

use super::hand_client::*;

use mcpatch::verify::fake_server::{LostSessionAnswer, ServerBehaviour};
use mcpatch::verify::scenario::Policy;
use mcpatch::verify::scenario::{self, Judgement, ScenarioName};
use serde_json::json;

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
        (
            LostSessionAnswer::UnauthorizedText,
            401,
            "Unauthorized: Session not found",
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
    // Idle past the limit: the idle time is the input here, not a guess at an outcome.
    tokio::time::sleep(Duration::from_millis(400)).await;
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
        restart_and_wait(&server).await;
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

#[tokio::test]
async fn a_client_that_never_reinitializes_is_stuck() {
    let server = start(ServerBehaviour::default()).await;
    let c = connected(&server).await;
    let mut view = CallerView::default();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    server.invalidate();
    for id in ["c2", "c3", "c4"] {
        assert!(!view.saw(id, "echo", &c.call("echo", id, json!({"text": "a"})).await));
    }
    let j = judge(&server, ScenarioName::Expired404, &view, false);
    assert_eq!(
        (j.verdict, j.ok, j.initialize_count, j.failed_calls),
        ("STUCK", false, 1, 3)
    );
    assert_eq!(
        j.note,
        "no new initialize after the session was lost; 3 request(s) kept the dead session id"
    );
    assert_eq!(
        j.trigger_error.as_deref(),
        Some(r#"{"error":{"code":-32001,"message":"Session not found"},"id":7,"jsonrpc":"2.0"}"#)
    );
}

#[tokio::test]
async fn a_client_that_recovers_after_a_failed_call_is_recovered_but_not_seamless() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = connected(&server).await;
    let mut view = CallerView::default();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    server.invalidate();
    assert!(!view.saw(
        "c2",
        "echo",
        &c.call("echo", "c2", json!({"text": "a"})).await
    ));
    reconnect(&mut c).await;
    assert!(view.saw(
        "c3",
        "echo",
        &c.call("echo", "c3", json!({"text": "a"})).await
    ));
    let j = judge(&server, ScenarioName::Expired404, &view, false);
    assert_eq!((j.verdict, j.ok, j.failed_calls), ("RECOVERED", true, 1));
    assert_eq!(
        j.note,
        "one fresh initialize without the dead id, tools re-listed, calls succeeded; 1 call(s) failed before it recovered"
    );
    let j = judge(&server, ScenarioName::Expired404, &view, true);
    assert_eq!(
        (j.verdict, j.ok),
        ("RECOVERED", false),
        "the current revision must be seamless"
    );
}

#[tokio::test]
async fn a_client_that_sends_the_lost_call_once_more_on_a_new_session_is_seamless() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = connected(&server).await;
    let mut view = CallerView::default();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    server.invalidate();
    assert_eq!(c.call("echo", "c2", json!({"text": "a"})).await.status, 404);
    reconnect(&mut c).await;
    // The caller only sees the answer of the repeat.
    assert!(view.saw(
        "c2",
        "echo",
        &c.call("echo", "c2", json!({"text": "a"})).await
    ));
    let j = judge(&server, ScenarioName::Expired404, &view, true);
    assert_eq!(
        (j.verdict, j.ok, j.failed_calls, j.initialize_count),
        ("SEAMLESS", true, 0, 2),
        "{}",
        j.note
    );
    assert_eq!(j.trigger_ms, Some(5), "the call that met the loss is c2");
    assert_eq!(j.trigger_error, None);
    assert!(j.recovery_ms.is_some());
}

#[tokio::test]
async fn a_client_that_reuses_the_dead_id_after_reinitializing_is_stuck() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = connected(&server).await;
    let dead = c.session.clone();
    let mut view = CallerView::default();
    server.invalidate();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    reconnect(&mut c).await;
    view.saw(
        "c2",
        "echo",
        &c.call("echo", "c2", json!({"text": "a"})).await,
    );
    let stale = HandClient {
        http: reqwest::Client::new(),
        url: server.url(),
        session: dead,
    };
    view.saw(
        "c3",
        "echo",
        &stale.call("echo", "c3", json!({"text": "a"})).await,
    );
    let j = judge(&server, ScenarioName::Expired404, &view, false);
    assert_eq!(j.verdict, "STUCK");
    assert_eq!(
        j.note,
        "1 request(s) still carried the dead session id after the new session was established"
    );
}

#[tokio::test]
async fn a_client_that_reinitializes_but_never_relists_tools_is_stuck() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = connected(&server).await;
    let mut view = CallerView::default();
    server.invalidate();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    c.initialize("2025-06-18").await;
    view.saw(
        "c2",
        "echo",
        &c.call("echo", "c2", json!({"text": "a"})).await,
    );
    let j = judge(&server, ScenarioName::Expired404, &view, false);
    assert_eq!(j.verdict, "STUCK");
    assert_eq!(
        j.note,
        "a new session started but its tools were never listed again"
    );
}

#[tokio::test]
async fn a_success_the_server_never_ran_is_broken() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = connected(&server).await;
    let mut view = CallerView::default();
    server.invalidate();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    reconnect(&mut c).await;
    view.saw(
        "c2",
        "echo",
        &c.call("echo", "c2", json!({"text": "a"})).await,
    );
    view.claim("c3", "echo", true, None);
    let j = judge(&server, ScenarioName::Expired404, &view, false);
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        "the caller got a success for call c3 that the server never ran"
    );
}

#[tokio::test]
async fn a_call_sent_again_after_an_ordinary_error_is_repeated() {
    let server = start(ServerBehaviour::default()).await;
    let c = connected(&server).await;
    let mut view = CallerView::default();
    assert_eq!(
        c.call("fail", "c1", json!({"kind": "http500"}))
            .await
            .status,
        500
    );
    view.saw(
        "c1",
        "fail:http500",
        &c.call("fail", "c1", json!({"kind": "http500"})).await,
    );
    let j = judge(&server, ScenarioName::OrdinaryErrors, &view, true);
    assert_eq!((j.verdict, j.ok), ("REPEATED", false));
    assert_eq!(
        j.note,
        "call c1 ran 2 times: a tool call was sent again after it ran"
    );
}

#[tokio::test]
async fn a_call_repeated_twice_after_session_loss_is_repeated() {
    let server = start(ServerBehaviour::default()).await;
    let mut c = connected(&server).await;
    let mut view = CallerView::default();
    for _ in 0..2 {
        server.invalidate();
        assert_eq!(c.call("echo", "c1", json!({"text": "a"})).await.status, 404);
        reconnect(&mut c).await;
    }
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    let j = judge(&server, ScenarioName::Expired404, &view, true);
    assert_eq!((j.verdict, j.ok), ("REPEATED", false));
    assert_eq!(
        j.note,
        "call c1 was sent 3 times: more than the one repeat a lost session allows"
    );
}

/// Drive the ordinary-errors plan by hand; `words` says whether the caller keeps
/// the server's words, `claim_last_ok` whether the client lies about the last call.
async fn ordinary(words: bool, claim_last_ok: bool) -> Judgement {
    let server = start(ServerBehaviour::default()).await;
    let c = connected(&server).await;
    let mut view = CallerView::default();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    for (i, kind) in ["http500", "http400", "jsonrpc", "tool"].iter().enumerate() {
        let id = format!("c{}", i + 2);
        let r = c.call("fail", &id, json!({"kind": kind})).await;
        let error = if words {
            r.body.clone()
        } else {
            "tool failed".into()
        };
        view.claim(&id, &format!("fail:{kind}"), false, Some(error));
    }
    view.saw(
        "c6",
        "add",
        &c.call("add", "c6", json!({"a": 2, "b": 3})).await,
    );
    if claim_last_ok {
        c.call("fail", "c7", json!({"kind": "jsonrpc"})).await;
        view.claim("c7", "echo", true, None);
    } else {
        view.saw(
            "c7",
            "echo",
            &c.call("echo", "c7", json!({"text": "a"})).await,
        );
    }
    judge(&server, ScenarioName::OrdinaryErrors, &view, true)
}

#[tokio::test]
async fn ordinary_errors_are_held_only_when_the_servers_words_reach_the_caller() {
    let j = ordinary(true, false).await;
    assert_eq!(
        (j.verdict, j.ok, j.failed_calls),
        ("HELD", true, 4),
        "{}",
        j.note
    );
    assert_eq!(
        j.note,
        "each error reached the caller once; 7 calls on one session, no new initialize"
    );
    let j = ordinary(false, false).await;
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        "the http500 error did not reach the caller with the server's words (\"Internal Server Error\")"
    );
}

#[tokio::test]
async fn a_hold_is_judged_from_the_witness_log_not_from_the_clients_claim() {
    let j = ordinary(true, true).await;
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(j.note, "tools did not work again on the kept session");
}

/// A GET for the session's stream, answered (404 in sse-404) once the session sent a tool call.
async fn open_get(c: &HandClient) -> tokio::task::JoinHandle<u16> {
    let req = c
        .http
        .get(&c.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", c.session.clone().unwrap());
    tokio::spawn(async move { req.send().await.unwrap().status().as_u16() })
}

#[tokio::test]
async fn sse_404_answers_the_get_after_the_first_call_and_catches_a_recycle() {
    let behaviour = scenario::find(ScenarioName::Sse404).behaviour;
    // A client that opens the GET stream while connecting, as the SDK does: the 404
    // waits past its tool list for its first call, so it reaches a client that has
    // finished connecting, however slowly that client handles the tool list.
    for recycle in [false, true] {
        let server = start(behaviour.clone()).await;
        let mut c = HandClient::new(&server);
        c.initialize("2025-06-18").await;
        let get = open_get(&c).await;
        assert_eq!(c.list().await.status, 200);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!get.is_finished(), "the GET is held until the first call");
        let mut view = CallerView::default();
        view.saw(
            "c0",
            "echo",
            &c.call("echo", "c0", json!({"text": "before"})).await,
        );
        assert_eq!(get.await.unwrap(), 404);
        if recycle {
            reconnect(&mut c).await;
        }
        view.saw(
            "c1",
            "echo",
            &c.call("echo", "c1", json!({"text": "a"})).await,
        );
        let j = judge(&server, ScenarioName::Sse404, &view, true);
        if recycle {
            assert_eq!((j.verdict, j.ok), ("RECYCLED", false));
            assert_eq!(
                j.note,
                "2 initialize handshakes: a healthy session was thrown away"
            );
        } else {
            assert_eq!((j.verdict, j.ok), ("HELD", true), "{}", j.note);
            assert_eq!(
                j.note,
                "the GET 404 changed nothing: same session, no new initialize"
            );
        }
    }
    // A client that never opened the stream tested nothing.
    let server = start(behaviour).await;
    let c = connected(&server).await;
    let mut view = CallerView::default();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    let j = judge(&server, ScenarioName::Sse404, &view, true);
    assert_eq!((j.verdict, j.ok), ("BROKEN", false));
    assert_eq!(
        j.note,
        "the client never met the GET 404 after it connected: nothing was tested"
    );
}

/// Drive a forgetful server by hand: each call meets a lost session; reconnect
/// `reconnects` times, waiting `backoff(attempt)` before each.
async fn forgetful(reconnects: u32, backoff: impl Fn(u32) -> u64) -> Judgement {
    let server = start(scenario::find(ScenarioName::Forgetful).behaviour).await;
    let mut c = connected(&server).await;
    let mut view = CallerView::default();
    let mut n = 0;
    for attempt in 1..=reconnects {
        n += 1;
        let id = format!("c{n}");
        assert!(!view.saw(
            &id,
            "echo",
            &c.call("echo", &id, json!({"text": "a"})).await
        ));
        tokio::time::sleep(Duration::from_millis(backoff(attempt))).await;
        reconnect(&mut c).await;
    }
    while view.calls.len() < scenario::FORGETFUL_CALLS {
        n += 1;
        let id = format!("c{n}");
        view.saw(
            &id,
            "echo",
            &c.call("echo", &id, json!({"text": "a"})).await,
        );
    }
    judge(&server, ScenarioName::Forgetful, &view, true)
}

#[tokio::test]
async fn a_forgetful_server_is_bounded_only_with_the_policys_backoff_and_attempts() {
    let policy = |attempt: u32| match attempt {
        1 => 0,
        n => Policy::Short.backoff(n).as_millis() as u64,
    };
    let j = forgetful(3, policy).await;
    assert_eq!(
        (j.verdict, j.ok, j.initialize_count),
        ("BOUNDED", true, 4),
        "{}",
        j.note
    );
    let j = forgetful(3, |_| 0).await;
    assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
    assert!(
        j.note.starts_with("reconnect attempt 2 started ")
            && j.note
                .ends_with(" ms after the loss; the policy's backoff is 200 ms"),
        "{}",
        j.note
    );
    let j = forgetful(6, |a| {
        if a == 1 {
            0
        } else {
            Policy::Short.backoff(a).as_millis() as u64
        }
    })
    .await;
    assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
    assert_eq!(
        j.note,
        "7 initialize handshakes, more than the 6 the policy allows (1 + 5 attempts)"
    );
}

#[tokio::test]
async fn a_call_that_outlives_its_timeout_is_unbounded() {
    let server = start(scenario::find(ScenarioName::Forgetful).behaviour).await;
    let c = connected(&server).await;
    let mut view = CallerView::default();
    for n in 1..=scenario::FORGETFUL_CALLS {
        let id = format!("c{n}");
        view.saw(
            &id,
            "echo",
            &c.call("echo", &id, json!({"text": "a"})).await,
        );
    }
    view.calls[3].ms = 3501;
    let j = judge(&server, ScenarioName::Forgetful, &view, true);
    assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
    assert_eq!(j.note, "call c4 took 3501 ms, past its 3000 ms timeout");
}

/// Drive cut-mid-call by hand: the slow call dies with the server; `resend` sends it
/// again after the restart; `recover` reconnects and calls again.
async fn cut(resend: bool, recover: bool, failed_after: usize) -> Judgement {
    let server = start(scenario::find(ScenarioName::CutMidCall).behaviour).await;
    let mut c = connected(&server).await;
    let mut view = CallerView::default();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    let next = server.generation() + 1;
    let cut = c
        .http
        .post(&c.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", c.session.clone().unwrap())
        .body(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": 5000, "call_id": "c2"}}}).to_string())
        .send()
        .await;
    assert!(cut.is_err(), "the connection is cut while the tool runs");
    view.claim("c2", "slow", false, Some("fetch failed".into()));
    for _ in 0..1000 {
        if server.generation() >= next {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    c.http = reqwest::Client::new();
    for n in 0..failed_after {
        let id = format!("f{n}");
        view.saw(
            &id,
            "echo",
            &c.call("echo", &id, json!({"text": "a"})).await,
        );
    }
    if resend {
        c.call("slow", "c2", json!({"ms": 0})).await;
    }
    if recover {
        reconnect(&mut c).await;
        view.saw(
            "c3",
            "echo",
            &c.call("echo", "c3", json!({"text": "a"})).await,
        );
    }
    judge(&server, ScenarioName::CutMidCall, &view, true)
}

#[tokio::test]
async fn a_call_cut_while_its_tool_runs_must_never_be_sent_again() {
    let j = cut(false, true, 0).await;
    assert_eq!(
        (j.verdict, j.ok, j.failed_calls),
        ("NOT-RETRIED", true, 1),
        "{}",
        j.note
    );
    assert_eq!(
        j.note,
        "the cut call failed once and was not sent again (its tool ran 1 time(s)); calls worked again after the restart"
    );
    let j = cut(true, true, 0).await;
    assert_eq!((j.verdict, j.ok), ("REPEATED", false));
    let j = cut(false, false, 0).await;
    assert_eq!((j.verdict, j.ok), ("STUCK", false));
    // The current revision must also recover without another failed call.
    let j = cut(false, true, 1).await;
    assert_eq!((j.verdict, j.ok), ("NOT-RETRIED", false));
    assert!(
        j.note
            .ends_with("; 1 call(s) besides the cut one failed after the restart"),
        "{}",
        j.note
    );
}

// Several workers, as verify runs the server: the calls' answers can then
// race the server's own steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_batch_runs_the_first_calls_and_loses_the_session_under_the_rest() {
    let server = start(scenario::find(ScenarioName::ConcurrentLoss).behaviour).await;
    let mut c = connected(&server).await;
    server.hold_calls(4, 1);
    let mut sends = Vec::new();
    for i in 0..4 {
        let client = HandClient {
            http: c.http.clone(),
            url: c.url.clone(),
            session: c.session.clone(),
        };
        sends.push(tokio::spawn(async move {
            let id = format!("h{i}");
            let r = client.call("echo", &id, json!({"text": "a"})).await;
            (id, r.status)
        }));
        // In order: the first to arrive is the one that runs.
        for _ in 0..200 {
            if server.call_counts().len() > i {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let mut statuses = Vec::new();
    for s in sends {
        statuses.push(s.await.unwrap());
    }
    assert_eq!(
        statuses,
        [
            ("h0".into(), 200),
            ("h1".into(), 404),
            ("h2".into(), 404),
            ("h3".into(), 404)
        ]
    );
    // The loss is in the witness before any answer that met it.
    let w = server.witness();
    let loss = w
        .iter()
        .position(|e| e.note.as_deref() == Some("concurrent loss: dropped 1 session(s)"));
    let first_lost = w.iter().position(|e| e.status == 404);
    assert!(loss.is_some() && loss < first_lost, "{w:#?}");
    let counts = server.call_counts();
    assert_eq!((counts["h0"].sent, counts["h0"].ran), (1, 1));
    assert_eq!((counts["h1"].sent, counts["h1"].ran), (1, 0));
    // Calls that met the loss, sent once more on one new session: seamless.
    reconnect(&mut c).await;
    let mut view = CallerView::default();
    view.claim("h0", "echo", true, None);
    for id in ["h1", "h2", "h3"] {
        view.saw(id, "echo", &c.call("echo", id, json!({"text": "a"})).await);
    }
    let j = judge(&server, ScenarioName::ConcurrentLoss, &view, true);
    assert_eq!(
        (j.verdict, j.ok, j.initialize_count),
        ("SEAMLESS", true, 2),
        "{}",
        j.note
    );
    // A second new session for the same loss is not seamless.
    reconnect(&mut c).await;
    let j = judge(&server, ScenarioName::ConcurrentLoss, &view, true);
    assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
    assert_eq!(
        j.note,
        "fresh initialize without the dead id, tools re-listed, calls succeeded; 1 more initialize(s) after it"
    );
}

#[tokio::test]
async fn a_forgetful_server_loses_a_never_listed_session_at_its_first_call_before_the_tool_runs() {
    let server = start(scenario::find(ScenarioName::Forgetful).behaviour).await;
    // Listed: lost right after its tool list.
    let mut c = connected(&server).await;
    assert_eq!(c.call("echo", "c1", json!({"text": "a"})).await.status, 404);
    // A new session never listed (a transport that renews it and repeats the call).
    c.initialize("2025-06-18").await;
    let repeat = c.call("echo", "c1", json!({"text": "a"})).await;
    assert_eq!(
        (repeat.status, repeat.json()),
        (
            404,
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32001, "message": "Session not found"}})
        )
    );
    let notes: Vec<String> = server
        .witness()
        .into_iter()
        .filter_map(|e| e.note)
        .collect();
    assert_eq!(
        notes,
        [
            "forgetful: lost the session after its tool list: dropped 1 session(s)",
            "forgetful: lost the session at its first tool call (never listed): dropped 1 session(s)"
        ]
    );
    let c1 = server.call_counts()["c1"];
    assert_eq!((c1.sent, c1.ran), (2, 0));
}

#[tokio::test]
async fn refused_once_refuses_only_the_first_new_session_after_a_loss_with_its_words() {
    let server = start(scenario::find(ScenarioName::RefusedOnce).behaviour).await;
    // No session lost yet: the first initialize is answered.
    let mut c = connected(&server).await;
    let mut view = CallerView::default();
    view.saw(
        "c1",
        "echo",
        &c.call("echo", "c1", json!({"text": "a"})).await,
    );
    server.invalidate();
    let lost = c.call("echo", "c2", json!({"text": "a"})).await;
    assert_eq!(lost.status, 404);
    c.session = None;
    let refused = c.post(initialize_request()).await;
    assert_eq!(
        (
            refused.status,
            refused.session.as_deref(),
            refused.body.as_str()
        ),
        (
            503,
            None,
            "Service Unavailable: session store unavailable, cannot open a session now"
        )
    );
    // The caller of c2 gets the refusal's words.
    view.claim(
        "c2",
        scenario::REFUSED_CALL,
        false,
        Some(refused.body.clone()),
    );
    // The next new session is accepted, and calls work on it.
    reconnect(&mut c).await;
    assert!(view.saw(
        "c3",
        "echo",
        &c.call("echo", "c3", json!({"text": "a"})).await
    ));
    let j = judge(&server, ScenarioName::RefusedOnce, &view, true);
    assert_eq!(
        (j.verdict, j.ok, j.failed_calls, j.initialize_count),
        ("RECOVERED", true, 1, 2),
        "{}",
        j.note
    );
    // Only once: a later loss gets a new session at once.
    server.invalidate();
    c.session = None;
    assert_eq!(c.post(initialize_request()).await.status, 200);
}

#[tokio::test]
async fn the_witness_records_each_initializes_params_bounded_and_escaped() {
    use mcpatch::verify::fake_server::InitializeParams;
    let server = start(ServerBehaviour::default()).await;
    let c = HandClient::new(&server);
    let long = "x".repeat(400);
    let r = c
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18",
                "capabilities": {"roots": {"listChanged": true}, "elicitation": {}},
                "clientInfo": {"version": "1.2.0", "name": "agent\u{1b}]0;owned\u{7}"}}}))
        .await;
    assert_eq!(r.status, 200);
    let r = c
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "initialize",
            "params": {"clientInfo": {"name": long}}}))
        .await;
    assert_eq!(r.status, 200);
    let params: Vec<Option<InitializeParams>> = server
        .witness()
        .into_iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize"))
        .map(|e| e.initialize)
        .collect();
    assert_eq!(
        params,
        [
            Some(InitializeParams {
                protocol_version: "\"2025-06-18\"".into(),
                // Compact JSON, keys sorted: one client's params compare equal however it orders them.
                capabilities: "{\"elicitation\":{},\"roots\":{\"listChanged\":true}}".into(),
                // Control characters come escaped, as JSON writes them.
                client_info: "{\"name\":\"agent\\u001b]0;owned\\u0007\",\"version\":\"1.2.0\"}"
                    .into(),
            }),
            Some(InitializeParams {
                protocol_version: "absent".into(),
                capabilities: "absent".into(),
                // Cut to the witness's 256 bytes.
                client_info: format!("{{\"name\":\"{}…", "x".repeat(256 - 9)),
            }),
        ]
    );
}

#[tokio::test]
async fn a_tool_call_whose_client_hangs_up_before_the_answer_is_noted_unanswered() {
    use mcpatch::verify::fake_server::UNANSWERED_NOTE;
    let server = start(ServerBehaviour::default()).await;
    let mut c = HandClient::new(&server);
    c.initialize("2025-06-18").await;
    // The client gives up on a 2 s tool after 200 ms: its connection closes.
    c.http = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let gave_up = c
        .http
        .post(&c.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", c.session.clone().unwrap())
        .body(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "slow", "arguments": {"text": "a", "ms": 2000, "call_id": "c5"}}})
            .to_string(),
        )
        .send()
        .await;
    assert!(gave_up.is_err(), "the slow call answered within 200 ms");
    let noted = || {
        server
            .witness()
            .into_iter()
            .filter_map(|e| e.note)
            .filter(|n| n.starts_with(UNANSWERED_NOTE))
            .collect::<Vec<_>>()
    };
    for _ in 0..200 {
        if !noted().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        noted(),
        ["unanswered: the request of call c5 ended before its answer (its connection closed)"]
    );
    // An answered call leaves no such note.
    c.call_echo().await;
    assert_eq!(noted().len(), 1);
}
