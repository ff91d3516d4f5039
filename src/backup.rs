//! Backups of originals under `$DSH_HOME/backups/<patch-id>/<UTC time>-<short sha>/`:
//! the file byte-for-byte, and a manifest saying where it came from and its
//! mode. A backup appears whole (written aside, synced, then renamed) or not
//! at all. Run as root, mcpatch trusts a backups folder only when root owns it
//! and no one else can write it; a backup that cannot be read is listed as
//! damaged and refused, never skipped silently.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::identity::{self, sha256_hex, MAX_FILE_BYTES, MAX_METADATA_BYTES};
use crate::kill_point;
use crate::path_json;
use crate::registry::{PatchSpec, RevisionKind};
use crate::replace;

/// The file name of the saved original inside a backup folder.
pub const SAVED_FILE: &str = "index.js";
pub const MANIFEST: &str = "manifest.json";

/// `manifest.json` of one backup.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BackupManifest {
    pub id: String,
    pub patch_id: String,
    /// The file that was patched.
    #[serde(
        serialize_with = "path_json::serialize",
        deserialize_with = "path_json::deserialize"
    )]
    pub original_path: PathBuf,
    #[serde(
        serialize_with = "path_json::serialize",
        deserialize_with = "path_json::deserialize"
    )]
    pub package_dir: PathBuf,
    pub version: Option<String>,
    pub sha256_before: String,
    pub sha256_after: String,
    /// The file's sha256 when it was backed up, when that was not the original
    /// (an earlier patch revision, which `apply` took out to save the original).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_sha256: Option<String>,
    /// The file's permission bits when it was backed up, written as an octal
    /// string ("0644"); manifests of earlier mcpatch versions hold the whole
    /// `st_mode` as a number, which still reads. Never applied to a file.
    #[serde(default, with = "octal_mode")]
    pub mode: Option<u32>,
    pub mcpatch_version: String,
    /// RFC 3339 UTC.
    pub created: String,
}

