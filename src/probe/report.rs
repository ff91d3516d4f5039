//! The probe's verdict from the server's answers, and how it is shown: a table
//! and one sentence on a terminal, one JSON object with `--json`.

use std::time::Duration;

use serde::Serialize;

use super::exchange::{Answer, NoAnswer};
use super::predicate::Predicate;
use super::target::Target;
use crate::color::{self, Painter, Style};
use crate::error::Error;
use crate::output::clean;
use crate::table::{Align, Table};

/// What the patched client will make of this server's session loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Its answer to a lost session is one the patch takes as session loss.
    Covered,
    /// An answer the patch does not take as session loss.
    NotCovered,
    /// No session to lose.
    Stateless,
    /// No session could be opened.
    Unreachable,
    /// The server refused the credentials.
    AuthFailure,
}

impl Verdict {
    /// The verdict as `--json` says it, and as the text output's last line starts.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Covered => "covered",
            Verdict::NotCovered => "not-covered",
            Verdict::Stateless => "stateless",
            Verdict::Unreachable => "unreachable",
            Verdict::AuthFailure => "auth-failure",
        }
    }
}

/// One request the probe makes to learn how sessions end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Case {
    /// The opening handshake (reported only when it fails).
    Initialize,
    /// `tools/list` carrying a session id the server never issued.
    UnknownSessionToolsList,
    /// `ping` carrying a session id the server never issued.
    UnknownSessionPing,
    /// DELETE of the probe's own session.
    DeleteOwnSession,
    /// `tools/list` carrying the session the probe just ended.
    DeletedSessionToolsList,
}

impl Case {
    pub fn name(self) -> &'static str {
        match self {
            Case::Initialize => "initialize",
            Case::UnknownSessionToolsList => "unknown-session-tools-list",
            Case::UnknownSessionPing => "unknown-session-ping",
            Case::DeleteOwnSession => "delete-own-session",
            Case::DeletedSessionToolsList => "deleted-session-tools-list",
        }
    }

    /// The request sent.
    pub fn request(self) -> &'static str {
        match self {
            Case::Initialize => "initialize",
            Case::UnknownSessionToolsList | Case::DeletedSessionToolsList => "tools/list",
            Case::UnknownSessionPing => "ping",
            Case::DeleteOwnSession => "DELETE",
        }
    }

    /// Whether the answer shows how the server treats a lost session.
    fn decides(self) -> bool {
        matches!(
            self,
            Case::UnknownSessionToolsList
                | Case::UnknownSessionPing
                | Case::DeletedSessionToolsList
        )
    }

    fn description(self) -> &'static str {
        match self {
            Case::Initialize => "initialize",
            Case::UnknownSessionToolsList => "tools/list with a session id it never issued",
            Case::UnknownSessionPing => "ping with a session id it never issued",
            Case::DeleteOwnSession => "DELETE of the probe's session",
            Case::DeletedSessionToolsList => "tools/list with the session the probe had just ended",
        }
    }
}

/// One answer and the patch's judgement of it.
#[derive(Debug, Clone)]
pub struct CaseAnswer {
    pub case: Case,
    pub answer: Result<Answer, NoAnswer>,
    /// Whether the patch's `isSessionLostError` takes the error the client's
    /// SDK raises for this answer as session loss (false when it raises none).
    pub session_lost: bool,
}

impl CaseAnswer {
    pub fn report(&self) -> AnswerReport {
        let (status, content_type, body) = match &self.answer {
            Ok(a) => (Some(a.status), a.content_type.clone(), Some(a.body.clone())),
            Err(_) => (None, None, None),
        };
        AnswerReport {
            case: self.case,
            status,
            content_type,
            body,
            session_lost: self.session_lost,
        }
    }
}

/// One answer as `--json` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerReport {
    pub case: Case,
    /// Null when no HTTP answer came (connection cut or refused).
    pub status: Option<u16>,
    pub content_type: Option<String>,
    pub body: Option<String>,
    pub session_lost: bool,
}

/// `mcpatch probe --json`.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub url: String,
    pub protocol_version: Option<String>,
    pub session_issued: bool,
    pub answers: Vec<AnswerReport>,
    pub verdict: Verdict,
}

/// The report with what the terminal shows besides it.
#[derive(Debug)]
pub struct Finding {
    pub report: ProbeReport,
    /// Tools the server listed on the probe's session.
    pub tools: Option<usize>,
    /// The verdict in one sentence, and what to do about it.
    pub summary: Option<(String, Option<String>)>,
    /// Why the probe could not finish (unreachable, auth failure).
    pub error: Option<Error>,
}

