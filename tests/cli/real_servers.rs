//! The real client and `mcpatch probe` against real MCP servers written by
//! others, fetched from the registries by scripts/fetch-fixtures.sh (pinned):
//! the TypeScript SDK server in its documented stateful and stateless
//! patterns, and the Python SDK's FastMCP with the streamable-http transport.
//! Each runs as its own process on 127.0.0.1; the tests wait on the lines it
//! prints ("listening", "session issued"), never on fixed sleeps.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;

/// The Python MCP SDK the fixtures run (scripts/fetch-fixtures.sh `PY_MCP`).
const PY_MCP: &str = "1.30.0";
/// How long a server or the client may take to start on a loaded machine.
const START_DEADLINE: Duration = Duration::from_secs(60);
/// How long the unpatched client is watched failing after the loss.
const STUCK_WINDOW: Duration = Duration::from_secs(3);
/// How long the patched client may take to recover after the loss.
const RECOVERY_DEADLINE: Duration = Duration::from_secs(30);
/// Calls that must succeed in a row to count as recovered.
const RECOVERED_AFTER: usize = 3;

/// How many calls may fail once the session is lost and the server answers again.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test-fixtures/real-servers")
        .join(name)
}

fn fetched(dir: &str, what: &str) -> PathBuf {
    let p = cache().join("mcp-servers").join(dir);
    assert!(
        p.join(".done").is_file(),
        "{what} is missing from {}: run scripts/fetch-fixtures.sh (needs npm and the npm registry, python3 with venv and PyPI)",
        p.display()
    );
    p
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// TypeScript SDK, a transport per session.
    TsStateful,
    /// TypeScript SDK, a server and transport per request, no session.
    TsStateless,
    /// Python SDK FastMCP, streamable-http, stateful.
    PythonFastMcp,
}

/// Lines a child process printed, as they come and all so far.
struct Lines {
    rx: Receiver<String>,
    all: Arc<Mutex<Vec<String>>>,
}

impl Lines {
    fn follow(stream: impl std::io::Read + Send + 'static) -> Lines {
        let (tx, rx) = channel();
        let all = Arc::new(Mutex::new(Vec::new()));
        let keep = all.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                keep.lock().unwrap().push(line.clone());
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines { rx, all }
    }

    fn so_far(&self) -> Vec<String> {
        self.all.lock().unwrap().clone()
    }

    /// The next line `pick` accepts, within `deadline`.
    fn wait_for<T>(
        &self,
        deadline: Duration,
        mut pick: impl FnMut(&str) -> Option<T>,
    ) -> Option<T> {
        let until = Instant::now() + deadline;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(t) = pick(&line) {
                        return Some(t);
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    return None
                }
            }
        }
    }
}

/// A real MCP server process on 127.0.0.1.
pub(super) struct RealServer {
    kind: Kind,
    bearer: Option<String>,
    port: u16,
    child: Child,
    stdout: Lines,
    stderr: Lines,
}

impl RealServer {
    pub(super) fn start(kind: Kind, bearer: Option<&str>) -> RealServer {
        Self::spawn(kind, bearer.map(str::to_string), 0)
    }

    fn spawn(kind: Kind, bearer: Option<String>, port: u16) -> RealServer {
        let mut c = match kind {
            Kind::TsStateful | Kind::TsStateless => {
                let prefix = fetched(
                    &format!("ts-sdk-{TS_SDK}"),
                    &format!("@modelcontextprotocol/sdk@{TS_SDK}"),
                );
                let mut c = std::process::Command::new(node22_dir().join("node"));
                c.arg(fixture("ts-sdk-server.cjs"))
                    .arg(prefix)
                    .arg(if kind == Kind::TsStateful {
                        "stateful"
                    } else {
                        "stateless"
                    });
                c.arg(port.to_string());
                if let Some(b) = &bearer {
                    c.arg(b);
                }
                c
            }
            Kind::PythonFastMcp => {
                let venv = fetched(
                    &format!("py-mcp-{PY_MCP}"),
                    &format!("mcp=={PY_MCP} (PyPI)"),
                );
                let mut c = std::process::Command::new(venv.join("bin/python"));
                c.arg(fixture("fastmcp_server.py")).arg(port.to_string());
                c
            }
        };
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the {kind:?} server: {e}"));
        let stdout = Lines::follow(child.stdout.take().unwrap());
        let stderr = Lines::follow(child.stderr.take().unwrap());
        let mut server = RealServer {
            kind,
            bearer,
            port,
            child,
            stdout,
            stderr,
        };
        let listening = server.stdout.wait_for(START_DEADLINE, |line| {
            line.strip_prefix("listening http://127.0.0.1:")
                .and_then(|rest| rest.strip_suffix("/mcp"))
                .and_then(|p| p.parse::<u16>().ok())
        });
        server.port = listening.unwrap_or_else(|| {
            panic!(
                "the {kind:?} server did not print `listening` within {START_DEADLINE:?}:\n{}",
                server.output()
            )
        });
        if port != 0 {
            assert_eq!(server.port, port, "restarted on the same port");
        }
        server
    }