/// A manifest's `mode`: written as four octal digits of the permission bits
/// ("0644"), read from that or from a number (the whole `st_mode`, as earlier
/// mcpatch versions wrote it).
mod octal_mode {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(mode: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
        match mode {
            Some(m) => s.serialize_str(&format!("{:04o}", m & 0o7777)),
            None => s.serialize_none(),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Number(u32),
        Octal(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        match Option::<Written>::deserialize(d)? {
            None => Ok(None),
            Some(Written::Number(n)) => Ok(Some(n)),
            Some(Written::Octal(text)) => {
                let digits = text.strip_prefix("0o").unwrap_or(&text);
                let octal = !digits.is_empty()
                    && digits.len() <= 7
                    && digits.bytes().all(|b| (b'0'..=b'7').contains(&b));
                match u32::from_str_radix(digits, 8) {
                    Ok(m) if octal => Ok(Some(m)),
                    _ => Err(serde::de::Error::custom(format!(
                        "mode {text:?} is not an octal file mode such as \"0644\""
                    ))),
                }
            }
        }
    }
}

/// One backup on disk.
#[derive(Debug, Clone, Serialize)]
pub struct Backup {
    pub id: String,
    #[serde(serialize_with = "path_json::serialize")]
    pub dir: PathBuf,
    pub manifest: BackupManifest,
}

/// A backup folder whose manifest cannot be read or understood.
#[derive(Debug, Clone, Serialize)]
pub struct DamagedBackup {
    pub id: String,
    #[serde(serialize_with = "path_json::serialize")]
    pub dir: PathBuf,
    /// What is wrong with it.
    pub damaged: String,
}

/// Every backup folder under a root: the usable ones and the damaged ones, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub backups: Vec<Backup>,
    pub damaged: Vec<DamagedBackup>,
}

/// `$DSH_HOME/backups/<patch-id>`.
pub fn root(dsh_home: &Path, spec: &PatchSpec) -> PathBuf {
    dsh_home.join("backups").join(&spec.id)
}

/// Mode of the folders mcpatch creates for backups.
const DIR_MODE: u32 = 0o755;

/// Create the backups folder (and its missing parents, durably) if needed,
/// and check it can be trusted: see [`check_trusted`].
pub fn prepare_root(root: &Path) -> Result<()> {
    replace::create_dirs_durably(root, DIR_MODE).map_err(|source| Error::BackupUnwritable {
        dir: root.to_path_buf(),
        source,
    })?;
    check_trusted(root)
}

/// For a dry run: check the backups folder as a real run would, creating
/// nothing. It must be trusted if it exists, and it or the folder it would be
/// created in must be writable.
pub fn check_root_for_dry_run(root: &Path) -> Result<()> {
    let existing = root
        .ancestors()
        .find(|d| std::fs::symlink_metadata(d).is_ok())
        .unwrap_or(Path::new("/"));
    if existing == root {
        check_trusted(root)?;
    }
    let unwritable = |source| Error::BackupUnwritable {
        dir: root.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(existing).map_err(unwritable)?;
    if !meta.is_dir() {
        return Err(unwritable(std::io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(existing.as_os_str().as_bytes())
            .map_err(|e| unwritable(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
        // SAFETY: access(2) reads a NUL-terminated path we own; no memory is written.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
            return Err(unwritable(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Run as root, refuse a backups folder (`backups/` and `backups/<patch-id>/`)
/// that is a symbolic link, that root does not own, or that its group or
/// others can write: whoever could write it could choose what root restores.
pub fn check_trusted(root: &Path) -> Result<()> {
    if !replace::running_as_root() {
        return Ok(());
    }
    for dir in [root.parent().unwrap_or(root), root] {
        check_trusted_entry(dir, true)?;
    }
    Ok(())
}

/// Run as root, refuse one backup entry (a folder or a file in it) that is
/// not what it should be, that root does not own, or that others can write.
fn check_trusted_entry(path: &Path, folder: bool) -> Result<()> {
    if !replace::running_as_root() {
        return Ok(());
    }
    let untrusted = |why: String| Error::UntrustedBackups {
        path: path.to_path_buf(),
        why,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        // Missing: nothing to trust; reading it reports what is wrong.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(untrusted(format!("it cannot be read ({e})"))),
    };
    let right_kind = if folder {
        meta.is_dir()
    } else {
        meta.is_file()
    };
    if !right_kind {
        return Err(untrusted(format!(
            "it is {}, not a {}",
            identity::kind_of(&meta),
            if folder { "folder" } else { "regular file" }
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != 0 {
            return Err(untrusted(format!(
                "it is owned by uid {}, not root",
                meta.uid()
            )));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(untrusted(format!(
                "its group or others can write it (mode {:04o})",
                meta.mode() & 0o7777
            )));
        }
    }
    Ok(())
}

/// `base`, else `base-2`, `base-3`, …: the first that names nothing in
/// `root` (two backups of one original in the same millisecond).
fn free_id(root: &Path, base: &str) -> String {
    let mut id = base.to_string();
    let mut n = 1;
    while root.join(&id).exists() {
        n += 1;
        id = format!("{base}-{n}");
    }
    id
}

/// What to save.
pub struct NewBackup<'a> {
    pub file: &'a Path,
    pub package_dir: &'a Path,
    pub version: Option<String>,
    pub bytes: &'a [u8],
    pub sha256_before: &'a str,
    pub sha256_after: &'a str,
    /// The file's sha256 when it differs from `sha256_before` (an upgrade).
    pub replaced_sha256: Option<&'a str>,
    pub mode: Option<u32>,
}

/// Write a backup whole: into a hidden folder, each file and the folder
/// synced, then renamed into place and the root synced, so after a power cut
/// the backup is whole or absent. Call under the backups folder's lock, after
/// [`prepare_root`].
pub fn create(root: &Path, spec: &PatchSpec, new: NewBackup<'_>) -> Result<Backup> {
    let unwritable = |source| Error::BackupUnwritable {
        dir: root.to_path_buf(),
        source,
    };
    prepare_root(root)?;
    remove_incomplete(root);
    let now = SystemTime::now();
    let stamp = humantime::format_rfc3339_millis(now).to_string();
    let compact: String = stamp
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    let id = free_id(root, &format!("{}-{}", compact, &new.sha256_before[..8]));
    let manifest = BackupManifest {
        id: id.clone(),
        patch_id: spec.id.clone(),
        original_path: new.file.to_path_buf(),
        package_dir: new.package_dir.to_path_buf(),
        version: new.version,
        sha256_before: new.sha256_before.to_string(),
        sha256_after: new.sha256_after.to_string(),
        replaced_sha256: new.replaced_sha256.map(str::to_string),
        mode: new.mode,
        mcpatch_version: env!("CARGO_PKG_VERSION").to_string(),
        created: humantime::format_rfc3339_seconds(now).to_string(),
    };
    let mut aside = tempfile::Builder::new();
    aside.prefix(".incomplete-");
    // The backup folder's mode whatever the umask (never group or other write).
    #[cfg(unix)]
    aside.permissions(std::os::unix::fs::PermissionsExt::from_mode(DIR_MODE));
    let aside = aside.tempdir_in(root).map_err(unwritable)?;
    // The saved copy keeps the original's permission bits, never setuid,
    // setgid or write access for others (the manifest records the full mode).
    let saved_mode = new.mode.map(|m| m & 0o755).unwrap_or(0o644);
    let write = |name: &str, bytes: &[u8], mode: u32| -> Result<()> {
        let path = aside.path().join(name);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(mode);
        }
        let mut f = options.open(&path).map_err(unwritable)?;
        f.write_all(bytes).map_err(unwritable)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(unwritable)?;
        }
        f.sync_all().map_err(unwritable)?;
        Ok(())
    };
    write(SAVED_FILE, new.bytes, saved_mode)?;
    kill_point::reached("backup-writing")?;
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| unwritable(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    write(MANIFEST, text.as_bytes(), 0o644)?;
    replace::sync_dir(aside.path())?;
    let dir = root.join(&id);
    let aside = aside.keep();
    std::fs::rename(&aside, &dir).map_err(|source| {
        let _ = std::fs::remove_dir_all(&aside);
        unwritable(source)
    })?;
    kill_point::note(format_args!(
        "renamed {} -> {}",
        aside.display(),
        dir.display()
    ));
    replace::sync_dir(root)?;
    Ok(Backup { id, dir, manifest })
}

/// A backup of `new`: the file's newest backup when it already holds the very
/// same original (same `sha256_before` and `sha256_after`, same file) and is
/// whole, else a new one from [`create`]. So apply, revert, apply keeps one
/// copy of each distinct original of an install instead of a pile of them.
/// Only the newest is reused (never an older one made newest again), and not
/// when a damaged backup is newer (revert would stop at that one). Returns the
/// backup and whether it was reused (then it is not this run's to remove).
/// Call under the backups folder's lock.
pub fn save(root: &Path, spec: &PatchSpec, new: NewBackup<'_>) -> Result<(Backup, bool)> {
    prepare_root(root)?;
    let Listing { backups, damaged } = list_all(root)?;
    if let Some(newest) = pick(&backups, new.file, None) {
        let same = newest.manifest.sha256_before == new.sha256_before
            && newest.manifest.sha256_after == new.sha256_after;
        let damaged_newer = damaged.iter().any(|d| d.id > newest.id);
        if same && !damaged_newer && read_checked(newest, spec).is_ok() {
            return Ok((newest.clone(), true));
        }
    }
    create(root, spec, new).map(|b| (b, false))
}

/// What is wrong with a listed backup's saved file, as `revert` would refuse
/// it (missing, unreadable, not the sha256 its manifest names, a patched
/// revision, or, run as root, not root's alone), else None. Reads only the
/// saved file, which is small.
pub fn saved_file_damage(backup: &Backup, spec: &PatchSpec) -> Option<String> {
    match read_checked(backup, spec) {
        Ok(_) => None,
        Err(Error::BackupDamaged { detail, .. }) => Some(detail),
        Err(e) => Some(first_line(&e)),
    }
}

/// The newest backup of `file` under `root` when it is whole and holds a
/// known original: what `mcpatch revert` would restore. None when there is
/// none, it is damaged, a damaged backup is newer, or it holds no known original.
pub fn original_of(root: &Path, spec: &PatchSpec, file: &Path) -> Option<Backup> {
    let Listing { backups, damaged } = list_all(root).ok()?;
    let newest = pick(&backups, file, None)?;
    if damaged.iter().any(|d| d.id > newest.id) {
        return None;
    }
    read_checked(newest, spec).ok()?;
    let kind = spec
        .revision(&newest.manifest.sha256_before)
        .map(|r| r.kind);
    (kind == Some(RevisionKind::Original)).then(|| newest.clone())
}

/// A patch that does not apply to `file`, said again with the way back when
/// a backup under `root` holds its original (a patched file edited by hand):
/// `mcpatch revert --yes`, not a reinstall. Any other error is left as it is.
pub fn point_to_original(e: Error, root: &Path, spec: &PatchSpec, file: &Path) -> Error {
    match e {
        Error::PatchDoesNotApply {
            path,
            detail,
            reinstall,
        } => match original_of(root, spec, file) {
            Some(b) => Error::PatchDoesNotApplyBackupHolds {
                path,
                detail,
                id: b.id,
            },
            None => Error::PatchDoesNotApply {
                path,
                detail,
                reinstall,
            },
        },
        e => e,
    }
}

/// Remove half-written backups a killed mcpatch left (call only under the
/// backups folder's lock: a live writer holds it while its backup is aside).
fn remove_incomplete(root: &Path) {
    if let Ok(entries) = std::fs::read_dir(root) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(".incomplete-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// All complete backups under `root` whose manifest reads, oldest first.
pub fn list(root: &Path) -> Result<Vec<Backup>> {
    Ok(list_all(root)?.backups)
}

/// Every backup folder under `root`, oldest first: the usable ones and, apart,
/// the damaged ones (manifest missing, unreadable or invalid).
pub fn list_all(root: &Path) -> Result<Listing> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Listing::default()),
        Err(e) => return Err(Error::io("read", root, e, "make it a readable folder (move aside anything else at that path), or set MCPATCH_HOME to another folder")),
    };
    let mut listing = Listing::default();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if name.starts_with('.') || !is_dir {
            continue;
        }
        match read_manifest(&entry.path()) {
            Ok(manifest) => listing.backups.push(Backup {
                id: name,
                dir: entry.path(),
                manifest,
            }),
            Err(damaged) => listing.damaged.push(DamagedBackup {
                id: name,
                dir: entry.path(),
                damaged,
            }),
        }
    }
    listing.backups.sort_by(|a, b| a.id.cmp(&b.id));
    listing.damaged.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(listing)
}

/// An error's first line (what went wrong, without its help).
fn first_line(e: &Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// A backup folder's manifest, or what is wrong with it.
fn read_manifest(dir: &Path) -> std::result::Result<BackupManifest, String> {
    let path = dir.join(MANIFEST);
    let (bytes, _) =
        identity::read_capped(&path, MAX_METADATA_BYTES, false).map_err(|e| first_line(&e))?;
    serde_json::from_slice::<BackupManifest>(&bytes)
        .map_err(|e| format!("{} is not a valid manifest: {e}", path.display()))
}

/// Read a backup's saved file and check it against its manifest (the caller
/// decides what to do when it is not a known original). Run as root, the
/// backup's folder and files must be root's and not writable by others.
pub fn read_checked(backup: &Backup, spec: &PatchSpec) -> Result<Vec<u8>> {
    let path = backup.dir.join(SAVED_FILE);
    check_trusted_entry(&backup.dir, true)?;
    check_trusted_entry(&backup.dir.join(MANIFEST), false)?;
    check_trusted_entry(&path, false)?;
    let (bytes, _) =
        identity::read_capped(&path, MAX_FILE_BYTES, false).map_err(|e| Error::BackupDamaged {
            id: backup.id.clone(),
            detail: first_line(&e),
        })?;
    let found = sha256_hex(&bytes);
    if found != backup.manifest.sha256_before {
        return Err(Error::BackupDamaged {
            id: backup.id.clone(),
            detail: format!(
                "{} has sha256 {found}, its manifest says {}",
                path.display(),
                backup.manifest.sha256_before
            ),
        });
    }
    if let Some(kind @ (RevisionKind::Patched | RevisionKind::Outdated)) =
        spec.revision(&found).map(|r| r.kind)
    {
        let what = if kind == RevisionKind::Patched {
            "the patched revision"
        } else {
            "an earlier patched revision"
        };
        return Err(Error::BackupDamaged {
            id: backup.id.clone(),
            detail: format!("{} is {what}, not an original", path.display()),
        });
    }
    Ok(bytes)
}

/// The newest backup of one file, or the one named.
pub fn pick<'a>(backups: &'a [Backup], file: &Path, id: Option<&str>) -> Option<&'a Backup> {
    let same = |b: &&Backup| same_path(&b.manifest.original_path, file);
    match id {
        Some(id) => backups.iter().find(|b| b.id == id).filter(same),
        None => backups.iter().rev().find(same),
    }
}

/// The file a revert leaves in the newest backup of the file it restores: the
/// patch made with that backup (or an earlier one) was taken out on purpose.
pub const REVERTED: &str = "reverted.json";

/// Record in `newest` (the file's newest backup) that the file was reverted
/// (restored from backup `restored`, or found to be the original already), so
/// `status` does not call the original a dropped patch. Written private,
/// never through a link.
pub fn mark_reverted(newest: &Backup, restored: &str) -> Result<()> {
    let path = newest.dir.join(REVERTED);
    let text = serde_json::json!({
        "reverted_at": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        "restored": restored,
    })
    .to_string();
    let unwritable = |source| Error::BackupUnwritable {
        dir: newest.dir.clone(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let mut f = options.open(&path).map_err(unwritable)?;
    f.write_all(text.as_bytes()).map_err(unwritable)?;
    f.sync_all().map_err(unwritable)
}

/// Take back [`mark_reverted`] when the revert it announced did not happen.
pub fn unmark_reverted(newest: &Backup) {
    let _ = std::fs::remove_file(newest.dir.join(REVERTED));
}

/// Whether the patch made with this backup was reverted since.
pub fn is_reverted(backup: &Backup) -> bool {
    std::fs::symlink_metadata(backup.dir.join(REVERTED)).is_ok()
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_copy_keeps_the_permission_bits_but_never_setuid_or_write_for_others() {
        use std::os::unix::fs::PermissionsExt;
        let (spec, home, root) = dsh_backups();
        prepare_root(&root).unwrap();
        let bytes = b"x\n";
        let before = sha256_hex(bytes);
        let saved_mode = |file: &str, mode: Option<u32>| {
            let file = home.path().join(file);
            let b = create(
                &root,
                &spec,
                NewBackup {
                    file: &file,
                    package_dir: home.path(),
                    version: None,
                    bytes,
                    sha256_before: &before,
                    sha256_after: &before,
                    replaced_sha256: None,
                    mode,
                },
            )
            .unwrap();
            let meta = std::fs::metadata(b.dir.join(SAVED_FILE)).unwrap();
            (meta.permissions().mode() & 0o7777, b.manifest.mode)
        };
        assert_eq!(saved_mode("a.js", Some(0o104777)), (0o755, Some(0o104777)));
        assert_eq!(saved_mode("b.js", Some(0o100640)), (0o640, Some(0o100640)));
        assert_eq!(saved_mode("c.js", None), (0o644, None));
    }

    #[test]
    fn a_saved_backup_is_listed_picked_read_back_reused_and_marked_reverted() {
        let (spec, home, root) = dsh_backups();
        let pkg = home.path().join("pkg");
        let file = pkg.join("index.js");
        let other = pkg.join("other.js");
        let bytes = b"an original\n".to_vec();
        let before = sha256_hex(&bytes);
        let after = sha256_hex(b"patched\n");
        fn new<'a>(
            file: &'a Path,
            pkg: &'a Path,
            bytes: &'a [u8],
            before: &'a str,
            after: &'a str,
        ) -> NewBackup<'a> {
            NewBackup {
                file,
                package_dir: pkg,
                version: Some("1.0.0".into()),
                bytes,
                sha256_before: before,
                sha256_after: after,
                replaced_sha256: None,
                mode: Some(0o100644),
            }
        }
        let new = |file| new(file, &pkg, &bytes, &before, &after);
        assert_eq!(list(&root).unwrap().len(), 0);
        let (first, reused) = save(&root, &spec, new(&file)).unwrap();
        assert!(!reused);
        // The same file patched the same way again keeps its one backup.
        let (again, reused) = save(&root, &spec, new(&file)).unwrap();
        assert_eq!((again.id.as_str(), reused), (first.id.as_str(), true));
        let (second, _) = save(&root, &spec, new(&other)).unwrap();
        let listed = list(&root).unwrap();
        let ids: Vec<&str> = listed.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, [first.id.as_str(), second.id.as_str()]);
        assert_eq!(pick(&listed, &file, None).map(|b| &b.id), Some(&first.id));
        assert_eq!(pick(&listed, &other, None).map(|b| &b.id), Some(&second.id));
        assert!(pick(&listed, &file, Some(&second.id)).is_none());
        assert!(pick(&listed, &pkg.join("none.js"), None).is_none());
        assert_eq!(read_checked(&first, &spec).unwrap(), bytes);
        assert_eq!(saved_file_damage(&first, &spec), None);
        // Not a known original of the target: nothing to point a user to.
        assert!(original_of(&root, &spec, &file).is_none());
        assert!(!is_reverted(&first));
        mark_reverted(&first, &first.id).unwrap();
        assert!(is_reverted(&first));
        unmark_reverted(&first);
        assert!(!is_reverted(&first));
        // A saved file that no longer hashes to its manifest is damaged, saying so.
        let saved = first.dir.join(SAVED_FILE);
        std::fs::write(&saved, b"changed\n").unwrap();
        assert_eq!(
            saved_file_damage(&first, &spec),
            Some(format!(
                "{} has sha256 {}, its manifest says {before}",
                saved.display(),
                sha256_hex(b"changed\n")
            ))
        );
        assert!(read_checked(&first, &spec).is_err());
        // A damaged backup is listed apart, and a new save does not reuse it.
        std::fs::write(second.dir.join(MANIFEST), b"not json").unwrap();
        let all = list_all(&root).unwrap();
        assert_eq!((all.backups.len(), all.damaged.len()), (1, 1));
        let (fresh, reused) = save(&root, &spec, new(&file)).unwrap();
        assert!(!reused);
        assert_ne!(fresh.id, first.id);
    }

    /// A backup of `file` holding `bytes`, patched to "patched\n".
    fn backup_of<'a>(
        file: &'a Path,
        pkg: &'a Path,
        bytes: &'a [u8],
        before: &'a str,
    ) -> NewBackup<'a> {
        NewBackup {
            file,
            package_dir: pkg,
            version: None,
            bytes,
            sha256_before: before,
            sha256_after: "0000000000000000000000000000000000000000000000000000000000000000",
            replaced_sha256: None,
            mode: None,
        }
    }

    #[test]
    fn a_backup_is_named_by_its_time_in_milliseconds_and_the_originals_hash_and_clears_half_written_ones(
    ) {
        let (spec, home, root) = dsh_backups();
        prepare_root(&root).unwrap();
        let left = root.join(".incomplete-abc");
        std::fs::create_dir(&left).unwrap();
        let bytes = b"an original\n";
        let before = sha256_hex(bytes);
        let file = home.path().join("index.js");
        let b = create(&root, &spec, backup_of(&file, home.path(), bytes, &before)).unwrap();
        // 20261203T091500.123Z-<the first 8 of the original's sha256>
        let (stamp, hash) = b.id.split_once('-').unwrap();
        assert_eq!(hash, &before[..8]);
        let shape: String = stamp
            .chars()
            .map(|c| if c.is_ascii_digit() { '9' } else { c })
            .collect();
        assert_eq!(shape, "99999999T999999.999Z", "{}", b.id);
        assert_eq!(b.dir, root.join(&b.id));
        assert!(!left.exists(), "a half-written backup was left behind");
    }

    #[test]
    fn only_backup_folders_are_listed_and_a_damaged_one_names_what_is_wrong() {
        let (spec, home, root) = dsh_backups();
        prepare_root(&root).unwrap();
        let bytes = b"an original\n";
        let before = sha256_hex(bytes);
        let file = home.path().join("index.js");
        let (kept, _) = save(&root, &spec, backup_of(&file, home.path(), bytes, &before)).unwrap();
        std::fs::create_dir(root.join(".incomplete-abc")).unwrap();
        std::fs::write(root.join("notes.txt"), b"").unwrap();
        // Older than the backup kept: a damaged backup made before it.
        let older = root.join("20000101T000000.000Z-deadbeef");
        std::fs::create_dir(&older).unwrap();
        let all = list_all(&root).unwrap();
        let ids: Vec<&str> = all.backups.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, [kept.id.as_str()]);
        let damaged: Vec<(&str, &str)> = all
            .damaged
            .iter()
            .map(|d| (d.id.as_str(), d.damaged.as_str()))
            .collect();
        let manifest = older.join(MANIFEST);
        assert_eq!(
            damaged,
            [(
                "20000101T000000.000Z-deadbeef",
                format!(
                    "cannot read {}: No such file or directory (os error 2)",
                    manifest.display()
                )
                .as_str()
            )]
        );
        // A damaged backup older than the newest does not stop its reuse.
        let (again, reused) =
            save(&root, &spec, backup_of(&file, home.path(), bytes, &before)).unwrap();
        assert_eq!((again.id.as_str(), reused), (kept.id.as_str(), true));
    }

    #[test]
    fn a_save_makes_a_new_backup_for_another_patch_or_when_a_damaged_backup_is_newer() {
        let (spec, home, root) = dsh_backups();
        let bytes = b"an original\n";
        let before = sha256_hex(bytes);
        let other_patch = sha256_hex(b"patched another way\n");
        let file = home.path().join("index.js");
        let (first, _) = save(&root, &spec, backup_of(&file, home.path(), bytes, &before)).unwrap();
        // The same original patched another way: a backup of its own.
        let another = || NewBackup {
            sha256_after: &other_patch,
            ..backup_of(&file, home.path(), bytes, &before)
        };
        let (second, reused) = save(&root, &spec, another()).unwrap();
        assert!(!reused);
        assert_ne!(second.id, first.id);
        let (again, reused) = save(&root, &spec, another()).unwrap();
        assert_eq!((again.id.as_str(), reused), (second.id.as_str(), true));
        // A damaged backup newer than the whole one: revert would stop there.
        std::fs::create_dir(root.join(format!("{}-9", second.id))).unwrap();
        let (third, reused) = save(&root, &spec, another()).unwrap();
        assert!(!reused);
        assert_ne!(third.id, second.id);
    }

    #[test]
    fn a_backup_holding_a_patched_revision_is_damaged_saying_which() {
        let (mut spec, home, root) = dsh_backups();
        let bytes = b"a patched file\n";
        let sha = sha256_hex(bytes);
        let file = home.path().join("index.js");
        let b = create(&root, &spec, backup_of(&file, home.path(), bytes, &sha)).unwrap();
        let saved = b.dir.join(SAVED_FILE);
        let mut known = spec.revisions[0].clone();
        known.sha256 = Some(sha.clone());
        spec.revisions.insert(0, known);
        for (kind, what) in [
            (RevisionKind::Patched, "the patched revision"),
            (RevisionKind::Outdated, "an earlier patched revision"),
        ] {
            spec.revisions[0].kind = kind;
            assert_eq!(
                saved_file_damage(&b, &spec),
                Some(format!("{} is {what}, not an original", saved.display()))
            );
        }
    }

    #[test]
    fn backups_that_cannot_be_listed_are_an_error_naming_the_folder_but_none_yet_is_none() {
        let home = tempfile::tempdir().unwrap();
        let missing = home.path().join("backups");
        assert_eq!(list_all(&missing).unwrap().backups.len(), 0);
        std::fs::write(&missing, b"").unwrap();
        let err = list_all(&missing).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "cannot read {}: Not a directory",
                missing.display()
            )),
            "{err}"
        );
    }

    #[test]
    fn the_original_a_revert_would_restore_is_the_newest_whole_backup_of_a_known_original() {
        let (mut spec, home, root) = dsh_backups();
        prepare_root(&root).unwrap();
        let bytes = b"an original\n";
        let before = sha256_hex(bytes);
        let mut known = spec.revisions[0].clone();
        known.sha256 = Some(before.clone());
        known.kind = RevisionKind::Original;
        spec.revisions.insert(0, known);
        let file = home.path().join("index.js");
        assert!(original_of(&root, &spec, &file).is_none());
        let (b, _) = save(&root, &spec, backup_of(&file, home.path(), bytes, &before)).unwrap();
        assert_eq!(
            original_of(&root, &spec, &file).map(|o| o.id),
            Some(b.id.clone())
        );
        assert!(original_of(&root, &spec, &home.path().join("other.js")).is_none());
        // A damaged backup newer than it: revert would stop there.
        std::fs::create_dir(root.join(format!("{}-9", b.id))).unwrap();
        assert!(original_of(&root, &spec, &file).is_none());
    }

    #[test]
    fn a_backup_refused_as_root_says_why_in_one_line() {
        let (spec, home, root) = dsh_backups();
        prepare_root(&root).unwrap();
        let bytes = b"an original\n";
        let before = sha256_hex(bytes);
        let file = home.path().join("index.js");
        let b = create(&root, &spec, backup_of(&file, home.path(), bytes, &before)).unwrap();
        mode(&b.dir, 0o777);
        if !replace::running_as_root() {
            // Not root: nothing is refused (only root restores what others may have planted).
            assert_eq!(saved_file_damage(&b, &spec), None);
            return;
        }
        assert_eq!(
            saved_file_damage(&b, &spec),
            Some(format!(
                "refusing {}: its group or others can write it (mode 0777); running as root, mcpatch trusts a backups folder only when root owns it and no one else can write it",
                b.dir.display()
            ))
        );
    }

    fn mode(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// DSH's patch spec, a state folder only its owner can write, and its
    /// backups folder for that target (not made yet).
    fn dsh_backups() -> (PatchSpec, tempfile::TempDir, PathBuf) {
        let spec = crate::registry::session_loss().unwrap();
        let home = tempfile::tempdir().unwrap();
        mode(home.path(), 0o755);
        let root = root(home.path(), &spec);
        (spec, home, root)
    }

    /// `check_trusted_entry`'s verdict on `path` as the text of its refusal.
    fn trust(path: &Path, folder: bool) -> std::result::Result<(), String> {
        check_trusted_entry(path, folder)
            .map_err(|e| e.to_string().lines().next().unwrap().to_string())
    }

    #[test]
    fn as_root_a_backup_entry_is_trusted_only_when_root_owns_it_and_no_one_else_can_write_it() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("backups");
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join(SAVED_FILE);
        std::fs::write(&file, b"a").unwrap();
        mode(&dir, 0o755);
        mode(&file, 0o644);
        if !replace::running_as_root() {
            // Not root: nothing is refused (only root restores what others may have planted).
            mode(&dir, 0o777);
            assert_eq!(trust(&dir, true), Ok(()));
            return;
        }
        let refused = |p: &Path, why: &str| {
            Err(format!(
                "refusing {}: {why}; running as root, mcpatch trusts a backups folder only when root owns it and no one else can write it",
                p.display()
            ))
        };
        assert_eq!(trust(&dir, true), Ok(()));
        assert_eq!(trust(&file, false), Ok(()));
        assert_eq!(trust(&dir.join("missing"), true), Ok(()));
        assert_eq!(
            trust(&file, true),
            refused(&file, "it is a regular file, not a folder")
        );
        assert_eq!(
            trust(&dir, false),
            refused(&dir, "it is a folder, not a regular file")
        );
        mode(&dir, 0o775);
        assert_eq!(
            trust(&dir, true),
            refused(&dir, "its group or others can write it (mode 0775)")
        );
        mode(&dir, 0o757);
        assert_eq!(
            trust(&dir, true),
            refused(&dir, "its group or others can write it (mode 0757)")
        );
        mode(&dir, 0o755);
        std::os::unix::fs::chown(&file, Some(1000), None).unwrap();
        assert_eq!(
            trust(&file, false),
            refused(&file, "it is owned by uid 1000, not root")
        );
        // The whole check covers the backups folder and the target's folder in it.
        let root = dir.join("p");
        prepare_root(&root).unwrap();
        assert_eq!(check_trusted(&root).map_err(|e| e.to_string()), Ok(()));
        mode(&dir, 0o777);
        assert!(check_trusted(&root).is_err());
        assert!(check_root_for_dry_run(&root).is_err());
    }

    #[test]
    fn prepare_root_makes_the_backups_folder_and_a_dry_run_checks_it_without_making_it() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        mode(home.path(), 0o755);
        let spec = crate::registry::session_loss().unwrap();
        let root = root(home.path(), &spec);
        assert_eq!(root, home.path().join("backups").join(&spec.id));
        assert!(check_root_for_dry_run(&root).is_ok());
        assert!(!root.exists());
        prepare_root(&root).unwrap();
        let made = std::fs::metadata(&root).unwrap();
        assert!(made.is_dir());
        assert_eq!(made.permissions().mode() & 0o7777, 0o755);
        assert!(check_root_for_dry_run(&root).is_ok());
        // A file where the folder would go is refused, naming the folder.
        let blocked = home.path().join("file");
        std::fs::write(&blocked, b"").unwrap();
        let err = check_root_for_dry_run(&blocked.join("backups")).unwrap_err();
        assert!(
            matches!(err, Error::BackupUnwritable { ref dir, .. } if *dir == blocked.join("backups")),
            "{err}"
        );
    }

