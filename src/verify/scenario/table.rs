//! The scenario table: each scenario's name (as `--scenario` takes it), what
//! the fake server does, how the client is driven (its plan), what a healed
//! client must show (its expectation), and the timings they share. How a run
//! is judged against it is judges.rs.

use std::time::Duration;

use serde::Serialize;

use crate::verify::fake_server::reload::ReloadCycle;
use crate::verify::fake_server::{LostSessionAnswer, ServerBehaviour};

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
    #[value(name = "call-during-renewal")]
    #[serde(rename = "call-during-renewal")]
    CallDuringRenewal,
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
    #[value(name = "refused-once")]
    #[serde(rename = "refused-once")]
    RefusedOnce,
    #[value(name = "losses-apart")]
    #[serde(rename = "losses-apart")]
    LossesApart,
    #[value(name = "reconnect-disabled")]
    #[serde(rename = "reconnect-disabled")]
    ReconnectDisabled,
    #[value(name = "reload")]
    #[serde(rename = "reload")]
    Reload,
    #[value(name = "reload-5s")]
    #[serde(rename = "reload-5s")]
    Reload5s,
    #[value(name = "auth-session-401")]
    #[serde(rename = "auth-session-401")]
    AuthSession401,
    #[value(name = "auth-token-401")]
    #[serde(rename = "auth-token-401")]
    AuthToken401,
    #[value(name = "get-stream-loss")]
    #[serde(rename = "get-stream-loss")]
    GetStreamLoss,
    #[value(name = "late-answers")]
    #[serde(rename = "late-answers")]
    LateAnswers,
    #[value(name = "lost-again")]
    #[serde(rename = "lost-again")]
    LostAgain,
    #[value(name = "cut-kept")]
    #[serde(rename = "cut-kept")]
    CutKept,
    #[value(name = "reinit-timeout")]
    #[serde(rename = "reinit-timeout")]
    ReinitTimeout,
    #[value(name = "tools-changed")]
    #[serde(rename = "tools-changed")]
    ToolsChanged,
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
            ScenarioName::CallDuringRenewal => "call-during-renewal",
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
            ScenarioName::RefusedOnce => "refused-once",
            ScenarioName::LossesApart => "losses-apart",
            ScenarioName::ReconnectDisabled => "reconnect-disabled",
            ScenarioName::Reload => "reload",
            ScenarioName::Reload5s => "reload-5s",
            ScenarioName::AuthSession401 => "auth-session-401",
            ScenarioName::AuthToken401 => "auth-token-401",
            ScenarioName::GetStreamLoss => "get-stream-loss",
            ScenarioName::LateAnswers => "late-answers",
            ScenarioName::LostAgain => "lost-again",
            ScenarioName::CutKept => "cut-kept",
            ScenarioName::ReinitTimeout => "reinit-timeout",
            ScenarioName::ToolsChanged => "tools-changed",
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
    /// Call, have the server drop the session; one call waits while
    /// reconnecting stops (the server refuses every new session until the
    /// policy's attempts are used up, or the policy disables reconnecting),
    /// one more is made after it.
    GiveUp,
    /// Call, have the server drop the session, make one call that meets the
    /// loss (the server refuses the first new session), then call until it works.
    RefusedOnce,
    /// Call, start the server forgetting every session again and again
    /// (reload.rs), and call once after each time.
    Reload,
    /// Call, make one call the server refuses with a 401 that names no
    /// session (a bad token, auth.rs), call again.
    TokenRefused,
    /// Call, wait until the client's GET stream is open, have the server drop
    /// the session and cut the stream, wait (no call) until a GET opens on a
    /// new session, then call (get_stream.rs).
    StreamLoss,
    /// As `Invalidate`, then call the tool the new session no longer lists,
    /// then call again (extra.rs).
    ToolsChanged,
    /// Call; then [`LOSSES_APART`] times: the server drops the session, a call
    /// the server fails with HTTP 500 meets the loss (sent again on the new
    /// session, it fails there too, so that session serves nothing), the new
    /// session stays healthy [`LOSSES_APART_HEALTHY`]; then call once more
    /// (apart.rs).
    LossesApart,
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
            Plan::RefusedOnce => "refused-once",
            Plan::Reload => "reload",
            Plan::TokenRefused => "token-refused",
            Plan::StreamLoss => "stream-loss",
            Plan::ToolsChanged => "tools-changed",
            Plan::LossesApart => "losses-apart",
        }
    }

    /// Whether the plan's calls carry their caller's own timeout or abort
    /// signal (the DSH plugin's toolCallTimeoutMs and AbortSignal), which a
    /// driver must be able to pass to the client to run it.
    pub fn needs_caller_bounds(self) -> bool {
        matches!(
            self,
            Plan::Timeout | Plan::AbortWaiting | Plan::DeadlineWaiting | Plan::DeadlineResend
        )
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
    /// A 401 that names no session goes to the client's own auth flow: no new
    /// session, the call not sent again, the session kept (AUTH-KEPT, auth.rs).
    AuthKept,
    /// Losses apart, each after a healthy session, are each a new outage:
    /// every call that met one is sent again on a new session, and the client
    /// never gives up (RESET, apart.rs).
    Reset,
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
            Expectation::AuthKept => "AUTH-KEPT",
            Expectation::Reset => "RESET",
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
    /// Whether the client must be made with an OAuth `authProvider` for this
    /// scenario: only a driver whose client can take one runs it.
    pub fn needs_auth_provider(&self) -> bool {
        self.behaviour.oauth
    }

    /// The expectation for a client that carries the current patch revision
    /// (`seamless`) or not. In `refused-once` the call that meets the loss may
    /// fail even for the current revision (the server refuses its new session),
    /// so recovering is enough there.
    pub fn expectation(&self, seamless: bool) -> Expectation {
        match self.expect {
            Expectation::Recover if seamless && self.plan != Plan::RefusedOnce => {
                Expectation::Seamless
            }
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
/// `losses-apart`: how many times the server drops the session, and how long
/// each new session stays healthy before the next loss: past the brief
/// policy's `maxDelayMs` (1 s), after which the client starts counting its
/// attempts again.
pub const LOSSES_APART: usize = 3;
pub const LOSSES_APART_HEALTHY: Duration = Duration::from_millis(1500);
/// `losses-apart`: the label of each call that meets a loss (`outage1`, ...),
/// and of the call made after the last.
pub const OUTAGE_CALL: &str = "outage";
pub const LAST_CALL: &str = "last";
/// `losses-apart`: the ordinary failure (the fake server's `fail` tool) of each call that meets a loss.
pub const LOSSES_APART_FAIL: &str = "http500";
/// `refused-once`: the label of the call that meets the loss (and the refused new session).
pub const REFUSED_CALL: &str = "refused";
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
            name: ScenarioName::CallDuringRenewal,
            what: "as concurrent-loss; a call sent without a session id while the new session starts is answered 400 \"No valid session ID provided\" only once the new session is up",
            behaviour: ServerBehaviour {
                reinit_delay: Some(REINIT_DELAY),
                late_sessionless_refusal: true,
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
        Scenario {
            name: ScenarioName::RefusedOnce,
            what: "drops the session; refuses the first new session (503 with its reason), then accepts new ones",
            behaviour: ServerBehaviour {
                refuse_first_reinit: true,
                ..base.clone()
            },
            plan: Plan::RefusedOnce,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::LossesApart,
            what: "drops the session 3 times, 1.5 s apart; each time a call the server fails with HTTP 500 meets the loss, so the new session serves nothing but stays healthy; reconnect allows 2 attempts per outage",
            behaviour: base.clone(),
            plan: Plan::LossesApart,
            expect: Expectation::Reset,
        },
        Scenario {
            name: ScenarioName::ReconnectDisabled,
            what: "drops the session; the client's reconnect is disabled; one call meets the loss, one more comes after it (the host kept the tool)",
            behaviour: base.clone(),
            plan: Plan::GiveUp,
            expect: Expectation::FailFast,
        },
        reload_scenario(ScenarioName::Reload, RELOAD, &base),
        reload_scenario(ScenarioName::Reload5s, RELOAD_5S, &base),
        Scenario {
            name: ScenarioName::AuthSession401,
            what: "an OAuth-protected server (the client has an authProvider) drops the session; answers 401 \"Unauthorized: Session not found\"",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::UnauthorizedText,
                oauth: true,
                ..base.clone()
            },
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::AuthToken401,
            what: "an OAuth-protected server (the client has an authProvider) answers one call on a live session with 401 \"Unauthorized: invalid token\" and a WWW-Authenticate header",
            behaviour: ServerBehaviour {
                oauth: true,
                ..base.clone()
            },
            plan: Plan::TokenRefused,
            expect: Expectation::AuthKept,
        },
        Scenario {
            name: ScenarioName::GetStreamLoss,
            what: "keeps the client's GET stream open, drops the session while no call is made and cuts the stream; its reconnect is answered 404 + JSON-RPC -32001",
            behaviour: ServerBehaviour {
                get_stream: true,
                ..base.clone()
            },
            plan: Plan::StreamLoss,
            expect: Expectation::Recover,
        },
    ]
    .into_iter()
    .chain(extra_rows(&base))
    .collect()
}

/// `reload`: 15 restarts 2 s apart.
pub const RELOAD: ReloadCycle = ReloadCycle {
    every: Duration::from_secs(2),
    times: 15,
};
/// `reload-5s`: 8 restarts 5 s apart.
pub const RELOAD_5S: ReloadCycle = ReloadCycle {
    every: Duration::from_secs(5),
    times: 8,
};

/// The reload scenario `name`, forgetting every session as `cycle` says.
/// `reload` answers a forgotten session as the MCP TypeScript SDK's example
/// server does after a restart (400 "No valid session ID provided"),
/// `reload-5s` as the SDK's own transport does (404 + JSON-RPC -32001).
pub(super) fn reload_scenario(
    name: ScenarioName,
    cycle: ReloadCycle,
    base: &ServerBehaviour,
) -> Scenario {
    let (what, lost_session) = match name {
        ScenarioName::Reload5s => (
            "restarts in watch mode: forgets every session every 5 s, 8 times, one call after each; answers 404 + JSON-RPC -32001",
            LostSessionAnswer::NotFoundJsonRpc,
        ),
        _ => (
            "restarts in watch mode: forgets every session every 2 s, 15 times, one call after each; answers 400 \"No valid session ID provided\"",
            LostSessionAnswer::BadRequestNoValidSession,
        ),
    };
    Scenario {
        name,
        what,
        behaviour: ServerBehaviour {
            reload: Some(cycle),
            lost_session,
            ..base.clone()
        },
        plan: Plan::Reload,
        expect: Expectation::Reloaded,
    }
}

/// A run's verdict as the overall word counts it: RECOVERED of a scenario
/// where even the current revision may fail a call (`refused-once`: the
/// server refuses the new session) is the best that scenario has, as
/// SEAMLESS is elsewhere, and does not lower the overall word.
pub fn overall_verdict(name: ScenarioName, verdict: &'static str) -> &'static str {
    if verdict == "RECOVERED" && find(name).expectation(true) == Expectation::Recover {
        "SEAMLESS"
    } else {
        verdict
    }
}

/// The scenario of this name.
pub fn find(name: ScenarioName) -> Scenario {
    all()
        .into_iter()
        .find(|s| s.name == name)
        .expect("every ScenarioName has a scenario")
}

// The scenarios that sharpen the table for a client that recovers in its own
// tool-call path (judged in extra.rs): run by default only for the drivers
// that ask for them, by every other driver when named.

/// `late-answers`: how long after the loss the calls that ran before it, and
/// the last call answered as lost, get their answers: past the new session's
/// held-back initialize ([`REINIT_DELAY`]) and its tool list, within the
/// client's 3 s limit per request. The fake server also waits, at most 1 s
/// more, for the new session to be up, so a slow machine cannot make the
/// answers come while the client is still opening it.
pub const LATE_OLD_ANSWERS: Duration = Duration::from_millis(1800);

/// `lost-again`: every session forgotten twice, 2 s apart, one call after each.
pub const LOST_AGAIN: ReloadCycle = ReloadCycle {
    every: Duration::from_secs(2),
    times: 2,
};

/// `reinit-timeout`: the client's limit per request, for a driver that sets
/// it (gemini-cli's server `timeout`), and how late the refusal of the first
/// new session comes, past it. The limit is long enough that the call after
/// the one that timed out comes past the time a call may still be sent on
/// the lost session (the invariant nothing-on-lost-session): a client that
/// still holds the lost session after its new one got no answer sends that
/// call on it (seen on gemini-cli's patch before it was mended).
pub const REINIT_TIMEOUT_CALL: Duration = Duration::from_millis(2500);
pub const REFUSAL_DELAY: Duration = Duration::from_millis(3000);

/// Whether `name` is one of the extra scenarios (extra.rs judges them).
pub fn is_extra(name: ScenarioName) -> bool {
    matches!(
        name,
        ScenarioName::LateAnswers
            | ScenarioName::LostAgain
            | ScenarioName::CutKept
            | ScenarioName::ReinitTimeout
            | ScenarioName::ToolsChanged
    )
}

/// `tools-changed`: the label of the call of the tool the new session no longer lists.
pub const DROPPED_CALL: &str = "dropped-tool";

/// The extra scenarios, in the order verify reports them.
fn extra_rows(base: &ServerBehaviour) -> Vec<Scenario> {
    vec![
        Scenario {
            name: ScenarioName::LateAnswers,
            what: "as concurrent-loss; the 2 calls that ran first, and the 404 to a call of another tool (add) among them, are answered only after the new session is up (1.8 s at the least); then the new session announces a changed tool list",
            behaviour: ServerBehaviour {
                reinit_delay: Some(REINIT_DELAY),
                late_old_answers: Some(LATE_OLD_ANSWERS),
                announce_tools_changed: true,
                ..base.clone()
            },
            plan: Plan::Concurrent,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::LostAgain,
            what: "forgets every session twice, 2 s apart, one call after each: a second loss after a recovery; answers 404 + JSON-RPC -32001",
            behaviour: ServerBehaviour {
                reload: Some(LOST_AGAIN),
                lost_session: LostSessionAnswer::NotFoundJsonRpc,
                ..base.clone()
            },
            plan: Plan::Reload,
            expect: Expectation::Reloaded,
        },
        Scenario {
            name: ScenarioName::CutKept,
            what: "cuts the connection of a slow tool's call while it runs, and keeps listening and keeping the session",
            behaviour: ServerBehaviour {
                restart_during_slow_call: true,
                cut_keeps_listening: true,
                ..base.clone()
            },
            plan: Plan::Cut,
            expect: Expectation::NoRetry,
        },
        Scenario {
            name: ScenarioName::ReinitTimeout,
            what: "drops the session; the first new initialize gets no answer within the client's 2.5 s limit (a 503 after 3 s), later ones are answered",
            behaviour: ServerBehaviour {
                refuse_first_reinit: true,
                refusal_delay: Some(REFUSAL_DELAY),
                ..base.clone()
            },
            plan: Plan::RefusedOnce,
            expect: Expectation::Recover,
        },
        Scenario {
            name: ScenarioName::ToolsChanged,
            what: "drops the session; the new session no longer lists the tool add (a new release); the model then asks for add",
            behaviour: ServerBehaviour {
                drop_tool_after_loss: true,
                ..base.clone()
            },
            plan: Plan::ToolsChanged,
            expect: Expectation::Recover,
        },
    ]
}

/// The scenarios a driver that asks for them adds to its default set (no
/// `--scenario` named): all of them.
pub fn for_driver_default() -> Vec<Scenario> {
    extra_rows(&ServerBehaviour::default())
}
