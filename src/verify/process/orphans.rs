//! Nothing a checked program starts outlives the check (Linux): mcpatch is
//! made a child subreaper, so a process the program started and left behind
//! (a `setsid` daemon, outside its process group) becomes mcpatch's child and
//! is killed and reaped when the program is ended; the program gets SIGKILL
//! when mcpatch dies (the parent-death signal, set before it runs), and a
//! watcher forked into its process group kills that group once the program
//! is gone, so a SIGKILL of mcpatch also ends what the program started in its
//! group. A daemon that left the group outlives a SIGKILL of mcpatch: nothing
//! short of a cgroup or a PID namespace could end it then.

use std::collections::HashSet;
use std::sync::Mutex;

/// What an interrupted check can say it stopped: on Linux every process the
/// program started (those it left behind became mcpatch's); elsewhere only
/// its process group.
pub const STOPPED: &str = if cfg!(target_os = "linux") {
    "the bridge, every process it started and the fake server were stopped"
} else {
    "the bridge, the processes of its group and the fake server were stopped (a process it started in a group of its own may still run)"
};

/// Pids of the checked programs still running (each leads its own process
/// group): a sweep never takes them, their owner waits for them.
static LIVE: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// Held while a checked program is started until its pid is in [`LIVE`],
/// and by [`sweep`] while it looks: else a sweep after one run (explored
/// runs end while others start) takes a program just started for another,
/// not yet registered, for an orphan and kills it.
static SPAWNING: Mutex<()> = Mutex::new(());

/// Hold off every [`sweep`] while the caller starts a checked program and
/// registers it.
pub fn spawning() -> std::sync::MutexGuard<'static, ()> {
    SPAWNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Make mcpatch the reaper of every orphan of its descendants (once per process).
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) only sets a flag of this process.
        ONCE.call_once(|| unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        });
    }
}

/// Note `pid` as a checked program that runs (its owner reaps it).
pub fn register(pid: i32) {
    if let Ok(mut live) = LIVE.lock() {
        live.get_or_insert_with(HashSet::new).insert(pid);
    }
}

/// Forget `pid` (it was reaped).
pub fn unregister(pid: i32) {
    if let Ok(mut live) = LIVE.lock() {
        if let Some(l) = live.as_mut() {
            l.remove(&pid);
        }
    }
}

/// Run in the child after fork, before exec: SIGKILL when mcpatch dies, and a
/// watcher in the child's process group that kills the group once the child
/// is gone (by mcpatch's death or its own end). Only async-signal-safe calls.
#[cfg(target_os = "linux")]
pub fn in_child_before_exec() -> std::io::Result<()> {
    // SAFETY: every call below is async-signal-safe (prctl, getppid, getpid,
    // fork, syscall(close_range), close, kill, nanosleep, _exit); nothing allocates.
    unsafe {
        let mcpatch = libc::getppid();
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != mcpatch {
            // mcpatch died between fork and prctl.
            libc::_exit(1);
        }
        let program = libc::getpid();
        let pid = libc::fork();
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            // The watcher holds none of the program's pipes: their ends must come when the program's do.
            if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
                for fd in 0..4096 {
                    libc::close(fd);
                }
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 100_000_000,
            };
            while libc::getppid() == program {
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
            // The program is gone: end its group (this watcher included).
            libc::kill(-program, libc::SIGKILL);
            libc::_exit(0);
        }
    }
    Ok(())
}

/// When `pid` started, in clock ticks after boot (field 22 of /proc/PID/stat).
pub fn start_ticks(pid: i32) -> Option<u64> {
    stat_fields(pid).and_then(|f| f.get(19)?.parse().ok())
}

/// The fields of /proc/PID/stat after the command's name.
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// mcpatch's children that started at `since` or later and are no checked
/// program still running: the orphans a checked program left behind.
fn orphans(since: u64) -> Vec<i32> {
    let me = std::process::id() as i32;
    let live = LIVE.lock().ok().and_then(|l| l.clone()).unwrap_or_default();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| !live.contains(pid))
        .filter(|pid| {
            stat_fields(*pid).is_some_and(|f| {
                f.get(1).and_then(|p| p.parse::<i32>().ok()) == Some(me)
                    && f.get(19)
                        .and_then(|t| t.parse::<u64>().ok())
                        .is_some_and(|t| t >= since)
            })
        })
        .collect()
}

/// Kill and reap every orphan (see [`orphans`]) until none is left: each
/// killed one's own children become mcpatch's in turn. Bounded.
pub fn sweep(since: u64) {
    #[cfg(target_os = "linux")]
    for _ in 0..64 {
        let _no_spawn = spawning();
        let found = orphans(since);
        if found.is_empty() {
            return;
        }
        for pid in &found {
            // SAFETY: kill(2) of mcpatch's own child, not yet reaped (so its pid is not reused).
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        for pid in &found {
            let mut status = 0;
            // SAFETY: waitpid on mcpatch's own child just killed; the wait is short.
            unsafe {
                libc::waitpid(*pid, &mut status, 0);
            }
        }
    }
}
