//! Replaces a file atomically: a temp file in the same folder, fsync, rename
//! over the target, fsync the folder. The target gets a new inode, so a
//! hard-linked store copy is never written through.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A fully written, synced file next to its target, not yet in place.
/// Dropped without [`PendingFile::persist`], it is removed.
pub struct PendingFile {
    temp: tempfile::NamedTempFile,
    target: PathBuf,
}

impl PendingFile {
    /// Write `bytes` to a temp file beside `target` with the given mode and owner.
    pub fn write_beside(
        target: &Path,
        bytes: &[u8],
        mode: Option<u32>,
        owner: Option<(u32, u32)>,
    ) -> Result<Self> {
        let dir = target.parent().unwrap_or(Path::new("."));
        let mut temp = temp_beside(target, ".mcpatch-staged-")?;
        let io = |e| {
            Error::io(
                "write",
                temp_path_of(dir),
                e,
                "check free space on that disk",
            )
        };
        temp.write_all(bytes).map_err(io)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if let Some(mode) = mode {
                temp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
                    .map_err(|e| {
                        Error::io(
                            "set the mode of",
                            temp.path(),
                            e,
                            "check the folder's permissions",
                        )
                    })?;
            }
            if let Some((uid, gid)) = owner {
                // Best effort: only root can give a file away, and then it should.
                let _ = std::os::unix::fs::fchown(temp.as_file(), Some(uid), Some(gid));
            }
        }
        temp.as_file()
            .sync_all()
            .map_err(|e| Error::io("sync", temp.path(), e, "check the disk"))?;
        Ok(PendingFile {
            temp,
            target: target.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        self.temp.path()
    }

    /// Rename over the target and sync the folder.
    pub fn persist(self) -> Result<()> {
        let target = self.target;
        self.temp.persist(&target).map_err(|e| {
            Error::io(
                "replace",
                &target,
                e.error,
                "check the folder's permissions",
            )
        })?;
        sync_dir(target.parent().unwrap_or(Path::new(".")))
    }
}

/// An empty `<prefix>*.js` temp file in `target`'s folder (a `.js` name, so
/// node loads it as a module of the install), removed on drop.
pub fn temp_beside(target: &Path, prefix: &str) -> Result<tempfile::NamedTempFile> {
    let dir = target.parent().unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(prefix)
        .suffix(".js")
        .tempfile_in(dir)
        .map_err(|source| Error::ReadOnlyInstall {
            dir: dir.to_path_buf(),
            source,
        })
}

/// Remove temp files a killed mcpatch left beside `target` (call only under the write lock).
pub fn remove_stale_temps(target: &Path) {
    let dir = target.parent().unwrap_or(Path::new("."));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".mcpatch-staged-") && name.ends_with(".js") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn temp_path_of(dir: &Path) -> PathBuf {
    dir.join(".mcpatch-staged-*.js")
}

/// fsync a folder so a rename in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let f = std::fs::File::open(dir)
            .map_err(|e| Error::io("open", dir, e, "check the folder's permissions"))?;
        f.sync_all()
            .map_err(|e| Error::io("sync", dir, e, "check the disk"))?;
    }
    Ok(())
}

/// A file's owner: uid and gid.
pub type Owner = (u32, u32);

/// Mode and owner of a file, to carry over to its replacement.
pub fn mode_and_owner(path: &Path) -> Result<(Option<u32>, Option<Owner>)> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::io("read", path, e, "check that the file exists"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok((Some(meta.mode()), Some((meta.uid(), meta.gid()))))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok((None, None))
    }
}
