//! `verify` for gemini-cli: the real installed CLI, run headless once per
//! scenario (`node bundle/gemini.js -p … --yolo -o json`), with mcpatch as its
//! model: the fake Gemini API (model.rs) asks for each tool call of the
//! scenario's plan (steps.rs, shared with the bridge host) as a
//! `functionCall`, the CLI calls the fake MCP server as it would any
//! Streamable HTTP server, and the next request carries what the CLI made of
//! the call. The verdicts are the same judges' as for the DSH plugin, from the
//! server's witness log and those answers. No real model, loopback only.

mod cli;
mod model;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{ClientDriver, Job, LeftOut, Verifying};
use crate::classify::{Install, State};
use crate::error::{Error, Result};
use crate::node::Node;
use crate::registry::{FileFind, PatchSpec};
use crate::verify::drivers::mirror;
use crate::verify::drivers::steps::{self, Stop};
use crate::verify::fake_server::late::{late_call_args, LATE_LOST_TOOL, LATE_MARK_B};
use crate::verify::fake_server::{FakeServer, ServerBehaviour, WitnessEntry};
use crate::verify::render::shown_verdict;
use crate::verify::report::install_note;
use crate::verify::report::{Expectations, InstallResult, ScenarioResult};
use crate::verify::scenario::Policy;
use crate::verify::scenario::{self, Evidence, HarnessCall, Judgement, Plan, Scenario};
use crate::verify::target::Target;
use crate::verify::target::COPY_PREFIX;
use model::{AskedCall, FakeModel};

/// How long the CLI may take to start and send its first request (it loads
/// a bundle of some 100 MB and lists the fake server's tools first).
const STARTUP: Duration = Duration::from_secs(60);
/// How long one turn of calls may take, from the plan asking for it to the
/// request carrying its results: the CLI's own limit per MCP request
/// ([`MCP_TIMEOUT`]) a few times over (a call may meet a lost session, start a
/// new one, list the tools and be sent again), plus the model's round trip.
const TURN_LIMIT: Duration = Duration::from_secs(20);
/// The CLI's limit per MCP request (`timeout` of the server's settings).
const MCP_TIMEOUT: Duration = Duration::from_millis(3000);
/// How long the CLI may take to exit once the model said its last words.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// Starts of one scenario's CLI while it ends before it asks the model
/// anything: on a busy machine gemini-cli now and then does, whatever the
/// file; a file that breaks its start does so every time, and is BROKEN.
const STARTS: usize = 3;
/// Lines of the CLI's stderr a BROKEN note quotes.
const NOTE_STDERR_LINES: usize = 5;
/// Scenarios run at once by default (each is a CLI of its own, some 200 MB).
const DEFAULT_JOBS: usize = 3;
/// How much shorter than the plan's idle pause ([`scenario::IDLE_FOR`]) the
/// fake server's idle limit is for gemini-cli (see [`behaviour`]).
const IDLE_MARGIN: Duration = Duration::from_millis(100);

