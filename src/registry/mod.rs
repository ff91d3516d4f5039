//! The targets: each folder under `patches/` (a `manifest.json` in format 2
//! and the diffs it names, see patches/README.md), embedded in the binary at
//! build time so an installed mcpatch is self-contained. Everything about a
//! target that is data lives there; what is code lives in `src/targets/`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::anchors::{AnchorEntry, Anchors};
use crate::error::{Error, Result};
use crate::verify::scenario::ScenarioName;

mod driver;
mod embedded;

pub use driver::Driver;
use embedded::EMBEDDED;

/// One target: an npm package mcpatch finds, classifies, patches, reverts
/// and verifies, as its folder under `patches/` describes it.
#[derive(Debug, Clone)]
pub struct PatchSpec {
    /// The patch's id: backups live under `backups/<id>`, the marker names it.
    pub id: String,
    /// The target's name (`--target NAME`, `target` in every `--json` install).
    pub target: &'static str,
    /// The npm package name (package.json `name`).
    pub package: String,
    /// How to find the file to patch in a package folder.
    pub find: FileFind,
    /// For messages: the file's path in the package (`lib/index.js`), or the
    /// glob it is found by (`dist/chunk-*.js`).
    pub file: String,
    /// What the module must export for the load check to pass.
    pub exports: String,
    pub description: String,
    /// The first patch's diff (what `mcpatch diff` shows with no install).
    pub diff: String,
    /// One diff per code family, tried in order.
    pub patches: Vec<PatchFamily>,
    /// Substrings that together show the code the patch hooks into.
    pub supervisor_markers: Vec<String>,
    /// Substrings that show the package fixed the defect itself.
    pub upstream_fix_markers: Vec<String>,
    /// A string the patch adds: its presence in an unknown file means another mcpatch revision.
    pub patch_marker: String,
    pub revisions: Vec<Revision>,
    /// Earlier revisions of this patch, oldest first: a file carrying one is
    /// upgraded by reversing its diff and applying the current one.
    pub earlier: Vec<EarlierPatch>,
    /// Where installs of it live.
    pub installs: Installs,
    /// The code that drives what is not data (search places, host checks, verify).
    pub driver: Driver,
    /// How verify starts an install, for the stdio-bridge driver.
    pub verify_command: Vec<String>,
    pub verify_env: BTreeMap<String, String>,
    /// For the sdk-client driver: the host script (`verify.host_script`, a
    /// file of the target's folder) verify runs from a private scratch folder.
    pub verify_host_script: Option<String>,
    /// Scenarios verify does not run for this target, each with why
    /// (`verify.left_out`: a rule its patch does not keep yet, named here
    /// rather than judged as a failure of every run).
    pub verify_left_out: Vec<(ScenarioName, &'static str)>,
    /// The target's words in messages.
    pub texts: Texts,
    /// Content anchors (see [`crate::anchors`]): when given, they patch the
    /// file instead of diffs, and `patches` is empty.
    pub anchors: Option<Anchors>,
    /// Earlier revisions of the anchors, oldest first: a file one of them
    /// patched is upgraded by putting their anchors' text back, then
    /// patching that with the current anchors.
    pub earlier_anchors: Vec<EarlierAnchors>,
    /// The build this file is (`esm`, `cjs`), for a target whose installs
    /// hold several files patched together (mcp-sdk); None for one file.
    pub role: Option<String>,
    /// The other files of the same install, patched, backed up and reverted
    /// together with this one (one transaction): each a spec of its own file
    /// (its own anchors and revisions), with no companions itself.
    pub companions: Vec<PatchSpec>,
}

/// How the file to patch is found in a package folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileFind {
    /// At this path, relative to the package folder.
    Path(String),
    /// The one file matching `glob` (`*` in its last part only) that holds every `contains` string.
    Content { glob: String, contains: Vec<String> },
    /// The one file reachable from the entry file `from` (following relative
    /// imports, see `src/reachable.rs`) that holds `declares`.
    Reachable { from: String, declares: String },
    /// The file package.json `exports[export][condition]` names (see
    /// [`crate::exports`]); `optional`: a package without that condition
    /// simply has no such file (`@ai-sdk/mcp` 2.x has no `require` build).
    Export {
        export: String,
        condition: String,
        optional: bool,
    },
}

/// Where installs of a target live (each true entry is a search place).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Installs {
    #[serde(default)]
    pub npx_cache: bool,
    #[serde(default)]
    pub npm_global: bool,
    #[serde(default)]
    pub pnpm_dlx: bool,
    #[serde(default)]
    pub paths: bool,
    /// Packages that nest this one.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Commands on PATH that start a host: the host is found from them.
    #[serde(default)]
    pub host_bins: Vec<String>,
    /// A plain `status` also searches the project of the current folder: the
    /// nearest `node_modules` upward, as npm does.
    #[serde(default)]
    pub project: bool,
}

/// A target's words in messages (all `'static`: the registry lives as long as mcpatch).
#[derive(Debug, Clone, Copy)]
pub struct Texts {
    /// What loads the package ("DSH").
    pub host: &'static str,
    /// The next step for a file no patch fits.
    pub reinstall_step: &'static str,
    /// How to get a package back from its source ("reinstall @deepseek-ai/dsh").
    pub reinstall: &'static str,
    /// The next step for an unsupported revision.
    pub unsupported_step: &'static str,
    /// After a change: "restart DSH so it loads the patched client".
    pub restart_patched: &'static str,
    /// After a revert: "restart DSH so it loads the restored client".
    pub restart_restored: &'static str,
    /// The command that restarts a running host (one of `installs.hosts`), if
    /// there is one to give; else each process is to be stopped and started again.
    pub restart_command: Option<&'static str>,
}

