//! Runs the bundled JS harness with node against one target file: one node
//! process loads the client once and drives every scenario run at once, each
//! against its own fake server; this side reads the JSON lines it reports and
//! hands each run over as soon as it is done.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::error::{Error, Result};
use crate::node::Node;
use crate::verify::fake_server::reload::ReloadCycle;
use crate::verify::fake_server::RAN_BEFORE_LOSS_DELAY;
use crate::verify::scenario::get_stream::GET_REOPEN_WAIT;
use crate::verify::scenario::policy::CALL_TIMEOUT;
use crate::verify::scenario::reload;
use crate::verify::scenario::{
    HarnessCall, Plan, Policy, ABORT_AFTER, ABORT_REINIT_DELAY, CONCURRENT_CALLS,
    CONCURRENT_LATE_CALLS, CONCURRENT_RAN_BEFORE_LOSS, DEADLINE_CALL_TIMEOUT,
    DEADLINE_RESEND_CALL_TIMEOUT, DEADLINE_RESEND_REINIT_DELAY, DEADLINE_RESEND_TOOL,
    DEADLINE_SIGNAL, DEADLINE_WAIT_REINIT_DELAY, FORGETFUL_CALLS, GIVE_UP_CALL_TIMEOUT, IDLE_FOR,
    LAST_CALL, LOSSES_APART, LOSSES_APART_FAIL, LOSSES_APART_HEALTHY, NEVER_SETTLED, OUTAGE_CALL,
    SLOW_TIMEOUT_CALL, SLOW_TIMEOUT_TOOL,
};

/// Words of the patched plugin's warning that a lost session is being
/// replaced (one per loss: the explored runs' log rule counts them).
pub const LOSS_LOG_WORDS: &str = "with a fresh session";

/// The harness source, bundled in the binary.
pub const HARNESS_JS: &str = include_str!("harness.mjs");

