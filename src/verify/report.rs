//! What `verify` reports of an install (`verify --json`'s fields) and of
//! the gate `apply` puts an unknown release through: each scenario's result,
//! the install's overall word and the note on what to make of it.

use std::path::PathBuf;

use serde::Serialize;

use super::explore;
use super::scenario::{Expectation, Judgement, ScenarioName};
use super::target::Target;
use crate::classify::{Install, State};
use crate::error::Error;
use crate::node::Node;

/// Which expectations a file was judged by, as `verify --json` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expectations {
    /// The file is the current patch revision: recovery must be seamless.
    CurrentRevision,
    /// `--strict`: the current revision's expectations, for a file that is not it.
    Strict,
    /// Any other file (earlier revision, unknown, the saved original): recovering
    /// after failed calls is enough.
    Relaxed,
}

impl Expectations {
    pub fn as_str(self) -> &'static str {
        match self {
            Expectations::CurrentRevision => "current-revision",
            Expectations::Strict => "strict",
            Expectations::Relaxed => "relaxed",
        }
    }

    /// Whether these are the current revision's (seamless) expectations.
    pub fn seamless(self) -> bool {
        self != Expectations::Relaxed
    }

    pub(crate) fn of(current_patch: bool, strict: bool) -> Self {
        match (current_patch, strict) {
            (true, _) => Expectations::CurrentRevision,
            (false, true) => Expectations::Strict,
            (false, false) => Expectations::Relaxed,
        }
    }
}

/// One scenario's result, as `verify --json` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub name: ScenarioName,
    /// The reconnect policy the client ran with: short (100 ms first backoff) or default (the package's own).
    pub policy: &'static str,
    pub expected: Expectation,
    /// verdict, ok, recovery_ms, trigger_ms, failed_calls, initialize_count, trigger_error, note.
    #[serde(flatten)]
    pub judgement: Judgement,
    pub node_version: String,
    /// For an install of several builds (mcp-sdk): the build it ran (`esm`, `cjs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// One install's results.
#[derive(Debug, Clone, Serialize)]
pub struct InstallResult {
    /// The target it is an install of (`--target NAME`).
    pub target: &'static str,
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub path: PathBuf,
    /// The file that was loaded: the install's, or the saved file of a backup.
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub file: PathBuf,
    pub backup: Option<String>,
    /// sha256 of what was loaded.
    pub sha256: String,
    /// The state of what was loaded (a backup's saved original is `affected`).
    pub state: State,
    /// Always false: verify changes no install (a backup's copy is removed after the run).
    pub changed: bool,
    /// The install's state as verify found it (with `--backup`, `state` is the
    /// backup's); fleet tools read the same fields from apply and revert.
    pub state_before: State,
    /// The same as `state_before`: verify leaves the install as it found it.
    pub state_after: State,
    /// Why the check of this install could not run (then `overall` is FAILED
    /// and `scenarios` is empty), else null.
    pub error: Option<String>,
    pub node_version: String,
    /// Whether the harness had to add Promise.withResolvers (Node < 22).
    pub node_shim: bool,
    /// The expectations the file was judged by: `current-revision` (it is the
    /// current patch revision), `strict` (`--strict` on any other file) or
    /// `relaxed` (any other file without `--strict`).
    pub expectations: Expectations,
    /// SEAMLESS, RECOVERED or HELD when every scenario met its expectation (by the
    /// weakest recovery seen, HELD when no recovery scenario ran), else STUCK or FAILED.
    pub overall: &'static str,
    /// What to make of the result, if anything.
    pub note: Option<String>,
    pub scenarios: Vec<ScenarioResult>,
    /// The explored runs (`verify --explore`), if any ran.
    pub exploration: Option<explore::Exploration>,
    /// Scenarios asked for that this install's client driver does not run, and why.
    pub left_out: Vec<LeftOut>,
}

#[derive(Debug, Serialize)]
pub(crate) struct VerifyReport {
    pub(crate) installs: Vec<InstallResult>,
    /// What stopped verify outside any one install (no install found, node
    /// missing, an interrupt), else null; each install's own failure is in its `error`.
    pub(crate) error: Option<String>,
}

