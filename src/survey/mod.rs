//! The survey every command starts from: find every install of the targets
//! (locate), classify each, and add what the backups say about it. `status`
//! prints it; apply, revert, diff and verify work on it.

mod aftermath;
pub mod table;

use std::path::PathBuf;

use serde::Serialize;

use crate::backup;
use crate::classify::{self, Install, State};
use crate::environment::Environment;
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::locate::{self, LocateReport};
use crate::path_json;
use crate::registry::{self, PatchSpec};

pub use aftermath::{look_after, Aftermath, Dropped};

/// The `status --json` document.
#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub installs: Vec<Install>,
    /// Where mcpatch looked.
    pub searched: Vec<String>,
    /// Installs found but not readable, each with its error.
    pub errors: Vec<Unreadable>,
    /// What stopped `status` (a bad `--path`, an unreadable install), as on
    /// stderr, else null: with `--json` an error is still one JSON object.
    pub error: Option<String>,
    /// What `status` adds per install (same order as `installs`; empty
    /// where it was not looked up): a dropped patch, old code still running.
    #[serde(skip)]
    pub aftermath: Vec<Aftermath>,
    /// The packages looked for and their hosts, as the table says them.
    #[serde(skip)]
    pub looked_for: Said,
}

/// The targets of a search, in words: "@deepseek-ai/dsh-mcp-client or
/// mcp-remote" and "DSH or mcp-remote".
#[derive(Debug, Default, Clone)]
pub struct Said {
    pub packages: String,
    pub hosts: String,
}

impl Said {
    pub fn of(targets: &[&PatchSpec]) -> Said {
        Said {
            packages: registry::said(targets.iter().map(|t| t.package.as_str())),
            hosts: registry::said(targets.iter().map(|t| t.texts.host)),
        }
    }
}

/// An install that was found but could not be read or classified.
#[derive(Debug, Serialize)]
pub struct Unreadable {
    pub target: &'static str,
    #[serde(serialize_with = "path_json::serialize")]
    pub path: PathBuf,
    #[serde(serialize_with = "path_json::serialize")]
    pub file: PathBuf,
    /// The error, as printed.
    pub error: String,
}

/// What a search found: the report, and each unreadable install's error.
pub struct Collected {
    pub report: StatusReport,
    pub failed: Vec<Error>,
}

