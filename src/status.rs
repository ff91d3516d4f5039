//! `mcpatch status`: find and classify every install, print a table or JSON.

use std::path::PathBuf;

use serde::Serialize;

use crate::classify::{self, Install, State};
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::locate::{self, Environment, LocateReport};
use crate::path_json;
use crate::registry::PatchSpec;
use crate::table::{Align, Table};

/// The `status --json` document.
#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub installs: Vec<Install>,
    /// Where mcpatch looked.
    pub searched: Vec<String>,
    /// Installs found but not readable, each with its error.
    pub errors: Vec<Unreadable>,
}

/// An install that was found but could not be read or classified.
#[derive(Debug, Serialize)]
pub struct Unreadable {
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
pub fn collect(spec: &PatchSpec, paths: &[PathBuf], env: &Environment) -> Result<StatusReport> {
    let Collected { report, failed } = collect_all(spec, paths, env)?;
    match failed.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// Locate and classify every install, keeping going past one that cannot be
/// read. An explicit `--path` that holds no install at all is an error.
pub fn collect_all(spec: &PatchSpec, paths: &[PathBuf], env: &Environment) -> Result<Collected> {
    let LocateReport {
        installs, searched, ..
    } = locate::locate(&spec.package, &spec.file, paths, env)?;
    if installs.is_empty() && !paths.is_empty() {
        return Err(Error::NoInstallFound {
            package: spec.package.clone(),
            searched,
        });
    }
    let mut classified = Vec::new();
    let mut errors = Vec::new();
    let mut failed = Vec::new();
    for located in &installs {
        match classify::classify(spec, located) {
            Ok(install) => classified.push(install),
            Err(e) => {
                errors.push(Unreadable {
                    path: located.package_dir.clone(),
                    file: located.file.clone(),
                    error: e.to_string(),
                });
                failed.push(e);
            }
        }
    }
    Ok(Collected {
        report: StatusReport {
            installs: classified,
            searched,
            errors,
        },
        failed,
    })
}

/// Attention when any install is affected or modified.
pub fn outcome(report: &StatusReport) -> Outcome {
    if report
        .installs
        .iter()
        .any(|i| matches!(i.state, State::Affected | State::Modified | State::Outdated))
    {
        Outcome::Attention
    } else {
        Outcome::Clean
    }
}

pub fn run(spec: &PatchSpec, paths: &[PathBuf], json: bool, env: &Environment) -> Result<Outcome> {
    let Collected { report, failed } = collect_all(spec, paths, env)?;
    if json {
        // Paths are text by path_json, so the report always serializes.
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        crate::outln!("{text}");
    } else if !report.installs.is_empty() || failed.is_empty() {
        crate::out!("{}", render_table(&report));
    }
    let total = report.installs.len() + failed.len();
    if failed.len() == 1 && total == 1 {
        return Err(failed.into_iter().next().expect("one error"));
    }
    for e in &failed {
        eprintln!("error: {e}");
    }
    if !failed.is_empty() {
        return Err(Error::SomeUnreadable {
            failed: failed.len(),
            total,
        });
    }
    Ok(outcome(&report))
}

/// Short form of a sha256 for tables.
pub fn short_hash(h: &str) -> String {
    if h.len() > 12 {
        format!("{}…{}", &h[..8], &h[h.len() - 4..])
    } else {
        h.to_string()
    }
}

pub fn render_table(report: &StatusReport) -> String {
    let mut s = String::new();
    if report.installs.is_empty() {
        s.push_str("no @deepseek-ai/dsh-mcp-client install found; looked in:\n");
        for w in &report.searched {
            s.push_str(&format!("  - {w}\n"));
        }
        s.push_str("help: if DSH is installed elsewhere, pass its folder with --path\n");
        return s;
    }
    let mut table = Table::new(
        &["PATH", "VERSION", "STATE", "NEXT STEP"],
        &[Align::Left, Align::Left, Align::Left, Align::Left],
    );
    for i in &report.installs {
        table.row(vec![
            i.path.display().to_string(),
            i.version.clone().unwrap_or_else(|| "?".into()),
            i.state.as_str().to_string(),
            i.next_step.to_string(),
        ]);
    }
    let lines = table.lines();
    s.push_str(&lines[0]);
    for (line, install) in lines[1..].iter().zip(&report.installs) {
        s.push_str(line);
        let mut detail = format!("    sha256 {}", short_hash(&install.sha256));
        if let Some(rev) = install.revision {
            detail.push_str(&format!(" ({rev})"));
        }
        if install.hard_links > 1 {
            detail.push_str(&format!(
                "; {} hard links: a shared store copy, replaced by a new file, never written through",
                install.hard_links
            ));
        }
        s.push_str(&detail);
        s.push('\n');
        for other in &install.same_file_as {
            s.push_str(&format!("    same file as {}\n", other.display()));
        }
        if let Some(note) = &install.note {
            s.push_str(&format!("    note: {note}\n"));
        }
    }
    let count = |st: State| report.installs.iter().filter(|i| i.state == st).count();
    s.push_str(&format!(
        "{} install(s): {} affected, {} patched, {} outdated, {} upstream-fixed, {} modified, {} unsupported\n",
        report.installs.len(),
        count(State::Affected),
        count(State::Patched),
        count(State::Outdated),
        count(State::UpstreamFixed),
        count(State::Modified),
        count(State::Unsupported)
    ));
    s
}
