//! mcpatch as the stdio MCP host of the bridge under test: newline-delimited
//! JSON-RPC over the bridge's stdin and stdout, as MCP's stdio transport says.
//! Requests go out with ids of their own; a reader task matches the answers,
//! answers the bridge's own requests (ping, roots/list), and notices when the
//! bridge's stdout ends. Every wait is bounded by the caller, and so is what
//! waits to be written: a bridge that floods requests and reads no answer
//! gets at most [`REPLIES_QUEUED`] answers queued, the rest dropped. An answer
//! to an id mcpatch never sent (the bridge passing on the answer to a request
//! of its own) is kept apart: a host must never see one. The host of a proxy,
//! which keeps no tool list of its own, lists the tools again when the
//! bridge passes on `notifications/tools/list_changed`, as an MCP host does
//! ([`Relist`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::oneshot;

/// Longest line read from the bridge; a longer one is dropped.
const MAX_LINE_BYTES: u64 = 4 << 20;
/// Lines on the bridge's stdout that were no JSON-RPC message, kept for the report.
const STRAY_LINES: usize = 20;
/// Answers to the bridge's own requests waiting to be written; more are dropped.
const REPLIES_QUEUED: usize = 32;
/// Tool lists the host of a proxy asks for on announcements, at most ([`Relist`]).
const MAX_RELISTS: u32 = 16;
/// Noted once when an answer to the bridge was dropped.
const REPLIES_DROPPED: &str =
    "(answers to the bridge's own requests were dropped: it did not read its stdin)";

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAnswer {
    /// None came within the limit; the bridge's stdout is still open.
    Timeout,
    /// The bridge's stdout ended (it exited or closed it) first.
    Closed,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// Whether the host lists the tools again (`tools/list`, its answer not
/// waited for) when the bridge passes on `notifications/tools/list_changed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relist {
    /// A proxy passes its server's announcements on and keeps no tool list:
    /// its host lists again, and the server sees whether that reached it.
    OnAnnouncement,
    /// A client that speaks MCP itself lists again on its own (or not: that is judged).
    Never,
}

/// How the host of a client re-lists: a proxy's (`own_handshake` false) on
/// each announcement it passes on, a client that speaks MCP itself never.
pub fn relist_for(own_handshake: bool) -> Relist {
    if own_handshake {
        Relist::Never
    } else {
        Relist::OnAnnouncement
    }
}

/// The host side of one bridge's stdio.
pub struct Host {
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
    closed: Arc<AtomicBool>,
    /// Lines on stdout that were not JSON-RPC messages.
    pub stray: Arc<Mutex<Vec<String>>>,
    /// Answers to ids mcpatch never sent (late answers to its own are not here).
    pub foreign: Arc<Mutex<Vec<String>>>,
    reader: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<()>,
}

impl Host {
    pub fn new(stdin: ChildStdin, stdout: ChildStdout, relist: Relist) -> Host {
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let stray: Arc<Mutex<Vec<String>>> = Arc::default();
        let foreign: Arc<Mutex<Vec<String>>> = Arc::default();
        let next_id = Arc::new(AtomicU64::new(1));
        let (replies, mut queued) = tokio::sync::mpsc::channel::<Value>(REPLIES_QUEUED);
        // One writer for the answers, so reading stdout never waits on stdin.
        let out = stdin.clone();
        let writer = tokio::spawn(async move {
            while let Some(reply) = queued.recv().await {
                if !write_line(&out, &reply).await {
                    break;
                }
            }
        });
        let seen = Seen {
            stray: stray.clone(),
            foreign: foreign.clone(),
            next_id: next_id.clone(),
            relist,
            relists: AtomicU32::new(0),
        };
        let reader = tokio::spawn(read_loop(
            stdout,
            replies,
            pending.clone(),
            closed.clone(),
            seen,
        ));
        Host {
            stdin,
            pending,
            next_id,
            closed,
            stray,
            foreign,
            reader,
            writer,
        }
    }

