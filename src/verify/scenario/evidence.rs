//! What a scenario's verdict is computed from (the server's witness log and
//! counts, the caller's view of each call) and the verdict itself.
//!
//! What the caller saw (which calls failed, with which words, how long they
//! took) comes from the driver, which only measures; every success it reports
//! must also be in the server's counts, or the verdict is BROKEN.

use std::collections::HashMap;

use serde::Serialize;

use super::policy::Policy;
use crate::verify::fake_server::{CallCount, WitnessEntry};

/// What the harness saw of one tool call: the caller's view, measured.
#[derive(Debug, Clone, Default)]
pub struct HarnessCall {
    /// The `call_id` the harness gave the call (the server counts it).
    pub call_id: String,
    pub name: String,
    pub ok: bool,
    pub error: Option<String>,
    /// How long the call took, as the caller waited for it.
    pub ms: u64,
}

/// Everything a verdict is computed from.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    pub witness: &'a [WitnessEntry],
    /// Session ids the server dropped on purpose.
    pub dropped: &'a [String],
    /// How often each call id was sent and run.
    pub counts: &'a HashMap<String, CallCount>,
    /// The caller's view of each call, in the order they were made.
    pub calls: &'a [HarnessCall],
    pub policy: Policy,
    /// Whether the client carries the current patch revision: then no call may
    /// fail except one the server cut while its tool ran.
    pub seamless: bool,
    /// Whether the client recovers once per call that meets a lost session,
    /// with no reconnect policy of its own (gemini-cli): a bounded run then
    /// allows one new session per call, each started at once.
    pub per_call_recovery: bool,
}

impl Evidence<'_> {
    /// How many new sessions the server refused (initialize answered 503).
    pub fn refused_initializes(&self) -> usize {
        self.witness
            .iter()
            .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 503)
            .count()
    }
}

/// The verdict of one scenario run.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    /// SEAMLESS, RECOVERED, STUCK, HELD, RECYCLED, BROKEN, REPEATED, BOUNDED,
    /// UNBOUNDED or NOT-RETRIED.
    pub verdict: &'static str,
    /// Whether the verdict is what the expectation asks.
    pub ok: bool,
    /// From the first request that met the loss to the first successful call on the new session.
    pub recovery_ms: Option<u64>,
    /// How long the call that met the loss took, as its caller waited.
    pub trigger_ms: Option<u64>,
    /// Calls whose caller got an error.
    pub failed_calls: usize,
    /// Successful initialize handshakes the server saw.
    pub initialize_count: usize,
    /// The error the caller got for the call that met the loss, if it failed.
    pub trigger_error: Option<String>,
    pub note: String,
    /// The run failed only by a time limit (a recovery, a call or a reopened
    /// stream later than its bound), which a loaded machine can miss as well as
    /// a broken client: a driver that ran it beside others runs it again alone
    /// ([`again_alone`]).
    #[serde(skip)]
    pub late_only: bool,
}

/// The verdict of a run made again alone after `beside`, made while `others`
/// other runs shared the machine, failed (by a time limit, or while the
/// machine stalled): the lone run's verdict stands. When it passed, its note
/// says what the shared run saw; a lone run that failed too is told as it is.
pub fn again_alone(beside: &Judgement, alone: Judgement, others: usize) -> Judgement {
    if !alone.ok {
        return alone;
    }
    let note = format!(
        "{} (run again alone: beside {} it was {}: {})",
        alone.note,
        counted(others, "other run"),
        beside.verdict,
        beside.note
    );
    Judgement { note, ..alone }
}

/// `n` and `noun`, plural unless `n` is 1: "1 handshake", "2 handshakes".
pub(super) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
