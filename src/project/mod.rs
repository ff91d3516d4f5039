//! A JavaScript project's own files, read and written with every other byte
//! kept: package.json, patch files in patch-package's and pnpm's formats,
//! pnpm-workspace.yaml; and whether they keep mcpatch's patch on an install
//! across `npm install` and `npm ci` (what `status` says, what `mcpatch keep`
//! writes).

pub mod package_json;
pub mod patch_file;
pub mod pnpm_workspace;

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::classify::Install;
use crate::error::{Error, Result};
use crate::registry::PatchSpec;
use crate::small_file;

/// pnpm's workspace file, beside package.json.
pub const WORKSPACE: &str = "pnpm-workspace.yaml";

/// What marks a postinstall script as re-applying mcpatch's patch.
pub const POSTINSTALL_MARK: &str = "mcpatch apply";

/// The most of package.json or a patch file mcpatch reads.
pub const MAX_PROJECT_FILE: u64 = 4 * 1024 * 1024;

/// How a project keeps the patch (`mcpatch keep HOW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum How {
    /// package.json's `scripts.postinstall` runs `mcpatch apply --quiet --path .`
    /// (chained after the one there with `&&`).
    Postinstall,
    /// `patches/<package>+<version>.patch`, applied by patch-package from
    /// `scripts.postinstall` (patch-package must be a devDependency).
    PatchPackage,
    /// `patches/<package>@<version>.patch` and pnpm-workspace.yaml's
    /// `patchedDependencies`, applied by pnpm itself.
    Pnpm,
}

impl How {
    /// As `status --json` says it in `kept_by`, and as typed.
    pub fn as_str(self) -> &'static str {
        match self {
            How::Postinstall => "postinstall",
            How::PatchPackage => "patch-package",
            How::Pnpm => "pnpm",
        }
    }
}

/// Whether the project an install is in keeps its patch (for `status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The project folder (the one holding package.json above `node_modules`).
    pub project: PathBuf,
    /// How, or None: the next `npm install` or `npm ci` undoes the patch.
    pub by: Option<How>,
}

/// The note `status` prints under a patched install its project does not keep.
pub const UNKEPT_NOTE: &str = "`npm install` or `npm ci` undoes it; see `mcpatch keep --help`";

/// The project whose `node_modules` tree holds `package_dir`: the folder
/// above its first `node_modules`, when that folder has a package.json (a
/// global prefix has none) and is no npx or pnpm dlx cache.
pub fn project_of(package_dir: &Path) -> Option<PathBuf> {
    let mut project = PathBuf::new();
    for c in package_dir.components() {
        if c == Component::Normal("node_modules".as_ref()) {
            let transient = project.components().any(|c| {
                c == Component::Normal("_npx".as_ref()) || c == Component::Normal("dlx".as_ref())
            });
            let manifest = project.join("package.json");
            let is_file = std::fs::symlink_metadata(&manifest).is_ok_and(|m| m.is_file());
            return (!transient && is_file).then_some(project);
        }
        project.push(c);
    }
    None
}

/// How the project of `install` keeps its patch; None when it is in no
/// project, or is no library a project depends on (a DSH plugin, a CLI:
/// their own installers put them back).
pub fn kept(install: &Install, spec: &PatchSpec) -> Option<Kept> {
    if spec.driver != crate::registry::Driver::SdkClient {
        return None;
    }
    let project = project_of(&install.path)?;
    let doc = read_package_json(&project).ok();
    let by = doc.and_then(|doc| kept_by(&doc, &project, install, spec));
    Some(Kept { project, by })
}

fn kept_by(doc: &Value, project: &Path, install: &Install, spec: &PatchSpec) -> Option<How> {
    let postinstall = package_json::get_string(doc, &["scripts", "postinstall"]).unwrap_or("");
    if postinstall.contains(POSTINSTALL_MARK) {
        return Some(How::Postinstall);
    }
    let holds_patch = |file: &Path| {
        small_file::read_capped(file, MAX_PROJECT_FILE)
            .is_ok_and(|b| crate::identity::text_of(&b).contains(spec.patch_marker.as_str()))
    };
    if postinstall.contains("patch-package") {
        let name =
            patch_file::patch_package_name(project, &install.path, install.version.as_deref());
        if name.is_some_and(|n| holds_patch(&project.join("patches").join(n))) {
            return Some(How::PatchPackage);
        }
    }
    let version = install.version.as_deref()?;
    let keys = [
        format!("{}@{version}", install.package),
        install.package.clone(),
    ];
    // pnpm 10 and later: pnpm-workspace.yaml; before: package.json's `pnpm` field.
    let workspace = small_file::read_capped(&project.join(WORKSPACE), MAX_PROJECT_FILE)
        .map(|b| pnpm_workspace::entries(&String::from_utf8_lossy(&b)))
        .unwrap_or_default();
    let listed = workspace
        .iter()
        .find(|(k, _)| keys.contains(k))
        .map(|(_, f)| f.clone())
        .or_else(|| {
            let patched = doc.get("pnpm")?.get("patchedDependencies")?;
            keys.iter()
                .find_map(|k| patched.get(k).and_then(Value::as_str))
                .map(str::to_string)
        });
    listed
        .filter(|f| holds_patch(&project.join(f)))
        .map(|_| How::Pnpm)
}

/// The project's package.json, parsed.
pub fn read_package_json(project: &Path) -> Result<Value> {
    let (_, text) = read_manifest_text(project)?;
    let path = project.join("package.json");
    let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(body).map_err(|e| Error::KeepPackageJson {
        path,
        detail: format!("it is not JSON ({e})"),
    })
}

/// package.json's path and text: a regular file (not a link) of UTF-8.
pub fn read_manifest_text(project: &Path) -> Result<(PathBuf, String)> {
    let path = project.join("package.json");
    match std::fs::symlink_metadata(&path) {
        Err(_) => {
            return Err(Error::KeepNotAProject {
                path: project.to_path_buf(),
            })
        }
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::KeepPackageJson {
                path,
                detail: "it is a symbolic link; mcpatch writes no file through a link".into(),
            })
        }
        Ok(_) => {}
    }
    let bytes =
        small_file::read_capped(&path, MAX_PROJECT_FILE).map_err(|r| Error::KeepPackageJson {
            path: path.clone(),
            detail: r.to_string(),
        })?;
    let text = String::from_utf8(bytes).map_err(|_| Error::KeepPackageJson {
        path: path.clone(),
        detail: "it is not UTF-8".into(),
    })?;
    Ok((path, text))
}
