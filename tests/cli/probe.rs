//! `mcpatch probe` against the bundled fake server in each of its lost-session
//! answers, against nothing, against a server that never answers; and the
//! probe's Rust port of the patch's predicate against the patch's own
//! JavaScript, run in node on errors the real MCP SDK builds.

use std::net::TcpListener;

use mcpatch::probe::exchange::body_text;
use mcpatch::probe::predicate::{self, Predicate, SdkError};
use mcpatch::verify::fake_server::{FakeServer, LostSessionAnswer, ServerBehaviour};

use super::*;

/// A fake server on its own runtime, for as long as the value lives.
pub(super) struct Fake {
    server: FakeServer,
    _runtime: tokio::runtime::Runtime,
}

impl Fake {
    pub(super) fn start(lost_session: LostSessionAnswer) -> Fake {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime
            .block_on(FakeServer::start(
                ServerBehaviour {
                    lost_session,
                    ..Default::default()
                },
                0,
            ))
            .unwrap();
        Fake {
            server,
            _runtime: runtime,
        }
    }

    pub(super) fn url(&self) -> String {
        self.server.url()
    }
}

/// Output with `127.0.0.1:<port>` as `127.0.0.1:[PORT]` and column padding collapsed.
pub(super) fn shown(sb: &Sandbox, text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let mut out = String::new();
    let mut rest = text.as_ref();
    while let Some(i) = rest.find("127.0.0.1:") {
        out.push_str(&rest[..i + "127.0.0.1:".len()]);
        rest = &rest[i + "127.0.0.1:".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(if digits > 0 { "[PORT]" } else { "" });
        rest = &rest[digits..];
    }
    out.push_str(rest);
    sb.normalize(out.as_bytes())
}

fn probe_json(sb: &Sandbox, args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut all = vec!["probe", "--json"];
    all.extend_from_slice(args);
    let o = sb.run(&all);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "probe --json is not JSON ({e}): {}{}",
            stdout(&o),
            stderr(&o)
        )
    });
    (code(&o), v, stderr(&o))
}

