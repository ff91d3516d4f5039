//! The patch's session-loss test, in Rust: `isSessionLostError` ported line by
//! line, running the patch's own `SESSION_LOST_MESSAGE` regex read from the
//! embedded patch text, so `mcpatch probe` judges a server exactly as the
//! patched client will, on machines without node. The port is bound to the
//! function text it was written against (a sha256 of it), and a table test runs
//! the patch's JavaScript in node on real MCP SDK errors beside this port.

use regex::Regex;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::registry::PatchSpec;

/// Where the predicate starts in the patch text.
const CONST_START: &str = "const SESSION_LOST_MESSAGE = ";
/// The function the port mirrors.
const FUNCTION_START: &str = "function isSessionLostError(error) {";
/// sha256 of the function text (each line trimmed, joined with `\n`) this port
/// was written against. Another text means the port must be reviewed.
const PORTED_FUNCTION_SHA256: &str =
    "3a8e0f01e5f4c1d886ec5695dda138157447ee0604af81b6b8798d5aa4bc667a";

/// An error as the client's MCP SDK hands it to `onerror`, reduced to the
/// fields `isSessionLostError` reads.
#[derive(Debug, Clone, PartialEq)]
pub struct SdkError {
    /// `error.status` when it is a number (SDK 2.x).
    pub status: Option<f64>,
    /// `error.code` when it is a number (SDK 1.x: the HTTP status).
    pub code: Option<f64>,
    /// `error.message` when it is a string.
    pub message: Option<String>,
}

impl SdkError {
    /// What SDK 1.x throws for a POST answered with a non-2xx status:
    /// `new StreamableHTTPError(status, "Error POSTing to endpoint: " + body)`.
    pub fn post_failed(status: u16, body: &str) -> Self {
        SdkError {
            status: None,
            code: Some(f64::from(status)),
            message: Some(format!(
                "Streamable HTTP error: Error POSTing to endpoint: {body}"
            )),
        }
    }

    /// What SDK 1.x throws for a DELETE answered with a non-2xx status other than 405.
    pub fn delete_failed(status: u16, status_text: &str) -> Self {
        SdkError {
            status: None,
            code: Some(f64::from(status)),
            message: Some(format!(
                "Streamable HTTP error: Failed to terminate session: {status_text}"
            )),
        }
    }
}

/// The patch's predicate, ready to run.
#[derive(Debug, Clone)]
pub struct Predicate {
    session_lost_message: Regex,
    /// The regex as the patch writes it, for messages.
    pub js_regex: String,
}

/// `/\bSSE stream\b/i` from the function body.
fn sse_stream() -> &'static Regex {
    static SSE_STREAM: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"(?i-u)\bSSE stream\b").expect("a fixed, valid regex")
    });
    &SSE_STREAM
}

impl Predicate {
    /// The predicate of the patch in `spec`.
    pub fn from_spec(spec: &PatchSpec) -> Result<Predicate> {
        Predicate::from_patch_text(&spec.diff)
    }

    /// The predicate of a unified diff that adds it.
    pub fn from_patch_text(diff: &str) -> Result<Predicate> {
        let source = js_source(diff)?;
        let function = &source[source.find(FUNCTION_START).unwrap_or(0)..];
        let found = function_sha256(function);
        if found != PORTED_FUNCTION_SHA256 {
            return Err(invalid(format!(
                "isSessionLostError is not the text the probe's port was written against (sha256 {found}, expected {PORTED_FUNCTION_SHA256})"
            )));
        }
        let literal = source[CONST_START.len()..]
            .lines()
            .next()
            .unwrap_or("")
            .trim_end()
            .trim_end_matches(';');
        let (pattern, flags) = split_literal(literal)?;
        let translated = translate(pattern, flags)?;
        let session_lost_message = Regex::new(&translated).map_err(|e| {
            invalid(format!(
                "SESSION_LOST_MESSAGE does not compile as {translated}: {e}"
            ))
        })?;
        Ok(Predicate {
            session_lost_message,
            js_regex: literal.to_string(),
        })
    }

    /// `isSessionLostError(error)`, line by line.
    pub fn is_session_lost(&self, error: &SdkError) -> bool {
        // const status = typeof error.status === "number" ? error.status : typeof error.code === "number" ? error.code : void 0;
        let status = error.status.or(error.code);
        // const message = typeof error.message === "string" ? error.message : "";
        let message = error.message.as_deref().unwrap_or("");
        // if (/\bSSE stream\b/i.test(message)) return false;
        if sse_stream().is_match(message) {
            return false;
        }
        // if (status === 404) return true;
        if status == Some(404.0) {
            return true;
        }
        // if (status !== 400 && status !== 401) return false;
        if status != Some(400.0) && status != Some(401.0) {
            return false;
        }
        // return SESSION_LOST_MESSAGE.test(message);
        self.session_lost_message.is_match(message)
    }

