//! The stdio hosts' part in `verify --explore` (the SDK clients' host
//! scripts, stdio bridges: mcp-remote, `verify --command`): each explored plan
//! starts a host process of its own against a fake server of its own, at most
//! `jobs` at once, and is judged by the invariants alone, for a client that
//! tries one new session per call that meets a loss. A host script that does
//! not pass a call's timeout and abort signal on to its client cannot keep the
//! plans' deadlines: exploration is then left out, saying why. A stdio bridge
//! takes no timeout or abort signal from its caller at all: its plans have no
//! aborts, its calls carry no bounds, and each call's deadline is the host's
//! own ([`drive::CALL_LIMIT`]).

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::drive::{self, Stop};
use super::host::{self, Host};
use super::Launch;
use crate::error::Result;
use crate::verify::explore::plan::{ExplorePlan, Step};
use crate::verify::explore::{self, PlanRunner};
use crate::verify::fake_server::{FakeServer, PROTOCOL_VERSIONS};
use crate::verify::process::{Environment, GroupChild};
use crate::verify::scenario::invariants::{self, Violation};
use crate::verify::scenario::{host_report, HarnessCall};

/// Explored plans through a stdio host started by `launch`.
pub(crate) struct HostPlans<'a> {
    pub launch: Launch<'a>,
    pub environment: &'a Environment,
    /// How long the host may take to answer its first initialize.
    pub startup: Duration,
    /// The client does every handshake itself (see `BridgeOptions::own_handshake`).
    pub own_handshake: bool,
    /// The host passes a call's timeout and abort signal on to its client
    /// (see `BridgeOptions::caller_bounds`); a stdio bridge does not.
    pub caller_bounds: bool,
    pub jobs: usize,
    /// Why exploration was left out, once a host said it cannot run the plans.
    pub left_out: Mutex<Option<&'static str>>,
}

/// What one explored run came to.
enum Explored {
    Judged(Option<Violation>),
    LeftOut(&'static str),
}

impl PlanRunner for HostPlans<'_> {
    fn plan(&self, seed: u64) -> ExplorePlan {
        let plan = ExplorePlan::generate(seed).per_call();
        if self.caller_bounds {
            plan
        } else {
            without_aborts(plan)
        }
    }

    async fn run_plans(&self, plans: &[ExplorePlan]) -> Result<Vec<Option<Violation>>> {
        let gate = Arc::new(Semaphore::new(self.jobs.max(1)));
        let mut set = JoinSet::new();
        for (i, plan) in plans.iter().enumerate() {
            let server = FakeServer::start(plan.behaviour(), 0).await?;
            let (argv, env) = (self.launch)(&server.url());
            let run = OneRun {
                plan: plan.clone(),
                argv,
                env,
                environment: self.environment.clone(),
                startup: self.startup,
                own_handshake: self.own_handshake,
                caller_bounds: self.caller_bounds,
            };
            let gate = gate.clone();
            set.spawn(async move {
                let _turn = gate.acquire_owned().await;
                (i, run.run(server).await)
            });
        }
        let mut out = vec![None; plans.len()];
        while let Some(joined) = set.join_next().await {
            let (i, explored) = match joined {
                Ok(x) => x,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => continue,
            };
            match explored? {
                Explored::Judged(v) => out[i] = v,
                Explored::LeftOut(why) => {
                    if let Ok(mut l) = self.left_out.lock() {
                        *l = Some(why);
                    }
                }
            }
        }
        Ok(out)
    }

    /// A process a plan: a shrinking round starts only `jobs` at a time, and
    /// stops at the first batch with a failure.
    fn shrink_batch(&self) -> usize {
        self.jobs
    }
}

/// One explored run's host, owned by its task.
struct OneRun {
    plan: ExplorePlan,
    argv: Vec<OsString>,
    env: Vec<(String, OsString)>,
    environment: Environment,
    startup: Duration,
    own_handshake: bool,
    caller_bounds: bool,
}

impl OneRun {
    async fn run(self, server: FakeServer) -> Result<Explored> {
        let version = PROTOCOL_VERSIONS[0];
        let (child, stdin, stdout) =
            GroupChild::spawn(&self.argv, "explore", version, &self.environment, &self.env)?;
        let host = Arc::new(Host::new(
            stdin,
            stdout,
            host::relist_for(self.own_handshake),
        ));
        let run = drive::run_explored(
            &self.plan,
            &server,
            host.clone(),
            self.startup,
            version,
            self.caller_bounds,
        )
        .await;
        let stderr = child.stderr.clone();
        drive::finish(&host, child).await;
        if let Some(why) = run.left_out {
            return Ok(Explored::LeftOut(why));
        }
        if let Some(stop) = run.stop {
            let tail = stderr.lock().map(|t| t.last(3)).unwrap_or_default();
            let said = if tail.is_empty() {
                String::new()
            } else {
                format!("; its stderr: {}", crate::output::clean_lines(&tail))
            };
            let broke = match stop {
                // The host's own deadline is the only one a bridge's call has.
                Stop::Hang(what) if !self.caller_bounds => Violation::new(
                    "call-ends",
                    "HANG",
                    format!("{what} (the host's own deadline: a stdio bridge takes none from its caller){said}"),
                ),
                Stop::Hang(what) => {
                    Violation::new("run-ends", "HANG", format!("the run stopped: {what}{said}"))
                }
                Stop::Closed(what) | Stop::Handshake(what) => {
                    Violation::new("run-ends", "BROKEN", format!("the run stopped: {what}{said}"))
                }
            };
            return Ok(Explored::Judged(Some(broke)));
        }
        let reported = match &run.report {
            Some(Ok(report)) => host_report::answers_stay_in_transport(report)
                .map(|v| Violation::new("answers-stay-in-transport", v.verdict, v.note)),
            Some(Err(why)) => Some(Violation::new("host-reports", "BROKEN", why.clone())),
            None => None,
        };
        let broke = judge(&self.plan, &server, &run.calls, self.caller_bounds)
            .or_else(|| {
                self.own_handshake
                    .then(|| invariants::used_before_initialized(&server.witness()))
                    .flatten()
                    .map(|note| Violation::new("initialized-first", "BROKEN", note))
            })
            .or(reported);
        Ok(Explored::Judged(broke))
    }
}

