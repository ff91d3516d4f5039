//! The programs a driver starts to check an install (a bridge, the headless
//! CLI), as child processes, one home for every driver: a command line parsed
//! with shell quoting rules (no shell runs it), the fake server's URL put in,
//! run in a process group of its own so that everything it starts (an `npx`
//! download, the node it execs) is killed with it, what it leaves behind
//! outside the group killed too (orphans.rs), and reaped on every path, drop
//! and unwinding included. Its stderr is drained as it comes, each line cut
//! to a bounded length and decoded lossily, so no output stops the draining.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

pub mod env;
pub mod orphans;

use crate::error::{Error, Result};

/// The placeholder an argument may hold for the fake server's URL.
pub const URL_PLACEHOLDER: &str = "{url}";
/// Lines of the bridge's stderr kept per scenario (the last ones).
pub const STDERR_LINES: usize = 200;
/// Longest stderr line kept; longer lines are cut and end with `…`.
const STDERR_LINE_CHARS: usize = 1000;
/// Bytes of one stderr line held while it is read (the rest until its end is dropped).
const STDERR_LINE_BYTES: usize = 4 * STDERR_LINE_CHARS;

/// Split `command` into a program and its arguments, as a POSIX shell would
/// split it (quotes and backslashes), without running a shell.
pub fn parse(command: &str) -> Result<Vec<String>> {
    let words = shell_words::split(command).map_err(|e| Error::BridgeCommand {
        command: command.to_string(),
        problem: e.to_string(),
    })?;
    if words.is_empty() {
        return Err(Error::BridgeCommand {
            command: command.to_string(),
            problem: "it names no program".into(),
        });
    }
    Ok(words)
}

/// The argv to run the user's `--command` words: `{url}` replaced where an
/// argument holds it, else the URL appended as the last argument (the
/// conformance suite's convention).
pub fn with_url(words: &[String], url: &str) -> Vec<OsString> {
    if words.iter().any(|w| w.contains(URL_PLACEHOLDER)) {
        words
            .iter()
            .map(|w| w.replace(URL_PLACEHOLDER, url).into())
            .collect()
    } else {
        words
            .iter()
            .cloned()
            .chain([url.to_string()])
            .map(OsString::from)
            .collect()
    }
}

/// What the bridge wrote to stderr: the last [`STDERR_LINES`] lines.
#[derive(Debug, Default)]
pub struct StderrTail {
    lines: VecDeque<String>,
    /// Lines dropped from the start to keep the tail.
    pub dropped: usize,
}

impl StderrTail {
    /// Keep one line read as bytes (`cut`: bytes after the first
    /// [`STDERR_LINE_BYTES`] were dropped), decoded lossily.
    fn push_bytes(&mut self, bytes: &[u8], cut: bool) {
        let mut line = String::from_utf8_lossy(bytes).into_owned();
        if cut && line.chars().count() <= STDERR_LINE_CHARS {
            line.push('…');
        }
        self.push(line);
    }

    fn push(&mut self, line: String) {
        let line = if line.chars().count() > STDERR_LINE_CHARS {
            let mut cut: String = line.chars().take(STDERR_LINE_CHARS).collect();
            cut.push('…');
            cut
        } else {
            line
        };
        if self.lines.len() == STDERR_LINES {
            self.lines.pop_front();
            self.dropped += 1;
        }
        self.lines.push_back(line);
    }

