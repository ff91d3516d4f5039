//! `verify --explore`: runs nobody wrote a scenario for. Plans generated from
//! a seed drive the real client (through its driver's [`PlanRunner`]: the
//! plugin harness, the stdio host of the SDK clients) against fake servers;
//! every run is judged by the invariants alone, and a failing run is shrunk
//! to the smallest plan that still fails the same rule, printed with the seed
//! that replays it.

pub mod plan;

use std::collections::HashMap;

use serde::Serialize;

use self::plan::{run_seed, ExplorePlan, LAST_CALL};
use super::fake_server::{FakeServer, WitnessEntry};
use super::scenario::invariants::{self, Expected, Violation};
use super::scenario::Policy;
use super::scenario::{Evidence, HarnessCall};
use crate::color::{Painter, Style};
use crate::error::Result;
use crate::output::clean_lines;
use crate::table::hanging;

/// The seed of the exploration `verify` runs when none is given.
pub const DEFAULT_SEED: u64 = 2026;
/// Explored runs `verify` adds to its table when `--explore` is not given.
pub const DEFAULT_RUNS: u32 = 3;
/// Most shrinking rounds for one failure (each round runs every smaller plan at once).
const SHRINK_ROUNDS: usize = 8;
/// The fewest explored runs at once when `--jobs` is not given: a replay
/// (`--explore 1 --seed S`) shrinks its failure four smaller plans at a time,
/// not one.
const JOBS_AT_LEAST: usize = 4;

/// Explored runs at once for `runs` runs: `--jobs` when given, else all of
/// them, at least [`JOBS_AT_LEAST`].
pub(crate) fn jobs(given: Option<usize>, runs: u32) -> usize {
    given.unwrap_or((runs as usize).max(JOBS_AT_LEAST)).max(1)
}

/// One explored run that broke a rule.
#[derive(Debug, Clone, Serialize)]
pub struct ExploreFailure {
    /// The seed that replays it: `--seed SEED --explore 1`.
    pub seed: u64,
    /// The build of the install it ran on, for a target with several (the
    /// SDK's `esm` and `cjs`); absent where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
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

impl ExploreFailure {
    /// ", esm build" for a target with several builds; "" where there is one.
    pub(crate) fn on_build(&self) -> String {
        self.build
            .as_deref()
            .map(|b| format!(", {b} build"))
            .unwrap_or_default()
    }
}

/// What an exploration found.
#[derive(Debug, Clone, Serialize)]
pub struct Exploration {
    pub seed: u64,
    /// Runs on each build (`builds`).
    pub runs: u32,
    /// The builds of the install explored (the SDK's `esm` and `cjs`); absent
    /// where there is one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub builds: Vec<String>,
    /// Why no plan ran (the client cannot keep the plans' deadlines); absent when they ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
    /// Whether every run kept every rule.
    pub ok: bool,
    pub failures: Vec<ExploreFailure>,
}

/// Why the short exploration `verify` adds by default is not run once the
/// fixed table failed: the verdict is already known, and failing runs (each
/// shrunk) would only add minutes, to `apply`'s refusal of a patched copy too.
const AFTER_FAILED_TABLE: &str =
    "the fixed table already failed, so the short exploration was not run (`--explore 3` runs it)";

/// The exploration of an install whose fixed table failed, when none was
/// asked for: left out, saying why ([`AFTER_FAILED_TABLE`]).
pub(crate) fn not_run_after_failed_table(seed: u64) -> Exploration {
    Exploration {
        seed,
        runs: 0,
        builds: Vec::new(),
        left_out: Some(AFTER_FAILED_TABLE.to_string()),
        ok: true,
        failures: Vec::new(),
    }
}

/// How a driver runs explored plans through its client.
pub(crate) trait PlanRunner {
    /// The plan seed `seed` gives for this driver's client.
    fn plan(&self, seed: u64) -> ExplorePlan {
        ExplorePlan::generate(seed)
    }

    /// Run each plan against a fake server of its own; each run's broken
    /// rule, if any (see [`judge`]).
    async fn run_plans(&self, plans: &[ExplorePlan]) -> Result<Vec<Option<Violation>>>;

