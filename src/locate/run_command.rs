//! Running a helper command the search asks (`npm root -g`): in a process
//! group of its own, with a deadline and a cap on the output kept.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Most of a command's output kept (`npm root -g` prints one line).
const MAX_COMMAND_OUTPUT: usize = 64 << 10;

/// Run a command and return its stdout, or why it gave none. The command runs
/// in a process group of its own, killed whole when `timeout` passes, also
/// when the command exited but left a process holding its output; at most
/// [`MAX_COMMAND_OUTPUT`] bytes of it are kept.
pub(super) fn run_with_timeout(
    cmd: &mut Command,
    timeout: Duration,
) -> std::result::Result<String, String> {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    let deadline = Instant::now() + timeout;
    let group = child.id();
    let kill_group = || {
        #[cfg(unix)]
        // SAFETY: kill(2) on the process group we started, with a constant signal.
        unsafe {
            libc::kill(-(group as libc::pid_t), libc::SIGKILL);
        }
    };
    // Read as it comes, so a chatty command never blocks on a full pipe; the
    // start is kept, the rest read and dropped until the pipe closes.
    let (sender, output) = std::sync::mpsc::channel();
    if let Some(mut stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut more = false;
            let mut buf = [0u8; 8192];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = MAX_COMMAND_OUTPUT - kept.len();
                        more |= n > room;
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = sender.send((kept, more));
        });
    }
    let too_late = || format!("no answer within {} s", timeout.as_secs());
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                kill_group();
                let _ = child.wait();
                return Err(too_late());
            }
            Err(e) => {
                kill_group();
                let _ = child.wait();
                return Err(format!("cannot wait for it: {e}"));
            }
        }
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let (out, more) = match output.recv_timeout(left) {
        Ok(got) => got,
        Err(_) => {
            // It exited, but something it started still holds its output.
            kill_group();
            return Err(too_late());
        }
    };
    if !status.success() {
        return Err(format!("it exited with {status}"));
    }
    if more {
        return Err(format!(
            "it printed more than {} KiB",
            MAX_COMMAND_OUTPUT >> 10
        ));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}
