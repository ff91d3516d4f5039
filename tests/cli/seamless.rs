//! The rules of seamless recovery, each on the REAL client patched by `mcpatch
//! apply`, driven step by step (test-fixtures/session-rules.mjs) against the
//! bundled fake server, judged from the server's counts and what the caller saw.
//! (The verify scenarios cover the rest on the same client: concurrent calls,
//! ordinary errors, a cut mid-call, a server that keeps losing sessions.)

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use mcpatch::verify::fake_server::{FakeServer, ServerBehaviour};
use serde_json::{json, Value};

use super::*;

/// What the driven client's caller and logger saw.
#[derive(Debug, Default)]
struct Driven {
    /// call id -> (ok, error, ms, error name)
    calls: HashMap<String, (bool, Option<String>, u64, Option<String>)>,
    logs: Vec<(String, String)>,
}

impl Driven {
    fn call(&self, id: &str) -> &(bool, Option<String>, u64, Option<String>) {
        self.calls
            .get(id)
            .unwrap_or_else(|| panic!("call {id} never ended: {self:#?}"))
    }

    fn logs(&self, level: &str) -> Vec<&str> {
        self.logs
            .iter()
            .filter(|(l, _)| l == level)
            .map(|(_, m)| m.as_str())
            .collect()
    }
}

