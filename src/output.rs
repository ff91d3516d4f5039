//! Standard output that a closed pipe cannot stop: `mcpatch apply | head -1`
//! still finishes the work, and what is printed after the reader went away is
//! dropped quietly, as other Unix tools end quietly on a closed pipe.

use std::any::Any;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Print to stdout; once stdout is closed (or fails), drop the text quietly.
pub fn print(args: std::fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to standard output: {e}; the work goes on");
        }
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

fn is_broken_pipe_panic(payload: &(dyn Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    text.starts_with("failed printing to stdout") && text.contains("Broken pipe")
}

/// Silence the panic that `println!` raises on a closed stdout (anywhere not
/// yet printing through [`print`]); every other panic is reported as before.
pub fn quiet_broken_pipe_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_broken_pipe_panic(info.payload()) {
            default(info);
        }
    }));
}

/// After such a panic unwound (so clean-up ran), end as a Unix tool does on a
/// closed pipe: by SIGPIPE. Any other panic goes on unwinding.
pub fn exit_after_panic(payload: Box<dyn Any + Send>) -> std::process::ExitCode {
    if !is_broken_pipe_panic(payload.as_ref()) {
        std::panic::resume_unwind(payload);
    }
    #[cfg(unix)]
    // SAFETY: restoring the default SIGPIPE action and raising it on ourselves has no memory effects.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::ExitCode::from(141)
}
