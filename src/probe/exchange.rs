//! The probe's HTTP exchanges with an MCP server, made the way the client's
//! MCP SDK makes them: POST with `Accept: application/json, text/event-stream`,
//! the session and protocol headers, the user's headers, redirects followed
//! only within the origin (307/308), no proxy (node's fetch uses none), each
//! answer read as the SDK reads it (the body text of an error; the JSON-RPC
//! reply out of a JSON or SSE body), all within one deadline.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Method, Url};
use serde_json::Value;
use tokio::time::Instant;

use super::sse::SseParser;
use super::target::{Target, REDACTED};
use crate::error::{Error, Result};
use crate::output::clean;

/// Most of an answer's body the probe reads.
pub const MAX_BODY_BYTES: usize = 1 << 20;
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const SESSION_HEADER: &str = "mcp-session-id";
const PROTOCOL_HEADER: &str = "mcp-protocol-version";
/// The SDK follows at most this many redirects.
const MAX_REDIRECTS: usize = 5;
/// How much of a body `-v` prints.
const VERBOSE_BODY_CHARS: usize = 2000;

/// An HTTP answer, as the client's SDK would read it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// The status's standard reason phrase (`Not Found`).
    pub reason: &'static str,
    pub content_type: Option<String>,
    /// `Mcp-Session-Id` of the answer.
    pub session_id: Option<String>,
    /// The body text (what `response.text()` gives), header values scrubbed.
    pub body: String,
    /// For a 2xx answer to a request: the JSON-RPC response to it, if one came.
    pub reply: Option<Value>,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The media type without parameters, lowercase.
    pub fn media_type(&self) -> Option<String> {
        self.content_type.as_deref().map(media_type)
    }
}

/// Why a request got no HTTP answer.
#[derive(Debug, Clone)]
pub enum NoAnswer {
    /// The probe's deadline passed.
    TimedOut,
    /// Connection refused, DNS, TLS, a reset: the detail says which.
    Failed { detail: String, hint: String },
}

/// One probe's HTTP client, bound to its target and deadline.
pub struct Exchange<'a> {
    client: reqwest::Client,
    target: &'a Target,
    deadline: Instant,
    verbose: bool,
    /// Sent as `MCP-Protocol-Version` once negotiated.
    pub protocol_version: Option<String>,
}

fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether `to` has the scheme, host and port of `from`, or is its https form
/// with both on default ports (the SDK's `isWithinOrigin`).
fn within_origin(from: &Url, to: &Url) -> bool {
    if from.scheme() == to.scheme() && from.host_str() == to.host_str() && from.port() == to.port()
    {
        return true;
    }
    from.host_str() == to.host_str()
        && from.scheme() == "http"
        && from.port().is_none()
        && to.scheme() == "https"
        && to.port().is_none()
}

/// Redirects as the SDK follows them for POST and DELETE: 307 and 308 only,
/// within the origin, never adding credentials, at most five. `-v` shows
/// where to, header values scrubbed from it.
fn redirect_policy(verbose: bool, target: Target) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let keeps_method = matches!(attempt.status().as_u16(), 307 | 308);
        let Some(from) = attempt.previous().last() else {
            return attempt.stop();
        };
        let to = attempt.url();
        let adds_userinfo = (!to.username().is_empty() || to.password().is_some())
            && (to.username() != from.username() || to.password() != from.password());
        if attempt.previous().len() > MAX_REDIRECTS
            || !keeps_method
            || adds_userinfo
            || !within_origin(from, to)
        {
            attempt.stop()
        } else {
            if verbose {
                crate::errln!(
                    "< {} redirect, followed to {}",
                    attempt.status().as_u16(),
                    clean(&target.scrub(to.as_str()))
                );
            }
            attempt.follow()
        }
    })
}

/// Largest `NODE_EXTRA_CA_CERTS` file read (a full system bundle is under 1 MiB).
pub const MAX_CA_BYTES: u64 = 4 << 20;

