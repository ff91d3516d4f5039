//! The patch registry: the manifests and diffs under `patches/`, embedded in
//! the binary at build time so an installed mcpatch is self-contained.

use serde::Deserialize;

use crate::error::{Error, Result};

/// One patch as its folder under `patches/` describes it.
#[derive(Debug, Clone)]
pub struct PatchSpec {
    pub id: String,
    pub package: String,
    pub file: String,
    pub description: String,
    /// The unified diff against the `original` revision.
    pub diff: String,
    /// Substrings that together show the reconnect supervisor the patch hooks into.
    pub supervisor_markers: Vec<String>,
    /// Substrings that show the file already routes `onerror` into the supervisor.
    pub upstream_fix_markers: Vec<String>,
    /// A string the patch adds: its presence in an unknown file means another mcpatch revision.
    pub patch_marker: String,
    pub revisions: Vec<Revision>,
    /// Earlier revisions of this patch, oldest first: a file carrying one is
    /// upgraded by reversing its diff and applying the current one.
    pub earlier: Vec<EarlierPatch>,
}

/// An earlier revision of the patch, kept so `apply` can take it back out.
#[derive(Debug, Clone)]
pub struct EarlierPatch {
    pub revision: u32,
    /// sha256 of its diff applied to the original.
    pub sha256: String,
    /// Its unified diff against the original.
    pub diff: String,
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevisionKind {
    /// The unpatched revision the diff was cut against.
    Original,
    /// The current diff applied to `Original`.
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
    id: String,
    package: String,
    file: String,
    patch: String,
    description: String,
    supervisor_markers: Vec<String>,
    upstream_fix_markers: Vec<String>,
    patch_marker: String,
    revisions: Vec<Revision>,
    #[serde(default)]
    earlier_patches: Vec<EarlierPatchFile>,
}

#[derive(Deserialize)]
struct EarlierPatchFile {
    revision: u32,
    patch: String,
    sha256: String,
}

/// The session-loss patch's folder, embedded.
const SESSION_LOSS_MANIFEST: &str =
    include_str!("../patches/dsh-mcp-client-session-loss/manifest.json");
const SESSION_LOSS_DIFF: &str =
    include_str!("../patches/dsh-mcp-client-session-loss/session-loss.patch");
const SESSION_LOSS_R1_DIFF: &str =
    include_str!("../patches/dsh-mcp-client-session-loss/session-loss-r1.patch");

/// Parse a manifest and its diff into a [`PatchSpec`], checking it is usable.
pub fn load(
    manifest: &str,
    diff_name_to_text: impl Fn(&str) -> Option<String>,
) -> Result<PatchSpec> {
    let parsed: ManifestFile = serde_json::from_str(manifest).map_err(|e| Error::Registry {
        what: "manifest.json".into(),
        detail: e.to_string(),
    })?;
    let diff = diff_name_to_text(&parsed.patch).ok_or_else(|| Error::Registry {
        what: parsed.id.clone(),
        detail: format!("patch file {} is missing", parsed.patch),
    })?;
    diffy::Patch::from_str(&diff).map_err(|e| Error::Registry {
        what: parsed.patch.clone(),
        detail: e.to_string(),
    })?;
    let mut earlier = Vec::new();
    for e in &parsed.earlier_patches {
        let text = diff_name_to_text(&e.patch).ok_or_else(|| Error::Registry {
            what: parsed.id.clone(),
            detail: format!("patch file {} is missing", e.patch),
        })?;
        diffy::Patch::from_str(&text).map_err(|err| Error::Registry {
            what: e.patch.clone(),
            detail: err.to_string(),
        })?;
        let outdated = parsed
            .revisions
            .iter()
            .any(|r| r.kind == RevisionKind::Outdated && r.sha256.as_deref() == Some(&e.sha256));
        if !outdated {
            return Err(Error::Registry {
                what: parsed.id.clone(),
                detail: format!(
                    "earlier patch {} (sha256 {}) has no outdated revision",
                    e.patch, e.sha256
                ),
            });
        }
        earlier.push(EarlierPatch {
            revision: e.revision,
            sha256: e.sha256.clone(),
            diff: text,
        });
    }
    for kind in [RevisionKind::Original, RevisionKind::Patched] {
        let count = parsed
            .revisions
            .iter()
            .filter(|r| r.kind == kind && r.sha256.is_some())
            .count();
        if count != 1 {
            return Err(Error::Registry {
                what: parsed.id.clone(),
                detail: format!("expected exactly one full-hash {kind:?} revision, found {count}"),
            });
        }
    }
    for r in &parsed.revisions {
        let valid = match (&r.sha256, &r.sha256_prefix, &r.sha256_suffix) {
            (Some(h), None, None) => h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()),
            (None, Some(p), Some(s)) => !p.is_empty() && !s.is_empty(),
            _ => false,
        };
        if !valid {
            return Err(Error::Registry {
                what: parsed.id.clone(),
                detail: format!(
                    "revision {:?} needs either sha256 or sha256_prefix + sha256_suffix",
                    r.versions
                ),
            });
        }
    }
    Ok(PatchSpec {
        id: parsed.id,
        package: parsed.package,
        file: parsed.file,
        description: parsed.description,
        diff,
        supervisor_markers: parsed.supervisor_markers,
        upstream_fix_markers: parsed.upstream_fix_markers,
        patch_marker: parsed.patch_marker,
        revisions: parsed.revisions,
        earlier,
    })
}

