//! The installs table: what `status` prints, and what apply and revert print
//! before they change anything; the short hash and coloured state other
//! tables share.

use super::StatusReport;
use crate::classify::{Install, State};
use crate::color::{self, Painter, Style};
use crate::host_check;
use crate::running;
use crate::table::{hanging, hanging_list, shorten_middle, Align, Table};
use crate::targets::gemini_cli;
use crate::width;

/// The command that prints the fix of every host that cannot start as a
/// shell script (the run's `--path`/`--target` are added where it is printed).
pub const HOST_FIX_COMMAND: &str = "mcpatch status --host-fix | sh";

/// A host that cannot start, under its install, in three lines: what and why
/// in a few words (wrapped), and the short command that fixes it (the whole
/// story is in `status --json` and in the script that command prints).
pub fn render_host_defect(defect: &host_check::HostDefect, columns: Option<usize>) -> String {
    let mut s = hanging("    host: ", &defect.headline, columns);
    s.push_str(&hanging("    why: ", &defect.short_why, columns));
    s.push_str(&format!(
        "    fix: {}\n",
        crate::scope::commands(HOST_FIX_COMMAND)
    ));
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
    let counts: Vec<String> = State::ALL
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
        s.push_str(&hanging("    keep: ", crate::project::UNKEPT_NOTE, columns));
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