/// Why a scenario does not run against gemini-cli, if it does not.
pub fn left_out_why(s: &Scenario) -> Option<&'static str> {
    const POLICY: &str = "its verdict measures the DSH plugin's reconnect policy (backoff and attempts per outage), which gemini-cli does not share";
    const NO_AUTH: &str = "its server is OAuth-protected: verify drives gemini-cli through its CLI, and cannot give its MCP client an authProvider that ends the sign-in";
    if s.needs_auth_provider() {
        return Some(NO_AUTH);
    }
    if s.plan != Plan::Reload && Policy::for_scenario(s.name) != Policy::Short {
        return Some(POLICY);
    }
    match s.plan {
        Plan::Invalidate
        | Plan::Idle
        | Plan::Restart
        | Plan::Ordinary
        | Plan::Settle
        | Plan::Concurrent
        | Plan::Cut
        | Plan::Timeout
        | Plan::Relist
        // Judged per call: at most one new session per call that meets a loss.
        // Judged on the server's witness log: the GET stream reopened on a new session.
        | Plan::StreamLoss
        | Plan::Forgetful
        // The model still knows a tool the new session no longer lists.
        | Plan::ToolsChanged
        | Plan::Reload => None,
        Plan::Sdk2 => Some("it reshapes the errors of the DSH plugin's bundled SDK inside the plugin harness; gemini-cli bundles its own SDK, whose error shape each release's own run shows"),
        Plan::AbortWaiting | Plan::DeadlineWaiting | Plan::DeadlineResend => Some("its abort signal or deadline is an argument of the DSH plugin's call API (toolCallTimeoutMs, AbortSignal), which a model cannot pass to gemini-cli"),
        Plan::GiveUp | Plan::LossesApart => Some(POLICY),
        Plan::TokenRefused => Some(NO_AUTH),
        // The new session gets no answer at all: the server's words are the lost session's.
        Plan::RefusedOnce if s.behaviour.refusal_delay.is_some() => None,
        Plan::RefusedOnce => Some("the patched gemini-cli recovers after a refused new session, but the failed call carries the lost session's words, not the refusal's (MUTE): its patch does not pass the refusal on yet"),
    }
}

/// The fake server's behaviour in `s`'s run. An idle limit is raised to just
/// under the plan's idle pause: from listing the tools at its start to the
/// model's first call, gemini-cli may take longer than the shared limit
/// ([`scenario::IDLE_LIMIT`]) on a loaded machine, and the server would prune
/// the session before the plan's first call; the session was then lost twice,
/// the second time on purpose, and the recovery judged STUCK for requests on
/// the first new session. Any limit under the pause still prunes the session
/// the plan leaves idle.
fn behaviour(s: &Scenario) -> ServerBehaviour {
    let mut b = s.behaviour.clone();
    if b.idle_limit.is_some() {
        b.idle_limit = Some(scenario::IDLE_FOR.saturating_sub(IDLE_MARGIN));
        // On a machine loaded past its cores the gap runs past even that
        // (the session was pruned before the first call, seen STUCK with 3
        // handshakes on 0.61.0 and 0.45.2 patched): a session is idle only
        // once it has made a call.
        b.idle_only_after_a_call = true;
    }
    b
}

/// The model's side of one run: each call is a turn of the conversation.
struct ModelCaller<'a> {
    model: &'a FakeModel,
    declared: Vec<String>,
    ended: tokio::sync::watch::Receiver<bool>,
    calls: Mutex<Vec<HarnessCall>>,
    next: AtomicU32,
    /// The server answers a lost call of [`LATE_LOST_TOOL`] late
    /// (`late-answers`): the first batch of calls at once ends with one,
    /// after a call of that tool whose loss is answered at once.
    late_tool: bool,
    /// A batch of calls at once was asked already.
    batched: std::sync::atomic::AtomicBool,
}

