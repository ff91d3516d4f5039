//! mcpatch runs paused at a named step (MCPATCH_TEST_PAUSE_AT), for the tests
//! that act in between (a signal, a file replaced, a folder swapped): the step
//! comes back on a FIFO, and a run that ends first fails the test with its
//! output instead of leaving it waiting.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::Stdio;

use super::harden::mkfifo;
use super::*;

/// The step a paused run says it reached on its `reached` FIFO (opened
/// read-write, so never at end of file). A run that ends before it pauses
/// fails the test with its stderr, as does one that neither pauses nor ends
/// within `limit`, instead of leaving the test waiting for ever.
pub(crate) fn reached_step(
    reached: &File,
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> String {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let fd = reached.as_raw_fd();
    // SAFETY: fcntl(2) on a descriptor this test owns.
    unsafe {
        libc::fcntl(
            fd,
            libc::F_SETFL,
            libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
        )
    };
    let started = std::time::Instant::now();
    let mut got = Vec::new();
    loop {
        let mut buf = [0u8; 256];
        if let Ok(n) = (&*reached).read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
            if got.ends_with(b"\n") {
                return String::from_utf8_lossy(&got).into_owned();
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("the run ended ({status}) before it paused at its step: {err}");
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run neither paused at its step nor ended within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// An mcpatch run that pauses at a named step (MCPATCH_TEST_PAUSE_AT) until
/// the test resumes it, talking through two FIFOs; no sleeps.
pub(crate) struct Paused {
    dir: tempfile::TempDir,
    reached: BufReader<File>,
    run: Option<std::thread::JoinHandle<Output>>,
}

impl Paused {
    pub(crate) fn start(mut cmd: std::process::Command, step: &str) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("mcpatch-pause-")
            .tempdir()
            .unwrap();
        mkfifo(&dir.path().join("reached"));
        mkfifo(&dir.path().join("resume"));
        // Read-write: never blocks, and a line written when the run ends wakes the reader.
        let reached = OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.path().join("reached"))
            .unwrap();
        let mut ended = reached.try_clone().unwrap();
        let child = cmd
            .env("MCPATCH_TEST_PAUSE_AT", step)
            .env("MCPATCH_TEST_PAUSE_DIR", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let run = std::thread::spawn(move || {
            let out = child.wait_with_output().unwrap();
            let _ = ended.write_all(b"(run ended)\n");
            out
        });
        Paused {
            dir,
            reached: BufReader::new(reached),
            run: Some(run),
        }
    }

    /// Wait until the run reaches `step`; fail with its output if it ended first.
    pub(crate) fn expect_reached(&mut self, step: &str) {
        let mut line = String::new();
        self.reached.read_line(&mut line).unwrap();
        if line.trim_end() != step {
            let o = self.run.take().unwrap().join().unwrap();
            panic!(
                "the run never paused at step {step} (got {line:?}); exit {:?}\n{}{}",
                o.status,
                stdout(&o),
                stderr(&o)
            );
        }
    }

    /// Let the paused run go on.
    pub(crate) fn resume(&self) {
        let mut f = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.dir.path().join("resume"))
            .expect("the paused run holds the resume FIFO open");
        f.write_all(b"go\n").unwrap();
    }

    pub(crate) fn finish(mut self) -> Output {
        self.run.take().unwrap().join().unwrap()
    }
}
