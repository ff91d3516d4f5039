//! `verify --explore`: runs nobody wrote a scenario for. Plans generated from
//! a seed drive the real client (through the plugin harness) against fake
//! servers; every run is judged by the invariants alone, and a failing run is
//! shrunk to the smallest plan that still fails the same rule, printed with
//! the seed that replays it.

pub mod plan;

use std::path::Path;

use serde::Serialize;

use self::plan::{run_seed, ExplorePlan, LAST_CALL};
use super::drivers::plugin::harness::{self, HarnessRun, RunSpec};
use super::fake_server::FakeServer;
use super::scenario::invariants::{self, Expected, Violation};
use super::scenario::Policy;
use super::scenario::{Evidence, Plan};
use crate::color::{Painter, Style};
use crate::error::Result;
use crate::node::Node;
use crate::output::clean_lines;
use crate::table::hanging;

/// The seed of the exploration `verify` runs when none is given.
pub const DEFAULT_SEED: u64 = 2026;
/// Explored runs `verify` adds to its table when `--explore` is not given.
pub const DEFAULT_RUNS: u32 = 3;
/// Most shrinking rounds for one failure (each round runs every smaller plan at once).
const SHRINK_ROUNDS: usize = 8;

/// One explored run that broke a rule.
#[derive(Debug, Clone, Serialize)]
pub struct ExploreFailure {
    /// The seed that replays it: `--seed SEED --explore 1`.
    pub seed: u64,
    pub verdict: &'static str,
    pub invariant: &'static str,
    pub note: String,
    /// The generated plan, one step a line.
    pub plan: Vec<String>,
    /// The smallest plan found that still breaks the same rule; empty when an
    /// earlier failure of the same rule was shrunk already (one a rule).
    pub shrunk: Vec<String>,
    /// What the shrunk plan's run broke.
    pub shrunk_note: String,
}

/// What an exploration found.
#[derive(Debug, Clone, Serialize)]
pub struct Exploration {
    pub seed: u64,
    pub runs: u32,
    /// Whether every run kept every rule.
    pub ok: bool,
    pub failures: Vec<ExploreFailure>,
}

/// Run `runs` plans from `seed` against the DSH plugin file `target`, at most
/// `jobs` at once; shrink every failure.
pub async fn explore(
    node: &Node,
    target: &Path,
    runs: u32,
    seed: u64,
    jobs: usize,
    progress: bool,
) -> Result<Exploration> {
    let plans: Vec<ExplorePlan> = (0..runs)
        .map(|i| ExplorePlan::generate(run_seed(seed, i)))
        .collect();
    let judged = run_plans(node, target, &plans, jobs).await?;
    let mut failures = Vec::new();
    let mut shrunk_rules = std::collections::HashSet::new();
    for (plan, violation) in plans.iter().zip(judged) {
        let Some(violation) = violation else { continue };
        if !shrunk_rules.insert(violation.invariant) {
            failures.push(ExploreFailure {
                seed: plan.seed,
                verdict: violation.verdict,
                invariant: violation.invariant,
                note: violation.note.clone(),
                plan: plan.to_string().lines().map(str::to_string).collect(),
                shrunk: Vec::new(),
                shrunk_note: violation.note,
            });
            continue;
        }
        if progress {
            crate::errln!(
                "explore: seed {} broke {}; shrinking its plan",
                plan.seed,
                violation.invariant
            );
        }
        let (shrunk, shrunk_violation) =
            shrink(node, target, plan.clone(), violation.clone(), jobs).await?;
        failures.push(ExploreFailure {
            seed: plan.seed,
            verdict: violation.verdict,
            invariant: violation.invariant,
            note: violation.note,
            plan: plan.to_string().lines().map(str::to_string).collect(),
            shrunk: shrunk.to_string().lines().map(str::to_string).collect(),
            shrunk_note: shrunk_violation.note,
        });
    }
    Ok(Exploration {
        seed,
        runs,
        ok: failures.is_empty(),
        failures,
    })
}

