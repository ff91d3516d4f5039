//! The verify scenarios — what the fake server does, how the harness drives
//! the client, what a healed client must show — and the verdicts, computed
//! from the server's witness log and its per-call counts.
//!
//! What the caller saw (which calls failed, with which words, how long they
//! took) comes from the harness, which only measures; every success it reports
//! must also be in the server's counts, or the verdict is BROKEN.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;

pub mod policy;

pub use policy::Policy;
use super::server::{
    CallCount, LostSessionAnswer, ServerBehaviour, WitnessEntry, ORDINARY_ERROR_WORDS,
};

/// The scenario names users pass to `--scenario`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum, Serialize)]
pub enum ScenarioName {
    #[value(name = "expired-404")]
    #[serde(rename = "expired-404")]
    Expired404,
    #[value(name = "expired-400")]
    #[serde(rename = "expired-400")]
    Expired400,
    #[value(name = "expired-401")]
    #[serde(rename = "expired-401")]
    Expired401,
    #[value(name = "idle-timeout")]
    #[serde(rename = "idle-timeout")]
    IdleTimeout,
    #[value(name = "restart")]
    #[serde(rename = "restart")]
    Restart,
    #[value(name = "restart-persisted")]
    #[serde(rename = "restart-persisted")]
    RestartPersisted,
    #[value(name = "ordinary-errors")]
    #[serde(rename = "ordinary-errors")]
    OrdinaryErrors,
    #[value(name = "sse-404")]
    #[serde(rename = "sse-404")]
    Sse404,
    #[value(name = "strict-reinit")]
    #[serde(rename = "strict-reinit")]
    StrictReinit,
    #[value(name = "concurrent-loss")]
    #[serde(rename = "concurrent-loss")]
    ConcurrentLoss,
    #[value(name = "forgetful")]
    #[serde(rename = "forgetful")]
    Forgetful,
    #[value(name = "cut-mid-call")]
    #[serde(rename = "cut-mid-call")]
    CutMidCall,
    #[value(name = "expired-404-sdk2")]
    #[serde(rename = "expired-404-sdk2")]
    Expired404Sdk2,
    #[value(name = "slow-timeout")]
    #[serde(rename = "slow-timeout")]
    SlowTimeout,
    #[value(name = "slow-relist")]
    #[serde(rename = "slow-relist")]
    SlowRelist,
    #[value(name = "abort-waiting")]
    #[serde(rename = "abort-waiting")]
    AbortWaiting,
    #[value(name = "deadline-waiting")]
    #[serde(rename = "deadline-waiting")]
    DeadlineWaiting,
    #[value(name = "deadline-resend")]
    #[serde(rename = "deadline-resend")]
    DeadlineResend,
    #[value(name = "long-backoff")]
    #[serde(rename = "long-backoff")]
    LongBackoff,
    #[value(name = "gave-up")]
    #[serde(rename = "gave-up")]
    GaveUp,
    #[value(name = "reload")]
    #[serde(rename = "reload")]
    Reload,
    #[value(name = "reload-5s")]
    #[serde(rename = "reload-5s")]
    Reload5s,
}

impl ScenarioName {
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioName::Expired404 => "expired-404",
            ScenarioName::Expired400 => "expired-400",
            ScenarioName::Expired401 => "expired-401",
            ScenarioName::IdleTimeout => "idle-timeout",
            ScenarioName::Restart => "restart",
            ScenarioName::RestartPersisted => "restart-persisted",
            ScenarioName::OrdinaryErrors => "ordinary-errors",
            ScenarioName::Sse404 => "sse-404",
            ScenarioName::StrictReinit => "strict-reinit",
            ScenarioName::ConcurrentLoss => "concurrent-loss",
            ScenarioName::Forgetful => "forgetful",
            ScenarioName::CutMidCall => "cut-mid-call",
            ScenarioName::Expired404Sdk2 => "expired-404-sdk2",
            ScenarioName::SlowTimeout => "slow-timeout",
            ScenarioName::SlowRelist => "slow-relist",
            ScenarioName::AbortWaiting => "abort-waiting",
            ScenarioName::DeadlineWaiting => "deadline-waiting",
            ScenarioName::DeadlineResend => "deadline-resend",
            ScenarioName::LongBackoff => "long-backoff",
            ScenarioName::GaveUp => "gave-up",
            ScenarioName::Reload => "reload",
            ScenarioName::Reload5s => "reload-5s",
        }
    }
}

impl std::fmt::Display for ScenarioName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the harness drives the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Call, have the server drop the session, call until it works or the deadline passes.
    Invalidate,
    /// Call, stay idle past the server's idle limit, call again.
    Idle,
    /// Call, have the server restart, wait until it listens again, call again.
    Restart,
    /// Call tools that fail in ordinary ways, then call tools that work.
    Ordinary,
    /// Call, wait until the server has answered the client's GET, watch, call again.
    Settle,
    /// Call, then send a batch of calls at once while the server drops the session under them.
    Concurrent,
    /// Call again and again against a server that loses every session right after its tool list.
    Forgetful,
    /// Call a slow tool while the server dies under it, wait until it listens again, call again.
    Cut,
    /// As `Invalidate`, with every HTTP error of the SDK reshaped as the SDK 2.x
    /// `SdkHttpError` (numeric `status`, string `code`) before the client sees it.
    Sdk2,
    /// Call a tool slower than the call's timeout on a healthy session, then call again.
    Timeout,
    /// As `Invalidate`, then wait until the new session's (held back) tool list is answered.
    Relist,
    /// Call, have the server drop the session, make one probe call whose abort
    /// signal fires while it waits for the new session, then call until it works.
    AbortWaiting,
    /// As `AbortWaiting`, but `toolCallTimeoutMs` ends the wait (the signal is longer).
    DeadlineWaiting,
    /// As `DeadlineWaiting`, with a slow probe whose repeat must end by the call's
    /// own deadline, not a fresh `toolCallTimeoutMs`.
    DeadlineResend,
    /// Call, have the server drop the session and refuse every new one; one call
    /// waits while reconnecting gives up, one more is made after it.
    GiveUp,
    /// Call, start the server forgetting every session again and again
    /// (reload.rs), and call once after each time.
    Reload,
}

impl Plan {
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Invalidate => "invalidate",
            Plan::Idle => "idle",
            Plan::Restart => "restart",
            Plan::Ordinary => "ordinary",
            Plan::Settle => "settle",
            Plan::Concurrent => "concurrent",
            Plan::Forgetful => "forgetful",
            Plan::Cut => "cut",
            Plan::Sdk2 => "sdk2",
            Plan::Timeout => "timeout",
            Plan::Relist => "relist",
            Plan::AbortWaiting => "abort-waiting",
            Plan::DeadlineWaiting => "deadline-waiting",
            Plan::DeadlineResend => "deadline-resend",
            Plan::GiveUp => "give-up",
            Plan::Reload => "reload",
        }
    }
}

/// What a healed client must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expectation {
    /// A fresh session, tools re-listed, calls working again, no failed call (SEAMLESS).
    Seamless,
    /// A fresh session, tools re-listed, calls working again, failed calls allowed (RECOVERED).
    Recover,
    /// Keep working on the same session, no new initialize (HELD).
    Hold,
    /// Against a server that keeps losing sessions: every call ends within its
    /// timeout, no call is sent more than twice, handshakes stay within the policy (BOUNDED).
    Bounded,
    /// A call cut while the tool ran fails and is never sent again (NOT-RETRIED).
    NoRetry,
    /// A call that waits for a new session ends by its own abort signal or
    /// deadline, and is not sent again after it; calls work again later (TIMELY).
    Timely,
    /// Once reconnecting has stopped, a waiting call and a later one fail at
    /// once, with the server's words and why it stopped (FAILED-FAST).
    FailFast,
    /// Against a server that forgets every session every few seconds: every
    /// call after each restart answered at once (RELOADED).
    Reloaded,
}

