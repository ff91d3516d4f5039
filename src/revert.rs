//! `mcpatch revert`: restores each install from its newest backup (or the one
//! named), atomically, after checking the backup, keeping the file's current
//! mode and owner (never a mode a manifest names); backups are kept.

use std::path::{Path, PathBuf};

use crate::automation::{self, ChangeReport, InstallChange};
use crate::backup::{self, Backup, DamagedBackup};
use crate::classify;
use crate::environment::Environment;
use crate::error::{Error, Failures, Result};
use crate::exit_code::Outcome;
use crate::identity;
use crate::kill_point;
use crate::lock;
use crate::outln;
use crate::path_json;
use crate::registry::{PatchSpec, RevisionKind};
use crate::replace;
use crate::running;
use crate::survey;
use crate::table::{hanging, shorten_middle, Align, Table};
use crate::transaction::{Transaction, REVERT_CHANGED_HELP};

/// What revert's rollback does, as the re-hash error says it.
const REVERT_UNDONE: &str = "the file as it was before the revert was put back";

/// Options of `mcpatch revert`.
#[derive(Debug, Clone, Default)]
pub struct RevertOptions {
    pub paths: Vec<PathBuf>,
    pub backup: Option<String>,
    pub yes: bool,
    /// Print one JSON report ([`ChangeReport`]) instead of text.
    pub json: bool,
}

