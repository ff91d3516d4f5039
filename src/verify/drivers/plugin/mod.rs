//! The DSH plugin's driver (`plugin-api`): the bundled JS harness
//! (harness.rs, harness.mjs) loads the install's plugin in one node process
//! and drives every scenario run at once against its own fake server, then
//! the judges and the plugin's own log checks (checks.rs) give each verdict;
//! the explored runs (`verify --explore`) go through the same harness.

pub mod checks;
mod explored;
pub mod harness;

use std::time::Instant;

use crate::classify::Install;
use crate::color;
use crate::error::Result;
use crate::node::Node;
use crate::verify::explore;
use crate::verify::fake_server::{FakeServer, ServerBehaviour};
use crate::verify::render::shown_verdict;
use crate::verify::report::{
    broken, install_note, with_exploration, Expectations, InstallResult, ScenarioResult,
};
use crate::verify::scenario::{self, Evidence, Judgement, Policy, Scenario, ScenarioName};
use crate::verify::target::Target;
use crate::verify::VerifyOptions;
use harness::RunSpec;

use super::{ClientDriver, Job, LeftOut, Verifying};

/// The DSH plugin, loaded by the bundled harness.
pub(crate) struct PluginHarness;

impl ClientDriver for PluginHarness {
    fn explores(&self) -> bool {
        true
    }

    fn verify<'a>(&'a self, job: Job<'a>) -> Verifying<'a> {
        Box::pin(verify_install(
            job.node,
            job.install,
            job.target,
            job.scenarios,
            job.opts,
            job.progress,
        ))
    }

    fn needs_with_resolvers(&self) -> bool {
        true
    }
}

/// Verify one install of the DSH plugin on `target.load`: every scenario run
/// by the harness (`expired-404` once more under the package's default
/// policy, `reload` once more with its 60 s calls), each judged from its own
/// fake server's witness log; then the explored runs, if any.
async fn verify_install(
    node: &Node,
    install: &Install,
    target: &Target,
    scenarios: &[Scenario],
    opts: &VerifyOptions,
    progress: bool,
) -> Result<InstallResult> {
    let jobs = opts.jobs;
    let scenarios: &[Scenario] = if opts.explore_only { &[] } else { scenarios };
    // The harness makes the plugin's client as the plugin does, with no OAuth authProvider.
    let no_auth: Vec<LeftOut> = scenarios
        .iter()
        .filter(|s| s.needs_auth_provider())
        .map(|s| LeftOut {
            name: s.name.to_string(),
            why: "its server is OAuth-protected, and the DSH plugin's harness makes the plugin's client as the plugin does, with no authProvider",
        })
        .collect();
    let kept: Vec<Scenario> = scenarios
        .iter()
        .filter(|s| !s.needs_auth_provider())
        .cloned()
        .collect();
    let scenarios: &[Scenario] = &kept;
    let mut runs: Vec<(&Scenario, Policy)> = scenarios
        .iter()
        .map(|s| (s, Policy::for_scenario(s.name)))
        .collect();
    if let Some(first) = scenarios
        .iter()
        .find(|s| s.name == ScenarioName::Expired404)
    {
        runs.push((first, Policy::Default));
    }
    // Reload runs once more with the package's own call timeout (60 s).
    for s in scenarios
        .iter()
        .filter(|s| s.plan == scenario::Plan::Reload)
    {
        runs.push((s, Policy::Package));
    }
    let expectations = Expectations::of(target.is_current_patch(), opts.strict);
    let seamless = expectations.seamless();
    let total = runs.len();
    let started = Instant::now();
    let side_by_side = jobs.unwrap_or(total).min(total);
    // Each run's line as it ends: `head`, its scenario, policy and verdict, the time.
    let line = |head: String, (scenario, policy): (&Scenario, Policy), j: &Judgement| {
        if progress {
            let shown = shown_verdict(color::stderr(), j, scenario.expectation(seamless));
            crate::errln!(
                "{head} {} ({} policy): {shown} at {:.1} s",
                scenario.name,
                policy.as_str(),
                started.elapsed().as_secs_f64()
            );
        }
    };
    let (mut judged, node_report) =
        run_and_judge(node, target, &runs, side_by_side, seamless, |n, i, j| {
            line(format!("[{n}/{total}]"), runs[i], j)
        })
        .await?;
    // A run that failed beside others only by a time limit, while the harness
    // stalled, or in the client's start while other runs' clients started, is
    // run again alone (one after another): the lone run's verdict stands, and
    // its note says what the shared run saw.
    let some_started = judged.iter().any(|r| r.started);
    let late: Vec<usize> = (0..total)
        .filter(|&i| {
            let r = &judged[i];
            side_by_side > 1
                && !r.judgement.ok
                && (r.judgement.late_only
                    || r.stalled_ms > STALL_LIMIT_MS
                    || (r.failed_to_start && some_started))
        })
        .collect();
    if !late.is_empty() {
        let again: Vec<(&Scenario, Policy)> = late.iter().map(|&i| runs[i]).collect();
        let (alone, _) = run_and_judge(node, target, &again, 1, seamless, |_, k, j| {
            line("[again alone]".into(), again[k], j)
        })
        .await?;
        for (&i, lone) in late.iter().zip(alone) {
            judged[i].judgement =
                scenario::again_alone(&judged[i].judgement, lone.judgement, side_by_side - 1);
        }
    }
    let judged = judged.into_iter().map(|r| r.judgement);
    let node_version = node_report.version.unwrap_or_else(|| node.version.clone());
    let results: Vec<ScenarioResult> = runs
        .iter()
        .zip(judged)
        .map(|((scenario, policy), judgement)| ScenarioResult {
            build: None,
            name: scenario.name,
            policy: policy.as_str(),
            expected: scenario.expectation(seamless),
            judgement,
            node_version: node_version.clone(),
        })
        .collect();
    let mut result = InstallResult::checked(install, target, node_version, expectations, results);
    result.left_out.extend(no_auth);
    let explore_runs = opts.explore_runs(seamless);
    let table_failed = result.scenarios.iter().any(|s| !s.judgement.ok);
    if explore_runs > 0 && !opts.explores_after(table_failed) {
        let seed = opts.seed.unwrap_or(explore::DEFAULT_SEED);
        result.exploration = Some(explore::not_run_after_failed_table(seed));
    } else if explore_runs > 0 {
        let seed = opts.seed.unwrap_or(explore::DEFAULT_SEED);
        let runner = explored::HarnessPlans {
            node,
            target: &target.load,
            jobs: explore::jobs(jobs, explore_runs),
        };
        let found = explore::explore(&runner, explore_runs, seed, progress).await?;
        result.overall = with_exploration(result.overall, found.ok, opts.explore_only);
        result.exploration = Some(found);
    }
    result.node_shim = node_report.shim || !node.has_with_resolvers;
    result.note = install_note(target, result.overall, expectations);
    Ok(result)
}

