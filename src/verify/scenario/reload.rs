//! The `reload` scenarios: a server in watch mode, which forgets every session
//! on each save, every few seconds, with one call after each restart (their
//! rows and cycles are in table.rs). Their verdict: every call answered at once (a loss after a
//! completed recovery is a new outage, not the same one), kept here apart from
//! the other scenarios; the server's forgetting loop is fake_server/reload.rs.

use std::time::Duration;

use super::evidence::{Evidence, Judgement};
use super::table::{Plan, Scenario};
use crate::verify::fake_server::reload::NOTE_PREFIX;

/// The longest a call after a restart may take to count as answered at once.
/// It is the package's second reconnect delay (1 s: 500 ms doubled), so a
/// client that counts a loss after a completed recovery as the same outage
/// (and waits that backoff) shows, and a loaded machine's handshake does not.
pub const CALL_LIMIT: Duration = Duration::from_millis(1000);
/// The limit for a client that recovers once per call with no reconnect
/// policy (gemini-cli): each call there is a turn of the headless CLI, which
/// alone takes up to some 800 ms on a loaded machine; it has no backoff to
/// show, only a wait, which twice the limit still catches.
pub const PER_CALL_LIMIT: Duration = Duration::from_millis(2000);

/// The limit a call of `ev`'s run must be answered within.
pub fn call_limit(per_call_recovery: bool) -> Duration {
    if per_call_recovery {
        PER_CALL_LIMIT
    } else {
        CALL_LIMIT
    }
}

/// Whether a scenario runs only when named (`--scenario`): the reload
/// scenarios take 30 s and 40 s of wall time, more than every other scenario
/// together, so the default `verify` leaves them out.
pub fn by_name_only(s: &Scenario) -> bool {
    s.plan == Plan::Reload || super::table::is_extra(s.name)
}

/// How long a reload run lasts past the other plans' longest: its cycle.
pub fn run_length(s: &Scenario) -> Duration {
    s.behaviour
        .reload
        .map_or(Duration::ZERO, |c| c.every * c.times)
}

