//! Which running processes still run an install's old code: a host loads the
//! client once, so after `apply` or `revert` (or an upgrade) every host
//! process started before the file last changed keeps what it loaded until it
//! is restarted. On Linux mcpatch reads /proc once per command (each process's
//! `cmdline`, and `stat` only for the few that match); elsewhere it cannot tell.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::registry::PatchSpec;

/// What to do for processes of an install outside a host, or of a target whose
/// manifest gives no restart command (`texts.restart_command`).
pub const OTHER_RESTART: &str = "stop each of these processes and start it again";
/// What mcpatch says where it cannot read the process table.
pub const CANNOT_TELL: &str =
    "mcpatch cannot tell on this system which processes still run the old code; restart every process that runs it";
/// Arguments of node that name a file it loads before the script.
const NODE_FILE_OPTIONS: [&str; 6] = [
    "-r",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
    "--env-file",
];

/// A process that started before the install's file last changed, so it runs
/// the code the file held before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunningProcess {
    pub pid: u32,
    /// When it started, RFC 3339 UTC.
    pub started: String,
    /// Its command line, arguments joined by spaces, control characters escaped.
    pub command: String,
}

/// What mcpatch found out about one install's processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningReport {
    /// None where mcpatch cannot tell (no /proc).
    pub processes: Option<Vec<RunningProcess>>,
    /// The command that restarts them.
    pub restart: &'static str,
}

/// One process as /proc shows it.
struct Proc {
    pid: u32,
    args: Vec<String>,
}

/// The process table, read once.
pub struct ProcessTable {
    /// None where there is no /proc to read.
    procs: Option<Vec<Proc>>,
    /// When the machine booted, to the microsecond (see [`boot_time`]).
    boot: Option<SystemTime>,
    ticks_per_second: u64,
}

impl ProcessTable {
    /// Read every process's command line (Linux), or note that it cannot be read.
    pub fn scan() -> Self {
        Self::scan_in(Path::new("/proc"))
    }

    fn scan_in(proc_dir: &Path) -> Self {
        if !cfg!(target_os = "linux") {
            return ProcessTable {
                procs: None,
                boot: None,
                ticks_per_second: 100,
            };
        }
        let Ok(entries) = std::fs::read_dir(proc_dir) else {
            return ProcessTable {
                procs: None,
                boot: None,
                ticks_per_second: 100,
            };
        };
        let me = std::process::id();
        let mut procs = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            // Kernel threads and zombies have an empty command line.
            let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            if raw.is_empty() {
                continue;
            }
            let raw = raw.strip_suffix(&[0]).unwrap_or(&raw);
            let args = raw
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            procs.push(Proc { pid, args });
        }
        ProcessTable {
            procs: Some(procs),
            boot: boot_time(proc_dir),
            ticks_per_second: ticks_per_second(),
        }
    }

    /// The processes that run the install at `package_dir` (its package, or
    /// the host package it is nested in, one of the target's `installs.hosts`) and started
    /// before `file` last changed.
    pub fn running(&self, spec: &PatchSpec, package_dir: &Path, file: &Path) -> RunningReport {
        let host = host_of(package_dir, &spec.installs.hosts);
        let restart = match (&host, spec.texts.restart_command) {
            (Some(_), Some(command)) => command,
            _ => OTHER_RESTART,
        };
        let (Some(procs), Some(boot)) = (&self.procs, self.boot) else {
            return RunningReport {
                processes: None,
                restart,
            };
        };
        let changed = changed_at(file);
        let mut roots: Vec<PathBuf> = Vec::new();
        for dir in std::iter::once(package_dir).chain(host.as_deref()) {
            roots.push(dir.to_path_buf());
            if let Ok(c) = std::fs::canonicalize(dir) {
                roots.push(c);
            }
        }
        // A cheap test first: only arguments naming one of these folders'
        // names can run them (a bin link is named after its package).
        let mut needles: Vec<String> = roots
            .iter()
            .filter_map(|r| r.file_name()?.to_str().map(str::to_string))
            .collect();
        needles.sort();
        needles.dedup();
        let mut resolved: HashMap<(u32, String), Option<PathBuf>> = HashMap::new();
        let mut found = Vec::new();
        for p in procs {
            let runs = loaded_files(&p.args).into_iter().any(|arg| {
                if !needles.iter().any(|n| arg.contains(n.as_str())) {
                    return false;
                }
                let path = resolved
                    .entry((p.pid, arg.to_string()))
                    .or_insert_with(|| resolve(p.pid, arg));
                let given = Path::new(arg);
                roots.iter().any(|r| {
                    given.starts_with(r) || path.as_ref().is_some_and(|x| x.starts_with(r))
                })
            });
            if !runs {
                continue;
            }
            let Some(started) = self.started(p.pid, boot) else {
                continue;
            };
            if changed.is_some_and(|c| started >= c) {
                continue;
            }
            found.push(RunningProcess {
                pid: p.pid,
                started: humantime::format_rfc3339_seconds(started).to_string(),
                command: escape_command(&p.args),
            });
        }
        found.sort_by_key(|p| p.pid);
        RunningReport {
            processes: Some(found),
            restart,
        }
    }

    /// When process `pid` started (field 22 of /proc/PID/stat, in clock ticks after boot).
    fn started(&self, pid: u32, boot: SystemTime) -> Option<SystemTime> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
        let rest = &stat[stat.rfind(')')? + 1..];
        let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
        let tps = self.ticks_per_second.max(1);
        let nanos = (ticks % tps) * (1_000_000_000 / tps);
        Some(
            boot + std::time::Duration::from_secs(ticks / tps)
                + std::time::Duration::from_nanos(nanos),
        )
    }
}

