//! Checks of what only the DSH plugin harness reports besides the calls: the
//! client's log lines and the SDK 2.x error shape it handed to the client.
//! They refine a scenario's judgement for the client that must meet the current
//! revision's expectations.

use super::harness::{HarnessRun, LOSS_LOG_WORDS};
use crate::verify::fake_server::WitnessEntry;
use crate::verify::scenario::invariants::{self, Violation};
use crate::verify::scenario::{Expectation, Judgement, Plan, Policy, Scenario};

/// The rules the plugin's explored runs keep that its fixed table checks too,
/// on every scenario: the log tells no more losses than there were
/// (`logs-tell-the-truth`), and the tools registered at the end are the
/// definitions of the session the last call was served on
/// (`tools-from-new-session`; the scenarios' servers name the listing session
/// in each description).
pub fn table_rules(
    witness: &[WitnessEntry],
    dropped: &[String],
    run: &HarnessRun,
) -> Option<Violation> {
    invariants::logs_tell_the_truth(witness, dropped, &run.logs, LOSS_LOG_WORDS)
        .or_else(|| invariants::tools_from_new_session(witness, &run.calls, &run.tools_described))
}

/// The log line a loss must start with (`warn: ` is the harness's level prefix).
const LOSS_WARNING: &str = "warn: mcp-client(fake): the server no longer recognises the session (";
/// The info line of a finished recovery.
const RECONNECTED_INFO: &str = "info: mcp-client(fake): reconnected and re-synced tools";

/// Refine `j` with what the run's logs and error reshaping show.
pub fn refine(
    scenario: &Scenario,
    policy: Policy,
    expect: Expectation,
    run: &HarnessRun,
    j: &mut Judgement,
) {
    if scenario.plan == Plan::Sdk2 && run.reshaped == 0 && j.verdict != "HANG" {
        *j = Judgement {
            verdict: "BROKEN",
            ok: false,
            note: "no HTTP error reached the client in the SDK 2.x shape: nothing was tested"
                .into(),
            ..j.clone()
        };
        return;
    }
    // One warning per loss naming the server and its answer, and one info once it is back.
    let meets_answer = matches!(
        scenario.plan,
        Plan::Invalidate | Plan::Idle | Plan::Concurrent | Plan::Sdk2 | Plan::Relist
    );
    if expect != Expectation::Seamless || !meets_answer || j.verdict != "SEAMLESS" {
        return;
    }
    if let Some(lapse) = log_lapse(scenario, policy, &run.logs) {
        j.verdict = "RECOVERED";
        j.ok = false;
        j.note = format!("{lapse}; {}", j.note);
    }
}

/// What is wrong with the logs of one recovery from one loss, if anything.
fn log_lapse(scenario: &Scenario, policy: Policy, logs: &[String]) -> Option<String> {
    let warnings: Vec<&String> = logs
        .iter()
        .filter(|l| l.starts_with(LOSS_WARNING))
        .collect();
    let words = scenario.behaviour.lost_session.words();
    let tail = format!(
        "); reconnecting now with a fresh session (attempt 1/{})",
        policy.max_attempts()
    );
    match warnings.as_slice() {
        [] => {
            return Some(format!(
                "no warning naming the server and its answer was logged for the loss (expected a line starting {:?})",
                LOSS_WARNING.trim_start_matches("warn: ")
            ))
        }
        [one] => {
            if !(one.contains(words) && one.ends_with(&tail)) {
                return Some(format!(
                    "the loss warning does not name the server's answer ({words:?}) and end {tail:?}: {:?}",
                    one.trim_start_matches("warn: ")
                ));
            }
        }
        more => {
            return Some(format!(
                "{} loss warnings were logged for one loss",
                more.len()
            ))
        }
    }
    if !logs.iter().any(|l| l.starts_with(RECONNECTED_INFO)) {
        return Some(format!(
            "no info line {:?} was logged once the session was back",
            RECONNECTED_INFO.trim_start_matches("info: ")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::scenario::{find, ScenarioName};

    fn seamless() -> Judgement {
        Judgement {
            verdict: "SEAMLESS",
            ok: true,
            recovery_ms: Some(5),
            trigger_ms: Some(5),
            failed_calls: 0,
            initialize_count: 2,
            trigger_error: None,
            note: "one fresh initialize".into(),
            late_only: false,
        }
    }

    fn run(logs: &[&str]) -> HarnessRun {
        HarnessRun {
            logs: logs.iter().map(|l| l.to_string()).collect(),
            ..HarnessRun::default()
        }
    }

    const WARN: &str = "warn: mcp-client(fake): the server no longer recognises the session (Streamable HTTP error: Error POSTing to endpoint: {\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,\"message\":\"Session not found\"},\"id\":3}); reconnecting now with a fresh session (attempt 1/5)";
    const INFO: &str = "info: mcp-client(fake): reconnected and re-synced tools (attempt 1/5)";

    fn refined(logs: &[&str]) -> Judgement {
        let mut j = seamless();
        refine(
            &find(ScenarioName::Expired404),
            Policy::Short,
            Expectation::Seamless,
            &run(logs),
            &mut j,
        );
        j
    }

    #[test]
    fn a_loss_is_seamless_only_with_one_warning_naming_the_answer_and_one_info() {
        let j = refined(&[WARN, INFO]);
        assert_eq!((j.verdict, j.ok), ("SEAMLESS", true));
        let j = refined(&[INFO]);
        assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
        assert!(
            j.note
                .starts_with("no warning naming the server and its answer was logged"),
            "{}",
            j.note
        );
        let j = refined(&[WARN, WARN, INFO]);
        assert!(
            j.note
                .starts_with("2 loss warnings were logged for one loss"),
            "{}",
            j.note
        );
        let j = refined(&[&WARN.replace("Session not found", "?"), INFO]);
        assert!(
            j.note.starts_with(
                "the loss warning does not name the server's answer (\"Session not found\")"
            ),
            "{}",
            j.note
        );
        let j = refined(&[&WARN.replace(" now ", " in 100ms "), INFO]);
        assert_eq!(j.verdict, "RECOVERED");
        let j = refined(&[WARN]);
        assert!(j.note.starts_with("no info line"), "{}", j.note);
    }

    #[test]
    fn logs_are_not_judged_for_a_relaxed_expectation_and_sdk2_needs_a_reshaped_error() {
        let mut j = seamless();
        refine(
            &find(ScenarioName::Expired404),
            Policy::Short,
            Expectation::Recover,
            &run(&[]),
            &mut j,
        );
        assert_eq!(j.verdict, "SEAMLESS");
        let mut j = seamless();
        refine(
            &find(ScenarioName::Expired404Sdk2),
            Policy::Short,
            Expectation::Seamless,
            &run(&[WARN, INFO]),
            &mut j,
        );
        assert_eq!((j.verdict, j.ok), ("BROKEN", false));
        assert_eq!(
            j.note,
            "no HTTP error reached the client in the SDK 2.x shape: nothing was tested"
        );
        let mut j = seamless();
        let mut reshaped = run(&[WARN, INFO]);
        reshaped.reshaped = 2;
        refine(
            &find(ScenarioName::Expired404Sdk2),
            Policy::Short,
            Expectation::Seamless,
            &reshaped,
            &mut j,
        );
        assert_eq!((j.verdict, j.ok), ("SEAMLESS", true));
    }
}