/// Drop what the failure does not need, a round at a time: every smaller plan
/// runs at once, and the first that breaks the same rule is kept.
async fn shrink(
    node: &Node,
    target: &Path,
    mut plan: ExplorePlan,
    mut violation: Violation,
    jobs: usize,
) -> Result<(ExplorePlan, Violation)> {
    for _ in 0..SHRINK_ROUNDS {
        let smaller = plan.smaller();
        if smaller.is_empty() {
            break;
        }
        let judged = run_plans(node, target, &smaller, jobs).await?;
        let found = smaller.into_iter().zip(judged).find(|(_, v)| {
            v.as_ref()
                .is_some_and(|v| v.invariant == violation.invariant)
        });
        match found {
            Some((p, Some(v))) => {
                plan = p;
                violation = v;
            }
            _ => break,
        }
    }
    Ok((plan, violation))
}

/// Run each plan against a fake server of its own in one harness; each run's
/// broken rule, if any.
async fn run_plans(
    node: &Node,
    target: &Path,
    plans: &[ExplorePlan],
    jobs: usize,
) -> Result<Vec<Option<Violation>>> {
    let mut servers = Vec::with_capacity(plans.len());
    for p in plans {
        servers.push(FakeServer::start(p.behaviour(), 0).await?);
    }
    let specs: Vec<RunSpec> = plans
        .iter()
        .zip(&servers)
        .map(|(p, server)| RunSpec {
            // Replaced by the explored fields; named only because a spec has one.
            plan: Plan::Invalidate,
            policy: Policy::Short,
            url: server.url(),
            reload: None,
            control_token: server.control_token().to_string(),
            explored: Some(p.harness_fields()),
        })
        .collect();
    let mut out: Vec<Option<Violation>> = vec![None; plans.len()];
    harness::run_all(node, target, &specs, jobs, |i, run| {
        out[i] = judge(&plans[i], &servers[i], &run);
    })
    .await?;
    Ok(out)
}

fn judge(plan: &ExplorePlan, server: &FakeServer, run: &HarnessRun) -> Option<Violation> {
    if let Some(fatal) = &run.fatal {
        return Some(Violation {
            invariant: "run-ends",
            verdict: "BROKEN",
            note: format!("invariant run-ends: the harness failed this run: {fatal}"),
        });
    }
    if !run.done {
        return Some(Violation {
            invariant: "run-ends",
            verdict: "BROKEN",
            note: "invariant run-ends: the harness stopped before this run ended".into(),
        });
    }
    let witness = server.witness();
    let dropped = server.dropped_sessions();
    let counts = server.call_counts();
    let ev = Evidence {
        witness: &witness,
        dropped: &dropped,
        counts: &counts,
        calls: &run.calls,
        policy: Policy::Short,
        seamless: true,
        per_call_recovery: false,
    };
    let deadlines = plan.deadlines();
    let words = plan.words();
    invariants::check_all(
        &ev,
        &Expected {
            deadlines: &deadlines,
            words: &words,
            lost_words: plan.lost.words(),
            reconnect: plan.policy.reconnect(),
            last_call: LAST_CALL,
            logs: &run.logs,
            loss_log: Some(harness::LOSS_LOG_WORDS),
        },
    )
}

/// The lines `verify` prints of an exploration, under the scenario table, in
/// at most `columns` (when given). Notes carry servers' words: escaped.
pub fn render(e: &Exploration, columns: Option<usize>, paint: Painter) -> String {
    let runs = if e.runs == 1 { "run" } else { "runs" };
    let mut s = if e.ok {
        let kept = paint.paint(Style::Green, "every rule kept");
        hanging(
            "",
            &format!("explored {} {runs} from seed {}: {kept}", e.runs, e.seed),
            columns,
        )
    } else {
        let broke = paint.paint(Style::Red, &format!("{} broke a rule", e.failures.len()));
        hanging(
            "",
            &format!("explored {} {runs} from seed {}: {broke}", e.runs, e.seed),
            columns,
        )
    };
    for f in &e.failures {
        s.push_str(&hanging(
            "  ",
            &format!(
                "seed {} ({}; replay: --explore 1 --seed {}): {}",
                f.seed,
                f.verdict,
                f.seed,
                clean_lines(&f.note)
            ),
            columns,
        ));
        if f.shrunk.is_empty() {
            continue;
        }
        s.push_str("    shrunk plan:\n");
        for line in &f.shrunk {
            s.push_str(&hanging("      ", line, columns));
        }
        if f.shrunk_note != f.note {
            s.push_str(&hanging(
                "    ",
                &format!("the shrunk plan broke: {}", clean_lines(&f.shrunk_note)),
                columns,
            ));
        }
    }
    s
}