impl ModelCaller<'_> {
    /// One turn: the model asks for `asked` (tool, args, label) at once.
    async fn turn(&self, asked: Vec<(&str, Value, String)>) -> Result<Vec<bool>, Stop> {
        let mut calls = Vec::with_capacity(asked.len());
        let mut labels = Vec::with_capacity(asked.len());
        for (tool, mut args, label) in asked {
            let id = format!("c{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
            args["call_id"] = json!(id);
            if model::declared_name(&self.declared, tool).is_none() {
                return Err(Stop::Handshake(format!(
                    "gemini-cli declared no tool `{tool}` of the fake server to the model (it declared: {})",
                    crate::verify::render::clip(&self.declared.join(", "), 300)
                )));
            }
            labels.push((id.clone(), label));
            calls.push(AskedCall {
                id,
                tool: tool.to_string(),
                args,
            });
        }
        let receivers = self.model.ask(calls);
        let started = Instant::now();
        let mut oks = Vec::with_capacity(receivers.len());
        let mut stop = None;
        for ((call_id, label), rx) in labels.into_iter().zip(receivers) {
            let mut ended = self.ended.clone();
            let left = TURN_LIMIT.saturating_sub(started.elapsed());
            let answer = tokio::select! {
                a = rx => a.ok(),
                _ = tokio::time::sleep(left) => None,
                _ = ended.wait_for(|e| *e) => None,
            };
            let (ok, error, ms) = match answer {
                Some(a) => (a.ok, a.error, a.ms),
                None if *self.ended.borrow() => {
                    let what = format!("gemini-cli exited while call {call_id} ({label}) waited");
                    stop = stop.or(Some(Stop::Closed(what.clone())));
                    (false, Some(what), started.elapsed().as_millis() as u64)
                }
                None => {
                    let what = format!(
                        "call {call_id} ({label}) got no answer within {} s",
                        TURN_LIMIT.as_secs()
                    );
                    stop = stop.or(Some(Stop::Hang(what.clone())));
                    (false, Some(what), started.elapsed().as_millis() as u64)
                }
            };
            if let Ok(mut c) = self.calls.lock() {
                c.push(HarnessCall {
                    call_id,
                    name: label,
                    ok,
                    error,
                    ms,
                });
            }
            oks.push(ok);
        }
        match stop {
            Some(s) => Err(s),
            None => Ok(oks),
        }
    }
}

impl steps::Caller for ModelCaller<'_> {
    async fn call(&self, name: &str, args: Value, label: &str) -> Result<bool, Stop> {
        let oks = self.turn(vec![(name, args, label.to_string())]).await?;
        Ok(oks.first().copied().unwrap_or(false))
    }

    async fn at_once(&self, n: usize, prefix: &str) -> Result<Vec<bool>, Stop> {
        let first_batch = !self.batched.swap(true, Ordering::SeqCst);
        let asked = (0..n)
            .map(|i| {
                if self.late_tool && first_batch && i + 2 >= n {
                    // Asked last, after the calls that run before the loss: a
                    // call of the late tool whose loss is answered at once (its
                    // recovery moves the tool's adapter, one per tool and shared
                    // by its calls, to the new session), then the one marked late.
                    let args = if i + 1 == n {
                        late_call_args(i)
                    } else {
                        json!({"a": i, "b": LATE_MARK_B + 1})
                    };
                    return (LATE_LOST_TOOL, args, LATE_LOST_TOOL.to_string());
                }
                (
                    "echo",
                    json!({"text": format!("{prefix} {i}")}),
                    "echo".to_string(),
                )
            })
            .collect();
        self.turn(asked).await
    }
}

/// What one scenario's run saw.
struct CliRun {
    calls: Vec<HarnessCall>,
    stop: Option<Stop>,
    /// The CLI ended before it asked the model anything.
    ended_before_start: bool,
    exit: Option<String>,
    stderr_tail: String,
    stray: Vec<String>,
}

/// The CLI's limit per MCP request in `s`'s run.
fn mcp_timeout(s: &Scenario) -> Duration {
    match s.plan {
        Plan::Timeout => scenario::SLOW_TIMEOUT_CALL,
        _ if s.behaviour.refusal_delay.is_some() => scenario::REINIT_TIMEOUT_CALL,
        _ => MCP_TIMEOUT,
    }
}

