//! What `mcpatch probe` talks to: the server's URL and the user's headers
//! (bearer tokens, API keys), checked before anything is sent, and the
//! redaction that keeps every header value out of everything mcpatch prints.

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Url;

use crate::error::{Error, Result};

/// What mcpatch prints instead of a header value.
pub const REDACTED: &str = "[redacted]";
/// Headers the probe sets itself, as the client's MCP SDK does.
const RESERVED: &[&str] = &[
    "mcp-session-id",
    "mcp-protocol-version",
    "content-type",
    "accept",
    "content-length",
];
/// A server's text repeating a header value (or a word of one) this long or
/// longer has it replaced.
const MIN_SCRUBBED_LEN: usize = 4;
/// Words of a header value that are not secret: authentication schemes.
const SCHEMES: &[&str] = &["bearer", "basic", "digest", "token", "apikey", "api-key"];

/// One `--header 'Name: value'`.
#[derive(Clone)]
pub struct UserHeader {
    pub name: HeaderName,
    pub value: HeaderValue,
}

impl std::fmt::Debug for UserHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {REDACTED}", self.name)
    }
}

/// The server to probe.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: Url,
    pub headers: Vec<UserHeader>,
    /// One matcher per secret, longest secret first: see [`secret_pattern`].
    secrets: Vec<regex::Regex>,
}

/// A pattern matching `secret` as a server may echo it: as it is, or with
/// any of its characters percent-encoded (either case of hex), JSON-escaped
/// (`\/`, `\"`, `\\`, `\u002f`), or a space as `+` (form encoding).
fn secret_pattern(secret: &str) -> String {
    let hex = |n: u8| {
        let d = char::from_digit(u32::from(n), 16).expect("a hex digit");
        if d.is_ascii_alphabetic() {
            format!("[{}{}]", d, d.to_ascii_uppercase())
        } else {
            d.to_string()
        }
    };
    let mut pattern = String::new();
    for c in secret.chars() {
        let mut forms = vec![regex::escape(&c.to_string())];
        let mut utf8 = [0u8; 4];
        let bytes = c.encode_utf8(&mut utf8).as_bytes();
        forms.push(
            bytes
                .iter()
                .map(|b| format!("%{}{}", hex(b >> 4), hex(b & 15)))
                .collect(),
        );
        if let Ok(b) = u8::try_from(u32::from(c)) {
            forms.push(format!(r"\\u00{}{}", hex(b >> 4), hex(b & 15)));
        }
        if matches!(c, '/' | '"' | '\\') {
            forms.push(format!(r"\\{}", regex::escape(&c.to_string())));
        }
        if c == ' ' {
            forms.push(r"\+".into());
        }
        pattern.push_str(&format!("(?:{})", forms.join("|")));
    }
    pattern
}

