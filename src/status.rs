//! `mcpatch status`: find and classify every install, print a table or JSON.

use std::io::Write;

use serde::Serialize;

use crate::classify::{self, Install, State};
use crate::error::Result;
use crate::exit_code::Outcome;
use crate::locate::{self, Environment, LocateReport};
use crate::registry::PatchSpec;
use crate::table::{Align, Table};

/// The `status --json` document.
#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub installs: Vec<Install>,
    /// Where mcpatch looked.
    pub searched: Vec<String>,
}

/// Locate and classify.
pub fn collect(
    spec: &PatchSpec,
    paths: &[std::path::PathBuf],
    env: &Environment,
) -> Result<StatusReport> {
    let LocateReport {
        installs, searched, ..
    } = locate::locate(&spec.package, &spec.file, paths, env)?;
    let installs = installs
        .iter()
        .map(|l| classify::classify(spec, l))
        .collect::<Result<Vec<_>>>()?;
    Ok(StatusReport { installs, searched })
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

pub fn run(
    spec: &PatchSpec,
    paths: &[std::path::PathBuf],
    json: bool,
    env: &Environment,
) -> Result<Outcome> {
    let report = collect(spec, paths, env)?;
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&report).expect("status serializes")
        );
    } else {
        let _ = write!(out, "{}", render_table(&report));
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