/// Run one scenario: the fake server, the fake model, the CLI at `entry`
/// (node's compiled code kept in `compile_cache`).
async fn run_one(
    node: &Node,
    entry: &std::path::Path,
    s: &Scenario,
    compile_cache: &std::sync::Arc<crate::stage::Scratch>,
) -> Result<(CliRun, FakeServer)> {
    let server = FakeServer::start(behaviour(s), 0).await?;
    let model = FakeModel::start().await?;
    let cli = cli::Cli::start(
        node,
        entry,
        &server.url(),
        mcp_timeout(s),
        &model.url(),
        compile_cache.clone(),
    )?;
    let mut ended = cli.ended.clone();
    let started = tokio::select! {
        d = model.declared() => Ok(d),
        _ = ended.wait_for(|e| *e) => Err(Stop::Closed("gemini-cli exited before it asked the model anything".into())),
        _ = tokio::time::sleep(STARTUP) => Err(Stop::Hang(format!("gemini-cli sent the model nothing within {} s of its start", STARTUP.as_secs()))),
    };
    let ended_before_start = matches!(started, Err(Stop::Closed(_)));
    let (calls, stop) = match started {
        Err(stop) => (Vec::new(), Some(stop)),
        Ok(declared) => {
            let caller = ModelCaller {
                model: &model,
                declared,
                ended: cli.ended.clone(),
                calls: Mutex::new(Vec::new()),
                next: AtomicU32::new(0),
                late_tool: s.behaviour.late_old_answers.is_some(),
                batched: std::sync::atomic::AtomicBool::new(false),
            };
            let result = steps::plan(s.plan, &server, &caller).await;
            let calls = caller.calls.into_inner().unwrap_or_else(|p| p.into_inner());
            (calls, result.err())
        }
    };
    model.finish();
    let ended_itself = matches!(stop, Some(Stop::Closed(_)));
    let stderr = cli.stderr();
    let (status, _stdout) = cli.finish(EXIT_GRACE).await;
    let exit = ended_itself
        .then(|| status.map_or_else(|| "its stdout ended".to_string(), |s| s.to_string()));
    let stderr_tail = stderr
        .lock()
        .map(|t| t.last(NOTE_STDERR_LINES))
        .unwrap_or_default();
    Ok((
        CliRun {
            calls,
            stop,
            ended_before_start,
            exit,
            stderr_tail,
            stray: model.stray(),
        },
        server,
    ))
}

/// The verdict of a run that stopped early: HANG for a CLI that stopped
/// answering, BROKEN for one that ended or never got going.
fn stopped(run: &CliRun, witness: &[WitnessEntry]) -> Judgement {
    let tail = if run.stderr_tail.is_empty() {
        "its stderr was empty".to_string()
    } else {
        format!(
            "its stderr ended: {}",
            crate::output::clean_lines(&run.stderr_tail).replace('\n', " | ")
        )
    };
    let stray = if run.stray.is_empty() {
        String::new()
    } else {
        format!(
            "; requests the fake model could not place: {}",
            run.stray.join(", ")
        )
    };
    let (verdict, note) = match run.stop.as_ref() {
        Some(Stop::Hang(what)) => ("HANG", format!("{what}; gemini-cli was still running")),
        Some(Stop::Closed(what)) => {
            let how = run
                .exit
                .as_ref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            let starts = if run.ended_before_start {
                format!(", each of {STARTS} times it was started")
            } else {
                String::new()
            };
            ("BROKEN", format!("{what}{how}{starts}; {tail}{stray}"))
        }
        Some(Stop::Handshake(what)) => ("BROKEN", format!("{what}; {tail}{stray}")),
        None => ("BROKEN", "the run ended without a verdict".into()),
    };
    Judgement {
        verdict,
        ok: false,
        recovery_ms: None,
        trigger_ms: None,
        failed_calls: run.calls.iter().filter(|c| !c.ok).count(),
        initialize_count: witness
            .iter()
            .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 200)
            .count(),
        trigger_error: None,
        note,
        late_only: false,
    }
}

/// The CLI's entry file in `install` (the file it is found from).
fn entry_of(spec: &PatchSpec, install: &Install) -> Result<std::path::PathBuf> {
    match &spec.find {
        FileFind::Reachable { from, .. } => Ok(install.path.join(from)),
        _ => Err(Error::NoVerifyDriver {
            target: spec.target,
        }),
    }
}

/// gemini-cli's real CLI, run headless once per scenario with mcpatch as its model.
pub(crate) struct HeadlessCli;

