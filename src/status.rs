//! `mcpatch status`: find and classify every install, print a table or JSON.

use std::path::PathBuf;

use serde::Serialize;

use crate::backup::{self, Backup};
use crate::classify::{self, Install, State};
use crate::color::{self, Painter, Style};
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::locate::{self, Environment, LocateReport};
use crate::path_json;
use crate::registry::PatchSpec;
use crate::running::{self, ProcessTable, RunningProcess, RunningReport};
use crate::table::{hanging, hanging_list, shorten_middle, Align, Table};
use crate::width;

/// The `status --json` document.
#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub installs: Vec<Install>,
    /// Where mcpatch looked.
    pub searched: Vec<String>,
    /// Installs found but not readable, each with its error.
    pub errors: Vec<Unreadable>,
    /// What `status` adds per install (same order as `installs`; empty
    /// where it was not looked up): a dropped patch, old code still running.
    #[serde(skip)]
    pub aftermath: Vec<Aftermath>,
}

/// What happened to an install since mcpatch last changed it.
#[derive(Debug, Clone, Default)]
pub struct Aftermath {
    pub dropped: Option<Dropped>,
    pub running: Option<RunningReport>,
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

/// The `status --json` document: each install with `dropped` and `running`.
#[derive(Serialize)]
struct StatusJson<'a> {
    installs: Vec<InstallJson<'a>>,
    searched: &'a [String],
    errors: &'a [Unreadable],
}

#[derive(Serialize)]
struct InstallJson<'a> {
    #[serde(flatten)]
    install: &'a Install,
    /// The patch mcpatch put on this path and an upgrade or reinstall took off, else null.
    dropped: Option<&'a Dropped>,
    /// Processes that started before the file last changed; null where mcpatch cannot tell.
    running: Option<&'a [RunningProcess]>,
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
    if String::from_utf8_lossy(&bytes).contains(spec.patch_marker.as_str()) {
        return None;
    }
    Some(Dropped {
        backup: newest.id.clone(),
        patched_at: newest.manifest.created.clone(),
    })
}

