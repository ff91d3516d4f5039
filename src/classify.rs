//! Decides what one installed copy is (affected, patched, upstream-fixed,
//! modified, unsupported) from its sha256 and, for unknown hashes, its code.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Result;
use crate::identity;
use crate::locate::Located;
use crate::path_json;
use crate::registry::{PatchSpec, RevisionKind};

/// What an install is, as far as the patch is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// The known original: the patch applies and fixes it.
    Affected,
    /// The known patched revision (the current patch revision).
    Patched,
    /// Patched by an earlier mcpatch revision: `apply` upgrades it.
    Outdated,
    /// Not a known hash, but it already routes `onerror` into the supervisor.
    UpstreamFixed,
    /// Not a known hash, and the supervisor the patch hooks into is present.
    Modified,
    /// No reconnect supervisor: the patch cannot help.
    Unsupported,
}

impl State {
    /// Every state, in the order `status` counts them.
    pub const ALL: [State; 6] = [
        State::Affected,
        State::Patched,
        State::Outdated,
        State::UpstreamFixed,
        State::Modified,
        State::Unsupported,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Affected => "affected",
            State::Patched => "patched",
            State::Outdated => "outdated",
            State::UpstreamFixed => "upstream-fixed",
            State::Modified => "modified",
            State::Unsupported => "unsupported",
        }
    }

    /// What the user should do next with a file of `spec` in this state.
    pub fn next_step(self, spec: &PatchSpec) -> &'static str {
        match self {
            State::Affected => "run `mcpatch apply`",
            State::Patched => "none (`mcpatch verify` to check, `mcpatch revert` to undo)",
            State::Outdated => "run `mcpatch apply` to upgrade to the current patch revision",
            State::UpstreamFixed => "none: this revision already recovers from session loss",
            State::Modified => NEXT_REVIEW_AND_PATCH,
            State::Unsupported => spec.texts.unsupported_step,
        }
    }
}

/// One classified install, as `status --json` reports it (paths as
/// [`crate::path_json`] writes them).
#[derive(Debug, Clone, Serialize)]
pub struct Install {
    /// The target it is an install of (`--target NAME`).
    pub target: &'static str,
    /// The package folder.
    #[serde(serialize_with = "path_json::serialize")]
    pub path: PathBuf,
    /// The classified file (`<path>/lib/index.js`, or the file found by content).
    #[serde(serialize_with = "path_json::serialize")]
    pub file: PathBuf,
    /// `version` from the package's package.json, if readable.
    pub version: Option<String>,
    pub sha256: String,
    pub state: State,
    /// Which known revision the hash is: original, patched, outdated, unsupported, reported-affected; null if unknown.
    pub revision: Option<&'static str>,
    /// Link count of the file; above 1 it is a shared store copy that is never written through.
    pub hard_links: u64,
    /// Other package folders whose file is this same file.
    #[serde(serialize_with = "path_json::serialize_all")]
    pub same_file_as: Vec<PathBuf>,
    pub found_via: Vec<String>,
    pub next_step: &'static str,
    /// Extra words on the revision, if any.
    pub note: Option<String>,
    /// A known defect that keeps the DSH host around this install from
    /// starting at all, whatever the patch (set by `status`); left out of the
    /// JSON when none is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_defect: Option<crate::host_check::HostDefect>,
    /// For a file found by content and not found: why (the install is
    /// unsupported, and nothing reads `file`).
    #[serde(skip)]
    pub unfound: Option<String>,
    /// The npm package it is (for a target over several packages, which one).
    #[serde(skip)]
    pub package: String,
    /// For an install of several files patched together (mcp-sdk): the build
    /// `file` is (`esm`); the others are in `companions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The other files of this install, patched and reverted with `file` as one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub companions: Vec<Companion>,
    /// The packages that pulled this copy in (as `npm ls` shows), for targets
    /// found in projects; left out when none is known.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<String>,
}

/// One more file of an install, classified on its own.
#[derive(Debug, Clone, Serialize)]
pub struct Companion {
    pub role: String,
    #[serde(serialize_with = "path_json::serialize")]
    pub file: PathBuf,
    pub sha256: String,
    pub state: State,
    pub revision: Option<&'static str>,
    pub note: Option<String>,
}