impl Expectation {
    /// The verdict that meets this expectation, for tables.
    pub fn verdict(self) -> &'static str {
        match self {
            Expectation::Seamless => "SEAMLESS",
            Expectation::Recover => "RECOVERED",
            Expectation::Hold => "HELD",
            Expectation::Bounded => "BOUNDED",
            Expectation::NoRetry => "NOT-RETRIED",
            Expectation::Timely => "TIMELY",
            Expectation::FailFast => "FAILED-FAST",
            Expectation::Reloaded => "RELOADED",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: ScenarioName,
    pub what: &'static str,
    pub behaviour: ServerBehaviour,
    pub plan: Plan,
    /// What a client healed by any revision must show; recovery scenarios expect
    /// SEAMLESS of the current patch revision (see [`Scenario::expectation`]).
    pub expect: Expectation,
}

impl Scenario {
    /// The expectation for a client that carries the current patch revision
    /// (`seamless`) or not.
    pub fn expectation(&self, seamless: bool) -> Expectation {
        match self.expect {
            Expectation::Recover if seamless => Expectation::Seamless,
            e => e,
        }
    }
}

/// Idle limit of the `idle-timeout` scenario, and how long the harness idles.
pub const IDLE_LIMIT: Duration = Duration::from_millis(800);
pub const IDLE_FOR: Duration = Duration::from_millis(1300);
/// Calls the `concurrent-loss` harness sends at once, and how many of them the
/// server runs before the session drops under the rest.
pub const CONCURRENT_CALLS: usize = 8;
pub const CONCURRENT_RAN_BEFORE_LOSS: usize = 2;
/// Calls the `concurrent-loss` harness makes while the client replaces its session,
/// and how long the server holds a re-initialize back to leave room for them.
pub const CONCURRENT_LATE_CALLS: usize = 4;
pub const REINIT_DELAY: Duration = Duration::from_millis(500);
/// Calls the `forgetful` harness makes, one after another.
pub const FORGETFUL_CALLS: usize = 8;
/// How much earlier than its backoff a reconnect may start (timer granularity).
const BACKOFF_TOLERANCE_MS: u64 = 10;
/// How much past its timeout a call may end before it counts as outliving it.
const TIMEOUT_SLACK: Duration = Duration::from_millis(500);

/// `slow-timeout`: the call's `toolCallTimeoutMs`, and how long its tool runs.
pub const SLOW_TIMEOUT_CALL: Duration = Duration::from_millis(800);
pub const SLOW_TIMEOUT_TOOL: Duration = Duration::from_millis(2000);
/// `slow-relist`: how long the server holds the new session's tool list back.
pub const RELIST_DELAY: Duration = Duration::from_millis(400);
/// `abort-waiting`: when the probe call's abort signal fires, and how long the
/// server holds the re-initialize back (the call's `toolCallTimeoutMs` is the usual 3 s).
pub const ABORT_AFTER: Duration = Duration::from_millis(400);
pub const ABORT_REINIT_DELAY: Duration = Duration::from_millis(1500);
/// `deadline-*`: the call's `toolCallTimeoutMs`, and its abort signal (longer, so
/// only the deadline can end the call in time).
pub const DEADLINE_CALL_TIMEOUT: Duration = Duration::from_millis(1000);
pub const DEADLINE_SIGNAL: Duration = Duration::from_millis(6000);
/// `deadline-waiting`: the re-initialize is held back past the call's deadline.
pub const DEADLINE_WAIT_REINIT_DELAY: Duration = Duration::from_millis(3000);
/// `deadline-resend`: the call's `toolCallTimeoutMs`; the re-initialize is held
/// back this long, then the probe's repeat runs a tool this slow: only the call's
/// own deadline ends it in time (a repeat with a whole new `toolCallTimeoutMs`
/// ends at 3.9 s at the earliest).
pub const DEADLINE_RESEND_CALL_TIMEOUT: Duration = Duration::from_millis(3000);
pub const DEADLINE_RESEND_REINIT_DELAY: Duration = Duration::from_millis(900);
pub const DEADLINE_RESEND_TOOL: Duration = Duration::from_millis(5000);
/// How much past its signal or deadline a probe call may end (timers, a loaded machine).
const TIMELY_SLACK: Duration = Duration::from_millis(700);
/// `gave-up`: reconnecting stops after two quick failed attempts (about 0.3 s);
/// the call waiting meanwhile (its timeout and signal: [`GIVE_UP_CALL_TIMEOUT`])
/// must fail by [`GIVE_UP_WAIT_LIMIT`], and a call made after it within [`FAIL_FAST_LIMIT`].
pub const GIVE_UP_CALL_TIMEOUT: Duration = Duration::from_millis(6000);
pub const GIVE_UP_WAIT_LIMIT: Duration = Duration::from_millis(3000);
pub const FAIL_FAST_LIMIT: Duration = Duration::from_millis(1000);
/// The current revision starts the first reconnect of an outage at once: the new
/// initialize must arrive this soon after the session-lost answer. Judged where
/// the policy's first backoff is at least twice as long (`long-backoff`: 5 s),
/// so a client that waits it shows, and a loaded machine does not.
pub const FIRST_RECONNECT_LIMIT: Duration = Duration::from_millis(2500);
/// The error the harness reports for a call whose promise never settled.
pub const NEVER_SETTLED: &str = "never settled";

/// Every scenario, in the order verify reports them.
pub fn all() -> Vec<Scenario> {
    let base = ServerBehaviour::default();
    vec![
        Scenario {
            name: ScenarioName::Expired404,
            what: "drops the session; answers 404 + JSON-RPC -32001 \"Session not found\"",
            behaviour: base.clone(),
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::Expired400,
            what: "drops the session; answers 400 \"Bad Request: No valid session ID provided\"",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::BadRequestNoValidSession,
                ..base.clone()
            },
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::Expired401,
            what: "drops the session; answers 401 \"Unauthorized: Session not found\"",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::UnauthorizedText,
                ..base.clone()
            },
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::IdleTimeout,
            what: "prunes sessions idle longer than a short limit; answers 404 \"Not Found: Session not found\"",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::NotFoundText,
                idle_limit: Some(IDLE_LIMIT),
                ..base.clone()
            },
            plan: Plan::Idle,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::Restart,
            what: "restarts on the same port; in-memory sessions lost, open connections closed; answers a bare 404 \"Not Found\"",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::NotFoundPlain,
                ..base.clone()
            },
            plan: Plan::Restart,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::RestartPersisted,
            what: "restarts on the same port but keeps its sessions",
            behaviour: ServerBehaviour {
                persist_sessions: true,
                ..base.clone()
            },
            plan: Plan::Restart,
            expect: Expectation::Hold,
        },
        Scenario {
            name: ScenarioName::OrdinaryErrors,
            what: "answers tool calls with HTTP 500, 400 invalid params, a JSON-RPC error, a tool error",
            behaviour: base.clone(),
            plan: Plan::Ordinary,
            expect: Expectation::Hold,
        },
        Scenario {
            name: ScenarioName::Sse404,
            what: "has no GET stream and answers the optional GET with 404 instead of 405, once the client is connected",
            behaviour: ServerBehaviour {
                get_not_found: true,
                ..base.clone()
            },
            plan: Plan::Settle,
            expect: Expectation::Hold,
        },
        Scenario {
            name: ScenarioName::StrictReinit,
            what: "drops the session and rejects an initialize that carries a session id",
            behaviour: ServerBehaviour {
                strict_initialize: true,
                ..base.clone()
            },
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::ConcurrentLoss,
            what: "drops the session under 8 calls in flight (2 ran first and answer late, 6 get 404); 4 more calls come while the new session starts",
            behaviour: ServerBehaviour {
                reinit_delay: Some(REINIT_DELAY),
                ..base.clone()
            },
            plan: Plan::Concurrent,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::Forgetful,
            what: "loses every new session right after its tool list",
            behaviour: ServerBehaviour {
                forget_after_list: true,
                ..base.clone()
            },
            plan: Plan::Forgetful,
            expect: Expectation::Bounded,
        },
        Scenario {
            name: ScenarioName::CutMidCall,
            what: "dies while a slow tool runs (connection cut, sessions lost), then listens again",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::NotFoundText,
                restart_during_slow_call: true,
                ..base.clone()
            },
            plan: Plan::Cut,
            expect: Expectation::NoRetry,
        },
        Scenario {
            name: ScenarioName::Expired404Sdk2,
            what: "drops the session; answers 404 + JSON-RPC -32001; the client sees each HTTP error as the SDK 2.x SdkHttpError (numeric status, string code)",
            behaviour: base.clone(),
            plan: Plan::Sdk2,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::SlowTimeout,
            what: "a tool runs past the call's 800 ms timeout on a healthy session (the SDK's timeout is -32001, the code some servers use for an unknown session)",
            behaviour: base.clone(),
            plan: Plan::Timeout,
            expect: Expectation::Hold,
        },
        Scenario {
            name: ScenarioName::SlowRelist,
            what: "drops the session; holds the new session's tool list back 400 ms",
            behaviour: ServerBehaviour {
                relist_delay: Some(RELIST_DELAY),
                ..base.clone()
            },
            plan: Plan::Relist,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::AbortWaiting,
            what: "drops the session; holds the re-initialize back 1.5 s; a call's abort signal fires at 400 ms while it waits (toolCallTimeoutMs 3 s)",
            behaviour: ServerBehaviour {
                reinit_delay: Some(ABORT_REINIT_DELAY),
                ..base.clone()
            },
            plan: Plan::AbortWaiting,
            expect: Expectation::Timely,
        },
        Scenario {
            name: ScenarioName::DeadlineWaiting,
            what: "drops the session; holds the re-initialize back 3 s, past a waiting call's 1 s toolCallTimeoutMs (its signal: 6 s)",
            behaviour: ServerBehaviour {
                reinit_delay: Some(DEADLINE_WAIT_REINIT_DELAY),
                ..base.clone()
            },
            plan: Plan::DeadlineWaiting,
            expect: Expectation::Timely,
        },
        Scenario {
            name: ScenarioName::DeadlineResend,
            what: "drops the session; holds the re-initialize back 0.9 s; the repeat of a 5 s tool must end by the call's own 3 s toolCallTimeoutMs",
            behaviour: ServerBehaviour {
                reinit_delay: Some(DEADLINE_RESEND_REINIT_DELAY),
                ..base.clone()
            },
            plan: Plan::DeadlineResend,
            expect: Expectation::Timely,
        },
        Scenario {
            name: ScenarioName::LongBackoff,
            what: "drops the session; the client's first reconnect delay is 5 s, which a session-lost answer must skip",
            behaviour: base.clone(),
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::GaveUp,
            what: "drops the session and refuses every new one (503): reconnecting stops after 2 attempts while a call waits",
            behaviour: ServerBehaviour {
                refuse_reinit: true,
                ..base.clone()
            },
            plan: Plan::GiveUp,
            expect: Expectation::FailFast,
        },
        crate::verify::reload::scenario(ScenarioName::Reload, crate::verify::reload::RELOAD, &base),
        crate::verify::reload::scenario(ScenarioName::Reload5s, crate::verify::reload::RELOAD_5S, &base),
    ]
}

/// The scenario of this name.
pub fn find(name: ScenarioName) -> Scenario {
    all()
        .into_iter()
        .find(|s| s.name == name)
        .expect("every ScenarioName has a scenario")
}

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
}

/// Judge one run of `scenario` against `expect`.
pub fn judge(scenario: &Scenario, expect: Expectation, ev: &Evidence<'_>) -> Judgement {
    judge_with(scenario, expect, ev, true)
}

/// [`judge`], with a recovery asked to list the tools again on the new session
/// (`relist_tools`) or not: a stdio bridge keeps no tool list, its host lists the tools.
pub fn judge_with(
    scenario: &Scenario,
    expect: Expectation,
    ev: &Evidence<'_>,
    relist_tools: bool,
) -> Judgement {
    let initialize_count = ev
        .witness
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 200)
        .count();
    let failed_calls = ev.calls.iter().filter(|c| !c.ok).count();
    let base = Judgement {
        verdict: "",
        ok: false,
        recovery_ms: None,
        trigger_ms: None,
        failed_calls,
        initialize_count,
        trigger_error: None,
        note: String::new(),
    };
    if let Some(c) = ev
        .calls
        .iter()
        .find(|c| !c.ok && c.error.as_deref() == Some(NEVER_SETTLED))
    {
        return Judgement {
            verdict: "HANG",
            note: format!(
                "call {} ({}) never settled: its caller was still waiting after {} ms",
                c.call_id, c.name, c.ms
            ),
            ..base
        };
    }
    if let Some(note) = repeated_call(ev) {
        return Judgement {
            verdict: "REPEATED",
            note,
            ..base
        };
    }
    if let Some(note) = success_never_run(ev) {
        return Judgement {
            verdict: "BROKEN",
            note,
            ..base
        };
    }
    let mut j = match scenario.expect {
        Expectation::Recover | Expectation::Seamless => judge_recovery(ev, base, relist_tools),
        Expectation::Hold => judge_hold(scenario, ev, base),
        Expectation::Bounded => judge_bounded(ev, base),
        Expectation::NoRetry => judge_no_retry(ev, base),
        Expectation::Timely => judge_timely(scenario, ev, base),
        Expectation::FailFast => judge_fail_fast(scenario, ev, base),
        Expectation::Reloaded => crate::verify::reload::judge(scenario, ev, base),
    };
    j.ok = match expect {
        Expectation::Recover => matches!(j.verdict, "SEAMLESS" | "RECOVERED"),
        Expectation::NoRetry if ev.seamless => j.verdict == "NOT-RETRIED" && j.failed_calls <= 1,
        e => j.verdict == e.verdict(),
    };
    // The rules every run keeps, whatever the scenario was written for.
    if j.ok {
        if let Some(v) = crate::verify::explore::invariants::check_common(ev) {
            j.verdict = v.verdict;
            j.ok = false;
            j.note = v.note;
        }
    }
    if !j.ok && expect == Expectation::NoRetry && j.verdict == "NOT-RETRIED" {
        j.note.push_str(&format!(
            "; {} call(s) besides the cut one failed after the restart",
            j.failed_calls.saturating_sub(1)
        ));
    }
    if j.ok && expect == Expectation::Recover && j.verdict == "RECOVERED" {
        j.note.push_str(&format!(
            "; {} call(s) failed before it recovered",
            j.failed_calls
        ));
    }
    j
}

