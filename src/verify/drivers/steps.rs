//! The steps of each scenario's plan for the drivers in which mcpatch itself
//! makes the calls a host would make: the stdio bridge host (mcpatch speaks
//! JSON-RPC to the bridge) and the headless CLI (mcpatch is the model that asks
//! the CLI for tool calls). Each step calls, or causes the plan's event on the
//! fake server (drop the sessions, idle, restart, hold calls, ...); only the
//! server's witness log and the caller's view of each call are judged
//! (scenario.rs), so both drivers share one plan table.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::verify::fake_server::late::{relisted_after_announcement, DROPPED_TOOL};
use crate::verify::fake_server::{FakeServer, RAN_BEFORE_LOSS_DELAY, UNANSWERED_NOTE};
use crate::verify::scenario::get_stream::GET_REOPEN_WAIT;
use crate::verify::scenario::Policy;
use crate::verify::scenario::DROPPED_CALL;
use crate::verify::scenario::{
    Plan, ABORT_AFTER, ABORT_REINIT_DELAY, CONCURRENT_CALLS, CONCURRENT_LATE_CALLS,
    CONCURRENT_RAN_BEFORE_LOSS, DEADLINE_CALL_TIMEOUT, DEADLINE_RESEND_CALL_TIMEOUT,
    DEADLINE_RESEND_REINIT_DELAY, DEADLINE_RESEND_TOOL, DEADLINE_SIGNAL,
    DEADLINE_WAIT_REINIT_DELAY, FORGETFUL_CALLS, IDLE_FOR, REFUSED_CALL, SLOW_TIMEOUT_CALL,
    SLOW_TIMEOUT_TOOL,
};

/// How long the driver waits for a server-side event it caused (a restart listening again).
const EVENT_LIMIT: Duration = Duration::from_secs(10);
/// Pause between calls while waiting for a client to recover.
const POLL: Duration = Duration::from_millis(25);

/// Why a run stopped before its plan ended.
#[derive(Debug, Clone)]
pub enum Stop {
    /// A call got no answer within its limit; the client still runs.
    Hang(String),
    /// The client ended (it exited, or closed its end).
    Closed(String),
    /// The client answered its start-up wrongly.
    Handshake(String),
}

/// A caller's own bounds on one call, as the DSH plugin's call API takes them
/// (toolCallTimeoutMs, an AbortSignal): the client's per-call timeout, and
/// when the caller's abort signal fires; `None` leaves the client's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Within {
    pub timeout: Option<Duration>,
    pub abort: Option<Duration>,
}

/// Makes the calls a host would make. `Ok(worked)` when an answer came;
/// `Err` stops the run.
pub(crate) trait Caller {
    /// One tool call.
    async fn call(&self, name: &str, args: Value, label: &str) -> Result<bool, Stop>;

    /// One tool call bounded by `within`. A caller whose client takes no
    /// bounds per call (gemini-cli: its timeout is a setting, made from the
    /// plan) makes it as [`Caller::call`]; the plans whose verdict needs the
    /// bounds are left out for its driver.
    async fn call_within(
        &self,
        name: &str,
        args: Value,
        label: &str,
        within: Within,
    ) -> Result<bool, Stop> {
        let _ = within;
        self.call(name, args, label).await
    }

    /// `n` echo calls at once (texts `"{prefix} {i}"`).
    async fn at_once(&self, n: usize, prefix: &str) -> Result<Vec<bool>, Stop>;

    async fn echo(&self, text: &str) -> Result<bool, Stop> {
        self.call("echo", json!({"text": text}), "echo").await
    }

    /// Call until a call works or the recovery deadline passes.
    async fn until_recovered(&self) -> Result<(), Stop> {
        self.until_recovered_after(Duration::ZERO).await
    }