/// The reconnect configuration the harness hands the DSH plugin (`null`: the package's own).
fn policy_config(policy: Policy) -> Value {
    match policy {
        Policy::Short => json!({"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 5}),
        Policy::Brief => json!({"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 2}),
        Policy::Long => json!({"initialDelayMs": 5000, "maxDelayMs": 30000, "maxAttempts": 3}),
        Policy::Disabled => json!({"enabled": false}),
        Policy::Default | Policy::Package => Value::Null,
    }
}

/// A plan's own call timeout and probe call, as the harness gets them.
fn plan_knobs(plan: Plan) -> Value {
    let ms = |d: Duration| d.as_millis() as u64;
    match plan {
        Plan::Timeout => json!({
            "toolCallTimeoutMs": ms(SLOW_TIMEOUT_CALL),
            "slowMs": ms(SLOW_TIMEOUT_TOOL),
        }),
        // The calls after the probe wait for the held-back new session too.
        Plan::AbortWaiting => json!({
            "probe": {"tool": "echo", "args": {"text": "probe"}, "signalMs": ms(ABORT_AFTER)},
            "pollExtraMs": ms(ABORT_REINIT_DELAY),
        }),
        Plan::DeadlineWaiting => json!({
            "toolCallTimeoutMs": ms(DEADLINE_CALL_TIMEOUT),
            "probe": {"tool": "echo", "args": {"text": "probe"}, "signalMs": ms(DEADLINE_SIGNAL)},
            "pollExtraMs": ms(DEADLINE_WAIT_REINIT_DELAY),
        }),
        Plan::DeadlineResend => json!({
            "toolCallTimeoutMs": ms(DEADLINE_RESEND_CALL_TIMEOUT),
            "probe": {"tool": "slow", "args": {"text": "probe", "ms": ms(DEADLINE_RESEND_TOOL)}, "signalMs": ms(DEADLINE_SIGNAL)},
            "pollExtraMs": ms(DEADLINE_RESEND_REINIT_DELAY),
        }),
        // `attempts`: the refused initializes to wait for, the run's policy's (RunSpec::knobs).
        Plan::GiveUp => json!({
            "toolCallTimeoutMs": ms(GIVE_UP_CALL_TIMEOUT),
            "signalMs": ms(GIVE_UP_CALL_TIMEOUT),
        }),
        Plan::LossesApart => json!({
            "losses": LOSSES_APART,
            "healthyMs": ms(LOSSES_APART_HEALTHY),
            "failKind": LOSSES_APART_FAIL,
            "outageLabel": OUTAGE_CALL,
            "lastLabel": LAST_CALL,
        }),
        Plan::Sdk2 => json!({"sdk2": true}),
        Plan::StreamLoss => json!({"reopenWaitMs": ms(GET_REOPEN_WAIT)}),
        _ => json!({}),
    }
}

/// Node's exit code when the event loop empties with a top-level await pending:
/// the harness waits on a promise of the client that will never settle.
const UNSETTLED_EXIT: i32 = 13;

/// How long past its own timeout the harness waits for a call before it reports
/// it as never settled.
const SETTLE_GRACE: Duration = Duration::from_millis(3000);
/// How much longer than its runs' own bounds the harness may take before it
/// is stopped (every run then BROKEN).
const HARNESS_MARGIN: Duration = Duration::from_secs(60);

/// One run for the harness: a plan, a policy, a fake server.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub plan: Plan,
    pub policy: Policy,
    /// The fake server's MCP endpoint.
    pub url: String,
    /// The server's reload cycle, for the `reload` plan.
    pub reload: Option<ReloadCycle>,
    /// The secret of the fake server's control routes.
    pub control_token: String,
    /// Fields that replace the plan's own in the harness's run (an explored
    /// run: `plan`, its `steps`, its `reconnect` policy); `None` for a scenario.
    pub explored: Option<Value>,
}

impl RunSpec {
    /// How much longer than the other plans this run may last: a reload
    /// cycle, and one call's timeout past it.
    fn extra(&self) -> Duration {
        self.reload.map_or(Duration::ZERO, |c| {
            c.every * c.times + self.policy.call_timeout()
        })
    }

    /// The plan's knobs, with the reload cycle's and the policy's attempts.
    fn knobs(&self) -> Value {
        let mut knobs = plan_knobs(self.plan);
        if self.plan == Plan::GiveUp {
            // Reconnecting stops once this many new sessions were refused (none when disabled).
            knobs["attempts"] = json!(self.policy.max_attempts());
        }
        if let Some(c) = self.reload {
            knobs["reloads"] = json!(c.times);
            knobs["everyMs"] = json!(c.every.as_millis() as u64);
            knobs["callLimitMs"] = json!(reload::CALL_LIMIT.as_millis() as u64);
        }
        knobs
    }
}

/// What the harness reported of one run.
#[derive(Debug, Clone, Default)]
pub struct HarnessRun {
    pub calls: Vec<HarnessCall>,
    pub tools_before: Vec<String>,
    pub tools_after: Vec<String>,
    /// The tools registered at the run's end, each with its description.
    pub tools_described: Vec<(String, String)>,
    pub logs: Vec<String>,
    pub fatal: Option<String>,
    /// Whether the run reached its end.
    pub done: bool,
    /// Calls started and not yet ended: (call id, name, harness ms at the start).
    pub unsettled: Vec<(String, String, u64)>,
    /// HTTP errors the harness handed to the client in the SDK 2.x shape.
    pub reshaped: usize,
    /// Whether the plugin's `apply()` returned (the run's plan started).
    pub ready: bool,
    /// The longest the harness's event loop ran late while this run went on,
    /// past 50 ms (0 if never): how much the machine, or a client blocking the
    /// loop, held every run back.
    pub stalled_ms: u64,
}

impl HarnessRun {
    /// Report the calls that never ended as calls that never settled, when node
    /// stopped (or was stopped) with them pending; false when there were none.
    fn settle_pending(&mut self, now_ms: u64) -> bool {
        if self.unsettled.is_empty() {
            return false;
        }
        for (call_id, name, at) in std::mem::take(&mut self.unsettled) {
            self.calls.push(HarnessCall {
                call_id,
                name,
                ok: false,
                error: Some(NEVER_SETTLED.to_string()),
                ms: now_ms.saturating_sub(at),
            });
        }
        self.done = true;
        true
    }
}

/// What the node process said of itself.
#[derive(Debug, Clone, Default)]
pub struct NodeReport {
    pub version: Option<String>,
    pub shim: bool,
}

/// Run every spec in one node process against `target`, at most `jobs` at once;
/// `on_done(index, run)` gets each run as soon as it ends, in the order they end.
pub async fn run_all(
    node: &Node,
    target: &Path,
    specs: &[RunSpec],
    jobs: usize,
    mut on_done: impl FnMut(usize, HarnessRun),
) -> Result<NodeReport> {
    let dir = crate::stage::scratch_dir("mcpatch-harness-")?;
    let script = dir.write("harness.mjs", HARNESS_JS.as_bytes())?;
    crate::kill_point::reached("harness-written")?;
    let runs: Vec<Value> = specs
        .iter()
        .enumerate()
        .map(|(id, s)| {
            let mut run = json!({
                "id": id,
                "plan": s.plan.as_str(),
                "url": s.url,
                "controlBase": s.url.trim_end_matches("/mcp"),
                "controlToken": s.control_token,
                "reconnect": policy_config(s.policy),
                "deadlineMs": s.policy.deadline().as_millis() as u64,
                "settleMs": s.policy.recycle_window().as_millis() as u64,
                "idleMs": IDLE_FOR.as_millis() as u64,
                "concurrent": CONCURRENT_CALLS,
                "ranBeforeLoss": CONCURRENT_RAN_BEFORE_LOSS,
                "lateCalls": CONCURRENT_LATE_CALLS,
                "ranAnswerDelayMs": RAN_BEFORE_LOSS_DELAY.as_millis() as u64,
                "forgetfulCalls": FORGETFUL_CALLS,
                "callTimeoutMs": s.policy.call_timeout().as_millis() as u64,
                "knobs": s.knobs(),
            });
            if let (Some(run), Some(Value::Object(extra))) = (run.as_object_mut(), &s.explored) {
                run.extend(extra.clone());
            }
            run
        })
        .collect();
    let config = json!({
        "serverName": "fake",
        "pollMs": 25,
        "callTimeoutMs": CALL_TIMEOUT.as_millis() as u64,
        "settleGraceMs": SETTLE_GRACE.as_millis() as u64,
        "neverSettled": NEVER_SETTLED,
        "jobs": jobs.max(1),
        "runs": runs,
    });
    // In a private file, not on the command line every local user can read:
    // it holds the control routes' secrets.
    let config_file = dir.write("config.json", config.to_string().as_bytes())?;
    let mut cmd = tokio::process::Command::new(&node.path);
    // The install's plugin runs in here: the one environment rule (child_env.rs).
    crate::verify::process::env::clear(cmd.as_std_mut(), dir.path());
    let mut child = cmd
        .arg(&script)
        .arg(crate::stage::file_url(target))
        .arg(&config_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| node.unavailable(e.to_string()))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    // Drained as it comes, so a chatty node never blocks on a full pipe; the start is kept.
    let stderr_text = tokio::spawn(async move {
        let mut kept = Vec::new();
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if kept.len() < 64 {
                kept.push(line);
            }
        }
        kept.join("\n")
    });
    let mut lines = BufReader::new(stdout).lines();
    let mut report = NodeReport::default();
    let mut fatal: Option<String> = None;
    let mut pending: HashMap<usize, HarnessRun> = HashMap::new();
    let mut last_t: u64 = 0;
    let mut ended: std::collections::HashSet<usize> = std::collections::HashSet::new();
    // The longest a run can take: a wait per step of its plan, each bounded.
    let per_run = Duration::from_secs(10) + IDLE_FOR + 4 * CALL_TIMEOUT;
    let waves = specs.len().div_ceil(jobs.max(1)) as u32;
    let longest = specs.iter().map(RunSpec::extra).max().unwrap_or_default();
    // A backstop past every run's own deadlines: generous, so that a busy
    // machine (node starved of the CPU) is not judged as a harness that hung.
    let limit = (per_run + longest) * waves.max(1) + HARNESS_MARGIN;
    let collect = async {
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            let list = |k: &str| {
                v.get(k)
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let Some(run) = v.get("run").and_then(Value::as_u64).map(|r| r as usize) else {
                match s("event").as_deref() {
                    Some("node") => {
                        report.version = s("version");
                        report.shim = v.get("shim").and_then(Value::as_bool).unwrap_or(false);
                    }
                    Some("fatal") => fatal = s("error"),
                    _ => {}
                }
                continue;
            };
            // Events after a run's end (logs of its dispose) change nothing.
            if run >= specs.len() || ended.contains(&run) {
                continue;
            }
            let t = v.get("t").and_then(Value::as_u64).unwrap_or(0);
            last_t = last_t.max(t);
            let r = pending.entry(run).or_default();
            match s("event").as_deref() {
                Some("ready") => {
                    r.ready = true;
                    r.tools_before = list("tools")
                }
                Some("tools") => {
                    r.tools_after = list("tools");
                    r.tools_described = described(&v);
                }
                Some("call-start") => r.unsettled.push((
                    s("call_id").unwrap_or_default(),
                    s("name").unwrap_or_default(),
                    t,
                )),
                Some("call") => {
                    let call_id = s("call_id").unwrap_or_default();
                    r.unsettled.retain(|(id, _, _)| *id != call_id);
                    r.calls.push(HarnessCall {
                        call_id,
                        name: s("name").unwrap_or_default(),
                        ok: v.get("ok").and_then(Value::as_bool).unwrap_or(false),
                        error: s("error"),
                        ms: v.get("ms").and_then(Value::as_u64).unwrap_or(0),
                    })
                }
                Some("sdk2") => r.reshaped += 1,
                Some("log") => r.logs.push(format!(
                    "{}: {}",
                    s("level").unwrap_or_default(),
                    s("msg").unwrap_or_default()
                )),
                Some("fatal") | Some("done") => {
                    ended.insert(run);
                    let mut finished = pending.remove(&run).unwrap_or_default();
                    if s("event").as_deref() == Some("fatal") {
                        finished.fatal = s("error");
                    } else {
                        finished.done = true;
                        finished.stalled_ms =
                            v.get("stalled_ms").and_then(Value::as_u64).unwrap_or(0);
                    }
                    on_done(run, finished);
                }
                _ => {}
            }
        }
    };
    let timed_out = tokio::time::timeout(limit, collect).await.is_err();
    let mut unsettled_exit = false;
    let stopped = if timed_out {
        let _ = child.kill().await;
        format!("the harness did not finish within {} s", limit.as_secs())
    } else {
        let status = child.wait().await.map_err(|e| Error::Harness {
            path: target.to_path_buf(),
            detail: e.to_string(),
        })?;
        if let Some(fatal) = fatal {
            return Err(Error::Harness {
                path: target.to_path_buf(),
                detail: fatal,
            });
        }
        if status.success() {
            String::new()
        } else if status.code() == Some(UNSETTLED_EXIT) {
            unsettled_exit = true;
            format!("node exited {UNSETTLED_EXIT}: a promise never settled")
        } else {
            let err = stderr_text.await.unwrap_or_default();
            format!("node exited with {status}: {}", err.trim())
        }
    };
    if !stopped.is_empty() {
        // Node stopped with calls pending (an unsettled promise ends node with
        // exit 13 once nothing else keeps it alive): those runs are reported as
        // their calls that never settled, the others as stopped.
        let left: Vec<usize> = (0..specs.len()).filter(|i| !ended.contains(i)).collect();
        let mut hung = Vec::new();
        for run in &left {
            let mut r = pending.remove(run).unwrap_or_default();
            if !r.settle_pending(last_t) {
                r.fatal = Some(match (unsettled_exit, r.ready) {
                    (true, false) => format!(
                        "the plugin's apply() never settled (node exited {UNSETTLED_EXIT} with it pending)"
                    ),
                    (true, true) => format!(
                        "the run never ended: a promise of the client never settled (node exited {UNSETTLED_EXIT})"
                    ),
                    (false, _) => format!("{stopped} before this run ended"),
                });
            }
            hung.push((*run, r));
        }
        if !unsettled_exit && !hung.iter().any(|(_, r)| r.done) {
            return Err(Error::Harness {
                path: target.to_path_buf(),
                detail: stopped,
            });
        }
        for (run, r) in hung {
            on_done(run, r);
        }
        return Ok(report);
    }
    // Runs that never reported their end (the harness stopped early).
    let mut left: Vec<usize> = pending.keys().copied().collect();
    left.sort();
    for run in left {
        let r = pending.remove(&run).unwrap_or_default();
        on_done(run, r);
    }
    Ok(report)
}

/// The `described` pairs of a `tools` event: `[[name, description], ...]`.
fn described(event: &Value) -> Vec<(String, String)> {
    event
        .get("described")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|pair| {
                    let name = pair.get(0)?.as_str()?;
                    let description = pair.get(1)?.as_str()?;
                    Some((name.to_string(), description.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_pending_when_node_stopped_are_reported_as_never_settled() {
        let mut run = HarnessRun {
            unsettled: vec![("c2".into(), "waiting".into(), 400)],
            ..HarnessRun::default()
        };
        assert!(run.settle_pending(9400));
        assert!(run.done && run.unsettled.is_empty());
        assert_eq!(run.calls.len(), 1);
        let c = &run.calls[0];
        assert_eq!(
            (
                c.call_id.as_str(),
                c.name.as_str(),
                c.ok,
                c.error.as_deref(),
                c.ms
            ),
            ("c2", "waiting", false, Some(NEVER_SETTLED), 9000)
        );
        // Nothing pending: nothing to report, the run is not done.
        let mut run = HarnessRun::default();
        assert!(!run.settle_pending(100));
        assert!(!run.done && run.calls.is_empty());
    }
}