/// `2.5 s`.
pub fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// A body on one line, cut to `max` characters.
fn one_line(body: &str, max: usize) -> String {
    let flat = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max).collect::<String>())
    } else {
        flat
    }
}

/// `HTTP 403 "Forbidden: session expired"`, or `HTTP 404 {"jsonrpc":...}`.
pub fn status_and_words(a: &Answer) -> String {
    let words = one_line(&a.body, 200);
    if words.is_empty() {
        format!("HTTP {} with an empty body", a.status)
    } else if words.starts_with('{') || words.starts_with('[') {
        format!("HTTP {} {words}", a.status)
    } else {
        format!("HTTP {} \"{words}\"", a.status)
    }
}

/// Why the patch does not take this answer as session loss.
enum Judged {
    Lost,
    /// The server served the request: it keeps no session to lose.
    Served,
    NotRecognised(String),
}

fn judged(a: &CaseAnswer) -> Judged {
    let answer = match &a.answer {
        Ok(answer) => answer,
        Err(NoAnswer::Failed { detail, .. }) => {
            return Judged::NotRecognised(format!(
                "no answer ({detail}): the client sees a network error, not session loss"
            ))
        }
        Err(NoAnswer::TimedOut) => return Judged::NotRecognised(
            "no answer before the deadline: the client's call times out, which is not session loss"
                .into(),
        ),
    };
    if a.session_lost {
        return Judged::Lost;
    }
    if answer.ok() {
        return match answer.reply.as_ref() {
            Some(r) if r.get("result").is_some() => Judged::Served,
            Some(_) => Judged::NotRecognised(format!(
                "a JSON-RPC error in an HTTP {} answer reaches the client as an ordinary error of the call, never as session loss",
                answer.status
            )),
            None => Judged::NotRecognised(format!(
                "an HTTP {} answer without a JSON-RPC response is an ordinary error to the client, not session loss",
                answer.status
            )),
        };
    }
    let message = format!("Error POSTing to endpoint: {}", answer.body);
    Judged::NotRecognised(if Predicate::mentions_sse_stream(&message) {
        "its words mention \"SSE stream\", which the patch leaves to the optional GET stream".into()
    } else if matches!(answer.status, 400 | 401) {
        format!(
            "an HTTP {} counts as session loss only when its words name the session as lost (\"Session not found\", \"No valid session ID\", \"session expired\"...), and these do not",
            answer.status
        )
    } else {
        format!(
            "the patch takes only 404, or 400/401 naming the session, as session loss; HTTP {} is neither",
            answer.status
        )
    })
}

/// The verdict from the answers of a session that opened.
pub fn judge_answers(
    mut report: ProbeReport,
    answers: Vec<CaseAnswer>,
    tools: Option<usize>,
) -> Finding {
    let decisive: Vec<(&CaseAnswer, Judged)> = answers
        .iter()
        .filter(|a| a.case.decides())
        .map(|a| (a, judged(a)))
        .collect();
    let not_recognised = decisive.iter().find_map(|(a, j)| match j {
        Judged::NotRecognised(why) => Some((*a, why)),
        _ => None,
    });
    let lost = decisive
        .iter()
        .find(|(_, j)| matches!(j, Judged::Lost))
        .map(|(a, _)| *a);
    let answer_words = |a: &CaseAnswer| match &a.answer {
        Ok(answer) => status_and_words(answer),
        Err(_) => "nothing".to_string(),
    };
    let (verdict, summary, help) = if !report.session_issued {
        (
            Verdict::Stateless,
            "stateless: the server issued no session id, so there is no session to lose; DSH works with it, patched or not".to_string(),
            None,
        )
    } else if let Some((a, why)) = not_recognised {
        (
            Verdict::NotCovered,
            format!(
                "not-covered: to {}, the server answered {}: {why}. The patched client would keep the dead session, and every call to this server would fail until DSH restarts",
                a.case.description(),
                answer_words(a)
            ),
            Some("make the server, or the proxy in front of it, answer 404 to a session it does not know, as the MCP spec says".to_string()),
        )
    } else if let Some(a) = lost {
        (
            Verdict::Covered,
            format!(
                "covered: to {}, the server answered {}, which the patched client takes as session loss: it reconnects with a fresh session",
                a.case.description(),
                answer_words(a)
            ),
            None,
        )
    } else {
        (
            Verdict::Stateless,
            "stateless: the server issued a session id but serves requests carrying ids it never issued, so there is no session to lose".to_string(),
            None,
        )
    };
    report.verdict = verdict;
    report.answers = answers.iter().map(CaseAnswer::report).collect();
    Finding {
        report,
        tools,
        summary: Some((summary, help)),
        error: None,
    }
}