    /// As [`Caller::until_recovered`], the deadline `extra` later (the
    /// server holds the new session back that long).
    async fn until_recovered_after(&self, extra: Duration) -> Result<(), Stop> {
        let deadline = Instant::now() + Policy::Short.deadline() + extra;
        while Instant::now() < deadline {
            if self.echo("after").await? {
                return Ok(());
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    }
}

/// Run `plan`'s steps against `server` through `c`.
pub(crate) async fn plan(plan: Plan, server: &FakeServer, c: &impl Caller) -> Result<(), Stop> {
    match plan {
        Plan::Invalidate => {
            c.echo("before").await?;
            server.invalidate();
            c.until_recovered().await
        }
        Plan::ToolsChanged => {
            c.echo("before").await?;
            server.invalidate();
            c.until_recovered().await?;
            // The model still knows the tool the new session no longer lists.
            c.call(DROPPED_TOOL, json!({"a": 2, "b": 3}), DROPPED_CALL)
                .await?;
            c.echo("after").await.map(|_| ())
        }
        Plan::Relist => {
            c.echo("before").await?;
            server.invalidate();
            c.until_recovered().await?;
            // The new session's tool list is held back: judge once it was answered.
            witnessed_entry(server, |w| {
                w.iter()
                    .filter(|e| e.rpc_method.as_deref() == Some("tools/list") && e.status == 200)
                    .count()
                    >= 2
            })
            .await;
            Ok(())
        }
        Plan::Idle => {
            c.echo("before").await?;
            tokio::time::sleep(IDLE_FOR).await;
            c.until_recovered().await
        }
        Plan::Restart => {
            c.echo("before").await?;
            let generation = server.generation();
            server.restart();
            listening(server, generation + 1).await;
            c.until_recovered().await
        }
        Plan::Concurrent => {
            c.echo("before").await?;
            server.hold_calls(CONCURRENT_CALLS, CONCURRENT_RAN_BEFORE_LOSS);
            let batch = c.at_once(CONCURRENT_CALLS, "at once");
            // More calls once the calls that ran before the loss have had their
            // answers, while the new session is still starting.
            let late = async {
                witnessed(server, |n| n.starts_with("concurrent loss")).await;
                tokio::time::sleep(RAN_BEFORE_LOSS_DELAY + Duration::from_millis(50)).await;
                c.at_once(CONCURRENT_LATE_CALLS, "late").await
            };
            let (batch, late) = tokio::join!(batch, late);
            let oks: Vec<bool> = batch?.into_iter().chain(late?).collect();
            if !oks.iter().all(|ok| *ok) {
                c.until_recovered().await?;
            }
            if server.announces_tools_changed() {
                // One more call, the late answers out: its answer announces a changed tool list.
                c.echo("after late answers").await?;
                witnessed_entry(server, |w| relisted_after_announcement(w) != Some(false)).await;
            }
            Ok(())
        }
        Plan::Cut => {
            c.echo("before").await?;
            let generation = server.generation();
            c.call("slow", json!({"text": "cut", "ms": 5000}), "slow")
                .await?;
            listening(server, generation + 1).await;
            c.until_recovered().await
        }
        Plan::Timeout => {
            c.echo("before").await?;
            let ms = SLOW_TIMEOUT_TOOL.as_millis() as u64;
            let within = Within {
                timeout: Some(SLOW_TIMEOUT_CALL),
                abort: None,
            };
            c.call_within("slow", json!({"text": "slow", "ms": ms}), "slow", within)
                .await?;
            tokio::time::sleep(Policy::Short.recycle_window()).await;
            c.echo("after").await.map(|_| ())
        }
        Plan::Ordinary => {
            c.echo("before").await?;
            for kind in ["http500", "http400", "jsonrpc", "tool"] {
                c.call("fail", json!({"kind": kind}), &format!("fail:{kind}"))
                    .await?;
            }
            tokio::time::sleep(Policy::Short.recycle_window()).await;
            c.call("add", json!({"a": 2, "b": 3}), "add").await?;
            c.echo("after").await.map(|_| ())
        }
        Plan::Settle => {
            c.echo("before").await?;
            let get_404 = |server: &FakeServer| {
                server
                    .witness()
                    .iter()
                    .any(|e| e.http_method == "GET" && e.status == 404)
            };
            let until = Instant::now() + Duration::from_secs(5);
            while !get_404(server) && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Policy::Short.recycle_window()).await;
            c.echo("after").await.map(|_| ())
        }
        Plan::Forgetful => {
            for i in 0..FORGETFUL_CALLS {
                c.echo(&format!("again {i}")).await?;
            }
            Ok(())
        }
        Plan::RefusedOnce => {
            c.echo("before").await?;
            server.invalidate();
            c.call("echo", json!({"text": "refused"}), REFUSED_CALL)
                .await?;
            c.until_recovered().await
        }
        Plan::Reload => reload(server, c).await,
        Plan::TokenRefused => {
            c.echo("before").await?;
            c.call(
                "fail",
                json!({"kind": "http401token"}),
                crate::verify::scenario::auth::TOKEN_REFUSED_CALL,
            )
            .await?;
            c.echo("after").await.map(|_| ())
        }
        Plan::StreamLoss => {
            c.echo("before").await?;
            stream_loss(server).await;
            c.until_recovered().await
        }
        Plan::AbortWaiting | Plan::DeadlineWaiting | Plan::DeadlineResend => {
            let (tool, args, within, held_back) = probe(plan);
            c.echo("before").await?;
            server.invalidate();
            c.call_within(tool, args, "probe", within).await?;
            // The calls after the probe wait for the held-back new session too.
            c.until_recovered_after(held_back).await?;
            if plan == Plan::DeadlineResend {
                // The repeat's fate is judged: its request closed, or the slow tool answered.
                let slow = DEADLINE_RESEND_TOOL.as_millis() as u64;
                witnessed_entry(server, |w| {
                    w.iter().any(|e| {
                        e.note
                            .as_deref()
                            .is_some_and(|n| n.starts_with(UNANSWERED_NOTE))
                            || (e.executed == Some(true)
                                && e.answered_ms.saturating_sub(e.t_ms) >= slow)
                    })
                })
                .await;
            }
            Ok(())
        }
        // Left out by every driver that uses these steps (each says why): never run here.
        Plan::Sdk2 | Plan::GiveUp | Plan::LossesApart => Ok(()),
    }
}

/// The probe call of a deadline or abort plan, the DSH plugin harness's
/// (harness.rs `plan_knobs`): its tool and arguments, its caller's bounds, and
/// how long the server holds the new session back.
fn probe(plan: Plan) -> (&'static str, Value, Within, Duration) {
    let echo = json!({"text": "probe"});
    match plan {
        Plan::AbortWaiting => (
            "echo",
            echo,
            Within {
                timeout: Some(Policy::Short.call_timeout()),
                abort: Some(ABORT_AFTER),
            },
            ABORT_REINIT_DELAY,
        ),
        Plan::DeadlineWaiting => (
            "echo",
            echo,
            Within {
                timeout: Some(DEADLINE_CALL_TIMEOUT),
                abort: Some(DEADLINE_SIGNAL),
            },
            DEADLINE_WAIT_REINIT_DELAY,
        ),
        _ => (
            "slow",
            json!({"text": "probe", "ms": DEADLINE_RESEND_TOOL.as_millis() as u64}),
            Within {
                timeout: Some(DEADLINE_RESEND_CALL_TIMEOUT),
                abort: Some(DEADLINE_SIGNAL),
            },
            DEADLINE_RESEND_REINIT_DELAY,
        ),
    }
}

/// Wait until the server listens again as generation `g`, bounded.
async fn listening(server: &FakeServer, g: u64) {
    let until = Instant::now() + EVENT_LIMIT;
    while server.generation() < g && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Wait until the witness log has a server note `matches` accepts, bounded.
async fn witnessed(server: &FakeServer, matches: impl Fn(&str) -> bool) {
    witnessed_entry(server, |w| {
        w.iter().any(|e| e.note.as_deref().is_some_and(&matches))
    })
    .await
}

/// Wait until the witness log as a whole is what `matches` looks for, bounded.
async fn witnessed_entry(
    server: &FakeServer,
    matches: impl Fn(&[crate::verify::fake_server::WitnessEntry]) -> bool,
) {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if matches(&server.witness()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The `get-stream-loss` plan between its calls: wait until the client's GET
/// stream is open, drop the session (the server cuts the stream), and wait,
/// making no call, until a GET stream opens after the drop (only a new
/// session's can: a GET on the dropped one is answered as lost), bounded.
async fn stream_loss(server: &FakeServer) {
    let opened =
        |e: &crate::verify::fake_server::WitnessEntry| e.http_method == "GET" && e.status == 200;
    witnessed_entry(server, |w| w.iter().any(opened)).await;
    server.invalidate();
    let until = Instant::now() + GET_REOPEN_WAIT;
    while Instant::now() < until {
        let w = server.witness();
        let dropped = w.iter().rposition(|e| {
            e.http_method == "CONTROL" && e.note.as_deref().is_some_and(|n| n.contains("dropped"))
        });
        if dropped.is_some_and(|d| w[d..].iter().any(opened)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The `reload` plan: call, start the server's reload cycle, and call once
/// after each time it forgets every session; stop at the first call that
/// failed (the verdict is known). How long each call took is judged after.
async fn reload(server: &FakeServer, c: &impl Caller) -> Result<(), Stop> {
    c.echo("before").await?;
    let times = server.reloads_planned();
    server.start_reloads();
    for n in 1..=times {
        let until = Instant::now() + EVENT_LIMIT + server.reload_every();
        while server.reloads() < n && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if server.reloads() < n {
            return Ok(());
        }
        if !c.echo(&format!("after reload {n}")).await? {
            return Ok(());
        }
    }
    Ok(())
}
