//! Plain-text tables for the terminal: every column but the last padded to its
//! widest cell (by visible width: colour escapes take no room), two spaces
//! between columns; and the ways text is made to fit a width: words wrapped
//! under a hanging indent, paths shortened from the middle.

use crate::color::visible_width;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A header and rows of cells.
#[derive(Debug)]
pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles and alignments (one per column).
    pub fn new(header: &[&str], align: &[Align]) -> Self {
        assert_eq!(header.len(), align.len(), "one alignment per column");
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            align: align.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.header.len(), "one cell per column");
        self.rows.push(cells);
    }

    fn widths(&self) -> Vec<usize> {
        (0..self.header.len())
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| visible_width(&r[c]))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The widest line [`Table::lines`] makes.
    pub fn width(&self) -> usize {
        let widths = self.widths();
        let last = widths.len() - 1;
        widths[..last].iter().map(|w| w + 2).sum::<usize>() + widths[last]
    }

    /// The columns before the last one take, with the spaces between them:
    /// where the last column starts.
    pub fn lead_width(&self) -> usize {
        let widths = self.widths();
        widths[..widths.len() - 1].iter().map(|w| w + 2).sum()
    }

    /// The header line, then one line per row, each ending in a newline.
    pub fn lines(&self) -> Vec<String> {
        self.lines_within(None)
    }

    /// As [`Table::lines`], with the last column's words wrapped so that no
    /// line is wider than `max` (when given), continued under that column:
    /// an entry per row, holding one line or more.
    pub fn lines_within(&self, max: Option<usize>) -> Vec<String> {
        let columns = self.header.len();
        let widths = self.widths();
        let lead: usize = widths[..columns - 1].iter().map(|w| w + 2).sum();
        std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|r| {
                let mut line = String::new();
                for (c, cell) in r.iter().enumerate() {
                    if c + 1 == columns {
                        let room = max.map(|m| m.saturating_sub(lead).max(MIN_WRAP));
                        let continued = format!("\n{}", " ".repeat(lead));
                        line.push_str(&wrap(cell, room).join(&continued));
                        break;
                    }
                    let pad = " ".repeat(widths[c] - visible_width(cell));
                    match self.align[c] {
                        Align::Left => line.push_str(&format!("{cell}{pad}  ")),
                        Align::Right => line.push_str(&format!("{pad}{cell}  ")),
                    }
                }
                line.push('\n');
                line
            })
            .collect()
    }
}

/// The fewest columns wrapped text is given, however narrow the terminal.
const MIN_WRAP: usize = 20;

/// `text` in lines no wider than `max` (when given), broken between words; a
/// word wider than `max` gets a line of its own.
pub fn wrap(text: &str, max: Option<usize>) -> Vec<String> {
    let words: Vec<&str> = text.split(' ').collect();
    wrap_units(&words, " ", max)
}

/// `units` joined by `sep`, in lines no wider than `max` (when given), broken
/// only between units (after `sep`, less its trailing spaces).
fn wrap_units(units: &[&str], sep: &str, max: Option<usize>) -> Vec<String> {
    let Some(max) = max else {
        return vec![units.join(sep)];
    };
    let sep_width = visible_width(sep);
    let mut lines = Vec::new();
    let mut line = String::new();
    for unit in units {
        if !line.is_empty() && visible_width(&line) + sep_width + visible_width(unit) > max {
            line.push_str(sep.trim_end());
            lines.push(std::mem::take(&mut line));
        } else if !line.is_empty() {
            line.push_str(sep);
        }
        line.push_str(unit);
    }
    lines.push(line);
    lines
}

/// A message of mcpatch's own for a person on stdout: outside text in it made
/// safe ([`crate::output::clean_lines`]), the user's `--path`/`--target` put
/// into every command it suggests ([`crate::scope::commands`]), and each line
/// wrapped to stdout's width, continued 4 columns further in than it starts
/// (so a wrapped line stands apart from the next one); ends in a newline.
pub fn for_a_person(text: &str) -> String {
    let columns = crate::width::stdout_columns();
    let text = crate::output::clean_lines(text);
    let text = crate::scope::commands_within(&text, columns);
    within(&text, columns)
}

/// Each line of `text` wrapped to `max` columns (when given), continued 4
/// columns further in than it starts; ends in a newline.
pub fn within(text: &str, max: Option<usize>) -> String {
    let mut s = String::new();
    for line in text.lines() {
        let body = line.trim_start_matches(' ');
        let lead = line.len() - body.len();
        let room = max.map(|m| m.saturating_sub(lead + 4).max(MIN_WRAP));
        let mut pieces = wrap(body, room.map(|r| r + 4)).into_iter();
        let first = pieces.next().unwrap_or_default();
        s.push_str(&format!("{}{first}\n", " ".repeat(lead)));
        let rest: Vec<&str> = body[first.len()..]
            .split(' ')
            .filter(|w| !w.is_empty())
            .collect();
        if !rest.is_empty() {
            for piece in wrap_units(&rest, " ", room) {
                // A word wider than the room (a long path) is cut where it must be.
                for cut in cut_to(&piece, room) {
                    s.push_str(&format!("{}{cut}\n", " ".repeat(lead + 4)));
                }
            }
        }
    }
    s
}

