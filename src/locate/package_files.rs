//! What the search reads inside a package folder or a launcher script, each
//! with a size cap: the package's name, the file found by content, the host
//! folders a script names, and which file or folder a path is (device, inode).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::registry::glob_parts;
use crate::small_file;

/// How many files matching a target's glob are read to find the one to patch.
const MAX_CANDIDATE_FILES: usize = 64;
/// A candidate file larger than this is not read (bundles are a few MB).
const MAX_CANDIDATE_BYTES: u64 = 64 * 1024 * 1024;
/// A package.json larger than this is not one of the packages looked for.
const MAX_PACKAGE_JSON_BYTES: u64 = 1024 * 1024;
/// How much of a launcher script is read to find the host's path in it.
const MAX_SCRIPT_HEAD_BYTES: u64 = 16 * 1024;

/// Whether `dir/package.json` names `name`.
pub(super) fn package_name_is(dir: &Path, name: &str) -> bool {
    package_name(dir).is_some_and(|n| n == name)
}

/// The name `dir/package.json` gives. A package.json that is not a regular
/// file, or is larger than any real one, is not a package.
pub(super) fn package_name(dir: &Path) -> Option<String> {
    let bytes = small_file::read_capped(&dir.join("package.json"), MAX_PACKAGE_JSON_BYTES).ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()?
        .get("name")?
        .as_str()
        .map(str::to_string)
}

/// The one file of the package at `dir` that matches `glob` and holds every
/// `contains` string; else why not (how many matched). One listing of the
/// glob's folder, and the matching files read.
pub(super) fn find_by_content(
    dir: &Path,
    glob: &str,
    contains: &[String],
) -> std::result::Result<PathBuf, String> {
    let (sub, before, after) = glob_parts(glob).ok_or_else(|| format!("bad glob {glob}"))?;
    let folder = dir.join(sub);
    let mut names: Vec<OsString> = std::fs::read_dir(&folder)
        .map_err(|e| format!("{} cannot be read: {e}", folder.display()))?
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| {
            let n = n.as_encoded_bytes();
            n.len() >= before.len() + after.len()
                && n.starts_with(before.as_bytes())
                && n.ends_with(after.as_bytes())
        })
        .collect();
    names.sort();
    let mut matched = Vec::new();
    for name in names.iter().take(MAX_CANDIDATE_FILES) {
        let path = folder.join(name);
        let Ok(bytes) = small_file::read_capped(&path, MAX_CANDIDATE_BYTES) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        if contains.iter().all(|c| text.contains(c.as_str())) {
            matched.push(path);
        }
    }
    let wanted = contains
        .iter()
        .map(|c| format!("`{}`", c.lines().next().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(" and ");
    match matched.len() {
        1 => Ok(matched.remove(0)),
        0 => Err(format!(
            "none of its {} files matching {glob} holds {wanted}: not a release mcpatch can patch",
            names.len()
        )),
        n => Err(format!(
            "{n} of its files matching {glob} hold {wanted}: mcpatch patches exactly one"
        )),
    }
}

/// npm's own package folder (holding its builtin `npmrc`) for the `npm` found on PATH.
pub(super) fn npm_package(npm: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(npm).ok()?;
    if let Some(dir) = real
        .ancestors()
        .skip(1)
        .take(3)
        .find(|d| package_name_is(d, "npm"))
    {
        return Some(dir.to_path_buf());
    }
    // A launcher script beside a prefix's packages (or, on Windows, beside node).
    let bin = npm.parent()?;
    [
        bin.join("../lib/node_modules/npm"),
        bin.join("node_modules/npm"),
    ]
    .into_iter()
    .find(|d| package_name_is(d, "npm"))
    .and_then(|d| std::fs::canonicalize(d).ok())
}

/// Device and inode of a folder.
#[cfg(unix)]
pub(super) fn folder_identity(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(unix)]
pub(super) fn file_identity(path: &Path) -> Option<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino(), m.nlink()))
}

#[cfg(not(unix))]
pub(super) fn file_identity(_path: &Path) -> Option<(u64, u64, u64)> {
    None
}

/// Package folders named `host` inside a small launcher script.
pub(super) fn host_dirs_named_in_script(script: &Path, host: &str) -> Vec<PathBuf> {
    let Ok(head) = small_file::read_head(script, MAX_SCRIPT_HEAD_BYTES) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&head);
    let base = script.parent().unwrap_or(Path::new("/"));
    let marker = format!("node_modules/{host}");
    let mut dirs = Vec::new();
    for (at, _) in text.match_indices(&marker) {
        let start = text[..at]
            .rfind(|c: char| c == '"' || c == '\'' || c.is_whitespace() || c == '=')
            .map(|i| i + 1)
            .unwrap_or(0);
        let raw = &text[start..at + marker.len()];
        let raw = raw
            .replace("$basedir", &base.to_string_lossy())
            .replace("${basedir}", &base.to_string_lossy());
        let candidate = if Path::new(&raw).is_absolute() {
            PathBuf::from(raw)
        } else {
            base.join(raw)
        };
        if let Ok(real) = std::fs::canonicalize(&candidate) {
            if !dirs.contains(&real) {
                dirs.push(real);
            }
        }
    }
    dirs
}