    /// A read-only tmpfs at a new folder under `parent`, unmounted on drop.
    struct ReadOnlyMount(PathBuf);

    impl ReadOnlyMount {
        fn new(parent: &Path) -> ReadOnlyMount {
            let at = parent.join("read-only");
            std::fs::create_dir(&at).unwrap();
            let mounted = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"])
                .arg(&at)
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                mounted,
                "cannot mount a read-only tmpfs at {}: this test needs root and mount(8) (CI runs as root)",
                at.display()
            );
            ReadOnlyMount(at)
        }
    }

    impl Drop for ReadOnlyMount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }

    #[test]
    fn a_dry_run_refuses_a_backups_folder_on_a_read_only_file_system_even_as_root() {
        let home = tempfile::tempdir().unwrap();
        let mount = ReadOnlyMount::new(home.path());
        let root = mount.0.join("backups").join("p");
        let err = check_root_for_dry_run(&root).unwrap_err();
        assert!(
            matches!(&err, Error::BackupUnwritable { dir, source }
                if *dir == root && source.raw_os_error() == Some(libc::EROFS)),
            "{err}"
        );
    }

    #[test]
    fn a_backup_id_taken_in_the_same_millisecond_gets_the_next_free_number() {
        let root = tempfile::tempdir().unwrap();
        let base = "20261130T101500.123Z-b126dcec";
        assert_eq!(free_id(root.path(), base), base);
        std::fs::create_dir(root.path().join(base)).unwrap();
        assert_eq!(free_id(root.path(), base), format!("{base}-2"));
        std::fs::create_dir(root.path().join(format!("{base}-2"))).unwrap();
        assert_eq!(free_id(root.path(), base), format!("{base}-3"));
    }

    fn manifest_with_mode(mode: serde_json::Value) -> serde_json::Result<BackupManifest> {
        serde_json::from_value(serde_json::json!({
            "id": "x", "patch_id": "p", "original_path": "/a/lib/index.js",
            "package_dir": "/a", "version": null, "sha256_before": "b",
            "sha256_after": "c", "mode": mode, "mcpatch_version": "0.1.0",
            "created": "2026-01-01T00:00:00Z"
        }))
    }

    #[test]
    fn the_mode_is_written_as_an_octal_string_of_the_permission_bits() {
        let m = manifest_with_mode(serde_json::json!("0644")).unwrap();
        assert_eq!(m.mode, Some(0o644));
        let written = serde_json::to_value(&m).unwrap();
        assert_eq!(written["mode"], "0644");
        let setuid = manifest_with_mode(serde_json::json!("4755")).unwrap();
        assert_eq!(serde_json::to_value(&setuid).unwrap()["mode"], "4755");
    }

    #[test]
    fn a_number_from_an_earlier_manifest_still_reads() {
        // 33188 is st_mode 0o100644: a regular file, rw-r--r--.
        let m = manifest_with_mode(serde_json::json!(33188)).unwrap();
        assert_eq!(m.mode, Some(0o100644));
        assert_eq!(serde_json::to_value(&m).unwrap()["mode"], "0644");
        assert_eq!(
            manifest_with_mode(serde_json::Value::Null).unwrap().mode,
            None
        );
    }

    #[test]
    fn a_mode_that_is_not_octal_is_an_error_naming_it() {
        for bad in ["rw-r--r--", "0x1a4", "", "+644", "0999"] {
            let err = manifest_with_mode(serde_json::json!(bad)).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("mode {bad:?} is not an octal file mode such as \"0644\"")
            );
        }
    }
}