/// One diff of a target, for the code family its `requires` strings show.
#[derive(Debug, Clone)]
pub struct PatchFamily {
    /// The diff's file name in the target's folder.
    pub file: String,
    pub diff: String,
    /// Strings a file must hold for this diff to be tried.
    pub requires: Vec<String>,
    /// Strings a file must not hold for this diff to be tried.
    pub refuses: Vec<String>,
}

impl PatchFamily {
    /// The parsed diff.
    pub fn parsed(&self) -> diffy::Patch<'_, str> {
        diffy::Patch::from_str(&self.diff).expect("load() parsed this diff")
    }

    /// Whether `text` is of this diff's code family (its strings say so).
    pub fn family_of(&self, text: &str) -> bool {
        self.requires.iter().all(|r| text.contains(r.as_str()))
            && !self.refuses.iter().any(|r| text.contains(r.as_str()))
    }
}

/// An earlier revision of the patch, kept so `apply` can take it back out.
#[derive(Debug, Clone)]
pub struct EarlierPatch {
    pub revision: u32,
    /// Its diff file's name (what an `outdated` revision's `patch` names).
    pub file: String,
    /// sha256 of its diff applied to the original, for a target with one
    /// original (DSH); a target with many releases (mcp-remote) records each
    /// result as an `outdated` revision naming this diff instead.
    pub sha256: Option<String>,
    /// Its unified diff against the original.
    pub diff: String,
    /// What it does not do that the current revision does (`falls_short`),
    /// for the note of a modified file that carries it.
    pub falls_short: Option<String>,
}

/// An earlier revision of a target's content anchors, kept so `apply` can
/// take it back out.
#[derive(Debug, Clone)]
pub struct EarlierAnchors {
    pub revision: u32,
    pub anchors: Anchors,
    /// What it does not do that the current revision does.
    pub falls_short: Option<String>,
}

/// A known revision of the patched file.
#[derive(Debug, Clone, Deserialize)]
pub struct Revision {
    /// Full sha256, when known.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Abbreviated hashes reported elsewhere: a full hash must start and end with these.
    #[serde(default)]
    pub sha256_prefix: Option<String>,
    #[serde(default)]
    pub sha256_suffix: Option<String>,
    pub versions: Vec<String>,
    pub kind: RevisionKind,
    pub note: String,
    /// `original`: the diff that fits it; `patched`: the diff that made it.
    #[serde(default)]
    pub patch: Option<String>,
    /// `original`: what its diff gives.
    #[serde(default)]
    pub patched_sha256: Option<String>,
    /// `patched`: what revert restores.
    #[serde(default)]
    pub original_sha256: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevisionKind {
    /// An unpatched revision a diff fits.
    Original,
    /// A diff applied to an `Original`.
    Patched,
    /// An earlier revision of the diff applied to `Original`: `apply` upgrades it.
    Outdated,
    /// A revision the patch cannot help.
    Unsupported,
    /// Reported affected by others, known only by an abbreviated hash.
    ReportedAffected,
}

impl Revision {
    /// Whether a full lowercase hex sha256 is this revision.
    pub fn matches(&self, sha256: &str) -> bool {
        match (&self.sha256, &self.sha256_prefix, &self.sha256_suffix) {
            (Some(full), _, _) => full.eq_ignore_ascii_case(sha256),
            (None, Some(prefix), Some(suffix)) => {
                sha256.len() == 64
                    && sha256.starts_with(prefix.as_str())
                    && sha256.ends_with(suffix.as_str())
            }
            _ => false,
        }
    }
}

#[derive(Deserialize)]
struct ManifestFile {
    format: u32,
    id: String,
    target: String,
    package: String,
    description: String,
    installs: Installs,
    files: Vec<FileEntry>,
    patch_marker: String,
    markers: Markers,
    patches: Vec<PatchEntry>,
    #[serde(default)]
    earlier_patches: Vec<EarlierPatchFile>,
    verify: VerifyEntry,
    texts: TextsEntry,
    revisions: Vec<Revision>,
    /// What a `{{NAME}}` of an anchor matches (see [`crate::anchors`]).
    #[serde(default)]
    placeholder: Option<String>,
    #[serde(default)]
    anchors: Vec<AnchorEntry>,
    #[serde(default)]
    earlier_anchors: Vec<EarlierAnchorsFile>,
}

#[derive(Deserialize)]
struct EarlierAnchorsFile {
    revision: u32,
    #[serde(default)]
    falls_short: Option<String>,
    anchors: Vec<AnchorEntry>,
}

#[derive(Deserialize)]
struct FileEntry {
    find: FindEntry,
    exports: String,
    #[serde(default)]
    optional: bool,
}

#[derive(Deserialize)]
struct FindEntry {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    contains: Vec<String>,
    #[serde(default)]
    reachable_from: Option<String>,
    #[serde(default)]
    declares: Option<String>,
    #[serde(default)]
    export: Option<String>,
    #[serde(default)]
    condition: Option<String>,
}

#[derive(Deserialize)]
struct Markers {
    hook: Vec<String>,
    upstream_fix: Vec<String>,
}

#[derive(Deserialize)]
struct PatchEntry {
    file: String,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default)]
    refuses: Vec<String>,
    #[serde(default)]
    sha256: Option<String>,
}