impl Install {
    /// Each companion file of this install with the spec (of `spec`'s
    /// companions, by build role) that patches it.
    pub fn companions_with<'a>(
        &'a self,
        spec: &'a PatchSpec,
    ) -> impl Iterator<Item = (&'a Companion, &'a PatchSpec)> {
        self.companions.iter().filter_map(move |c| {
            spec.companions
                .iter()
                .find(|s| s.role.as_deref() == Some(c.role.as_str()))
                .map(|s| (c, s))
        })
    }
}

/// The note on a release mcpatch has no record of that the anchors fit.
pub const UNRECORDED_FITS: &str = "a release mcpatch has no record of; the patch's content anchors fit it, and `mcpatch apply` verifies the patched copy before writing it";

/// Read and hash a file (a regular file, at most
/// [`identity::MAX_FILE_BYTES`]), naming it on failure.
pub fn hash_file(path: &Path) -> Result<(Vec<u8>, String)> {
    let snapshot = identity::read(path)?;
    Ok((snapshot.bytes, snapshot.sha256))
}

/// What `status` says to do for a modified file the patch fits (it applies).
pub const NEXT_REVIEW_AND_PATCH: &str =
    "review with `mcpatch diff`, then `mcpatch apply --yes` to patch anyway";
/// What `status` says to do for the current patch on a locally modified file:
/// its backup holds no known original, so revert needs `--yes`.
pub const NEXT_PATCHED_ON_MODIFIED: &str =
    "none (`mcpatch verify` to check, `mcpatch revert --yes` to undo)";
/// What `status` says to do for a modified file the patch does not fit when
/// a backup of it holds a known original (a patched file edited by hand).
pub const NEXT_REVERT_TO_ORIGINAL: &str =
    "run `mcpatch revert --yes` to restore the original its backup holds (dropping the edits), then `mcpatch apply`";
/// What `status` says to do for a patched file no backup under `$DSH_HOME` can undo.
pub const NEXT_PATCHED_NO_BACKUP: &str =
    "none (`mcpatch verify` to check; mcpatch holds no backup of it to revert to)";
/// What `status` says to do for an earlier patch revision on a locally modified file.
pub const NEXT_UPGRADE_MODIFIED: &str =
    "run `mcpatch apply --yes` to upgrade to the current patch revision";

/// What one file is: its state, the known revision its hash is, more words on
/// it, and the one next step that works for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    pub state: State,
    pub revision: Option<&'static str>,
    pub note: Option<String>,
    pub next_step: &'static str,
}

/// `text` without the hunks of `patch`, if it carries every one of them: the
/// patch reversed applies (all hunks or none), and applying the patch to what
/// that gives yields `text` again, byte for byte. The base may be any file the
/// hunks fit, not only the revision the patch was cut against.
pub fn without_patch(text: &str, patch: &diffy::Patch<'_, str>) -> Option<String> {
    let base = diffy::apply(text, &patch.reverse()).ok()?;
    (diffy::apply(&base, patch).ok()? == text).then_some(base)
}

/// Classify file contents against the patch's known revisions and markers.
pub fn classify_bytes(
    spec: &PatchSpec,
    bytes: &[u8],
    sha256: &str,
) -> (State, Option<&'static str>, Option<String>) {
    let a = assess(spec, bytes, sha256);
    (a.state, a.revision, a.note)
}