    /// Whether `text` names a session as lost, by the patch's regex alone.
    pub fn names_the_session(&self, text: &str) -> bool {
        self.session_lost_message.is_match(text)
    }

    /// Whether `text` mentions the SSE stream, which the patch leaves alone.
    pub fn mentions_sse_stream(text: &str) -> bool {
        sse_stream().is_match(text)
    }
}

fn invalid(detail: String) -> Error {
    Error::Registry {
        what: "isSessionLostError".into(),
        detail,
    }
}

/// The JavaScript the patch adds for the predicate, exactly: from the
/// `const SESSION_LOST_MESSAGE` line to the end of `isSessionLostError`.
pub fn js_source(diff: &str) -> Result<String> {
    let added: Vec<&str> = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .map(|l| &l[1..])
        .collect();
    let from = added
        .iter()
        .position(|l| l.starts_with(CONST_START))
        .ok_or_else(|| invalid(format!("the patch adds no `{CONST_START}` line")))?;
    let function = added[from..]
        .iter()
        .position(|l| l.starts_with(FUNCTION_START))
        .map(|i| from + i)
        .ok_or_else(|| {
            invalid(format!(
                "the patch adds no `{FUNCTION_START}` after SESSION_LOST_MESSAGE"
            ))
        })?;
    let to = added[function..]
        .iter()
        .position(|l| *l == "}")
        .map(|i| function + i)
        .ok_or_else(|| invalid("isSessionLostError has no closing `}` line".into()))?;
    Ok(added[from..=to].join("\n") + "\n")
}

fn function_sha256(function: &str) -> String {
    let normalized: Vec<&str> = function.lines().map(str::trim).collect();
    hex::encode(Sha256::digest(normalized.join("\n")))
}

/// Split a JS regex literal `/pattern/flags` into its parts.
fn split_literal(literal: &str) -> Result<(&str, &str)> {
    let body = literal.strip_prefix('/').ok_or_else(|| {
        invalid(format!(
            "SESSION_LOST_MESSAGE is not a regex literal: {literal}"
        ))
    })?;
    let mut escaped = false;
    let mut in_class = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' => in_class = true,
            ']' => in_class = false,
            '/' if !in_class => return Ok((&body[..i], &body[i + 1..])),
            _ => {}
        }
    }
    Err(invalid(format!(
        "SESSION_LOST_MESSAGE has no closing `/`: {literal}"
    )))
}