/// A call id the server ran twice, or that was sent again after an answer other
/// than session loss (so the tool may have run), or sent more than twice.
pub(crate) fn repeated_call(ev: &Evidence<'_>) -> Option<String> {
    let mut ids: Vec<(&String, &CallCount)> = ev.counts.iter().collect();
    ids.sort_by(|a, b| a.0.cmp(b.0));
    for (id, count) in ids {
        if count.ran > 1 {
            return Some(format!(
                "call {id} ran {} times: a tool call was sent again after it ran",
                count.ran
            ));
        }
        if count.sent > 2 {
            return Some(format!(
                "call {id} was sent {} times: more than the one repeat a lost session allows",
                count.sent
            ));
        }
        if count.sent == 2 {
            let lost_answers = ev
                .witness
                .iter()
                .filter(|e| e.call_id.as_deref() == Some(id.as_str()))
                .filter(|e| e.executed == Some(false) && matches!(e.status, 400 | 401 | 404))
                .count();
            if lost_answers == 0 {
                return Some(format!(
                    "call {id} was sent again although its first send was not answered as a lost session: the tool may have run twice"
                ));
            }
        }
    }
    None
}

/// A call the caller saw succeed that the server never ran.
pub(crate) fn success_never_run(ev: &Evidence<'_>) -> Option<String> {
    ev.calls
        .iter()
        .filter(|c| c.ok)
        .find(|c| ev.counts.get(&c.call_id).is_none_or(|n| n.ran == 0))
        .map(|c| {
            format!(
                "the caller got a success for call {} that the server never ran",
                c.call_id
            )
        })
}

fn initialize_fresh(e: &WitnessEntry) -> bool {
    e.rpc_method.as_deref() == Some("initialize") && e.status == 200 && e.session_sent.is_none()
}

fn judge_recovery(ev: &Evidence<'_>, base: Judgement, relist_tools: bool) -> Judgement {
    let witness = ev.witness;
    let is_dead = |e: &WitnessEntry| {
        e.session_sent
            .as_ref()
            .is_some_and(|s| ev.dropped.contains(s))
    };
    // The server dropping sessions (invalidate, prune, restart, concurrent loss) starts the clock.
    let dropped_at = witness
        .iter()
        .position(|e| {
            e.http_method == "CONTROL"
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.contains("dropped") || n.contains("pruned"))
        })
        .unwrap_or(witness.len());
    // The first request after that which carried a dead id: the client met the loss there.
    let first_failed = witness[dropped_at..]
        .iter()
        .position(|e| is_dead(e) && e.status >= 400 && e.http_method == "POST")
        .map(|i| i + dropped_at);
    let Some(first_failed) = first_failed else {
        return Judgement {
            verdict: "STUCK",
            note: "the session was never invalidated under the client (no request carried a dropped id)".into(),
            ..base
        };
    };
    let trigger = witness[first_failed]
        .call_id
        .as_deref()
        .and_then(|id| ev.calls.iter().find(|c| c.call_id == id));
    let base = Judgement {
        trigger_ms: trigger.map(|c| c.ms),
        trigger_error: trigger.and_then(|c| c.error.clone()),
        ..base
    };
    let t_fail = witness[first_failed].t_ms;
    let dead_after_fail = witness[first_failed..]
        .iter()
        .filter(|e| is_dead(e))
        .count();
    let rejected_reinit = witness[first_failed..]
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.session_sent.is_some())
        .count();
    let stuck = |why: String| Judgement {
        verdict: "STUCK",
        note: why,
        ..base.clone()
    };
    let Some(new_init) = witness[first_failed..]
        .iter()
        .position(initialize_fresh)
        .map(|i| i + first_failed)
    else {
        return stuck(format!(
            "no new initialize after the session was lost; {dead_after_fail} request(s) kept the dead session id"
        ));
    };
    let fresh = witness[new_init].session_issued.clone().unwrap_or_default();
    let on_fresh = |e: &WitnessEntry| e.session_sent.as_deref() == Some(fresh.as_str());
    let Some(relisted) = witness[new_init..]
        .iter()
        .position(|e| {
            !relist_tools
                || (on_fresh(e) && e.rpc_method.as_deref() == Some("tools/list") && e.status == 200)
        })
        .map(|i| i + new_init)
    else {
        return stuck("a new session started but its tools were never listed again".into());
    };
    let worked = |e: &&WitnessEntry| {
        on_fresh(e) && e.rpc_method.as_deref() == Some("tools/call") && e.call_ok == Some(true)
    };
    // The log is in answer order: a call answered before the (held back) tool
    // list shows before it; the rule below names it.
    let Some(called) = witness[relisted..]
        .iter()
        .find(worked)
        .or_else(|| witness[new_init..relisted].iter().find(worked))
    else {
        return stuck(format!(
            "a new session started{}, but no tool call succeeded on it",
            if relist_tools {
                " and listed tools"
            } else {
                ""
            }
        ));
    };
    let later_inits = witness[new_init + 1..]
        .iter()
        .filter(|e| initialize_fresh(e))
        .count();
    // Requests sent with the dead id after the new session was established (a call
    // that was in flight before the loss may still be answered later: that is fine).
    let established = witness[new_init].answered_ms;
    let dead_later = witness
        .iter()
        .filter(|e| is_dead(e) && e.t_ms > established)
        .count();
    if dead_later > 0 {
        return stuck(format!(
            "{dead_later} request(s) still carried the dead session id after the new session was established"
        ));
    }
    let recovery_ms = called.answered_ms.saturating_sub(t_fail);
    let deadline = ev.policy.deadline();
    if recovery_ms > deadline.as_millis() as u64 {
        return stuck(format!(
            "recovered only after {recovery_ms} ms, past the {} ms a healthy client needs under this policy",
            deadline.as_millis()
        ));
    }
    let relisted_words = if relist_tools {
        ", tools re-listed"
    } else {
        ""
    };
    let mut note = if later_inits == 0 {
        format!("one fresh initialize without the dead id{relisted_words}, calls succeeded")
    } else {
        format!(
            "fresh initialize without the dead id{relisted_words}, calls succeeded; {later_inits} more initialize(s) after it"
        )
    };
    if rejected_reinit > 0 {
        note.push_str(&format!(
            "; {rejected_reinit} initialize(s) carried a session id"
        ));
    }
    // Rules of the current revision that a recovery can break and still recover.
    let mut lapses = Vec::new();
    // No client that keeps a tool list may send a call on a new session
    // before its tools are re-listed (a bridge's host lists them itself).
    let listed_at = witness[relisted].answered_ms;
    if let Some(early) = witness[new_init..].iter().find(|e| {
        relist_tools
            && on_fresh(e)
            && e.rpc_method.as_deref() == Some("tools/call")
            && e.t_ms < listed_at
    }) {
        lapses.push(format!(
            "call {} was sent on the new session at {} ms, before its tools were re-listed ({} ms)",
            early.call_id.as_deref().unwrap_or("(no id)"),
            early.t_ms,
            listed_at
        ));
    }
    if ev.seamless {
        let reconnect_ms = witness[new_init]
            .t_ms
            .saturating_sub(witness[first_failed].answered_ms);
        let limit = FIRST_RECONNECT_LIMIT.as_millis() as u64;
        if ev.policy.initial_delay() >= 2 * FIRST_RECONNECT_LIMIT && reconnect_ms > limit {
            lapses.push(format!(
                "the first reconnect started {reconnect_ms} ms after the session-lost answer, not at once (limit {limit} ms; the policy's first backoff is {} ms)",
                ev.policy.initial_delay().as_millis()
            ));
        }
    }
    if !lapses.is_empty() {
        note = format!("{}; {note}", lapses.join("; "));
    }
    Judgement {
        verdict: if base.failed_calls == 0 && later_inits == 0 && lapses.is_empty() {
            "SEAMLESS"
        } else {
            "RECOVERED"
        },
        recovery_ms: Some(recovery_ms),
        note,
        ..base
    }
}

fn judge_hold(scenario: &Scenario, ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    if base.initialize_count > 1 {
        return verdict(
            "RECYCLED",
            format!(
                "{} initialize handshakes: a healthy session was thrown away",
                base.initialize_count
            ),
        );
    }
    let witness = ev.witness;
    let Some(session) = witness
        .iter()
        .find(|e| initialize_fresh(e))
        .and_then(|e| e.session_issued.clone())
    else {
        return verdict("BROKEN", "the client never started a session".into());
    };
    if scenario.plan == Plan::Settle {
        let listed_at = witness.iter().position(|e| {
            e.rpc_method.as_deref() == Some("tools/list")
                && e.session_sent.as_deref() == Some(session.as_str())
        });
        let get_404_after = listed_at.is_some_and(|at| {
            witness[at..]
                .iter()
                .any(|e| e.http_method == "GET" && e.status == 404)
        });
        if !get_404_after {
            return verdict(
                "BROKEN",
                "the client never met the GET 404 after it connected: nothing was tested".into(),
            );
        }
    }
    if scenario.plan == Plan::Timeout {
        let Some(slow) = ev.calls.iter().find(|c| c.name == "slow") else {
            return verdict("BROKEN", "the slow call was never made".into());
        };
        if slow.ok {
            return verdict(
                "BROKEN",
                format!(
                    "the slow call {} did not time out: nothing was tested",
                    slow.call_id
                ),
            );
        }
    }
    if scenario.plan == Plan::Ordinary {
        for (kind, words) in ORDINARY_ERROR_WORDS {
            let reached = ev
                .calls
                .iter()
                .filter(|c| c.name == format!("fail:{kind}"))
                .any(|c| !c.ok && c.error.as_deref().is_some_and(|e| e.contains(words)));
            if !reached {
                return verdict(
                    "BROKEN",
                    format!("the {kind} error did not reach the caller with the server's words ({words:?})"),
                );
            }
        }
    }
    // The last call the harness made must have run, and succeeded, on the kept session.
    let Some(last) = ev.calls.last() else {
        return verdict("BROKEN", "no call was made".into());
    };
    let worked = witness.iter().any(|e| {
        e.call_id.as_deref() == Some(last.call_id.as_str())
            && e.session_sent.as_deref() == Some(session.as_str())
            && e.call_ok == Some(true)
    });
    if !worked {
        return verdict(
            "BROKEN",
            "tools did not work again on the kept session".into(),
        );
    }
    let calls_on_session = witness
        .iter()
        .filter(|e| {
            e.rpc_method.as_deref() == Some("tools/call")
                && e.session_sent.as_deref() == Some(session.as_str())
        })
        .count();
    let note = match scenario.plan {
        Plan::Ordinary => format!(
            "each error reached the caller once; {calls_on_session} calls on one session, no new initialize"
        ),
        Plan::Settle => "the GET 404 changed nothing: same session, no new initialize".into(),
        Plan::Timeout => "the timed-out call failed once and was not sent again; same session, no new initialize".into(),
        _ => "kept working on the same session, no new initialize".into(),
    };
    verdict("HELD", note)
}

