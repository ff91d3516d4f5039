//! `mcpatch probe URL`: tells a user whether THEIR MCP server's answer to a
//! lost session is one the patch recognises. Opens a real session as the
//! client does, asks how the server answers a session it does not know (with
//! requests that change nothing), ends its own session with DELETE and asks
//! again, then runs the patch's own predicate on each answer. Never calls a
//! tool.

pub mod exchange;
pub mod predicate;
pub mod report;
pub mod sse;
pub mod target;

use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::registry::PatchSpec;
use exchange::{Answer, Exchange, NoAnswer};
use predicate::{Predicate, SdkError};
use report::{Case, CaseAnswer, Finding, ProbeReport, Verdict};
use target::Target;

/// The target `probe` judges a server by: the first of `targets` whose
/// patch's session-loss predicate the probe has a port of.
pub fn probed<'a>(targets: &[&'a PatchSpec]) -> Result<&'a PatchSpec> {
    targets
        .iter()
        .find(|t| Predicate::from_spec(t).is_ok())
        .copied()
        .ok_or_else(|| Error::NoProbePredicate {
            targets: crate::registry::said(targets.iter().map(|t| t.target)),
        })
}

/// The protocol revision the probe asks for: the newest the client's MCP SDK speaks.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// `--timeout` when not given.
pub const DEFAULT_TIMEOUT_SECS: f64 = 10.0;

/// Options of `mcpatch probe`.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    pub url: String,
    /// `Name: value`, as given.
    pub headers: Vec<String>,
    pub json: bool,
    /// The whole probe ends within this.
    pub timeout: Duration,
    /// Print every request sent and every answer.
    pub verbose: bool,
}

/// Parse `--timeout SECS`: more than 0 seconds (0 is refused, not taken as
/// "no limit": a probe always ends), at most a day.
pub fn parse_timeout(s: &str) -> std::result::Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
            Ok(Duration::from_secs_f64(secs))
        }
        _ => Err(format!(
            "{s:?} must be a number of seconds more than 0 and at most 86400 (e.g. 10 or 2.5)"
        )),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::io(
                "start",
                "the async runtime",
                e,
                "check the machine's thread limits",
            )
        })
}

/// Run `mcpatch probe`.
pub fn run(spec: &PatchSpec, opts: &ProbeOptions) -> Result<Outcome> {
    let predicate = Predicate::from_spec(spec)?;
    let target = Target::parse(&opts.url, &opts.headers)?;
    let rt = runtime()?;
    let finding = rt.block_on(probe(&predicate, &target, opts));
    // A lookup or read still blocking a thread (a resolver that never
    // answers) must not hold the exit past the timeout: leave it behind.
    rt.shutdown_background();
    let mut finding = finding?;
    if !opts.json
        && matches!(
            finding.report.verdict,
            Verdict::Unreachable | Verdict::AuthFailure
        )
    {
        // Why it failed is said once: on stderr, as the error mcpatch ends with.
        finding.summary = None;
    }
    let report = &finding.report;
    if opts.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(report).expect("the report serialises")
        );
    } else {
        crate::out!("{}", report::render(&finding, &target));
    }
    match report.verdict {
        Verdict::Covered | Verdict::Stateless => Ok(Outcome::Clean),
        Verdict::NotCovered => Ok(Outcome::Attention),
        Verdict::Unreachable | Verdict::AuthFailure => Err(finding
            .error
            .expect("an unreachable or auth-failure finding carries its error")),
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcpatch-probe", "version": env!("CARGO_PKG_VERSION")}
    }})
}

fn request(id: u64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method})
}

/// A session id no server issued: random, shaped like the UUIDs servers issue.
fn made_up_session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let word = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.finish()
    };
    let n = (u128::from(word(1)) << 64) | u128::from(word(2));
    let hex = format!("{n:032x}");
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// What the patched client makes of one answer to a request of the lost session.
fn judge(
    predicate: &Predicate,
    case: Case,
    answer: std::result::Result<Answer, NoAnswer>,
) -> CaseAnswer {
    match answer {
        Ok(a) => {
            // The patch acts only on an established session, never during initialize.
            let session_lost = if a.ok() || case == Case::Initialize {
                false
            } else if case == Case::DeleteOwnSession {
                a.status != 405
                    && predicate.is_session_lost(&SdkError::delete_failed(a.status, a.reason))
            } else {
                predicate.is_session_lost(&SdkError::post_failed(a.status, &a.body))
            };
            CaseAnswer {
                case,
                answer: Ok(a),
                session_lost,
            }
        }
        Err(no) => CaseAnswer {
            case,
            answer: Err(no),
            session_lost: false,
        },
    }
}