pub fn run(
    targets: &[&'static PatchSpec],
    opts: &RevertOptions,
    env: &Environment,
) -> Result<Outcome> {
    let mut report = ChangeReport::default();
    let result = revert_all(targets, opts, env, &mut report);
    if opts.json {
        report.finish(result)
    } else {
        result
    }
}

/// One target's backups folder, locked while revert runs, and what it holds.
struct Held {
    spec: &'static PatchSpec,
    root: PathBuf,
    _lock: Option<lock::WriteLock>,
    backups: Vec<Backup>,
    damaged: Vec<DamagedBackup>,
}

fn revert_all(
    targets: &[&'static PatchSpec],
    opts: &RevertOptions,
    env: &Environment,
    report_out: &mut ChangeReport,
) -> Result<Outcome> {
    // Human lines go to stdout only without --json.
    let say = |args: std::fmt::Arguments<'_>| {
        if !opts.json {
            crate::out!("{}", crate::table::for_a_person(&args.to_string()));
        }
    };
    let home = env.state_home()?;
    let survey::Collected { report, failed } = survey::collect_all(targets, &opts.paths, env)
        .inspect_err(|e| report_out.searched = survey::searched_before(&opts.paths, e))?;
    report_out.searched = report.searched.clone();
    report_out
        .installs
        .extend(report.errors.iter().map(InstallChange::unreadable));
    if report.installs.is_empty() && failed.is_empty() {
        if !opts.json {
            crate::out!("{}", survey::table::render_table(&report));
        }
        return Ok(Outcome::Clean);
    }
    // Each target's backups folder. No folder: nothing to restore from, and
    // nothing is created (no folder, no lock file) for a revert that restores nothing.
    let mut held: Vec<(&'static PatchSpec, PathBuf, Option<lock::WriteLock>)> = Vec::new();
    for &spec in targets {
        // A target over several packages keeps one backups folder (one lock).
        if held.iter().any(|(s, _, _)| s.id == spec.id) {
            continue;
        }
        let root = backup::root(&home, spec);
        let lock = if std::fs::symlink_metadata(&root).is_ok() {
            backup::prepare_root(&root)?;
            Some(lock::acquire(&root)?)
        } else {
            None
        };
        held.push((spec, root, lock));
    }
    kill_point::reached("locked")?;
    let mut groups = Vec::new();
    for (spec, root, lock) in held {
        let backup::Listing { backups, damaged } = backup::list_all(&root)?;
        groups.push(Held {
            spec,
            root,
            _lock: lock,
            backups,
            damaged,
        });
    }
    if let Some(id) = &opts.backup {
        if let Some(d) = groups.iter().flat_map(|g| &g.damaged).find(|d| &d.id == id) {
            return Err(Error::BackupDamaged {
                id: id.clone(),
                detail: d.damaged.clone(),
            });
        }
        if !groups.iter().flat_map(|g| &g.backups).any(|b| &b.id == id) {
            // Every target's folder is under one: name it, not the first target's.
            let root = &groups[0].root;
            return Err(Error::BackupNotFound {
                id: id.clone(),
                dir: root.parent().unwrap_or(root).to_path_buf(),
            });
        }
    }
    let mut outcome = Outcome::Clean;
    let mut restored: Vec<&PatchSpec> = Vec::new();
    let mut matched_named = false;
    let items = survey::each_file(&report.installs);
    let mut failures = Failures::new(items.len() + failed.len(), "restored");
    let processes = running::ProcessTable::scan();
    for e in failed {
        failures.absorb::<()>(Err(e))?;
    }
    for item in &items {
        let (file, package_dir, state_before) = (&item.file, &item.dir, &item.state);
        let group = groups
            .iter()
            .find(|g| g.spec.target == item.target)
            .expect("a group per target searched");
        let spec = crate::registry::find(targets, item.target, &item.install.package);
        let (root, backups, damaged) = (&group.root, &group.backups, &group.damaged);
        report_out.installs.push(InstallChange::new(
            spec.target,
            package_dir,
            file,
            Some(*state_before),
        ));
        let entry = report_out.installs.last_mut().expect("just pushed");
        let chosen = backup::pick(backups, file, opts.backup.as_deref());
        if opts.backup.is_none() {
            // A damaged backup newer than the one chosen may be this file's newest:
            // never fall back to an older one silently.
            if let Some(d) = damaged_newer_than(damaged, chosen) {
                let e = Error::BackupDamaged {
                    id: d.id.clone(),
                    detail: format!(
                        "{}; it is newer than {}, so it may be the newest backup of {}",
                        d.damaged,
                        chosen
                            .map(|c| format!("backup {}", c.id))
                            .unwrap_or_else(|| "every usable backup".into()),
                        file.display()
                    ),
                };
                entry.error = Some(e.to_string());
                failures.absorb::<()>(Err(e))?;
                continue;
            }
        }
        let Some(chosen) = chosen else {
            if opts.backup.is_some() {
                continue;
            }
            if item.unfound.is_none() && carries_patch(spec, file) {
                // Patched, and nothing here to restore it from: say where to get the original.
                outcome = Outcome::Attention;
                let (why, how) = no_backup(spec, root);
                say(format_args!(
                    "not reverted: {}\n    {why}\n    {how}",
                    file.display()
                ));
                entry.error = Some(format!("not reverted: {why}\n{how}"));
            } else {
                say(format_args!(
                    "no backup of {}; nothing to revert",
                    file.display()
                ));
            }
            continue;
        };
        matched_named = true;
        let newest = backup::pick(backups, file, None).unwrap_or(chosen);
        let result = revert_install(spec, package_dir, file, chosen, newest, backups, opts.yes);
        if let Err(e) = &result {
            entry.error = Some(e.to_string());
            entry.state_after = automation::state_now(spec, file);
        }
        let Some(result) = failures.absorb(result)? else {
            continue;
        };
        entry.state_after = automation::state_now(spec, file);
        match result {
            Reverted::Restored { file_too, also } => {
                if !restored.iter().any(|t| t.target == spec.target) {
                    restored.push(spec);
                }
                entry.changed = true;
                // The file restored first names the run; a main file that was
                // already the original (an upgrade put it back) is said so.
                let mut restored_files: Vec<(&Path, &str, &str)> = Vec::new();
                if file_too {
                    restored_files.push((file, &chosen.id, &chosen.manifest.sha256_before));
                }
                restored_files.extend(
                    also.iter()
                        .map(|(p, id, sha)| (p.as_path(), id.as_str(), sha.as_str())),
                );
                if let Some(((first, id, sha), rest)) = restored_files.split_first() {
                    entry.backup = Some(id.to_string());
                    say(format_args!(
                        "restored {} from backup {id}\n    sha256 now {}",
                        first.display(),
                        survey::table::short_hash(sha)
                    ));
                    if !file_too {
                        say(format_args!(
                            "    {} was already the original",
                            file.display()
                        ));
                    }
                    for (path, id, _) in rest {
                        say(format_args!(
                            "    and {} from backup {id}, with it",
                            path.display()
                        ));
                    }
                }
                for line in running::lines(&processes.running(spec, package_dir, file)) {
                    say(format_args!("    {line}"));
                }
            }
            Reverted::AlreadyOriginal => say(format_args!(
                "{} is already the original; nothing to do",
                file.display()
            )),
            Reverted::Refused(why) => {
                outcome = Outcome::Attention;
                say(format_args!("refused: {}\n    {why}", file.display()));
                entry.error = Some(format!("refused: {why}"));
            }
        }
    }
    report_out.fill_running(targets, &processes);
    if let (Some(id), false) = (&opts.backup, matched_named) {
        if let Some(named) = groups.iter().flat_map(|g| &g.backups).find(|b| &b.id == id) {
            return Err(Error::BackupOfAnotherInstall {
                id: id.clone(),
                original: named.manifest.original_path.clone(),
            });
        }
    }
    for spec in restored {
        say(format_args!(
            "backups are kept (`mcpatch backups`); {}",
            spec.texts.restart_restored
        ));
    }
    failures.finish()?;
    Ok(outcome)
}

/// Whether `file` carries the patch (any revision, on any base).
fn carries_patch(spec: &PatchSpec, file: &Path) -> bool {
    classify::hash_file(file).is_ok_and(|(bytes, _)| {
        String::from_utf8_lossy(&bytes).contains(spec.patch_marker.as_str())
    })
}

/// Why a patched file with no backup under `root` is not reverted, and how to
/// get its original back.
fn no_backup(spec: &PatchSpec, root: &Path) -> (String, String) {
    (
        format!(
            "it carries the patch, and no backup of it is under {}",
            root.display()
        ),
        format!("to get the original back: {}; or, if it was patched with another state folder (sudo uses root's), run `MCPATCH_HOME=<that folder> mcpatch revert` (`--backup ID` picks one of the backups `mcpatch backups` lists there)", spec.texts.reinstall),
    )
}

enum Reverted {
    /// Restored: the file itself unless it was already the original
    /// (`file_too`), and the companion files restored with it (path, backup
    /// id, the sha256 restored).
    Restored {
        file_too: bool,
        also: Vec<(PathBuf, String, String)>,
    },
    AlreadyOriginal,
    Refused(String),
}

/// The newest damaged backup, if it is newer than `chosen` (or there is no `chosen`).
fn damaged_newer_than<'a>(
    damaged: &'a [DamagedBackup],
    chosen: Option<&Backup>,
) -> Option<&'a DamagedBackup> {
    damaged
        .iter()
        .rev()
        .find(|d| chosen.is_none_or(|c| d.id > c.id))
}

