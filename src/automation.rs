//! The `--json` report of `apply` and `revert` for fleet tools (Ansible, Salt,
//! loops over ssh): per install, whether it changed, its state before and
//! after, the backup involved and the error, so a tool can tell what a run did
//! without parsing text.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::classify::{self, State};
use crate::error::Result;
use crate::exit_code::Outcome;
use crate::outln;
use crate::path_json;
use crate::registry::PatchSpec;
use crate::running::{ProcessTable, RunningProcess};
use crate::survey::Unreadable;
use crate::verify::GateReport;

/// What one run did to one install (one path: a file shared by several
/// package folders has one entry per folder).
#[derive(Debug, Clone, Serialize)]
pub struct InstallChange {
    /// The target it is an install of (`--target NAME`).
    pub target: &'static str,
    /// The package folder.
    #[serde(serialize_with = "path_json::serialize")]
    pub path: PathBuf,
    /// The file patched (`lib/index.js`, or the file found by content).
    #[serde(serialize_with = "path_json::serialize")]
    pub file: PathBuf,
    /// Whether this run changed the file (in a dry run: whether a real run would).
    pub changed: bool,
    /// The state mcpatch found when it started (null: the file could not be read).
    pub state_before: Option<State>,
    /// The state of the file when mcpatch was done with it, read again from
    /// disk (in a dry run: the state a real run would leave; null: unreadable).
    pub state_after: Option<State>,
    /// The backup this run made (`apply`) or restored (`revert`), else null.
    pub backup: Option<String>,
    /// Why the install was not brought where the command takes it (refused,
    /// no backup, or the error that stopped it), else null.
    pub error: Option<String>,
    /// The processes that started before the file last changed and so still
    /// run the code it held before (pid, started, command); null where
    /// mcpatch cannot tell (no /proc).
    pub running: Option<Vec<RunningProcess>>,
    /// `apply` only, for a revision mcpatch does not know: the verify run on
    /// the patched copy before it was written (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<GateReport>,
    /// The npm package (for a target over several packages, which one).
    #[serde(skip)]
    pub package: String,
}

impl InstallChange {
    /// An entry for a file, nothing done to it yet.
    pub fn new(
        target: &'static str,
        path: &Path,
        file: &Path,
        state_before: Option<State>,
    ) -> Self {
        InstallChange {
            target,
            path: path.to_path_buf(),
            file: file.to_path_buf(),
            changed: false,
            state_before,
            state_after: state_before,
            backup: None,
            error: None,
            // Filled by fill_running once the run is done with every file.
            running: None,
            verify: None,
            package: String::new(),
        }
    }

    /// An entry for an install found but not readable.
    pub fn unreadable(u: &Unreadable) -> Self {
        InstallChange {
            error: Some(u.error.clone()),
            state_after: None,
            ..InstallChange::new(u.target, &u.path, &u.file, None)
        }
    }
}

/// The whole `apply --json` or `revert --json` document.
#[derive(Debug, Default, Serialize)]
pub struct ChangeReport {
    /// Whether any install changed (in a dry run: would change).
    pub changed: bool,
    /// `apply` only: whether this was a dry run (nothing was written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    pub installs: Vec<InstallChange>,
    /// Every place mcpatch looked.
    pub searched: Vec<String>,
    /// What stopped the command outside any one install (bad input, node
    /// missing, the backups folder), else null; each install's own failure is
    /// in its `error`.
    pub error: Option<String>,
}

impl ChangeReport {
    /// Fill each install's `running` from one read of the process table
    /// (call when every file is as this run leaves it).
    pub fn fill_running(&mut self, targets: &[&PatchSpec], table: &ProcessTable) {
        for i in &mut self.installs {
            let spec = crate::registry::find(targets, i.target, &i.package);
            i.running = table.running(spec, &i.path, &i.file).processes;
        }
    }

    /// Print the report for `result`, the command's own result, and hand it back.
    pub fn finish(mut self, result: Result<Outcome>) -> Result<Outcome> {
        self.changed = self.installs.iter().any(|i| i.changed);
        if let Err(e) = &result {
            if !self.installs.iter().any(|i| i.error.is_some()) {
                self.error = Some(e.to_string());
            }
        }
        // Paths are text by path_json, so the report always serializes.
        outln!(
            "{}",
            serde_json::to_string_pretty(&self).unwrap_or_default()
        );
        result
    }
}

/// The state `file` is in now, read from disk (None if it cannot be read).
pub fn state_now(spec: &PatchSpec, file: &Path) -> Option<State> {
    let (bytes, sha256) = classify::hash_file(file).ok()?;
    Some(classify::classify_bytes(spec, &bytes, &sha256).0)
}
