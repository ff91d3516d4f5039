//! Stages the patch: applies the diff to a scratch copy with a real diff
//! library (all-or-nothing), then syntax-checks it with `node --check` in its
//! module context and load-checks it from inside the install.

use std::path::Path;

use crate::error::{Error, Result};
use crate::identity::{self, MAX_METADATA_BYTES};
use crate::node::Node;
use crate::registry::PatchSpec;

/// Apply the diff of `original`'s code family to it, all hunks or none: the
/// first of the target's diffs that applies; if none does, the error is the
/// first candidate's.
pub fn apply_diff(spec: &PatchSpec, original: &str, path: &Path) -> Result<String> {
    if let Some(anchors) = &spec.anchors {
        return match anchors.apply(original) {
            Ok(crate::anchors::Applied::Patched(text)) => Ok(text),
            Ok(crate::anchors::Applied::AlreadyPatched) => Err(Error::AnchorsDoNotFit {
                target: spec.target,
                path: path.to_path_buf(),
                detail: format!("it already holds the patch marker {}", spec.patch_marker),
                reinstall: spec.texts.reinstall,
            }),
            Err(refused) => Err(Error::AnchorsDoNotFit {
                target: spec.target,
                path: path.to_path_buf(),
                detail: refused.to_string(),
                reinstall: spec.texts.reinstall,
            }),
        };
    }
    let candidates: Vec<_> = spec.families_of(original).collect();
    let Some(first) = candidates.first() else {
        let lacks = spec
            .patches
            .iter()
            .flat_map(|p| p.requires.iter().filter(|r| !original.contains(r.as_str())))
            .next()
            .map(|r| format!("`{}`", r.lines().next().unwrap_or_default()))
            .unwrap_or_default();
        return Err(Error::PatchDoesNotApply {
            reinstall: spec.texts.reinstall,
            path: path.to_path_buf(),
            detail: format!(
                "the file is of no code family a patch of {} is for (it lacks {lacks})",
                spec.target
            ),
        });
    };
    for family in &candidates {
        if let Ok(text) = diffy::apply(original, &family.parsed()) {
            return Ok(text);
        }
    }
    let patch = first.parsed();
    diffy::apply(original, &patch).map_err(|e| {
        let hunk = e
            .to_string()
            .trim_start_matches("error applying hunk #")
            .parse::<usize>()
            .ok()
            .and_then(|n| patch.hunks().get(n.saturating_sub(1)).map(|h| (n, h)));
        let detail = match hunk {
            Some((n, h)) => format!(
                "hunk #{n} (@@ -{},{} +{},{} @@) does not match: its context lines are not in the file",
                h.old_range().start(),
                h.old_range().len(),
                h.new_range().start(),
                h.new_range().len()
            ),
            None => e.to_string(),
        };
        Error::PatchDoesNotApply {
            reinstall: spec.texts.reinstall,
            path: path.to_path_buf(),
            detail,
        }
    })
}

/// Take an earlier patch revision out of `current` (whose sha256 is `current_hash`):
/// its diff reversed, all hunks or none. A known earlier revision must give the
/// original the patch was cut against, byte for byte; a file of another hash
/// gives whatever base the earlier revision's hunks were put on (a locally
/// modified file: the caller asks before patching it). Returns that base and
/// the revision taken out.
pub fn remove_earlier(
    spec: &PatchSpec,
    current: &str,
    current_hash: &str,
    path: &Path,
) -> Result<(String, u32)> {
    if spec.anchors.is_some() {
        return remove_earlier_anchors(spec, current, current_hash, path);
    }
    let Some(earlier) = spec.earlier_with_hash(current_hash) else {
        return spec
            .earlier
            .iter()
            .rev()
            .find_map(|e| {
                crate::classify::without_patch(current, &e.parsed_diff()).map(|b| (b, e.revision))
            })
            .ok_or_else(|| no_earlier_revision(spec, path, current_hash));
    };
    let forward = earlier.parsed_diff();
    let reversed = forward.reverse();
    let original = diffy::apply(current, &reversed).map_err(|e| {
        does_not_come_out(
            spec,
            path,
            format!(
                "patch revision {} does not come out cleanly: {e}",
                earlier.revision
            ),
        )
    })?;
    let found = crate::identity::sha256_hex(original.as_bytes());
    if !spec.is_original(&found) {
        return Err(not_the_original(
            spec,
            path,
            earlier.revision,
            &found,
            spec.original_sha256(),
        ));
    }
    Ok((original, earlier.revision))
}

