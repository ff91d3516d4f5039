//! Whether each output stream gets colour, by the usual rules (`--color`
//! first, then NO_COLOR, CLICOLOR_FORCE, CLICOLOR, TERM=dumb, then whether the
//! stream is a terminal), and the few styles mcpatch paints with.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU8, Ordering};

/// `--color`: `auto` decides from the environment and the stream
/// ([`decide`]), `always` and `never` decide alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// The `--color` of this run (set once, before anything is printed).
static CHOICE: AtomicU8 = AtomicU8::new(0);

/// Record `--color` for every later [`stdout`] and [`stderr`].
pub fn set_choice(choice: ColorChoice) {
    let n = match choice {
        ColorChoice::Auto => 0,
        ColorChoice::Always => 1,
        ColorChoice::Never => 2,
    };
    CHOICE.store(n, Ordering::Relaxed);
}

fn choice() -> ColorChoice {
    match CHOICE.load(Ordering::Relaxed) {
        1 => ColorChoice::Always,
        2 => ColorChoice::Never,
        _ => ColorChoice::Auto,
    }
}

/// Whether to colour a stream, given `--color`, an environment lookup and
/// whether the stream is a terminal:
/// - `--color always` / `never` decide alone;
/// - NO_COLOR set and not empty: no colour (<https://no-color.org>);
/// - CLICOLOR_FORCE set, not empty and not `0`: colour, even into a pipe;
/// - CLICOLOR=0: no colour (<https://bixense.com/clicolors/>);
/// - TERM=dumb: no colour;
/// - otherwise colour only on a terminal.
pub fn decide(
    choice: ColorChoice,
    var: impl Fn(&str) -> Option<OsString>,
    is_terminal: bool,
) -> bool {
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    match choice {
        ColorChoice::Always => return true,
        ColorChoice::Never => return false,
        ColorChoice::Auto => {}
    }
    if set("NO_COLOR").is_some() {
        return false;
    }
    if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
        return true;
    }
    if set("CLICOLOR").is_some_and(|v| v == "0") {
        return false;
    }
    if set("TERM").is_some_and(|v| v == "dumb") {
        return false;
    }
    is_terminal
}

/// A style to paint text with: SGR parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Bold,
    Red,
    Green,
    Yellow,
    Cyan,
    /// A label such as `error:`.
    BoldRed,
    /// A label such as `help:`.
    BoldCyan,
    /// A changed word within a removed line.
    RedEmphasis,
    /// A changed word within an added line.
    GreenEmphasis,
}

impl Style {
    fn sgr(self) -> &'static str {
        match self {
            Style::Bold => "1",
            Style::Red => "31",
            Style::Green => "32",
            Style::Yellow => "33",
            Style::Cyan => "36",
            Style::BoldRed => "1;31",
            Style::BoldCyan => "1;36",
            Style::RedEmphasis => "1;7;31",
            Style::GreenEmphasis => "1;7;32",
        }
    }
}

/// Paints text for one stream: with escapes when colour is on, as is when off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Painter {
    on: bool,
}

impl Painter {
    /// A painter that colours when `on`.
    pub fn new(on: bool) -> Self {
        Painter { on }
    }

    /// Whether this painter colours.
    pub fn on(self) -> bool {
        self.on
    }

    /// `text` in `style` (as is when colour is off, or the text is empty).
    pub fn paint(self, style: Style, text: &str) -> String {
        if self.on && !text.is_empty() {
            format!("\x1b[{}m{text}\x1b[0m", style.sgr())
        } else {
            text.to_string()
        }
    }

    /// An error report as printed: `error:` and each `help:` label painted.
    pub fn error(self, message: &str) -> String {
        let mut out = self.paint(Style::BoldRed, "error:");
        out.push(' ');
        for (i, line) in message.split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
            }
            match line.strip_prefix("help:") {
                Some(rest) => {
                    out.push_str(&self.paint(Style::BoldCyan, "help:"));
                    out.push_str(rest);
                }
                None => out.push_str(line),
            }
        }
        out
    }
}