fn answer_rows(v: &serde_json::Value) -> Vec<(String, u64, bool)> {
    v["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["case"].as_str().unwrap().to_string(),
                a["status"].as_u64().unwrap(),
                a["session_lost"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn rows(expected: &[(&str, u64, bool)]) -> Vec<(String, u64, bool)> {
    expected
        .iter()
        .map(|(c, s, l)| (c.to_string(), *s, *l))
        .collect()
}

#[test]
fn probe_says_covered_for_every_lost_session_answer_the_patch_recognises() {
    for (answer, status, body) in [
        (
            LostSessionAnswer::NotFoundJsonRpc,
            404,
            r#"{"error":{"code":-32001,"message":"Session not found"},"id":3,"jsonrpc":"2.0"}"#,
        ),
        (
            LostSessionAnswer::BadRequestNoValidSession,
            400,
            r#"{"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null,"jsonrpc":"2.0"}"#,
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
        let fake = Fake::start(answer);
        let sb = Sandbox::new();
        let (code, v, err) = probe_json(&sb, &[&fake.url()]);
        assert_eq!(code, 0, "{answer:?}: {v:#} {err}");
        assert_eq!(v["verdict"], "covered", "{answer:?}");
        assert_eq!(v["url"], fake.url());
        assert_eq!(v["protocol_version"], "2025-11-25");
        assert_eq!(v["session_issued"], true);
        assert_eq!(
            answer_rows(&v),
            rows(&[
                ("unknown-session-tools-list", status, true),
                ("unknown-session-ping", status, true),
                ("delete-own-session", 200, false),
                ("deleted-session-tools-list", status, true),
            ]),
            "{answer:?}"
        );
        assert_eq!(v["answers"][0]["body"], body, "{answer:?}");
        assert_eq!(err, "", "--json prints nothing else");
        // Exactly the fields of the public contract.
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "answers",
                "protocol_version",
                "session_issued",
                "url",
                "verdict"
            ]
        );
        let answer_keys: Vec<&String> = v["answers"][0].as_object().unwrap().keys().collect();
        assert_eq!(
            answer_keys,
            ["body", "case", "content_type", "session_lost", "status"]
        );
    }
}

#[test]
fn probe_says_not_covered_naming_a_403_or_500_session_expired_answer() {
    for (answer, status, words, why) in [
        (
            LostSessionAnswer::ForbiddenSessionExpired,
            403,
            "Forbidden: session expired",
            "the patch takes only 404, or 400/401 naming the session, as session loss; HTTP 403 is neither",
        ),
        (
            LostSessionAnswer::InternalErrorSessionExpired,
            500,
            "Internal Server Error: session expired",
            "the patch takes only 404, or 400/401 naming the session, as session loss; HTTP 500 is neither",
        ),
    ] {
        let fake = Fake::start(answer);
        let sb = Sandbox::new();
        let o = sb.run(&["probe", &fake.url()]);
        assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
        assert_eq!(
            shown(&sb, &o.stdout),
            sb.normalize(format!(
                "probe http://127.0.0.1:[PORT]/mcp
session: issued (protocol 2025-11-25, 4 tool(s) listed)

CASE  STATUS  SESSION LOST  ANSWER
unknown-session-tools-list  {status}  no  {words}
unknown-session-ping  {status}  no  {words}
delete-own-session  200  no  (empty body)
deleted-session-tools-list  {status}  no  {words}

not-covered: to tools/list with a session id it never issued, the server answered HTTP {status} \"{words}\": {why}. The patched client would keep the dead session, and every call to this server would fail until DSH restarts
help: make the server, or the proxy in front of it, answer 404 to a session it does not know, as the MCP spec says
"
            ).as_bytes())
        );
        assert_eq!(stderr(&o), "");
        let (code, v, _) = probe_json(&sb, &[&fake.url()]);
        assert_eq!(code, 1);
        assert_eq!(v["verdict"], "not-covered");
        assert_eq!(v["answers"][0]["body"], words);
        assert_eq!(v["answers"][0]["content_type"], "text/plain; charset=utf-8");
    }
}

#[test]
fn probe_of_a_port_where_nothing_listens_exits_2_with_a_hint() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let o = sb.run(&["probe", &url]);
    assert_eq!(code(&o), 2);
    // Why is said once, on stderr.
    assert_eq!(stdout(&o), format!("probe {url}\n"));
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!("error: cannot probe {url}: ")),
        "{err}"
    );
    assert!(err.contains("Connection refused"), "{err}");
    assert!(
        err.ends_with(&format!(
            "\nhelp: nothing listens at 127.0.0.1:{port}: start the server, or check the URL's host and port\n"
        )),
        "{err}"
    );
    let (code, v, _) = probe_json(&sb, &[&url]);
    assert_eq!(code, 2);
    assert_eq!(
        v,
        serde_json::json!({"url": url, "protocol_version": null, "session_issued": false, "answers": [], "verdict": "unreachable"})
    );
}

