//! The verify scenarios — what the fake server does, how the harness drives
//! the client, what a healed client must show — and the verdict, computed
//! from the server's witness log.

use std::time::Duration;

use serde::Serialize;

use super::server::{LostSessionAnswer, ServerBehaviour, WitnessEntry, ORDINARY_ERROR_WORDS};

/// How the harness drives the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Call, have the server drop the session, call until it works or the deadline passes.
    Invalidate,
    /// Call, stay idle past the server's idle limit, call again.
    Idle,
    /// Call, have the server restart, call again.
    Restart,
    /// Call tools that fail in ordinary ways, then call tools that work.
    Ordinary,
    /// Call, wait for anything the client does on its own, call again.
    Settle,
}

impl Plan {
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Invalidate => "invalidate",
            Plan::Idle => "idle",
            Plan::Restart => "restart",
            Plan::Ordinary => "ordinary",
            Plan::Settle => "settle",
        }
    }
}

/// What a healed client must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expectation {
    /// A fresh session, tools re-listed, a later call working (RECOVERED).
    Recover,
    /// Keep working on the same session, no new initialize (HELD).
    Hold,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub what: &'static str,
    pub behaviour: ServerBehaviour,
    pub plan: Plan,
    pub expect: Expectation,
}

/// Idle limit of the `idle-timeout` scenario, and how long the harness idles.
pub const IDLE_LIMIT: Duration = Duration::from_millis(800);
pub const IDLE_FOR: Duration = Duration::from_millis(1300);

/// Every scenario, in the order verify runs them.
pub fn all() -> Vec<Scenario> {
    let base = ServerBehaviour::default();
    vec![
        Scenario {
            name: "expired-404",
            what: "drops the session; answers 404 + JSON-RPC -32001 \"Session not found\"",
            behaviour: base.clone(),
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: "expired-400",
            what: "drops the session; answers 400 \"Bad Request: No valid session ID provided\"",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::BadRequestNoValidSession,
                ..base.clone()
            },
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: "expired-401",
            what: "drops the session; answers 401 \"Unauthorized: Session not found\"",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::UnauthorizedText,
                ..base.clone()
            },
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
        Scenario {
            name: "idle-timeout",
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
            name: "restart",
            what: "restarts on the same port; in-memory sessions lost, open connections closed",
            behaviour: ServerBehaviour {
                lost_session: LostSessionAnswer::NotFoundText,
                ..base.clone()
            },
            plan: Plan::Restart,
            expect: Expectation::Recover,
        },
        Scenario {
            name: "restart-persisted",
            what: "restarts on the same port but keeps its sessions",
            behaviour: ServerBehaviour {
                persist_sessions: true,
                ..base.clone()
            },
            plan: Plan::Restart,
            expect: Expectation::Hold,
        },
        Scenario {
            name: "ordinary-errors",
            what: "answers tool calls with HTTP 500, 400 invalid params, a JSON-RPC error, a tool error",
            behaviour: base.clone(),
            plan: Plan::Ordinary,
            expect: Expectation::Hold,
        },
        Scenario {
            name: "sse-404",
            what: "has no GET stream and answers the optional GET with 404 instead of 405",
            behaviour: ServerBehaviour {
                get_not_found: true,
                ..base.clone()
            },
            plan: Plan::Settle,
            expect: Expectation::Hold,
        },
        Scenario {
            name: "strict-reinit",
            what: "drops the session and rejects an initialize that carries a session id",
            behaviour: ServerBehaviour {
                strict_initialize: true,
                ..base
            },
            plan: Plan::Invalidate,
            expect: Expectation::Recover,
        },
    ]
}

pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name).collect()
}

/// What the harness saw of one tool call.
#[derive(Debug, Clone)]
pub struct HarnessCall {
    pub name: String,
    pub ok: bool,
    pub error: Option<String>,
}

/// The verdict of one scenario run.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    /// RECOVERED, STUCK, HELD, RECYCLED or BROKEN.
    pub verdict: &'static str,
    /// Whether the verdict is what a healed client must show.
    pub ok: bool,
    /// From the first failed call to the first successful one on the new session.
    pub recovery_ms: Option<u64>,
    /// Successful initialize handshakes the server saw.
    pub initialize_count: usize,
    /// The error the client's caller got for the first failed call, if any.
    pub trigger_error: Option<String>,
    pub note: String,
}

/// Judge a scenario from the server's witness log, the ids it dropped, and the harness's calls.
pub fn judge(
    scenario: &Scenario,
    witness: &[WitnessEntry],
    dropped: &[String],
    calls: &[HarnessCall],
    deadline: Duration,
) -> Judgement {
    let initialize_count = witness
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 200)
        .count();
    let trigger_error = calls
        .iter()
        .skip(1)
        .find(|c| !c.ok)
        .and_then(|c| c.error.clone());
    match scenario.expect {
        Expectation::Recover => {
            judge_recovery(witness, dropped, deadline, initialize_count, trigger_error)
        }
        Expectation::Hold => judge_hold(scenario, witness, calls, initialize_count, trigger_error),
    }
}