/// A file an earlier patch revision does not come out of as it must.
fn does_not_come_out(spec: &PatchSpec, path: &Path, detail: String) -> Error {
    Error::PatchDoesNotApply {
        reinstall: spec.texts.reinstall,
        path: path.to_path_buf(),
        detail,
    }
}

/// No earlier patch revision comes out of the file whose sha256 is `current_hash`.
fn no_earlier_revision(spec: &PatchSpec, path: &Path, current_hash: &str) -> Error {
    does_not_come_out(
        spec,
        path,
        format!(
            "sha256 {current_hash} carries no earlier revision of the patch that comes out cleanly"
        ),
    )
}

/// Taking `revision` out gave sha256 `found`, not the original `expected`.
fn not_the_original(
    spec: &PatchSpec,
    path: &Path,
    revision: u32,
    found: &str,
    expected: &str,
) -> Error {
    does_not_come_out(
        spec,
        path,
        format!("taking patch revision {revision} out gives sha256 {found}, not the original {expected}"),
    )
}

/// [`remove_earlier`] for a target patched by content anchors: the newest
/// earlier revision whose anchors prove `current` theirs puts their anchors'
/// text back. For a file known by its hash, that must give the original it
/// records, byte for byte.
fn remove_earlier_anchors(
    spec: &PatchSpec,
    current: &str,
    current_hash: &str,
    path: &Path,
) -> Result<(String, u32)> {
    let Some((base, revision)) = spec
        .earlier_anchors
        .iter()
        .rev()
        .find_map(|e| e.anchors.original_of(current).map(|b| (b, e.revision)))
    else {
        return Err(no_earlier_revision(spec, path, current_hash));
    };
    let recorded = spec
        .revision(current_hash)
        .and_then(|r| r.original_sha256.as_deref());
    if let Some(expected) = recorded {
        let found = crate::identity::sha256_hex(base.as_bytes());
        if !found.eq_ignore_ascii_case(expected) {
            return Err(not_the_original(spec, path, revision, &found, expected));
        }
    }
    Ok((base, revision))
}

/// What to do when the system temp folder cannot be written.
pub const SCRATCH_HELP: &str = "make the temp folder writable or set TMPDIR";

/// A scratch folder no run has held for this long, and whose lock no live run
/// holds, is a dead run's leftover (a run locks its folder as soon as it made it).
const SCRATCH_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// A private scratch folder under the system temp folder: `0700`, its files
/// `0600` whatever the umask (node runs what is written here, as root under
/// sudo), locked while this value lives and removed on drop. A run killed
/// before its drop leaves it behind; the next run that makes one with the
/// same prefix removes it.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
    /// Held (an flock on the folder itself) for as long as the folder is in use.
    _lock: std::fs::File,
}

impl Scratch {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write `bytes` to `relative` inside, `0600`, making its folders `0700`.
    pub fn write(&self, relative: &str, bytes: &[u8]) -> Result<std::path::PathBuf> {
        use std::io::Write;
        let file = self.dir.path().join(relative);
        if let Some(dir) = file.parent() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .create(dir)
                .map_err(|e| Error::io("create", dir, e, SCRATCH_HELP))?;
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options
            .open(&file)
            .and_then(|mut f| f.write_all(bytes))
            .map_err(|e| Error::io("write", &file, e, SCRATCH_HELP))?;
        Ok(file)
    }
}

/// A [`Scratch`] folder named `<prefix>XXXXXX`, after removing dead runs' ones.
pub fn scratch_dir(prefix: &str) -> Result<Scratch> {
    scratch_dir_in(&std::env::temp_dir(), prefix, SCRATCH_HELP)
}

/// A [`Scratch`] folder named `<prefix>XXXXXX` inside `parent`, after removing
/// dead runs' ones there; `help` names the fix when it cannot be made.
pub fn scratch_dir_in(parent: &Path, prefix: &str, help: &'static str) -> Result<Scratch> {
    remove_dead_scratch(parent, prefix);
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
    let dir = builder
        .tempdir_in(parent)
        .map_err(|e| Error::io("create", parent, e, help))?;
    let lock = std::fs::File::open(dir.path())
        .and_then(|f| f.try_lock().map(|()| f).map_err(std::io::Error::from))
        .map_err(|e| Error::io("lock", dir.path(), e, help))?;
    Ok(Scratch { dir, _lock: lock })
}