/// The terminal view, as wide as stdout allows, coloured as stdout allows.
pub fn render(finding: &Finding, target: &Target) -> String {
    render_within(
        finding,
        target,
        crate::width::stdout_columns(),
        color::stdout(),
    )
}

/// Columns the table takes before its ANSWER column (the widest case name,
/// STATUS and SESSION LOST, each with its two spaces).
const TABLE_LEAD: usize = 26 + 2 + 6 + 2 + 12 + 2;
/// The fewest columns an answer is cut to, however narrow the terminal.
const MIN_ANSWER: usize = 16;

/// The terminal view in at most `columns` (when given): the session, a row
/// per answer (each answer cut to the room left), the verdict word and why.
pub fn render_within(
    finding: &Finding,
    target: &Target,
    columns: Option<usize>,
    paint: Painter,
) -> String {
    let r = &finding.report;
    let mut out = fit("probe ", &clean(&r.url), columns);
    if !target.headers.is_empty() {
        out.push_str(&fit("headers: ", &target.header_names(), columns));
    }
    if let Some(v) = &r.protocol_version {
        let tools = finding
            .tools
            .map(|n| format!(", {n} tool(s) listed"))
            .unwrap_or_default();
        let session = if r.session_issued {
            "issued"
        } else {
            "none issued"
        };
        out.push_str(&fit(
            "session: ",
            &format!("{session} (protocol {}{tools})", clean(v)),
            columns,
        ));
    }
    if !r.answers.is_empty() {
        // Too narrow for the answer beside the rest: each answer on a line of its own below.
        let stacked = columns.is_some_and(|c| c < TABLE_LEAD + MIN_ANSWER);
        let room = match columns {
            None => 100,
            Some(c) if stacked => c.saturating_sub(4).max(MIN_ANSWER),
            Some(c) => c.saturating_sub(TABLE_LEAD).min(100),
        };
        let header: &[&str] = if stacked {
            // 40 columns wide.
            &["CASE", "STATUS", "LOST"]
        } else {
            &["CASE", "STATUS", "SESSION LOST", "ANSWER"]
        };
        let mut t = Table::new(
            header,
            &[Align::Left, Align::Right, Align::Left, Align::Left][..header.len()],
        );
        let mut answers = Vec::new();
        for a in &r.answers {
            let answer = match &a.body {
                Some(b) if b.trim().is_empty() => "(empty body)".to_string(),
                Some(b) => cut(&clean(&one_line(b, usize::MAX)), room),
                None => "no answer".to_string(),
            };
            let mut row = vec![
                a.case.name().to_string(),
                a.status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into()),
                if a.session_lost { "yes" } else { "no" }.to_string(),
            ];
            if stacked {
                answers.push(answer);
            } else {
                row.push(answer);
            }
            t.row(row);
        }
        out.push('\n');
        let lines = t.lines();
        out.push_str(&lines[0]);
        for (i, line) in lines[1..].iter().enumerate() {
            out.push_str(line);
            if let Some(answer) = answers.get(i) {
                out.push_str(&format!("    {answer}\n"));
            }
        }
    }
    if let Some((summary, help)) = &finding.summary {
        out.push('\n');
        out.push_str(&paint_verdict(
            paint,
            r.verdict,
            &fit("", &clean(summary), columns),
        ));
        if let Some(h) = help {
            let text = fit("help: ", &clean(h), columns);
            let rest = text.strip_prefix("help:").unwrap_or(&text);
            out.push_str(&format!("{}{rest}", paint.paint(Style::BoldCyan, "help:")));
        }
    }
    out
}

/// `text` cut to `max` characters, ending in `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        let kept: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

/// `first` then `text` in lines of at most `max` characters (when given),
/// broken between words, and inside a word too long for a line (a URL, a
/// JSON body); lines after the first indented by the width of `first`. Ends
/// in a newline.
fn fit(first: &str, text: &str, max: Option<usize>) -> String {
    let indent = first.chars().count();
    let Some(max) = max else {
        return format!("{first}{text}\n");
    };
    let room = max.saturating_sub(indent).max(MIN_ANSWER);
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().expect("one line at least");
        let used = line.chars().count();
        let width = word.chars().count();
        if used > 0 && used + 1 + width <= room {
            line.push(' ');
            line.push_str(word);
            continue;
        }
        if used > 0 {
            lines.push(String::new());
        }
        let mut chars = word.chars().peekable();
        while chars.peek().is_some() {
            let line = lines.last_mut().expect("one line at least");
            let free = room - line.chars().count();
            line.extend(chars.by_ref().take(free));
            if chars.peek().is_some() {
                lines.push(String::new());
            }
        }
    }
    let continued = format!("\n{}", " ".repeat(indent));
    format!("{first}{}\n", lines.join(&continued))
}