/// The PEM bundle in `path`: a regular file (never a FIFO or a device) of at
/// most [`MAX_CA_BYTES`], read by `deadline`.
async fn read_ca_file(
    path: std::path::PathBuf,
    deadline: Instant,
) -> std::result::Result<Vec<u8>, String> {
    let read = tokio::task::spawn_blocking(move || {
        crate::identity::read_capped(&path, MAX_CA_BYTES, true)
    });
    match tokio::time::timeout_at(deadline, read).await {
        Err(_) => Err("not read within the probe's timeout".into()),
        Ok(Err(e)) => Err(e.to_string()),
        // The error's first line; its help is about installs.
        Ok(Ok(Err(e))) => Err(e.to_string().lines().next().unwrap_or_default().to_string()),
        Ok(Ok(Ok((pem, _)))) => Ok(pem),
    }
}

/// The HTTP client: rustls with the bundled Mozilla roots plus the PEM file in
/// `NODE_EXTRA_CA_CERTS`, the roots node's fetch trusts, read within `deadline`.
pub async fn client(verbose: bool, deadline: Instant, target: &Target) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(redirect_policy(verbose, target.clone()))
        .user_agent(concat!("mcpatch-probe/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = std::env::var_os("NODE_EXTRA_CA_CERTS").filter(|p| !p.is_empty()) {
        let certs = read_ca_file(path.clone().into(), deadline)
            .await
            .and_then(|pem| reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| e.to_string()));
        match certs {
            Ok(certs) => {
                for c in certs {
                    builder = builder.add_root_certificate(c);
                }
            }
            // node warns and goes on without them; so does the probe.
            Err(e) => crate::errln_fit!(
                "warning: ignoring NODE_EXTRA_CA_CERTS={}: {}",
                crate::output::path(std::path::Path::new(&path)),
                clean(&e)
            ),
        }
    }
    builder.build().map_err(|e| Error::ProbeClient {
        detail: error_chain(&e),
    })
}

/// A reqwest error and its causes, without the URL.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(e);
    while let Some(err) = current {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = err.source();
    }
    parts.join(": ")
}

impl<'a> Exchange<'a> {
    pub async fn new(target: &'a Target, deadline: Instant, verbose: bool) -> Result<Self> {
        Ok(Exchange {
            client: client(verbose, deadline, target).await?,
            target,
            deadline,
            verbose,
            protocol_version: None,
        })
    }

    /// POST one JSON-RPC message, with `session` as `Mcp-Session-Id`.
    pub async fn post(
        &self,
        message: &Value,
        session: Option<&str>,
    ) -> std::result::Result<Answer, NoAnswer> {
        let id = message.get("id").cloned();
        self.send(Method::POST, Some(message.to_string()), session, id)
            .await
    }

    /// DELETE the session (the spec's way for a client to end it).
    pub async fn delete(&self, session: &str) -> std::result::Result<Answer, NoAnswer> {
        self.send(Method::DELETE, None, Some(session), None).await
    }