/// One file's restore, checked and staged, not yet renamed into place.
struct ReadyRestore<'a> {
    tx: Transaction,
    pending: crate::replace::PendingFile,
    saved_hash: String,
    newest: &'a Backup,
    _lock: lock::InstallLock,
}

enum Step<'a> {
    Ready(Box<ReadyRestore<'a>>),
    Done(Reverted),
}

/// Restore an install: `file` from `chosen` and, for a target of several
/// files per install (mcp-sdk), each companion from its own newest backup,
/// as one transaction: all are checked and staged first, then renamed into
/// place; a failure puts back every file already restored (both or neither).
fn revert_install(
    spec: &PatchSpec,
    package_dir: &Path,
    file: &Path,
    chosen: &Backup,
    newest: &Backup,
    backups: &[Backup],
    yes: bool,
) -> Result<Reverted> {
    let mut ready = Vec::new();
    let mut also = Vec::new();
    let mut first = None;
    match revert_file(spec, file, chosen, newest, yes)? {
        Step::Ready(r) => ready.push(*r),
        Step::Done(Reverted::AlreadyOriginal) => first = Some(Reverted::AlreadyOriginal),
        Step::Done(other) => return Ok(other),
    }
    for c in &spec.companions {
        let Some(path) = crate::companions::file_of(c, package_dir, file) else {
            continue;
        };
        let Some(newest) = backup::pick(backups, &path, None) else {
            continue;
        };
        match revert_file(c, &path, newest, newest, yes)? {
            Step::Ready(r) => {
                also.push((
                    path.clone(),
                    newest.id.clone(),
                    newest.manifest.sha256_before.clone(),
                ));
                ready.push(*r)
            }
            Step::Done(Reverted::AlreadyOriginal) => {}
            Step::Done(other) => return Ok(other),
        }
    }
    if ready.is_empty() {
        return Ok(first.unwrap_or(Reverted::AlreadyOriginal));
    }
    let mut marked: Vec<&Backup> = Vec::new();
    let mut placed = Vec::new();
    for r in ready {
        let ReadyRestore {
            mut tx,
            pending,
            saved_hash,
            newest,
            _lock,
        } = r;
        backup::mark_reverted(newest, &chosen.id)?;
        marked.push(newest);
        // Checks the file is still the one read above, renames, then re-hashes.
        let done = tx.replace(pending).and_then(|()| tx.confirm(&saved_hash));
        if let Err(e) = done {
            for m in &marked {
                backup::unmark_reverted(m);
            }
            return Err(e);
        }
        placed.push((tx, _lock));
    }
    for (tx, _lock) in placed {
        tx.commit();
    }
    Ok(Reverted::Restored {
        file_too: first.is_none(),
        also,
    })
}