/// A run that failed while the harness's event loop ran this late (ms) beside
/// other runs is run again alone: a healthy shared run stalls well under it.
const STALL_LIMIT_MS: u64 = 200;

/// One run's verdict, and what says whether a failure may be the machine's.
#[derive(Clone)]
struct JudgedRun {
    judgement: Judgement,
    /// [`harness::HarnessRun::stalled_ms`].
    stalled_ms: u64,
    /// The client got through its start (`apply()` returned).
    started: bool,
    /// The client's start failed with an error (a connection that timed out
    /// while every run's client started at once, or a broken client).
    failed_to_start: bool,
}

/// Start a fake server for each of `runs`, drive them through the harness
/// `jobs` at a time and judge each from its server's witness log; `on_judged`
/// hears each judgement as its run ends (how many have ended, from 1, and the
/// run's place in `runs`). The judgements come back in the order of `runs`.
async fn run_and_judge(
    node: &Node,
    target: &Target,
    runs: &[(&Scenario, Policy)],
    jobs: usize,
    seamless: bool,
    mut on_judged: impl FnMut(usize, usize, &Judgement),
) -> Result<(Vec<JudgedRun>, harness::NodeReport)> {
    let mut servers = Vec::with_capacity(runs.len());
    for (scenario, _) in runs {
        // Each tool's description names the session it was listed on (checks::table_rules).
        let behaviour = ServerBehaviour {
            tools_name_session: true,
            ..scenario.behaviour.clone()
        };
        servers.push(FakeServer::start(behaviour, 0).await?);
    }
    let specs: Vec<RunSpec> = runs
        .iter()
        .zip(&servers)
        .map(|((scenario, policy), server)| RunSpec {
            plan: scenario.plan,
            policy: *policy,
            url: server.url(),
            reload: scenario.behaviour.reload,
            control_token: server.control_token().to_string(),
            explored: None,
        })
        .collect();
    let mut judged: Vec<Option<JudgedRun>> = vec![None; runs.len()];
    let mut finished = 0;
    let node_report = if specs.is_empty() {
        harness::NodeReport::default()
    } else {
        harness::run_all(node, &target.load, &specs, jobs, |i, run| {
            let (scenario, policy) = runs[i];
            let j = judge_run(scenario, policy, &servers[i], &run, seamless);
            finished += 1;
            on_judged(finished, i, &j);
            judged[i] = Some(JudgedRun {
                judgement: j,
                stalled_ms: run.stalled_ms,
                started: run.ready,
                failed_to_start: run.fatal.is_some() && !run.ready,
            });
        })
        .await?
    };
    let judged = judged
        .into_iter()
        .map(|j| {
            j.unwrap_or_else(|| JudgedRun {
                judgement: broken("the harness never started this run".into()),
                stalled_ms: 0,
                started: false,
                failed_to_start: false,
            })
        })
        .collect();
    Ok((judged, node_report))
}

/// Judge one harness run of `scenario` under `policy` from its server's
/// witness log, then by the plugin's own log checks and the table's rules.
fn judge_run(
    scenario: &Scenario,
    policy: Policy,
    server: &FakeServer,
    run: &harness::HarnessRun,
    seamless: bool,
) -> Judgement {
    let expect = scenario.expectation(seamless);
    match (&run.fatal, run.done) {
        (Some(fatal), _) => broken(format!("the harness failed this run: {fatal}")),
        (None, false) => broken("the harness stopped before this run ended".into()),
        (None, true) => {
            let witness = server.witness();
            let dropped = server.dropped_sessions();
            let counts = server.call_counts();
            let mut j = scenario::judge(
                scenario,
                expect,
                &Evidence {
                    witness: &witness,
                    dropped: &dropped,
                    counts: &counts,
                    calls: &run.calls,
                    policy,
                    seamless,
                    per_call_recovery: false,
                },
            );
            checks::refine(scenario, policy, expect, run, &mut j);
            if j.ok && seamless {
                if let Some(v) = checks::table_rules(&witness, &dropped, run) {
                    j.verdict = v.verdict;
                    j.ok = false;
                    j.note = v.note;
                }
            }
            j
        }
    }
}