fn judge_bounded(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    if ev.per_call_recovery {
        return judge_bounded_per_call(ev, base);
    }
    let bound = 1 + ev.policy.max_attempts() as usize;
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    if base.initialize_count > bound {
        return verdict(
            "UNBOUNDED",
            format!(
                "{} initialize handshakes, more than the {bound} the policy allows (1 + {} attempts)",
                base.initialize_count,
                ev.policy.max_attempts()
            ),
        );
    }
    // The first reconnect of an outage may start at once; every later one must
    // wait the policy's backoff after the loss that caused it.
    let inits: Vec<&WitnessEntry> = ev.witness.iter().filter(|e| initialize_fresh(e)).collect();
    for (attempt, init) in inits.iter().enumerate().skip(2) {
        let backoff = ev.policy.backoff(attempt as u32);
        let loss = ev.witness.iter().rev().find(|e| {
            e.answered_ms <= init.t_ms
                && e.executed == Some(false)
                && matches!(e.status, 400 | 401 | 404)
        });
        if let Some(loss) = loss {
            let waited = init.t_ms.saturating_sub(loss.answered_ms);
            if waited + BACKOFF_TOLERANCE_MS < backoff.as_millis() as u64 {
                return verdict(
                    "UNBOUNDED",
                    format!(
                        "reconnect attempt {attempt} started {waited} ms after the loss; the policy's backoff is {} ms",
                        backoff.as_millis()
                    ),
                );
            }
        }
    }
    let slowest = match calls_ended_in_time(ev) {
        Ok(slowest) => slowest,
        Err(why) => return verdict("UNBOUNDED", why),
    };
    verdict(
        "BOUNDED",
        format!(
            "{}, every call ended within its timeout (slowest {slowest} ms), none sent more than twice",
            handshakes_said(base.initialize_count, bound)
        ),
    )
}

/// Whether every call of a bounded run ended within its timeout, and all
/// [`FORGETFUL_CALLS`] of them did: the slowest call's ms, or why not.
fn calls_ended_in_time(ev: &Evidence<'_>) -> Result<u64, String> {
    let limit = ev.policy.call_timeout() + TIMEOUT_SLACK;
    if let Some(c) = ev.calls.iter().find(|c| c.ms > limit.as_millis() as u64) {
        return Err(format!(
            "call {} took {} ms, past its {} ms timeout",
            c.call_id,
            c.ms,
            ev.policy.call_timeout().as_millis()
        ));
    }
    if ev.calls.len() < FORGETFUL_CALLS {
        return Err(format!(
            "only {} of {FORGETFUL_CALLS} calls ended",
            ev.calls.len()
        ));
    }
    Ok(ev.calls.iter().map(|c| c.ms).max().unwrap_or(0))
}

/// [`judge_bounded`] for a client that recovers once per call that meets a
/// lost session (no policy to wait): at most one new session per call, and
/// every call ends within its timeout (no call sent more than twice is
/// checked before, for every client).
fn judge_bounded_per_call(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let bound = 1 + ev.calls.len();
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    if base.initialize_count > bound {
        return verdict(
            "UNBOUNDED",
            format!(
                "{} initialize handshakes for {} calls, more than one new session per call (bound {bound})",
                base.initialize_count,
                ev.calls.len()
            ),
        );
    }
    let slowest = match calls_ended_in_time(ev) {
        Ok(slowest) => slowest,
        Err(why) => return verdict("UNBOUNDED", why),
    };
    verdict(
        "BOUNDED",
        format!(
            "{} for {} (bound {bound}: at most one new session per call), every call ended within its timeout (slowest {slowest} ms), none sent more than twice",
            counted(base.initialize_count, "handshake"),
            counted(ev.calls.len(), "call")
        ),
    )
}

/// `n` and `noun`, plural unless `n` is 1: "1 handshake", "2 handshakes".
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// How many handshakes a bounded run made, and what that says of its
/// reconnects: only from the second reconnect on is there a backoff to wait.
fn handshakes_said(count: usize, bound: usize) -> String {
    match count {
        0 => format!("no handshake (bound {bound})"),
        1 => format!("1 handshake (bound {bound}): no reconnect"),
        2 => format!("2 handshakes (bound {bound}): 1 reconnect"),
        n => format!(
            "{n} handshakes (bound {bound}): {} reconnects, each after the first with the policy's backoff",
            n - 1
        ),
    }
}

/// Whether a call worked on a session started after witness entry `after`.
fn worked_on_new_session(ev: &Evidence<'_>, after: usize) -> bool {
    let fresh: Vec<&str> = ev.witness[after..]
        .iter()
        .filter(|e| initialize_fresh(e))
        .filter_map(|e| e.session_issued.as_deref())
        .collect();
    ev.witness[after..].iter().any(|e| {
        e.rpc_method.as_deref() == Some("tools/call")
            && e.call_ok == Some(true)
            && e.session_sent
                .as_deref()
                .is_some_and(|s| fresh.contains(&s))
    })
}

fn judge_timely(scenario: &Scenario, ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let (bound, what, most_sends) = match scenario.plan {
        Plan::AbortWaiting => (ABORT_AFTER, "abort signal", 1),
        Plan::DeadlineWaiting => (DEADLINE_CALL_TIMEOUT, "toolCallTimeoutMs", 1),
        _ => (DEADLINE_RESEND_CALL_TIMEOUT, "toolCallTimeoutMs", 2),
    };
    let Some(probe) = ev.calls.iter().find(|c| c.name == "probe") else {
        return verdict("BROKEN", "the probe call was never made".into());
    };
    let Some(lost_at) = ev.witness.iter().position(|e| {
        e.call_id.as_deref() == Some(probe.call_id.as_str())
            && e.executed == Some(false)
            && matches!(e.status, 400 | 401 | 404)
    }) else {
        return verdict(
            "BROKEN",
            format!(
                "call {} never met the lost session: nothing was tested",
                probe.call_id
            ),
        );
    };
    let base = Judgement {
        trigger_ms: Some(probe.ms),
        trigger_error: probe.error.clone(),
        ..base.clone()
    };
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let bound_ms = bound.as_millis() as u64;
    if probe.ms > (bound + TIMELY_SLACK).as_millis() as u64 {
        return verdict(
            "LATE",
            format!(
                "call {} ended after {} ms, past its {what} of {bound_ms} ms",
                probe.call_id, probe.ms
            ),
        );
    }
    if probe.ok {
        return verdict(
            "BROKEN",
            format!(
                "call {} succeeded within its {what}: the server never held it back, nothing was tested",
                probe.call_id
            ),
        );
    }
    let sent = ev.counts.get(&probe.call_id).map_or(0, |c| c.sent);
    if scenario.plan == Plan::DeadlineResend && ev.seamless && sent < 2 {
        return verdict(
            "BROKEN",
            format!(
                "call {} was not sent again on the new session: the repeat's deadline was not tested",
                probe.call_id
            ),
        );
    }
    if sent > most_sends {
        return verdict(
            "REPEATED",
            format!(
                "call {} was sent {sent} times; once its {what} has passed it must not be sent again",
                probe.call_id
            ),
        );
    }
    if !worked_on_new_session(ev, lost_at) {
        return verdict(
            "STUCK",
            "no call worked on a new session after the session was lost".into(),
        );
    }
    verdict(
        "TIMELY",
        format!(
            "call {} ended after {} ms, within its {what} ({bound_ms} ms), sent {sent} time(s); calls worked again on a new session",
            probe.call_id, probe.ms
        ),
    )
}

fn judge_fail_fast(scenario: &Scenario, ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let (Some(waiting), Some(after)) = (
        ev.calls.iter().find(|c| c.name == "waiting"),
        ev.calls.iter().find(|c| c.name == "after"),
    ) else {
        return verdict(
            "BROKEN",
            "the waiting call or the call after it was never made".into(),
        );
    };
    let refused = ev
        .witness
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 503)
        .count();
    if refused == 0 {
        return verdict(
            "BROKEN",
            "the client never tried a new session: nothing was tested".into(),
        );
    }
    if let Some(c) = [waiting, after].into_iter().find(|c| c.ok) {
        return verdict(
            "BROKEN",
            format!(
                "call {} succeeded although the server refused every new session",
                c.name
            ),
        );
    }
    for (c, limit) in [(waiting, GIVE_UP_WAIT_LIMIT), (after, FAIL_FAST_LIMIT)] {
        if c.ms > limit.as_millis() as u64 {
            return verdict(
                "LATE",
                format!(
                    "call {} failed only after {} ms: once reconnecting has stopped it must fail at once (limit {} ms, its timeout {} ms)",
                    c.name,
                    c.ms,
                    limit.as_millis(),
                    GIVE_UP_CALL_TIMEOUT.as_millis()
                ),
            );
        }
    }
    let words = scenario.behaviour.lost_session.words();
    // The call that met the loss gets the server's answer; the call made after
    // reconnecting stopped also says why.
    if ev.seamless {
        for (c, why) in [(waiting, None), (after, Some("gave up"))] {
            let error = c.error.as_deref().unwrap_or("");
            let said = error.contains(words) && why.is_none_or(|w| error.contains(w));
            if !said {
                return verdict(
                    "MUTE",
                    match why {
                        None => format!(
                            "the error of call {} does not carry the server's words ({words:?}): {error:?}",
                            c.name
                        ),
                        Some(w) => format!(
                            "the error of call {} does not carry the server's words ({words:?}) and why reconnecting stopped ({w:?}): {error:?}",
                            c.name
                        ),
                    },
                );
            }
        }
    }
    verdict(
        "FAILED-FAST",
        format!(
            "once reconnecting stopped ({refused} refused initialize(s)), the waiting call failed after {} ms and the next after {} ms{}",
            waiting.ms,
            after.ms,
            if ev.seamless { ", with the server's words" } else { "" }
        ),
    )
}

