//! Scratch folders that a signal ending mcpatch (SIGINT, SIGTERM, SIGHUP: the
//! terminal closed) must not leave behind, such as apply's stage folder while
//! node checks the staged file. The handler only writes the signal's number to
//! a pipe; a thread reads it, removes the folders registered, and ends the
//! process by that same signal with its default action, as if mcpatch had not
//! caught it. An install is never left half-changed by this: a signal may end
//! mcpatch at any step, as before; only the scratch goes too.
//!
//! Some steps are long and leave things in an install while they run (apply's
//! `node --check`, its load check, the verify of a patched copy): there a
//! signal must not end mcpatch at once, or the staged file, the backup made for
//! the change and node's process group stay behind. Those steps hold a
//! [`Catching`] guard: while one lives, the handler only records the signal
//! ([`caught`]), and the step stops its work and returns an error, so the
//! ordinary drops clean up and mcpatch exits 2 saying so. A second signal, or
//! 20 s without mcpatch ending, ends it by the signal as anywhere else.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The folders to remove if a signal ends mcpatch.
static FOLDERS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// The write end of the pipe the handler writes to (-1: not set up).
static PIPE: AtomicI32 = AtomicI32::new(-1);
/// Whether the handlers are set up (once per process).
static SET_UP: OnceLock<bool> = OnceLock::new();
/// Marks a signal caught (not to end by at once) on the pipe.
const CAUGHT_FLAG: u8 = 0x80;
/// How long a caught signal may take to stop mcpatch before it ends by it.
const CAUGHT_GRACE: std::time::Duration = std::time::Duration::from_secs(20);
/// How many [`Catching`] guards live: while any does, a signal is only recorded.
static CATCHING: AtomicUsize = AtomicUsize::new(0);
/// The signal recorded while catching (0: none). Never cleared: the run is ending.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// While this lives, SIGINT, SIGTERM and SIGHUP do not end mcpatch: they are
/// recorded for [`caught`], and the step holding it must stop and return.
#[derive(Debug)]
pub struct Catching {
    _private: (),
}

/// Record signals instead of ending by them until the guard is dropped.
pub fn catch() -> Catching {
    set_up();
    CATCHING.fetch_add(1, Ordering::SeqCst);
    Catching { _private: () }
}

impl Drop for Catching {
    fn drop(&mut self) {
        CATCHING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The signal caught while a [`Catching`] guard lived, by name, if any.
pub fn caught() -> Option<&'static str> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        #[cfg(unix)]
        libc::SIGTERM => Some("SIGTERM"),
        #[cfg(unix)]
        libc::SIGHUP => Some("SIGHUP"),
        _ => Some("SIGINT"),
    }
}

fn folders() -> MutexGuard<'static, Vec<PathBuf>> {
    FOLDERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A folder removed if a signal ends mcpatch while this lives; on drop the
/// folder is removed (whatever owns it may remove it again) and forgotten.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

/// Remove `path` (a scratch folder) if SIGINT, SIGTERM or SIGHUP ends
/// mcpatch before the returned guard is dropped.
pub fn remove_on_signal(path: &Path) -> Scratch {
    set_up();
    folders().push(path.to_path_buf());
    Scratch {
        path: path.to_path_buf(),
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        folders().retain(|p| p != &self.path);
    }
}

#[cfg(unix)]
fn set_up() {
    SET_UP.get_or_init(|| {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array we pass.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return false;
        }
        let [read, write] = fds;
        PIPE.store(write, Ordering::SeqCst);
        let started = std::thread::Builder::new()
            .name("mcpatch-signals".into())
            .spawn(move || {
                let mut byte = [0u8; 1];
                loop {
                    // SAFETY: read(2) into a one-byte buffer we own.
                    let n = unsafe { libc::read(read, byte.as_mut_ptr().cast(), 1) };
                    if n == 1 && byte[0] & CAUGHT_FLAG != 0 {
                        // Caught: the step stops and mcpatch exits 2 well
                        // before this; if not, the signal still ends it.
                        let signal = i32::from(byte[0] & !CAUGHT_FLAG);
                        std::thread::spawn(move || {
                            std::thread::sleep(CAUGHT_GRACE);
                            end_by(signal);
                        });
                        continue;
                    }
                    if n == 1 {
                        end_by(i32::from(byte[0]));
                    }
                    if n < 0
                        && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                    {
                        continue;
                    }
                    return;
                }
            });
        if started.is_err() {
            return false;
        }
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: a zeroed sigaction with our handler and an empty mask is
            // valid; sigaction(2) only reads it.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
        true
    });
}

#[cfg(not(unix))]
fn set_up() {}

/// The signal handler: only atomics and write(2), which are async-signal-safe.
#[cfg(unix)]
extern "C" fn handler(signal: libc::c_int) {
    let fd = PIPE.load(Ordering::Relaxed);
    let mut byte = signal as u8;
    // A second signal after one was caught ends mcpatch at once, as the first
    // would have anywhere else.
    if CATCHING.load(Ordering::SeqCst) > 0 && CAUGHT.load(Ordering::SeqCst) == 0 {
        CAUGHT.store(signal, Ordering::SeqCst);
        byte |= CAUGHT_FLAG;
    }
    // SAFETY: write(2) of one byte from the stack to the pipe set up above.
    unsafe {
        libc::write(fd, (&byte as *const u8).cast(), 1);
    }
}

/// Remove every folder registered, then end by `signal` as its default action does.
#[cfg(unix)]
fn end_by(signal: i32) -> ! {
    for path in folders().iter() {
        let _ = std::fs::remove_dir_all(path);
    }
    // SAFETY: restoring the default action and raising the signal; the
    // default action of these three signals ends the process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    std::process::exit(128 + signal)
}