/// Check and stage the restore of `file` from `chosen`; `newest` (the file's
/// newest backup) records that the patch was taken out on purpose.
fn revert_file<'a>(
    spec: &PatchSpec,
    file: &Path,
    chosen: &Backup,
    newest: &'a Backup,
    yes: bool,
) -> Result<Step<'a>> {
    let saved = backup::read_checked(chosen, spec)?;
    // read_checked proved the saved bytes hash to the manifest's sha256_before.
    let saved_hash = chosen.manifest.sha256_before.clone();
    let known_original = spec.revision(&saved_hash).map(|r| r.kind) == Some(RevisionKind::Original);
    // Held until the restore is committed or rolled back.
    let install_lock = lock::lock_install(file)?;
    kill_point::reached("install-locked")?;
    if install_lock.fresh {
        replace::remove_stale_temps(file);
    }
    let snapshot = identity::read(file)?;
    let current = snapshot.sha256.clone();
    if current == saved_hash {
        backup::mark_reverted(newest, &chosen.id)?;
        return Ok(Step::Done(Reverted::AlreadyOriginal));
    }
    // A release mcpatch had no record of, written by apply after its verify
    // gate: the file is still exactly what apply wrote, and the backup the
    // pristine code the anchors fit; restoring it needs no --yes.
    let unrecorded_pristine = current == chosen.manifest.sha256_after
        && spec.anchors.as_ref().is_some_and(|a| {
            let text = identity::text_of(&saved);
            !a.is_patched(&text) && a.check(&text).is_ok()
        });
    if !yes {
        if !known_original && !unrecorded_pristine {
            return Ok(Step::Done(Reverted::Refused(format!(
                "backup {} holds sha256 {saved_hash}, which is not a known original; rerun with --yes to restore it anyway",
                chosen.id
            ))));
        }
        if current != chosen.manifest.sha256_after && !spec.is_patched(&current) {
            return Ok(Step::Done(Reverted::Refused(format!(
                "the file changed since it was patched (sha256 {current}); rerun with --yes to overwrite it with the backup"
            ))));
        }
    }
    kill_point::reached("backup-checked")?;
    // The file keeps its current mode and owner: a manifest's mode is never applied.
    let tx = Transaction::begin(file, snapshot, REVERT_UNDONE, REVERT_CHANGED_HELP);
    let pending = tx.stage(&saved)?;
    kill_point::reached("temp-written")?;
    Ok(Step::Ready(Box::new(ReadyRestore {
        tx,
        pending,
        saved_hash,
        newest,
        _lock: install_lock,
    })))
}