#[test]
fn probe_gives_up_at_the_timeout_on_a_server_that_never_answers() {
    // Accepts connections (the kernel's backlog) and never reads or answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", silent.local_addr().unwrap());
    let sb = Sandbox::new();
    // Bounded here too, so a probe that ignores its timeout fails instead of hanging.
    let mut child = sb
        .command(&["probe", &url, "--timeout", "0.5"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let limit = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > limit {
            child.kill().unwrap();
            panic!("probe --timeout 0.5 was still running after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("error: cannot probe {url}: no answer to initialize within 0.5 s\nhelp: check that the server is running, or give it longer with --timeout SECS\n")
    );
    let o = sb.run(&["probe", &url, "--timeout", "0"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("invalid value '0' for '--timeout <SECS>': \"0\" must be a number of seconds more than 0 and at most 86400 (e.g. 10 or 2.5)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn header_values_never_appear_in_probe_output() {
    let secret = "Bearer s3cr3t-t0ken-value";
    let header = format!("Authorization: {secret}");
    let fake = Fake::start(LostSessionAnswer::NotFoundJsonRpc);
    let nothing = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", l.local_addr().unwrap())
    };
    let sb = Sandbox::new();
    for args in [
        vec!["probe", "-v", fake.url().as_str(), "--header", &header],
        vec![
            "probe",
            "--json",
            "-v",
            fake.url().as_str(),
            "--header",
            &header,
        ],
        vec!["probe", "-v", nothing.as_str(), "--header", &header],
        vec![
            "probe",
            "-v",
            "--json",
            nothing.as_str(),
            "--header",
            &header,
        ],
        vec![
            "probe",
            fake.url().as_str(),
            "--header",
            "Authorization Bearer s3cr3t-t0ken-value",
        ],
    ] {
        let o = sb.run(&args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(
            !all.contains("s3cr3t"),
            "{args:?} printed the value:\n{all}"
        );
        assert_ne!(code(&o), 101, "{args:?} panicked:\n{all}");
    }
    let o = sb.run(&["probe", "-v", &fake.url(), "--header", &header]);
    assert_eq!(code(&o), 0);
    let err = stderr(&o);
    assert_eq!(
        err.matches("> authorization: [redacted]\n").count(),
        7,
        "{err}"
    );
    assert_eq!(err.matches("> POST ").count(), 6, "{err}");
    assert_eq!(err.matches("> DELETE ").count(), 1, "{err}");
    assert!(stdout(&o).contains("headers: authorization\n"));
    let o = sb.run(&[
        "probe",
        &fake.url(),
        "--header",
        "Authorization Bearer s3cr3t-t0ken-value",
    ]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: --header #1 has no ':' between its name and its value\nhelp: write each header as 'Name: value', e.g. --header 'Authorization: Bearer TOKEN'\n"
    );
}

/// Deterministic pseudo-random numbers for the generated table rows.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

#[test]
fn the_probes_port_of_the_predicate_agrees_with_the_patch_javascript_on_real_sdk_errors() {
    let spec = mcpatch::registry::session_loss().unwrap();
    let source = predicate::js_source(&spec.diff).unwrap();
    let port = Predicate::from_spec(&spec).unwrap();

    // Answers of real servers, of proxies and frameworks, and of words that
    // come close to naming a session.
    let mut bodies: Vec<Vec<u8>> = [
        r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}"#,
        r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Session not found"}}"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
        "Bad Request: No valid session ID provided",
        "Not Found: Invalid or expired session ID",
        "Not Found: Session not found",
        "Unauthorized: Session not found",
        "session not found",
        "Forbidden: session expired",
        "Internal Server Error: session expired",
        "Bad Request: Mcp-Session-Id header is required",
        "Bad Request: Server not initialized",
        "Unauthorized: invalid token",
        "Invalid params: session_label must be a string",
        "Failed to open SSE stream: Not Found",
        "<html><body>Not Found</body></html>",
        "",
        "sessions expired",
        "mysession expired",
        "session-id missing",
        "Session ID is required",
        "no valid mcp-session",
        "unknown or expired session",
        "ſession expired",
        "ésession expired",
        "session expiredé",
        "SESSION HAS EXPIRED",
        "session\texpired",
        "session  expired",
        "session_id is missing",
        "Kession expired",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    // Bytes as servers may send them: a byte order mark, invalid UTF-8.
    bodies.extend([
        b"\xef\xbb\xbfSession not found".to_vec(),
        b"\xef\xbb\xbf\xef\xbb\xbfsession expired".to_vec(),
        b"session \xff expired".to_vec(),
        b"\xc3session expired".to_vec(),
        b"session expired\xe2\x82".to_vec(),
        b"\xed\xa0\x80session not found".to_vec(),
        b"\xf0\x90\x80session expired\xc0\xaf".to_vec(),
    ]);
    let fragments = [
        "session",
        "Session",
        "SESSION",
        "ſession",
        "mcp-",
        "MCP-",
        "no valid ",
        "invalid ",
        "unknown ",
        "expired",
        "missing ",
        "not found",
        " or expired",
        " ",
        "  ",
        "-",
        "_",
        "id",
        " id",
        "-id",
        " is",
        " has",
        "header ",
        "required",
        "server not initialized",
        "SSE stream",
        "sse  stream",
        "é",
        "K",
        "x",
        ":",
        "\"",
        "\n",
        "Bad Request: ",
        "{\"message\":\"",
    ];
    let mut rng = Lcg(0x5eed);
    for _ in 0..600 {
        let n = 1 + rng.next(7);
        let body: String = (0..n)
            .map(|_| fragments[rng.next(fragments.len())])
            .collect();
        bodies.push(body.into_bytes());
    }
    let statuses: &[u16] = &[
        200, 202, 301, 307, 400, 401, 402, 403, 404, 405, 406, 409, 410, 415, 422, 429, 500, 502,
        503,
    ];
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        for (k, &status) in statuses.iter().enumerate() {
            // Every body at the statuses that matter, the rest at a rotating few.
            if !matches!(status, 400 | 401 | 403 | 404 | 500) && (i + k) % 5 != 0 {
                continue;
            }
            for (kind, prefix) in [
                ("post", "Error POSTing to endpoint: "),
                ("delete", "Failed to terminate session: "),
                ("sse", "Failed to open SSE stream: "),
            ] {
                if kind != "post" && (i + k) % 3 != 0 {
                    continue;
                }
                cases.push(serde_json::json!({"kind": kind, "status": status, "body_hex": hex::encode(body)}));
                let text = body_text(body);
                let error = SdkError {
                    status: None,
                    code: Some(f64::from(status)),
                    message: Some(format!("Streamable HTTP error: {prefix}{text}")),
                };
                if kind == "post" {
                    assert_eq!(error, SdkError::post_failed(status, &text));
                }
                ours.push((Some(text), port.is_session_lost(&error)));
            }
        }
    }
    // Errors of other shapes: SDK 2.x `status`, both fields, neither, no string message.
    for (status, code, message) in [
        (Some(404.0), None, Some("Not Found")),
        (
            Some(400.0),
            Some(500.0),
            Some("Bad Request: No valid session ID provided"),
        ),
        (Some(500.0), Some(404.0), Some("Internal Server Error")),
        (
            None,
            Some(-1.0),
            Some("Streamable HTTP error: Unexpected content type: text/html"),
        ),
        (None, Some(-32001.0), Some("Session not found")),
        (None, None, Some("Session not found")),
        (None, Some(404.0), None),
        (Some(401.0), None, None),
        (Some(404.5), None, Some("Session not found")),
    ] {
        cases.push(
            serde_json::json!({"kind": "raw", "status": status, "code": code, "message": message}),
        );
        ours.push((
            None,
            port.is_session_lost(&SdkError {
                status,
                code,
                message: message.map(str::to_string),
            }),
        ));
    }

    let installed = fetched_prefix("0.1.0-rc.8")
        .join("lib/node_modules")
        .join(CLIENT);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/predicate-equivalence.mjs");
    let mut child = std::process::Command::new(node22_dir().join("node"))
        .arg(script)
        .arg(&installed)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let input = serde_json::json!({"source": source, "cases": cases});
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(theirs.len(), ours.len());
    let mut lost = 0;
    for ((case, (text, verdict)), js) in cases.iter().zip(&ours).zip(&theirs) {
        if let Some(text) = text {
            assert_eq!(
                js["text"], *text,
                "the body is read as the SDK reads it: {case}"
            );
        }
        assert_eq!(
            js["lost"], *verdict,
            "the port and the patch's JavaScript disagree on {case} (text {text:?})"
        );
        lost += usize::from(*verdict);
    }
    // The table exercises both answers, plenty of each.
    assert!(cases.len() > 3000, "{} cases", cases.len());
    assert!(
        lost > 300 && cases.len() - lost > 300,
        "{lost} of {} lost",
        cases.len()
    );
}

/// One request as [`Scripted`] saw it.
pub(super) struct Seen {
    pub method: String,
    pub path: String,
    pub session: Option<String>,
    pub body: String,
}

/// A hand-written HTTP/1.1 server on 127.0.0.1 for answers the fake server
/// never gives (hostile bytes, odd redirects, a plain web server): `answer`
/// turns each request into the raw response sent back, one request per
/// connection. It lives as long as the test process.
pub(super) struct Scripted {
    pub addr: std::net::SocketAddr,
}

impl Scripted {
    pub(super) fn start(answer: impl Fn(&Seen) -> Vec<u8> + Send + 'static) -> Scripted {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                let mut parts = first.split_whitespace();
                let method = parts.next().unwrap_or("").to_string();
                let path = parts.next().unwrap_or("").to_string();
                let mut length = 0;
                let mut session = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        match name.trim().to_ascii_lowercase().as_str() {
                            "content-length" => length = value.trim().parse().unwrap_or(0),
                            "mcp-session-id" => session = Some(value.trim().to_string()),
                            _ => {}
                        }
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let seen = Seen {
                    method,
                    path,
                    session,
                    body: String::from_utf8_lossy(&body).to_string(),
                };
                let _ = stream.write_all(&answer(&seen));
            }
        });
        Scripted { addr }
    }

    pub(super) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

/// A raw HTTP response.
pub(super) fn http(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A server that works as MCP except that it says `protocol` and answers a
/// session it does not know with 404 and `lost_body`; its session id is `session`.
fn mcp_server(protocol: &'static str, session: String, lost_body: String) -> Scripted {
    Scripted::start(move |req| {
        let id = serde_json::from_str::<serde_json::Value>(&req.body)
            .ok()
            .and_then(|v| v.get("id").cloned());
        if req.method == "DELETE" {
            return http("200 OK", &[], b"");
        }
        if req.body.contains("\"initialize\"") {
            let result = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": protocol, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}});
            return http(
                "200 OK",
                &[
                    ("content-type", "application/json"),
                    ("mcp-session-id", &session),
                ],
                result.to_string().as_bytes(),
            );
        }
        if req.session.as_deref() != Some(session.as_str()) {
            return http(
                "404 Not Found",
                &[("content-type", "text/plain")],
                lost_body.as_bytes(),
            );
        }
        if id.is_none() {
            return http("202 Accepted", &[], b"");
        }
        let result = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}});
        http(
            "200 OK",
            &[("content-type", "application/json")],
            result.to_string().as_bytes(),
        )
    })
}

#[test]
fn a_servers_escape_sequences_never_reach_the_terminal() {
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[32mcovered:\u{9b}";
    let protocol: &'static str = Box::leak(format!("2025-11-25{hostile}").into_boxed_str());
    let server = mcp_server(
        protocol,
        "abc".into(),
        format!("Not Found: Session not found {hostile}"),
    );
    let url = server.url();
    let sb = Sandbox::new();
    for args in [
        vec!["probe", url.as_str()],
        vec!["probe", "-v", url.as_str()],
    ] {
        let o = sb.run(&args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert_eq!(code(&o), 0, "{args:?}: {all}");
        for raw in ['\u{1b}', '\u{7}', '\u{9b}'] {
            assert!(!all.contains(raw), "{args:?} printed {raw:?} raw:\n{all}");
        }
        assert!(
            stdout(&o).contains("(protocol 2025-11-25\\u{1b}]0;owned\\u{7}\\u{1b}[2J"),
            "{}",
            stdout(&o)
        );
        assert!(
            stdout(&o).contains("Session not found \\u{1b}]0;owned"),
            "{}",
            stdout(&o)
        );
    }
    // JSON stays JSON: serde escapes control characters its own way.
    let o = sb.run(&["probe", "--json", &url]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["protocol_version"], protocol);
    assert!(!stdout(&o).contains('\u{1b}'));
}

/// `cmd` (program, arguments, environment) run by `program` with `args` before it.
fn through(
    program: &str,
    args: &[&std::ffi::OsStr],
    cmd: std::process::Command,
) -> std::process::Command {
    let mut c = std::process::Command::new(program);
    c.args(args).arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c
}

/// Run `cmd`, killing it if it has not ended after `limit`; returns its output and how long it took.
pub(super) fn bounded(
    mut cmd: std::process::Command,
    limit: std::time::Duration,
) -> (Output, std::time::Duration) {
    let started = std::time::Instant::now();
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let o = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: {}{}",
                stdout(&o),
                stderr(&o)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    (o, started.elapsed())
}

#[test]
fn probe_timeout_covers_a_name_lookup_that_never_ends() {
    super::harden::require_root(
        "it binds 127.0.0.1:53 and mounts its own resolv.conf in a private mount namespace",
    );
    // A name server on 127.0.0.1 that takes every query and never answers.
    let _silent = std::net::UdpSocket::bind("127.0.0.1:53")
        .expect("127.0.0.1:53 must be free for this test's silent name server");
    let sb = Sandbox::new();
    let conf = sb.root().join("resolv.conf");
    std::fs::write(
        &conf,
        "nameserver 127.0.0.1\noptions timeout:30 attempts:2\n",
    )
    .unwrap();
    let url = "http://mcpatch-probe-test.invalid/mcp";
    let tool = |name: &str| {
        which::which(name)
            .unwrap_or_else(|_| panic!("{name} (util-linux) is needed: apt-get install util-linux"))
    };
    let (unshare, mount) = (tool("unshare"), tool("mount"));
    let cmd = through(
        unshare.to_str().unwrap(),
        &[
            "-m".as_ref(),
            "/bin/sh".as_ref(),
            "-c".as_ref(),
            r#""$0" --bind "$1" /etc/resolv.conf && shift && exec "$@""#.as_ref(),
            mount.as_os_str(),
            conf.as_os_str(),
        ],
        sb.command(&["probe", "--timeout", "1", url]),
    );
    let (o, took) = bounded(cmd, std::time::Duration::from_secs(90));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("error: cannot probe {url}: no answer to initialize within 1 s\nhelp: check that the server is running, or give it longer with --timeout SECS\n")
    );
    assert!(
        took < std::time::Duration::from_secs(5),
        "took {took:?} with --timeout 1"
    );
}

#[test]
fn node_extra_ca_certs_is_read_only_from_a_small_regular_file_within_the_timeout() {
    let fake = Fake::start(LostSessionAnswer::NotFoundJsonRpc);
    let url = fake.url();
    let sb = Sandbox::new();
    let fifo = sb.root().join("ca.fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let huge = sb.root().join("huge.pem");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    for (ca, why) in [
        (
            "/dev/zero".to_string(),
            "/dev/zero is a device, not a regular file".to_string(),
        ),
        (
            fifo.display().to_string(),
            format!("{} is a FIFO, not a regular file", fifo.display()),
        ),
        (
            huge.display().to_string(),
            format!("{} is larger than", huge.display()),
        ),
    ] {
        let mut cmd = sb.command(&["probe", "--timeout", "5", &url]);
        cmd.env("NODE_EXTRA_CA_CERTS", &ca);
        // Bounded memory, so a probe that reads it whole fails instead of eating the machine.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 2 << 30,
                    rlim_max: 2 << 30,
                };
                libc::setrlimit(libc::RLIMIT_AS, &limit);
                Ok(())
            });
        }
        let (o, _) = bounded(cmd, std::time::Duration::from_secs(30));
        assert_eq!(code(&o), 0, "{ca}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!(
                "warning: ignoring NODE_EXTRA_CA_CERTS={ca}: {why}"
            )),
            "{err}"
        );
    }
}