    pub(super) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn output(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.stdout.so_far().join("\n"),
            self.stderr.so_far().join("\n")
        )
    }

    /// Session ids the server printed as issued.
    fn issued_sessions(&self) -> Vec<String> {
        self.stdout
            .so_far()
            .iter()
            .filter_map(|l| l.strip_prefix("session issued ").map(str::to_string))
            .collect()
    }

    /// Kill the process (every session it held is gone) and start it again on the same port.
    fn restart(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        *self = Self::spawn(self.kind, self.bearer.clone(), self.port);
    }
}

impl Drop for RealServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The real installed client in node, driven over stdin
/// (test-fixtures/real-servers/client-driver.mjs).
struct Client {
    child: Child,
    stdin: ChildStdin,
    events: Lines,
    stderr: Lines,
}

impl Client {
    fn start(package: &Path, url: &str) -> Client {
        let config = json!({
            "url": url,
            "serverName": "real",
            "callTimeoutMs": 10_000,
            "reconnect": {"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 10},
        });
        let mut child = std::process::Command::new(node22_dir().join("node"))
            .arg(fixture("client-driver.mjs"))
            .arg(package.join("lib/index.js"))
            .arg(config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let events = Lines::follow(child.stdout.take().unwrap());
        let stderr = Lines::follow(child.stderr.take().unwrap());
        let client = Client {
            child,
            stdin,
            events,
            stderr,
        };
        let ready = client.next_event(START_DEADLINE, &["ready", "fatal"]);
        assert_eq!(
            ready["event"],
            "ready",
            "the client did not start: {ready}\n{}",
            client.output()
        );
        assert_eq!(
            ready["tools"],
            json!(["mcp__real__echo"]),
            "{}",
            client.output()
        );
        client
    }

    fn next_event(&self, deadline: Duration, names: &[&str]) -> Value {
        self.events
            .wait_for(deadline, |line| {
                let v: Value = serde_json::from_str(line).ok()?;
                names.contains(&v["event"].as_str()?).then_some(v)
            })
            .unwrap_or_else(|| {
                panic!(
                    "no {names:?} event from the client within {deadline:?}:\n{}",
                    self.output()
                )
            })
    }

    fn output(&self) -> String {
        format!(
            "events:\n{}\nstderr:\n{}",
            self.events.so_far().join("\n"),
            self.stderr.so_far().join("\n")
        )
    }

    /// Call the server's echo tool; its text, or the error the caller saw.
    fn echo(&mut self, text: &str) -> Result<String, String> {
        let cmd = json!({"call": "echo", "args": {"text": text}});
        writeln!(self.stdin, "{cmd}").unwrap();
        let r = self.next_event(Duration::from_secs(30), &["call"]);
        if r["ok"] == true {
            Ok(r["text"].as_str().unwrap_or("").to_string())
        } else {
            Err(r["error"].as_str().unwrap_or("").to_string())
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"quit": true}));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How the server loses the client's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loss {
    /// The server process restarts on the same port.
    Restart,
    /// The session is ended by DELETE, as any client may end its own.
    Delete,
}

/// DELETE `session` at `url`; the HTTP status.
fn delete_session(url: &str, session: &str) -> u16 {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            reqwest::Client::new()
                .delete(url)
                .header("mcp-session-id", session)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
}

/// What the calls after the loss did.
struct AfterLoss {
    failed: usize,
    succeeded: usize,
    errors: Vec<String>,
    /// The client's events and the server's output, for failure messages.
    log: String,
}

impl std::fmt::Debug for AfterLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} failed, {} succeeded; errors: {:#?}\n{}",
            self.failed, self.succeeded, self.errors, self.log
        )
    }
}

