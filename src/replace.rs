//! Replaces a file atomically: a temp file in the same folder, fsync, rename
//! over the target, fsync the folder. The target gets a new inode, so a
//! hard-linked store copy is never written through.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::identity::{self, Identity};
use crate::kill_point;

/// Whether mcpatch runs as root (and so must not trust what others can write).
pub fn running_as_root() -> bool {
    #[cfg(unix)]
    // SAFETY: geteuid has no preconditions and no side effects.
    unsafe {
        libc::geteuid() == 0
    }
    #[cfg(not(unix))]
    false
}

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
            // Owner first: a chown clears setuid and setgid, so the mode goes on last.
            if let Some((uid, gid)) = owner {
                // Best effort: only root can give a file away, and then it should.
                let _ = std::os::unix::fs::fchown(temp.as_file(), Some(uid), Some(gid));
            }
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

    /// The identity the file will keep once renamed over the target.
    pub fn identity(&self) -> Result<Identity> {
        identity::of_file(self.temp.as_file(), self.temp.path())
    }

    /// Rename over the target and sync the folder.
    pub fn persist(self) -> Result<()> {
        let target = self.target;
        let from = self.temp.path().to_path_buf();
        self.temp.persist(&target).map_err(|e| {
            Error::io(
                "replace",
                &target,
                e.error,
                "check the folder's permissions",
            )
        })?;
        kill_point::note(format_args!(
            "renamed {} -> {}",
            from.display(),
            target.display()
        ));
        sync_dir(target.parent().unwrap_or(Path::new(".")))
    }
}

/// The extension a temp copy of `target` takes so node loads it as the same
/// kind of module: `.cjs` and `.mjs` kept (a `.cjs` build in a package of
/// `"type": "module"` is CommonJS only by its name), else `.js`.
fn module_suffix(target: &Path) -> &'static str {
    match target.extension().and_then(|e| e.to_str()) {
        Some("cjs") => ".cjs",
        Some("mjs") => ".mjs",
        _ => ".js",
    }
}

/// An empty `<prefix>*.js` temp file in `target`'s folder (`.cjs` or `.mjs`
/// when the target has that name, so node loads it as the same kind of module
/// of the install), removed on drop.
pub fn temp_beside(target: &Path, prefix: &str) -> Result<tempfile::NamedTempFile> {
    let dir = target.parent().unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(prefix)
        .suffix(module_suffix(target))
        .tempfile_in(dir)
        .map_err(|source| Error::ReadOnlyInstall {
            dir: dir.to_path_buf(),
            help: not_writable_help(&source, running_as_root()),
            source,
        })
}

/// The fix for a folder mcpatch cannot write: sudo helps only a user who is
/// not root; root is stopped by an immutable attribute or a read-only mount.
fn not_writable_help(e: &std::io::Error, root: bool) -> &'static str {
    if e.raw_os_error() == Some(libc::EROFS) {
        "the folder is on a read-only file system: remount it read-write, or use --path on a writable copy of the install"
    } else if root {
        "mcpatch runs as root already: the folder (or the file) may be immutable (see `lsattr -d` on it; `chattr -i` lifts that) or a mount may refuse writes; or use --path on a writable copy of the install"
    } else {
        "run with sudo, or use --path on a writable copy of the install"
    }
}

/// Remove temp files a killed mcpatch left beside `target`. Call only while
/// holding the install's lock ([`crate::lock::lock_install`]): every live
/// writer holds it while its temp file exists, so what is left is dead.
pub fn remove_stale_temps(target: &Path) {
    let dir = target.parent().unwrap_or(Path::new("."));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".mcpatch-staged-")
                && [".js", ".cjs", ".mjs"].iter().any(|x| name.ends_with(x))
            {
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
        kill_point::note(format_args!("synced {}", dir.display()));
    }
    Ok(())
}