#[derive(Deserialize)]
struct VerifyEntry {
    driver: String,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    host_script: Option<String>,
    #[serde(default)]
    left_out: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct TextsEntry {
    host: String,
    reinstall: String,
    unsupported_step: String,
    restart: String,
    #[serde(default)]
    restart_command: Option<String>,
}

#[derive(Deserialize)]
struct EarlierPatchFile {
    revision: u32,
    patch: String,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    falls_short: Option<String>,
}

/// A string that lives as long as mcpatch (targets are loaded once).
fn forever(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Parse a manifest and its diffs into a [`PatchSpec`], checking it is usable.
pub fn load(
    manifest: &str,
    diff_name_to_text: impl Fn(&str) -> Option<String>,
) -> Result<PatchSpec> {
    let parsed: ManifestFile = serde_json::from_str(manifest).map_err(|e| Error::Registry {
        what: "manifest.json".into(),
        detail: e.to_string(),
    })?;
    let bad = |detail: String| Error::Registry {
        what: parsed.id.clone(),
        detail,
    };
    if parsed.format != 2 {
        return Err(bad(format!(
            "manifest format {} is not one mcpatch reads (2)",
            parsed.format
        )));
    }
    let [file] = parsed.files.as_slice() else {
        return Err(bad(format!(
            "expected exactly one entry in files, found {}",
            parsed.files.len()
        )));
    };
    let f = &file.find;
    let by_export = (f.export.is_some() || f.condition.is_some())
        .then(|| find_by_export(f, file.optional))
        .transpose()
        .map_err(bad)?;
    if file.optional && by_export.is_none() {
        return Err(bad(
            "files[0].optional is only for a file found through exports (find: {export, condition})".into(),
        ));
    }
    let find = match by_export { Some(find) => find, None =>
        match (&f.path, &f.glob) {
            (None, None) if f.contains.is_empty() && f.reachable_from.is_some() && f.declares.is_some() => {
                FileFind::Reachable {
                    from: f.reachable_from.clone().unwrap_or_default(),
                    declares: f.declares.clone().unwrap_or_default(),
                }
            }
            (Some(path), None) if f.contains.is_empty() && f.reachable_from.is_none() => FileFind::Path(path.clone()),
            (None, Some(glob)) if !file.find.contains.is_empty() && glob_parts(glob).is_some() => {
                FileFind::Content {
                    glob: glob.clone(),
                    contains: file.find.contains.clone(),
                }
            }
            _ => return Err(bad(
                "files[0].find needs either path, or glob (one `*`, in its last part) and contains, or reachable_from and declares, or export and condition"
                    .into(),
            )),
        }};
    let driver = Driver::from_name(&parsed.verify.driver).ok_or_else(|| {
        bad(format!(
            "verify.driver {:?} is not plugin-api, stdio-bridge, gemini-cli or sdk-client",
            parsed.verify.driver
        ))
    })?;
    let verify_host_script = match &parsed.verify.host_script {
        None if driver == Driver::SdkClient => {
            return Err(bad(
                "verify.driver sdk-client needs verify.host_script".into()
            ))
        }
        None => None,
        Some(name) => Some(
            diff_name_to_text(name)
                .ok_or_else(|| bad(format!("verify.host_script {name} is missing")))?,
        ),
    };
    let mut verify_left_out = Vec::new();
    for (name, why) in &parsed.verify.left_out {
        let scenario = <ScenarioName as clap::ValueEnum>::from_str(name, false).map_err(|_| {
            bad(format!(
                "verify.left_out names {name:?}, which is no scenario"
            ))
        })?;
        if why.trim().is_empty() {
            return Err(bad(format!("verify.left_out {name:?} gives no reason")));
        }
        verify_left_out.push((scenario, forever(why.clone())));
    }
    let mut patches = Vec::new();
    for p in &parsed.patches {
        let diff = diff_name_to_text(&p.file)
            .ok_or_else(|| bad(format!("patch file {} is missing", p.file)))?;
        diffy::Patch::from_str(&diff).map_err(|e| Error::Registry {
            what: p.file.clone(),
            detail: e.to_string(),
        })?;
        if let Some(want) = &p.sha256 {
            let found = hex::encode(Sha256::digest(diff.as_bytes()));
            if !want.eq_ignore_ascii_case(&found) {
                return Err(bad(format!(
                    "patch file {} has sha256 {found}, the manifest says {want}",
                    p.file
                )));
            }
        }
        patches.push(PatchFamily {
            file: p.file.clone(),
            diff,
            requires: p.requires.clone(),
            refuses: p.refuses.clone(),
        });
    }
    let placeholder = parsed.placeholder.as_deref().unwrap_or_default();
    let anchors = if parsed.anchors.is_empty() {
        None
    } else {
        if !patches.is_empty() {
            return Err(bad("the manifest gives both patches and anchors".into()));
        }
        Some(
            Anchors::load(placeholder, &parsed.patch_marker, &parsed.anchors, |name| {
                diff_name_to_text(name)
            })
            .map_err(bad)?,
        )
    };
    if patches.is_empty() && anchors.is_none() {
        return Err(bad("the manifest names no patch".into()));
    }
    let mut earlier_anchors = Vec::new();
    for e in &parsed.earlier_anchors {
        if anchors.is_none() {
            return Err(bad(
                "the manifest gives earlier_anchors but no anchors".into()
            ));
        }
        let loaded = Anchors::load(placeholder, &parsed.patch_marker, &e.anchors, |name| {
            diff_name_to_text(name)
        })
        .map_err(|why| bad(format!("earlier_anchors revision {}: {why}", e.revision)))?;
        earlier_anchors.push(EarlierAnchors {
            revision: e.revision,
            anchors: loaded,
            falls_short: e.falls_short.clone(),
        });
    }
    let mut earlier = Vec::new();
    for e in &parsed.earlier_patches {
        let text = diff_name_to_text(&e.patch)
            .ok_or_else(|| bad(format!("patch file {} is missing", e.patch)))?;
        diffy::Patch::from_str(&text).map_err(|err| Error::Registry {
            what: e.patch.clone(),
            detail: err.to_string(),
        })?;
        // Its result is known: by the sha256 it gives the one original, or
        // by the outdated revisions that name it (one per release).
        let outdated = parsed.revisions.iter().any(|r| {
            r.kind == RevisionKind::Outdated
                && match &e.sha256 {
                    Some(h) => r.sha256.as_deref() == Some(h.as_str()),
                    None => r.patch.as_deref() == Some(e.patch.as_str()),
                }
        });
        if !outdated {
            return Err(bad(format!(
                "earlier patch {} ({}) has no outdated revision",
                e.patch,
                match &e.sha256 {
                    Some(h) => format!("sha256 {h}"),
                    None => "no revision names it as its patch".into(),
                }
            )));
        }
        earlier.push(EarlierPatch {
            revision: e.revision,
            file: e.patch.clone(),
            sha256: e.sha256.clone(),
            diff: text,
            falls_short: e.falls_short.clone(),
        });
    }
    for r in &parsed.revisions {
        let valid = match (&r.sha256, &r.sha256_prefix, &r.sha256_suffix) {
            (Some(h), None, None) => h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()),
            (None, Some(p), Some(s)) => !p.is_empty() && !s.is_empty(),
            _ => false,
        };
        if !valid {
            return Err(bad(format!(
                "revision {:?} needs either sha256 or sha256_prefix + sha256_suffix",
                r.versions
            )));
        }
    }
    // Each full-hash original names a diff and the patched revision it gives.
    let originals: Vec<&Revision> = parsed
        .revisions
        .iter()
        .filter(|r| r.kind == RevisionKind::Original && r.sha256.is_some())
        .collect();
    if originals.is_empty() {
        return Err(bad(
            "expected a full-hash original revision, found none".into()
        ));
    }
    for r in originals {
        let (patch, Some(patched)) = (&r.patch, &r.patched_sha256) else {
            return Err(bad(format!(
                "original revision {:?} needs patch and patched_sha256",
                r.versions
            )));
        };
        let patch = match (patch, &anchors) {
            (Some(patch), None) => patch,
            (None, Some(_)) => "",
            _ => {
                return Err(bad(format!(
                    "original revision {:?} needs patch and patched_sha256 (with anchors: patched_sha256 only)",
                    r.versions
                )))
            }
        };
        if anchors.is_none() && !patches.iter().any(|p| p.file == patch) {
            return Err(bad(format!(
                "original revision {:?} names patch {patch}, which the manifest does not list",
                r.versions
            )));
        }
        let has_patched = parsed.revisions.iter().any(|p| {
            p.kind == RevisionKind::Patched
                && p.sha256
                    .as_deref()
                    .is_some_and(|h| h.eq_ignore_ascii_case(patched))
        });
        if !has_patched {
            return Err(bad(format!(
                "original revision {:?} gives sha256 {patched}, which no patched revision has",
                r.versions
            )));
        }
    }
    let t = &parsed.texts;
    let texts = Texts {
        host: forever(t.host.clone()),
        reinstall_step: forever(format!("{}, then run `mcpatch apply`", t.reinstall)),
        reinstall: forever(t.reinstall.clone()),
        unsupported_step: forever(t.unsupported_step.clone()),
        restart_patched: forever(t.restart.replace("{state}", "patched")),
        restart_restored: forever(t.restart.replace("{state}", "restored")),
        restart_command: t.restart_command.clone().map(forever),
    };
    let file_label = match &find {
        FileFind::Path(p) => p.clone(),
        FileFind::Content { glob, .. } => glob.clone(),
        FileFind::Reachable { declares, .. } => format!("the file declaring `{declares}`"),
        FileFind::Export {
            export, condition, ..
        } => format!("the file package.json exports[{export:?}] names for `{condition}`"),
    };
    // What `mcpatch diff` shows with no install: the first diff, or each
    // anchor's text against its replacement.
    let diff = match &anchors {
        None => patches[0].diff.clone(),
        Some(a) => a.preview(),
    };
    Ok(PatchSpec {
        id: parsed.id,
        target: forever(parsed.target),
        package: parsed.package,
        find,
        file: file_label,
        exports: file.exports.clone(),
        description: parsed.description,
        diff,
        patches,
        supervisor_markers: parsed.markers.hook,
        upstream_fix_markers: parsed.markers.upstream_fix,
        patch_marker: parsed.patch_marker,
        revisions: parsed.revisions,
        earlier,
        installs: parsed.installs,
        driver,
        verify_command: parsed.verify.command,
        verify_env: parsed.verify.env,
        verify_host_script,
        verify_left_out,
        texts,
        anchors,
        earlier_anchors,
        role: None,
        companions: Vec::new(),
    })
}

/// Load a manifest: one spec, or, for a manifest listing `packages` (one
/// target over several packages, each with several files patched together),
/// one spec per package whose first file's spec holds the others as
/// companions. Each file is loaded as a one-file manifest of its own: its
/// `find`, its anchor set (`anchor_sets[anchors]`) and the revisions whose
/// `package` and `file` are its own.
pub fn load_all(
    manifest: &str,
    diff_name_to_text: impl Fn(&str) -> Option<String>,
) -> Result<Vec<PatchSpec>> {
    let value: serde_json::Value = serde_json::from_str(manifest).map_err(|e| Error::Registry {
        what: "manifest.json".into(),
        detail: e.to_string(),
    })?;
    let Some(packages) = value.get("packages") else {
        return Ok(vec![load(manifest, diff_name_to_text)?]);
    };
    let id = value
        .get("id")
        .and_then(|v| v.as_str())
        .unwrap_or("manifest.json");
    let bad = |detail: String| Error::Registry {
        what: id.to_string(),
        detail,
    };
    let packages: Vec<PackageEntry> =
        serde_json::from_value(packages.clone()).map_err(|e| bad(format!("packages: {e}")))?;
    if packages.is_empty() {
        return Err(bad("packages is empty".into()));
    }
    let sets = value.get("anchor_sets").cloned().unwrap_or_default();
    let revisions: Vec<serde_json::Value> = value
        .get("revisions")
        .and_then(|r| r.as_array())
        .cloned()
        .unwrap_or_default();
    let mut specs = Vec::new();
    for package in &packages {
        let mut files = Vec::new();
        for f in &package.files {
            let path = f.find.get("path").and_then(|p| p.as_str());
            if path.is_none() && f.find.get("export").is_none() {
                return Err(bad(format!(
                    "{} ({}): find needs a path, or export and condition",
                    package.package, f.role
                )));
            }
            if f.optional && files.is_empty() {
                return Err(bad(format!(
                    "{} ({}): the first file of a package cannot be optional",
                    package.package, f.role
                )));
            }
            let anchors = sets.get(&f.anchors).cloned().ok_or_else(|| {
                bad(format!(
                    "{} ({}) names anchor set {:?}, which anchor_sets does not have",
                    package.package, f.role, f.anchors
                ))
            })?;
            let own: Vec<serde_json::Value> = revisions
                .iter()
                .filter(|r| match path {
                    Some(path) => {
                        r.get("file").and_then(|v| v.as_str()) == Some(path)
                            && r.get("package").and_then(|v| v.as_str())
                                == Some(package.package.as_str())
                    }
                    // A file found through exports has no fixed path: its
                    // revisions are those of its build (role), of this
                    // package when they name one.
                    None => crate::exports::revision_of(r, &f.role, &package.package),
                })
                .cloned()
                .collect();
            let mut one = value.clone();
            let obj = one.as_object_mut().expect("a manifest is an object");
            obj.remove("packages");
            obj.remove("anchor_sets");
            obj.insert("package".into(), package.package.clone().into());
            obj.insert(
                "files".into(),
                serde_json::json!([{ "find": f.find, "exports": f.exports, "optional": f.optional }]),
            );
            obj.insert("anchors".into(), anchors);
            obj.insert("revisions".into(), own.into());
            obj.entry("patches")
                .or_insert_with(|| serde_json::json!([]));
            let text = serde_json::to_string(&one).expect("json");
            let mut spec = load(&text, &diff_name_to_text).map_err(|e| match e {
                Error::Registry { detail, .. } => {
                    bad(format!("{} ({}): {detail}", package.package, f.role))
                }
                e => e,
            })?;
            spec.role = Some(f.role.clone());
            files.push(spec);
        }
        let mut files = files.into_iter();
        let mut first = files
            .next()
            .ok_or_else(|| bad(format!("{} lists no files", package.package)))?;
        first.companions = files.collect();
        specs.push(first);
    }
    Ok(specs)
}

#[derive(Deserialize)]
struct PackageEntry {
    package: String,
    files: Vec<PackageFile>,
}

#[derive(Deserialize)]
struct PackageFile {
    role: String,
    find: serde_json::Value,
    anchors: String,
    #[serde(default = "default_exports")]
    exports: String,
    #[serde(default)]
    optional: bool,
}

/// A `find: {export, condition}` as a [`FileFind::Export`].
fn find_by_export(f: &FindEntry, optional: bool) -> std::result::Result<FileFind, String> {
    match (&f.export, &f.condition, &f.path, &f.glob, &f.reachable_from) {
        (Some(export), Some(condition), None, None, None)
            if f.contains.is_empty() && f.declares.is_none() && export.starts_with('.') =>
        {
            Ok(FileFind::Export {
                export: export.clone(),
                condition: condition.clone(),
                optional,
            })
        }
        _ => Err(
            "files[0].find with export needs export (a subpath such as \".\") and condition, and nothing else"
                .into(),
        ),
    }
}

fn default_exports() -> String {
    "StreamableHTTPClientTransport".into()
}

/// A glob's folder part and the text before and after its one `*`.
pub fn glob_parts(glob: &str) -> Option<(&str, &str, &str)> {
    let (dir, name) = match glob.rfind('/') {
        Some(i) => (&glob[..i], &glob[i + 1..]),
        None => ("", glob),
    };
    if dir.contains('*') || dir.split('/').any(|c| c == "..") || glob.starts_with('/') {
        return None;
    }
    let (before, after) = name.split_once('*')?;
    (!after.contains('*')).then_some((dir, before, after))
}

/// Every embedded target, loaded once.
pub fn all() -> Result<&'static [PatchSpec]> {
    static LOADED: OnceLock<std::result::Result<Vec<PatchSpec>, (String, String)>> =
        OnceLock::new();
    let loaded = LOADED.get_or_init(|| {
        EMBEDDED
            .iter()
            .map(|(folder, files)| {
                let text = |name: &str| {
                    files
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, t)| t.to_string())
                };
                let manifest = text("manifest.json").unwrap_or_default();
                load_all(&manifest, text).map_err(|e| (folder.to_string(), e.to_string()))
            })
            .collect::<std::result::Result<Vec<Vec<PatchSpec>>, _>>()
            .map(|v| v.into_iter().flatten().collect())
    });
    match loaded {
        Ok(targets) => Ok(targets),
        Err((folder, detail)) => Err(Error::Registry {
            what: format!("patches/{folder}"),
            detail: detail.clone(),
        }),
    }
}