    fn headers(&self, post: bool, session: Option<&str>) -> Vec<(String, HeaderValue, bool)> {
        let mut h: Vec<(String, HeaderValue, bool)> = Vec::new();
        // User headers first, as the SDK merges them under its own.
        for u in &self.target.headers {
            h.push((u.name.to_string(), u.value.clone(), true));
        }
        if post {
            h.push((
                CONTENT_TYPE.to_string(),
                HeaderValue::from_static("application/json"),
                false,
            ));
            h.push((
                ACCEPT.to_string(),
                HeaderValue::from_static(ACCEPT_BOTH),
                false,
            ));
        }
        if let Some(s) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
            h.push((SESSION_HEADER.to_string(), s, false));
        }
        if let Some(v) = self
            .protocol_version
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            h.push((PROTOCOL_HEADER.to_string(), v, false));
        }
        h
    }

    async fn send(
        &self,
        method: Method,
        body: Option<String>,
        session: Option<&str>,
        id: Option<Value>,
    ) -> std::result::Result<Answer, NoAnswer> {
        let headers = self.headers(body.is_some(), session);
        if self.verbose {
            crate::errln!("> {method} {}", clean(self.target.url.as_str()));
            for (name, value, secret) in &headers {
                let shown = if *secret {
                    REDACTED.to_string()
                } else {
                    // A session id may echo a header value.
                    self.target.scrub(value.to_str().unwrap_or(""))
                };
                crate::errln!("> {name}: {}", clean(&shown));
            }
            if let Some(b) = &body {
                crate::errln!("> {}", clean(b));
            }
        }
        let mut map = HeaderMap::new();
        for (name, value, _) in headers {
            if let Ok(n) = reqwest::header::HeaderName::from_bytes(name.as_bytes()) {
                map.insert(n, value);
            }
        }
        let mut request = self
            .client
            .request(method, self.target.url.clone())
            .headers(map);
        if let Some(b) = body {
            request = request.body(b);
        }
        let exchange = async {
            let response = request.send().await.map_err(|e| self.failed(&e))?;
            self.read(response, id.as_ref()).await
        };
        let answer = match tokio::time::timeout_at(self.deadline, exchange).await {
            Ok(result) => result,
            Err(_) => Err(NoAnswer::TimedOut),
        };
        if self.verbose {
            match &answer {
                Ok(a) => {
                    crate::errln!(
                        "< {} {} ({})",
                        a.status,
                        a.reason,
                        clean(a.content_type.as_deref().unwrap_or("no content type"))
                    );
                    if let Some(s) = &a.session_id {
                        crate::errln!("< {SESSION_HEADER}: {}", clean(&self.target.scrub(s)));
                    }
                    if !a.body.is_empty() {
                        let shown: String = a.body.chars().take(VERBOSE_BODY_CHARS).collect();
                        crate::errln!("< {}", clean(shown.trim_end()));
                    }
                }
                Err(NoAnswer::TimedOut) => crate::errln!("< no answer: the deadline passed"),
                Err(NoAnswer::Failed { detail, .. }) => {
                    crate::errln!("< no answer: {}", clean(detail))
                }
            }
        }
        answer
    }

    fn failed(&self, e: &reqwest::Error) -> NoAnswer {
        let detail = self.target.scrub(&error_chain(e));
        let url = &self.target.url;
        let host = url.host_str().unwrap_or("");
        let port = url.port_or_known_default().unwrap_or(0);
        let lower = detail.to_ascii_lowercase();
        let hint = if url.scheme() == "https"
            && (lower.contains("corrupt message") || lower.contains("invalidcontenttype"))
        {
            let mut plain = url.clone();
            let _ = plain.set_scheme("http");
            format!(
                "this server does not speak TLS at {host}:{port}; try {}",
                self.target.scrub(plain.as_str())
            )
        } else if lower.contains("connection refused") {
            format!("nothing listens at {host}:{port}: start the server, or check the URL's host and port")
        } else if lower.contains("dns error") || lower.contains("failed to lookup") {
            format!("cannot resolve {host}: check the host name in the URL")
        } else if lower.contains("certificate")
            || lower.contains("tls")
            || lower.contains("handshake")
        {
            "the TLS handshake failed: if the server's certificate comes from a private CA, set NODE_EXTRA_CA_CERTS to its PEM file (node, and so a node MCP client, reads it too)".to_string()
        } else {
            "check the URL and that the server is running".to_string()
        };
        NoAnswer::Failed { detail, hint }
    }

    /// Read the answer as the SDK would: all of an error's body; out of a 2xx
    /// JSON or SSE body, the JSON-RPC response to request `id`.
    async fn read(
        &self,
        mut response: reqwest::Response,
        id: Option<&Value>,
    ) -> std::result::Result<Answer, NoAnswer> {
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header(CONTENT_TYPE.as_str());
        let session_id = header(SESSION_HEADER);
        let sse = content_type.as_deref().map(media_type).as_deref() == Some("text/event-stream");
        let wants_reply = status.is_success() && id.is_some();
        let mut bytes: Vec<u8> = Vec::new();
        let mut parser = SseParser::default();
        let mut reply = None;
        while bytes.len() < MAX_BODY_BYTES {
            let chunk = match response.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                // A stream cut after some bytes: keep what came.
                Err(e) if !bytes.is_empty() => {
                    let _ = e;
                    break;
                }
                Err(e) => return Err(self.failed(&e)),
            };
            bytes.extend_from_slice(&chunk);
            if wants_reply && sse {
                for data in parser.feed(&chunk) {
                    if let Some(r) = response_to(&data, id) {
                        reply = Some(r);
                    }
                }
                if reply.is_some() {
                    break;
                }
            }
        }
        bytes.truncate(MAX_BODY_BYTES);
        let text = body_text(&bytes);
        if wants_reply && !sse {
            reply = response_to(&text, id);
        }
        Ok(Answer {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or(""),
            content_type: content_type.map(|c| self.target.scrub(&c)),
            session_id,
            body: self.target.scrub(&text),
            reply,
        })
    }
}

