//! A copy of the folder of an install's entry file (gemini-cli's `bundle/`)
//! in which the file to check replaces the installed one, so the real program
//! loads it: a bundle's chunks import each other by relative name, so a file
//! can only be tried in place. The copy is a private folder beside the
//! original (its bare imports resolve from the install, exactly as the
//! original's), its files hard links where the disk allows (else copies); it
//! is removed when dropped, or by the next run if mcpatch was killed. For
//! `verify --backup` and the check `apply` makes of a patched copy of a
//! release mcpatch does not know.

use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::error::{Error, Result};
use crate::stage::Scratch;

/// Name prefix of the folder, beside the bundle folder.
const PREFIX: &str = ".mcpatch-verify-bundle-";
const HELP: &str =
    "run mcpatch as a user who can write the install's folder (the one `apply` writes)";

/// The entry's folder copied, with the file to check in place.
pub struct Mirror {
    /// Held for its lifetime: removed when dropped.
    _dir: Scratch,
    /// The entry file inside the copy.
    pub entry: PathBuf,
}

impl Mirror {
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        self._dir.path()
    }
}

/// Copy the folder of `entry` (the package's bin entry), with `file` (inside
/// that folder) replaced by `checked`; names starting with `skip` (the copies
/// verify keeps beside the file) are left out.
pub fn build(entry: &Path, file: &Path, checked: &Path, skip: &str) -> Result<Mirror> {
    let bundle = entry.parent().ok_or_else(|| not_inside(file, entry))?;
    let relative = file
        .strip_prefix(bundle)
        .map_err(|_| not_inside(file, entry))?
        .to_path_buf();
    let package = bundle.parent().ok_or_else(|| not_inside(file, entry))?;
    let dir = crate::stage::scratch_dir_in(package, PREFIX, HELP)?;
    let root = dir.path().to_path_buf();
    for item in WalkDir::new(bundle).min_depth(1).follow_links(false) {
        let item = item.map_err(|e| {
            let path = e.path().unwrap_or(bundle).to_path_buf();
            Error::io("read", path, e.into(), HELP)
        })?;
        if item
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(skip))
        {
            continue;
        }
        let from = item.path();
        let rel = from.strip_prefix(bundle).unwrap_or(from);
        let to = root.join(rel);
        let kind = item.file_type();
        if kind.is_dir() {
            make_dir(&to)?;
        } else if rel == relative {
            link_or_copy(checked, &to)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(from).map_err(|e| Error::io("read", from, e, HELP))?;
            #[cfg(unix)]
            std::os::unix::fs::symlink(&target, &to)
                .map_err(|e| Error::io("create", &to, e, HELP))?;
        } else if kind.is_file() {
            link_or_copy(from, &to)?;
        }
    }
    if !root.join(&relative).is_file() {
        link_or_copy(checked, &root.join(&relative))?;
    }
    let entry = root.join(entry.file_name().unwrap_or_default());
    Ok(Mirror { _dir: dir, entry })
}

fn not_inside(file: &Path, entry: &Path) -> Error {
    Error::io(
        "check",
        file,
        std::io::Error::other(format!(
            "not inside the folder of the entry file {}",
            entry.display()
        )),
        "report this install to mcpatch: its layout is not one it can verify",
    )
}

fn make_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| Error::io("create", dir, e, HELP))
}

/// A hard link of `from` at `to`, or a private copy where linking is refused.
fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    let mut source = std::fs::File::open(from).map_err(|e| Error::io("read", from, e, HELP))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut out = options
        .open(to)
        .map_err(|e| Error::io("create", to, e, HELP))?;
    std::io::copy(&mut source, &mut out).map_err(|e| Error::io("write", to, e, HELP))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_has_every_file_of_the_bundle_and_the_checked_file_in_place() {
        let pkg = tempfile::tempdir().unwrap();
        let bundle = pkg.path().join("bundle");
        std::fs::create_dir_all(bundle.join("policies")).unwrap();
        std::fs::write(bundle.join("gemini.js"), "import './chunk-A.js';").unwrap();
        std::fs::write(bundle.join("chunk-A.js"), "original").unwrap();
        std::fs::write(bundle.join("policies/read.toml"), "x").unwrap();
        std::fs::write(bundle.join(".mcpatch-verify-1.js"), "patched").unwrap();
        let m = build(
            &bundle.join("gemini.js"),
            &bundle.join("chunk-A.js"),
            &bundle.join(".mcpatch-verify-1.js"),
            ".mcpatch-verify-",
        )
        .unwrap();
        assert_eq!(m.entry, m.path().join("gemini.js"));
        assert_eq!(m.path().parent(), Some(pkg.path()));
        let read = |p: &str| std::fs::read_to_string(m.path().join(p)).unwrap();
        assert_eq!(read("chunk-A.js"), "patched");
        assert_eq!(read("policies/read.toml"), "x");
        assert!(!m.path().join(".mcpatch-verify-1.js").exists());
        // The install's own file is untouched.
        assert_eq!(
            std::fs::read_to_string(bundle.join("chunk-A.js")).unwrap(),
            "original"
        );
        let copy = m.path().to_path_buf();
        drop(m);
        assert!(!copy.exists());
    }
}