/// Remove the `<prefix>*` folders in `tmp` that dead runs left: only real
/// folders (never a link) this user owns, older than [`SCRATCH_GRACE`], whose
/// lock no live run holds. Each is opened first (never through a link, only a
/// folder) and judged by what was opened, so nothing can be put in its place
/// between the checks and the lock.
pub(crate) fn remove_dead_scratch(tmp: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(prefix))
        {
            continue;
        }
        let path = entry.path();
        let mut open = std::fs::OpenOptions::new();
        open.read(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut open,
            libc::O_NOFOLLOW | libc::O_DIRECTORY,
        );
        let Ok(dir) = open.open(&path) else { continue };
        let Ok(meta) = dir.metadata() else { continue };
        #[cfg(unix)]
        let ours = {
            use std::os::unix::fs::MetadataExt;
            // SAFETY: geteuid has no memory effects.
            meta.uid() == unsafe { libc::geteuid() }
        };
        #[cfg(not(unix))]
        let ours = true;
        let old = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age > SCRATCH_GRACE);
        if meta.is_dir() && ours && old && dir.try_lock().is_ok() {
            // remove_dir_all removes a link put here since, not what it points to.
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// `node --check` the staged text in a scratch package that carries the
/// install's package.json, so its `type` (ESM) applies.
pub fn syntax_check(
    node: &Node,
    staged: &str,
    package_dir: &Path,
    relative_file: &str,
) -> Result<()> {
    let scratch = scratch_dir("mcpatch-stage-")?;
    // A signal ending mcpatch while node checks the file takes the folder too.
    let _scratch_guard = crate::on_signal::remove_on_signal(scratch.path());
    let pkg_json = package_dir.join("package.json");
    let (manifest, _) = identity::read_capped(&pkg_json, MAX_METADATA_BYTES, true)?;
    scratch.write("package.json", &manifest)?;
    let file = scratch.write(relative_file, staged.as_bytes())?;
    crate::kill_point::reached("syntax-check")?;
    let out = run_caught(
        node,
        "`node --check`",
        [std::ffi::OsStr::new("--check"), file.as_os_str()],
    )?;
    if !out.status.success() {
        return Err(Error::SyntaxCheckFailed {
            path: file,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// What the load check prints, alone on a line, once the module has loaded
/// and exports `apply`: a module that ends node early never prints it.
const LOAD_OK: &str = "mcpatch-load-check-ok";

/// Import the staged file (already written next to the target, inside the
/// install) so its own imports resolve, and check it exports `export` (a
/// function: DSH's plugin `apply`, mcp-remote's `mcpProxy`). The
/// check ends node itself after its success marker (a module may keep node's
/// event loop alive), and the run is bounded in time.
pub fn load_check(node: &Node, staged_in_install: &Path, export: &str) -> Result<()> {
    let url = file_url(staged_in_install);
    if staged_in_install.to_str().is_none() {
        // Node turns file URLs into text paths: it cannot import from this folder at all.
        return Err(Error::PathNotLoadable {
            path: staged_in_install
                .parent()
                .unwrap_or(staged_in_install)
                .to_path_buf(),
            url: file_url(staged_in_install.parent().unwrap_or(staged_in_install)),
        });
    }
    let export = serde_json::to_string(export).unwrap_or_default();
    let script = format!(
        "const m = await import(process.argv[1]); const name = {export}; if (typeof m[name] !== 'function') {{ console.error(`the module has no ${{name}} export`); process.exit(3); }} process.stdout.write('{LOAD_OK}\\n', () => process.exit(0));"
    );
    let out = run_caught(
        node,
        "the load check",
        ["--input-type=module", "-e", script.as_str(), url.as_str()],
    )?;
    let marked = String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l == LOAD_OK);
    if !out.status.success() || !marked {
        let mut stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if out.status.success() {
            stderr = format!(
                "the module ended node before the load check finished (exit status 0, no success marker){}{stderr}",
                if stderr.is_empty() { "" } else { "\n" }
            );
        }
        return Err(Error::LoadCheckFailed {
            dir: staged_in_install
                .parent()
                .unwrap_or(staged_in_install)
                .to_path_buf(),
            stderr,
        });
    }
    Ok(())
}

/// Run node for `step` with signals caught: a SIGINT, SIGTERM or SIGHUP stops
/// node's whole group and is an error, so what the caller put in the install
/// (the staged file, a backup) is removed by its drops, not left behind.
fn run_caught<I, S>(node: &Node, step: &'static str, args: I) -> Result<std::process::Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let catching = crate::on_signal::catch();
    let out = node.run(step, args);
    crate::kill_point::signal_may_arrive("node-ended");
    drop(catching);
    // Caught after node ended but before the guard went: still ours to report.
    interrupted(step)?;
    out
}

/// An error if a signal was caught while a [`crate::on_signal::catch`] guard lived.
pub fn interrupted(step: &'static str) -> Result<()> {
    match crate::on_signal::caught() {
        Some(signal) => Err(Error::StepInterrupted { signal, step }),
        None => Ok(()),
    }
}

/// A `file://` URL for an absolute path, built from its bytes, percent-encoding what URLs reserve.
pub fn file_url(path: &Path) -> String {
    crate::path_json::file_url(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_url_encodes_spaces_and_percent() {
        assert_eq!(file_url(Path::new("/a b/%c.js")), "file:///a%20b/%25c.js");
    }

    #[test]
    fn failing_hunk_is_named() {
        let spec = crate::registry::session_loss().unwrap();
        let err = apply_diff(
            &spec,
            "nothing like the original\n",
            Path::new("/x/lib/index.js"),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("the patch does not apply to /x/lib/index.js: hunk #1 (@@ -103,6 +103,39 @@) does not match"), "{msg}");
    }

    /// A text `diff`'s hunks fit that is not the file it was cut against:
    /// each hunk's old side at its line, filler lines around them.
    fn text_the_hunks_fit(diff: &diffy::Patch<'_, str>) -> String {
        let mut text = String::new();
        let mut line = 1;
        for hunk in diff.hunks() {
            while line < hunk.old_range().start() {
                text.push_str("// filler, not the original\n");
                line += 1;
            }
            for l in hunk.lines() {
                if let diffy::Line::Context(t) | diffy::Line::Delete(t) = l {
                    text.push_str(t);
                    line += 1;
                }
            }
        }
        text
    }

    #[test]
    fn a_recorded_earlier_diff_revision_that_does_not_come_out_to_the_original_is_refused() {
        let spec = crate::registry::session_loss().unwrap();
        let earlier = spec
            .earlier
            .iter()
            .find(|e| e.sha256.is_some())
            .expect("DSH's target records an earlier revision's sha256");
        let diff = earlier.parsed_diff();
        let base = text_the_hunks_fit(&diff);
        let current = diffy::apply(&base, &diff).unwrap();
        let recorded = earlier.sha256.as_deref().unwrap();
        let path = Path::new("/x/lib/index.js");
        let found = crate::identity::sha256_hex(base.as_bytes());
        assert_eq!(
            remove_earlier(&spec, &current, recorded, path)
                .unwrap_err()
                .to_string(),
            format!(
                "the patch does not apply to /x/lib/index.js: taking patch revision {} out gives sha256 {found}, not the original {}\nhelp: nothing was changed; the patch fits the revision it was cut against, also with local edits away from its hunks, and this file is neither: reinstall @deepseek-ai/dsh, then run `mcpatch apply`",
                earlier.revision,
                spec.original_sha256(),
            )
        );
    }

    #[test]
    fn a_file_of_no_code_family_is_refused_naming_the_first_line_it_lacks() {
        let spec = crate::registry::select(Some("mcp-remote")).unwrap()[0];
        // The first family's first line is there; its second is not.
        let text = "function reinitializeSession() {}\n";
        let err = apply_diff(spec, text, Path::new("/x/dist/chunk.js")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the patch does not apply to /x/dist/chunk.js: the file is of no code family a patch of mcp-remote is for (it lacks `let reinitInFlight = null;`)\nhelp: nothing was changed; the patch fits the revision it was cut against, also with local edits away from its hunks, and this file is neither: reinstall mcp-remote (a copy in the npx cache: delete its folder there, npx fetches it again), then run `mcpatch apply`"
        );
    }

    #[test]
    fn a_scratch_file_is_written_private_and_its_path_returned() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let scratch = scratch_dir_in(parent.path(), "mcpatch-test-", SCRATCH_HELP).unwrap();
        let file = scratch.write("a/b/c.js", b"code").unwrap();
        assert_eq!(file, scratch.path().join("a/b/c.js"));
        assert_eq!(std::fs::read(&file).unwrap(), b"code");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&scratch.path().join("a/b")), 0o700);
        assert_eq!(mode(scratch.path()), 0o700);
    }

    #[test]
    fn only_old_unlocked_scratch_folders_of_this_user_and_prefix_are_removed() {
        use std::time::{Duration, SystemTime};
        let tmp = tempfile::tempdir().unwrap();
        let aged = |p: &Path, age: Duration| {
            std::fs::File::open(p)
                .unwrap()
                .set_modified(SystemTime::now() - age)
                .unwrap();
        };
        let folder = |name: &str, age: Duration| {
            let p = tmp.path().join(name);
            std::fs::create_dir(&p).unwrap();
            aged(&p, age);
            p
        };
        let minute = Duration::from_secs(60);
        let dead = folder("p-dead", minute);
        let fresh = folder("p-fresh", Duration::ZERO);
        let held = folder("p-held", minute);
        let other_prefix = folder("q-dead", minute);
        let not_ours = folder("p-not-ours", minute);
        std::os::unix::fs::lchown(&not_ours, Some(54321), None).unwrap_or_else(|e| {
            panic!(
                "cannot give {} to another user: {e}; this test needs root (CI runs as root)",
                not_ours.display()
            )
        });
        let file = tmp.path().join("p-file");
        std::fs::write(&file, "").unwrap();
        aged(&file, minute);
        let target = folder("q-target", minute);
        let link = tmp.path().join("p-link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let lock = std::fs::File::open(&held).unwrap();
        lock.try_lock().unwrap();

        remove_dead_scratch(tmp.path(), "p-");

        assert!(
            !dead.exists(),
            "an old, unlocked folder of this user is removed"
        );
        for kept in [&fresh, &held, &other_prefix, &not_ours, &file, &target] {
            assert!(kept.exists(), "{} is kept", kept.display());
        }
        assert!(std::fs::symlink_metadata(&link).is_ok(), "the link is kept");
    }

    /// A small text gemini-cli's anchors fit: its McpClient fields and its
    /// tool adapter's `callTool`, with code around them.
    fn fitting_text() -> String {
        [
            "var x = 1;",
            "var McpClient = class {",
            "  serverName;",
            "  serverConfig;",
            "  workspaceContext;",
            "  cliConfig;",
            "  debugMode;",
            "  clientVersion;",
            "  onContextUpdated;",
            "  client;",
            "  transport;",
            "  status = MCPServerStatus2.DISCONNECTED;",
            "};",
            "      const result2 = await this.client.callTool({",
            "        name: call.name,",
            "        // eslint-disable-next-line @typescript-eslint/no-unsafe-type-assertion",
            "        arguments: call.args,",
            "        _meta: { progressToken }",
            "      }, void 0, { timeout: this.timeout });",
            "      return result2;",
            "",
        ]
        .join("\n")
    }

    #[test]
    fn an_earlier_anchor_revision_comes_out_to_the_text_it_was_put_on() {
        let spec = crate::registry::select(Some("gemini-cli")).unwrap()[0];
        let original = fitting_text();
        let Ok(crate::anchors::Applied::Patched(r1)) =
            spec.earlier_anchors[0].anchors.apply(&original)
        else {
            panic!("revision 1 does not fit the text");
        };
        let path = Path::new("/x/bundle/chunk.js");
        // A hash mcpatch has no record of: whatever base revision 1 was put on.
        let unknown = "0".repeat(64);
        assert_eq!(
            remove_earlier(spec, &r1, &unknown, path).unwrap(),
            (original.clone(), 1)
        );
        // A recorded outdated hash must come out to its recorded original.
        let recorded = "012c034f4b54c7bf78d4468348f73631e7526fe60f579e9064a2d65acba173d8";
        let found = crate::identity::sha256_hex(original.as_bytes());
        assert_eq!(
            remove_earlier(spec, &r1, recorded, path).unwrap_err().to_string(),
            format!("the patch does not apply to /x/bundle/chunk.js: taking patch revision 1 out gives sha256 {found}, not the original 901004474485b55896feaed563d2e1f75bce021a9245ffbd50724028f7926ba6\nhelp: nothing was changed; the patch fits the revision it was cut against, also with local edits away from its hunks, and this file is neither: reinstall gemini-cli (`npm install -g @google/gemini-cli`, or however it was installed), then run `mcpatch apply`")
        );
        // The current revision, or the text as it was, carries no earlier one.
        assert!(remove_earlier(spec, &original, &unknown, path).is_err());
    }
}
