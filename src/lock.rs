//! The exclusive lock that keeps two mcpatch writers off the same installs:
//! a second apply or revert waits for the first and then sees its result.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Held for the life of a write command; released on drop.
#[derive(Debug)]
pub struct WriteLock {
    _file: File,
    pub path: PathBuf,
}

/// Take the lock in `dir` (creating it), waiting if another mcpatch holds it.
pub fn acquire(dir: &Path) -> Result<WriteLock> {
    std::fs::create_dir_all(dir).map_err(|source| Error::BackupUnwritable {
        dir: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| Error::BackupUnwritable {
            dir: dir.to_path_buf(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            eprintln!("waiting for another mcpatch holding {}", path.display());
            file.lock().map_err(|e| {
                Error::io(
                    "lock",
                    &path,
                    e,
                    "remove the lock file only if no mcpatch is running",
                )
            })?;
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(Error::io(
                "lock",
                &path,
                e,
                "remove the lock file only if no mcpatch is running",
            ))
        }
    }
    Ok(WriteLock { _file: file, path })
}
