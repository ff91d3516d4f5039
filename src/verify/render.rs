//! `verify`'s text report: an install's heading, its scenario table (a row
//! per scenario, or a line each when the terminal is narrow), its note and
//! its overall word, coloured and fitted to the terminal's width.

use super::explore;
use super::report::{policy_label, InstallResult};
use super::scenario::{Expectation, Judgement};
use crate::color::visible_width;
use crate::color::{self, Painter, Style};
use crate::survey;
use crate::table::{hanging, shorten_middle, Align, Table};

/// A verdict as shown, coloured: green when it met its expectation, yellow
/// for RECOVERED (it met it, after failed calls), red with what was expected
/// when it did not.
pub(crate) fn shown_verdict(paint: Painter, j: &Judgement, expect: Expectation) -> String {
    if !j.ok {
        let text = format!("{} (expected {})", j.verdict, expect.verdict());
        return paint.paint(Style::Red, &text);
    }
    paint.paint(overall_style(j.verdict), j.verdict)
}

/// The colour of a verdict that met its expectation, or of an overall result.
pub(crate) fn overall_style(verdict: &str) -> Style {
    match verdict {
        "RECOVERED" => Style::Yellow,
        "STUCK" | "FAILED" => Style::Red,
        _ => Style::Green,
    }
}

pub(crate) fn render(r: &InstallResult) -> String {
    render_within(r, crate::width::stdout_columns(), color::stdout())
}

/// One install's results in at most `columns` (when given): a row per
/// scenario with its note wrapped under itself when that fits, else each
/// scenario on a line of its own (name and verdict) above its figures and note.
pub(crate) fn render_within(r: &InstallResult, columns: Option<usize>, paint: Painter) -> String {
    let mut s = String::new();
    let path = crate::output::path(&r.path);
    let (what, after) = match &r.backup {
        Some(id) => (
            path,
            format!(" (backup {}, the control)", crate::output::clean(id)),
        ),
        None => (
            path,
            format!(" ({})", survey::table::paint_state(paint, r.state)),
        ),
    };
    let what = match columns {
        Some(c) if visible_width(&what) + visible_width(&after) > c => {
            format!("{}\n   {after}", shorten_middle(&what, c))
        }
        _ => format!("{what}{after}"),
    };
    s.push_str(&format!("{what}\n"));
    s.push_str(&hanging(
        "    ",
        &format!(
            "sha256 {}, node {}{}",
            survey::table::short_hash(&r.sha256),
            r.node_version,
            if r.node_shim {
                " with Promise.withResolvers shim"
            } else {
                ""
            }
        ),
        columns,
    ));
    let rows: Vec<(String, &Judgement, Expectation)> = r
        .scenarios
        .iter()
        .map(|x| {
            let name = format!("{}{}", x.name, policy_label(x.policy));
            let name = match &x.build {
                Some(b) => format!("{b}: {name}"),
                None => name,
            };
            (name, &x.judgement, x.expected)
        })
        .collect();
    if !rows.is_empty() {
        s.push_str(&scenario_table(&rows, columns, paint));
    }
    if let Some(note) = &r.note {
        let note = crate::output::clean_lines(note);
        let note = crate::scope::commands_within(&note, columns);
        s.push_str(&hanging("note: ", &note, columns));
    }
    if let Some(e) = &r.exploration {
        s.push_str(&explore::render(e, columns, paint));
    }
    s.push_str(&paint.paint(overall_style(r.overall), r.overall));
    s.push('\n');
    s
}

/// The scenario table of a report (an install's, or a bridge's), in at most
/// `columns` (when given): a row per scenario (name, verdict, failed calls,
/// recovery ms, handshakes, note wrapped under itself) when the note gets at
/// least 30 columns, else each scenario on a line of its own (name and verdict)
/// above its figures and note. Notes carry servers' words: escaped.
pub(crate) fn scenario_table(
    rows: &[(String, &Judgement, Expectation)],
    columns: Option<usize>,
    paint: Painter,
) -> String {
    let mut table = Table::new(
        &[
            "SCENARIO",
            "VERDICT",
            "FAILED CALLS",
            "RECOVERY MS",
            "HANDSHAKES",
            "NOTE",
        ],
        &[
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    for (name, j, expected) in rows {
        table.row(vec![
            name.clone(),
            shown_verdict(paint, j, *expected),
            j.failed_calls.to_string(),
            j.recovery_ms
                .map(|m| m.to_string())
                .unwrap_or_else(|| "-".into()),
            j.initialize_count.to_string(),
            crate::output::clean(&j.note).into_owned(),
        ]);
    }
    match columns {
        Some(c) if table.width() > c && table.lead_width() + 30 > c => {
            let mut s = String::new();
            for (name, j, expected) in rows {
                s.push_str(&hanging(
                    "",
                    &format!("{name}: {}", shown_verdict(paint, j, *expected)),
                    Some(c),
                ));
                let calls = if j.failed_calls == 1 { "call" } else { "calls" };
                let handshakes = if j.initialize_count == 1 {
                    "handshake"
                } else {
                    "handshakes"
                };
                let recovered = match j.recovery_ms {
                    Some(ms) => format!(", recovery {ms} ms"),
                    None => String::new(),
                };
                s.push_str(&hanging(
                    "    ",
                    &format!(
                        "{} failed {calls}{recovered}, {} {handshakes}",
                        j.failed_calls, j.initialize_count
                    ),
                    Some(c),
                ));
                s.push_str(&hanging("    ", &crate::output::clean(&j.note), Some(c)));
            }
            s
        }
        _ => table.lines_within(columns).concat(),
    }
}

/// At most `n` characters of `text`, with `…` when cut.
pub(crate) fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut s: String = text.chars().take(n).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::report::broken;

    #[test]
    fn verdicts_are_green_when_met_yellow_when_recovered_and_red_when_not() {
        let paint = Painter::new(true);
        let met = |verdict: &'static str| Judgement {
            verdict,
            ok: true,
            ..broken(String::new())
        };
        assert_eq!(
            shown_verdict(paint, &met("SEAMLESS"), Expectation::Seamless),
            "\x1b[32mSEAMLESS\x1b[0m"
        );
        assert_eq!(
            shown_verdict(paint, &met("RECOVERED"), Expectation::Recover),
            "\x1b[33mRECOVERED\x1b[0m"
        );
        let stuck = Judgement {
            verdict: "STUCK",
            ..broken(String::new())
        };
        assert_eq!(
            shown_verdict(paint, &stuck, Expectation::Seamless),
            "\x1b[31mSTUCK (expected SEAMLESS)\x1b[0m"
        );
        assert_eq!(
            shown_verdict(Painter::new(false), &stuck, Expectation::Recover),
            "STUCK (expected RECOVERED)"
        );
        assert_eq!(overall_style("FAILED"), Style::Red);
        assert_eq!(overall_style("HELD"), Style::Green);
    }
}