/// `line` in pieces of at most `max` characters (when given).
fn cut_to(line: &str, max: Option<usize>) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    match max {
        Some(m) if m > 0 && chars.len() > m => {
            chars.chunks(m).map(|c| c.iter().collect()).collect()
        }
        _ => vec![line.to_string()],
    }
}

/// `first` then `items` joined by ", ", wrapped to `max` columns (when given)
/// between items, each line after the first indented by the width of `first`;
/// ends in a newline.
pub fn hanging_list(first: &str, items: &[String], max: Option<usize>) -> String {
    let indent = visible_width(first);
    let room = max.map(|m| m.saturating_sub(indent).max(MIN_WRAP));
    let continued = format!("\n{}", " ".repeat(indent));
    let items: Vec<&str> = items.iter().map(String::as_str).collect();
    format!(
        "{first}{}\n",
        wrap_units(&items, ", ", room).join(&continued)
    )
}

/// `first` then `text` wrapped to `max` columns (when given), each line after
/// the first indented by the width of `first`; ends in a newline.
pub fn hanging(first: &str, text: &str, max: Option<usize>) -> String {
    let indent = visible_width(first);
    let room = max.map(|m| m.saturating_sub(indent).max(MIN_WRAP));
    let continued = format!("\n{}", " ".repeat(indent));
    format!("{first}{}\n", wrap(text, room).join(&continued))
}

/// `path` in at most `max` columns: whole if it fits, else with whole
/// folders from the middle replaced by `…`. The first folders get up to a
/// third of the room (where the install is), the last ones the rest (they name
/// the package). A last folder that alone is too long is cut in its middle.
pub fn shorten_middle(path: &str, max: usize) -> String {
    let chars: Vec<char> = path.chars().collect();
    if chars.len() <= max {
        return path.to_string();
    }
    // Components with their leading `/`: "/usr/lib/x" is "/usr", "/lib", "/x".
    let mut parts: Vec<String> = Vec::new();
    for c in chars.iter().copied() {
        match parts.last_mut() {
            Some(part) if c != '/' => part.push(c),
            _ => parts.push(c.to_string()),
        }
    }
    let len = |p: &String| p.chars().count();
    // Room for the kept folders, less "/…" between them.
    let budget = max.saturating_sub(2);
    let last = parts.len() - 1;
    if parts.len() < 2 || len(&parts[last]) > budget {
        let keep = max.saturating_sub(1);
        let head = keep / 3;
        let tail = keep - head;
        return chars[..head]
            .iter()
            .chain(std::iter::once(&'…'))
            .chain(&chars[chars.len() - tail..])
            .collect();
    }
    // The last folder always stays; the first ones get up to a third.
    let mut tail_from = last;
    let mut tail_len = len(&parts[last]);
    let head_room = (budget / 3).min(budget - tail_len);
    let mut head_to = 0;
    let mut head_len = 0;
    while head_to < last && head_len + len(&parts[head_to]) <= head_room {
        head_len += len(&parts[head_to]);
        head_to += 1;
    }
    while tail_from > head_to && head_len + tail_len + len(&parts[tail_from - 1]) <= budget {
        tail_from -= 1;
        tail_len += len(&parts[tail_from]);
    }
    while head_to < tail_from && head_len + len(&parts[head_to]) + tail_len <= budget {
        head_len += len(&parts[head_to]);
        head_to += 1;
    }
    let (head, tail) = (parts[..head_to].concat(), parts[tail_from..].concat());
    if head_to == tail_from {
        return path.to_string();
    }
    if head.is_empty() {
        format!("…{tail}")
    } else {
        format!("{head}/…{tail}")
    }
}

/// [`crate::outln!`] for a line of prose: wrapped to stdout's width ([`crate::width`]),
/// each continuation 4 columns in; whole into a pipe.
#[macro_export]
macro_rules! outln_fit {
    ($($arg:tt)*) => {
        $crate::output::print(format_args!(
            "{}",
            $crate::table::within(&format!($($arg)*), $crate::width::stdout_columns())
        ))
    };
}