/// An answer that stops the probe before the session-loss cases.
fn open_failed(
    target: &Target,
    step: &str,
    answer: std::result::Result<&Answer, &NoAnswer>,
    timeout: Duration,
) -> (Verdict, Error) {
    let url = target.url.to_string();
    match answer {
        Err(NoAnswer::TimedOut) => (
            Verdict::Unreachable,
            Error::ProbeUnreachable {
                url,
                detail: format!("no answer to {step} within {}", report::seconds(timeout)),
                help: "check that the server is running, or give it longer with --timeout SECS"
                    .into(),
            },
        ),
        Err(NoAnswer::Failed { detail, hint }) => (
            Verdict::Unreachable,
            Error::ProbeUnreachable {
                url,
                detail: detail.clone(),
                help: hint.clone(),
            },
        ),
        Ok(a) if matches!(a.status, 401 | 403 | 407) => {
            let help = if target.headers.is_empty() {
                "pass the credentials DSH sends, e.g. --header 'Authorization: Bearer TOKEN' (the `headers` of this server in the DSH config)".to_string()
            } else {
                format!(
                    "the server refused the headers given ({}): check their values against the `headers` of this server in the DSH config",
                    target.header_names()
                )
            };
            (
                Verdict::AuthFailure,
                Error::ProbeAuthFailed {
                    url,
                    detail: format!("{step} answered {}", report::status_and_words(a)),
                    help,
                },
            )
        }
        Ok(a) => {
            let json_rpc_error = a.reply.as_ref().and_then(|r| r.get("error"));
            // A plain web server: no such path, no POST, or an answer that is no JSON-RPC.
            let not_mcp = step == "initialize"
                && json_rpc_error.is_none()
                && (matches!(a.status, 404 | 405 | 501) || a.ok());
            let help = match a.status {
                404 => "no MCP endpoint at this path: use the URL from the DSH config (servers often serve /mcp)".to_string(),
                405 => "this URL does not take POST: it is not a Streamable HTTP endpoint (an SSE-only server has no session the patch handles)".to_string(),
                501 => "this server does not implement POST here: it is a web server, not a Streamable HTTP endpoint; use the URL from the DSH config (servers often serve /mcp)".to_string(),
                s if s >= 500 => "the server failed: see its logs".to_string(),
                s if (200..300).contains(&s) => "is this a Streamable HTTP MCP endpoint? The answer is not a JSON-RPC response".to_string(),
                _ => "is this the MCP endpoint from the DSH config? Run with -v to see the exchange".to_string(),
            };
            let mut detail = match json_rpc_error {
                Some(e) => format!(
                    "{step} answered a JSON-RPC error: {}",
                    target.scrub(&e.to_string())
                ),
                None => format!("{step} answered {}", report::status_and_words(a)),
            };
            if not_mcp {
                detail = format!("not an MCP endpoint: {detail}");
            }
            (
                Verdict::Unreachable,
                Error::ProbeUnreachable { url, detail, help },
            )
        }
    }
}

