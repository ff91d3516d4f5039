//! What happened to each install since mcpatch last changed it, for the
//! `status` table and JSON: a patch an upgrade dropped, gemini-cli's
//! auto-update, old code still running, a path another user can change.

use serde::Serialize;

use super::StatusReport;
use crate::backup::{self, Backup};
use crate::classify::{self, Install, State};
use crate::environment::Environment;
use crate::registry::{Driver, PatchSpec};
use crate::running::{ProcessTable, RunningReport};
use crate::targets::gemini_cli::{self, AutoUpdate};

/// What happened to an install since mcpatch last changed it.
#[derive(Debug, Clone, Default)]
pub struct Aftermath {
    pub dropped: Option<Dropped>,
    /// gemini-cli: whether its auto-update (which drops the patch) is on.
    pub auto_update: Option<AutoUpdate>,
    pub running: Option<RunningReport>,
    /// As root: a path on the way to the install's code another user can change.
    pub untrusted: Option<crate::trust::Untrusted>,
    /// An install in a project: whether the project keeps its patch (crate::project).
    pub kept: Option<crate::project::Kept>,
}

/// mcpatch patched this very path (the backup says so), and the file no
/// longer carries the patch: an upgrade or reinstall put an original back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// The backup that apply made (`mcpatch backups`).
    pub backup: String,
    /// When it was patched, RFC 3339 UTC.
    pub patched_at: String,
}

/// Whether mcpatch's patch on this install was dropped: the newest backup of
/// its path was made by `apply` and not reverted since, and the file no
/// longer carries the patch.
fn dropped(backups: &[Backup], spec: &PatchSpec, install: &Install) -> Option<Dropped> {
    if matches!(install.state, State::Patched | State::Outdated) {
        return None;
    }
    let newest = backup::pick(backups, &install.file, None)?;
    if backup::is_reverted(newest) {
        return None;
    }
    let (bytes, _) = classify::hash_file(&install.file).ok()?;
    if crate::identity::text_of(&bytes).contains(spec.patch_marker.as_str()) {
        return None;
    }
    Some(Dropped {
        backup: newest.id.clone(),
        patched_at: newest.manifest.created.clone(),
    })
}

/// Fill `report.aftermath`: each install's dropped patch and running processes.
pub fn look_after(targets: &[&PatchSpec], report: &mut StatusReport, env: &Environment) {
    if report.installs.is_empty() {
        return;
    }
    // Read once: each target's backups (an unreadable folder shows no dropped
    // patch) and the processes.
    let backups: Vec<Vec<Backup>> = targets
        .iter()
        .map(|spec| {
            env.state_home()
                .ok()
                .and_then(|h| backup::list(&backup::root(&h, spec)).ok())
                .unwrap_or_default()
        })
        .collect();
    let table = ProcessTable::scan();
    let gemini_update = targets
        .iter()
        .any(|t| t.driver == Driver::GeminiCli)
        .then(|| gemini_cli::auto_update(env));
    report.aftermath = report
        .installs
        .iter()
        .map(|i| {
            let at = targets
                .iter()
                .position(|t| t.target == i.target)
                .expect("installs are of the targets searched for");
            Aftermath {
                dropped: dropped(&backups[at], targets[at], i),
                running: Some(table.running(targets[at], &i.path, &i.file)),
                auto_update: gemini_update
                    .clone()
                    .filter(|_| targets[at].driver == Driver::GeminiCli)
                    .filter(|_| gemini_cli::self_updating(&i.path)),
                untrusted: crate::trust::untrusted(&i.path, &[&i.file]),
                kept: crate::project::kept(i, targets[at]),
            }
        })
        .collect();
}
