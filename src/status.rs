//! `mcpatch status`: find and classify every install, print a table or JSON.

use crate::targets::gemini_cli::{self, AutoUpdate};
use crate::targets::Driver;
use std::path::PathBuf;

use serde::Serialize;

use crate::backup::{self, Backup};
use crate::classify::{self, Install, State};
use crate::color::{self, Painter, Style};
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::host_check;
use crate::locate::{self, Environment, LocateReport};
use crate::path_json;
use crate::registry::{self, PatchSpec};
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

/// What happened to an install since mcpatch last changed it.
#[derive(Debug, Clone, Default)]
pub struct Aftermath {
    pub dropped: Option<Dropped>,
    /// gemini-cli: whether its auto-update (which drops the patch) is on.
    pub auto_update: Option<AutoUpdate>,
    pub running: Option<RunningReport>,
    /// As root: a path on the way to the install's code another user can change.
    pub untrusted: Option<crate::trust::Untrusted>,
    /// An install in a project: whether the project keeps its patch (crate::keep).
    pub kept: Option<crate::keep::Kept>,
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
    if crate::classify::text_of(&bytes).contains(spec.patch_marker.as_str()) {
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
                kept: crate::keep::kept(i, targets[at]),
            }
        })
        .collect();
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
    let LocateReport {
        installs, searched, ..
    } = locate::locate(targets, paths, env)?;
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
        match classify::classify(spec, located) {
            Ok(mut install) => {
                install.host_defect = spec.driver.host_defect(&install.path, env);
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
                            .map(|k| k.by.map(crate::keep::How::as_str)),
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
    let Collected { mut report, failed } = match collect_all(targets, paths, env) {
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

/// A host that cannot start, under its install: what and why wrapped, the
/// fix on one line of its own (a command is copied whole).
pub fn render_host_defect(defect: &host_check::HostDefect, columns: Option<usize>) -> String {
    let mut s = hanging("    host: ", &defect.what, columns);
    s.push_str(&hanging("    why: ", &defect.why, columns));
    s.push_str(&format!("    fix: {}\n", defect.fix));
    s
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
        s.push_str(&format!(
            "no {} install found; looked in:\n",
            report.looked_for.packages
        ));
        for w in &report.searched {
            s.push_str(&hanging("  - ", &crate::output::clean(w), columns));
        }
        s.push_str(&hanging(
            &format!("{help} "),
            &format!(
                "if {} is installed elsewhere, pass its folder with --path",
                report.looked_for.hosts
            ),
            columns,
        ));
        return s;
    }
    // The next steps carry this run's --path and --target, unless a command
    // with them cannot fit the terminal: then they are said once, below.
    let (scoped, body) = [true, false]
        .into_iter()
        .map(|scoped| {
            let rows = table_rows(report, columns, paint, scoped);
            let mut body = rows[0].clone();
            for (n, (row, install)) in rows[1..].iter().zip(&report.installs).enumerate() {
                body.push_str(row);
                body.push_str(&install_details(report, n, install, columns, scoped));
            }
            (scoped, body)
        })
        .find(|(scoped, body)| {
            !scoped
                || columns.is_none_or(|c| body.lines().all(|l| crate::color::visible_width(l) <= c))
        })
        .expect("the unscoped rows are always taken");
    s.push_str(&body);
    let reminder = crate::scope::reminder();
    if !scoped && !reminder.is_empty() {
        s.push_str(&hanging(
            "next steps: ",
            &format!("run each command above with {reminder} this run, so that it works on these installs only"),
            columns,
        ));
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

/// The table's header and one row per install: one line per install when
/// that fits `columns`, else each install's path on a line of its own
/// (shortened from the middle if even that is too wide) above its version,
/// state and next step (with this run's --path and --target when `scoped`).
fn table_rows(
    report: &StatusReport,
    columns: Option<usize>,
    paint: Painter,
    scoped: bool,
) -> Vec<String> {
    let version = |i: &Install| {
        i.version
            .as_deref()
            .map_or("?".into(), |v| crate::output::clean(v).into_owned())
    };
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
        let step = scoped_if(scoped, i.next_step);
        wide.row(vec![
            crate::output::path(&i.path),
            version(i),
            state.clone(),
            step.clone(),
        ]);
        narrow.row(vec![version(i), state, step]);
    }
    match columns {
        Some(c) if wide.width() > c => {
            let indent = |text: String| {
                text.lines()
                    .map(|l| format!("    {l}\n"))
                    .collect::<String>()
            };
            let lines = narrow.lines_within(Some(c.saturating_sub(4)));
            let mut rows = vec![format!("PATH\n{}", indent(lines[0].clone()))];
            for (install, line) in report.installs.iter().zip(&lines[1..]) {
                let path = shorten_middle(&crate::output::path(&install.path), c);
                rows.push(format!("{path}\n{}", indent(line.clone())));
            }
            rows
        }
        _ => wide.lines(),
    }
}

/// `text` with this run's --path and --target in its commands when `scoped`.
fn scoped_if(scoped: bool, text: &str) -> String {
    if scoped {
        crate::scope::commands(text).into_owned()
    } else {
        text.to_string()
    }
}

/// The lines under an install's row: its sha256, the files it shares, notes.
fn install_details(
    report: &StatusReport,
    n: usize,
    install: &Install,
    columns: Option<usize>,
    scoped: bool,
) -> String {
    let mut s = String::new();
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
    for c in &install.companions {
        let mut d = format!(
            "{} ({}) {}",
            short_hash(&c.sha256),
            c.role,
            c.state.as_str()
        );
        if let Some(rev) = c.revision {
            d.push_str(&format!(", {rev}"));
        }
        s.push_str(&hanging("    and sha256 ", &d, columns));
    }
    if !install.via.is_empty() {
        let joined = install.via.join(", ");
        let via = crate::output::clean(&joined);
        s.push_str(&hanging("    via ", &via, columns));
    }
    for other in &install.same_file_as {
        let lead = "    same file as ";
        let other = crate::output::path(other);
        let other = match columns {
            Some(c) => shorten_middle(&other, c.saturating_sub(lead.len())),
            None => other,
        };
        s.push_str(&format!("{lead}{other}\n"));
    }
    if let Some(note) = &install.note {
        let note = crate::output::clean(note);
        s.push_str(&hanging("    note: ", &scoped_if(scoped, &note), columns));
    }
    if let Some(defect) = &install.host_defect {
        s.push_str(&render_host_defect(defect, columns));
    }
    let after = report.aftermath.get(n);
    if let Some(d) = after.and_then(|a| a.dropped.as_ref()) {
        s.push_str(&hanging(
            "    dropped: ",
            &scoped_if(scoped, &format!(
                "mcpatch patched this file at {} (backup {}), and an upgrade or a reinstall has put an unpatched file back; run `mcpatch apply` to patch it again (or `mcpatch revert` to keep it unpatched and drop this note)",
                d.patched_at, d.backup
            )),
            columns,
        ));
    }
    if install.state == State::Patched
        && after
            .and_then(|a| a.kept.as_ref())
            .is_some_and(|k| k.by.is_none())
    {
        s.push_str(&hanging("    keep: ", crate::keep::UNKEPT_NOTE, columns));
    }
    if let Some(note) = after
        .and_then(|a| a.auto_update.as_ref())
        .and_then(gemini_cli::auto_update_note)
    {
        s.push_str(&hanging(
            "    auto-update: ",
            &scoped_if(scoped, &note),
            columns,
        ));
    }
    if let Some(u) = after.and_then(|a| a.untrusted.as_ref()) {
        s.push_str(&hanging(
            "    trust: ",
            &crate::output::clean(&u.note()),
            columns,
        ));
    }
    if let Some(r) = after.and_then(|a| a.running.as_ref()) {
        for line in running::lines(r) {
            s.push_str(&hanging("    ", &line, columns));
        }
    }
    s
}