    /// The kept lines, joined.
    pub fn text(&self) -> String {
        self.lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// The last `n` lines, joined.
    pub fn last(&self, n: usize) -> String {
        let skip = self.lines.len().saturating_sub(n);
        self.lines
            .iter()
            .skip(skip)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A running child in a process group of its own (a bridge, a headless CLI).
/// Dropping it kills its whole process group and reaps it.
pub struct GroupChild {
    child: tokio::process::Child,
    /// The process group (the child's pid: it leads its own group).
    pgid: Option<i32>,
    pub stderr: Arc<Mutex<StderrTail>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    /// When the child started (clock ticks after boot): what mcpatch got as
    /// orphans from then on was left behind by it.
    since: Option<u64>,
}

/// Where a child's environment comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Environment {
    /// mcpatch's own, whole (the user's own `--command`).
    Inherited,
    /// Cleared but for the variables [`self::env`] lets through,
    /// HOME and TMPDIR the given scratch folder (what mcpatch starts by itself).
    Cleared(std::path::PathBuf),
}

impl GroupChild {
    /// Start `argv` with piped stdio, in `environment`, with `env` and the
    /// conformance suite's variables set.
    pub fn spawn(
        argv: &[OsString],
        scenario: &str,
        protocol_version: &str,
        environment: &Environment,
        env: &[(String, OsString)],
    ) -> Result<(GroupChild, ChildStdin, ChildStdout)> {
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        if let Environment::Cleared(scratch) = environment {
            self::env::clear(cmd.as_std_mut(), scratch);
        }
        cmd.envs(env.iter().map(|(k, v)| (k, v)))
            .env("MCP_CONFORMANCE_SCENARIO", scenario)
            .env("MCP_CONFORMANCE_PROTOCOL_VERSION", protocol_version);
        Self::spawn_command(cmd, &argv[0].to_string_lossy())
    }

    /// Start `cmd` (`program` names it in errors) with piped stdio, leading a process group of its own.
    pub fn spawn_command(
        mut cmd: tokio::process::Command,
        program: &str,
    ) -> Result<(GroupChild, ChildStdin, ChildStdout)> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        orphans::become_subreaper();
        #[cfg(target_os = "linux")]
        // SAFETY: the hook runs between fork and exec and makes only
        // async-signal-safe calls (see orphans::in_child_before_exec).
        unsafe {
            cmd.pre_exec(orphans::in_child_before_exec);
        }
        // No sweep between the start and the registration (see orphans::spawning).
        let held = orphans::spawning();
        let mut child = cmd.spawn().map_err(|source| Error::BridgeSpawn {
            program: program.to_string(),
            source,
        })?;
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        if let Some(pid) = pgid {
            orphans::register(pid);
        }
        drop(held);
        let since = pgid.and_then(orphans::start_ticks);
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let tail = Arc::new(Mutex::new(StderrTail::default()));
        let kept = tail.clone();
        // Drained as it comes, so a chatty bridge never blocks on a full pipe.
        let stderr_task = tokio::spawn(drain(BufReader::new(stderr), kept));
        Ok((
            GroupChild {
                child,
                pgid,
                stderr: tail,
                stderr_task: Some(stderr_task),
                since,
            },
            stdin,
            stdout,
        ))
    }

    /// End the bridge: wait up to `grace` for it to exit by itself (its stdin
    /// is closed by then), then kill its process group; wait for the rest of its stderr.
    pub async fn finish(mut self, grace: std::time::Duration) -> Option<std::process::ExitStatus> {
        let status = tokio::time::timeout(grace, self.child.wait())
            .await
            .ok()
            .and_then(|r| r.ok());
        self.kill_group();
        let status = match status {
            Some(s) => Some(s),
            None => self.child.wait().await.ok(),
        };
        // Its stderr ends once every process of the group is gone.
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), task).await;
        }
        if status.is_some() {
            // Reaped, its group killed: nothing is left to signal (and the id may be reused).
            if let Some(pid) = self.pgid.take() {
                orphans::unregister(pid);
            }
        }
        if let Some(since) = self.since {
            orphans::sweep(since);
        }
        status
    }

    /// SIGKILL to every process of the bridge's group (the bridge included).
    fn kill_group(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            // SAFETY: kill(2) with a negative pid signals that process group only;
            // the group is the child's own (process_group(0) at spawn).
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill_group();
        // Reap it here, whatever path dropped it (an error, an interrupt, a
        // panic unwinding): after SIGKILL the wait is short.
        #[cfg(unix)]
        if let Some(pid) = self.pgid {
            if self.child.try_wait().ok().flatten().is_none() {
                let mut status = 0;
                // SAFETY: waitpid on our own child's pid; tokio's later try_wait
                // of the same pid only finds it already reaped.
                unsafe {
                    libc::waitpid(pid, &mut status, 0);
                }
            }
            orphans::unregister(pid);
        }
        if let Some(since) = self.since {
            orphans::sweep(since);
        }
        if let Some(task) = self.stderr_task.take() {
            task.abort();
        }
    }
}

