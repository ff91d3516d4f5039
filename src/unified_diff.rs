//! A change as a unified diff, computed by `similar`, as `diff` and
//! `apply --dry-run` print it: with colour, removed and added lines are red
//! and green and the words that changed within them stand out.

use std::time::{Duration, Instant};

use similar::{ChangeTag, TextDiff};

use crate::color::{Painter, Style};

/// Lines of context around each change, as `diff -u` and git show.
const CONTEXT: usize = 3;
/// How long the word-level pass may spend on one changed block before it
/// shows the block's lines without word highlights.
const WORD_DIFF_TIME: Duration = Duration::from_secs(1);

/// The change from `current` to `new` (the install's `file`, named relative to
/// the package folder) as a unified diff (`--- a/FILE`, `+++ b/FILE`, hunks
/// with 3 lines of context), coloured with word-level highlights when `color`;
/// empty when nothing changes.
pub fn render_change(file: &str, current: &str, new: &str, color: bool) -> String {
    let paint = Painter::new(color);
    let diff = TextDiff::from_lines(current, new);
    let groups = diff.grouped_ops(CONTEXT);
    if groups.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    out.push_str(&paint.paint(Style::Bold, &format!("--- a/{file}")));
    out.push('\n');
    out.push_str(&paint.paint(Style::Bold, &format!("+++ b/{file}")));
    out.push('\n');
    for group in &groups {
        let header = similar::udiff::UnifiedHunkHeader::new(group).to_string();
        out.push_str(&paint.paint(Style::Cyan, &header));
        out.push('\n');
        for op in group {
            let deadline = Instant::now() + WORD_DIFF_TIME;
            for change in diff.iter_inline_changes_deadline(op, Some(deadline)) {
                let (sign, plain, emphasis) = match change.tag() {
                    ChangeTag::Equal => (" ", None, None),
                    ChangeTag::Delete => ("-", Some(Style::Red), Some(Style::RedEmphasis)),
                    ChangeTag::Insert => ("+", Some(Style::Green), Some(Style::GreenEmphasis)),
                };
                // Runs of words with the same emphasis, the sign leading the first.
                let mut runs: Vec<(bool, String)> = vec![(false, sign.to_string())];
                for (emphasized, value) in change.iter_strings_lossy() {
                    // The install's text is outside text: its control characters escaped.
                    let text = value.strip_suffix('\n').unwrap_or(&value);
                    let text = crate::output::clean(text);
                    match runs.last_mut() {
                        Some((e, run)) if *e == emphasized => run.push_str(&text),
                        _ => runs.push((emphasized, text.to_string())),
                    }
                }
                for (emphasized, run) in &runs {
                    match if *emphasized { emphasis } else { plain } {
                        Some(style) => out.push_str(&paint.paint(style, run)),
                        None => out.push_str(run),
                    }
                }
                out.push('\n');
                if change.missing_newline() {
                    out.push_str("\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// A unified diff's text, coloured line by line when `color`: file headers
/// bold, hunk headers cyan, removed lines red, added lines green.
pub fn paint_unified(text: &str, color: bool) -> String {
    let paint = Painter::new(color);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let style = if body.starts_with("--- ") || body.starts_with("+++ ") {
            Some(Style::Bold)
        } else if body.starts_with("@@") {
            Some(Style::Cyan)
        } else if body.starts_with('-') {
            Some(Style::Red)
        } else if body.starts_with('+') {
            Some(Style::Green)
        } else {
            None
        };
        match style {
            Some(style) => out.push_str(&paint.paint(style, body)),
            None => out.push_str(body),
        }
        out.push_str(end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "one\nlet x = old(1);\nthree\n";
    const NEW: &str = "one\nlet x = fresh(1);\nthree\n";

    #[test]
    fn a_change_is_a_unified_diff() {
        assert_eq!(
            render_change("f.js", OLD, NEW, false),
            "--- a/f.js\n+++ b/f.js\n@@ -1,3 +1,3 @@\n one\n-let x = old(1);\n+let x = fresh(1);\n three\n"
        );
        assert_eq!(render_change("f.js", OLD, OLD, false), "");
    }

    #[test]
    fn in_colour_the_changed_words_stand_out() {
        assert_eq!(
            render_change("f.js", OLD, NEW, true),
            "\x1b[1m--- a/f.js\x1b[0m\n\x1b[1m+++ b/f.js\x1b[0m\n\x1b[36m@@ -1,3 +1,3 @@\x1b[0m\n one\n\
             \x1b[31m-let x = \x1b[0m\x1b[1;7;31mold\x1b[0m\x1b[31m(1);\x1b[0m\n\
             \x1b[32m+let x = \x1b[0m\x1b[1;7;32mfresh\x1b[0m\x1b[32m(1);\x1b[0m\n three\n"
        );
    }

    #[test]
    fn a_missing_last_newline_is_marked() {
        assert_eq!(
            render_change("f", "a\nb", "a\nc", false),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn a_patch_text_is_painted_line_by_line() {
        let text = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n z";
        assert_eq!(paint_unified(text, false), text);
        assert_eq!(
            paint_unified(text, true),
            "\x1b[1m--- a/f\x1b[0m\n\x1b[1m+++ b/f\x1b[0m\n\x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m-x\x1b[0m\n\x1b[32m+y\x1b[0m\n z"
        );
    }
}