impl Target {
    /// Check the URL and the `--header` arguments.
    pub fn parse(url: &str, headers: &[String]) -> Result<Target> {
        let parsed = Url::parse(url).map_err(|e| Error::ProbeUrl {
            url: url.to_string(),
            detail: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::ProbeUrl {
                url: url.to_string(),
                detail: format!(
                    "its scheme is {:?}; MCP's Streamable HTTP needs http or https",
                    parsed.scheme()
                ),
            });
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            let mut shown = parsed.clone();
            let _ = shown.set_username("");
            let _ = shown.set_password(None);
            return Err(Error::ProbeUrl {
                url: shown.to_string(),
                detail:
                    "it carries a user name or password, which node's fetch (and so DSH) refuses"
                        .into(),
            });
        }
        let mut parsed_headers = Vec::new();
        let mut secrets = Vec::new();
        for (i, arg) in headers.iter().enumerate() {
            let index = i + 1;
            let (name, value) = arg.split_once(':').ok_or_else(|| Error::ProbeHeader {
                index,
                detail: "has no ':' between its name and its value".into(),
            })?;
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                Error::ProbeHeader {
                    index,
                    detail: "does not start with a valid header name (letters, digits and !#$%&'*+-.^_`|~, then ':')".into(),
                }
            })?;
            if RESERVED.contains(&name.as_str()) {
                return Err(Error::ProbeHeader {
                    index,
                    detail: format!(
                        "sets {name}, which the probe sets itself as the client's MCP SDK does"
                    ),
                });
            }
            let value = value.trim();
            let header_value = HeaderValue::from_str(value).map_err(|_| Error::ProbeHeader {
                index,
                detail: format!("({name}) has a value with characters a header cannot carry (control characters or line breaks)"),
            })?;
            secrets.push(value.to_string());
            secrets.extend(
                value
                    .split_whitespace()
                    .filter(|w| !SCHEMES.contains(&w.to_ascii_lowercase().as_str()))
                    .map(str::to_string),
            );
            parsed_headers.push(UserHeader {
                name,
                value: header_value,
            });
        }
        secrets.retain(|s| s.len() >= MIN_SCRUBBED_LEN);
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let secrets = secrets
            .iter()
            .map(|s| {
                // A value too long for the full pattern is still matched as it is.
                regex::Regex::new(&secret_pattern(s))
                    .or_else(|_| regex::Regex::new(&regex::escape(s)))
                    .expect("an escaped literal is a valid pattern")
            })
            .collect();
        Ok(Target {
            url: parsed,
            headers: parsed_headers,
            secrets,
        })
    }

    /// `text` with every header value (and every word of one) replaced by
    /// [`REDACTED`], also where it is percent-encoded or JSON-escaped.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if let std::borrow::Cow::Owned(replaced) = s.replace_all(&out, REDACTED) {
                out = replaced;
            }
        }
        out
    }

    /// The header names given, for messages (`authorization, x-api-key`).
    pub fn header_names(&self) -> String {
        self.headers
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_kept_for_sending_and_scrubbed_from_text() {
        let t = Target::parse(
            "http://127.0.0.1:9/mcp",
            &[
                "Authorization: Bearer tok-123456789".into(),
                "X-Api-Key:abcd".into(),
            ],
        )
        .unwrap();
        assert_eq!(t.headers[0].value, "Bearer tok-123456789");
        assert_eq!(t.headers[1].value, "abcd");
        assert_eq!(
            format!("{:?}", t.headers),
            "[authorization: [redacted], x-api-key: [redacted]]"
        );
        assert_eq!(
            t.scrub(
                "bad token tok-123456789 (Bearer tok-123456789), key abcd; expected 'Bearer TOKEN'"
            ),
            "bad token [redacted] ([redacted]), key [redacted]; expected 'Bearer TOKEN'"
        );
        assert_eq!(t.header_names(), "authorization, x-api-key");
    }

    #[test]
    fn encoded_and_escaped_copies_of_a_value_are_scrubbed_too() {
        let t =
            Target::parse("http://127.0.0.1:9/mcp", &["X-Key: k3y/v4l\"ue=1 2".into()]).unwrap();
        for echoed in [
            "k3y/v4l\"ue=1 2",
            "k3y\\/v4l\\\"ue=1 2",
            "k3y%2Fv4l%22ue%3D1%202",
            "k3y%2fv4l%22ue%3d1+2",
            "%6B3y\\u002fv4l\\u0022ue=1 2",
        ] {
            assert_eq!(t.scrub(&format!("<{echoed}>")), "<[redacted]>", "{echoed}");
        }
        assert_eq!(
            t.scrub("k3y/v4l"),
            "k3y/v4l",
            "a part of the value is not the value"
        );
    }

    #[test]
    fn bad_headers_are_refused_without_echoing_them() {
        for (arg, message) in [
            ("Bearer s3cr3t", "--header #1 has no ':' between its name and its value"),
            ("Bad Name: s3cr3t", "--header #1 does not start with a valid header name (letters, digits and !#$%&'*+-.^_`|~, then ':')"),
            ("X-Key: s3cr3t\u{1}", "--header #1 (x-key) has a value with characters a header cannot carry (control characters or line breaks)"),
            ("Mcp-Session-Id: s3cr3t", "--header #1 sets mcp-session-id, which the probe sets itself as the client's MCP SDK does"),
        ] {
            let err = Target::parse("http://127.0.0.1:9/mcp", &[arg.into()])
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                format!("{message}\nhelp: write each header as 'Name: value', e.g. --header 'Authorization: Bearer TOKEN'")
            );
            assert!(!err.contains("s3cr3t"));
        }
    }

    #[test]
    fn urls_must_be_http_without_credentials() {
        let err = Target::parse("ftp://h/mcp", &[]).unwrap_err().to_string();
        assert_eq!(err, "\"ftp://h/mcp\" is not a URL mcpatch can probe: its scheme is \"ftp\"; MCP's Streamable HTTP needs http or https\nhelp: pass the server's MCP endpoint as DSH's config names it, e.g. http://127.0.0.1:8000/mcp");
        let err = Target::parse("http://me:s3cr3t@h/mcp", &[])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("\"http://h/mcp\" is not a URL mcpatch can probe: it carries a user name or password, which node's fetch (and so DSH) refuses\n"), "{err}");
        let err = Target::parse("not a url", &[]).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "\"not a url\" is not a URL mcpatch can probe: relative URL without a base\n"
            ),
            "{err}"
        );
    }
}