/// Fill `report.aftermath`: each install's dropped patch and running processes.
pub fn look_after(spec: &PatchSpec, report: &mut StatusReport, env: &Environment) {
    if report.installs.is_empty() {
        return;
    }
    // Read once: the backups (an unreadable folder shows no dropped patch) and the processes.
    let backups = env
        .dsh_home()
        .ok()
        .and_then(|h| backup::list(&backup::root(&h, spec)).ok())
        .unwrap_or_default();
    let table = ProcessTable::scan();
    report.aftermath = report
        .installs
        .iter()
        .map(|i| Aftermath {
            dropped: dropped(&backups, spec, i),
            running: Some(table.running(&i.path, &i.file)),
        })
        .collect();
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
            aftermath: Vec::new(),
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
    let Collected { mut report, failed } = collect_all(spec, paths, env)?;
    look_after(spec, &mut report, env);
    if json {
        let doc = StatusJson {
            installs: report
                .installs
                .iter()
                .zip(&report.aftermath)
                .map(|(install, a)| InstallJson {
                    install,
                    dropped: a.dropped.as_ref(),
                    running: a.running.as_ref().and_then(|r| r.processes.as_deref()),
                })
                .collect(),
            searched: &report.searched,
            errors: &report.errors,
        };
        // Paths are text by path_json, so the report always serializes.
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        crate::outln!("{text}");
    } else if !report.installs.is_empty() || failed.is_empty() {
        crate::out!("{}", render_table(&report));
    }
    let total = report.installs.len() + failed.len();
    if failed.len() == 1 && total == 1 {
        return Err(failed.into_iter().next().expect("one error"));
    }
    for e in &failed {
        eprintln!("{}", color::stderr().error(&e.to_string()));
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

/// A state as tables show it: red when the bug is there or the patch cannot
/// help, yellow when it needs a look, green when it recovers.
pub fn paint_state(paint: Painter, state: State) -> String {
    let style = match state {
        State::Affected | State::Unsupported => Style::Red,
        State::Modified | State::Outdated => Style::Yellow,
        State::Patched | State::UpstreamFixed => Style::Green,
    };
    paint.paint(style, state.as_str())
}

/// The table for stdout: as wide as stdout allows, coloured as stdout allows.
pub fn render_table(report: &StatusReport) -> String {
    render_table_within(report, width::stdout_columns(), color::stdout())
}

/// The table in at most `columns` (when given): one line per install when
/// that fits, else each install's path on a line of its own (shortened from
/// the middle if even that is too wide) above its version, state and next step.
pub fn render_table_within(
    report: &StatusReport,
    columns: Option<usize>,
    paint: Painter,
) -> String {
    let mut s = String::new();
    let help = paint.paint(Style::BoldCyan, "help:");
    if report.installs.is_empty() {
        s.push_str("no @deepseek-ai/dsh-mcp-client install found; looked in:\n");
        for w in &report.searched {
            s.push_str(&hanging("  - ", w, columns));
        }
        s.push_str(&hanging(
            &format!("{help} "),
            "if DSH is installed elsewhere, pass its folder with --path",
            columns,
        ));
        return s;
    }
    let version = |i: &Install| i.version.clone().unwrap_or_else(|| "?".into());
    let mut wide = Table::new(
        &["PATH", "VERSION", "STATE", "NEXT STEP"],
        &[Align::Left, Align::Left, Align::Left, Align::Left],
    );
    let mut narrow = Table::new(
        &["VERSION", "STATE", "NEXT STEP"],
        &[Align::Left, Align::Left, Align::Left],
    );
    for i in &report.installs {
        let state = paint_state(paint, i.state);
        wide.row(vec![
            i.path.display().to_string(),
            version(i),
            state.clone(),
            i.next_step.to_string(),
        ]);
        narrow.row(vec![version(i), state, i.next_step.to_string()]);
    }
    let rows: Vec<String> = match columns {
        Some(c) if wide.width() > c => {
            let indent = |text: String| {
                text.lines()
                    .map(|l| format!("    {l}\n"))
                    .collect::<String>()
            };
            let lines = narrow.lines_within(Some(c.saturating_sub(4)));
            let mut rows = vec![format!("PATH\n{}", indent(lines[0].clone()))];
            for (install, line) in report.installs.iter().zip(&lines[1..]) {
                let path = shorten_middle(&install.path.display().to_string(), c);
                rows.push(format!("{path}\n{}", indent(line.clone())));
            }
            rows
        }
        _ => wide.lines(),
    };
    s.push_str(&rows[0]);
    for (n, (row, install)) in rows[1..].iter().zip(&report.installs).enumerate() {
        s.push_str(row);
        let mut detail = short_hash(&install.sha256);
        if let Some(rev) = install.revision {
            detail.push_str(&format!(" ({rev})"));
        }
        if install.hard_links > 1 {
            detail.push_str(&format!(
                "; {} hard links: a shared store copy, replaced by a new file, never written through",
                install.hard_links
            ));
        }
        s.push_str(&hanging("    sha256 ", &detail, columns));
        for other in &install.same_file_as {
            let lead = "    same file as ";
            let other = other.display().to_string();
            let other = match columns {
                Some(c) => shorten_middle(&other, c.saturating_sub(lead.len())),
                None => other,
            };
            s.push_str(&format!("{lead}{other}\n"));
        }
        if let Some(note) = &install.note {
            s.push_str(&hanging("    note: ", note, columns));
        }
        let after = report.aftermath.get(n);
        if let Some(d) = after.and_then(|a| a.dropped.as_ref()) {
            s.push_str(&hanging(
                "    dropped: ",
                &format!(
                    "mcpatch patched this file at {} (backup {}), and an upgrade or a reinstall has put an unpatched file back; run `mcpatch apply` to patch it again (or `mcpatch revert` to keep it unpatched and drop this note)",
                    d.patched_at, d.backup
                ),
                columns,
            ));
        }
        if let Some(r) = after.and_then(|a| a.running.as_ref()) {
            for line in running::lines(r) {
                s.push_str(&hanging("    ", &line, columns));
            }
        }
    }
    let count = |st: State| report.installs.iter().filter(|i| i.state == st).count();
    let counts: Vec<String> = [
        State::Affected,
        State::Patched,
        State::Outdated,
        State::UpstreamFixed,
        State::Modified,
        State::Unsupported,
    ]
    .into_iter()
    .map(|st| format!("{} {}", count(st), st.as_str()))
    .collect();
    s.push_str(&hanging_list(
        &format!("{} install(s): ", report.installs.len()),
        &counts,
        columns,
    ));
    s
}