/// A sandbox with the real 0.1.0-rc.8 client patched by `mcpatch apply`.
fn patched_client(sb: &Sandbox) -> PathBuf {
    let client = sb.client_install("0.1.0-rc.8", "g");
    let o = sb.run(&["apply", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
    client.join("lib/index.js")
}

/// Run the driver over `steps`; at each `wait` step, `at_wait(label)` acts on the server.
fn drive(file: &Path, config: Value, mut at_wait: impl FnMut(&str)) -> Driven {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/session-rules.mjs");
    let mut child = std::process::Command::new(node22_dir().join("node"))
        .arg(&driver)
        .arg(mcpatch::stage::file_url(file))
        .arg(config.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut driven = Driven::default();
    for line in out.lines() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let s = |k: &str| v[k].as_str().map(str::to_string);
        match v["event"].as_str().unwrap() {
            "waiting" => {
                at_wait(v["label"].as_str().unwrap());
                stdin.write_all(b"\n").unwrap();
            }
            "call" => {
                driven.calls.insert(
                    s("id").unwrap(),
                    (
                        v["ok"].as_bool().unwrap(),
                        s("error"),
                        v["ms"].as_u64().unwrap(),
                        s("name"),
                    ),
                );
            }
            "log" => driven.logs.push((s("level").unwrap(), s("msg").unwrap())),
            _ => {}
        }
    }
    assert!(child.wait().unwrap().success(), "the driver failed");
    driven
}

fn start(rt: &tokio::runtime::Runtime, behaviour: ServerBehaviour) -> FakeServer {
    rt.block_on(FakeServer::start(behaviour, 0)).unwrap()
}

fn initializes(server: &FakeServer) -> usize {
    server
        .witness()
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 200)
        .count()
}

/// A server that holds a re-initialize back far longer than any call waits.
fn slow_to_reconnect() -> ServerBehaviour {
    ServerBehaviour {
        reinit_delay: Some(Duration::from_secs(10)),
        ..Default::default()
    }
}

#[test]
fn the_first_reconnect_after_a_lost_session_starts_at_once_even_with_a_long_backoff() {
    let sb = Sandbox::new();
    let file = patched_client(&sb);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = start(&rt, ServerBehaviour::default());
    // A 20 s backoff: only a reconnect that starts at once lets c2 succeed within 5 s.
    let driven = drive(
        &file,
        json!({"url": server.url(), "toolCallTimeoutMs": 5000,
               "reconnect": {"initialDelayMs": 20000, "maxDelayMs": 20000, "maxAttempts": 3},
               "steps": [{"call": "echo", "args": {"text": "a"}, "id": "c1"}, {"wait": "invalidate"},
                         {"call": "echo", "args": {"text": "b"}, "id": "c2"}]}),
        |_| server.invalidate(),
    );
    assert!(driven.call("c1").0);
    assert!(driven.call("c2").0, "{driven:#?}");
    let counts = server.call_counts();
    assert_eq!((counts["c2"].sent, counts["c2"].ran), (2, 1));
    assert_eq!(initializes(&server), 2);
}

#[test]
fn a_call_waiting_for_the_new_session_ends_with_its_abort_signal_and_is_not_sent_again() {
    let sb = Sandbox::new();
    let file = patched_client(&sb);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = start(&rt, slow_to_reconnect());
    let driven = drive(
        &file,
        json!({"url": server.url(), "toolCallTimeoutMs": 20000,
               "steps": [{"call": "echo", "args": {"text": "a"}, "id": "c1"}, {"wait": "invalidate"},
                         {"call": "echo", "args": {"text": "b"}, "id": "c2", "abortMs": 300}]}),
        |_| server.invalidate(),
    );
    let (ok, error, ms, name) = driven.call("c2");
    assert!(!ok);
    assert_eq!(name.as_deref(), Some("TimeoutError"), "{error:?}");
    assert!(
        *ms < 5000,
        "the call ended with its signal, not with the 10 s reconnect: {ms} ms"
    );
    assert_eq!(server.call_counts()["c2"].sent, 1);
}

#[test]
fn a_call_waiting_for_the_new_session_ends_within_its_timeout_with_the_servers_words() {
    let sb = Sandbox::new();
    let file = patched_client(&sb);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = start(&rt, slow_to_reconnect());
    let driven = drive(
        &file,
        json!({"url": server.url(), "toolCallTimeoutMs": 500,
               "steps": [{"call": "echo", "args": {"text": "a"}, "id": "c1"}, {"wait": "invalidate"},
                         {"call": "echo", "args": {"text": "b"}, "id": "c2"}]}),
        |_| server.invalidate(),
    );
    let (ok, error, ms, _) = driven.call("c2");
    assert!(!ok);
    assert_eq!(
        error.as_deref(),
        Some(
            r#"Streamable HTTP error: Error POSTing to endpoint: {"error":{"code":-32001,"message":"Session not found"},"id":3,"jsonrpc":"2.0"}"#
        )
    );
    assert!(
        *ms < 5000,
        "bounded by its 500 ms timeout, not the 10 s reconnect: {ms} ms"
    );
    assert_eq!(server.call_counts()["c2"].sent, 1);
}

#[test]
fn with_reconnect_disabled_calls_fail_at_once_the_first_with_the_servers_words() {
    let sb = Sandbox::new();
    let file = patched_client(&sb);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = start(&rt, ServerBehaviour::default());
    let driven = drive(
        &file,
        json!({"url": server.url(), "toolCallTimeoutMs": 20000, "reconnect": {"enabled": false},
               "steps": [{"call": "echo", "args": {"text": "a"}, "id": "c1"}, {"wait": "invalidate"},
                         {"call": "echo", "args": {"text": "b"}, "id": "c2"},
                         {"call": "echo", "args": {"text": "c"}, "id": "c3"}]}),
        |_| server.invalidate(),
    );
    let (ok, error, ms, _) = driven.call("c2");
    assert!(!ok);
    assert!(
        error.as_deref().unwrap().contains("Session not found"),
        "{error:?}"
    );
    assert!(*ms < 5000, "not held for the 20 s timeout: {ms} ms");
    // A later call is not sent on the lost session at all: it fails at once, saying why.
    let (ok, error, ms, _) = driven.call("c3");
    assert!(!ok);
    assert_eq!(
        error.as_deref(),
        Some(
            r#"mcp-client(fake): the server no longer recognises the session (Streamable HTTP error: Error POSTing to endpoint: {"error":{"code":-32001,"message":"Session not found"},"id":3,"jsonrpc":"2.0"}) and reconnect is disabled"#
        )
    );
    assert!(*ms < 5000, "{ms} ms");
    assert!(!server.call_counts().contains_key("c3"));
    assert_eq!(initializes(&server), 1);
    assert_eq!(server.call_counts()["c2"].sent, 1);
}

#[test]
fn a_timed_out_call_is_never_sent_again() {
    let sb = Sandbox::new();
    let file = patched_client(&sb);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = start(&rt, ServerBehaviour::default());
    let driven = drive(
        &file,
        json!({"url": server.url(), "toolCallTimeoutMs": 300,
               "steps": [{"call": "slow", "args": {"ms": 1500}, "id": "c1"},
                         {"call": "echo", "args": {"text": "b"}, "id": "c2"}]}),
        |_| {},
    );
    let (ok, error, _, _) = driven.call("c1");
    assert!(!ok);
    assert_eq!(
        error.as_deref(),
        Some("MCP error -32001: Request timed out")
    );
    assert!(driven.call("c2").0);
    let counts = server.call_counts();
    assert_eq!((counts["c1"].sent, counts["c1"].ran), (1, 1));
    assert_eq!(initializes(&server), 1);
}

#[test]
fn a_repeat_that_meets_another_lost_session_fails_at_once_with_the_servers_words() {
    let sb = Sandbox::new();
    let file = patched_client(&sb);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Every session is lost right after its tool list.
    let server = start(
        &rt,
        ServerBehaviour {
            forget_after_list: true,
            ..Default::default()
        },
    );
    let driven = drive(
        &file,
        json!({"url": server.url(), "toolCallTimeoutMs": 20000,
               "reconnect": {"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 5},
               "steps": [{"call": "echo", "args": {"text": "a"}, "id": "c1"}]}),
        |_| {},
    );
    let (ok, error, ms, _) = driven.call("c1");
    assert!(!ok);
    assert!(
        error.as_deref().unwrap().contains("Session not found"),
        "{error:?}"
    );
    assert!(*ms < 5000, "no loop, no hang: {ms} ms");
    let counts = server.call_counts();
    assert_eq!((counts["c1"].sent, counts["c1"].ran), (2, 0));
    // The repeat went out on a new session, not the lost one.
    let sessions: Vec<_> = server
        .witness()
        .iter()
        .filter(|e| e.call_id.as_deref() == Some("c1"))
        .map(|e| e.session_sent.clone())
        .collect();
    assert_eq!(sessions.len(), 2);
    assert_ne!(sessions[0], sessions[1]);
}

#[test]
fn one_warning_names_the_server_and_the_reason_and_one_info_says_it_recovered() {
    let sb = Sandbox::new();
    let file = patched_client(&sb);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = start(&rt, ServerBehaviour::default());
    let driven = drive(
        &file,
        json!({"url": server.url(), "toolCallTimeoutMs": 5000,
               "reconnect": {"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 5},
               "steps": [{"call": "echo", "args": {"text": "a"}, "id": "c1"}, {"wait": "invalidate"},
                         {"call": "echo", "args": {"text": "b"}, "id": "c2"}]}),
        |_| server.invalidate(),
    );
    assert!(driven.call("c2").0);
    let warns = driven.logs("warn");
    assert_eq!(warns.len(), 1, "{driven:#?}");
    assert_eq!(
        warns[0],
        r#"mcp-client(fake): the server no longer recognises the session (Streamable HTTP error: Error POSTing to endpoint: {"error":{"code":-32001,"message":"Session not found"},"id":3,"jsonrpc":"2.0"}); reconnecting now with a fresh session (attempt 1/5)"#
    );
    assert_eq!(
        driven.logs("info"),
        ["mcp-client(fake): reconnected and re-synced tools (attempt 1/5)"]
    );
    assert!(driven.logs("error").is_empty(), "{driven:#?}");
}