/// The targets a command works on: all, or the one named with `--target`.
pub fn select(name: Option<&str>) -> Result<Vec<&'static PatchSpec>> {
    let targets = all()?;
    match name {
        None => Ok(targets.iter().collect()),
        Some(name) => match targets
            .iter()
            .filter(|t| t.target == name)
            .collect::<Vec<_>>()
        {
            found if !found.is_empty() => Ok(found),
            _ => Err(Error::UnknownTarget {
                name: name.to_string(),
                known: {
                    let mut known: Vec<&str> = targets.iter().map(|t| t.target).collect();
                    known.dedup();
                    known.join(", ")
                },
            }),
        },
    }
}

/// The target named `name` among `targets` (a name a search of them gave);
/// for a target over several packages, the spec of `package`.
pub fn find<'a>(targets: &[&'a PatchSpec], name: &str, package: &str) -> &'a PatchSpec {
    targets
        .iter()
        .find(|t| t.target == name && t.package == package)
        .or_else(|| targets.iter().find(|t| t.target == name))
        .expect("installs are found only for the targets searched for")
}

/// Names in words: "a", "a or b", "a, b or c" (repeats said once).
pub fn said<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut list: Vec<&str> = Vec::new();
    for n in names {
        if !list.contains(&n) {
            list.push(n);
        }
    }
    match list.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The target embedded from `patches/<folder>`.