/// Read `stderr` to its end into `tail`, line by line: at most
/// [`STDERR_LINE_BYTES`] of a line are held, any bytes (not UTF-8 too) are taken.
async fn drain(mut stderr: impl AsyncBufRead + Unpin, tail: Arc<Mutex<StderrTail>>) {
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let buf = match stderr.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(buf) => buf,
        };
        let end = buf.iter().position(|b| *b == b'\n');
        let part = &buf[..end.unwrap_or(buf.len())];
        let room = STDERR_LINE_BYTES.saturating_sub(line.len());
        cut |= part.len() > room;
        line.extend_from_slice(&part[..part.len().min(room)]);
        let used = end.map_or(buf.len(), |at| at + 1);
        stderr.consume(used);
        if end.is_some() {
            if let Ok(mut t) = tail.lock() {
                t.push_bytes(&line, cut);
            }
            line.clear();
            cut = false;
        }
    }
    if !line.is_empty() || cut {
        if let Ok(mut t) = tail.lock() {
            t.push_bytes(&line, cut);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_as_a_shell_would_without_running_one() {
        assert_eq!(
            parse(r#"npx -y mcp-remote@0.15.1 --header 'Authorization: Bearer x y'"#).unwrap(),
            [
                "npx",
                "-y",
                "mcp-remote@0.15.1",
                "--header",
                "Authorization: Bearer x y"
            ]
        );
        assert_eq!(
            parse(r#"node "my bridge.js" a\ b $HOME;rm"#).unwrap(),
            ["node", "my bridge.js", "a b", "$HOME;rm"]
        );
        let e = parse("node 'unclosed").unwrap_err().to_string();
        assert_eq!(
            e,
            "cannot run the bridge command \"node 'unclosed\": missing closing quote\nhelp: pass --command one command line, quoted as for a shell, e.g. --command 'npx -y mcp-remote@0.15.1'"
        );
        let e = parse("  ").unwrap_err().to_string();
        assert!(e.contains(": it names no program\n"), "{e}");
    }

    #[test]
    fn the_url_replaces_the_placeholder_or_comes_last() {
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let o = |s: &[&str]| s.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            with_url(
                &w(&["mcp-remote", "--transport", "http-only"]),
                "http://h/mcp"
            ),
            o(&["mcp-remote", "--transport", "http-only", "http://h/mcp"])
        );
        assert_eq!(
            with_url(&w(&["bridge", "--url={url}", "--quiet"]), "http://h/mcp"),
            o(&["bridge", "--url=http://h/mcp", "--quiet"])
        );
    }

    #[tokio::test]
    async fn stderr_is_drained_to_its_end_lossily_with_each_line_held_within_a_bound() {
        let mut input = b"ok\nbad \xff byte\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', STDERR_LINE_BYTES * 3));
        input.extend(b"\n\xe2\x82\xac\nlast");
        let tail = Arc::new(Mutex::new(StderrTail::default()));
        drain(&input[..], tail.clone()).await;
        let t = tail.lock().unwrap();
        assert_eq!(
            t.text(),
            format!(
                "ok\nbad \u{fffd} byte\n{}…\n€\nlast",
                "x".repeat(STDERR_LINE_CHARS)
            )
        );
    }

    #[test]
    fn the_stderr_tail_keeps_the_last_lines_each_cut_to_length() {
        let mut t = StderrTail::default();
        for i in 0..STDERR_LINES + 5 {
            t.push(format!("line {i}"));
        }
        assert_eq!(t.dropped, 5);
        assert_eq!(
            t.last(2),
            format!("line {}\nline {}", STDERR_LINES + 3, STDERR_LINES + 4)
        );
        assert!(t.text().starts_with("line 5\n"));
        t.push("x".repeat(STDERR_LINE_CHARS + 10));
        assert_eq!(t.last(1).chars().count(), STDERR_LINE_CHARS + 1);
        assert!(t.last(1).ends_with('…'));
    }
}