/// The session-loss patch for `@deepseek-ai/dsh-mcp-client`.
pub fn session_loss() -> Result<PatchSpec> {
    load(SESSION_LOSS_MANIFEST, |name| match name {
        "session-loss.patch" => Some(SESSION_LOSS_DIFF.to_string()),
        "session-loss-r1.patch" => Some(SESSION_LOSS_R1_DIFF.to_string()),
        _ => None,
    })
}

impl PatchSpec {
    fn full_hash_of(&self, kind: RevisionKind) -> &str {
        self.revisions
            .iter()
            .find(|r| r.kind == kind && r.sha256.is_some())
            .and_then(|r| r.sha256.as_deref())
            .expect("load() checked one full-hash revision of each kind")
    }

    /// sha256 of the revision the diff was cut against.
    pub fn original_sha256(&self) -> &str {
        self.full_hash_of(RevisionKind::Original)
    }

    /// sha256 of the diff applied to the original.
    pub fn patched_sha256(&self) -> &str {
        self.full_hash_of(RevisionKind::Patched)
    }

    /// The known revision a hash is, if any.
    pub fn revision(&self, sha256: &str) -> Option<&Revision> {
        self.revisions.iter().find(|r| r.matches(sha256))
    }

    /// The parsed diff.
    pub fn parsed_diff(&self) -> diffy::Patch<'_, str> {
        diffy::Patch::from_str(&self.diff).expect("load() parsed this diff")
    }

    /// The earlier patch revision whose result has this hash, if any.
    pub fn earlier_with_hash(&self, sha256: &str) -> Option<&EarlierPatch> {
        self.earlier
            .iter()
            .find(|e| e.sha256.eq_ignore_ascii_case(sha256))
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

    #[test]
    fn manifest_without_a_patched_revision_is_rejected() {
        let manifest = r#"{"id":"x","package":"p","file":"f","patch":"d","description":"",
            "supervisor_markers":[],"upstream_fix_markers":[],"patch_marker":"m",
            "revisions":[{"sha256":"b126dcec8a0425a33199c5ddcd8638269a560c0b7328cd6306858c1969887d56","versions":[],"kind":"original","note":""}]}"#;
        let err = load(manifest, |_| Some(SESSION_LOSS_DIFF.into())).unwrap_err();
        assert!(
            err.to_string()
                .contains("expected exactly one full-hash Patched revision, found 0"),
            "{err}"
        );
    }
}