fn from_folder(folder: &str) -> Result<PatchSpec> {
    let at = EMBEDDED
        .iter()
        .position(|(f, _)| *f == folder)
        .expect("an embedded folder");
    Ok(all()?[at].clone())
}

/// The session-loss patch for `@deepseek-ai/dsh-mcp-client` (the first target).
pub fn session_loss() -> Result<PatchSpec> {
    from_folder(EMBEDDED[0].0)
}

impl PatchSpec {
    fn full_hash_of(&self, kind: RevisionKind) -> &str {
        self.revisions
            .iter()
            .find(|r| r.kind == kind && r.sha256.is_some())
            .and_then(|r| r.sha256.as_deref())
            .expect("load() checked a full-hash original and its patched revision")
    }

    /// sha256 of the first revision a diff was cut against.
    pub fn original_sha256(&self) -> &str {
        self.full_hash_of(RevisionKind::Original)
    }

    /// sha256 of the first patched revision.
    pub fn patched_sha256(&self) -> &str {
        self.full_hash_of(RevisionKind::Patched)
    }

    /// The known revision a hash is, if any.
    pub fn revision(&self, sha256: &str) -> Option<&Revision> {
        self.revisions.iter().find(|r| r.matches(sha256))
    }

    /// Whether a hash is a known original.
    pub fn is_original(&self, sha256: &str) -> bool {
        self.revision(sha256)
            .is_some_and(|r| r.kind == RevisionKind::Original && r.sha256.is_some())
    }

