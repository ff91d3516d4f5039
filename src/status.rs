//! `mcpatch status`: survey every install, print the table or JSON.

use std::path::PathBuf;

use serde::Serialize;

use crate::classify::Install;
use crate::color;
use crate::environment::Environment;
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::registry::PatchSpec;
use crate::running::RunningProcess;
use crate::survey::table::render_table;
use crate::survey::{
    collect_all, collect_all_remembering, look_after, outcome, searched_before, Collected, Dropped,
    Said, StatusReport, Unreadable,
};
use crate::targets::gemini_cli::AutoUpdate;

/// The `status --json` document: each install with `dropped` and `running`.
#[derive(Serialize)]
struct StatusJson<'a> {
    installs: Vec<InstallJson<'a>>,
    searched: &'a [String],
    errors: &'a [Unreadable],
    /// What stopped `status`, else null (as `StatusReport::error`).
    error: Option<&'a str>,
}

#[derive(Serialize)]
struct InstallJson<'a> {
    #[serde(flatten)]
    install: &'a Install,
    /// The patch mcpatch put on this path and an upgrade or reinstall took off, else null.
    dropped: Option<&'a Dropped>,
    /// Processes that started before the file last changed; null where mcpatch cannot tell.
    running: Option<&'a [RunningProcess]>,
    /// gemini-cli installs its own updater replaces: whether auto-update is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    auto_update: Option<&'a AutoUpdate>,
    /// As root: why verify and apply will not run this install's code without
    /// `--trust-owner` (a path another user can change), else left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    untrusted: Option<String>,
    /// An install in a project's node_modules: what re-applies its patch after
    /// `npm install` and `npm ci` ("postinstall", "patch-package", "pnpm"), or
    /// null (they undo it); left out outside a project.
    #[serde(skip_serializing_if = "Option::is_none")]
    kept_by: Option<Option<&'static str>>,
}

pub fn run(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    json: bool,
    env: &Environment,
) -> Result<Outcome> {
    let print_json = |report: &StatusReport| {
        let doc = StatusJson {
            installs: report
                .installs
                .iter()
                .enumerate()
                .map(|(n, install)| {
                    let a = report.aftermath.get(n);
                    InstallJson {
                        install,
                        dropped: a.and_then(|a| a.dropped.as_ref()),
                        running: a
                            .and_then(|a| a.running.as_ref())
                            .and_then(|r| r.processes.as_deref()),
                        auto_update: a.and_then(|a| a.auto_update.as_ref()),
                        untrusted: a.and_then(|a| a.untrusted.as_ref()).map(|u| u.note()),
                        kept_by: a
                            .and_then(|a| a.kept.as_ref())
                            .map(|k| k.by.map(crate::project::How::as_str)),
                    }
                })
                .collect(),
            searched: &report.searched,
            errors: &report.errors,
            error: report.error.as_deref(),
        };
        // Paths are text by path_json, so the report always serializes.
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        crate::outln!("{text}");
    };
    let Collected { mut report, failed } = match collect_all_remembering(targets, paths, env) {
        Ok(collected) => collected,
        Err(e) => {
            if json {
                print_json(&StatusReport {
                    installs: Vec::new(),
                    searched: searched_before(paths, &e),
                    errors: Vec::new(),
                    error: Some(e.to_string()),
                    aftermath: Vec::new(),
                    looked_for: Said::of(targets),
                });
            }
            return Err(e);
        }
    };
    look_after(targets, &mut report, env);
    let total = report.installs.len() + failed.len();
    // The error the run ends with; with several, each is printed first.
    let (each, error) = if failed.len() == 1 && total == 1 {
        (Vec::new(), failed.into_iter().next())
    } else if failed.is_empty() {
        (Vec::new(), None)
    } else {
        let summary = Error::SomeUnreadable {
            failed: failed.len(),
            total,
        };
        (failed, Some(summary))
    };
    if json {
        report.error = error.as_ref().map(|e| e.to_string());
        print_json(&report);
    } else if !report.installs.is_empty() || error.is_none() {
        crate::out!("{}", render_table(&report));
    }
    for e in &each {
        let message = crate::output::clean_lines(&e.to_string()).into_owned();
        crate::errln!("{}", color::stderr().error(&message));
    }
    match error {
        Some(e) => Err(e),
        None => Ok(outcome(&report)),
    }
}

/// `status --host-fix`: the fix of each host (once each) of the installs
/// found, as one shell script on stdout; nothing there when no host needs one.
pub fn print_host_fix(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    env: &Environment,
) -> Result<Outcome> {
    let Collected { report, .. } = collect_all(targets, paths, env)?;
    let mut seen = Vec::new();
    let mut script = String::new();
    for d in report
        .installs
        .iter()
        .filter_map(|i| i.host_defect.as_ref())
    {
        if !seen.contains(&&d.host) {
            seen.push(&d.host);
            if script.is_empty() {
                script.push_str("set -eu\n");
            }
            script.push_str(&d.script());
        }
    }
    if script.is_empty() {
        crate::errln!("no host of the installs found has a known start-up defect: nothing to fix");
    } else {
        crate::out!("{script}");
    }
    Ok(Outcome::Clean)
}
