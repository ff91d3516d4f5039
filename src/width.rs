//! How many columns the text on standard output may take: COLUMNS when set,
//! else the terminal's width; no limit for a pipe or a file, whose readers
//! (grep, awk, a log) are better served by whole lines.

use std::io::IsTerminal;

/// The width used when stdout is a terminal whose size cannot be read.
pub const FALLBACK_COLUMNS: usize = 80;

/// Columns available on stdout, or `None` for no limit.
pub fn stdout_columns() -> Option<usize> {
    let columns = std::env::var("COLUMNS").ok();
    let terminal = std::io::stdout().is_terminal();
    choose(columns.as_deref(), terminal, terminal_columns)
}

/// Columns available on stderr (errors, progress, notes), or `None` for no
/// limit, by the same rule as [`stdout_columns`].
pub fn stderr_columns() -> Option<usize> {
    let columns = std::env::var("COLUMNS").ok();
    let terminal = std::io::stderr().is_terminal();
    choose(columns.as_deref(), terminal, || {
        terminal_columns_of(libc::STDERR_FILENO)
    })
}

/// COLUMNS when it is a positive whole number; else, on a terminal, its size
/// (or [`FALLBACK_COLUMNS`]); else no limit.
fn choose(
    columns: Option<&str>,
    terminal: bool,
    size: impl FnOnce() -> Option<usize>,
) -> Option<usize> {
    if let Some(n) = columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        return Some(n);
    }
    terminal.then(|| size().unwrap_or(FALLBACK_COLUMNS))
}

/// The width of the terminal on stdout, as the kernel reports it.
fn terminal_columns() -> Option<usize> {
    terminal_columns_of(libc::STDOUT_FILENO)
}

/// The width of the terminal on descriptor `fd`, as the kernel reports it.
#[cfg(unix)]
fn terminal_columns_of(fd: libc::c_int) -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes only into the winsize we pass.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) };
    (rc == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

#[cfg(not(unix))]
fn terminal_columns_of(_fd: i32) -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_wins_terminal_or_not() {
        assert_eq!(choose(Some("72"), false, || Some(200)), Some(72));
        assert_eq!(choose(Some("72"), true, || Some(200)), Some(72));
    }

    #[test]
    fn a_terminal_gives_its_size_else_eighty() {
        assert_eq!(choose(None, true, || Some(132)), Some(132));
        assert_eq!(choose(None, true, || None), Some(FALLBACK_COLUMNS));
        for bad in ["", "0", "-3", "wide"] {
            assert_eq!(choose(Some(bad), true, || Some(100)), Some(100), "{bad:?}");
        }
    }

    #[test]
    fn a_pipe_has_no_limit() {
        assert_eq!(choose(None, false, || Some(132)), None);
        assert_eq!(choose(Some("x"), false, || None), None);
    }
}