#[test]
fn a_header_value_echoed_in_a_redirect_a_session_id_or_encoded_in_a_body_is_redacted() {
    let word = r#"k3y/v4l"ue=s3cr3t"#;
    let encoded = "k3y%2Fv4l%22ue%3Ds3cr3t";
    let server = Scripted::start(move |req| {
        if req.path == "/mcp" {
            let to = format!("/mcp2?key={encoded}");
            return http("307 Temporary Redirect", &[("location", &to)], b"");
        }
        let id = serde_json::from_str::<serde_json::Value>(&req.body)
            .ok()
            .and_then(|v| v.get("id").cloned());
        if req.method == "DELETE" {
            return http("200 OK", &[], b"");
        }
        if req.body.contains("\"initialize\"") {
            let result = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}});
            return http(
                "200 OK",
                &[
                    ("content-type", "application/json"),
                    ("mcp-session-id", word),
                ],
                result.to_string().as_bytes(),
            );
        }
        if req.session.as_deref() != Some(word) {
            let body = format!(
                r#"{{"error":"Session not found for key k3y\/v4l\"ue=s3cr3t","seen":"{encoded}","lower":"k3y%2fv4l%22ue%3ds3cr3t"}}"#
            );
            return http(
                "404 Not Found",
                &[("content-type", "application/json")],
                body.as_bytes(),
            );
        }
        if id.is_none() {
            return http("202 Accepted", &[], b"");
        }
        let result = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}});
        http(
            "200 OK",
            &[("content-type", "application/json")],
            result.to_string().as_bytes(),
        )
    });
    let url = server.url();
    let header = format!("Authorization: Bearer {word}");
    let sb = Sandbox::new();
    for args in [
        vec!["probe", "-v", url.as_str(), "--header", &header],
        vec!["probe", "-v", "--json", url.as_str(), "--header", &header],
    ] {
        let o = sb.run(&args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert_eq!(code(&o), 0, "{args:?}: {all}");
        for part in ["s3cr3t", "v4l", "k3y"] {
            assert!(!all.contains(part), "{args:?} printed {part:?}:\n{all}");
        }
        assert!(
            all.contains("< 307 redirect, followed to http://127.0.0.1:"),
            "{all}"
        );
        assert!(all.contains("/mcp2?key=[redacted]\n"), "{all}");
        assert!(all.contains("< mcp-session-id: [redacted]\n"), "{all}");
    }
}

