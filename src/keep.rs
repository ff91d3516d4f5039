//! Keeping the patch in a project across `npm install` and `npm ci`, which
//! put the package's original files back: `mcpatch keep` writes what
//! JavaScript teams already use (a `postinstall` script that re-applies the
//! patch, or the change as a patch file patch-package or pnpm applies), and
//! [`kept`] tells `status` whether a project does one of these for an install.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::backup;
use crate::classify::{Install, State};
use crate::environment::Environment;
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::project::{
    kept, package_json, patch_file, pnpm_workspace, project_of, read_manifest_text,
    read_package_json, How, MAX_PROJECT_FILE, POSTINSTALL_MARK, WORKSPACE,
};
use crate::registry::{self, PatchSpec};
use crate::replace::PendingFile;
use crate::small_file;

/// The line `mcpatch keep postinstall` adds to `scripts.postinstall`: npm
/// runs it in the project folder after each `npm install` and `npm ci`.
pub const POSTINSTALL_LINE: &str = "mcpatch apply --quiet --path .";

/// `mcpatch keep HOW --path P`.
pub fn run(targets: &[&PatchSpec], how: How, path: &Path, env: &Environment) -> Result<Outcome> {
    let project = path.canonicalize().map_err(|e| {
        Error::io(
            "open the project folder",
            path,
            e,
            "pass --path the project folder (the one with package.json and node_modules)",
        )
    })?;
    if !project.is_dir() {
        return Err(Error::KeepNotAProject { path: project });
    }
    read_package_json(&project)?;
    match how {
        How::Postinstall => {
            let changed = set_in_package_json(&project, &["scripts", "postinstall"], |old| {
                chain(old, POSTINSTALL_LINE, POSTINSTALL_MARK)
            })?;
            say_package_json(&project, changed, "scripts.postinstall", POSTINSTALL_LINE);
            say_next("commit package.json; every `npm install` and `npm ci` then runs mcpatch, which must be on PATH there (docs/keeping-the-patch.md)");
        }
        How::PatchPackage | How::Pnpm => write_patches(targets, how, &project, env)?,
    }
    Ok(Outcome::Clean)
}

/// `old` and `line` joined by ` && `, or `old` as it is when it already holds `mark`.
fn chain(old: Option<&str>, line: &str, mark: &str) -> String {
    match old {
        Some(old) if old.contains(mark) => old.to_string(),
        Some(old) if !old.trim().is_empty() => format!("{old} && {line}"),
        _ => line.to_string(),
    }
}

/// The step after `keep`, wrapped to the terminal.
fn say_next(text: &str) {
    crate::out!(
        "{}",
        crate::table::hanging("next: ", text, crate::width::stdout_columns())
    );
}

fn say_package_json(project: &Path, changed: bool, key: &str, value: &str) {
    let path = crate::output::path(&project.join("package.json"));
    if changed {
        crate::outln!("{path}: {key} now runs `{}`", crate::output::clean(value));
    } else {
        crate::outln!(
            "{path}: {key} already runs `{}`",
            crate::output::clean(value)
        );
    }
}