/// [`crate::errln!`] for a line of prose: wrapped to stderr's width, as [`outln_fit!`].
#[macro_export]
macro_rules! errln_fit {
    ($($arg:tt)*) => {
        $crate::output::eprint(format_args!(
            "{}",
            $crate::table::within(&format!($($arg)*), $crate::width::stderr_columns())
        ))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_wraps_each_line_continued_four_columns_in() {
        let text = "refused: /srv/app\n    modified: sha256 abc is not a revision mcpatch knows; rerun with --yes";
        assert_eq!(
            within(text, Some(40)),
            "refused: /srv/app\n    modified: sha256 abc is not a\n        revision mcpatch knows; rerun\n        with --yes\n"
        );
        assert_eq!(within(text, None), format!("{text}\n"));
    }

    #[test]
    fn coloured_cells_line_up_by_what_shows() {
        let mut t = Table::new(&["A", "B"], &[Align::Left, Align::Left]);
        t.row(vec!["\x1b[31mred\x1b[0m".into(), "x".into()]);
        t.row(vec!["plain".into(), "y".into()]);
        assert_eq!(
            t.lines(),
            ["A      B\n", "\x1b[31mred\x1b[0m    x\n", "plain  y\n"]
        );
        assert_eq!(t.width(), 8);
    }

    #[test]
    fn the_last_column_wraps_under_itself() {
        let mut t = Table::new(&["A", "NOTE"], &[Align::Left, Align::Left]);
        t.row(vec!["ab".into(), "one two three four".into()]);
        assert_eq!(t.width(), 22);
        assert_eq!(
            t.lines_within(Some(30)),
            ["A   NOTE\n", "ab  one two three four\n"]
        );
        assert_eq!(
            t.lines_within(Some(4 + MIN_WRAP - 6)),
            ["A   NOTE\n", "ab  one two three four\n"],
            "never narrower than MIN_WRAP"
        );
        let mut t = Table::new(&["A", "NOTE"], &[Align::Left, Align::Left]);
        t.row(vec!["ab".into(), "one two three four five six".into()]);
        assert_eq!(
            t.lines_within(Some(4 + MIN_WRAP)),
            ["A   NOTE\n", "ab  one two three four\n    five six\n"]
        );
    }

    #[test]
    fn wrapping_breaks_between_words_and_keeps_long_words_whole() {
        assert_eq!(wrap("a bb ccc", None), ["a bb ccc"]);
        assert_eq!(wrap("a bb ccc", Some(4)), ["a bb", "ccc"]);
        assert_eq!(wrap("abcdefgh ij", Some(4)), ["abcdefgh", "ij"]);
        assert_eq!(
            hanging("  note: ", &["word"; 8].join(" "), Some(8 + MIN_WRAP)),
            "  note: word word word word\n        word word word word\n"
        );
        let items: Vec<String> = ["1 affected", "0 patched", "0 outdated"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            hanging_list("3 install(s): ", &items, Some(14 + MIN_WRAP + 2)),
            "3 install(s): 1 affected, 0 patched,\n              0 outdated\n"
        );
        assert_eq!(
            hanging_list("3: ", &items, None),
            "3: 1 affected, 0 patched, 0 outdated\n"
        );
    }

    #[test]
    fn paths_are_shortened_from_the_middle_by_whole_folders() {
        let p = "/usr/lib/node_modules/@deepseek-ai/dsh/node_modules/@deepseek-ai/dsh-mcp-client";
        assert_eq!(shorten_middle(p, 100), p);
        assert_eq!(shorten_middle(p, 79), p);
        assert_eq!(
            shorten_middle(p, 78),
            "/usr/lib/node_modules/…/dsh/node_modules/@deepseek-ai/dsh-mcp-client"
        );
        assert_eq!(
            shorten_middle(p, 60),
            "/usr/lib/…/dsh/node_modules/@deepseek-ai/dsh-mcp-client"
        );
        assert_eq!(
            shorten_middle(p, 40),
            "/usr/lib/…/@deepseek-ai/dsh-mcp-client"
        );
        assert_eq!(shorten_middle(p, 20), "…/dsh-mcp-client");
        // A last folder longer than the room: characters go from the middle.
        assert_eq!(shorten_middle(p, 12), "/us…p-client");
        assert_eq!(shorten_middle("relative/abcdef", 10), "…/abcdef");
    }

    #[test]
    fn columns_are_padded_to_the_widest_cell_and_the_last_is_not() {
        let mut t = Table::new(
            &["A", "NUM", "NOTE"],
            &[Align::Left, Align::Right, Align::Left],
        );
        t.row(vec!["long name".into(), "7".into(), "x".into()]);
        t.row(vec!["b".into(), "1234".into(), "y y".into()]);
        assert_eq!(
            t.lines(),
            [
                format!("A{}NUM  NOTE\n", " ".repeat(11)),
                format!("long name{}7  x\n", " ".repeat(5)),
                format!("b{}1234  y y\n", " ".repeat(10)),
            ]
        );
    }
}
