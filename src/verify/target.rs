//! The file a verify run loads: the install's own, or (`verify --backup`, the
//! gate of `apply`) bytes written beside the install's file as a locked
//! `.mcpatch-verify-*` copy, so its imports resolve from the install; and the
//! checks of the backups folder made before anything runs.

use std::io::Write;
use std::path::PathBuf;

use crate::backup;
use crate::classify::{self, Install, State};
use crate::environment::Environment;
use crate::error::{Error, Result};
use crate::registry::PatchSpec;

/// Before node is even looked for: the backups folder must be trusted (as
/// apply and revert check it: run as root, root's and writable by no one
/// else), and some install must have the backup asked for; else the error
/// names the install, the backups folder and the fix.
pub(crate) fn check_backups_first(
    spec: &PatchSpec,
    installs: &[Install],
    wanted: &str,
    env: &Environment,
) -> Result<()> {
    let root = backup::root(&env.state_home()?, spec);
    backup::check_trusted(&root)?;
    let backups = backup::list(&root)?;
    let checked: Vec<&Install> = installs
        .iter()
        .filter(|i| i.state != State::Unsupported)
        .collect();
    let named = (!wanted.is_empty()).then_some(wanted);
    match checked.first() {
        Some(first)
            if checked
                .iter()
                .all(|i| backup::pick(&backups, &i.file, named).is_none()) =>
        {
            Err(no_backup(&first.file, named, &root))
        }
        _ => Ok(()),
    }
}

/// No backup of `file` under `root` (or none named `named`).
pub(crate) fn no_backup(
    file: &std::path::Path,
    named: Option<&str>,
    root: &std::path::Path,
) -> Error {
    match named {
        Some(id) => Error::BackupNotFound {
            id: id.to_string(),
            dir: root.to_path_buf(),
        },
        None => Error::NoBackupToVerify {
            file: file.to_path_buf(),
            dir: root.to_path_buf(),
        },
    }
}

/// The file a verify run loads: the install's own, or a backup's saved file
/// copied next to it (so its imports resolve from the install) and removed afterwards.
pub(crate) struct Target {
    /// What node loads.
    pub(crate) load: PathBuf,
    /// What the report names: the install's file, or the backup's saved file.
    pub(crate) file: PathBuf,
    pub(crate) backup: Option<String>,
    pub(crate) sha256: String,
    pub(crate) state: State,
    /// The copy, locked while this run lives (removed on drop).
    pub(crate) _copy: Option<tempfile::NamedTempFile>,
}

/// Name prefix of the copy of a backup that `verify --backup` loads from inside an install.
pub(crate) const COPY_PREFIX: &str = ".mcpatch-verify-";

/// Remove copies that earlier `verify --backup` runs left behind when they were killed:
/// only those no live run holds (a run keeps its copy locked), never a link or non-file.
pub(crate) fn remove_dead_copies(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with(COPY_PREFIX)
            && [".js", ".cjs", ".mjs"].iter().any(|x| name.ends_with(x)))
        {
            continue;
        }
        let path = entry.path();
        let mut open = std::fs::OpenOptions::new();
        open.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            open.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        let Ok(file) = open.open(&path) else { continue };
        let dead = file.metadata().is_ok_and(|m| m.is_file()) && file.try_lock().is_ok();
        if dead {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// `bytes` written beside `file` as a locked `.mcpatch-verify-*.js`, so node
/// loads it with the install's imports; removed when dropped.
pub(crate) fn copy_beside(file: &std::path::Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile> {
    if let Some(dir) = file.parent() {
        remove_dead_copies(dir);
    }
    let mut temp = crate::replace::temp_beside(file, COPY_PREFIX)?;
    temp.as_file().try_lock().map_err(|e| {
        Error::io(
            "lock",
            temp.path(),
            std::io::Error::other(e.to_string()),
            "check that the install's folder is on a local disk",
        )
    })?;
    temp.write_all(bytes)
        .map_err(|e| Error::io("write", temp.path(), e, "check free space on that disk"))?;
    Ok(temp)
}

impl Target {
    pub(crate) fn for_install(
        spec: &PatchSpec,
        install: &Install,
        backup_id: Option<&str>,
        env: &Environment,
    ) -> Result<Target> {
        let Some(wanted) = backup_id else {
            return Ok(Target {
                load: install.file.clone(),
                file: install.file.clone(),
                backup: None,
                sha256: install.sha256.clone(),
                state: install.state,
                _copy: None,
            });
        };
        let root = backup::root(&env.state_home()?, spec);
        // Trusted as apply and revert trust it, before node runs what it holds.
        backup::check_trusted(&root)?;
        let backups = backup::list(&root)?;
        let named = (!wanted.is_empty()).then_some(wanted);
        let chosen = backup::pick(&backups, &install.file, named)
            .ok_or_else(|| no_backup(&install.file, named, &root))?;
        let bytes = backup::read_checked(chosen, spec)?;
        let (state, _, _) = classify::classify_bytes(spec, &bytes, &chosen.manifest.sha256_before);
        let temp = copy_beside(&install.file, &bytes)?;
        Ok(Target {
            load: temp.path().to_path_buf(),
            file: chosen.dir.join(backup::SAVED_FILE),
            backup: Some(chosen.id.clone()),
            sha256: chosen.manifest.sha256_before.clone(),
            state,
            _copy: Some(temp),
        })
    }

    /// Whether what is loaded carries the current patch revision, so recovery must be seamless.
    pub(crate) fn is_current_patch(&self) -> bool {
        self.state == State::Patched
    }
}