/// Classify file contents, with the next step that works for this file: a
/// file that already carries the current patch's hunks on a base mcpatch does
/// not know is `patched`, one that carries an earlier revision's is
/// `outdated` when the current revision fits its base, and a file the patch
/// does not fit is never told to run a command that would fail.
pub fn assess(spec: &PatchSpec, bytes: &[u8], sha256: &str) -> Assessment {
    let of = |state: State, revision, note: Option<String>| Assessment {
        state,
        revision,
        note,
        next_step: state.next_step(spec),
    };
    if let Some(rev) = spec.revision(sha256) {
        let (state, label) = match rev.kind {
            RevisionKind::Original => (State::Affected, "original"),
            RevisionKind::Patched => (State::Patched, "patched"),
            RevisionKind::Outdated => (State::Outdated, "outdated"),
            RevisionKind::Unsupported => (State::Unsupported, "unsupported"),
            // Known only by an abbreviated hash: never claim more than "modified".
            RevisionKind::ReportedAffected => (State::Modified, "reported-affected"),
        };
        let mut a = of(state, Some(label), Some(rev.note.clone()));
        if state == State::Modified && !patch_fits(spec, &identity::text_of(bytes)) {
            a.next_step = spec.texts.reinstall_step;
        }
        return a;
    }
    let text = identity::text_of(bytes);
    if let Some(anchors) = &spec.anchors {
        // Anchors are put into text: a file that is not UTF-8 would be
        // matched on its lossy decoding, which is not what apply writes.
        if let Err(e) = std::str::from_utf8(bytes) {
            return Assessment {
                next_step: spec.texts.reinstall_step,
                ..of(
                    State::Modified,
                    None,
                    Some(format!(
                        "unknown revision; it is not UTF-8 text (byte {} is not), so the patch's content anchors cannot be put in",
                        e.valid_up_to()
                    )),
                )
            };
        }
        let earlier = || {
            spec.earlier_anchors
                .iter()
                .rev()
                .find(|e| e.anchors.is_patched(&text))
        };
        return if anchors.is_patched(&text) {
            of(
                State::Patched,
                None,
                Some(
                    "carries the mcpatch patch marker on a revision mcpatch has no record of"
                        .into(),
                ),
            )
        } else if let Some(e) = earlier() {
            of(
                State::Outdated,
                None,
                Some(format!(
                    "patched by an earlier mcpatch revision ({}) on a revision mcpatch has no record of{}",
                    e.revision,
                    e.falls_short
                        .as_deref()
                        .map(|f| format!(": {f}"))
                        .unwrap_or_default()
                )),
            )
        } else {
            match anchors.check(&text) {
                // Unmarked and every anchor fits exactly once: pristine code the
                // patch was written for; apply proves it before writing.
                Ok(()) => of(State::Affected, None, Some(UNRECORDED_FITS.into())),
                Err(refused) => Assessment {
                    next_step: spec.texts.reinstall_step,
                    ..of(
                        State::Modified,
                        None,
                        Some(format!(
                            "unknown revision; the patch's content anchors do not fit it ({refused})"
                        )),
                    )
                },
            }
        };
    }
    let has_all = |markers: &[String]| {
        !markers.is_empty() && markers.iter().all(|m| text.contains(m.as_str()))
    };
    if !has_all(&spec.supervisor_markers) {
        return of(
            State::Unsupported,
            None,
            Some("no reconnect supervisor found in this file: the patch cannot help it".into()),
        );
    }
    if text.contains(spec.patch_marker.as_str()) {
        return assess_carrying_patch(spec, &text);
    }
    if has_all(&spec.upstream_fix_markers) {
        return of(State::UpstreamFixed, None, None);
    }
    if patch_fits(spec, &text) {
        return of(
            State::Modified,
            None,
            Some("unknown revision with the reconnect supervisor present".into()),
        );
    }
    Assessment {
        next_step: spec.texts.reinstall_step,
        ..of(
            State::Modified,
            None,
            Some("unknown revision with the reconnect supervisor present; the patch does not fit it (its context lines are not all in the file)".into()),
        )
    }
}

/// Whether one of the current diffs applies to `text`, all hunks.
fn patch_fits(spec: &PatchSpec, text: &str) -> bool {
    match &spec.anchors {
        Some(anchors) => anchors.check(text).is_ok(),
        None => spec.patch_for(text).is_some(),
    }
}

/// `text` without the hunks of whichever current diff it carries whole.
fn without_current_patch(spec: &PatchSpec, text: &str) -> Option<String> {
    spec.patches
        .iter()
        .find_map(|p| without_patch(text, &p.parsed()))
}