    /// How many of a shrinking round's smaller plans run together before the
    /// round looks for one that still fails: all of them by default (one
    /// process runs them all); a runner that starts a process per plan gives
    /// its `jobs`, so a round stops at the first batch with a failure.
    fn shrink_batch(&self) -> usize {
        usize::MAX
    }
}

/// Run `runs` plans from `seed` through `runner`; shrink every failure.
pub(crate) async fn explore(
    runner: &impl PlanRunner,
    runs: u32,
    seed: u64,
    progress: bool,
) -> Result<Exploration> {
    let plans: Vec<ExplorePlan> = (0..runs).map(|i| runner.plan(run_seed(seed, i))).collect();
    let judged = runner.run_plans(&plans).await?;
    let mut failures = Vec::new();
    let mut shrunk_rules = std::collections::HashSet::new();
    for (plan, violation) in plans.iter().zip(judged) {
        let Some(violation) = violation else { continue };
        if !shrunk_rules.insert(violation.invariant) {
            failures.push(ExploreFailure {
                seed: plan.seed,
                build: None,
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
        let (shrunk, shrunk_violation) = shrink(runner, plan.clone(), violation.clone()).await?;
        failures.push(ExploreFailure {
            seed: plan.seed,
            build: None,
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
        builds: Vec::new(),
        left_out: None,
        ok: failures.is_empty(),
        failures,
    })
}

/// Drop what the failure does not need, a round at a time: the smaller plans
/// run in batches of the runner's [`PlanRunner::shrink_batch`], in order, and
/// the first that breaks the same rule is kept (the batches after it do not run).
async fn shrink(
    runner: &impl PlanRunner,
    mut plan: ExplorePlan,
    mut violation: Violation,
) -> Result<(ExplorePlan, Violation)> {
    let batch = runner.shrink_batch().max(1);
    'rounds: for _ in 0..SHRINK_ROUNDS {
        for smaller in plan.smaller().chunks(batch) {
            let judged = runner.run_plans(smaller).await?;
            let found = smaller.iter().zip(judged).find_map(|(p, v)| {
                v.filter(|v| v.invariant == violation.invariant)
                    .map(|v| (p.clone(), v))
            });
            if let Some((p, v)) = found {
                plan = p;
                violation = v;
                continue 'rounds;
            }
        }
        break;
    }
    Ok((plan, violation))
}

/// What a run of `plan` against `server` broke, judged by the invariants
/// alone from the server's witness log, the caller's view of each call
/// (`calls`) and the client's log lines (`logs`; `loss_log`: the words of
/// the line saying a lost session is replaced, for a client that writes one).
pub(crate) fn judge(
    plan: &ExplorePlan,
    server: &FakeServer,
    calls: &[HarnessCall],
    logs: &[String],
    loss_log: Option<&str>,
) -> Option<Violation> {
    judge_on(
        plan,
        server,
        &server.witness(),
        &plan.deadlines(),
        calls,
        logs,
        loss_log,
    )
}

/// [`judge`] on `witness` (the server's log, or the part of it a driver
/// judges) with each call's deadline from `deadlines` (the plan's, or the
/// host's own where it passes none on).
pub(crate) fn judge_on(
    plan: &ExplorePlan,
    server: &FakeServer,
    witness: &[WitnessEntry],
    deadlines: &HashMap<String, u64>,
    calls: &[HarnessCall],
    logs: &[String],
    loss_log: Option<&str>,
) -> Option<Violation> {
    let dropped = server.dropped_sessions();
    let counts = server.call_counts();
    let ev = Evidence {
        witness,
        dropped: &dropped,
        counts: &counts,
        calls,
        policy: Policy::Short,
        seamless: true,
        per_call_recovery: plan.policy == plan::ExplorePolicy::PerCall,
    };
    let words = plan.words();
    invariants::check_all(
        &ev,
        &Expected {
            deadlines,
            words: &words,
            lost_words: plan.lost.words(),
            reconnect: plan.policy.reconnect(),
            last_call: LAST_CALL,
            logs,
            loss_log,
        },
    )
}

/// The lines `verify` prints of an exploration, under the scenario table, in
/// at most `columns` (when given). Notes carry servers' words: escaped.
pub fn render(e: &Exploration, columns: Option<usize>, paint: Painter) -> String {
    if let Some(why) = &e.left_out {
        return hanging(
            "",
            &format!("exploration left out: {}", clean_lines(why)),
            columns,
        );
    }
    let runs = if e.runs == 1 { "run" } else { "runs" };
    let on = match e.builds.len() {
        0 | 1 => String::new(),
        _ => format!(" on each build ({})", e.builds.join(", ")),
    };
    let said = if e.ok {
        paint.paint(Style::Green, "every rule kept")
    } else {
        paint.paint(Style::Red, &format!("{} broke a rule", e.failures.len()))
    };
    let mut s = hanging(
        "",
        &format!(
            "explored {} {runs}{on} from seed {}: {said}",
            e.runs, e.seed
        ),
        columns,
    );
    for f in &e.failures {
        s.push_str(&hanging(
            "  ",
            &format!(
                "seed {}{} ({}; replay: --explore 1 --seed {}): {}",
                f.seed,
                f.on_build(),
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::plan::{ExplorePolicy, Step};
    use super::*;
    use crate::verify::fake_server::LostSessionAnswer;

    /// A runner whose plans break `tool-runs-once` while they still hold a
    /// 404-answered step (`Sleep(404)`), recording the size of each batch it ran.
    struct Scripted {
        batch: usize,
        batches: Mutex<Vec<usize>>,
    }

    impl PlanRunner for Scripted {
        async fn run_plans(&self, plans: &[ExplorePlan]) -> Result<Vec<Option<Violation>>> {
            self.batches.lock().unwrap().push(plans.len());
            Ok(plans
                .iter()
                .map(|p| {
                    p.steps.contains(&Step::Sleep(404)).then(|| {
                        Violation::new("tool-runs-once", "REPEATED", format!("{:?}", p.steps))
                    })
                })
                .collect())
        }

        fn shrink_batch(&self) -> usize {
            self.batch
        }
    }

    fn plan(steps: Vec<Step>) -> ExplorePlan {
        ExplorePlan {
            seed: 7,
            policy: ExplorePolicy::Short,
            lost: LostSessionAnswer::NotFoundJsonRpc,
            reinit_delay_ms: None,
            relist_delay_ms: None,
            sdk2: false,
            get_not_found: false,
            outage_fails: false,
            refuse_first_reinit: false,
            steps,
        }
    }

    #[tokio::test]
    async fn shrinking_runs_the_smaller_plans_a_batch_at_a_time_and_stops_at_the_first_failing_batch(
    ) {
        let runner = Scripted {
            batch: 2,
            batches: Mutex::new(Vec::new()),
        };
        let steps = vec![
            Step::Sleep(1),
            Step::Sleep(2),
            Step::Sleep(404),
            Step::Sleep(3),
        ];
        let first = Violation::new("tool-runs-once", "REPEATED", "first".into());
        let (shrunk, v) = shrink(&runner, plan(steps), first).await.unwrap();
        assert_eq!(shrunk.steps, vec![Step::Sleep(404)]);
        assert_eq!(v.note, "invariant tool-runs-once: [Sleep(404)]");
        // Round 1 (4 smaller plans): dropping Sleep(1) fails already, so the
        // second batch never runs; round 2 (3): the same; round 3 (2): dropping
        // Sleep(3) fails, in the one batch; round 4 (1): nothing smaller fails.
        assert_eq!(*runner.batches.lock().unwrap(), vec![2, 2, 2, 1]);
    }

    #[test]
    fn explored_runs_go_all_at_once_at_least_four_unless_jobs_are_given() {
        assert_eq!(jobs(None, 1), 4);
        assert_eq!(jobs(None, 24), 24);
        assert_eq!(jobs(Some(2), 24), 2);
        assert_eq!(jobs(Some(0), 3), 1);
    }

    #[tokio::test]
    async fn shrinking_keeps_the_first_smaller_plan_in_order_that_fails_the_same_rule() {
        let runner = Scripted {
            batch: usize::MAX,
            batches: Mutex::new(Vec::new()),
        };
        let steps = vec![Step::Sleep(404), Step::Sleep(404)];
        let first = Violation::new("tool-runs-once", "REPEATED", "first".into());
        let (shrunk, _) = shrink(&runner, plan(steps), first).await.unwrap();
        assert_eq!(shrunk.steps, vec![Step::Sleep(404)]);
        // A rule the smaller plans do not break is not shrunk toward.
        let other = Violation::new("recovers", "STUCK", "other".into());
        let steps = vec![Step::Sleep(404), Step::Sleep(1)];
        let (kept, v) = shrink(&runner, plan(steps.clone()), other).await.unwrap();
        assert_eq!(
            (kept.steps, v.note.as_str()),
            (steps, "invariant recovers: other")
        );
    }
}