/// The report of an install whose check could not run: `error` says why.
pub(crate) fn not_checked(
    install: &Install,
    node: &Node,
    e: &Error,
    strict: bool,
) -> InstallResult {
    InstallResult {
        target: install.target,
        path: install.path.clone(),
        file: install.file.clone(),
        backup: None,
        sha256: install.sha256.clone(),
        state: install.state,
        changed: false,
        state_before: install.state,
        state_after: install.state,
        error: Some(e.to_string()),
        node_version: node.version.clone(),
        node_shim: !node.has_with_resolvers,
        expectations: Expectations::of(install.state == State::Patched, strict),
        overall: "FAILED",
        note: None,
        scenarios: Vec::new(),
        exploration: None,
        left_out: Vec::new(),
    }
}

/// What the gate `apply` puts a revision mcpatch does not know through found
/// ([`crate::verify::verify_staged_strict`]).
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    /// Whether every scenario met the current patch revision's expectations
    /// and every explored run kept the rules.
    pub passed: bool,
    /// As `verify` reports it: SEAMLESS when it passed, else STUCK or FAILED.
    pub overall: &'static str,
    pub node_version: String,
    pub scenarios: Vec<ScenarioResult>,
    /// The short exploration that goes with the whole table; absent where the
    /// driver runs no plans.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exploration: Option<Box<crate::verify::explore::Exploration>>,
}

/// What a scenario's name says of the run's policy, when it is not the
/// scenario's usual one: the DSH plugin's default policy, or that policy with
/// the package's own call timeout (60 s).
pub(crate) fn policy_label(policy: &str) -> &'static str {
    match policy {
        "default" => " (default policy)",
        "package" => " (60 s calls)",
        _ => "",
    }
}

impl GateReport {
    /// One line per scenario that did not meet its expectation.
    pub fn failing_lines(&self) -> Vec<String> {
        let scenarios = self.scenarios.iter().filter(|x| !x.judgement.ok).map(|x| {
            let policy = policy_label(x.policy);
            let j = &x.judgement;
            format!(
                "{}{policy}: {} (expected {}): {}",
                x.name,
                j.verdict,
                x.expected.verdict(),
                j.note
            )
        });
        let explored = self.exploration.iter().flat_map(|e| &e.failures).map(|f| {
            format!(
                "explored run, seed {}{}: {} (expected every rule kept): {}",
                f.seed,
                f.on_build(),
                f.verdict,
                f.note
            )
        });
        scenarios.chain(explored).collect()
    }
}

impl InstallResult {
    /// Whether every scenario met its expectation and every explored run kept the rules.
    pub fn passed(&self) -> bool {
        self.scenarios.iter().all(|s| s.judgement.ok)
            && self.exploration.as_ref().is_none_or(|e| e.ok)
    }

    /// The report of an install whose file (`target.load`) went through its
    /// scenarios; `overall` from their verdicts, no note, no shim, nothing left out.
    pub(crate) fn checked(
        install: &Install,
        target: &Target,
        node_version: String,
        expectations: Expectations,
        scenarios: Vec<ScenarioResult>,
    ) -> InstallResult {
        InstallResult {
            target: install.target,
            path: install.path.clone(),
            file: target.file.clone(),
            backup: target.backup.clone(),
            sha256: target.sha256.clone(),
            state: target.state,
            changed: false,
            state_before: install.state,
            state_after: install.state,
            error: None,
            node_version,
            node_shim: false,
            expectations,
            overall: overall(&scenarios),
            note: None,
            scenarios,
            exploration: None,
            left_out: Vec::new(),
        }
    }
}

pub(crate) fn broken(note: String) -> Judgement {
    Judgement {
        verdict: "BROKEN",
        ok: false,
        recovery_ms: None,
        trigger_ms: None,
        failed_calls: 0,
        initialize_count: 0,
        trigger_error: None,
        note,
        late_only: false,
    }
}

/// One word for an install: the weakest result that still met every expectation, or what failed.
pub(crate) fn overall(results: &[ScenarioResult]) -> &'static str {
    if !results.iter().all(|r| r.judgement.ok) {
        return if results.iter().any(|r| r.judgement.verdict == "STUCK") {
            "STUCK"
        } else {
            "FAILED"
        };
    }
    let recoveries: Vec<&str> = results
        .iter()
        .filter(|r| matches!(r.judgement.verdict, "SEAMLESS" | "RECOVERED"))
        .map(|r| crate::verify::scenario::overall_verdict(r.name, r.judgement.verdict))
        .collect();
    if recoveries.contains(&"RECOVERED") {
        "RECOVERED"
    } else if recoveries.is_empty() {
        "HELD"
    } else {
        "SEAMLESS"
    }
}