/// `mcpatch backups`: list them, damaged ones included (a backup whose saved
/// file is missing, changed or not root's alone is damaged, as revert would
/// refuse it); with `ids`, only the ids, newest first, one a line (what shell
/// completion offers for `--backup`).
///
/// Each target keeps its backups in a folder of its own; the table shows the
/// first target's folder always and another's when it holds any. `--json`
/// lists them all, each with its `target`; its `root` is the first target's
/// folder and `roots` names each target's.
pub fn list(targets: &[&PatchSpec], json: bool, ids: bool, env: &Environment) -> Result<Outcome> {
    let home = env.state_home()?;
    let mut listings: Vec<(&PatchSpec, PathBuf, backup::Listing)> = Vec::new();
    for &spec in targets {
        // A target over several packages has one backups folder.
        if listings.iter().any(|(s, _, _)| s.id == spec.id) {
            continue;
        }
        let root = backup::root(&home, spec);
        let listing = backup::list_all(&root)?;
        listings.push((spec, root, listing));
    }
    if ids {
        let mut all: Vec<&str> = listings
            .iter()
            .flat_map(|(_, _, l)| l.backups.iter().map(|b| b.id.as_str()))
            .collect();
        all.sort();
        for id in all.iter().rev() {
            outln!("{id}");
        }
        return Ok(Outcome::Clean);
    }
    if json {
        #[derive(serde::Serialize)]
        struct Root<'a> {
            target: &'a str,
            #[serde(serialize_with = "path_json::serialize")]
            root: &'a Path,
        }
        #[derive(serde::Serialize)]
        struct Listing<'a> {
            #[serde(serialize_with = "path_json::serialize")]
            root: &'a Path,
            roots: Vec<Root<'a>>,
            backups: Vec<Listed<'a>>,
        }
        let mut entries: Vec<Listed> = listings
            .iter()
            .flat_map(|(spec, _, l)| entries_of(spec, l))
            .collect();
        entries.sort_by(|a, b| a.id.cmp(b.id));
        // Paths are text by path_json, so the listing always serializes.
        let text = serde_json::to_string_pretty(&Listing {
            root: &listings[0].1,
            roots: listings
                .iter()
                .map(|(spec, root, _)| Root {
                    target: spec.target,
                    root,
                })
                .collect(),
            backups: entries,
        })
        .unwrap_or_default();
        outln!("{text}");
        return Ok(Outcome::Clean);
    }
    // A folder is shown when it holds backups; with none anywhere, the one
    // folder they would all be under (not the first target's).
    let mut shown = false;
    for (spec, root, l) in &listings {
        let entries = entries_of(spec, l);
        if !entries.is_empty() {
            shown = true;
            crate::out!(
                "{}",
                render_listing(root, entries, crate::width::stdout_columns())
            );
        }
    }
    if !shown {
        let root = &listings[0].1;
        let all = if listings.len() > 1 {
            root.parent().unwrap_or(root)
        } else {
            root
        };
        crate::out!(
            "{}",
            render_listing(all, Vec::new(), crate::width::stdout_columns())
        );
    }
    Ok(Outcome::Clean)
}

/// The backups of one target's listing, damaged ones last. Only the saved
/// file is hashed: it is small, and what revert checks first.
fn entries_of<'a>(spec: &'a PatchSpec, l: &'a backup::Listing) -> Vec<Listed<'a>> {
    l.backups
        .iter()
        .map(|b| Listed {
            target: spec.target,
            id: &b.id,
            dir: &b.dir,
            manifest: Some(&b.manifest),
            damaged: backup::saved_file_damage(b, spec),
        })
        .chain(l.damaged.iter().map(|d| Listed {
            target: spec.target,
            id: &d.id,
            dir: &d.dir,
            manifest: None,
            damaged: Some(d.damaged.clone()),
        }))
        .collect()
}

/// One backup as `backups` lists it.
#[derive(serde::Serialize)]
struct Listed<'a> {
    target: &'a str,
    id: &'a str,
    #[serde(serialize_with = "path_json::serialize")]
    dir: &'a Path,
    manifest: Option<&'a backup::BackupManifest>,
    /// What is wrong with it, else null.
    damaged: Option<String>,
}