    /// Send a request and wait up to `limit` for its answer (the whole
    /// JSON-RPC response: `result` or `error`).
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, NoAnswer> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let exchange = async {
            if !self.send(&message).await {
                return Err(NoAnswer::Closed);
            }
            rx.await.map_err(|_| NoAnswer::Closed)
        };
        let answer = match tokio::time::timeout(limit, exchange).await {
            Ok(a) => a,
            Err(_) if self.is_closed() => Err(NoAnswer::Closed),
            Err(_) => Err(NoAnswer::Timeout),
        };
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
        answer
    }

    /// Send a notification; false when the bridge's stdin is closed.
    pub async fn notify(&self, method: &str, params: Value) -> bool {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    /// Whether the bridge's stdout has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Close the bridge's stdin: a stdio MCP server ends when its input ends.
    pub async fn close(&self) {
        let _ = self.stdin.lock().await.shutdown().await;
    }

    async fn send(&self, message: &Value) -> bool {
        write_line(&self.stdin, message).await
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

async fn write_line(stdin: &tokio::sync::Mutex<ChildStdin>, message: &Value) -> bool {
    let mut line = message.to_string();
    line.push('\n');
    let mut w = stdin.lock().await;
    w.write_all(line.as_bytes()).await.is_ok() && w.flush().await.is_ok()
}

/// Where the reader puts what answers no waiting request.
struct Seen {
    stray: Arc<Mutex<Vec<String>>>,
    foreign: Arc<Mutex<Vec<String>>>,
    /// The next id mcpatch will send: every id below it was sent.
    next_id: Arc<AtomicU64>,
    relist: Relist,
    /// Tool lists asked for on announcements so far.
    relists: AtomicU32,
}

async fn read_loop(
    stdout: ChildStdout,
    replies: tokio::sync::mpsc::Sender<Value>,
    pending: Pending,
    closed: Arc<AtomicBool>,
    seen: Seen,
) {
    let stray = &seen.stray;
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = match (&mut reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(n) => n,
            Err(_) => break,
        };
        if n == 0 {
            break;
        }
        if buf.last() != Some(&b'\n') && n as u64 == MAX_LINE_BYTES {
            // Too long: skip to the end of the line.
            let mut rest = Vec::new();
            if reader.read_until(b'\n', &mut rest).await.unwrap_or(0) == 0 {
                break;
            }
            keep_stray(
                stray,
                format!("(a line longer than {MAX_LINE_BYTES} bytes)"),
            );
            continue;
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let Ok(msg) = serde_json::from_str::<Value>(text) else {
            keep_stray(stray, text.to_string());
            continue;
        };
        handle(&msg, &replies, &pending, &seen);
    }
    closed.store(true, Ordering::SeqCst);
    // Every request still waiting learns that no answer will come.
    if let Ok(mut p) = pending.lock() {
        p.clear();
    }
}

fn handle(msg: &Value, replies: &tokio::sync::mpsc::Sender<Value>, pending: &Pending, seen: &Seen) {
    let stray = &*seen.stray;
    let method = msg.get("method").and_then(Value::as_str);
    let id = msg.get("id");
    match (method, id) {
        // The bridge's own request: answer what a host without roots or sampling answers.
        (Some(method), Some(id)) => {
            let reply = match method {
                "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
                _ => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("method not found: {method}")}}),
            };
            // Written aside by the writer; dropped when it has a full queue.
            if replies.try_send(reply).is_err() {
                keep_stray_once(stray, REPLIES_DROPPED);
            }
        }
        // The tool list changed: the host of a proxy lists the tools again.
        // The answer is not waited for (its sender's receiver is gone), but
        // its id is one mcpatch sent. Queued with the other answers, so
        // reading stdout never waits on stdin.
        (Some("notifications/tools/list_changed"), None)
            if seen.relist == Relist::OnAnnouncement =>
        {
            // At most MAX_RELISTS of them: a bridge that floods announcements
            // gets no more, so nothing the host keeps for them grows.
            if seen.relists.fetch_add(1, Ordering::SeqCst) >= MAX_RELISTS {
                return;
            }
            let id = seen.next_id.fetch_add(1, Ordering::SeqCst);
            let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
            if replies.try_send(list).is_err() {
                keep_stray_once(stray, REPLIES_DROPPED);
                return;
            }
            // Its answer is read by this same task, after this returns.
            if let Ok(mut p) = pending.lock() {
                p.insert(id, oneshot::channel().0);
            }
        }
        // Any other notification (progress, a log message): nothing to do.
        (Some(_), None) => {}
        (None, Some(id)) => {
            // mcpatch's ids are numbers; a bridge that turned one into text is forgiven.
            let number = id
                .as_u64()
                .or_else(|| id.as_str().and_then(|s| s.parse().ok()));
            let sender = number.and_then(|id| pending.lock().ok().and_then(|mut p| p.remove(&id)));
            match sender {
                Some(tx) => {
                    let _ = tx.send(msg.clone());
                }
                None => {
                    let line = format!("an answer to no request of mcpatch: {msg}");
                    let sent =
                        number.is_some_and(|n| n > 0 && n < seen.next_id.load(Ordering::SeqCst));
                    if !sent {
                        keep_stray(&seen.foreign, line.clone());
                    }
                    keep_stray(stray, line);
                }
            }
        }
        (None, None) => keep_stray(stray, msg.to_string()),
    }
}