    /// Whether a hash is a known patched revision.
    pub fn is_patched(&self, sha256: &str) -> bool {
        self.revision(sha256)
            .is_some_and(|r| r.kind == RevisionKind::Patched)
    }

    /// The sha256 the patch gives a known original.
    pub fn patched_for(&self, original: &str) -> Option<&str> {
        self.revision(original)
            .filter(|r| r.kind == RevisionKind::Original && r.sha256.is_some())
            .and_then(|r| r.patched_sha256.as_deref())
    }

    /// The first diff's parsed form.
    pub fn parsed_diff(&self) -> diffy::Patch<'_, str> {
        self.patches[0].parsed()
    }

    /// The diffs of the code family `text` is, in order.
    pub fn families_of<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a PatchFamily> {
        self.patches.iter().filter(move |p| p.family_of(text))
    }

    /// The first diff that applies to `text`, all hunks.
    pub fn patch_for(&self, text: &str) -> Option<&PatchFamily> {
        self.patches
            .iter()
            .find(|p| p.family_of(text) && diffy::apply(text, &p.parsed()).is_ok())
    }

    /// The earlier patch revision whose result has this hash, if any: the
    /// one whose own `sha256` it is, or the one the `outdated` revision of
    /// this hash names as its `patch`.
    pub fn earlier_with_hash(&self, sha256: &str) -> Option<&EarlierPatch> {
        let own = self.earlier.iter().find(|e| {
            e.sha256
                .as_deref()
                .is_some_and(|h| h.eq_ignore_ascii_case(sha256))
        });
        own.or_else(|| {
            let named = self
                .revision(sha256)
                .filter(|r| r.kind == RevisionKind::Outdated)?
                .patch
                .as_deref()?;
            self.earlier.iter().find(|e| e.file == named)
        })
    }
}