/// A file of an unknown hash that names the mcpatch patch: which revision's
/// hunks it carries, on a base mcpatch does not know.
fn assess_carrying_patch(spec: &PatchSpec, text: &str) -> Assessment {
    if without_current_patch(spec, text).is_some() {
        return Assessment {
            state: State::Patched,
            revision: None,
            note: Some("carries the current patch revision, on a locally modified file".into()),
            next_step: NEXT_PATCHED_ON_MODIFIED,
        };
    }
    for earlier in spec.earlier.iter().rev() {
        let Some(base) = without_patch(text, &earlier.parsed_diff()) else {
            continue;
        };
        let r = earlier.revision;
        return if patch_fits(spec, &base) {
            Assessment {
                state: State::Outdated,
                revision: None,
                note: Some(format!(
                    "carries patch revision {r}, on a locally modified file: {}",
                    earlier
                        .falls_short
                        .as_deref()
                        .unwrap_or("it lacks what the current revision fixes")
                )),
                next_step: NEXT_UPGRADE_MODIFIED,
            }
        } else {
            Assessment {
                state: State::Modified,
                revision: None,
                note: Some(format!(
                    "carries patch revision {r}, on a locally modified file the current revision does not fit"
                )),
                next_step: spec.texts.reinstall_step,
            }
        };
    }
    Assessment {
        state: State::Modified,
        revision: None,
        note: Some(
            "carries the mcpatch patch, edited since: mcpatch cannot take it out cleanly".into(),
        ),
        next_step: spec.texts.reinstall_step,
    }
}

/// Read, hash and classify one located install (one whose file was not
/// found is unsupported, saying why).
pub fn classify(spec: &PatchSpec, located: &Located) -> Result<Install> {
    classify_with(spec, located, None)
}

/// [`classify`] for a plain `status`: a file whose sha256 `cache` remembers
/// (its stamp unchanged) is not read when that sha256 alone settles its state
/// (a revision mcpatch recorded); a file read is remembered.
pub fn classify_remembering(
    spec: &PatchSpec,
    located: &Located,
    cache: &mut crate::status_cache::StatusCache,
) -> Result<Install> {
    classify_with(spec, located, Some(cache))
}

/// The file's bytes and sha256: from `cache` (no bytes) when its sha256 is
/// a revision that settles the state by itself, else read (and remembered).
fn read_or_remembered(
    spec: &PatchSpec,
    file: &Path,
    cache: Option<&mut crate::status_cache::StatusCache>,
) -> Result<(Vec<u8>, String)> {
    let Some(cache) = cache else {
        return hash_file(file);
    };
    let settles = |sha: &String| {
        spec.revision(sha)
            .is_some_and(|r| r.kind != RevisionKind::ReportedAffected)
    };
    if let Some(sha) = cache.sha256(file).filter(settles) {
        return Ok((Vec::new(), sha));
    }
    let (bytes, meta) = identity::read_capped(file, identity::MAX_FILE_BYTES, true)?;
    let sha = identity::sha256_hex(&bytes);
    cache.remember_sha256(file, crate::status_cache::Stamp::of(&meta), &sha);
    Ok((bytes, sha))
}

fn classify_with(
    spec: &PatchSpec,
    located: &Located,
    cache: Option<&mut crate::status_cache::StatusCache>,
) -> Result<Install> {
    if let Some(why) = &located.unfound {
        return Ok(Install {
            target: spec.target,
            path: located.package_dir.clone(),
            file: located.file.clone(),
            version: package_version(&located.package_dir),
            sha256: String::new(),
            state: State::Unsupported,
            revision: None,
            hard_links: located.hard_links,
            same_file_as: located.same_file_as.clone(),
            found_via: located.found_via.clone(),
            next_step: spec.texts.reinstall_step,
            note: Some(why.clone()),
            host_defect: None,
            unfound: Some(why.clone()),
            package: located.package.clone(),
            role: spec.role.clone(),
            companions: Vec::new(),
            via: Vec::new(),
        });
    }
    let (bytes, sha256) = read_or_remembered(spec, &located.file, cache)?;
    let Assessment {
        state,
        revision,
        note,
        next_step,
    } = assess(spec, &bytes, &sha256);
    let mut install = Install {
        target: spec.target,
        path: located.package_dir.clone(),
        file: located.file.clone(),
        version: package_version(&located.package_dir),
        sha256,
        state,
        revision,
        hard_links: located.hard_links,
        same_file_as: located.same_file_as.clone(),
        found_via: located.found_via.clone(),
        next_step,
        note,
        host_defect: None,
        unfound: None,
        package: located.package.clone(),
        role: spec.role.clone(),
        companions: Vec::new(),
        via: Vec::new(),
    };
    classify_companions(spec, &mut install)?;
    if spec.installs.project {
        install.via = crate::dependents::via(located);
    }
    Ok(install)
}