/// Set one string of the project's package.json, every other byte kept;
/// false when it already had that value (the file is left alone).
fn set_in_package_json(
    project: &Path,
    key: &[&str],
    make: impl Fn(Option<&str>) -> String,
) -> Result<bool> {
    let (path, text) = read_manifest_text(project)?;
    let edited =
        package_json::set_string(&text, key, make).map_err(|e| Error::KeepPackageJson {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    if edited == text {
        return Ok(false);
    }
    write_like(&path, &path, edited.as_bytes())?;
    Ok(true)
}

/// Name `file` for `key` in the project's pnpm-workspace.yaml (made when
/// missing, with package.json's mode); false when it already did.
fn set_in_workspace(project: &Path, key: &str, file: &str) -> Result<bool> {
    let path = project.join(WORKSPACE);
    let text = match small_file::read_capped(&path, MAX_PROJECT_FILE) {
        Ok(bytes) => Some(
            String::from_utf8(bytes).map_err(|_| Error::KeepProjectFile {
                path: path.clone(),
                detail: "it is not UTF-8".into(),
            })?,
        ),
        Err(small_file::Refused::Missing) => None,
        Err(r) => {
            return Err(Error::KeepProjectFile {
                path,
                detail: r.to_string(),
            })
        }
    };
    let edited =
        pnpm_workspace::set(text.as_deref(), key, file).map_err(|e| Error::KeepProjectFile {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    if text.as_deref() == Some(edited.as_str()) {
        return Ok(false);
    }
    write_like(&path, &project.join("package.json"), edited.as_bytes())?;
    Ok(true)
}

/// Write `bytes` to `target` atomically (a synced temp file renamed over it),
/// with the mode (read and write bits only for a new file) and owner of `like`.
fn write_like(target: &Path, like: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(like).map_err(|e| {
        Error::io(
            "read the mode of",
            like,
            e,
            "check the folder's permissions",
        )
    })?;
    let mode = if target == like {
        meta.mode() & 0o7777
    } else {
        meta.mode() & 0o666
    };
    if std::fs::symlink_metadata(target).is_ok_and(|m| !m.is_file()) {
        return Err(Error::KeepFileTaken {
            path: target.to_path_buf(),
            what: "is not a regular file",
        });
    }
    let pending =
        PendingFile::write_beside(target, bytes, Some(mode), Some((meta.uid(), meta.gid())))?;
    pending.persist()
}

/// `mcpatch keep patch-package|pnpm`: the change of each patched install in
/// the project's node_modules as a patch file, and package.json told to use it.
fn write_patches(
    targets: &[&PatchSpec],
    how: How,
    project: &Path,
    env: &Environment,
) -> Result<()> {
    let report = crate::survey::collect(targets, &[project.to_path_buf()], env)?;
    let home = env.state_home()?;
    let mut written: Vec<(PathBuf, String)> = Vec::new();
    let mut already = 0;
    for install in &report.installs {
        if project_of(&install.path).as_deref() != Some(project) {
            continue;
        }
        let spec = registry::find(targets, install.target, &install.package);
        if matches!(install.state, State::Unsupported | State::UpstreamFixed) {
            crate::outln_fit!(
                "{}: {}, nothing to keep",
                crate::output::path(&install.path),
                install.state.as_str()
            );
            continue;
        }
        if install.state == State::Patched && kept(install, spec).and_then(|k| k.by) == Some(how) {
            crate::outln_fit!(
                "{}: already kept by {}",
                crate::output::path(&install.path),
                how.as_str()
            );
            already += 1;
            continue;
        }
        if install.state != State::Patched
            || install.companions.iter().any(|c| c.state != State::Patched)
        {
            return Err(Error::KeepNotPatched {
                path: install.path.clone(),
                state: install.state.as_str(),
                project: project.to_path_buf(),
            });
        }
        let version = install.version.as_deref().unwrap_or_default();
        let (name, prefix) = match how {
            How::PatchPackage => {
                let name = patch_file::patch_package_name(project, &install.path, Some(version))
                    .ok_or_else(|| {
                        let in_store = install
                            .path
                            .components()
                            .any(|c| c == Component::Normal(".pnpm".as_ref()));
                        if in_store {
                            Error::KeepPnpmStore {
                                path: install.path.clone(),
                            }
                        } else {
                            Error::KeepProjectFile {
                                path: install.path.clone(),
                                detail: "patch-package cannot name a patch for it (its path below node_modules is not UTF-8, or it has no version)".into(),
                            }
                        }
                    })?;
                let rel = install.path.strip_prefix(project).unwrap_or(&install.path);
                (name, format!("{}/", rel.to_string_lossy()))
            }
            _ => (
                patch_file::pnpm_name(&install.package, version),
                String::new(),
            ),
        };
        let changes = changes_of(spec, install, &backup::root(&home, spec))?;
        let text = patch_file::render(&prefix, &changes);
        let rel = format!("patches/{name}");
        if written.iter().any(|(p, _)| p == Path::new(&rel)) {
            continue; // pnpm: one file per name@version, however many copies
        }
        write_patch_file(project, &rel, &text, &spec.patch_marker)?;
        written.push((
            PathBuf::from(&rel),
            format!("{}@{version}", install.package),
        ));
    }
    if written.is_empty() && already > 0 {
        return Ok(());
    }
    if written.is_empty() {
        return Err(Error::KeepNothing {
            project: project.to_path_buf(),
        });
    }
    let doc = read_package_json(project)?;
    match how {
        How::PatchPackage => {
            let changed = set_in_package_json(project, &["scripts", "postinstall"], |old| {
                chain(old, "patch-package", "patch-package")
            })?;
            say_package_json(project, changed, "scripts.postinstall", "patch-package");
            let has = |field: &str| {
                doc.get(field)
                    .and_then(|d| d.get("patch-package"))
                    .is_some()
            };
            let install = if has("devDependencies") || has("dependencies") {
                ""
            } else {
                "`npm install --save-dev patch-package`, then "
            };
            say_next(&format!("{install}commit patches/ and package.json (and the lockfile); every `npm install` and `npm ci` then applies the patch (docs/keeping-the-patch.md)"));
        }
        _ => {
            // pnpm 10 and later read pnpm-workspace.yaml (11 and later only
            // that); a project that already lists patches in package.json's
            // `pnpm` field (pnpm 9 and older) gets its entry there.
            let old_style = doc
                .get("pnpm")
                .and_then(|p| p.get("patchedDependencies"))
                .is_some_and(Value::is_object);
            let manifest = if old_style { "package.json" } else { WORKSPACE };
            for (rel, key) in &written {
                let rel = rel.to_string_lossy();
                let changed = if old_style {
                    set_in_package_json(project, &["pnpm", "patchedDependencies", key], |_| {
                        rel.to_string()
                    })?
                } else {
                    set_in_workspace(project, key, &rel)?
                };
                let path = crate::output::path(&project.join(manifest));
                let word = if changed {
                    "now names"
                } else {
                    "already names"
                };
                let field = if old_style {
                    "pnpm.patchedDependencies"
                } else {
                    "patchedDependencies"
                };
                crate::outln!(
                    "{path}: {field} {word} {} for {}",
                    crate::output::clean(&rel),
                    crate::output::clean(key)
                );
            }
            say_next(&format!("run `pnpm install` (it records the patch in pnpm-lock.yaml), then commit patches/, {manifest} and pnpm-lock.yaml (docs/keeping-the-patch.md)"));
        }
    }
    Ok(())
}

/// Each file of a patched install: its path in the package folder, the
/// original (from the file's newest backup) and the patched text on disk.
fn changes_of(spec: &PatchSpec, install: &Install, root: &Path) -> Result<Vec<patch_file::Change>> {
    let backups = backup::list(root)?;
    let mut files = vec![(install.file.clone(), spec)];
    for (c, cspec) in install.companions_with(spec) {
        files.push((c.file.clone(), cspec));
    }
    let mut changes = Vec::new();
    for (file, fspec) in files {
        let no_original = |detail: String| Error::KeepNoOriginal {
            file: file.clone(),
            detail,
        };
        let (bytes, _) = crate::classify::hash_file(&file)?;
        let patched =
            String::from_utf8(bytes).map_err(|_| no_original("it is not UTF-8".into()))?;
        let saved = backup::pick(&backups, &file, None).ok_or_else(|| {
            no_original(format!(
                "mcpatch keeps no backup of it under {}",
                root.display()
            ))
        })?;
        let original = backup::read_checked(saved, fspec)?;
        let original = String::from_utf8(original)
            .map_err(|_| no_original(format!("backup {} is not UTF-8", saved.id)))?;
        // The backup must be the very original this file was patched from.
        match crate::stage::apply_diff(fspec, &original, &file) {
            Ok(again) if again == patched => {}
            _ => {
                return Err(no_original(format!(
                    "its newest backup, {}, is not the original it was patched from",
                    saved.id
                )))
            }
        }
        let rel = file
            .strip_prefix(&install.path)
            .unwrap_or(&file)
            .to_string_lossy()
            .into_owned();
        changes.push(patch_file::Change {
            file: rel,
            original,
            patched,
        });
    }
    Ok(changes)
}

/// Write `patches/<name>` in the project unless it already says `text`; a file
/// there that is not mcpatch's (no patch marker) is never overwritten.
fn write_patch_file(project: &Path, rel: &str, text: &str, marker: &str) -> Result<()> {
    let path = project.join(rel);
    match small_file::read_capped(&path, MAX_PROJECT_FILE) {
        Ok(bytes) if bytes == text.as_bytes() => {
            crate::outln_fit!("{}: already holds the patch", crate::output::path(&path));
            return Ok(());
        }
        Ok(bytes) if !crate::identity::text_of(&bytes).contains(marker) => {
            return Err(Error::KeepFileTaken {
                path,
                what: "holds another change than mcpatch's patch",
            })
        }
        Err(small_file::Refused::Missing) | Ok(_) => {}
        Err(_) => {
            return Err(Error::KeepFileTaken {
                path,
                what: "is not a regular file mcpatch can read",
            })
        }
    }
    let dir = project.join("patches");
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
        return Err(Error::KeepFileTaken {
            path: dir,
            what: "is not a folder",
        });
    }
    if !dir.is_dir() {
        std::fs::create_dir(&dir)
            .map_err(|e| Error::io("create", &dir, e, "check the project folder's permissions"))?;
        // As root in a user's project: the folder is the project's owner's, as
        // package.json is (best effort: only root can give a folder away).
        if let Ok(meta) = std::fs::metadata(project.join("package.json")) {
            use std::os::unix::fs::MetadataExt;
            let _ = std::os::unix::fs::chown(&dir, Some(meta.uid()), Some(meta.gid()));
        }
    }
    write_like(&path, &project.join("package.json"), text.as_bytes())?;
    crate::outln_fit!("{}: written", crate::output::path(&path));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postinstall_is_chained_once() {
        assert_eq!(
            chain(None, POSTINSTALL_LINE, POSTINSTALL_MARK),
            POSTINSTALL_LINE
        );
        assert_eq!(
            chain(Some(" "), POSTINSTALL_LINE, POSTINSTALL_MARK),
            POSTINSTALL_LINE
        );
        assert_eq!(
            chain(Some("husky install"), POSTINSTALL_LINE, POSTINSTALL_MARK),
            format!("husky install && {POSTINSTALL_LINE}")
        );
        let kept = format!("husky install && {POSTINSTALL_LINE}");
        assert_eq!(chain(Some(&kept), POSTINSTALL_LINE, POSTINSTALL_MARK), kept);
    }

    #[test]
    fn the_project_is_above_the_first_node_modules_with_a_package_json() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let pkg = p.join("app/node_modules/a/node_modules/@modelcontextprotocol/sdk");
        std::fs::create_dir_all(&pkg).unwrap();
        assert_eq!(project_of(&pkg), None, "no package.json: a global prefix");
        std::fs::write(p.join("app/package.json"), "{}").unwrap();
        assert_eq!(project_of(&pkg), Some(p.join("app")));
        let npx = p.join(".npm/_npx/abc/node_modules/x");
        std::fs::create_dir_all(&npx).unwrap();
        std::fs::write(p.join(".npm/_npx/abc/package.json"), "{}").unwrap();
        assert_eq!(project_of(&npx), None, "an npx cache is no project");
    }
}