/// The plan for a stdio bridge, which takes no abort signal from its caller:
/// every call of `plan` runs until its answer (or the host's own deadline).
pub(crate) fn without_aborts(mut plan: ExplorePlan) -> ExplorePlan {
    for step in &mut plan.steps {
        if let Step::Call { signal_ms, .. } = step {
            *signal_ms = None;
        }
    }
    plan
}

/// What a run of `plan` broke, judged by the invariants alone (as
/// [`explore::judge`]) on the witness log from the session the host's calls
/// went through (a bridge may open one of its own first, to test the
/// connection), each call's deadline its own (`caller_bounds`) or else the
/// host's [`drive::CALL_LIMIT`].
fn judge(
    plan: &ExplorePlan,
    server: &FakeServer,
    calls: &[HarnessCall],
    caller_bounds: bool,
) -> Option<Violation> {
    let (witness, _) = super::host_scope(server.witness());
    let mut deadlines = plan.deadlines();
    if !caller_bounds {
        let limit = drive::CALL_LIMIT.as_millis() as u64;
        deadlines.values_mut().for_each(|d| *d = limit);
    }
    explore::judge_on(plan, server, &witness, &deadlines, calls, &[], None)
}

/// The explored runs `verify --command CMD --explore N` asks of a stdio bridge.
#[derive(Debug, Clone)]
pub struct CommandExplore {
    pub runs: u32,
    pub seed: u64,
    /// `--explore-only`: no scenario of the table runs.
    pub only: bool,
    /// Runs at once (`--jobs`; default: all, at least 4: [`explore::jobs`]).
    pub jobs: Option<usize>,
}

/// Run the plans `x` asks for through the bridge of `verify --command`.
pub(super) async fn explore_command(
    opts: &super::BridgeOptions,
    launch: Launch<'_>,
    x: &CommandExplore,
    progress: bool,
) -> Result<crate::verify::explore::Exploration> {
    let runner = HostPlans {
        launch,
        environment: &opts.environment,
        startup: opts.startup,
        own_handshake: opts.own_handshake,
        caller_bounds: opts.caller_bounds,
        jobs: explore::jobs(x.jobs, x.runs),
        left_out: Default::default(),
    };
    crate::verify::explore::explore(&runner, x.runs, x.seed, progress).await
}

/// The overall word of `verify --command` once its exploration (if any) ran:
/// a failed one fails a passing bridge (never hiding STUCK); with
/// `--explore-only`, EXPLORED when every run kept every rule.
pub(super) fn overall(
    table: &'static str,
    found: Option<&crate::verify::explore::Exploration>,
    asked: Option<&CommandExplore>,
) -> &'static str {
    match found {
        Some(e) => {
            crate::verify::report::with_exploration(table, e.ok, asked.is_some_and(|x| x.only))
        }
        None => table,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::explore::plan::run_seed;
    use crate::verify::explore::Exploration;

    #[test]
    fn a_bridges_plans_abort_no_call_and_keep_every_other_step() {
        let plans: Vec<ExplorePlan> = (0..200)
            .map(|i| ExplorePlan::generate(run_seed(2026, i)).per_call())
            .collect();
        let aborted = |p: &ExplorePlan| {
            p.steps.iter().any(|s| {
                matches!(
                    s,
                    Step::Call {
                        signal_ms: Some(_),
                        ..
                    }
                )
            })
        };
        assert!(plans.iter().any(aborted), "no plan of 200 aborts a call");
        for plan in plans {
            let bridged = without_aborts(plan.clone());
            assert!(!aborted(&bridged), "{bridged}");
            assert_eq!(bridged.steps.len(), plan.steps.len());
            for (b, p) in bridged.steps.iter().zip(&plan.steps) {
                match (b, p) {
                    (
                        Step::Call { tool, wait, .. },
                        Step::Call {
                            tool: t, wait: w, ..
                        },
                    ) => assert_eq!((tool, wait), (t, w)),
                    _ => assert_eq!(b, p),
                }
            }
        }
    }

    #[test]
    fn a_failed_exploration_fails_a_command_and_explore_only_says_explored_or_failed() {
        let found = |ok| Exploration {
            seed: 1,
            runs: 1,
            builds: Vec::new(),
            left_out: None,
            ok,
            failures: Vec::new(),
        };
        let asked = |only| CommandExplore {
            runs: 1,
            seed: 1,
            only,
            jobs: None,
        };
        assert_eq!(overall("SEAMLESS", None, None), "SEAMLESS");
        assert_eq!(
            overall("SEAMLESS", Some(&found(true)), Some(&asked(false))),
            "SEAMLESS"
        );
        assert_eq!(
            overall("SEAMLESS", Some(&found(false)), Some(&asked(false))),
            "FAILED"
        );
        assert_eq!(
            overall("STUCK", Some(&found(false)), Some(&asked(false))),
            "STUCK"
        );
        // No scenario ran: the table's word (FAILED for none) is not the report's.
        assert_eq!(
            overall("FAILED", Some(&found(true)), Some(&asked(true))),
            "EXPLORED"
        );
        assert_eq!(
            overall("FAILED", Some(&found(false)), Some(&asked(true))),
            "FAILED"
        );
    }
}