/// A body as node 22's `await response.text()` reads it: UTF-8, each invalid
/// sequence replaced by U+FFFD, and a leading byte order mark dropped twice
/// over (undici drops one, then its TextDecoder the next).
pub fn body_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let once = text.strip_prefix('\u{feff}').unwrap_or(&text);
    once.strip_prefix('\u{feff}').unwrap_or(once).to_string()
}

/// The JSON-RPC response to `id` in `text` (one message or a batch).
fn response_to(text: &str, id: Option<&Value>) -> Option<Value> {
    let value: Value = serde_json::from_str(text).ok()?;
    let messages = match value {
        Value::Array(items) => items,
        one => vec![one],
    };
    messages
        .into_iter()
        .find(|m| m.get("id") == id && (m.get("result").is_some() || m.get("error").is_some()))
}

/// The deadline `timeout` from now.
pub fn deadline(timeout: Duration) -> Instant {
    Instant::now() + timeout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_is_found_by_id_in_a_message_or_a_batch() {
        let id = serde_json::json!(3);
        assert_eq!(
            response_to(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, Some(&id)),
            Some(serde_json::json!({"jsonrpc":"2.0","id":3,"result":{}}))
        );
        assert!(response_to(
            r#"[{"jsonrpc":"2.0","method":"notifications/message"},{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}]"#,
            Some(&id)
        )
        .is_some());
        assert_eq!(
            response_to(
                r#"[{"jsonrpc":"2.0","id":3,"method":"roots/list"},{"jsonrpc":"2.0","id":3,"result":{}}]"#,
                Some(&id)
            ),
            Some(serde_json::json!({"jsonrpc":"2.0","id":3,"result":{}})),
            "a server request reusing the id is not the reply"
        );
        assert!(response_to(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#, Some(&id)).is_none());
        assert!(response_to("<html>", Some(&id)).is_none());
    }

    #[test]
    fn redirects_stay_within_the_origin_as_the_sdk_follows_them() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(within_origin(&u("http://h:1/mcp"), &u("http://h:1/mcp/")));
        assert!(within_origin(&u("http://h/mcp"), &u("https://h/mcp")));
        assert!(!within_origin(&u("http://h:1/mcp"), &u("http://h:2/mcp")));
        assert!(!within_origin(&u("https://h/mcp"), &u("http://h/mcp")));
        assert!(!within_origin(&u("http://h:8080/mcp"), &u("https://h/mcp")));
        assert!(!within_origin(&u("http://h/mcp"), &u("http://evil/mcp")));
    }

    #[test]
    fn media_types_drop_parameters_and_case() {
        assert_eq!(
            media_type("Text/Event-Stream; charset=utf-8"),
            "text/event-stream"
        );
    }
}
