//! One change to one installed file (apply's patch, revert's restore) that
//! undoes itself on drop unless committed: the file that was there goes back
//! if mcpatch's replacement is still in place, and a backup made for the
//! change is removed unless it is the only copy left of the original. A file
//! that anything else changed meanwhile is never overwritten: its identity is
//! checked just before the rename and again before any rollback.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::identity::{self, Identity, Snapshot};
use crate::kill_point;
use crate::replace::PendingFile;

/// What a failed apply or revert should tell the user to do about a file that
/// changed under it.
pub const APPLY_CHANGED_HELP: &str = "nothing of this run was kept and the backup made for it was removed; run `mcpatch status` to see what the file is now, then apply again if it is affected";
pub const REVERT_CHANGED_HELP: &str =
    "run `mcpatch status` to see what the file is now, then revert again if it is still patched";

pub struct Transaction {
    target: PathBuf,
    before: Snapshot,
    /// What the rollback did, for the re-hash error ("the original was restored").
    undone: &'static str,
    /// What to tell the user when the file changed under the transaction.
    changed_help: &'static str,
    backup_dir: Option<PathBuf>,
    /// The identity of mcpatch's replacement once renamed into place.
    placed: Option<Identity>,
    committed: bool,
}

impl Transaction {
    /// Begin changing `target`, which was `before` when read (under the install's lock).
    pub fn begin(
        target: &Path,
        before: Snapshot,
        undone: &'static str,
        changed_help: &'static str,
    ) -> Self {
        Transaction {
            target: target.to_path_buf(),
            before,
            undone,
            changed_help,
            backup_dir: None,
            placed: None,
            committed: false,
        }
    }

    /// The file as it was read.
    pub fn before(&self) -> &Snapshot {
        &self.before
    }

    /// A backup made for this change: removed if the change does not stick.
    pub fn set_backup(&mut self, dir: PathBuf) {
        self.backup_dir = Some(dir);
    }

    /// Write `bytes` beside the target with the file's own mode and owner, exactly.
    pub fn stage(&self, bytes: &[u8]) -> Result<PendingFile> {
        PendingFile::write_beside(
            &self.target,
            bytes,
            Some(self.before.mode),
            Some(self.before.owner),
        )
    }

    /// Rename the staged file over the target, unless the target changed since
    /// it was read: then leave it alone and fail saying what changed.
    pub fn replace(&mut self, pending: PendingFile) -> Result<()> {
        if let Some(what) = identity::changes(&self.target, &self.before)? {
            return Err(Error::FileChanged {
                path: self.target.clone(),
                what,
                help: self.changed_help,
            });
        }
        let placed = pending.identity()?;
        pending.persist()?;
        self.placed = Some(placed);
        kill_point::reached("renamed")?;
        Ok(())
    }

    /// Re-read the target after the rename: it must be mcpatch's file with the
    /// expected sha256. Returns the sha256 found.
    pub fn confirm(&self, expected: &str) -> Result<String> {
        let now = identity::read(&self.target)?;
        if Some(now.identity) != self.placed {
            return Err(Error::FileChanged {
                path: self.target.clone(),
                what: "another program replaced it right after mcpatch's rename".into(),
                help: self.changed_help,
            });
        }
        if now.sha256 != expected {
            return Err(Error::HashMismatch {
                path: self.target.clone(),
                expected: expected.to_string(),
                found: now.sha256,
                undone: self.undone,
            });
        }
        Ok(now.sha256)
    }

    /// Keep the change.
    pub fn commit(mut self) {
        self.committed = true;
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let mut backup_needed = false;
        if let Some(placed) = self.placed {
            let ours = identity::of_path(&self.target).ok() == Some(placed);
            if ours {
                let restored = self
                    .stage(&self.before.bytes)
                    .and_then(PendingFile::persist);
                if let Err(e) = restored {
                    crate::errln_fit!(
                        "error: could not roll back {}: {}",
                        crate::output::path(&self.target),
                        crate::output::clean_lines(&e.to_string())
                    );
                    backup_needed = true;
                }
            }
        }
        if let (Some(dir), false) = (&self.backup_dir, backup_needed) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with `file` holding "original", and a backup folder beside it.
    struct Scene {
        _dir: tempfile::TempDir,
        file: PathBuf,
        backup: PathBuf,
    }

    fn scene() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("index.js");
        std::fs::write(&file, "original").unwrap();
        let backup = dir.path().join("backup");
        std::fs::create_dir(&backup).unwrap();
        Scene {
            file,
            backup,
            _dir: dir,
        }
    }

    /// A transaction on `s.file` as read now, its backup `s.backup`, the new bytes renamed into place.
    fn replaced(s: &Scene, bytes: &[u8]) -> Transaction {
        let mut t = Transaction::begin(
            &s.file,
            identity::read(&s.file).unwrap(),
            "the original was restored",
            APPLY_CHANGED_HELP,
        );
        t.set_backup(s.backup.clone());
        let pending = t.stage(bytes).unwrap();
        t.replace(pending).unwrap();
        t
    }

    /// Put other bytes at `path` as another program would: a new file renamed over it.
    fn replaced_by_another_program(path: &Path, bytes: &str) {
        let other = path.with_extension("other");
        std::fs::write(&other, bytes).unwrap();
        std::fs::rename(&other, path).unwrap();
    }

    #[test]
    fn a_committed_change_keeps_the_new_file_and_its_backup() {
        let s = scene();
        let t = replaced(&s, b"patched");
        assert_eq!(std::fs::read(&s.file).unwrap(), b"patched");
        let sha = crate::identity::sha256_hex(b"patched");
        assert_eq!(t.confirm(&sha).unwrap(), sha);
        t.commit();
        assert_eq!(std::fs::read(&s.file).unwrap(), b"patched");
        assert!(s.backup.is_dir());
    }

    #[test]
    fn a_change_dropped_uncommitted_puts_the_original_back_and_removes_its_backup() {
        let s = scene();
        drop(replaced(&s, b"patched"));
        assert_eq!(std::fs::read(&s.file).unwrap(), b"original");
        assert!(!s.backup.exists());
    }

    #[test]
    fn a_file_changed_before_the_rename_is_left_as_it_is() {
        let s = scene();
        let mut t = Transaction::begin(
            &s.file,
            identity::read(&s.file).unwrap(),
            "the original was restored",
            APPLY_CHANGED_HELP,
        );
        let pending = t.stage(b"patched").unwrap();
        replaced_by_another_program(&s.file, "theirs");
        let e = t.replace(pending).unwrap_err();
        assert!(matches!(e, Error::FileChanged { .. }), "{e}");
        drop(t);
        assert_eq!(std::fs::read_to_string(&s.file).unwrap(), "theirs");
    }

    #[test]
    fn confirm_names_a_wrong_hash_and_a_file_replaced_after_the_rename() {
        let s = scene();
        let t = replaced(&s, b"patched");
        let found = crate::identity::sha256_hex(b"patched");
        match t.confirm("0000").unwrap_err() {
            Error::HashMismatch {
                expected, found: f, ..
            } => assert_eq!((expected.as_str(), f), ("0000", found.clone())),
            e => panic!("{e}"),
        }
        replaced_by_another_program(&s.file, "theirs");
        let e = t.confirm(&found).unwrap_err();
        assert!(matches!(e, Error::FileChanged { .. }), "{e}");
        // The rollback leaves another program's file alone.
        drop(t);
        assert_eq!(std::fs::read_to_string(&s.file).unwrap(), "theirs");
    }
}