/// `version` from a package folder's package.json (read only if it is a
/// regular file of at most [`identity::MAX_METADATA_BYTES`]).
pub fn package_version(dir: &Path) -> Option<String> {
    let (bytes, _) = identity::read_capped(
        &dir.join("package.json"),
        identity::MAX_METADATA_BYTES,
        true,
    )
    .ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value.get("version")?.as_str().map(str::to_string)
}

/// Classify each companion file of `install` and fold their states into it.
fn classify_companions(spec: &PatchSpec, install: &mut Install) -> Result<()> {
    if spec.companions.is_empty() || install.unfound.is_some() {
        return Ok(());
    }
    for c in &spec.companions {
        let role = c.role.clone().unwrap_or_default();
        let file = match crate::companions::resolve(c, &install.path) {
            Ok(Some(file)) if file != install.file => file,
            // Not part of this install (or the same file as its own).
            Ok(_) => continue,
            // package.json names a file mcpatch refuses (outside the
            // package, a symlink) or cannot read: not the package as
            // released, so the whole install is modified; nothing is patched.
            Err(why) => {
                install.state = State::Modified;
                install.revision = None;
                install.note = Some(format!("the {role} build: {why}"));
                install.next_step = spec.texts.reinstall_step;
                install.companions.clear();
                return Ok(());
            }
        };
        let companion = if file.is_file() {
            let (bytes, sha256) = hash_file(&file)?;
            let a = assess(c, &bytes, &sha256);
            Companion {
                role,
                file,
                sha256,
                state: a.state,
                revision: a.revision,
                note: a.note,
            }
        } else {
            Companion {
                role,
                note: Some(format!("{} is missing", file.display())),
                file,
                sha256: String::new(),
                state: State::Unsupported,
                revision: None,
            }
        };
        install.companions.push(companion);
    }
    fold(spec, install);
    Ok(())
}