/// Locate and classify; the first install that cannot be read is the error.
pub fn collect(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    env: &Environment,
) -> Result<StatusReport> {
    let Collected { report, failed } = collect_all(targets, paths, env)?;
    match failed.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// Locate and classify every install of the targets, keeping going past one
/// that cannot be read. An explicit `--path` that holds no install at all is
/// an error.
pub fn collect_all(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    env: &Environment,
) -> Result<Collected> {
    collect_with(targets, paths, env, None)
}

/// [`collect_all`] for a plain `status`: what the last `status` read and
/// found, where the files are unchanged, is taken from the state home's
/// cache ([`crate::status_cache`]) instead of read again; the cache is saved
/// after. Never for a command that changes files or runs them.
pub fn collect_all_remembering(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    env: &Environment,
) -> Result<Collected> {
    let home = env.state_home().ok();
    let cache = crate::status_cache::StatusCache::load(home.as_deref());
    collect_with(targets, paths, env, Some(cache))
}

fn collect_with(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    env: &Environment,
    cache: Option<crate::status_cache::StatusCache>,
) -> Result<Collected> {
    let LocateReport {
        installs,
        searched,
        mut cache,
        ..
    } = match cache {
        Some(c) => locate::locate_remembering(targets, paths, env, c)?,
        None => locate::locate(targets, paths, env)?,
    };
    let looked_for = Said::of(targets);
    if installs.is_empty() && !paths.is_empty() {
        return Err(Error::NoInstallFound {
            package: looked_for.packages,
            searched,
        });
    }
    let mut classified = Vec::new();
    let mut errors = Vec::new();
    let mut failed = Vec::new();
    for located in &installs {
        let spec = registry::find(targets, located.target, &located.package);
        let classified_one = match cache.as_mut() {
            Some(c) => classify::classify_remembering(spec, located, c),
            None => classify::classify(spec, located),
        };
        match classified_one {
            Ok(mut install) => {
                install.host_defect = crate::targets::host_defect(spec.driver, &install.path, env);
                classified.push(install)
            }
            Err(e) => {
                errors.push(Unreadable {
                    target: located.target,
                    path: located.package_dir.clone(),
                    file: located.file.clone(),
                    error: e.to_string(),
                });
                failed.push(e);
            }
        }
    }
    // Installs of one target together, in the order the targets are given.
    classified.sort_by_key(|i| targets.iter().position(|t| t.target == i.target));
    for spec in targets {
        next_steps_from_backups(spec, env, &mut classified);
    }
    if let Some(c) = cache {
        c.save();
    }
    Ok(Collected {
        report: StatusReport {
            installs: classified,
            searched,
            errors,
            error: None,
            aftermath: Vec::new(),
            looked_for,
        },
        failed,
    })
}

/// Next steps that depend on the backups under `$DSH_HOME`: a patched file
/// with no backup is not offered `mcpatch revert`; a modified file the patch
/// does not fit is sent to `mcpatch revert --yes`, not to a reinstall, when
/// its newest backup holds a known original (a patched file edited by hand).
fn next_steps_from_backups(spec: &PatchSpec, env: &Environment, installs: &mut [Install]) {
    let reinstall = |i: &Install| {
        i.target == spec.target
            && i.state == State::Modified
            && i.next_step == spec.texts.reinstall_step
    };
    if !installs
        .iter()
        .any(|i| (i.target == spec.target && i.state == State::Patched) || reinstall(i))
    {
        return;
    }
    let Ok(home) = env.state_home() else { return };
    let root = backup::root(&home, spec);
    let Ok(listing) = backup::list_all(&root) else {
        return;
    };
    for install in installs.iter_mut().filter(|i| i.target == spec.target) {
        if install.state == State::Patched {
            if backup::pick(&listing.backups, &install.file, None).is_none() {
                install.next_step = classify::NEXT_PATCHED_NO_BACKUP;
            }
        } else if reinstall(install) {
            if let Some(b) = backup::original_of(&root, spec, &install.file) {
                install.next_step = classify::NEXT_REVERT_TO_ORIGINAL;
                let held = format!("backup {} holds a known original of this file", b.id);
                install.note = Some(match install.note.take() {
                    Some(note) => format!("{note}; {held}"),
                    None => held,
                });
            }
        }
    }
}

/// One path to change: an install's file, or the same file reached through
/// another package folder (a file shared by several has one item per folder).
pub struct FileItem<'a> {
    pub install: &'a Install,
    pub target: &'static str,
    pub file: PathBuf,
    pub dir: PathBuf,
    pub version: Option<String>,
    pub state: State,
    /// Why the file was not found (see [`Install::unfound`]).
    pub unfound: Option<String>,
}

/// Every path `apply` and `revert` work on, install by install.
pub fn each_file(installs: &[Install]) -> Vec<FileItem<'_>> {
    let mut items = Vec::new();
    for install in installs {
        let relative = install
            .file
            .strip_prefix(&install.path)
            .unwrap_or(&install.file)
            .to_path_buf();
        let dirs = std::iter::once(install.path.clone()).chain(install.same_file_as.clone());
        for dir in dirs {
            let file = if dir == install.path {
                install.file.clone()
            } else {
                dir.join(&relative)
            };
            items.push(FileItem {
                install,
                target: install.target,
                file,
                dir,
                version: install.version.clone(),
                state: install.state,
                unfound: install.unfound.clone(),
            });
        }
    }
    items
}

/// Attention when any install is affected or modified, or its host cannot start.
pub fn outcome(report: &StatusReport) -> Outcome {
    if report.installs.iter().any(|i| {
        matches!(i.state, State::Affected | State::Modified | State::Outdated)
            || i.host_defect.is_some()
    }) {
        Outcome::Attention
    } else {
        Outcome::Clean
    }
}

/// Where a search that failed had looked: the places an error names, else
/// each `--path` given (what `--json` reports as `searched`).
pub fn searched_before(paths: &[PathBuf], e: &Error) -> Vec<String> {
    match e {
        Error::NoInstallFound { searched, .. } | Error::NothingToVerify { searched, .. } => {
            searched.clone()
        }
        _ => paths
            .iter()
            .map(|p| format!("--path {}", p.display()))
            .collect(),
    }
}