/// The arguments that name what a process runs: its program, and for node the
/// script and the files its options load.
fn loaded_files(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let Some(program) = args.first() else {
        return out;
    };
    out.push(program.as_str());
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    // node, nodejs, or a versioned name such as node22.
    let is_node = name == "nodejs"
        || name.strip_prefix("node").is_some_and(|v| {
            v.chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == '-')
        });
    if !is_node {
        return out;
    }
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        if NODE_FILE_OPTIONS.contains(&arg.as_str()) {
            if let Some(v) = rest.next() {
                out.push(v);
            }
        } else if let Some((opt, v)) = arg.split_once('=') {
            if NODE_FILE_OPTIONS.contains(&opt) {
                out.push(v);
            }
        } else if arg == "--" {
            if let Some(script) = rest.next() {
                out.push(script);
            }
            break;
        } else if !arg.starts_with('-') {
            out.push(arg);
            break;
        }
    }
    out
}

/// An argument as the file it names, resolved as the process sees it
/// (relative to its working folder), links followed.
fn resolve(pid: u32, arg: &str) -> Option<PathBuf> {
    let path = Path::new(arg);
    if !arg.contains('/') {
        return None;
    }
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::fs::read_link(format!("/proc/{pid}/cwd"))
            .ok()?
            .join(path)
    };
    std::fs::canonicalize(full).ok()
}

/// The host package (one of the target's `installs.hosts`) an install is
/// nested in (`<host>/node_modules/<scope>/<package>`), if any.
pub fn host_of(package_dir: &Path, hosts: &[String]) -> Option<PathBuf> {
    let scope = package_dir.parent()?;
    let node_modules = scope.parent()?;
    if node_modules.file_name()? != "node_modules" {
        return None;
    }
    let host = node_modules.parent()?;
    let (bytes, _) = crate::identity::read_capped(
        &host.join("package.json"),
        crate::identity::MAX_METADATA_BYTES,
        true,
    )
    .ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let name = value.get("name")?.as_str()?;
    hosts.iter().any(|h| h == name).then(|| host.to_path_buf())
}

/// When `file` last changed: the later of its modification and status-change
/// times (a file renamed into place keeps the mtime it was written with).
fn changed_at(file: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(file).ok()?;
    let modified = meta.modified().ok();
    #[cfg(unix)]
    let status_changed = {
        use std::os::unix::fs::MetadataExt;
        u64::try_from(meta.ctime()).ok().map(|s| {
            SystemTime::UNIX_EPOCH
                + std::time::Duration::new(s, u32::try_from(meta.ctime_nsec()).unwrap_or(0))
        })
    };
    #[cfg(not(unix))]
    let status_changed = None;
    modified.max(status_changed)
}

/// When the machine booted: the wall clock less the time since boot
/// (`CLOCK_BOOTTIME`, the clock process start times count in). The boot clock
/// is read between two wall-clock reads, and the tightest of a few tries is
/// kept, so a pause between the reads cannot move the boot: each command
/// must print the same start time for the same process.
fn boot_time(proc_dir: &Path) -> Option<SystemTime> {
    // Only a readable process table has start times to place.
    std::fs::metadata(proc_dir.join("uptime")).ok()?;
    let mut best: Option<(std::time::Duration, SystemTime)> = None;
    for _ in 0..5 {
        let before = SystemTime::now();
        let since_boot = boot_clock()?;
        let after = SystemTime::now();
        let gap = after.duration_since(before).unwrap_or_default();
        let boot = (before + gap / 2).checked_sub(since_boot)?;
        if best.is_none_or(|(g, _)| gap < g) {
            best = Some((gap, boot));
        }
        if gap < std::time::Duration::from_micros(200) {
            break;
        }
    }
    best.map(|(_, boot)| boot)
}