/// Call until [`RECOVERED_AFTER`] calls succeed or `window` passes.
fn calls_after_loss(client: &mut Client, window: Duration) -> AfterLoss {
    let until = Instant::now() + window;
    let mut after = AfterLoss {
        failed: 0,
        succeeded: 0,
        errors: Vec::new(),
        log: String::new(),
    };
    for n in 0.. {
        let text = format!("after {n}");
        match client.echo(&text) {
            Ok(got) => {
                assert_eq!(got, text);
                after.succeeded += 1;
                if after.succeeded == RECOVERED_AFTER {
                    break;
                }
            }
            Err(e) => {
                after.failed += 1;
                after.errors.push(e);
                if Instant::now() >= until {
                    break;
                }
                // Pace the retries like a user would; the window decides, not this.
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    after
}

/// Lose the session of a connected client, then count its failed calls.
fn run_session_loss(kind: Kind, loss: Loss, package: &Path, window: Duration) -> AfterLoss {
    let mut server = RealServer::start(kind, None);
    let mut client = Client::start(package, &server.url());
    assert_eq!(client.echo("before"), Ok("before".to_string()));
    match loss {
        Loss::Restart => server.restart(),
        Loss::Delete => {
            let issued = server.issued_sessions();
            assert_eq!(
                issued.len(),
                1,
                "one session, the client's: {}",
                server.output()
            );
            assert_eq!(delete_session(&server.url(), &issued[0]), 200);
        }
    }
    let mut after = calls_after_loss(&mut client, window);
    after.log = format!("client {}\nserver {}", client.output(), server.output());
    after
}

/// The unpatched client stays STUCK; the patched one recovers with `expected` failed calls.
fn unpatched_stuck_patched_recovers(kind: Kind, loss: Loss) {
    let sb = Sandbox::new();
    let unpatched = sb.client_install("0.1.0-rc.8", "unpatched");
    let patched = sb.client_install("0.1.0-rc.8", "patched");
    let o = sb.run(&["apply", "--path", patched.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    let stuck = run_session_loss(kind, loss, &unpatched, STUCK_WINDOW);
    assert_eq!(
        stuck.succeeded, 0,
        "{kind:?} {loss:?}: the unpatched client is STUCK, every later call fails: {stuck:?}"
    );
    assert!(stuck.failed >= 2, "{stuck:?}");
    assert!(
        stuck.errors.iter().all(|e| e.contains("Session not found")),
        "each failure carries the server's words: {stuck:?}"
    );

    let healed = run_session_loss(kind, loss, &patched, RECOVERY_DEADLINE);
    assert_eq!(
        healed.succeeded, RECOVERED_AFTER,
        "{kind:?} {loss:?}: the patched client recovers: {healed:?}"
    );
    assert_eq!(
        healed.failed, 0,
        "{kind:?} {loss:?}: the patched client recovers SEAMLESSLY, no call fails: {healed:?}"
    );
}

#[test]
fn the_typescript_sdk_server_restarting_leaves_the_unpatched_client_stuck_and_the_patched_one_recovers(
) {
    unpatched_stuck_patched_recovers(Kind::TsStateful, Loss::Restart);
}

#[test]
fn a_delete_ending_the_session_on_the_typescript_sdk_server_leaves_the_unpatched_client_stuck_and_the_patched_one_recovers(
) {
    unpatched_stuck_patched_recovers(Kind::TsStateful, Loss::Delete);
}

#[test]
fn the_python_sdk_fastmcp_server_restarting_leaves_the_unpatched_client_stuck_and_the_patched_one_recovers(
) {
    unpatched_stuck_patched_recovers(Kind::PythonFastMcp, Loss::Restart);
}

#[test]
fn a_delete_ending_the_session_on_the_python_sdk_fastmcp_server_leaves_the_unpatched_client_stuck_and_the_patched_one_recovers(
) {
    unpatched_stuck_patched_recovers(Kind::PythonFastMcp, Loss::Delete);
}

fn probe_json(sb: &Sandbox, args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["probe", "--json"];
    all.extend_from_slice(args);
    let o = sb.run(&all);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    (code(&o), v, stderr(&o))
}

/// The answer every case got: (case, status, content type, body, session_lost).
fn answers(v: &Value) -> Vec<(String, u64, String, String, bool)> {
    v["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["case"].as_str().unwrap().into(),
                a["status"].as_u64().unwrap(),
                a["content_type"].as_str().unwrap_or("").into(),
                a["body"].as_str().unwrap().into(),
                a["session_lost"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn expected_answers(
    lost: (u64, &str, &str),
    deleted: (u64, &str, &str),
) -> Vec<(String, u64, String, String, bool)> {
    let (status, ct, body) = lost;
    let row = |case: &str| {
        (
            case.to_string(),
            status,
            ct.to_string(),
            body.to_string(),
            true,
        )
    };
    vec![
        row("unknown-session-tools-list"),
        row("unknown-session-ping"),
        (
            "delete-own-session".into(),
            deleted.0,
            deleted.1.into(),
            deleted.2.into(),
            false,
        ),
        row("deleted-session-tools-list"),
    ]
}

#[test]
fn probe_says_covered_for_the_typescript_sdk_server_which_answers_404_session_not_found() {
    let server = RealServer::start(Kind::TsStateful, None);
    let sb = Sandbox::new();
    let (code, v, err) = probe_json(&sb, &[&server.url()]);
    assert_eq!(code, 0, "{v:#} {err}\n{}", server.output());
    assert_eq!(v["verdict"], "covered");
    assert_eq!(v["session_issued"], true);
    assert_eq!(v["protocol_version"], "2025-11-25");
    assert_eq!(
        answers(&v),
        expected_answers(
            (
                404,
                "application/json; charset=utf-8",
                r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}"#
            ),
            (200, "", "")
        )
    );
    // The probe's own session was opened and ended, and nothing else.
    assert_eq!(server.issued_sessions().len(), 1);
}

#[test]
fn probe_says_covered_for_the_python_sdk_fastmcp_server_which_answers_404_session_not_found() {
    let server = RealServer::start(Kind::PythonFastMcp, None);
    let sb = Sandbox::new();
    let (code, v, err) = probe_json(&sb, &[&server.url()]);
    assert_eq!(code, 0, "{v:#} {err}\n{}", server.output());
    assert_eq!(v["verdict"], "covered");
    assert_eq!(v["session_issued"], true);
    assert_eq!(v["protocol_version"], "2025-11-25");
    assert_eq!(
        answers(&v),
        expected_answers(
            (
                404,
                "application/json",
                r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Session not found"}}"#
            ),
            (200, "application/json", "")
        )
    );
    assert_eq!(server.issued_sessions().len(), 1);
}

#[test]
fn probe_follows_a_redirect_within_the_server_as_the_client_does() {
    // Starlette answers /mcp/ with 307 to /mcp, which the client's SDK follows.
    let server = RealServer::start(Kind::PythonFastMcp, None);
    let sb = Sandbox::new();
    let slash = format!("{}/", server.url());
    let o = sb.run(&["probe", "-v", &slash]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains(&format!("\n< 307 redirect, followed to {}\n", server.url())),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("\ncovered: "), "{}", stdout(&o));
}

#[test]
fn probe_says_stateless_for_the_typescript_sdk_stateless_server() {
    let server = RealServer::start(Kind::TsStateless, None);
    let sb = Sandbox::new();
    let o = sb.run(&["probe", &server.url()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!(
            "probe {}\nsession: none issued (protocol 2025-11-25, 1 tool(s) listed)\n",
            server.url()
        )),
        "{out}"
    );
    assert!(
        out.ends_with("\nstateless: the server issued no session id, so there is no session to lose; DSH works with it, patched or not\n"),
        "{out}"
    );
    let (code, v, _) = probe_json(&sb, &[&server.url()]);
    assert_eq!(code, 0);
    assert_eq!(v["verdict"], "stateless");
    assert_eq!(v["session_issued"], false);
    let statuses: Vec<u64> = v["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [200, 200], "it serves any session id: {v:#}");
}

#[test]
fn probe_behind_bearer_auth_needs_the_token_and_never_prints_it() {
    let token = "fixture-t0ken-9f8e7d";
    let server = RealServer::start(Kind::TsStateful, Some(token));
    let sb = Sandbox::new();
    let url = server.url();

    let o = sb.run(&["probe", &url]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("error: {url} refused the probe's credentials: initialize answered HTTP 401 {{\"error\":\"invalid_token\",\"error_description\":\"Missing Authorization header\"}}\nhelp: pass the credentials DSH sends, e.g. --header 'Authorization: Bearer TOKEN' (the `headers` of this server in the DSH config)\n")
    );

    // A wrong token, which this server repeats in its error.
    let wrong = "Authorization: Bearer wr0ng-t0ken-123";
    let o = sb.run(&["probe", "-v", &url, "--header", wrong]);
    assert_eq!(code(&o), 2);
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(!all.contains("wr0ng"), "{all}");
    assert!(
        all.contains("\"error_description\":\"Invalid token [redacted]\""),
        "{all}"
    );
    assert!(stderr(&o).ends_with("\nhelp: the server refused the headers given (authorization): check their values against the `headers` of this server in the DSH config\n"), "{all}");
    let (exit, v, _) = probe_json(&sb, &["-v", &url, "--header", wrong]);
    assert_eq!(exit, 2);
    assert_eq!(v["verdict"], "auth-failure");
    assert_eq!(v["answers"][0]["case"], "initialize");
    assert_eq!(v["answers"][0]["status"], 401);

    let right = format!("Authorization: Bearer {token}");
    for json in [false, true] {
        let mut args = vec!["probe", "-v", url.as_str(), "--header", right.as_str()];
        if json {
            args.push("--json");
        }
        let o = sb.run(&args);
        assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!all.contains(token), "{all}");
        assert!(all.contains("> authorization: [redacted]\n"));
    }
}