fn keep_stray_once(stray: &Mutex<Vec<String>>, line: &str) {
    if stray.lock().is_ok_and(|s| !s.iter().any(|l| l == line)) {
        keep_stray(stray, line.to_string());
    }
}

fn keep_stray(stray: &Mutex<Vec<String>>, line: String) {
    if let Ok(mut s) = stray.lock() {
        if s.len() < STRAY_LINES {
            s.push(line.chars().take(300).collect());
        }
    }
}

/// A tools/call answer as the caller sees it: Ok(text) or Err(error text). A
/// JSON-RPC error gives its message (and its data when that is text); a tool
/// result with `isError` gives its text content.
pub fn call_outcome(answer: &Value) -> Result<String, String> {
    if let Some(error) = answer.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(an error without a message)");
        let text = match error.get("data").and_then(Value::as_str) {
            Some(data) if !message.contains(data) => format!("{message}: {data}"),
            _ => message.to_string(),
        };
        return Err(text);
    }
    let Some(result) = answer.get("result") else {
        return Err(format!("an answer with neither result nor error: {answer}"));
    };
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        Err(text)
    } else {
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_of_a_proxy_lists_the_tools_again_on_an_announcement_a_bounded_number_of_times() {
        let announcement = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let seen = |relist| Seen {
            stray: Arc::default(),
            foreign: Arc::default(),
            next_id: Arc::new(AtomicU64::new(7)),
            relist,
            relists: AtomicU32::new(0),
        };
        let (replies, mut queued) = tokio::sync::mpsc::channel::<Value>(64);
        let pending: Pending = Arc::default();
        let proxy = seen(Relist::OnAnnouncement);
        handle(&announcement, &replies, &pending, &proxy);
        assert_eq!(
            queued.try_recv().unwrap(),
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}})
        );
        // Its answer is one to a request mcpatch sent: neither foreign nor stray.
        handle(
            &json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}),
            &replies,
            &pending,
            &proxy,
        );
        assert!(proxy.foreign.lock().unwrap().is_empty());
        assert!(proxy.stray.lock().unwrap().is_empty());
        for _ in 0..100 {
            handle(&announcement, &replies, &pending, &proxy);
        }
        let mut asked = 1;
        while queued.try_recv().is_ok() {
            asked += 1;
        }
        assert_eq!(asked, MAX_RELISTS as usize);
        // A client that speaks MCP itself re-lists on its own: its host does not.
        let own = seen(Relist::Never);
        handle(&announcement, &replies, &pending, &own);
        assert!(queued.try_recv().is_err());
    }

    #[test]
    fn a_call_fails_on_a_jsonrpc_error_or_a_tool_error_with_their_words() {
        let ok = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}});
        assert_eq!(call_outcome(&ok), Ok("hi".into()));
        let tool = json!({"id": 1, "result": {"isError": true, "content": [{"type": "text", "text": "database connection lost"}]}});
        assert_eq!(call_outcome(&tool), Err("database connection lost".into()));
        let rpc = json!({"id": 1, "error": {"code": -32001, "message": "Session not found", "data": "details"}});
        assert_eq!(call_outcome(&rpc), Err("Session not found: details".into()));
        let neither = json!({"id": 1});
        assert_eq!(
            call_outcome(&neither),
            Err("an answer with neither result nor error: {\"id\":1}".into())
        );
    }
}