/// The state of the install as a whole: the one state all its files share;
/// else unsupported when one is, affected when each is affected or patched
/// (apply patches the rest), and modified otherwise.
fn fold(spec: &PatchSpec, install: &mut Install) {
    let first = install.state;
    if install.companions.iter().all(|c| c.state == first) {
        if install.note.is_none() {
            install.note = install.companions.iter().find_map(|c| c.note.clone());
        }
        return;
    }
    let role = install.role.clone().unwrap_or_default();
    let each: Vec<String> = std::iter::once(format!("the {role} build is {}", first.as_str()))
        .chain(
            install
                .companions
                .iter()
                .map(|c| format!("the {} build is {}", c.role, c.state.as_str())),
        )
        .collect();
    let states: Vec<State> = std::iter::once(first)
        .chain(install.companions.iter().map(|c| c.state))
        .collect();
    let (state, why) = if let Some(c) = install
        .companions
        .iter()
        .find(|c| c.state == State::Unsupported)
    {
        (
            State::Unsupported,
            format!(
                "the {} build: {}",
                c.role,
                c.note.clone().unwrap_or_default()
            ),
        )
    } else if states
        .iter()
        .all(|s| matches!(s, State::Affected | State::Patched))
    {
        (
            State::Affected,
            format!("{}; `mcpatch apply` patches the rest", each.join(", ")),
        )
    } else {
        (State::Modified, each.join(", "))
    };
    install.state = state;
    install.revision = None;
    install.note = Some(why);
    install.next_step = match state {
        State::Modified => spec.texts.reinstall_step,
        s => s.next_step(spec),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::sha256_hex;
    use crate::registry;

    fn spec() -> PatchSpec {
        registry::session_loss().unwrap()
    }

    /// A text the patch fits: what each of its hunks expects to find, in order.
    fn what_the_patch_expects(s: &PatchSpec) -> String {
        s.parsed_diff()
            .hunks()
            .iter()
            .flat_map(|h| h.lines())
            .filter_map(|l| match l {
                diffy::Line::Context(t) | diffy::Line::Delete(t) => Some(*t),
                diffy::Line::Insert(_) => None,
            })
            .collect()
    }

    #[test]
    fn unknown_hash_with_supervisor_is_modified_never_affected() {
        let text = "function connectGeneration(startup) {}\nfunction generationDown(generation) {}\ngeneration.onclose = () => {};";
        let (state, rev, _) =
            classify_bytes(&spec(), text.as_bytes(), &sha256_hex(text.as_bytes()));
        assert_eq!(state, State::Modified);
        assert_eq!(rev, None);
    }

    #[test]
    fn unknown_hash_with_onerror_routing_is_upstream_fixed() {
        let text = "function connectGeneration(startup) {}\nfunction generationDown(generation) {}\ngeneration.onclose = () => {};\ngeneration.onerror = (e) => generationDown(generation);";
        let (state, _, _) = classify_bytes(&spec(), text.as_bytes(), &sha256_hex(text.as_bytes()));
        assert_eq!(state, State::UpstreamFixed);
    }

    #[test]
    fn a_patch_mcpatch_cannot_take_out_is_modified_and_says_reinstall() {
        let text = "function connectGeneration(startup) {}\nfunction generationDown(generation) {}\ngeneration.onclose = () => {};\n// (mcpatch: dsh-mcp-client-session-loss)\ngeneration.onerror = () => {};";
        let a = assess(&spec(), text.as_bytes(), &sha256_hex(text.as_bytes()));
        assert_eq!(
            a,
            Assessment {
                state: State::Modified,
                revision: None,
                note: Some(
                    "carries the mcpatch patch, edited since: mcpatch cannot take it out cleanly"
                        .into()
                ),
                next_step: "reinstall @deepseek-ai/dsh, then run `mcpatch apply`",
            }
        );
    }

    #[test]
    fn without_patch_needs_every_hunk_and_gives_the_base_back() {
        let patch = diffy::create_patch("a\nb\nc\nd\ne\n", "a\nb\nX\nc\nd\ne\n");
        assert_eq!(
            without_patch("local\na\nb\nX\nc\nd\ne\n", &patch).as_deref(),
            Some("local\na\nb\nc\nd\ne\n")
        );
        assert_eq!(without_patch("local\na\nb\nc\nd\ne\n", &patch), None);
        // The hunk comes out, but on what is left the patch would go elsewhere:
        // the file is not that base with the patch on it.
        assert_eq!(
            without_patch("a\nb\nc\nd\ne\na\nb\nX\nc\nd\ne\n", &patch),
            None
        );
    }

    #[test]
    fn file_without_supervisor_is_unsupported() {
        let text = "export function apply() {}";
        let (state, _, _) = classify_bytes(&spec(), text.as_bytes(), &sha256_hex(text.as_bytes()));
        assert_eq!(state, State::Unsupported);
    }

    #[test]
    fn reported_affected_is_modified_and_says_reinstall_where_the_patch_does_not_fit() {
        // Known only by an abbreviated hash (758d8fc4…f5dd): any full hash with that
        // prefix and suffix is that revision, which mcpatch has not verified.
        let hash = format!("758d8fc4{}f5dd", "7".repeat(52));
        let text = "function connectGeneration(startup) {}\nfunction generationDown(generation) {}\ngeneration.onclose = () => {};";
        let (state, rev, note) = classify_bytes(&spec(), text.as_bytes(), &hash);
        assert_eq!(state, State::Modified);
        assert_eq!(rev, Some("reported-affected"));
        assert!(note.is_some_and(|n| !n.is_empty()));
        // The patch does not fit this text: applying it would fail.
        assert_eq!(
            assess(&spec(), text.as_bytes(), &hash).next_step,
            "reinstall @deepseek-ai/dsh, then run `mcpatch apply`"
        );
        let s = spec();
        let fits = what_the_patch_expects(&s);
        assert!(patch_fits(&s, &fits));
        assert_eq!(
            assess(&s, fits.as_bytes(), &hash).next_step,
            "review with `mcpatch diff`, then `mcpatch apply --yes` to patch anyway"
        );
    }

    #[test]
    fn known_hashes_classify_by_revision() {
        let s = spec();
        let (state, rev, _) = classify_bytes(&s, b"", s.original_sha256());
        assert_eq!((state, rev), (State::Affected, Some("original")));
        let (state, rev, _) = classify_bytes(&s, b"", s.patched_sha256());
        assert_eq!((state, rev), (State::Patched, Some("patched")));
        let (state, _, _) = classify_bytes(
            &s,
            b"",
            "88f6cfe9ca486d171108b85ca115ab6887e17ab064f2deb7eec7086ca2882690",
        );
        assert_eq!(state, State::Unsupported);
    }

    #[test]
    fn each_state_has_the_name_status_json_prints() {
        let names: Vec<&str> = State::ALL.into_iter().map(State::as_str).collect();
        assert_eq!(
            names,
            [
                "affected",
                "patched",
                "outdated",
                "upstream-fixed",
                "modified",
                "unsupported"
            ]
        );
    }

    #[test]
    fn a_file_the_patch_does_not_fit_is_told_to_reinstall_not_to_patch_anyway() {
        // DSH's plugin: the supervisor is there, the patch's context is not.
        let text = "function connectGeneration(startup) {}\nfunction generationDown(generation) {}\ngeneration.onclose = () => {};";
        let a = assess(&spec(), text.as_bytes(), &sha256_hex(text.as_bytes()));
        assert_eq!(
            (a.state, a.next_step),
            (
                State::Modified,
                "reinstall @deepseek-ai/dsh, then run `mcpatch apply`"
            )
        );
        // gemini-cli (content anchors): a text they do not fit, and one that is not UTF-8.
        let gemini = registry::select(Some("gemini-cli")).unwrap()[0];
        for bytes in [&b"export const x = 1;\n"[..], &b"\xff\xfe"[..]] {
            let a = assess(gemini, bytes, &sha256_hex(bytes));
            assert_eq!(a.state, State::Modified, "{:?}", a.note);
            assert_eq!(a.next_step, gemini.texts.reinstall_step, "{:?}", a.note);
            assert_ne!(a.next_step, NEXT_REVIEW_AND_PATCH);
        }
        let a = assess(gemini, b"\xff\xfe", &sha256_hex(b"\xff\xfe"));
        assert_eq!(
            a.note.as_deref(),
            Some("unknown revision; it is not UTF-8 text (byte 0 is not), so the patch's content anchors cannot be put in")
        );
    }

    #[test]
    fn the_current_patch_on_a_base_mcpatch_does_not_know_is_patched() {
        let s = spec();
        let fits = what_the_patch_expects(&s);
        // The supervisor's markers, then what the patch's hunks expect to find.
        let base = format!("function connectGeneration(startup) {{}}\nfunction generationDown(generation) {{}}\ngeneration.onclose = () => {{}};\n{fits}");
        let patched = diffy::apply(&base, &s.parsed_diff()).unwrap();
        let a = assess(&s, patched.as_bytes(), &sha256_hex(patched.as_bytes()));
        assert_eq!(
            a,
            Assessment {
                state: State::Patched,
                revision: None,
                note: Some("carries the current patch revision, on a locally modified file".into()),
                next_step: NEXT_PATCHED_ON_MODIFIED,
            }
        );
    }

    fn located(spec: &PatchSpec, dir: &Path, file: &Path) -> Located {
        Located {
            target: spec.target,
            package_dir: dir.to_path_buf(),
            file: file.to_path_buf(),
            unfound: None,
            found_via: Vec::new(),
            same_file_as: Vec::new(),
            hard_links: 1,
            package: spec.package.clone(),
            seen_at: Vec::new(),
        }
    }

    #[test]
    fn a_remembered_sha256_of_a_recorded_revision_is_used_without_reading_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("index.js");
        std::fs::write(&file, "export function apply() {}").unwrap();
        let s = spec();
        let here = located(&s, dir.path(), &file);
        // Nothing remembered: the file is read and hashed.
        let mut cache = crate::status_cache::StatusCache::load(None);
        let i = classify_remembering(&s, &here, &mut cache).unwrap();
        assert_eq!(
            (i.state, i.sha256.as_str()),
            (
                State::Unsupported,
                sha256_hex(b"export function apply() {}").as_str()
            )
        );
        // Remembered as the recorded original (its stamp unchanged): not read again.
        let stamp = crate::status_cache::Stamp::of(&std::fs::metadata(&file).unwrap());
        let _ = cache.reachable(dir.path(), "index.js", "x", || {
            (Ok(file.clone()), vec![(PathBuf::from("index.js"), stamp)])
        });
        cache.remember_sha256(&file, stamp, s.original_sha256());
        let i = classify_remembering(&s, &here, &mut cache).unwrap();
        assert_eq!(
            (i.state, i.revision, i.sha256.as_str()),
            (State::Affected, Some("original"), s.original_sha256())
        );
        // A plain classify always reads.
        assert_eq!(classify(&s, &here).unwrap().state, State::Unsupported);
    }

    #[test]
    fn an_install_of_two_builds_is_classified_as_a_whole_and_pairs_each_build_with_its_spec() {
        let sdk = registry::select(Some("mcp-sdk")).unwrap()[0];
        let dir = tempfile::tempdir().unwrap();
        let esm = dir.path().join("dist/esm/client/streamableHttp.js");
        let cjs = dir.path().join("dist/cjs/client/streamableHttp.js");
        std::fs::create_dir_all(esm.parent().unwrap()).unwrap();
        std::fs::write(&esm, "export const x = 1;\n").unwrap();
        // The CJS build missing: the install is unsupported, saying which build.
        let i = classify(sdk, &located(sdk, dir.path(), &esm)).unwrap();
        assert_eq!(i.state, State::Unsupported);
        assert_eq!(
            i.note,
            Some(format!("the cjs build: {} is missing", cjs.display()))
        );
        assert_eq!(i.next_step, sdk.texts.unsupported_step);
        // Both there: the CJS build is the install's companion, with its spec.
        std::fs::create_dir_all(cjs.parent().unwrap()).unwrap();
        std::fs::write(&cjs, "exports.x = 1;\n").unwrap();
        let i = classify(sdk, &located(sdk, dir.path(), &esm)).unwrap();
        let pairs: Vec<(&Path, Option<&str>)> = i
            .companions_with(sdk)
            .map(|(c, s)| (c.file.as_path(), s.role.as_deref()))
            .collect();
        assert_eq!(pairs, [(cjs.as_path(), Some("cjs"))]);
        // Found at the companion's own file: no companion of itself.
        let i = classify(sdk, &located(sdk, dir.path(), &cjs)).unwrap();
        assert!(i.companions.is_empty(), "{:?}", i.companions);
    }

    #[test]
    fn the_builds_states_fold_into_one_state_of_the_install() {
        let sdk = registry::select(Some("mcp-sdk")).unwrap()[0];
        let dir = tempfile::tempdir().unwrap();
        let esm = dir.path().join("dist/esm/client/streamableHttp.js");
        std::fs::create_dir_all(esm.parent().unwrap()).unwrap();
        std::fs::write(&esm, "export const x = 1;\n").unwrap();
        let mut install = classify(sdk, &located(sdk, dir.path(), &esm)).unwrap();
        let companion = |state| Companion {
            role: "cjs".into(),
            file: dir.path().join("dist/cjs/client/streamableHttp.js"),
            sha256: String::new(),
            state,
            revision: None,
            note: None,
        };
        let fold_of = |first, second, install: &mut Install| {
            install.state = first;
            install.next_step = first.next_step(sdk);
            install.note = None;
            install.companions = vec![companion(second)];
            fold(sdk, install);
            (install.state, install.note.clone(), install.next_step)
        };
        assert_eq!(
            fold_of(State::Patched, State::Patched, &mut install),
            (State::Patched, None, State::Patched.next_step(sdk))
        );
        assert_eq!(
            fold_of(State::Affected, State::Patched, &mut install),
            (
                State::Affected,
                Some("the esm build is affected, the cjs build is patched; `mcpatch apply` patches the rest".into()),
                "run `mcpatch apply`"
            )
        );
        assert_eq!(
            fold_of(State::Patched, State::Outdated, &mut install),
            (
                State::Modified,
                Some("the esm build is patched, the cjs build is outdated".into()),
                sdk.texts.reinstall_step
            )
        );
    }
}
