//! The DSH plugin's part in `verify --explore`: explored plans run in the
//! plugin harness (one node process, at most `jobs` runs at once), each
//! against a fake server of its own, judged with the harness's log lines.

use std::collections::HashMap;
use std::path::Path;

use super::harness::{self, HarnessRun, RunSpec};
use crate::error::Result;
use crate::node::Node;
use crate::verify::explore::plan::ExplorePlan;
use crate::verify::explore::{self, PlanRunner};
use crate::verify::fake_server::{FakeServer, ServerBehaviour, WitnessEntry};
use crate::verify::scenario::invariants::{self, Violation};
use crate::verify::scenario::{Plan, Policy};

/// Explored plans through the plugin harness, on the plugin file `target`.
pub(super) struct HarnessPlans<'a> {
    pub node: &'a Node,
    pub target: &'a Path,
    pub jobs: usize,
}

impl PlanRunner for HarnessPlans<'_> {
    async fn run_plans(&self, plans: &[ExplorePlan]) -> Result<Vec<Option<Violation>>> {
        let mut servers = Vec::with_capacity(plans.len());
        for p in plans {
            // Tools described per session: the plugin harness reports what it registered.
            let behaviour = ServerBehaviour {
                tools_name_session: true,
                ..p.behaviour()
            };
            servers.push(FakeServer::start(behaviour, 0).await?);
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
        harness::run_all(self.node, self.target, &specs, self.jobs, |i, run| {
            out[i] = judge(&plans[i], &servers[i], &run);
        })
        .await?;
        Ok(out)
    }
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
    explore::judge(
        plan,
        server,
        &run.calls,
        &run.logs,
        Some(harness::LOSS_LOG_WORDS),
    )
    .or_else(|| plugin_rules(&server.witness(), run, &plan.deadlines()))
}

/// The rules only the plugin harness's report lets the oracle judge (what the
/// host registered) and those judged for the plugin so far (a call cut before
/// its answer), for a run whose server cut no connection itself.
pub(super) fn plugin_rules(
    witness: &[WitnessEntry],
    run: &HarnessRun,
    deadlines: &HashMap<String, u64>,
) -> Option<Violation> {
    invariants::closed_after_last_answer(witness, &run.calls, deadlines)
        .or_else(|| invariants::tools_from_new_session(witness, &run.calls, &run.tools_described))
}