/// The summary with its leading verdict (`covered:`, `not-covered:`,
/// `stateless:`, `unreachable:`, `auth-failure:`) green when DSH works with
/// the server, red when it does not.
fn paint_verdict(paint: Painter, verdict: Verdict, summary: &str) -> String {
    let style = match verdict {
        Verdict::Covered | Verdict::Stateless => Style::Green,
        Verdict::NotCovered | Verdict::Unreachable | Verdict::AuthFailure => Style::Red,
    };
    match summary.split_once(':') {
        Some((word, rest)) => format!("{}:{rest}", paint.paint(style, word)),
        None => summary.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str, reply: Option<serde_json::Value>) -> Answer {
        Answer {
            status,
            reason: "",
            content_type: Some("application/json".into()),
            session_id: None,
            body: body.into(),
            reply,
        }
    }

    fn report(session_issued: bool) -> ProbeReport {
        ProbeReport {
            url: "http://127.0.0.1:1/mcp".into(),
            protocol_version: Some("2025-11-25".into()),
            session_issued,
            answers: Vec::new(),
            verdict: Verdict::Unreachable,
        }
    }

    fn case(case: Case, answer: Result<Answer, NoAnswer>, session_lost: bool) -> CaseAnswer {
        CaseAnswer {
            case,
            answer,
            session_lost,
        }
    }

    #[test]
    fn a_json_rpc_error_in_a_200_is_not_covered() {
        let error = serde_json::json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "Session not found"}});
        let body = error.to_string();
        let f = judge_answers(
            report(true),
            vec![case(
                Case::UnknownSessionToolsList,
                Ok(answer(200, &body, Some(error))),
                false,
            )],
            Some(1),
        );
        assert_eq!(f.report.verdict, Verdict::NotCovered);
        assert_eq!(
            f.summary.unwrap().0,
            format!("not-covered: to tools/list with a session id it never issued, the server answered HTTP 200 {body}: a JSON-RPC error in an HTTP 200 answer reaches the client as an ordinary error of the call, never as session loss. The patched client would keep the dead session, and every call to this server would fail until DSH restarts")
        );
    }

    #[test]
    fn a_cut_connection_is_not_covered_and_one_bad_answer_outweighs_good_ones() {
        let lost = answer(404, "Not Found", None);
        let f = judge_answers(
            report(true),
            vec![
                case(Case::UnknownSessionToolsList, Ok(lost.clone()), true),
                case(
                    Case::UnknownSessionPing,
                    Err(NoAnswer::Failed {
                        detail: "connection reset".into(),
                        hint: String::new(),
                    }),
                    false,
                ),
            ],
            None,
        );
        assert_eq!(f.report.verdict, Verdict::NotCovered);
        assert!(f.summary.unwrap().0.contains(
            "answered nothing: no answer (connection reset): the client sees a network error, not session loss."
        ));
        assert_eq!(f.report.answers[1].status, None);
        assert_eq!(f.report.answers[1].body, None);
    }

    #[test]
    fn a_server_that_serves_ids_it_never_issued_has_no_session_to_lose() {
        let served = serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}});
        let f = judge_answers(
            report(true),
            vec![case(
                Case::UnknownSessionToolsList,
                Ok(answer(200, &served.to_string(), Some(served))),
                false,
            )],
            Some(0),
        );
        assert_eq!(f.report.verdict, Verdict::Stateless);
        assert_eq!(f.summary.unwrap().0, "stateless: the server issued a session id but serves requests carrying ids it never issued, so there is no session to lose");
    }

    #[test]
    fn a_400_whose_words_do_not_name_the_session_is_explained() {
        let f = judge_answers(
            report(true),
            vec![case(
                Case::DeletedSessionToolsList,
                Ok(answer(400, "Bad Request: invalid params", None)),
                false,
            )],
            None,
        );
        assert_eq!(f.report.verdict, Verdict::NotCovered);
        assert!(f.summary.unwrap().0.starts_with(
            "not-covered: to tools/list with the session the probe had just ended, the server answered HTTP 400 \"Bad Request: invalid params\": an HTTP 400 counts as session loss only when its words name the session as lost"
        ));
    }
}