/// a call failed; BROKEN when the run did not reach every restart.
pub fn judge(scenario: &Scenario, ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let Some(cycle) = scenario.behaviour.reload else {
        return Judgement {
            verdict: "BROKEN",
            note: format!("scenario {} has no reload cycle", scenario.name),
            ..base
        };
    };
    let reloads = ev
        .witness
        .iter()
        .filter(|e| {
            e.note
                .as_deref()
                .is_some_and(|n| n.starts_with(NOTE_PREFIX))
        })
        .count();
    let every = cycle.every.as_secs_f64();
    let limit = call_limit(ev.per_call_recovery).as_millis() as u64;
    let wanted = cycle.times as usize + 1;
    let slowest = ev.calls.iter().map(|c| c.ms).max().unwrap_or(0);
    // The plan stops at the first call that failed or waited: its verdict is known.
    let failed: Vec<_> = ev.calls.iter().filter(|c| !c.ok).collect();
    if let Some(first) = failed.first() {
        return Judgement {
            verdict: "STUCK",
            note: format!(
                "{} of {} calls failed across {} restarts {every} s apart (the first: call {} after {} ms: {})",
                failed.len(),
                ev.calls.len(),
                cycle.times,
                first.call_id,
                first.ms,
                first.error.as_deref().unwrap_or("no error text")
            ),
            ..base
        };
    }
    let slow = ev.calls.iter().filter(|c| c.ms > limit).count();
    if slow > 0 {
        return Judgement {
            verdict: "SLOWED",
            note: format!(
                "{slow} of {} calls took longer than {limit} ms (the slowest {slowest} ms): a reconnect after a completed recovery waited a backoff",
                ev.calls.len()
            ),
            late_only: true,
            ..base
        };
    }
    if reloads < cycle.times as usize || ev.calls.len() < wanted {
        return Judgement {
            verdict: "BROKEN",
            note: format!(
                "the run ended after {reloads} of {} restarts and {} of {wanted} calls: nothing was tested past it",
                cycle.times,
                ev.calls.len()
            ),
            ..base
        };
    }
    Judgement {
        verdict: "RELOADED",
        note: format!(
            "{} calls, one after each of {} restarts {every} s apart, each answered within {limit} ms (the slowest {slowest} ms); {} handshakes",
            ev.calls.len(),
            cycle.times,
            base.initialize_count
        ),
        ..base
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::verify::fake_server::reload::ReloadCycle;
    use crate::verify::fake_server::{CallCount, ServerBehaviour, WitnessEntry};
    use crate::verify::scenario::table::{reload_scenario, Expectation, ScenarioName};
    use crate::verify::scenario::{self, HarnessCall, Policy};

    fn note(n: u32) -> WitnessEntry {
        WitnessEntry {
            seq: 0,
            t_ms: 0,
            answered_ms: 0,
            http_method: "CONTROL".into(),
            rpc_method: None,
            session_sent: None,
            status: 0,
            session_issued: None,
            call_id: None,
            executed: None,
            call_ok: None,
            note: Some(format!("{NOTE_PREFIX}{n}/3: dropped 1 session(s)")),
            initialize: None,
        }
    }

    /// A run of `reload` cut to 3 restarts: one call before, one after each.
    fn run(ms: &[u64], failed: Option<usize>, reloads: u32) -> Judgement {
        let witness: Vec<WitnessEntry> = (1..=reloads).map(note).collect();
        let calls: Vec<HarnessCall> = ms
            .iter()
            .enumerate()
            .map(|(i, ms)| HarnessCall {
                call_id: format!("c{}", i + 1),
                name: "echo".into(),
                ok: failed != Some(i),
                error: (failed == Some(i)).then(|| "MCP error -32001: Request timed out".into()),
                ms: *ms,
            })
            .collect();
        let mut counts = HashMap::new();
        for c in calls.iter().filter(|c| c.ok) {
            counts.insert(c.call_id.clone(), CallCount { sent: 1, ran: 1 });
        }
        let s = reload_scenario(
            ScenarioName::Reload,
            ReloadCycle {
                every: Duration::from_secs(2),
                times: 3,
            },
            &ServerBehaviour::default(),
        );
        let ev = Evidence {
            witness: &witness,
            dropped: &[],
            counts: &counts,
            calls: &calls,
            policy: Policy::Default,
            seamless: true,
            per_call_recovery: false,
        };
        scenario::judge(&s, Expectation::Reloaded, &ev)
    }

    #[test]
    fn every_call_answered_at_once_after_every_restart_is_reloaded() {
        let j = run(&[12, 40, 35, 1000], None, 3);
        assert_eq!(j.verdict, "RELOADED");
        assert_eq!(
            j.note,
            "4 calls, one after each of 3 restarts 2 s apart, each answered within 1000 ms (the slowest 1000 ms); 0 handshakes"
        );
    }

    #[test]
    fn a_call_that_waited_a_backoff_is_slowed() {
        let j = run(&[12, 40, 1043, 2051], None, 3);
        assert_eq!(j.verdict, "SLOWED");
        assert_eq!(
            j.note,
            "2 of 4 calls took longer than 1000 ms (the slowest 2051 ms): a reconnect after a completed recovery waited a backoff"
        );
    }

    #[test]
    fn a_failed_call_is_stuck_naming_it_and_its_error() {
        let j = run(&[12, 40, 1043, 3001], Some(3), 3);
        assert_eq!(j.verdict, "STUCK");
        assert_eq!(
            j.note,
            "1 of 4 calls failed across 3 restarts 2 s apart (the first: call c4 after 3001 ms: MCP error -32001: Request timed out)"
        );
    }

    #[test]
    fn a_run_short_of_its_restarts_or_calls_is_broken() {
        let j = run(&[12, 40, 35], None, 2);
        assert_eq!(j.verdict, "BROKEN");
        assert_eq!(
            j.note,
            "the run ended after 2 of 3 restarts and 3 of 4 calls: nothing was tested past it"
        );
    }
}