impl EarlierPatch {
    /// The parsed diff.
    pub fn parsed_diff(&self) -> diffy::Patch<'_, str> {
        diffy::Patch::from_str(&self.diff).expect("load() parsed this diff")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_registry_loads() {
        let spec = session_loss().unwrap();
        assert_eq!(spec.package, "@deepseek-ai/dsh-mcp-client");
        assert_eq!(
            spec.original_sha256(),
            "b126dcec8a0425a33199c5ddcd8638269a560c0b7328cd6306858c1969887d56"
        );
        let names: Vec<&str> = all().unwrap().iter().map(|t| t.target).collect();
        // mcp-sdk is one target over two packages: a spec each.
        assert_eq!(
            names,
            [
                "dsh-mcp-client",
                "mcp-remote",
                "gemini-cli",
                "mcp-sdk",
                "mcp-sdk",
                "ai-sdk-mcp"
            ]
        );
    }

    /// Whether a folder under `patches/` is a target: its manifest is in
    /// format 2 (a folder in another format is groundwork, not loaded).
    #[test]
    fn an_unknown_target_is_named_with_the_known_ones() {
        let err = select(Some("nope")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown target nope; mcpatch knows dsh-mcp-client, mcp-remote, gemini-cli, mcp-sdk, ai-sdk-mcp\nhelp: pass one of those to --target, or leave --target out for all of them"
        );
        assert_eq!(select(Some("mcp-remote")).unwrap()[0].package, "mcp-remote");
        assert_eq!(select(None).unwrap().len(), 6);
    }

    #[test]
    fn mcp_sdk_is_one_target_over_two_packages_each_with_its_esm_and_cjs_files() {
        let specs = select(Some("mcp-sdk")).unwrap();
        type Shape<'a> = (
            &'a str,
            Option<&'a str>,
            FileFind,
            Vec<(Option<&'a str>, FileFind)>,
        );
        let shape: Vec<Shape> = specs
            .iter()
            .map(|s| {
                (
                    s.package.as_str(),
                    s.role.as_deref(),
                    s.find.clone(),
                    s.companions
                        .iter()
                        .map(|c| (c.role.as_deref(), c.find.clone()))
                        .collect(),
                )
            })
            .collect();
        let path = |p: &str| FileFind::Path(p.into());
        assert_eq!(
            shape,
            vec![
                (
                    "@modelcontextprotocol/sdk",
                    Some("esm"),
                    path("dist/esm/client/streamableHttp.js"),
                    vec![(Some("cjs"), path("dist/cjs/client/streamableHttp.js"))]
                ),
                (
                    "@modelcontextprotocol/client",
                    Some("esm"),
                    path("dist/index.mjs"),
                    vec![(Some("cjs"), path("dist/index.cjs"))]
                ),
            ]
        );
        for s in &specs {
            assert_eq!(s.driver, Driver::SdkClient);
            assert!(s.installs.project);
            assert!(s.verify_host_script.is_some());
            // Each file keeps only its own revisions.
            let own: Vec<&Option<String>> = s.revisions.iter().map(|r| &r.sha256).collect();
            let other: Vec<&Option<String>> = s.companions[0]
                .revisions
                .iter()
                .map(|r| &r.sha256)
                .collect();
            assert!(!own.is_empty() && !other.is_empty());
            assert!(own.iter().all(|h| !other.contains(h)), "{}", s.package);
        }
        assert_eq!(
            find(&specs, "mcp-sdk", "@modelcontextprotocol/client").package,
            "@modelcontextprotocol/client"
        );
    }

