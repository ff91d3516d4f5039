//! An install of several files patched together (mcp-sdk: the ESM and the
//! CJS build of one package folder): where the other files beside the first
//! are. Classify reads them to say what the install as a whole is; apply and
//! revert change all of them in one transaction.

use std::path::{Path, PathBuf};

use crate::registry::{FileFind, PatchSpec};

/// The path of a companion's file in the package folder `dir`; None when
/// this install has no such file (an optional build its package.json does
/// not export, see [`resolve`]) or the file is `first`, the install's own.
pub fn file_of(companion: &PatchSpec, dir: &std::path::Path, first: &Path) -> Option<PathBuf> {
    resolve(companion, dir)
        .ok()
        .flatten()
        .filter(|f| f.as_path() != first)
}

/// The path of a companion's file in `dir`: `Ok(None)` for an optional file
/// found through exports that this package does not export; `Err` (why)
/// when a file found through exports cannot be.
pub fn resolve(companion: &PatchSpec, dir: &Path) -> std::result::Result<Option<PathBuf>, String> {
    Ok(Some(match &companion.find {
        FileFind::Path(rel) => dir.join(rel),
        FileFind::Content { glob, .. } => dir.join(glob),
        FileFind::Reachable { from, .. } => dir.join(from),
        FileFind::Export {
            export,
            condition,
            optional: true,
        } => return crate::exports::resolve(dir, export, condition),
        FileFind::Export {
            export, condition, ..
        } => crate::exports::find(dir, export, condition)?,
    }))
}