/// Translate a JavaScript regex (no `u` flag) into the Rust regex that matches
/// the same strings: ASCII mode, where `\b`, `\w`, `\d` and the `i` flag's case
/// folding are ASCII-only, as in JavaScript without `u`. Anything whose meaning
/// differs between the two (`.`, `\s`, lookaround, back-references, non-ASCII
/// literals, flags other than `i`) is refused, never guessed.
pub fn translate(pattern: &str, flags: &str) -> Result<String> {
    let refuse = |what: &str| {
        invalid(format!(
            "SESSION_LOST_MESSAGE uses {what}, which the probe's port does not translate: /{pattern}/{flags}"
        ))
    };
    let mode = match flags {
        "" => "(?-u)",
        "i" => "(?i-u)",
        _ => return Err(refuse(&format!("the flags {flags:?}"))),
    };
    let mut out = String::from(mode);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    // Members written since the class opened (a `-` first or last is literal).
    let mut class_members = 0;
    while let Some(c) = chars.next() {
        if !c.is_ascii() || c.is_ascii_control() {
            return Err(refuse(&format!("the character {c:?}")));
        }
        match c {
            '\\' => {
                let e = chars.next().ok_or_else(|| refuse("a trailing `\\`"))?;
                match e {
                    'b' | 'B' if !in_class => out.push_str(&format!("\\{e}")),
                    'd' | 'D' | 'w' | 'W' => out.push_str(&format!("\\{e}")),
                    'n' => out.push_str("\\n"),
                    't' => out.push_str("\\t"),
                    'r' => out.push_str("\\r"),
                    _ if e.is_ascii_punctuation() => out.push_str(&regex::escape(&e.to_string())),
                    _ => return Err(refuse(&format!("the escape \\{e}"))),
                }
                class_members += 1;
            }
            '[' if !in_class => {
                in_class = true;
                class_members = 0;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                if chars.peek() == Some(&']') {
                    return Err(refuse("an empty class"));
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '-' if in_class => {
                // A range between two members, or a literal `-` at either end.
                if class_members == 0 || chars.peek() == Some(&']') {
                    out.push_str("\\-");
                } else {
                    out.push('-');
                }
                class_members += 1;
            }
            _ if in_class => {
                out.push_str(&regex::escape(&c.to_string()));
                class_members += 1;
            }
            '.' => return Err(refuse("`.`")),
            '(' => {
                if chars.peek() == Some(&'?') {
                    chars.next();
                    match chars.next() {
                        Some(':') => out.push_str("(?:"),
                        other => {
                            return Err(refuse(&format!(
                                "the group (?{}",
                                other.map(String::from).unwrap_or_default()
                            )))
                        }
                    }
                } else {
                    out.push('(');
                }
            }
            ')' | '|' | '?' | '*' | '+' | '^' | '$' => out.push(c),
            '{' => {
                let mut quantifier = String::from("{");
                for q in chars.by_ref() {
                    quantifier.push(q);
                    if q == '}' {
                        break;
                    }
                }
                let inner = &quantifier[1..quantifier.len().saturating_sub(1)];
                let valid = quantifier.ends_with('}')
                    && !inner.is_empty()
                    && inner.split(',').count() <= 2
                    && inner.split(',').enumerate().all(|(i, n)| {
                        n.bytes().all(|b| b.is_ascii_digit()) && (i == 1 || !n.is_empty())
                    });
                if !valid {
                    // JavaScript reads a `{` that starts no quantifier as a literal.
                    return Err(refuse(&format!("the brace {quantifier:?}")));
                }
                out.push_str(&quantifier);
            }
            _ => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    if in_class {
        return Err(refuse("an unclosed class"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded() -> Predicate {
        Predicate::from_spec(&crate::registry::session_loss().unwrap()).unwrap()
    }

    #[test]
    fn the_embedded_patch_yields_its_predicate() {
        let p = embedded();
        assert!(p.js_regex.starts_with("/\\bno valid (?:mcp-)?session\\b|"));
        assert!(p.js_regex.ends_with("/i"));
    }

    #[test]
    fn the_source_is_the_const_line_through_the_closing_brace() {
        let spec = crate::registry::session_loss().unwrap();
        let source = js_source(&spec.diff).unwrap();
        assert!(source.starts_with(CONST_START));
        assert!(source.ends_with("return SESSION_LOST_MESSAGE.test(message);\n}\n"));
        assert_eq!(source.matches(FUNCTION_START).count(), 1);
    }

    #[test]
    fn a_changed_function_is_refused_rather_than_judged_by_a_stale_port() {
        let spec = crate::registry::session_loss().unwrap();
        let changed = spec.diff.replace(
            "if (status === 404) return true;",
            "if (status === 410) return true;",
        );
        let err = Predicate::from_patch_text(&changed)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("the embedded patch registry is invalid (isSessionLostError): isSessionLostError is not the text the probe's port was written against (sha256 "),
            "{err}"
        );
    }

    #[test]
    fn a_patch_without_the_predicate_is_refused() {
        let err = Predicate::from_patch_text("+++ b/x\n+const x = 1;\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the embedded patch registry is invalid (isSessionLostError): the patch adds no `const SESSION_LOST_MESSAGE = ` line\nhelp: this is a bug in this mcpatch build; rebuild it from a clean checkout"
        );
    }

    #[test]
    fn javascript_constructs_with_other_meanings_in_rust_are_refused() {
        for (pattern, flags, what) in [
            ("a.b", "i", "`.`"),
            ("a\\sb", "i", "the escape \\s"),
            ("(?=a)", "", "the group (?="),
            ("a\\1", "", "the escape \\1"),
            ("é", "i", "the character 'é'"),
            ("a", "gi", "the flags \"gi\""),
            ("a{x}", "", "the brace \"{x}\""),
        ] {
            let err = translate(pattern, flags).unwrap_err().to_string();
            assert!(
                err.contains(&format!("uses {what}, which")),
                "{pattern}: {err}"
            );
        }
    }

    #[test]
    fn ascii_mode_matches_as_javascript_without_the_u_flag() {
        let re = Regex::new(&translate("\\bsession[ -]expired\\b", "i").unwrap()).unwrap();
        assert!(re.is_match("Forbidden: Session expired"));
        assert!(re.is_match("SESSION-EXPIRED"));
        // JavaScript's `\b` and `i` without `u` are ASCII-only.
        assert!(re.is_match("ésession expired"));
        assert!(!re.is_match("ſession expired"));
        assert!(!re.is_match("mysession expired"));
    }

    #[test]
    fn the_port_follows_the_function_on_sdk_1_errors() {
        let p = embedded();
        let lost = |status, body: &str| p.is_session_lost(&SdkError::post_failed(status, body));
        assert!(lost(404, "<html>Not Found</html>"));
        assert!(lost(400, "Bad Request: No valid session ID provided"));
        assert!(lost(401, "Unauthorized: Session not found"));
        assert!(!lost(401, "Unauthorized: invalid token"));
        assert!(!lost(403, "Forbidden: session expired"));
        assert!(!lost(500, "Internal Server Error: session expired"));
        assert!(!lost(404, "Failed to open SSE stream: Not Found"));
        assert!(!p.is_session_lost(&SdkError {
            status: None,
            code: None,
            message: Some("Session not found".into())
        }));
        assert!(p.is_session_lost(&SdkError {
            status: Some(404.0),
            code: Some(500.0),
            message: None
        }));
    }
}
