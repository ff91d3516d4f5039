//! The exclusive locks that keep two mcpatch writers apart: one on the
//! backups folder (`.lock`, opened without following links), and one on each
//! install's folder, taken for the whole change to its file, so that runs with
//! different `$DSH_HOME`s (sudo and not, two users) also take turns. A second
//! run waits for the first and then sees its result.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::identity;

/// The backups folder's lock: held for the life of a write command; released on drop.
#[derive(Debug)]
pub struct WriteLock {
    _file: File,
    pub path: PathBuf,
}

/// One install's lock: held while its file is read, checked and replaced.
#[derive(Debug)]
pub struct InstallLock {
    /// Shared by every lock this process holds on the same folder (see
    /// [`lock_install`]).
    _dir: std::sync::Arc<File>,
    pub dir: PathBuf,
    /// Whether this call took the lock (false: shared with a lock this
    /// process already held): only a fresh lock may clear stale temporary
    /// files, never the ones staged beside it in this transaction.
    pub fresh: bool,
}

/// The install folders this process holds locked: a second file of an
/// install in the same folder (ai-sdk-mcp 1.x's `dist/index.mjs` and
/// `dist/index.js`, patched in one transaction) shares the lock instead of
/// waiting forever on its own (a lock is per open folder, even in one process).
static HELD: std::sync::Mutex<Vec<(PathBuf, std::sync::Weak<File>)>> =
    std::sync::Mutex::new(Vec::new());

const LOCK_HELP: &str = "remove the lock file only if no mcpatch is running";

/// Take the lock in `dir` (which must exist), waiting if another mcpatch holds
/// it. The lock file is created if missing, never through a symbolic link, and
/// must be a regular file.
pub fn acquire(dir: &Path) -> Result<WriteLock> {
    let path = dir.join(".lock");
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let file = match options.open(&path) {
        Ok(f) => f,
        Err(source) => {
            // A planted symbolic link (ELOOP) or FIFO (ENXIO) is named as what it is.
            if let Ok(meta) = std::fs::symlink_metadata(&path) {
                if !meta.is_file() {
                    return Err(Error::UnsafeLockFile {
                        path,
                        found: identity::kind_of(&meta),
                    });
                }
            }
            return Err(Error::BackupUnwritable {
                dir: dir.to_path_buf(),
                source,
            });
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| Error::io("lock", &path, e, LOCK_HELP))?;
    if !meta.is_file() {
        return Err(Error::UnsafeLockFile {
            path,
            found: identity::kind_of(&meta),
        });
    }
    wait_for(&file, &path, &format!("holding {}", path.display()))?;
    Ok(WriteLock { _file: file, path })
}

/// Lock the folder that holds `file` (an install's `lib/`), waiting if another
/// mcpatch holds it. Nothing is created: the folder itself is locked, opened
/// without following a symbolic link.
pub fn lock_install(file: &Path) -> Result<InstallLock> {
    let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|(_, h)| h.strong_count() > 0);
        if let Some(h) = held
            .iter()
            .find(|(d, _)| *d == dir)
            .and_then(|(_, h)| h.upgrade())
        {
            return Ok(InstallLock {
                _dir: h,
                dir,
                fresh: false,
            });
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let handle = options.open(&dir).map_err(|e| {
        Error::io(
            "lock",
            &dir,
            e,
            "check that the install's folder exists and is a folder, not a symbolic link",
        )
    })?;
    wait_for(&handle, &dir, &format!("working on {}", dir.display()))?;
    let handle = std::sync::Arc::new(handle);
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((dir.clone(), std::sync::Arc::downgrade(&handle)));
    Ok(InstallLock {
        _dir: handle,
        dir,
        fresh: true,
    })
}

fn wait_for(file: &File, path: &Path, what: &str) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {
            crate::errln!("waiting for another mcpatch {}", crate::output::clean(what));
            file.lock()
                .map_err(|e| Error::io("lock", path, e, LOCK_HELP))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e, LOCK_HELP)),
    }
}
