//! Backups of originals under `$DSH_HOME/backups/<patch-id>/<UTC time>-<short sha>/`:
//! the file byte-for-byte with its mode, and a manifest saying where it came
//! from. A backup appears whole (written aside, then renamed) or not at all.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::classify::sha256_hex;
use crate::error::{Error, Result};
use crate::registry::{PatchSpec, RevisionKind};

/// The file name of the saved original inside a backup folder.
pub const SAVED_FILE: &str = "index.js";
pub const MANIFEST: &str = "manifest.json";

/// `manifest.json` of one backup.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BackupManifest {
    pub id: String,
    pub patch_id: String,
    /// The file that was patched.
    pub original_path: PathBuf,
    pub package_dir: PathBuf,
    pub version: Option<String>,
    pub sha256_before: String,
    pub sha256_after: String,
    /// The file's sha256 when it was backed up, when that was not the original
    /// (an earlier patch revision, which `apply` took out to save the original).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_sha256: Option<String>,
    pub mode: Option<u32>,
    pub mcpatch_version: String,
    /// RFC 3339 UTC.
    pub created: String,
}

/// One backup on disk.
#[derive(Debug, Clone, Serialize)]
pub struct Backup {
    pub id: String,
    pub dir: PathBuf,
    pub manifest: BackupManifest,
}

/// `$DSH_HOME/backups/<patch-id>`.
pub fn root(dsh_home: &Path, spec: &PatchSpec) -> PathBuf {
    dsh_home.join("backups").join(&spec.id)
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

/// Write a backup whole: into a hidden folder, synced, then renamed into place.
pub fn create(root: &Path, spec: &PatchSpec, new: NewBackup<'_>) -> Result<Backup> {
    let unwritable = |source| Error::BackupUnwritable {
        dir: root.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(root).map_err(unwritable)?;
    remove_incomplete(root);
    let now = SystemTime::now();
    let stamp = humantime::format_rfc3339_millis(now).to_string();
    let compact: String = stamp
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    let base = format!("{}-{}", compact, &new.sha256_before[..8]);
    let mut id = base.clone();
    let mut n = 1;
    while root.join(&id).exists() {
        n += 1;
        id = format!("{base}-{n}");
    }
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
    let aside = tempfile::Builder::new()
        .prefix(".incomplete-")
        .tempdir_in(root)
        .map_err(unwritable)?;
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        let path = aside.path().join(name);
        let mut f = std::fs::File::create(&path).map_err(unwritable)?;
        f.write_all(bytes).map_err(unwritable)?;
        f.sync_all().map_err(unwritable)?;
        Ok(())
    };
    write(SAVED_FILE, new.bytes)?;
    #[cfg(unix)]
    if let Some(mode) = new.mode {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            aside.path().join(SAVED_FILE),
            std::fs::Permissions::from_mode(mode & 0o7777),
        )
        .map_err(unwritable)?;
    }
    write(
        MANIFEST,
        serde_json::to_string_pretty(&manifest)
            .expect("manifest serializes")
            .as_bytes(),
    )?;
    let dir = root.join(&id);
    let aside = aside.keep();
    std::fs::rename(&aside, &dir).map_err(|source| {
        let _ = std::fs::remove_dir_all(&aside);
        unwritable(source)
    })?;
    crate::replace::sync_dir(root)?;
    Ok(Backup { id, dir, manifest })
}

/// Remove half-written backups a killed mcpatch left (call only under the write lock).
fn remove_incomplete(root: &Path) {
    if let Ok(entries) = std::fs::read_dir(root) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(".incomplete-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// All complete backups under `root`, oldest first.
pub fn list(root: &Path) -> Result<Vec<Backup>> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read", root, e, "check the folder's permissions")),
    };
    let mut backups = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        let manifest_path = entry.path().join(MANIFEST);
        let Ok(text) = std::fs::read_to_string(&manifest_path) else {
            continue;
        };
        let Ok(manifest) = serde_json::from_str::<BackupManifest>(&text) else {
            continue;
        };
        backups.push(Backup {
            id: name,
            dir: entry.path(),
            manifest,
        });
    }
    backups.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(backups)
}

/// Read a backup's saved file and check it against its manifest (the caller
/// decides what to do when it is not a known original).
pub fn read_checked(backup: &Backup, spec: &PatchSpec) -> Result<Vec<u8>> {
    let path = backup.dir.join(SAVED_FILE);
    let bytes = std::fs::read(&path).map_err(|e| Error::BackupDamaged {
        id: backup.id.clone(),
        detail: format!("cannot read {}: {e}", path.display()),
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

fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}
