//! Standard output and standard error that a closed or full stream cannot
//! stop: `mcpatch apply | head -1` still finishes the work, and what is
//! printed after the reader went away is dropped quietly, as other Unix tools
//! end quietly on a closed pipe. Every write mcpatch makes to either stream
//! goes through here (`outln!`, `out!`, `errln!`, `err!`): the standard
//! library's `println!` and `eprintln!` panic on such a stream.
//!
//! Here too is [`clean`], the one way text from outside (a server's answer,
//! a folder's name, node's words) is made safe to show on a terminal.

use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// The reader of stdout went away (a closed pipe).
static CLOSED: AtomicBool = AtomicBool::new(false);
/// A write to stdout failed otherwise (a full disk, an I/O error).
static FAILED: AtomicBool = AtomicBool::new(false);
/// Stderr can no longer be written.
static ERR_GONE: AtomicBool = AtomicBool::new(false);
/// The command changes installs (apply, revert): its work goes on when
/// stdout fails, and the message says so.
static CHANGES: AtomicBool = AtomicBool::new(false);
/// The command prints as it goes: a closed stdout ends it by SIGPIPE.
static ENDS_ON_CLOSED: AtomicBool = AtomicBool::new(false);

/// Print to stdout; once stdout is closed (or fails), drop the text quietly.
pub fn print(args: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) || FAILED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        stdout_failed(&e);
    }
}

/// Write bytes as they are to stdout, as [`print`] does.
pub fn print_bytes(bytes: &[u8]) {
    if CLOSED.load(Ordering::Relaxed) || FAILED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        stdout_failed(&e);
    }
}

fn stdout_failed(e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CLOSED.store(true, Ordering::Relaxed);
    } else {
        FAILED.store(true, Ordering::Relaxed);
        let rest = if CHANGES.load(Ordering::Relaxed) {
            "; the changes go on, but their report is lost\nhelp: run `mcpatch status` afterwards to see each install as it is"
        } else {
            "; the rest of the output is lost\nhelp: write it where there is room (another disk, or a pipe)"
        };
        eprint(format_args!(
            "error: cannot write to standard output: {e}{rest}\n"
        ));
    }
}

/// Print to stderr; once stderr cannot be written, drop the text quietly
/// (there is nowhere left to say so).
pub fn eprint(args: std::fmt::Arguments<'_>) {
    if ERR_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut err = std::io::stderr().lock();
    if err.write_fmt(args).and_then(|()| err.flush()).is_err() {
        ERR_GONE.store(true, Ordering::Relaxed);
    }
}

/// `println!` through [`print`].
#[macro_export]
macro_rules! outln {
    () => { $crate::output::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::print(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` through [`print`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::print(format_args!($($arg)*)) };
}

/// `eprintln!` through [`eprint`].
#[macro_export]
macro_rules! errln {
    () => { $crate::output::eprint(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::eprint(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` through [`eprint`].
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => { $crate::output::eprint(format_args!($($arg)*)) };
}

/// This command changes installs: a failed stdout does not stop it, and
/// the message says that the changes go on.
pub fn changes_installs() {
    CHANGES.store(true, Ordering::Relaxed);
}

/// This command prints as it goes (`diff`, `completions`): when its reader
/// goes away it ends as Unix tools do, by SIGPIPE, once its clean-up ran.
pub fn end_on_closed_pipe() {
    ENDS_ON_CLOSED.store(true, Ordering::Relaxed);
}

/// The exit code of a run that would end with `code`: [`crate::exit_code::ERROR`]
/// when stdout failed otherwise than by its reader going away (its output is
/// lost: the caller must not take it for complete). A command that prints as
/// it goes and lost its reader ends by SIGPIPE here.
pub fn finish(code: u8) -> std::process::ExitCode {
    if FAILED.load(Ordering::Relaxed) {
        return std::process::ExitCode::from(crate::exit_code::ERROR.max(code));
    }
    if CLOSED.load(Ordering::Relaxed) && ENDS_ON_CLOSED.load(Ordering::Relaxed) {
        #[cfg(unix)]
        // SAFETY: restoring the default SIGPIPE action and raising it on ourselves has no memory effects.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
        return std::process::ExitCode::from(141);
    }
    std::process::ExitCode::from(code)
}

/// Whether `c` must not reach a terminal as it is: a control character (ESC,
/// CR, BEL, DEL, the C1 set; a tab only moves the cursor on, and is kept) or
/// one that reorders or hides text (bidi overrides and isolates, zero-width marks).
fn unsafe_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// `text` from outside (a server, a folder's name, a program's words) safe to
/// print on a terminal: each control character shown escaped as Rust writes
/// it (`\u{1b}`, `\r`, `\n`), everything else as it is.
pub fn clean(text: &str) -> Cow<'_, str> {
    clean_keeping(text, false)
}

/// [`clean`], keeping line breaks: for a message of several lines (an error
/// and its `help:`) that carries outside text.
pub fn clean_lines(text: &str) -> Cow<'_, str> {
    clean_keeping(text, true)
}

/// A path as [`clean`] shows it.
pub fn path(p: &std::path::Path) -> String {
    clean(&p.display().to_string()).into_owned()
}

fn clean_keeping(text: &str, newlines: bool) -> Cow<'_, str> {
    let escape = |c: char| unsafe_on_terminal(c) && !(newlines && c == '\n');
    if !text.chars().any(escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escape(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(
            clean("a\u{1b}]52;c;ZXZpbA==\u{7}b\u{1b}[2J\r\n\u{9b}31m é \"q\""),
            "a\\u{1b}]52;c;ZXZpbA==\\u{7}b\\u{1b}[2J\\r\\n\\u{9b}31m é \"q\""
        );
        assert_eq!(clean("x\u{202e}gpj.exe"), "x\\u{202e}gpj.exe");
        assert_eq!(clean("a\tb"), "a\tb", "a tab only moves the cursor on");
        assert!(matches!(clean("/usr/lib/node_modules"), Cow::Borrowed(_)));
        assert_eq!(
            clean_lines("bad \u{1b}[32mname\nhelp: fix\r"),
            "bad \\u{1b}[32mname\nhelp: fix\\r"
        );
    }
}