/// Create `dir` and its missing parents with `mode` (not widened by the
/// umask's absence), syncing each new folder's parent so the new entry
/// survives a power cut. Each I/O error is returned as is, for the caller to name.
pub fn create_dirs_durably(dir: &Path, mode: u32) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err())
        .collect();
    for d in missing.into_iter().rev() {
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        match builder.create(d) {
            Ok(()) => {}
            // Another run made it meanwhile: fine, it is there.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
        kill_point::note(format_args!("created {}", d.display()));
        let parent = d
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::File::open(parent).and_then(|f| f.sync_all())?;
        kill_point::note(format_args!("synced {}", parent.display()));
    }
    Ok(())
}

/// A file's owner: uid and gid.
pub type Owner = (u32, u32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_user_who_is_not_root_is_told_to_use_sudo() {
        let denied = std::io::Error::from_raw_os_error(libc::EPERM);
        assert!(not_writable_help(&denied, false).starts_with("run with sudo"));
        assert!(not_writable_help(&denied, true).starts_with("mcpatch runs as root already"));
        let read_only = std::io::Error::from_raw_os_error(libc::EROFS);
        assert!(not_writable_help(&read_only, true)
            .starts_with("the folder is on a read-only file system"));
    }

    #[test]
    fn a_path_through_dot_dot_of_a_folder_it_makes_is_created() {
        // `new/..` does not exist when the missing folders are listed, and
        // exists once `new` is made: creating it finds it there, which is fine.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new").join("..").join("backups");
        create_dirs_durably(&dir, 0o755).unwrap();
        assert!(tmp.path().join("new").is_dir());
        assert!(tmp.path().join("backups").is_dir());
    }

    #[test]
    fn a_temp_copy_keeps_a_cjs_or_mjs_name_and_is_js_otherwise() {
        assert_eq!(module_suffix(Path::new("/p/dist/cjs/index.cjs")), ".cjs");
        assert_eq!(module_suffix(Path::new("/p/dist/esm/index.mjs")), ".mjs");
        assert_eq!(module_suffix(Path::new("/p/dist/index.js")), ".js");
        assert_eq!(module_suffix(Path::new("/p/bin/tool")), ".js");
        let tmp = tempfile::tempdir().unwrap();
        let temp = temp_beside(&tmp.path().join("index.cjs"), ".mcpatch-staged-").unwrap();
        let name = temp
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(".mcpatch-staged-") && name.ends_with(".cjs"),
            "{name}"
        );
        assert_eq!(
            temp_path_of(tmp.path()),
            tmp.path().join(".mcpatch-staged-*.js")
        );
    }

    #[test]
    fn a_pending_file_takes_only_the_permission_bits_of_its_mode_and_replaces_the_target() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("index.js");
        std::fs::write(&target, "old").unwrap();
        // A mode as stat gives it: the file type bits come along.
        let pending = PendingFile::write_beside(&target, b"new", Some(0o100640), None).unwrap();
        let mode = std::fs::metadata(pending.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640);
        pending.persist().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o640);
    }

    #[test]
    fn only_temp_files_a_killed_run_left_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        for name in [
            ".mcpatch-staged-a1.js",
            ".mcpatch-staged-b2.cjs",
            ".mcpatch-staged-c3.mjs",
            ".mcpatch-staged-d4.txt",
            "index.js",
            "x.mcpatch-staged-e5.js",
        ] {
            std::fs::write(tmp.path().join(name), "").unwrap();
        }
        remove_stale_temps(&tmp.path().join("index.js"));
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".mcpatch-staged-d4.txt",
                "index.js",
                "x.mcpatch-staged-e5.js"
            ]
        );
    }

    #[test]
    fn a_folder_that_cannot_be_synced_or_made_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("missing");
        assert!(sync_dir(&missing).is_err());
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        let under_a_file = file.join("backups");
        assert!(create_dirs_durably(&under_a_file, 0o700).is_err());
        let made = tmp.path().join("a").join("b");
        create_dirs_durably(&made, 0o700).unwrap();
        assert!(made.is_dir());
        // Made already: nothing to do.
        create_dirs_durably(&made, 0o700).unwrap();
    }

    #[test]
    fn root_is_told_by_the_effective_user_id() {
        let id = std::process::Command::new("id").arg("-u").output().unwrap();
        let uid = String::from_utf8_lossy(&id.stdout).trim().to_string();
        assert_eq!(running_as_root(), uid == "0");
    }
}