    #[test]
    fn gemini_cli_is_found_by_reachability_and_patched_by_content_anchors() {
        let g = select(Some("gemini-cli")).unwrap()[0];
        assert_eq!(
            g.find,
            FileFind::Reachable {
                from: "bundle/gemini.js".into(),
                declares: "var McpClient = class {".into()
            }
        );
        let names: Vec<&str> = g
            .anchors
            .as_ref()
            .unwrap()
            .anchors
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, ["mcp-client-fields", "callable-call-tool"]);
        assert!(g.patches.is_empty());
        assert!(g
            .diff
            .starts_with("# anchor `mcp-client-fields`\n--- original\n"));
        assert_eq!(g.driver, Driver::GeminiCli);
    }

    #[test]
    fn content_found_targets_pick_the_diff_of_their_code_family() {
        let remote = select(Some("mcp-remote")).unwrap()[0];
        assert_eq!(
            remote.find,
            FileFind::Content {
                glob: "dist/chunk-*.js".into(),
                contains: vec![
                    "function mcpProxy(".into(),
                    "transportToServer.onerror = onServerError;".into()
                ]
            }
        );
        let reinit = "function reinitializeSession()\nlet reinitInFlight = null;\n(this._fetch ?? fetch)(this._url, init)";
        let names: Vec<&str> = remote
            .families_of(reinit)
            .map(|p| p.file.as_str())
            .collect();
        assert_eq!(names, ["session-loss-reinit.patch"]);
        let forward =
            "Failed to forward message to remote server\n(this._fetch ?? fetch)(this._url, init)";
        let names: Vec<&str> = remote
            .families_of(forward)
            .map(|p| p.file.as_str())
            .collect();
        assert_eq!(names, ["session-loss-forward.patch"]);
    }

    #[test]
    fn abbreviated_hash_matches_only_full_hashes_with_that_prefix_and_suffix() {
        let spec = session_loss().unwrap();
        let full = format!("758d8fc4{}f5dd", "0".repeat(52));
        assert_eq!(
            spec.revision(&full).unwrap().kind,
            RevisionKind::ReportedAffected
        );
        let wrong_suffix = format!("758d8fc4{}f5de", "0".repeat(52));
        assert!(spec.revision(&wrong_suffix).is_none());
        assert!(spec.revision("758d8fc4f5dd").is_none());
    }

    fn manifest_with(revisions: &str) -> String {
        format!(
            r#"{{"format":2,"id":"x","target":"x","package":"p","description":"",
            "installs":{{}},"files":[{{"find":{{"path":"f"}},"exports":"apply"}}],
            "patch_marker":"m","markers":{{"hook":[],"upstream_fix":[]}},
            "patches":[{{"file":"d"}}],"verify":{{"driver":"plugin-api"}},
            "texts":{{"host":"h","reinstall":"r","unsupported_step":"u","restart":"s"}},
            "revisions":[{revisions}]}}"#
        )
    }

    #[test]
    fn mcp_remote_revision_1_of_each_release_is_the_earlier_diff_its_outdated_revision_names() {
        let remote = select(Some("mcp-remote")).unwrap()[0];
        let outdated: Vec<&Revision> = remote
            .revisions
            .iter()
            .filter(|r| r.kind == RevisionKind::Outdated)
            .collect();
        assert_eq!(outdated.len(), 56);
        for r in outdated {
            let sha = r.sha256.as_deref().unwrap();
            let earlier = remote.earlier_with_hash(sha).unwrap();
            assert_eq!(
                (earlier.revision, Some(earlier.file.as_str())),
                (1, r.patch.as_deref())
            );
            assert!(remote.is_original(r.original_sha256.as_deref().unwrap()));
        }
        // A hash no revision has is no earlier revision's.
        assert!(remote.earlier_with_hash(&"0".repeat(64)).is_none());
    }

    #[test]
    fn verify_left_out_names_scenarios_with_their_reasons_and_rejects_an_unknown_name() {
        let diff = session_loss().unwrap().diff;
        let with = |left_out: &str| {
            manifest_with(concat!(
                r#"{"sha256":"b126dcec8a0425a33199c5ddcd8638269a560c0b7328cd6306858c1969887d56","versions":["1"],"kind":"original","note":"","patch":"d","patched_sha256":"cc17424de1501ac8b21f18d16147887b71b9d7e6b19e2e5089c15e92cc718b19"},"#,
                r#"{"sha256":"cc17424de1501ac8b21f18d16147887b71b9d7e6b19e2e5089c15e92cc718b19","versions":["1"],"kind":"patched","note":""}"#
            ))
            .replace(
                r#""verify":{"driver":"plugin-api"}"#,
                &format!(r#""verify":{{"driver":"plugin-api","left_out":{left_out}}}"#),
            )
        };
        let spec = load(&with(r#"{"get-stream-loss":"why not"}"#), |_| {
            Some(diff.clone())
        })
        .unwrap();
        assert_eq!(
            spec.verify_left_out,
            [(ScenarioName::GetStreamLoss, "why not")]
        );
        let err = load(&with(r#"{"get-stream":"why not"}"#), |_| Some(diff.clone())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the embedded patch registry is invalid (x): verify.left_out names \"get-stream\", which is no scenario\nhelp: this is a bug in this mcpatch build; rebuild it from a clean checkout"
        );
        let err = load(&with(r#"{"get-stream-loss":" "}"#), |_| Some(diff.clone())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the embedded patch registry is invalid (x): verify.left_out \"get-stream-loss\" gives no reason\nhelp: this is a bug in this mcpatch build; rebuild it from a clean checkout"
        );
    }

    #[test]
    fn manifest_without_the_patched_revision_of_an_original_is_rejected() {
        let diff = session_loss().unwrap().diff;
        let manifest = manifest_with(
            r#"{"sha256":"b126dcec8a0425a33199c5ddcd8638269a560c0b7328cd6306858c1969887d56","versions":["1"],"kind":"original","note":"","patch":"d","patched_sha256":"cc17424de1501ac8b21f18d16147887b71b9d7e6b19e2e5089c15e92cc718b19"}"#,
        );
        let err = load(&manifest, |_| Some(diff.clone())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the embedded patch registry is invalid (x): original revision [\"1\"] gives sha256 cc17424de1501ac8b21f18d16147887b71b9d7e6b19e2e5089c15e92cc718b19, which no patched revision has\nhelp: this is a bug in this mcpatch build; rebuild it from a clean checkout"
        );
    }
}