/// The `backups` table in at most `columns` (when given): a row per backup
/// when that fits, else each backup's file (shortened from the middle) or what
/// is wrong with it on a line of its own, above its id, version and hash.
fn render_listing(root: &Path, mut entries: Vec<Listed<'_>>, columns: Option<usize>) -> String {
    let mut s = String::new();
    let root_shown = |lead: &str, end: &str| {
        let text = crate::output::path(root);
        match columns {
            Some(c) => shorten_middle(&text, c.saturating_sub(lead.len() + end.len())),
            None => text,
        }
    };
    if entries.is_empty() {
        s.push_str(&format!(
            "no backups under {}\n",
            root_shown("no backups under ", "")
        ));
        return s;
    }
    s.push_str(&format!(
        "backups under {}:\n",
        root_shown("backups under ", ":")
    ));
    // Newest first; a damaged backup says what is wrong in place of its file.
    entries.sort_by(|a, b| b.id.cmp(a.id));
    let version = |e: &Listed| {
        e.manifest
            .and_then(|m| m.version.as_deref())
            .map(|v| crate::output::clean(v).into_owned())
            .unwrap_or_else(|| "?".into())
    };
    let hash = |e: &Listed| {
        e.manifest
            .map(|m| {
                crate::output::clean(&survey::table::short_hash(&m.sha256_before)).into_owned()
            })
            .unwrap_or_else(|| "?".into())
    };
    let file = |e: &Listed| match (&e.damaged, e.manifest) {
        (Some(why), _) => format!("DAMAGED: {}", crate::output::clean(why)),
        (None, Some(m)) => crate::output::path(&m.original_path),
        (None, None) => "?".into(),
    };
    let mut wide = Table::new(
        &["ID", "VERSION", "SAVED SHA256", "FILE"],
        &[Align::Left, Align::Left, Align::Left, Align::Left],
    );
    let mut narrow = Table::new(
        &["ID", "VERSION", "SAVED SHA256"],
        &[Align::Left, Align::Left, Align::Left],
    );
    for e in &entries {
        let id = crate::output::clean(e.id).into_owned();
        wide.row(vec![id.clone(), version(e), hash(e), file(e)]);
        narrow.row(vec![id, version(e), hash(e)]);
    }
    match columns {
        Some(c) if wide.width() > c => {
            let lines = narrow.lines();
            s.push_str(&format!("FILE\n    {}", lines[0]));
            for (e, line) in entries.iter().zip(&lines[1..]) {
                match &e.damaged {
                    Some(_) => s.push_str(&hanging("", &file(e), Some(c))),
                    None => s.push_str(&format!("{}\n", shorten_middle(&file(e), c))),
                }
                s.push_str(&format!("    {line}"));
            }
        }
        _ => s.push_str(&wide.lines().concat()),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn damaged(id: &str) -> DamagedBackup {
        DamagedBackup {
            id: id.into(),
            dir: PathBuf::from("/b").join(id),
            damaged: "manifest.json is not JSON".into(),
        }
    }

    fn backup(id: &str) -> Backup {
        let manifest = serde_json::from_value(serde_json::json!({
            "id": id,
            "patch_id": "p",
            "original_path": "/pkg/dist/index.js",
            "package_dir": "/pkg",
            "version": "1.0.0",
            "sha256_before": "a".repeat(64),
            "sha256_after": "b".repeat(64),
            "mode": "0644",
            "mcpatch_version": "0.1.0",
            "created": "2026-12-02T00:00:00Z",
        }))
        .unwrap();
        Backup {
            id: id.into(),
            dir: PathBuf::from("/b").join(id),
            manifest,
        }
    }

    /// A backups folder too long for any terminal.
    fn long_folder() -> PathBuf {
        PathBuf::from(format!("/{}backups", "state/".repeat(20)))
    }

    #[test]
    fn no_backups_under_a_long_folder_fits_the_terminal_width() {
        let root = long_folder();
        for columns in [40, 60] {
            let text = render_listing(&root, Vec::new(), Some(columns));
            let line = text.trim_end();
            assert!(line.starts_with("no backups under /state"), "{text}");
            assert!(line.contains('…'), "{text}");
            assert!(line.chars().count() <= columns, "{columns}: {text}");
        }
        assert_eq!(
            render_listing(&root, Vec::new(), None),
            format!("no backups under {}\n", root.display())
        );
    }

    /// A table that fits the terminal stays a row per backup, the file last;
    /// one column narrower, each file goes on its own line above its row.
    #[test]
    fn a_backups_table_that_fits_stays_in_rows_and_one_that_does_not_puts_each_file_above() {
        let b = backup("20261202T000000Z-1");
        let listed = || {
            vec![Listed {
                target: "t",
                id: &b.id,
                dir: &b.dir,
                manifest: Some(&b.manifest),
                damaged: None,
            }]
        };
        let rows = "backups under /b:
ID                  VERSION  SAVED SHA256   FILE
20261202T000000Z-1  1.0.0    aaaaaaaa…aaaa  /pkg/dist/index.js
";
        let width = rows.lines().map(|l| l.chars().count()).max().unwrap();
        assert_eq!(render_listing(Path::new("/b"), listed(), None), rows);
        assert_eq!(render_listing(Path::new("/b"), listed(), Some(width)), rows);
        // A folder too long for the header is shortened to the width, colon included.
        let text = render_listing(&long_folder(), listed(), Some(60));
        let header = text.lines().next().unwrap();
        assert!(
            header.starts_with("backups under /state") && header.ends_with("backups:"),
            "{text}"
        );
        assert!(header.chars().count() <= 60, "{text}");
        assert_eq!(
            render_listing(Path::new("/b"), listed(), Some(width - 1)),
            "backups under /b:
FILE
    ID                  VERSION  SAVED SHA256
/pkg/dist/index.js
    20261202T000000Z-1  1.0.0    aaaaaaaa…aaaa
"
        );
    }

    #[test]
    fn a_damaged_backup_is_named_only_when_newer_than_the_chosen_one() {
        let list = [damaged("20261201T000000Z-1"), damaged("20261203T000000Z-1")];
        let id = |d: Option<&DamagedBackup>| d.map(|d| d.id.clone());
        let newest = Some("20261203T000000Z-1".to_string());
        assert_eq!(id(damaged_newer_than(&list, None)), newest);
        let older = backup("20261202T000000Z-1");
        assert_eq!(id(damaged_newer_than(&list, Some(&older))), newest);
        let newer = backup("20261204T000000Z-1");
        assert_eq!(id(damaged_newer_than(&list, Some(&newer))), None);
        let same = backup("20261203T000000Z-1");
        assert_eq!(id(damaged_newer_than(&list, Some(&same))), None);
    }

    #[test]
    fn a_patched_file_with_no_backup_names_the_folder_and_the_targets_way_back() {
        let spec = crate::registry::session_loss().unwrap();
        let (why, help) = no_backup(&spec, Path::new("/state/backups"));
        assert_eq!(
            why,
            "it carries the patch, and no backup of it is under /state/backups"
        );
        assert_eq!(
            help,
            format!(
                "to get the original back: {}; or, if it was patched with another state folder (sudo uses root's), run `MCPATCH_HOME=<that folder> mcpatch revert` (`--backup ID` picks one of the backups `mcpatch backups` lists there)",
                spec.texts.reinstall
            )
        );
    }

    #[test]
    fn a_file_carries_the_patch_only_when_it_holds_the_targets_marker() {
        let spec = crate::registry::session_loss().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let patched = dir.path().join("patched.js");
        std::fs::write(&patched, format!("a;\n// {}\nb;\n", spec.patch_marker)).unwrap();
        let plain = dir.path().join("plain.js");
        std::fs::write(&plain, "a;\nb;\n").unwrap();
        assert!(carries_patch(&spec, &patched));
        assert!(!carries_patch(&spec, &plain));
        assert!(!carries_patch(&spec, &dir.path().join("missing.js")));
    }
}
