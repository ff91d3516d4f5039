//! Test-only fault points at named steps of apply and revert, driven by the
//! environment, so the fault-injection tests can prove that every step leaves
//! the install whole and never loses a newer file:
//!
//! - `MCPATCH_TEST_KILL_AT=<step>`: die there by SIGKILL (no clean-up runs);
//! - `MCPATCH_TEST_FAIL_AT=<step>`: return an error there, so the rollback on
//!   drop runs;
//! - `MCPATCH_TEST_PAUSE_AT=<step>` with `MCPATCH_TEST_PAUSE_DIR=<dir>`: wait
//!   there while the test changes files (a host upgrade landing mid-apply);
//! - `MCPATCH_TEST_SIGNAL_AT=<moment>`: raise SIGTERM there, as a user's
//!   Ctrl-C or `kill` could at that moment, so a test can place a signal
//!   where no timing could;
//! - `MCPATCH_TEST_TRACE=1`: print every step, folder creation, rename and
//!   folder sync to stderr as `trace: ...`, so a test can check their order.
//!
//! The pause talks only through two FIFOs the test made in the pause folder:
//! it writes the step's name and a newline to `reached`, then waits for a line
//! on `resume`. Anything there that is not a FIFO is refused, so the hook can
//! neither create nor write a regular file.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use crate::error::{Error, Result};

const KILL_AT: &str = "MCPATCH_TEST_KILL_AT";
const FAIL_AT: &str = "MCPATCH_TEST_FAIL_AT";
const PAUSE_AT: &str = "MCPATCH_TEST_PAUSE_AT";
const PAUSE_DIR: &str = "MCPATCH_TEST_PAUSE_DIR";
const TRACE: &str = "MCPATCH_TEST_TRACE";
const SIGNAL_AT: &str = "MCPATCH_TEST_SIGNAL_AT";

fn asks(var: &str, step: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v == step)
}

/// A named step was reached: trace it, and die, pause or fail here if a test asked.
pub fn reached(step: &'static str) -> Result<()> {
    note(format_args!("{step}"));
    if asks(KILL_AT, step) {
        #[cfg(unix)]
        // SAFETY: kill(2) on our own pid with a constant signal has no memory effects.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        std::process::abort();
    }
    if asks(PAUSE_AT, step) {
        pause(step)?;
    }
    if asks(FAIL_AT, step) {
        return Err(Error::InjectedFault { step });
    }
    Ok(())
}

/// A signal may arrive at this moment: raise SIGTERM here if a test asked.
/// Not traced, so the steps a trace lists stay the same.
pub fn signal_may_arrive(moment: &'static str) {
    if asks(SIGNAL_AT, moment) {
        #[cfg(unix)]
        // SAFETY: raise(3) of a constant signal; its handler only stores
        // atomics and writes to a pipe (see on_signal).
        unsafe {
            libc::raise(libc::SIGTERM);
        }
    }
}

/// Trace an event (a folder created, renamed or synced) when the tests asked for a trace.
pub fn note(event: fmt::Arguments<'_>) {
    if std::env::var_os(TRACE).is_some_and(|v| v == "1") {
        crate::errln!("trace: {event}");
    }
}

/// Tell the test the step was reached and wait until it says go on.
fn pause(step: &str) -> Result<()> {
    let Some(dir) = std::env::var_os(PAUSE_DIR) else {
        return Err(Error::io(
            "pause at",
            step,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "MCPATCH_TEST_PAUSE_DIR is unset",
            ),
            "set MCPATCH_TEST_PAUSE_DIR to a folder holding the FIFOs `reached` and `resume`",
        ));
    };
    let dir = Path::new(&dir);
    // Open `resume` first, read-write, so a line the test writes is kept even
    // before we read it, and the test's open never blocks on us.
    let mut resume = open_fifo(&dir.join("resume"), true)?;
    let mut reached = open_fifo(&dir.join("reached"), false)?;
    let io = |e, name: &str| {
        Error::io(
            "pause at",
            dir.join(name),
            e,
            "the test that set MCPATCH_TEST_PAUSE_AT must hold the FIFOs open",
        )
    };
    reached
        .write_all(format!("{step}\n").as_bytes())
        .map_err(|e| io(e, "reached"))?;
    drop(reached);
    let mut byte = [0u8; 1];
    loop {
        // A signal the step records (see on_signal) stops the pause as it
        // stops the step's own work: the step returns and its drops clean up.
        if let Some(signal) = crate::on_signal::caught() {
            return Err(Error::Interrupted { signal });
        }
        if !readable_within(&resume, 100) {
            continue;
        }
        match resume.read(&mut byte) {
            Ok(1) if byte[0] == b'\n' => return Ok(()),
            Ok(1) => {}
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e, "resume")),
        }
    }
}

/// Whether `file` has something to read within `ms` milliseconds.
#[cfg(unix)]
fn readable_within(file: &File, ms: i32) -> bool {
    use std::os::unix::io::AsRawFd;
    let mut fd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) on one pollfd we own, for a bounded time.
    unsafe { libc::poll(&mut fd, 1, ms) > 0 }
}

#[cfg(not(unix))]
fn readable_within(_: &File, _: i32) -> bool {
    true
}

#[cfg(unix)]
fn open_fifo(path: &Path, read: bool) -> Result<File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let help = "create it with mkfifo (the test hooks talk only through FIFOs)";
    let file = OpenOptions::new()
        .read(read)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io("open", path, e, help))?;
    let is_fifo = file
        .metadata()
        .map(|m| m.file_type().is_fifo())
        .unwrap_or(false);
    if !is_fifo {
        return Err(Error::io(
            "use",
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a FIFO"),
            help,
        ));
    }
    // Blocking from here on: the pause waits for the test.
    // SAFETY: fcntl on a descriptor we own, with integer flags only.
    unsafe {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    Ok(file)
}

#[cfg(not(unix))]
fn open_fifo(path: &Path, _read: bool) -> Result<File> {
    Err(Error::io(
        "open",
        path,
        std::io::Error::new(std::io::ErrorKind::Unsupported, "FIFOs need unix"),
        "run the pause tests on unix",
    ))
}