fn judge_no_retry(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let Some(cut) = ev.calls.iter().find(|c| c.name == "slow") else {
        return verdict("BROKEN", "the slow call was never made".into());
    };
    let count = ev.counts.get(&cut.call_id).copied().unwrap_or_default();
    if count.sent != 1 {
        return verdict(
            if count.sent > 1 { "REPEATED" } else { "BROKEN" },
            format!(
                "the call cut while its tool ran was sent {} time(s); it must be sent once and never again",
                count.sent
            ),
        );
    }
    if cut.ok {
        return verdict(
            "BROKEN",
            "the caller got a success for a call the server never answered".into(),
        );
    }
    let base = Judgement {
        trigger_ms: Some(cut.ms),
        trigger_error: cut.error.clone(),
        ..base.clone()
    };
    // After the server is back, the client must work again on a fresh session.
    let cut_at = ev
        .witness
        .iter()
        .position(|e| e.note.as_deref().is_some_and(|n| n.starts_with("restart:")))
        .unwrap_or(ev.witness.len());
    let recovered = ev.witness[cut_at..].iter().any(|e| {
        e.rpc_method.as_deref() == Some("tools/call")
            && e.call_ok == Some(true)
            && !e
                .session_sent
                .as_ref()
                .is_some_and(|s| ev.dropped.contains(s))
    });
    if !recovered {
        return Judgement {
            verdict: "STUCK",
            note: "the cut call was not sent again, but no call worked after the server came back"
                .into(),
            ..base
        };
    }
    Judgement {
        verdict: "NOT-RETRIED",
        note: format!(
            "the cut call failed once and was not sent again (its tool ran {} time(s)); calls worked again after the restart",
            count.ran
        ),
        ..base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_handshake_is_singular() {
        assert_eq!(counted(1, "handshake"), "1 handshake");
        assert_eq!(counted(0, "call"), "0 calls");
        assert_eq!(counted(3, "call"), "3 calls");
    }

    // ---- verdicts from hand-made witness logs ----
    //
    // The integration tests run the real client against the fake server; these
    // give each judge a log that reaches one of its branches exactly, edges
    // included, so a judge that decides from the wrong thing fails here.

    fn entry(
        t_ms: u64,
        http: &str,
        rpc: Option<&str>,
        sent: Option<&str>,
        status: u16,
    ) -> WitnessEntry {
        WitnessEntry {
            seq: t_ms,
            t_ms,
            answered_ms: t_ms + 1,
            http_method: http.into(),
            rpc_method: rpc.map(str::to_string),
            session_sent: sent.map(str::to_string),
            status,
            session_issued: None,
            call_id: None,
            executed: None,
            call_ok: None,
            note: None,
        }
    }

    /// A fresh initialize at `t_ms` that issues `issued`.
    fn init(t_ms: u64, issued: &str) -> WitnessEntry {
        WitnessEntry {
            session_issued: Some(issued.into()),
            ..entry(t_ms, "POST", Some("initialize"), None, 200)
        }
    }

    fn list(t_ms: u64, session: &str) -> WitnessEntry {
        entry(t_ms, "POST", Some("tools/list"), Some(session), 200)
    }

    /// A tools/call of `id` on `session`: run and succeeded (200), or rejected
    /// before the tool ran (any other status).
    fn call(t_ms: u64, session: &str, id: &str, status: u16) -> WitnessEntry {
        WitnessEntry {
            call_id: Some(id.into()),
            executed: Some(status == 200),
            call_ok: Some(status == 200),
            ..entry(t_ms, "POST", Some("tools/call"), Some(session), status)
        }
    }

    fn control(t_ms: u64, note: &str) -> WitnessEntry {
        WitnessEntry {
            note: Some(note.into()),
            ..entry(t_ms, "CONTROL", None, None, 200)
        }
    }

    fn seen(id: &str, name: &str, error: Option<&str>, ms: u64) -> HarnessCall {
        HarnessCall {
            call_id: id.into(),
            name: name.into(),
            ok: error.is_none(),
            error: error.map(str::to_string),
            ms,
        }
    }

    fn counts(of: &[(&str, u32, u32)]) -> HashMap<String, CallCount> {
        of.iter()
            .map(|&(id, sent, ran)| (id.to_string(), CallCount { sent, ran }))
            .collect()
    }

    struct Run {
        witness: Vec<WitnessEntry>,
        dropped: Vec<String>,
        counts: HashMap<String, CallCount>,
        calls: Vec<HarnessCall>,
        seamless: bool,
        per_call_recovery: bool,
    }

    impl Run {
        fn judge(&self, name: ScenarioName, expect: Expectation) -> Judgement {
            let ev = Evidence {
                witness: &self.witness,
                dropped: &self.dropped,
                counts: &self.counts,
                calls: &self.calls,
                policy: Policy::Short,
                seamless: self.seamless,
                per_call_recovery: self.per_call_recovery,
            };
            judge(&find(name), expect, &ev)
        }

        fn judge_with(&self, name: ScenarioName, expect: Expectation, policy: Policy) -> Judgement {
            let ev = Evidence {
                witness: &self.witness,
                dropped: &self.dropped,
                counts: &self.counts,
                calls: &self.calls,
                policy,
                seamless: self.seamless,
                per_call_recovery: self.per_call_recovery,
            };
            judge(&find(name), expect, &ev)
        }
    }

    /// A client that meets the loss of s1 with call c2 at 110 ms, starts s2 at
    /// once, lists its tools and sends c2 again, answered at `answered_ms`.
    fn seamless_recovery(status: u16, answered_ms: u64) -> Run {
        let mut again = call(125, "s2", "c2", 200);
        again.answered_ms = answered_ms;
        Run {
            witness: vec![
                init(0, "s1"),
                list(5, "s1"),
                call(10, "s1", "c1", 200),
                entry(50, "GET", None, Some("s1"), 404),
                control(100, "invalidate: dropped 1 session(s)"),
                entry(105, "GET", None, Some("s1"), 404),
                call(110, "s1", "c2", status),
                init(112, "s2"),
                list(121, "s2"),
                again,
            ],
            dropped: vec!["s1".into()],
            counts: counts(&[("c1", 1, 1), ("c2", 2, 1)]),
            calls: vec![seen("c1", "echo", None, 2), seen("c2", "echo", None, 20)],
            seamless: true,
            per_call_recovery: false,
        }
    }

    #[test]
    fn a_fresh_session_with_no_failed_call_is_seamless_and_timed_from_the_failed_post() {
        let j = seamless_recovery(404, 130).judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!(
            (
                j.verdict,
                j.ok,
                j.recovery_ms,
                j.trigger_ms,
                j.failed_calls,
                j.initialize_count
            ),
            ("SEAMLESS", true, Some(20), Some(20), 0, 2)
        );
        assert_eq!(
            j.note,
            "one fresh initialize without the dead id, tools re-listed, calls succeeded"
        );
        assert_eq!(j.trigger_error, None);
        // A 400 answer is a failed request too.
        let j = seamless_recovery(400, 130).judge(ScenarioName::Expired400, Expectation::Seamless);
        assert_eq!((j.verdict, j.recovery_ms), ("SEAMLESS", Some(20)));
        // Recovered answers a plain `recover` expectation as well.
        let j = seamless_recovery(404, 130).judge(ScenarioName::Expired404, Expectation::Recover);
        assert_eq!((j.verdict, j.ok), ("SEAMLESS", true));
    }

    #[test]
    fn recovery_at_the_policys_deadline_counts_and_a_millisecond_later_is_stuck() {
        let deadline = Policy::Short.deadline().as_millis() as u64;
        let j = seamless_recovery(404, 110 + deadline)
            .judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!((j.verdict, j.recovery_ms), ("SEAMLESS", Some(deadline)));
        let j = seamless_recovery(404, 111 + deadline)
            .judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("STUCK", false));
        assert_eq!(
            j.note,
            format!("recovered only after {} ms, past the {deadline} ms a healthy client needs under this policy", deadline + 1)
        );
    }

    #[test]
    fn a_failed_call_makes_it_recovered_which_passes_recover_but_not_seamless() {
        let mut run = seamless_recovery(404, 130);
        run.calls[1] = seen("c2", "echo", Some("Session not found"), 3);
        run.calls.push(seen("c3", "echo", None, 4));
        run.counts = counts(&[("c1", 1, 1), ("c2", 1, 0), ("c3", 1, 1)]);
        run.witness[9].call_id = Some("c3".into());
        let j = run.judge(ScenarioName::Expired404, Expectation::Recover);
        assert_eq!((j.verdict, j.ok, j.failed_calls), ("RECOVERED", true, 1));
        assert_eq!(
            (j.trigger_ms, j.trigger_error.as_deref()),
            (Some(3), Some("Session not found"))
        );
        assert_eq!(
            j.note,
            "one fresh initialize without the dead id, tools re-listed, calls succeeded; 1 call(s) failed before it recovered"
        );
        let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
        assert_eq!(
            j.note,
            "one fresh initialize without the dead id, tools re-listed, calls succeeded"
        );
    }

    #[test]
    fn the_clock_starts_at_the_drop_and_a_failed_handshake_is_not_the_new_session() {
        let mut run = seamless_recovery(404, 130);
        // Before the drop: another control event, and a request that failed.
        run.witness.insert(3, control(30, "armed: next calls held"));
        run.witness
            .insert(4, entry(40, "POST", Some("ping"), Some("s1"), 404));
        // After the loss: a handshake the server failed, then the one that worked.
        run.witness
            .insert(9, entry(111, "POST", Some("initialize"), None, 503));
        let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!(
            (j.verdict, j.recovery_ms),
            ("SEAMLESS", Some(20)),
            "{}",
            j.note
        );
        assert_eq!(
            j.note,
            "one fresh initialize without the dead id, tools re-listed, calls succeeded"
        );
    }

    #[test]
    fn more_handshakes_or_an_initialize_with_the_dead_id_are_named() {
        let mut run = seamless_recovery(404, 130);
        run.witness
            .insert(8, entry(111, "POST", Some("initialize"), Some("s1"), 400));
        run.witness.push(init(140, "s3"));
        let j = run.judge(ScenarioName::StrictReinit, Expectation::Seamless);
        assert_eq!(
            (j.verdict, j.ok, j.initialize_count),
            ("RECOVERED", false, 3)
        );
        assert_eq!(
            j.note,
            "fresh initialize without the dead id, tools re-listed, calls succeeded; 1 more initialize(s) after it; 1 initialize(s) carried a session id"
        );
    }

    #[test]
    fn each_missing_step_of_recovery_is_stuck_with_its_reason() {
        let stuck = |run: &Run| {
            let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
            assert_eq!((j.verdict, j.ok), ("STUCK", false), "{}", j.note);
            j.note
        };
        let mut run = seamless_recovery(404, 130);
        run.witness.remove(4);
        assert_eq!(
            stuck(&run),
            "the session was never invalidated under the client (no request carried a dropped id)"
        );
        let mut run = seamless_recovery(404, 130);
        run.witness[4].note = Some("pruned 1 idle session(s)".into());
        assert_eq!(
            run.judge(ScenarioName::IdleTimeout, Expectation::Seamless)
                .verdict,
            "SEAMLESS"
        );
        let mut run = seamless_recovery(404, 130);
        run.witness.truncate(7);
        run.witness.push(call(150, "s1", "c3", 404));
        assert_eq!(
            stuck(&run),
            "no new initialize after the session was lost; 2 request(s) kept the dead session id"
        );
        let mut run = seamless_recovery(404, 130);
        run.witness.remove(8);
        assert_eq!(
            stuck(&run),
            "a new session started but its tools were never listed again"
        );
        let mut run = seamless_recovery(404, 130);
        run.witness[9].call_ok = Some(false);
        assert_eq!(
            stuck(&run),
            "a new session started and listed tools, but no tool call succeeded on it"
        );
        let mut run = seamless_recovery(404, 130);
        run.witness
            .push(entry(150, "POST", Some("tools/call"), Some("s1"), 404));
        assert_eq!(
            stuck(&run),
            "1 request(s) still carried the dead session id after the new session was established"
        );
        // A request sent the moment the new session was established is not after it.
        let mut run = seamless_recovery(404, 130);
        run.witness
            .push(entry(113, "POST", Some("tools/call"), Some("s1"), 404));
        run.witness.sort_by_key(|e| e.t_ms);
        assert_eq!(
            run.judge(ScenarioName::Expired404, Expectation::Seamless)
                .verdict,
            "SEAMLESS"
        );
        // An answer to a request sent before the new session was established is fine.
        let mut run = seamless_recovery(404, 130);
        let mut late = call(111, "s1", "c1", 404);
        late.answered_ms = 200;
        run.witness.push(late);
        run.counts = counts(&[("c1", 2, 1), ("c2", 2, 1)]);
        assert_eq!(
            run.judge(ScenarioName::Expired404, Expectation::Seamless)
                .verdict,
            "SEAMLESS"
        );
    }

    #[test]
    fn a_tool_run_twice_or_sent_again_after_it_may_have_run_is_repeated() {
        let repeated = |of: &[(&str, u32, u32)]| {
            let mut run = seamless_recovery(404, 130);
            run.counts = counts(of);
            let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
            assert_eq!((j.verdict, j.ok), ("REPEATED", false), "{}", j.note);
            j.note
        };
        assert_eq!(
            repeated(&[("c1", 1, 1), ("c2", 2, 2)]),
            "call c2 ran 2 times: a tool call was sent again after it ran"
        );
        assert_eq!(
            repeated(&[("c1", 1, 1), ("c2", 3, 1)]),
            "call c2 was sent 3 times: more than the one repeat a lost session allows"
        );
        // Sent twice after an answer other than a lost session (the tool may have run).
        let mut run = seamless_recovery(500, 130);
        run.witness[6].executed = Some(true);
        let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!(j.verdict, "REPEATED");
        assert_eq!(
            j.note,
            "call c2 was sent again although its first send was not answered as a lost session: the tool may have run twice"
        );
        // So is a repeat after a 500 that came before the tool ran.
        let mut run = seamless_recovery(500, 130);
        run.witness[6].executed = Some(false);
        assert_eq!(
            run.judge(ScenarioName::Expired404, Expectation::Seamless)
                .verdict,
            "REPEATED"
        );
        // Each lost-session status allows the one repeat.
        for status in [400, 401, 404] {
            let j = seamless_recovery(status, 130)
                .judge(ScenarioName::Expired401, Expectation::Seamless);
            assert_eq!(j.verdict, "SEAMLESS", "{status}: {}", j.note);
        }
    }

    #[test]
    fn a_success_the_server_never_ran_is_broken() {
        let mut run = seamless_recovery(404, 130);
        run.counts = counts(&[("c1", 1, 1), ("c2", 2, 0)]);
        let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("BROKEN", false));
        assert_eq!(
            j.note,
            "the caller got a success for call c2 that the server never ran"
        );
        run.counts = counts(&[("c1", 1, 1)]);
        assert_eq!(
            run.judge(ScenarioName::Expired404, Expectation::Seamless)
                .verdict,
            "BROKEN"
        );
    }

    // ---- hold ----

    /// One session s1 kept throughout; the calls named, each on s1.
    fn held(calls: &[(&str, &str, Option<&str>)]) -> Run {
        let mut witness = vec![init(0, "s1"), list(5, "s1")];
        for (i, (id, _, error)) in calls.iter().enumerate() {
            witness.push(call(
                10 + i as u64,
                "s1",
                id,
                if error.is_none() { 200 } else { 500 },
            ));
        }
        Run {
            witness,
            dropped: vec![],
            counts: counts(
                &calls
                    .iter()
                    .map(|(id, _, e)| (*id, 1, u32::from(e.is_none())))
                    .collect::<Vec<_>>(),
            ),
            calls: calls
                .iter()
                .map(|(id, name, e)| seen(id, name, *e, 2))
                .collect(),
            seamless: true,
            per_call_recovery: false,
        }
    }

    #[test]
    fn a_kept_session_is_held_and_a_second_handshake_is_recycled() {
        let run = held(&[("c1", "echo", None), ("c2", "echo", None)]);
        let j = run.judge(ScenarioName::RestartPersisted, Expectation::Hold);
        assert_eq!((j.verdict, j.ok), ("HELD", true));
        assert_eq!(
            j.note,
            "kept working on the same session, no new initialize"
        );

        let mut run = held(&[("c1", "echo", None), ("c2", "echo", None)]);
        run.witness.push(init(20, "s2"));
        let j = run.judge(ScenarioName::RestartPersisted, Expectation::Hold);
        assert_eq!((j.verdict, j.ok), ("RECYCLED", false));
        assert_eq!(
            j.note,
            "2 initialize handshakes: a healthy session was thrown away"
        );
    }

    #[test]
    fn hold_is_broken_without_a_session_a_call_or_a_working_last_call() {
        let broken = |run: &Run| {
            let j = run.judge(ScenarioName::RestartPersisted, Expectation::Hold);
            assert_eq!((j.verdict, j.ok), ("BROKEN", false), "{}", j.note);
            j.note
        };
        let mut run = held(&[("c1", "echo", None)]);
        run.witness.remove(0);
        assert_eq!(broken(&run), "the client never started a session");
        let run = held(&[]);
        assert_eq!(broken(&run), "no call was made");
        let mut run = held(&[("c1", "echo", None), ("c2", "echo", None)]);
        run.witness.pop();
        assert_eq!(broken(&run), "tools did not work again on the kept session");
        let mut run = held(&[("c1", "echo", None), ("c2", "echo", None)]);
        run.witness[3].session_sent = Some("s9".into());
        assert_eq!(broken(&run), "tools did not work again on the kept session");
    }

    #[test]
    fn sse_404_holds_only_when_the_get_404_came_after_the_tool_list() {
        let mut run = held(&[("c1", "echo", None)]);
        run.witness
            .insert(1, entry(2, "GET", None, Some("s1"), 404));
        // After the list: a GET stream that opened, which is no GET 404.
        run.witness.push(entry(20, "GET", None, Some("s1"), 200));
        let j = run.judge(ScenarioName::Sse404, Expectation::Hold);
        assert_eq!((j.verdict, j.ok), ("BROKEN", false));
        assert_eq!(
            j.note,
            "the client never met the GET 404 after it connected: nothing was tested"
        );
        run.witness.push(entry(30, "GET", None, Some("s1"), 404));
        let j = run.judge(ScenarioName::Sse404, Expectation::Hold);
        assert_eq!((j.verdict, j.ok), ("HELD", true));
        assert_eq!(
            j.note,
            "the GET 404 changed nothing: same session, no new initialize"
        );
    }

    #[test]
    fn ordinary_errors_hold_only_when_each_reached_the_caller_with_the_servers_words() {
        let plan: Vec<(String, String, Option<&str>)> = ORDINARY_ERROR_WORDS
            .iter()
            .enumerate()
            .map(|(i, (kind, words))| (format!("e{i}"), format!("fail:{kind}"), Some(*words)))
            .chain([("ok".to_string(), "echo".to_string(), None)])
            .collect();
        let as_refs = |p: &[(String, String, Option<&'static str>)]| {
            held(
                &p.iter()
                    .map(|(id, n, e)| (id.as_str(), n.as_str(), *e))
                    .collect::<Vec<_>>(),
            )
        };
        let j = as_refs(&plan).judge(ScenarioName::OrdinaryErrors, Expectation::Hold);
        assert_eq!((j.verdict, j.ok), ("HELD", true), "{}", j.note);
        assert_eq!(
            j.note,
            "each error reached the caller once; 5 calls on one session, no new initialize"
        );
        for (i, (kind, words)) in ORDINARY_ERROR_WORDS.iter().enumerate() {
            let mut other = plan.clone();
            other[i].2 = Some("Error: something else");
            let j = as_refs(&other).judge(ScenarioName::OrdinaryErrors, Expectation::Hold);
            assert_eq!(j.verdict, "BROKEN", "{kind}");
            assert_eq!(
                j.note,
                format!(
                    "the {kind} error did not reach the caller with the server's words ({words:?})"
                )
            );
        }
    }

    // ---- bounded ----

    /// The forgetful server: every session lost right after its tool list
    /// (a call answered 404 at handshake + 2 ms); the client's handshakes
    /// start at `inits` (ms).
    fn forgetful(inits: &[u64], call_ms: u64) -> Run {
        let mut witness = Vec::new();
        for (i, &t) in inits.iter().enumerate() {
            let s = format!("s{i}");
            witness.push(init(t, &s));
            witness.push(list(t + 1, &s));
            let mut lost = call(t + 2, &s, &format!("c{i}"), 404);
            lost.answered_ms = t + 2;
            witness.push(lost);
        }
        Run {
            witness,
            dropped: vec![],
            counts: HashMap::new(),
            calls: (0..FORGETFUL_CALLS)
                .map(|i| seen(&format!("k{i}"), "echo", Some("Session not found"), call_ms))
                .collect(),
            seamless: true,
            per_call_recovery: false,
        }
    }

    #[test]
    fn forgetful_is_bounded_when_later_reconnects_wait_their_backoff() {
        // Attempt 2 (third handshake) must wait backoff(2) = 200 ms, less 10 ms tolerance.
        let limit = (Policy::Short.call_timeout() + TIMEOUT_SLACK).as_millis() as u64;
        let run = forgetful(&[0, 100, 102 + 190, 1000], limit);
        let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!((j.verdict, j.ok), ("BOUNDED", true), "{}", j.note);
        assert_eq!(
            j.note,
            format!("4 handshakes (bound 6): 3 reconnects, each after the first with the policy's backoff, every call ended within its timeout (slowest {limit} ms), none sent more than twice")
        );
        // One handshake: nothing reconnected, so no backoff is claimed.
        let j = forgetful(&[0], 5).judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!((j.verdict, j.ok), ("BOUNDED", true), "{}", j.note);
        assert_eq!(
            j.note,
            "1 handshake (bound 6): no reconnect, every call ended within its timeout (slowest 5 ms), none sent more than twice"
        );
        let j = forgetful(&[0, 100], 5).judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!(
            j.note,
            "2 handshakes (bound 6): 1 reconnect, every call ended within its timeout (slowest 5 ms), none sent more than twice"
        );
        let run = forgetful(&[0, 100, 102 + 189, 1000], 5);
        let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
        assert_eq!(
            j.note,
            "reconnect attempt 2 started 189 ms after the loss; the policy's backoff is 200 ms"
        );
    }

    #[test]
    fn forgetful_is_unbounded_past_the_handshakes_the_calls_or_the_timeout_allow() {
        let bound = 1 + Policy::Short.max_attempts() as u64;
        let at_bound: Vec<u64> = (0..bound).map(|i| i * 2000).collect();
        let j = forgetful(&at_bound, 5).judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!(j.verdict, "BOUNDED", "{}", j.note);
        let past: Vec<u64> = (0..=bound).map(|i| i * 2000).collect();
        let j = forgetful(&past, 5).judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
        assert_eq!(
            j.note,
            "7 initialize handshakes, more than the 6 the policy allows (1 + 5 attempts)"
        );

        let limit = (Policy::Short.call_timeout() + TIMEOUT_SLACK).as_millis() as u64;
        let j =
            forgetful(&[0, 3000], limit + 1).judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!(j.verdict, "UNBOUNDED");
        assert_eq!(
            j.note,
            format!("call k0 took {} ms, past its 3000 ms timeout", limit + 1)
        );

        let mut run = forgetful(&[0, 3000], 5);
        run.calls.pop();
        let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!(j.verdict, "UNBOUNDED");
        assert_eq!(
            j.note,
            format!(
                "only {} of {FORGETFUL_CALLS} calls ended",
                FORGETFUL_CALLS - 1
            )
        );
    }

    #[test]
    fn forgetful_allows_a_per_call_client_one_new_session_per_call_and_no_more() {
        // Every one of the 8 calls meets a loss and starts a new session at once: 9 in all.
        let at_once: Vec<u64> = (0..=FORGETFUL_CALLS as u64).map(|i| i * 10).collect();
        let mut run = forgetful(&at_once, 5);
        run.per_call_recovery = true;
        let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!((j.verdict, j.ok), ("BOUNDED", true), "{}", j.note);
        assert_eq!(
            j.note,
            "9 handshakes for 8 calls (bound 9: at most one new session per call), every call ended within its timeout (slowest 5 ms), none sent more than twice"
        );
        // The same run from a client with a reconnect policy waits no backoff: unbounded.
        run.per_call_recovery = false;
        let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!(j.verdict, "UNBOUNDED", "{}", j.note);
        // One more new session than calls: unbounded.
        let past: Vec<u64> = (0..=FORGETFUL_CALLS as u64 + 1).map(|i| i * 10).collect();
        let mut run = forgetful(&past, 5);
        run.per_call_recovery = true;
        let j = run.judge(ScenarioName::Forgetful, Expectation::Bounded);
        assert_eq!((j.verdict, j.ok), ("UNBOUNDED", false));
        assert_eq!(
            j.note,
            "10 initialize handshakes for 8 calls, more than one new session per call (bound 9)"
        );
    }

    // ---- not retried ----

    /// The server restarts under the slow call k1 on s1; c2 then works on s2.
    fn cut(sent: u32, failed_after: usize) -> Run {
        let mut calls = vec![seen("k1", "slow", Some("Connection closed"), 700)];
        for i in 0..failed_after {
            calls.push(seen(&format!("f{i}"), "echo", Some("Not connected"), 1));
        }
        calls.push(seen("c2", "echo", None, 3));
        let mut counts = counts(&[("k1", sent, 1), ("c2", 1, 1)]);
        for i in 0..failed_after {
            counts.insert(format!("f{i}"), CallCount::default());
        }
        Run {
            witness: vec![
                init(0, "s1"),
                list(5, "s1"),
                WitnessEntry {
                    call_ok: None,
                    executed: Some(true),
                    ..call(10, "s1", "k1", 200)
                },
                control(500, "restart: sessions lost"),
                init(800, "s2"),
                list(810, "s2"),
                call(820, "s2", "c2", 200),
            ],
            dropped: vec!["s1".into()],
            counts,
            calls,
            seamless: true,
            per_call_recovery: false,
        }
    }

    #[test]
    fn a_cut_call_sent_once_with_calls_working_after_the_restart_is_not_retried() {
        let j = cut(1, 0).judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!((j.verdict, j.ok, j.failed_calls), ("NOT-RETRIED", true, 1));
        assert_eq!(
            (j.trigger_ms, j.trigger_error.as_deref()),
            (Some(700), Some("Connection closed"))
        );
        assert_eq!(j.note, "the cut call failed once and was not sent again (its tool ran 1 time(s)); calls worked again after the restart");
        // The current revision lets no other call fail; an earlier one may.
        let j = cut(1, 1).judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!((j.verdict, j.ok, j.failed_calls), ("NOT-RETRIED", false, 2));
        assert!(
            j.note
                .ends_with("; 1 call(s) besides the cut one failed after the restart"),
            "{}",
            j.note
        );
        let mut run = cut(1, 1);
        run.seamless = false;
        let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!((j.verdict, j.ok), ("NOT-RETRIED", true));
    }

    #[test]
    fn a_cut_call_sent_again_never_made_answered_or_never_followed_by_a_working_call_fails() {
        let j = cut(2, 0).judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!((j.verdict, j.ok), ("REPEATED", false));
        let mut run = cut(2, 0);
        run.witness.insert(
            4,
            WitnessEntry {
                executed: Some(false),
                ..call(790, "s1", "k1", 404)
            },
        );
        run.counts
            .insert("k1".into(), CallCount { sent: 2, ran: 1 });
        let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!(j.verdict, "REPEATED");
        assert_eq!(j.note, "the call cut while its tool ran was sent 2 time(s); it must be sent once and never again");
        let j = cut(0, 0).judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!(j.verdict, "BROKEN");
        assert_eq!(j.note, "the call cut while its tool ran was sent 0 time(s); it must be sent once and never again");

        let mut run = cut(1, 0);
        run.calls.remove(0);
        let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!(
            (j.verdict, j.note.as_str()),
            ("BROKEN", "the slow call was never made")
        );

        let mut run = cut(1, 0);
        run.calls[0] = seen("k1", "slow", None, 700);
        let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!(
            (j.verdict, j.note.as_str()),
            (
                "BROKEN",
                "the caller got a success for a call the server never answered"
            )
        );

        let mut run = cut(1, 0);
        run.witness[6].session_sent = Some("s1".into());
        let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!((j.verdict, j.ok), ("STUCK", false));
        assert_eq!(
            j.note,
            "the cut call was not sent again, but no call worked after the server came back"
        );
        // A call that worked before the restart does not count.
        let mut run = cut(1, 0);
        run.witness.truncate(6);
        run.witness.insert(3, call(20, "s1", "c0", 200));
        let j = run.judge(ScenarioName::CutMidCall, Expectation::NoRetry);
        assert_eq!(j.verdict, "STUCK", "{}", j.note);
    }

    // ---- the rules of the current revision ----

    #[test]
    fn a_call_sent_on_the_new_session_before_its_tools_are_listed_is_only_recovered() {
        let mut run = seamless_recovery(404, 130);
        run.witness[8].answered_ms = 124;
        run.witness[9].t_ms = 123;
        let j = run.judge(ScenarioName::SlowRelist, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
        assert_eq!(j.note, "call c2 was sent on the new session at 123 ms, before its tools were re-listed (124 ms); one fresh initialize without the dead id, tools re-listed, calls succeeded");
        run.witness[9].t_ms = 124;
        let j = run.judge(ScenarioName::SlowRelist, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
        // Earlier revisions pass with it: they recovered.
        run.witness[9].t_ms = 123;
        run.seamless = false;
        let j = run.judge(ScenarioName::SlowRelist, Expectation::Recover);
        assert_eq!((j.verdict, j.ok), ("RECOVERED", true));
        // A call answered before the held-back list shows before it in the log.
        let mut run = seamless_recovery(404, 130);
        let list = run.witness.remove(8);
        run.witness.push(WitnessEntry {
            answered_ms: 500,
            ..list
        });
        let j = run.judge(ScenarioName::SlowRelist, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
        assert!(
            j.note
                .starts_with("call c2 was sent on the new session at 125 ms, before its tools were re-listed (500 ms)"),
            "{}",
            j.note
        );
    }

    #[test]
    fn the_first_reconnect_must_start_at_once_where_the_first_backoff_is_long() {
        // The loss is answered at 111 ms; s2's initialize arrives `after` ms later.
        let late = |after: u64| {
            let mut run = seamless_recovery(404, 130);
            let t = 111 + after;
            run.witness[7] = init(t, "s2");
            run.witness[8] = list(t + 9, "s2");
            run.witness[9] = call(t + 13, "s2", "c2", 200);
            run.judge_with(
                ScenarioName::LongBackoff,
                Expectation::Seamless,
                Policy::Long,
            )
        };
        let j = late(2500);
        assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
        let j = late(2501);
        assert_eq!((j.verdict, j.ok), ("RECOVERED", false));
        assert_eq!(j.note, "the first reconnect started 2501 ms after the session-lost answer, not at once (limit 2500 ms; the policy's first backoff is 5000 ms); one fresh initialize without the dead id, tools re-listed, calls succeeded");
        // A short first backoff says nothing about it.
        let mut run = seamless_recovery(404, 130);
        run.witness[7] = init(111 + 2501, "s2");
        run.witness[8] = list(111 + 2510, "s2");
        run.witness[9] = call(111 + 2514, "s2", "c2", 200);
        let j = run.judge_with(
            ScenarioName::Expired404,
            Expectation::Seamless,
            Policy::Default,
        );
        assert_eq!(j.verdict, "SEAMLESS", "{}", j.note);
    }

    #[test]
    fn a_call_that_never_settled_is_a_hang_named_by_its_call() {
        let mut run = seamless_recovery(404, 130);
        run.calls
            .push(seen("c3", "echo", Some(NEVER_SETTLED), 6000));
        let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_eq!((j.verdict, j.ok), ("HANG", false));
        assert_eq!(
            j.note,
            "call c3 (echo) never settled: its caller was still waiting after 6000 ms"
        );
        // An ordinary error with those words in it is no hang.
        run.calls[2].error = Some(format!("Error: {NEVER_SETTLED}"));
        let j = run.judge(ScenarioName::Expired404, Expectation::Seamless);
        assert_ne!(j.verdict, "HANG");
    }

    #[test]
    fn a_timed_out_call_on_a_healthy_session_holds_only_when_it_timed_out() {
        let run = held(&[
            ("c1", "echo", None),
            ("c2", "slow", Some("MCP error -32001: Request timed out")),
            ("c3", "echo", None),
        ]);
        let j = run.judge(ScenarioName::SlowTimeout, Expectation::Hold);
        assert_eq!((j.verdict, j.ok), ("HELD", true), "{}", j.note);
        assert_eq!(j.note, "the timed-out call failed once and was not sent again; same session, no new initialize");
        let run = held(&[
            ("c1", "echo", None),
            ("c2", "slow", None),
            ("c3", "echo", None),
        ]);
        let j = run.judge(ScenarioName::SlowTimeout, Expectation::Hold);
        assert_eq!(
            (j.verdict, j.note.as_str()),
            (
                "BROKEN",
                "the slow call c2 did not time out: nothing was tested"
            )
        );
        let mut run = held(&[
            ("c1", "echo", None),
            ("c2", "slow", Some("MCP error -32001: Request timed out")),
            ("c3", "echo", None),
        ]);
        run.witness.push(init(30, "s2"));
        let j = run.judge(ScenarioName::SlowTimeout, Expectation::Hold);
        assert_eq!(j.verdict, "RECYCLED");
    }

    /// The probe c2 meets the loss of s1 at 110 ms and ends after `ms`; s2 starts
    /// at 1500 ms and c3 works on it.
    fn waited(ms: u64, sent: u32) -> Run {
        Run {
            witness: vec![
                init(0, "s1"),
                list(5, "s1"),
                call(10, "s1", "c1", 200),
                control(100, "invalidate: dropped 1 session(s)"),
                call(110, "s1", "c2", 404),
                init(1500, "s2"),
                list(1510, "s2"),
                call(1520, "s2", "c3", 200),
            ],
            dropped: vec!["s1".into()],
            counts: counts(&[("c1", 1, 1), ("c2", sent, 0), ("c3", 1, 1)]),
            calls: vec![
                seen("c1", "echo", None, 2),
                seen("c2", "probe", Some("This operation was aborted"), ms),
                seen("c3", "echo", None, 3),
            ],
            seamless: true,
            per_call_recovery: false,
        }
    }

    #[test]
    fn a_waiting_call_is_timely_only_when_it_ends_by_its_signal_and_is_not_sent_again() {
        let j = waited(1100, 1).judge(ScenarioName::AbortWaiting, Expectation::Timely);
        assert_eq!(
            (j.verdict, j.ok, j.trigger_ms),
            ("TIMELY", true, Some(1100)),
            "{}",
            j.note
        );
        assert_eq!(j.note, "call c2 ended after 1100 ms, within its abort signal (400 ms), sent 1 time(s); calls worked again on a new session");
        let j = waited(1101, 1).judge(ScenarioName::AbortWaiting, Expectation::Timely);
        assert_eq!((j.verdict, j.ok), ("LATE", false));
        assert_eq!(
            j.note,
            "call c2 ended after 1101 ms, past its abort signal of 400 ms"
        );
        let j = waited(1701, 1).judge(ScenarioName::DeadlineWaiting, Expectation::Timely);
        assert_eq!(
            j.note,
            "call c2 ended after 1701 ms, past its toolCallTimeoutMs of 1000 ms"
        );
        let j = waited(500, 2).judge(ScenarioName::AbortWaiting, Expectation::Timely);
        assert_eq!((j.verdict, j.ok), ("REPEATED", false));
        assert_eq!(
            j.note,
            "call c2 was sent 2 times; once its abort signal has passed it must not be sent again"
        );
        let mut run = waited(500, 1);
        run.witness.pop();
        let j = run.judge(ScenarioName::AbortWaiting, Expectation::Timely);
        assert_eq!(
            (j.verdict, j.note.as_str()),
            (
                "STUCK",
                "no call worked on a new session after the session was lost"
            )
        );
        let mut run = waited(500, 1);
        run.calls[1] = seen("c2", "probe", None, 500);
        let j = run.judge(ScenarioName::AbortWaiting, Expectation::Timely);
        assert_eq!(j.verdict, "BROKEN");
        let mut run = waited(500, 1);
        run.witness[4].status = 500;
        let j = run.judge(ScenarioName::AbortWaiting, Expectation::Timely);
        assert_eq!(
            (j.verdict, j.note.as_str()),
            (
                "BROKEN",
                "call c2 never met the lost session: nothing was tested"
            )
        );
    }

    #[test]
    fn the_repeat_of_a_waiting_call_is_judged_only_when_it_was_sent() {
        let j = waited(3700, 2).judge(ScenarioName::DeadlineResend, Expectation::Timely);
        assert_eq!((j.verdict, j.ok), ("TIMELY", true), "{}", j.note);
        let j = waited(3701, 2).judge(ScenarioName::DeadlineResend, Expectation::Timely);
        assert_eq!(
            j.note,
            "call c2 ended after 3701 ms, past its toolCallTimeoutMs of 3000 ms"
        );
        let j = waited(3000, 1).judge(ScenarioName::DeadlineResend, Expectation::Timely);
        assert_eq!((j.verdict, j.note.as_str()), ("BROKEN", "call c2 was not sent again on the new session: the repeat's deadline was not tested"));
        let mut run = waited(3000, 1);
        run.seamless = false;
        let j = run.judge(ScenarioName::DeadlineResend, Expectation::Timely);
        assert_eq!(j.verdict, "TIMELY");
    }

    /// s1 lost at 100 ms; c2 (waiting) meets it, two initializes are refused;
    /// c3 (after) is made once reconnecting stopped.
    fn gave_up(waiting_error: &str, waiting_ms: u64, after_error: &str, after_ms: u64) -> Run {
        Run {
            witness: vec![
                init(0, "s1"),
                list(5, "s1"),
                call(10, "s1", "c1", 200),
                control(100, "invalidate: dropped 1 session(s)"),
                call(110, "s1", "c2", 404),
                entry(112, "POST", Some("initialize"), None, 503),
                entry(320, "POST", Some("initialize"), None, 503),
            ],
            dropped: vec!["s1".into()],
            counts: counts(&[("c1", 1, 1), ("c2", 1, 0), ("c3", 0, 0)]),
            calls: vec![
                seen("c1", "echo", None, 2),
                seen("c2", "waiting", Some(waiting_error), waiting_ms),
                seen("c3", "after", Some(after_error), after_ms),
            ],
            seamless: true,
            per_call_recovery: false,
        }
    }

    const SDK_404: &str = "Streamable HTTP error: Error POSTing to endpoint: {\"error\":{\"code\":-32001,\"message\":\"Session not found\"}}";
    const STOPPED: &str = "mcp-client(fake): the server no longer recognises the session (Session not found) and gave up after 2 consecutive failed reconnect attempts";

    #[test]
    fn calls_fail_fast_with_the_servers_words_once_reconnecting_stopped() {
        let j = gave_up(SDK_404, 3000, STOPPED, 1000)
            .judge(ScenarioName::GaveUp, Expectation::FailFast);
        assert_eq!((j.verdict, j.ok), ("FAILED-FAST", true), "{}", j.note);
        assert_eq!(j.note, "once reconnecting stopped (2 refused initialize(s)), the waiting call failed after 3000 ms and the next after 1000 ms, with the server's words");
        let j =
            gave_up(SDK_404, 3001, STOPPED, 1).judge(ScenarioName::GaveUp, Expectation::FailFast);
        assert_eq!((j.verdict, j.ok), ("LATE", false));
        assert_eq!(j.note, "call waiting failed only after 3001 ms: once reconnecting has stopped it must fail at once (limit 3000 ms, its timeout 6000 ms)");
        let j =
            gave_up(SDK_404, 300, STOPPED, 1001).judge(ScenarioName::GaveUp, Expectation::FailFast);
        assert_eq!(j.verdict, "LATE");
        let j = gave_up("session lost", 300, STOPPED, 1)
            .judge(ScenarioName::GaveUp, Expectation::FailFast);
        assert_eq!((j.verdict, j.ok), ("MUTE", false));
        assert_eq!(j.note, "the error of call waiting does not carry the server's words (\"Session not found\"): \"session lost\"");
        let j = gave_up(
            SDK_404,
            300,
            "mcp-client(fake): the server no longer recognises the session (Session not found)",
            1,
        )
        .judge(ScenarioName::GaveUp, Expectation::FailFast);
        assert_eq!(j.verdict, "MUTE");
        assert!(j.note.starts_with("the error of call after does not carry the server's words (\"Session not found\") and why reconnecting stopped (\"gave up\")"), "{}", j.note);
        // Earlier revisions need not say so.
        let mut run = gave_up("session lost", 300, "Not connected", 1);
        run.seamless = false;
        assert_eq!(
            run.judge(ScenarioName::GaveUp, Expectation::FailFast)
                .verdict,
            "FAILED-FAST"
        );
        let mut run = gave_up(SDK_404, 300, STOPPED, 1);
        run.witness.truncate(5);
        let j = run.judge(ScenarioName::GaveUp, Expectation::FailFast);
        assert_eq!(
            (j.verdict, j.note.as_str()),
            (
                "BROKEN",
                "the client never tried a new session: nothing was tested"
            )
        );
    }

    #[test]
    fn every_name_has_exactly_one_scenario() {
        use clap::ValueEnum;
        for name in ScenarioName::value_variants() {
            assert_eq!(
                all().iter().filter(|s| s.name == *name).count(),
                1,
                "{name}"
            );
            assert_eq!(name.to_possible_value().unwrap().get_name(), name.as_str());
            assert_eq!(name.to_string(), name.as_str());
        }
        assert_eq!(all().len(), ScenarioName::value_variants().len());
    }

    #[test]
    fn every_plan_is_one_the_harness_runs() {
        let harness = include_str!("../drivers/plugin/harness.mjs");
        for s in all() {
            assert!(
                harness.contains(&format!("case \"{}\":", s.plan.as_str())),
                "harness.mjs has no plan {:?} for {}",
                s.plan.as_str(),
                s.name
            );
        }
    }

    #[test]
    fn recovery_scenarios_expect_seamless_of_the_current_revision_only() {
        for s in all() {
            let (current, earlier) = (s.expectation(true), s.expectation(false));
            match s.expect {
                Expectation::Recover => {
                    assert_eq!(
                        (current, earlier),
                        (Expectation::Seamless, Expectation::Recover),
                        "{}",
                        s.name
                    )
                }
                e => assert_eq!((current, earlier), (e, e), "{}", s.name),
            }
        }
        assert_eq!(find(ScenarioName::Expired404).expect, Expectation::Recover);
        assert_eq!(find(ScenarioName::CutMidCall).expect, Expectation::NoRetry);
    }
}