/// The overall word once the exploration has run: a failed exploration
/// fails an install whose scenarios passed, but never hides a STUCK one (STUCK
/// says more: the client kept the dead session). With `--explore-only`
/// (`explore_only`: no scenario ran) EXPLORED when every run kept every rule,
/// else FAILED.
pub(crate) fn with_exploration(
    overall: &'static str,
    explored_ok: bool,
    explore_only: bool,
) -> &'static str {
    match (explore_only, explored_ok, overall) {
        (true, true, _) => "EXPLORED",
        (true, false, _) => "FAILED",
        (false, true, word) | (false, false, word @ ("STUCK" | "FAILED")) => word,
        (false, false, _) => "FAILED",
    }
}

pub(crate) fn install_note(
    target: &Target,
    overall: &str,
    expectations: Expectations,
) -> Option<String> {
    if target.backup.is_some() {
        return Some("the saved original, run as the control: judged as any file, so STUCK here is the bug the patch fixes, reproduced".into());
    }
    let strict = expectations == Expectations::Strict;
    match (target.state, overall) {
        (State::Patched, _) => None,
        (State::Outdated, "RECOVERED" | "SEAMLESS") if !strict => Some(
            "patched by an earlier mcpatch revision: it recovers, but calls that meet a lost session fail first; run `mcpatch apply` to upgrade to seamless recovery".into(),
        ),
        (State::Outdated, _) => Some(
            "patched by an earlier mcpatch revision; run `mcpatch apply` to upgrade".into(),
        ),
        (State::Affected, _) => Some("not patched: run `mcpatch apply`".into()),
        (_, "SEAMLESS" | "HELD") if strict => Some(
            "not the current patch revision, judged by its expectations (--strict): it meets them"
                .into(),
        ),
        (_, _) if strict => Some(
            "not the current patch revision, judged by its expectations (--strict): it falls short of them"
                .into(),
        ),
        (State::Modified | State::UpstreamFixed, "RECOVERED") => Some(
            "not a revision mcpatch patched: recovering after failed calls is enough to pass".into(),
        ),
        _ => None,
    }
}

/// A scenario asked for that a driver does not run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct LeftOut {
    pub name: String,
    pub why: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_exploration_fails_a_passing_install_but_keeps_stuck_and_failed() {
        for passing in ["SEAMLESS", "RECOVERED", "HELD"] {
            assert_eq!(with_exploration(passing, true, false), passing);
            assert_eq!(
                with_exploration(passing, false, false),
                "FAILED",
                "{passing}"
            );
        }
        assert_eq!(with_exploration("STUCK", false, false), "STUCK");
        assert_eq!(with_exploration("STUCK", true, false), "STUCK");
        assert_eq!(with_exploration("FAILED", false, false), "FAILED");
        // --explore-only: no scenario ran, the exploration alone says.
        assert_eq!(with_exploration("HELD", true, true), "EXPLORED");
        assert_eq!(with_exploration("HELD", false, true), "FAILED");
    }

    #[test]
    fn a_gate_refused_by_exploration_says_which_run_broke_which_rule() {
        let failure = crate::verify::explore::ExploreFailure {
            seed: 7,
            build: Some("cjs".into()),
            verdict: "STUCK",
            invariant: "one-initialize",
            note: "2 new initializes for one loss".into(),
            plan: Vec::new(),
            shrunk: Vec::new(),
            shrunk_note: String::new(),
        };
        let gate = GateReport {
            passed: false,
            overall: "FAILED",
            node_version: "v22.0.0".into(),
            scenarios: Vec::new(),
            exploration: Some(Box::new(crate::verify::explore::Exploration {
                seed: 1,
                runs: 3,
                builds: vec!["esm".into(), "cjs".into()],
                left_out: None,
                ok: false,
                failures: vec![failure],
            })),
        };
        assert_eq!(
            gate.failing_lines(),
            ["explored run, seed 7, cjs build: STUCK (expected every rule kept): 2 new initializes for one loss"]
        );
    }
}