fn judge_recovery(
    witness: &[WitnessEntry],
    dropped: &[String],
    deadline: Duration,
    initialize_count: usize,
    trigger_error: Option<String>,
) -> Judgement {
    let is_dead = |e: &WitnessEntry| e.session_sent.as_ref().is_some_and(|s| dropped.contains(s));
    // The server dropping sessions (invalidate, prune, restart) starts the clock.
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
            ok: false,
            recovery_ms: None,
            initialize_count,
            trigger_error,
            note: "the session was never invalidated under the client (no request carried a dropped id)".into(),
        };
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
    let new_init = witness[first_failed..].iter().position(|e| {
        e.rpc_method.as_deref() == Some("initialize") && e.status == 200 && e.session_sent.is_none()
    });
    let stuck = |why: String| Judgement {
        verdict: "STUCK",
        ok: false,
        recovery_ms: None,
        initialize_count,
        trigger_error: trigger_error.clone(),
        note: why,
    };
    let Some(new_init) = new_init.map(|i| i + first_failed) else {
        return stuck(format!(
            "no new initialize after the session was lost; {dead_after_fail} request(s) kept the dead session id"
        ));
    };
    let fresh = witness[new_init].session_issued.clone().unwrap_or_default();
    let on_fresh = |e: &WitnessEntry| e.session_sent.as_deref() == Some(fresh.as_str());
    let relisted = witness[new_init..]
        .iter()
        .position(|e| {
            on_fresh(e) && e.rpc_method.as_deref() == Some("tools/list") && e.status == 200
        })
        .map(|i| i + new_init);
    let Some(relisted) = relisted else {
        return stuck("a new session started but its tools were never listed again".into());
    };
    let called = witness[relisted..].iter().find(|e| {
        on_fresh(e) && e.rpc_method.as_deref() == Some("tools/call") && e.call_ok == Some(true)
    });
    let Some(called) = called else {
        return stuck(
            "a new session started and listed tools, but no tool call succeeded on it".into(),
        );
    };
    let dead_later = witness[new_init..].iter().filter(|e| is_dead(e)).count();
    if dead_later > 0 {
        return stuck(format!(
            "{dead_later} request(s) still carried the dead session id after the new session was established"
        ));
    }
    let recovery_ms = called.t_ms.saturating_sub(t_fail);
    if recovery_ms > deadline.as_millis() as u64 {
        return stuck(format!(
            "recovered only after {recovery_ms} ms, past the deadline"
        ));
    }
    let mut note =
        "fresh initialize without the dead id, tools re-listed, call succeeded".to_string();
    if rejected_reinit > 0 {
        note.push_str(&format!(
            "; {rejected_reinit} initialize(s) carried a session id"
        ));
    }
    Judgement {
        verdict: "RECOVERED",
        ok: true,
        recovery_ms: Some(recovery_ms),
        initialize_count,
        trigger_error,
        note,
    }
}

fn judge_hold(
    scenario: &Scenario,
    witness: &[WitnessEntry],
    calls: &[HarnessCall],
    initialize_count: usize,
    trigger_error: Option<String>,
) -> Judgement {
    let verdict = |verdict: &'static str, ok: bool, note: String| Judgement {
        verdict,
        ok,
        recovery_ms: None,
        initialize_count,
        trigger_error: trigger_error.clone(),
        note,
    };
    if initialize_count > 1 {
        return verdict(
            "RECYCLED",
            false,
            format!("{initialize_count} initialize handshakes: a healthy session was thrown away"),
        );
    }
    let last_ok = calls.last().is_some_and(|c| c.ok && c.name == "echo");
    if scenario.plan == Plan::Ordinary {
        for (kind, words) in ORDINARY_ERROR_WORDS {
            let seen = calls
                .iter()
                .filter(|c| c.name == "fail")
                .any(|c| !c.ok && c.error.as_deref().is_some_and(|e| e.contains(words)));
            if !seen {
                return verdict(
                    "BROKEN",
                    false,
                    format!("the {kind} error did not reach the caller with the server's words ({words:?})"),
                );
            }
        }
        let witnessed_calls = witness
            .iter()
            .filter(|e| e.rpc_method.as_deref() == Some("tools/call"))
            .count();
        if !last_ok {
            return verdict(
                "BROKEN",
                false,
                "tools stopped working after ordinary errors".into(),
            );
        }
        return verdict(
            "HELD",
            true,
            format!("each error reached the caller; {witnessed_calls} calls on one session, no new initialize"),
        );
    }
    if !last_ok {
        return verdict(
            "BROKEN",
            false,
            "tools did not work again on the kept session".into(),
        );
    }
    verdict(
        "HELD",
        true,
        "kept working on the same session, no new initialize".into(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cli_help_lists_every_scenario() {
        let help = include_str!("../cli.rs");
        let listed = super::names().join(", ");
        let flat: String = help
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace("/// ", "");
        assert!(
            flat.contains(&listed),
            "update the --scenario help in cli.rs to: {listed}"
        );
    }
}
