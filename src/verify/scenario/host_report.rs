//! What a client's stdio host saw inside the client and reports at the end of
//! a run (`mcpatch/report`, declared by `capabilities.experimental`), and the
//! rules judged on it: the client never gets an answer to a request it did
//! not send (every run), and in `auth-token-401` its auth flow ran (auth.rs).
//! The server's witness cannot see either: both happen inside the client.

use serde_json::Value;

use super::table::{Expectation, Scenario};

/// Examples of answers to unsent requests a report keeps, and their length.
const EXAMPLES: usize = 5;
const EXAMPLE_CHARS: usize = 300;

/// A host's `mcpatch/report` answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostReport {
    /// Answers the client got for a request id it never sent.
    pub answers_to_unsent: u64,
    /// Up to [`EXAMPLES`] of them, as the client reported them (escaped here again).
    pub examples: Vec<String>,
    /// How often the client's auth flow asked its authProvider to sign in.
    pub sign_ins: u64,
}

impl HostReport {
    /// The report in a host's `result`; missing or ill-typed fields count as none.
    pub fn of(result: &Value) -> HostReport {
        let count = |k: &str| result.get(k).and_then(Value::as_u64).unwrap_or(0);
        let examples = result
            .get("examples")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .take(EXAMPLES)
                    .map(|s| crate::verify::render::clip(&crate::output::clean(s), EXAMPLE_CHARS))
                    .collect()
            })
            .unwrap_or_default();
        HostReport {
            answers_to_unsent: count("answersToUnsent"),
            examples,
            sign_ins: count("signIns"),
        }
    }
}

/// A verdict a host's report overrides a passing one with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub verdict: &'static str,
    pub note: String,
}

/// The client gets answers only to requests it sent: an answer to one of the
/// patch's own (a new session's initialize) stays in the transport. Checked on
/// every run of a host that reports, explored runs included.
pub fn answers_stay_in_transport(report: &HostReport) -> Option<Violation> {
    (report.answers_to_unsent > 0).then(|| {
        let first = report.examples.first().map_or("", String::as_str);
        Violation {
            verdict: "BROKEN",
            note: format!(
                "the client got {} answer(s) to a request it never sent, e.g. {first}: an answer the patch's own requests get must stay in the transport",
                report.answers_to_unsent
            ),
        }
    })
}

/// The first rule `report` shows broken in `scenario`'s run, if any.
pub fn check(scenario: &Scenario, report: &HostReport) -> Option<Violation> {
    if let Some(v) = answers_stay_in_transport(report) {
        return Some(v);
    }
    if scenario.expect == Expectation::AuthKept {
        if let Some(note) = super::auth::auth_flow_skipped(report.sign_ins) {
            return Some(Violation {
                verdict: "AUTH-SKIPPED",
                note,
            });
        }
    }
    None
}