impl ClientDriver for HeadlessCli {
    fn verify<'a>(&'a self, job: Job<'a>) -> Verifying<'a> {
        Box::pin(verify_install(
            job.spec,
            job.node,
            job.install,
            job.target,
            job.scenarios,
            job.opts,
            job.progress,
        ))
    }

    /// The scenarios that close gemini-cli's patch catalogue (a late answer of
    /// the replaced session, a second loss, a cut that keeps the session, a new
    /// session unanswered, a tool the new session no longer lists).
    fn default_extras(&self) -> Vec<Scenario> {
        scenario::for_driver_default()
    }

    fn no_exploration(&self) -> Option<&'static str> {
        Some("its calls are turns of the model mcpatch plays, and the CLI asks for the next turn only once every call of the last one has ended, so no call can start while another runs, as the plans' calls that go on need; each plan (and each shrunk one) would also start a CLI of its own, some 200 MB")
    }
}

/// Verify one install of gemini-cli: each scenario gemini-cli can be put
/// through, on the installed file or (a backup, a patched copy) on a copy
/// of its bundle folder with that file in place.
async fn verify_install(
    spec: &PatchSpec,
    node: &Node,
    install: &Install,
    target: &Target,
    scenarios: &[Scenario],
    opts: &crate::verify::VerifyOptions,
    progress: bool,
) -> Result<InstallResult> {
    let entry = entry_of(spec, install)?;
    let mirror = if target.load == install.file {
        None
    } else {
        Some(mirror::build(
            &entry,
            &install.file,
            &target.load,
            COPY_PREFIX,
        )?)
    };
    // Removed when dropped, a signal included: verify's own listener turns
    // SIGINT, SIGTERM and SIGHUP into an error that unwinds through here.
    let entry = mirror.as_ref().map_or(entry, |m| m.entry.clone());
    let expectations = Expectations::of(target.is_current_patch(), opts.strict);
    let seamless = expectations.seamless();
    let chosen: Vec<&Scenario> = scenarios
        .iter()
        .filter(|s| left_out_why(s).is_none())
        .collect();
    let left_out: Vec<LeftOut> = scenarios
        .iter()
        .filter_map(|s| {
            left_out_why(s).map(|why| LeftOut {
                name: s.name.to_string(),
                why,
            })
        })
        .collect();
    if chosen.is_empty() {
        return Err(Error::NothingToRunFor {
            target: spec.target,
            left_out: left_out
                .iter()
                .map(|l| format!("{}: {}", l.name, l.why))
                .collect(),
        });
    }
    let total = chosen.len();
    let jobs = opts.jobs.unwrap_or(DEFAULT_JOBS).max(1);
    let started = Instant::now();
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let judge_one = |s: &Scenario, run: CliRun, server: FakeServer| {
        let expect = s.expectation(seamless);
        let witness = server.witness();
        let j = if run.stop.is_some() {
            stopped(&run, &witness)
        } else {
            let dropped = server.dropped_sessions();
            let counts = server.call_counts();
            scenario::judge_with(
                s,
                expect,
                &Evidence {
                    witness: &witness,
                    dropped: &dropped,
                    counts: &counts,
                    calls: &run.calls,
                    policy: Policy::Short,
                    seamless,
                    // One new session per call that meets a loss, started at once.
                    per_call_recovery: true,
                },
                // gemini-cli keeps a tool list: a new session must list the tools again.
                true,
            )
        };
        let n = finished.fetch_add(1, Ordering::SeqCst) + 1;
        if progress {
            let shown = shown_verdict(crate::color::stderr(), &j, expect);
            crate::errln!(
                "[{n}/{total}] {}: {shown} at {:.1} s",
                s.name,
                started.elapsed().as_secs_f64()
            );
        }
        ScenarioResult {
            build: None,
            name: s.name,
            policy: "cli",
            expected: expect,
            judgement: j,
            node_version: node.version.clone(),
        }
    };
    // The CLI's compiled code, shared by this install's runs; each CLI holds
    // it, so it is removed once the last CLI is gone (an interrupt included).
    let compile_cache = std::sync::Arc::new(crate::stage::scratch_dir("mcpatch-gemini-code-")?);
    // At most `jobs` CLIs at once, each scenario judged as soon as it ends.
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(jobs));
    let mut set = tokio::task::JoinSet::new();
    for (i, s) in chosen.iter().enumerate() {
        let (node, entry, s, slots) = (node.clone(), entry.clone(), (*s).clone(), slots.clone());
        let cache = compile_cache.clone();
        set.spawn(async move {
            let _slot = slots.acquire_owned().await;
            let mut run = run_one(&node, &entry, &s, &cache).await;
            for _ in 1..STARTS {
                match &run {
                    Ok((r, _)) if r.ended_before_start => {
                        run = run_one(&node, &entry, &s, &cache).await
                    }
                    _ => break,
                }
            }
            (i, run)
        });
    }
    let mut results: Vec<Option<ScenarioResult>> = vec![None; total];
    while let Some(done) = set.join_next().await {
        let (i, run) = done.map_err(|e| Error::Harness {
            path: install.file.clone(),
            detail: format!("a scenario's run ended abnormally: {e}"),
        })?;
        let (run, server) = run?;
        results[i] = Some(judge_one(chosen[i], run, server));
    }
    let results: Vec<ScenarioResult> = results.into_iter().flatten().collect();
    let mut result =
        InstallResult::checked(install, target, node.version.clone(), expectations, results);
    result.note = install_note(target, result.overall, expectations).or_else(|| {
        (install.state == State::Affected).then(|| "not patched: run `mcpatch apply`".into())
    });
    result.left_out = left_out;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_dsh_plugin_api_and_policy_scenarios_are_left_out_for_gemini_cli() {
        let run: Vec<String> = scenario::all()
            .iter()
            .filter(|s| left_out_why(s).is_none())
            .map(|s| s.name.to_string())
            .collect();
        assert_eq!(
            run,
            [
                "expired-404",
                "expired-400",
                "expired-401",
                "idle-timeout",
                "restart",
                "restart-persisted",
                "ordinary-errors",
                "sse-404",
                "strict-reinit",
                "concurrent-loss",
                "call-during-renewal",
                "forgetful",
                "cut-mid-call",
                "slow-timeout",
                "slow-relist",
                "reload",
                "reload-5s",
                "get-stream-loss",
                "late-answers",
                "lost-again",
                "cut-kept",
                "reinit-timeout",
                "tools-changed",
            ]
        );
        // The per-request limit is the slow scenario's own only there.
        for s in scenario::all() {
            let want = if s.plan == Plan::Timeout {
                scenario::SLOW_TIMEOUT_CALL
            } else if s.name == scenario::ScenarioName::ReinitTimeout {
                scenario::REINIT_TIMEOUT_CALL
            } else {
                MCP_TIMEOUT
            };
            assert_eq!(mcp_timeout(&s), want, "{}", s.name);
        }
    }

    #[test]
    fn the_idle_limit_gives_the_cli_time_to_start_and_still_prunes_the_idled_session() {
        let mut idle = 0;
        for s in scenario::all() {
            match (s.behaviour.idle_limit, behaviour(&s).idle_limit) {
                (None, None) => {}
                (Some(shared), Some(ours)) => {
                    idle += 1;
                    assert!(behaviour(&s).idle_only_after_a_call, "{}", s.name);
                    assert!(ours > shared, "{}: {ours:?} <= {shared:?}", s.name);
                    assert!(
                        ours < scenario::IDLE_FOR,
                        "{}: {ours:?} does not prune a session idle for {:?}",
                        s.name,
                        scenario::IDLE_FOR
                    );
                }
                (shared, ours) => panic!("{}: idle limit {shared:?} became {ours:?}", s.name),
            }
        }
        assert_eq!(idle, 1, "one scenario has an idle limit");
    }
}