#[test]
fn probe_of_a_plain_web_server_says_not_an_mcp_endpoint_with_the_verdict_word() {
    let page = |status: &'static str| {
        Scripted::start(move |_| {
            http(
                status,
                &[("content-type", "text/html;charset=utf-8")],
                b"<html><body><h1>Error</h1></body></html>",
            )
        })
    };
    for (status, help) in [
        (
            "501 Not Implemented",
            "this server does not implement POST here: it is a web server, not a Streamable HTTP endpoint; use the URL from the DSH config (servers often serve /mcp)",
        ),
        (
            "405 Method Not Allowed",
            "this URL does not take POST: it is not a Streamable HTTP endpoint (an SSE-only server has no session the patch handles)",
        ),
        (
            "404 Not Found",
            "no MCP endpoint at this path: use the URL from the DSH config (servers often serve /mcp)",
        ),
    ] {
        let server = page(status);
        let url = server.url();
        let code_only = &status[..3];
        let sb = Sandbox::new();
        let o = sb.run(&["probe", &url]);
        assert_eq!(code(&o), 2, "{status}: {}{}", stdout(&o), stderr(&o));
        let why = format!(
            "not an MCP endpoint: initialize answered HTTP {code_only} \"<html><body><h1>Error</h1></body></html>\""
        );
        assert_eq!(
            shown(&sb, &o.stdout),
            sb.normalize(
                format!(
                    "probe {url}\n\nCASE  STATUS  SESSION LOST  ANSWER\ninitialize  {code_only}  no  <html><body><h1>Error</h1></body></html>\n"
                )
                .as_bytes()
            )
            .replace(&server.addr.port().to_string(), "[PORT]")
        );
        assert_eq!(
            stderr(&o),
            format!("error: cannot probe {url}: {why}\nhelp: {help}\n")
        );
        let (exit, v, _) = probe_json(&sb, &[&url]);
        assert_eq!(exit, 2);
        assert_eq!(v["verdict"], "unreachable");
    }
}

#[test]
fn probe_text_fits_the_terminal_width_and_is_whole_into_a_pipe() {
    let fake = Fake::start(LostSessionAnswer::NotFoundJsonRpc);
    let url = fake.url();
    let sb = Sandbox::new();
    for columns in [80usize, 60, 40] {
        let o = sb
            .cmd(&["probe", &url])
            .env("COLUMNS", columns.to_string())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let out = stdout(&o);
        for line in out.lines() {
            assert!(
                line.chars().count() <= columns,
                "{} columns > {columns}: {line:?}\n{out}",
                line.chars().count()
            );
        }
        let last_paragraph = out.rsplit("\n\n").next().unwrap();
        assert!(
            last_paragraph.starts_with("covered: to tools/list"),
            "{out}"
        );
        // Nothing is lost: the lines put together are the whole verdict.
        assert!(
            last_paragraph
                .replace('\n', " ")
                .ends_with("reconnects with a fresh session "),
            "{out}"
        );
    }
    // Into a pipe: one line each, whatever their length.
    let o = sb.run(&["probe", &url]);
    let out = stdout(&o);
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("covered: to tools/list") && last.len() > 120,
        "{out}"
    );
}