/// Open a session, probe how the server answers a lost one, and judge.
async fn probe(predicate: &Predicate, target: &Target, opts: &ProbeOptions) -> Result<Finding> {
    let mut x = Exchange::new(target, exchange::deadline(opts.timeout), opts.verbose).await?;
    let mut report = ProbeReport {
        url: target.url.to_string(),
        protocol_version: None,
        session_issued: false,
        answers: Vec::new(),
        verdict: Verdict::Unreachable,
    };
    let fail = |mut report: ProbeReport,
                answers: Vec<CaseAnswer>,
                step: &str,
                answer: std::result::Result<&Answer, &NoAnswer>| {
        let (verdict, error) = open_failed(target, step, answer, opts.timeout);
        report.verdict = verdict;
        report.answers = answers.into_iter().map(|a| a.report()).collect();
        // The verdict word on stdout too; the error (on stderr) says why and what to do.
        let why = match &error {
            Error::ProbeUnreachable { detail, .. } | Error::ProbeAuthFailed { detail, .. } => {
                detail.clone()
            }
            other => other.to_string(),
        };
        Finding {
            report,
            tools: None,
            summary: Some((format!("{}: {why}", verdict.word()), None)),
            error: Some(error),
        }
    };

    // 1. Open a session as the client does.
    let init = x.post(&initialize(), None).await;
    let init_answer = match &init {
        Ok(a) if a.ok() && a.reply.as_ref().is_some_and(|r| r.get("result").is_some()) => a.clone(),
        other => {
            let answers = match other {
                Ok(a) => vec![judge(predicate, Case::Initialize, Ok(a.clone()))],
                Err(_) => Vec::new(),
            };
            return Ok(fail(report, answers, "initialize", other.as_ref()));
        }
    };
    let result = &init_answer.reply.as_ref().expect("checked above")["result"];
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .map(|v| target.scrub(v));
    report.protocol_version = version.clone();
    x.protocol_version = version;
    let session = init_answer.session_id.clone();
    report.session_issued = session.is_some();
    let s = session.as_deref();

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    match x.post(&initialized, s).await {
        Ok(a) if a.ok() => {}
        other => {
            let finding = fail(
                report,
                Vec::new(),
                "notifications/initialized",
                other.as_ref(),
            );
            end_session(&x, s).await;
            return Ok(finding);
        }
    }
    let list = x.post(&request(2, "tools/list"), s).await;
    let tools = match &list {
        Ok(a) if a.ok() && a.reply.is_some() => a
            .reply
            .as_ref()
            .and_then(|r| r.pointer("/result/tools"))
            .and_then(Value::as_array)
            .map(Vec::len),
        other => {
            let finding = fail(report, Vec::new(), "tools/list", other.as_ref());
            end_session(&x, s).await;
            return Ok(finding);
        }
    };

    // 2. How does it answer a session it never issued? Read-only requests.
    let unknown = made_up_session_id();
    let mut answers = vec![
        judge(
            predicate,
            Case::UnknownSessionToolsList,
            x.post(&request(3, "tools/list"), Some(&unknown)).await,
        ),
        judge(
            predicate,
            Case::UnknownSessionPing,
            x.post(&request(4, "ping"), Some(&unknown)).await,
        ),
    ];
    // 3. End our own session, then use it.
    if let Some(own) = s {
        let deleted = judge(predicate, Case::DeleteOwnSession, x.delete(own).await);
        let ended = matches!(&deleted.answer, Ok(a) if a.ok());
        answers.push(deleted);
        if ended {
            answers.push(judge(
                predicate,
                Case::DeletedSessionToolsList,
                x.post(&request(5, "tools/list"), Some(own)).await,
            ));
        }
    }
    if let Some(timed_out) = answers
        .iter()
        .find(|a| matches!(a.answer, Err(NoAnswer::TimedOut)))
    {
        let step = timed_out.case.request().to_string();
        let finding = fail(report, answers, &step, Err(&NoAnswer::TimedOut));
        return Ok(finding);
    }
    Ok(report::judge_answers(report, answers, tools))
}

/// Best effort: end a session the probe opened but could not finish with.
async fn end_session(x: &Exchange<'_>, session: Option<&str>) {
    if let Some(s) = session {
        let _ = x.delete(s).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_session_ids_look_like_uuids_and_differ() {
        let a = made_up_session_id();
        let b = made_up_session_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }

    #[test]
    fn timeouts_are_positive_seconds() {
        assert_eq!(parse_timeout("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(
            parse_timeout("0"),
            Err(
                "\"0\" must be a number of seconds more than 0 and at most 86400 (e.g. 10 or 2.5)"
                    .into()
            )
        );
        assert_eq!(
            parse_timeout("86401"),
            Err("\"86401\" must be a number of seconds more than 0 and at most 86400 (e.g. 10 or 2.5)".into())
        );
        assert_eq!(parse_timeout("86400"), Ok(Duration::from_secs(86_400)));
        assert!(parse_timeout("-1").is_err());
        assert!(parse_timeout("NaN").is_err());
        assert!(parse_timeout("ten").is_err());
    }
}