/// The time since boot, suspended time included.
fn boot_clock() -> Option<std::time::Duration> {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime only writes the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } == 0 {
            return Some(std::time::Duration::new(
                u64::try_from(ts.tv_sec).ok()?,
                u32::try_from(ts.tv_nsec).ok()?,
            ));
        }
    }
    None
}

fn ticks_per_second() -> u64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads a configuration value.
        let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if t > 0 {
            return t as u64;
        }
    }
    100
}

/// A command line as text for a terminal: arguments joined by spaces, through
/// the escaper every text from outside goes through ([`crate::output::clean`]).
pub fn escape_command(args: &[String]) -> String {
    crate::output::clean(&args.join(" ")).into_owned()
}

/// The lines `status`, `apply` and `revert` print under an install: each
/// process, then the restart command (nothing when none runs).
pub fn lines(report: &RunningReport) -> Vec<String> {
    match &report.processes {
        None => vec![CANNOT_TELL.to_string()],
        Some(list) if list.is_empty() => Vec::new(),
        Some(list) => {
            let mut out = vec![format!(
                "{} running process(es) started before the file last changed, so they still run the code it held before:",
                list.len()
            )];
            out.extend(
                list.iter()
                    .map(|p| format!("  pid {} since {}: {}", p.pid, p.started, p.command)),
            );
            out.push(format!("restart them: {}", report.restart));
            out
        }
    }
}

/// The same in a few words for a one-line report (`apply --quiet`): the
/// pids still running the old code and the restart command, else nothing.
pub fn short(report: &RunningReport) -> String {
    match &report.processes {
        None => "; mcpatch cannot tell which processes still run the old code".to_string(),
        Some(list) if list.is_empty() => String::new(),
        Some(list) => format!(
            "; pid {} still run(s) the old code (restart: {})",
            list.iter()
                .map(|p| p.pid.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            report.restart
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn control_characters_in_a_command_line_are_escaped() {
        assert_eq!(
            escape_command(&args(&[
                "node",
                "/x/dsh\u{1b}]0;owned\u{7}",
                "a\"b\\c\n",
                "\u{202e}"
            ])),
            "node /x/dsh\\u{1b}]0;owned\\u{7} a\"b\\c\\n \\u{202e}"
        );
    }

    #[test]
    fn node_runs_its_script_and_the_files_its_options_load() {
        assert_eq!(
            loaded_files(&args(&[
                "node",
                "--require",
                "/a.js",
                "--inspect",
                "/b/dsh",
                "web",
                "/c"
            ])),
            ["node", "/a.js", "/b/dsh"]
        );
        assert_eq!(
            loaded_files(&args(&[
                "/usr/bin/node",
                "--import=/i.mjs",
                "--",
                "s.js",
                "x"
            ])),
            ["/usr/bin/node", "/i.mjs", "s.js"]
        );
        assert_eq!(
            loaded_files(&args(&["/opt/node22", "/b/x.js"])),
            ["/opt/node22", "/b/x.js"]
        );
        // Another program only runs itself: an editor naming the file does not run it.
        assert_eq!(
            loaded_files(&args(&["vim", "/b/dsh/lib/index.js"])),
            ["vim"]
        );
    }

    /// The same process must get the same start time from one command to the
    /// next (apply prints it, status prints it again): the boot time each scan
    /// works out must agree to well under the second it is printed to.
    #[test]
    fn boot_time_is_the_same_from_one_scan_to_the_next() {
        let first = boot_time(Path::new("/proc")).unwrap();
        for _ in 0..30 {
            std::thread::sleep(std::time::Duration::from_millis(3));
            let again = boot_time(Path::new("/proc")).unwrap();
            let apart = again.duration_since(first).unwrap_or_else(|e| e.duration());
            assert!(
                apart < std::time::Duration::from_millis(2),
                "two scans put the boot {apart:?} apart"
            );
        }
    }

    #[test]
    fn no_process_table_means_cannot_tell() {
        let t = ProcessTable::scan_in(Path::new("/nonexistent/proc"));
        let spec = &crate::registry::all().unwrap()[0];
        let r = t.running(spec, Path::new("/x"), Path::new("/x/lib/index.js"));
        assert_eq!(r.processes, None);
        assert_eq!(lines(&r), [CANNOT_TELL]);
    }
}
