//! Finds the node binary mcpatch runs for checks and the verify harness,
//! accepts it only if it reports a node version (`vNN.`), says whether it has
//! what the host needs (Node >= 22), and runs it with a time limit, killing
//! what it leaves behind.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{Error, Result};

/// How long one node run may take unless `MCPATCH_NODE_TIMEOUT` (seconds) says otherwise.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// The most of each output stream kept from a node run (the rest is read and dropped).
const MAX_OUTPUT_BYTES: usize = 1024 * 1024;
/// How long to wait for the output pipes to close once node has ended.
const PIPE_GRACE: Duration = Duration::from_secs(5);

/// What to do when `node` is missing from PATH or cannot run.
const INSTALL_HELP: &str = "install Node.js 22 or later, or pass --node PATH";
/// What to do when the binary given with `--node` cannot run.
const GIVEN_HELP: &str = "check the path given to --node: it must be a node binary that runs (DSH itself needs Node.js 22 or later; with an older node, `verify` adds a Promise.withResolvers shim); or leave --node out to use `node` on PATH";

/// A usable node binary.
#[derive(Debug, Clone)]
pub struct Node {
    pub path: PathBuf,
    /// `process.version`, e.g. `v22.23.5`.
    pub version: String,
    /// Whether `Promise.withResolvers` exists (Node >= 22, which the host requires).
    pub has_with_resolvers: bool,
    /// Whether it was given with `--node` (rather than found on PATH).
    pub given: bool,
}

/// The error for a node that cannot run, with the fix that fits how it was chosen.
fn unavailable(path: &Path, given: bool, detail: String) -> Error {
    Error::NodeUnavailable {
        node: path.display().to_string(),
        detail,
        help: if given { GIVEN_HELP } else { INSTALL_HELP },
    }
}

impl Node {
    /// This node cannot run: `detail` says why.
    pub fn unavailable(&self, detail: String) -> Error {
        unavailable(&self.path, self.given, detail)
    }

    /// Run this node with `args` for `step` (named in a timeout error), within
    /// the time limit, and collect its output.
    pub fn run<I, S>(&self, step: &'static str, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = Command::new(&self.path);
        cmd.args(args);
        run_bounded(&self.path, self.given, cmd, step, timeout()?)
    }
}

/// The time limit of each node run: `MCPATCH_NODE_TIMEOUT` seconds, else the default.
pub fn timeout() -> Result<Duration> {
    match std::env::var("MCPATCH_NODE_TIMEOUT") {
        Err(std::env::VarError::NotPresent) => Ok(Duration::from_secs(DEFAULT_TIMEOUT_SECS)),
        Err(std::env::VarError::NotUnicode(v)) => Err(Error::BadNodeTimeout {
            value: v.to_string_lossy().into_owned(),
        }),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(secs) if secs > 0 => Ok(Duration::from_secs(secs)),
            _ => Err(Error::BadNodeTimeout { value: v }),
        },
    }
}

/// `--node PATH`, else `node` on PATH; it must report a `vNN.` version.
pub fn find(explicit: Option<&Path>) -> Result<Node> {
    let given = explicit.is_some();
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => which::which("node")
            .map_err(|_| unavailable(Path::new("node"), false, "not found on PATH".into()))?,
    };
    let mut cmd = Command::new(&path);
    cmd.args(["-p", "process.version + ' ' + typeof Promise.withResolvers"]);
    let out = run_bounded(&path, given, cmd, "the node version check", timeout()?)?;
    if !out.status.success() {
        return Err(unavailable(
            &path,
            given,
            format!(
                "exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace();
    let version = parts.next().unwrap_or_default().to_string();
    if !is_node_version(&version) {
        let printed: String = text.trim().chars().take(200).collect();
        return Err(unavailable(
            &path,
            given,
            format!("it does not report a node version (it printed {printed:?})"),
        ));
    }
    let has_with_resolvers = parts.next() == Some("function");
    Ok(Node {
        path,
        version,
        has_with_resolvers,
        given,
    })
}

/// `v` then digits then a dot, as node's `process.version` is.
fn is_node_version(v: &str) -> bool {
    v.strip_prefix('v')
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(major, _)| !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()))
}

/// Run `cmd` (node at `program`, `given` with `--node` or not) in its own process group with no stdin,
/// keeping at most [`MAX_OUTPUT_BYTES`] of each output. Past `limit` the whole
/// group is killed and the run is a timeout error naming `step`; once node
/// ends, anything it left running in its group is killed too.
fn run_bounded(
    program: &Path,
    given: bool,
    mut cmd: Command,
    step: &'static str,
    limit: Duration,
) -> Result<Output> {
    let unavailable = |e: std::io::Error| unavailable(program, given, e.to_string());
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    // In its own group node misses a Ctrl-C meant for mcpatch: have it die with us.
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure only calls prctl(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().map_err(unavailable)?;
    let (tx, rx) = mpsc::channel();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, stream)| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let kept = stream.map(read_bounded).unwrap_or_default();
            let _ = tx.send((i, kept));
        })
    })
    .collect();
    drop(tx);
    let pid = child.id() as i32;
    let end = wait_for_end(pid, limit);
    // Whether node ended or not: end its whole group (stragglers included).
    kill_group(pid);
    let status = child.wait().map_err(unavailable)?;
    match end {
        End::Ended => {}
        End::TimedOut => {
            return Err(Error::NodeTimeout {
                step,
                node: program.display().to_string(),
                secs: limit.as_secs(),
            })
        }
        End::Interrupted(signal) => return Err(Error::StepInterrupted { signal, step }),
    }
    let mut out = [Vec::new(), Vec::new()];
    for _ in 0..readers.len() {
        match rx.recv_timeout(PIPE_GRACE) {
            Ok((i, kept)) => out[i] = kept,
            // A process outside node's group still holds a pipe: keep what we have.
            Err(_) => break,
        }
    }
    let [stdout, stderr] = out;
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Read a stream to its end, keeping at most [`MAX_OUTPUT_BYTES`].
fn read_bounded(mut stream: Box<dyn Read + Send>) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return kept,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return kept,
        }
    }
}

/// How waiting for node ended.
enum End {
    Ended,
    TimedOut,
    /// A signal was caught while the caller held [`crate::on_signal::catch`].
    Interrupted(&'static str),
}

/// How often a wait looks whether a signal was caught.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Wait until the child `pid` ends (without reaping it, so its process group
/// id stays reserved), `limit` passes, or a signal is caught.
#[cfg(unix)]
fn wait_for_end(pid: i32, limit: Duration) -> End {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: waitid writes only into the siginfo we pass; WNOWAIT leaves the child unreaped.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                break;
            }
        }
        let _ = tx.send(());
    });
    let until = std::time::Instant::now() + limit;
    loop {
        if let Some(signal) = crate::on_signal::caught() {
            return End::Interrupted(signal);
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return End::TimedOut;
        }
        match rx.recv_timeout(left.min(SIGNAL_POLL)) {
            Ok(()) => return End::Ended,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return End::Ended,
        }
    }
}

#[cfg(unix)]
fn kill_group(pid: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group we created; no memory effects.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn wait_for_end(_pid: i32, _limit: Duration) -> End {
    End::Ended
}

#[cfg(not(unix))]
fn kill_group(_pid: i32) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_node_style_versions_are_node() {
        assert!(is_node_version("v22.23.5"));
        assert!(is_node_version("v8.0.0"));
        for not in ["", "v", "v.1", "22.1.0", "vx.1", "-p", "unknown", "v22"] {
            assert!(!is_node_version(not), "{not:?}");
        }
    }
}