/// The painter for standard output.
pub fn stdout() -> Painter {
    Painter::new(decide(
        choice(),
        |k| std::env::var_os(k),
        std::io::stdout().is_terminal(),
    ))
}

/// The painter for standard error.
pub fn stderr() -> Painter {
    Painter::new(decide(
        choice(),
        |k| std::env::var_os(k),
        std::io::stderr().is_terminal(),
    ))
}

/// How many columns `text` takes on a terminal: its characters, less the
/// escape sequences (`ESC [ ... final`) that colour it.
pub fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('\x40'..='\x7e').contains(&c) {
                    break;
                }
            }
        } else {
            width += 1;
        }
    }
    width
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn auto_colours_a_terminal_only() {
        assert!(decide(ColorChoice::Auto, env(&[]), true));
        assert!(!decide(ColorChoice::Auto, env(&[]), false));
        assert!(decide(ColorChoice::Auto, env(&[("TERM", "xterm")]), true));
    }

    #[test]
    fn no_color_wins_over_everything_but_the_flag() {
        let e = [("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")];
        assert!(!decide(ColorChoice::Auto, env(&e), true));
        assert!(decide(ColorChoice::Always, env(&e), false));
        // An empty NO_COLOR is as if unset.
        assert!(decide(ColorChoice::Auto, env(&[("NO_COLOR", "")]), true));
    }

    #[test]
    fn clicolor_force_colours_a_pipe_unless_zero_or_empty() {
        assert!(decide(
            ColorChoice::Auto,
            env(&[("CLICOLOR_FORCE", "1")]),
            false
        ));
        assert!(decide(
            ColorChoice::Auto,
            env(&[("CLICOLOR_FORCE", "1"), ("TERM", "dumb")]),
            false
        ));
        assert!(!decide(
            ColorChoice::Auto,
            env(&[("CLICOLOR_FORCE", "0")]),
            false
        ));
        assert!(!decide(
            ColorChoice::Auto,
            env(&[("CLICOLOR_FORCE", "")]),
            false
        ));
        assert!(!decide(
            ColorChoice::Never,
            env(&[("CLICOLOR_FORCE", "1")]),
            true
        ));
    }

    #[test]
    fn clicolor_zero_and_a_dumb_terminal_get_no_colour() {
        assert!(!decide(ColorChoice::Auto, env(&[("CLICOLOR", "0")]), true));
        assert!(decide(ColorChoice::Auto, env(&[("CLICOLOR", "1")]), true));
        assert!(!decide(ColorChoice::Auto, env(&[("TERM", "dumb")]), true));
        assert!(decide(ColorChoice::Always, env(&[("TERM", "dumb")]), true));
    }

    #[test]
    fn painting_is_a_no_op_when_off() {
        assert_eq!(Painter::new(false).paint(Style::Red, "x"), "x");
        assert_eq!(
            Painter::new(true).paint(Style::Red, "x"),
            "\x1b[31mx\x1b[0m"
        );
        assert_eq!(Painter::new(true).paint(Style::Red, ""), "");
    }

    #[test]
    fn errors_paint_their_labels() {
        let text = "cannot read x\nhelp: fix it";
        assert_eq!(
            Painter::new(false).error(text),
            "error: cannot read x\nhelp: fix it"
        );
        assert_eq!(
            Painter::new(true).error(text),
            "\x1b[1;31merror:\x1b[0m cannot read x\n\x1b[1;36mhelp:\x1b[0m fix it"
        );
    }

    #[test]
    fn visible_width_skips_colour_escapes() {
        assert_eq!(visible_width("abc"), 3);
        assert_eq!(visible_width("b126dcec…7d56"), 13);
        assert_eq!(visible_width("\x1b[1;31maffected\x1b[0m"), 8);
    }
}
