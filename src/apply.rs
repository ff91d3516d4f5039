//! `mcpatch apply`: patches every affected install as one transaction per
//! file — lock, stage, check, back up, replace atomically, re-hash — that
//! rolls back on drop unless committed.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::automation::{self, ChangeReport, InstallChange};
use crate::backup::{self, NewBackup};
use crate::classify::{self, Install, State};
use crate::environment::Environment;
use crate::error::{Error, Failures, Result};
use crate::exit_code::Outcome;
use crate::identity::{self, sha256_hex};
use crate::kill_point;
use crate::lock;
use crate::node::{self, Node};
use crate::registry::{self, PatchSpec};
use crate::replace;
use crate::running::{self, ProcessTable};
use crate::stage;
use crate::survey;
use crate::transaction::{Transaction, APPLY_CHANGED_HELP};
use crate::verify::{self, GateReport};

/// What apply's rollback does, as the re-hash error says it.
const APPLY_UNDONE: &str = "the original was restored";

/// Options of `mcpatch apply`.
#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    pub paths: Vec<PathBuf>,
    pub dry_run: bool,
    pub yes: bool,
    pub node: Option<PathBuf>,
    /// Print one JSON report ([`ChangeReport`]) instead of text.
    pub json: bool,
    /// For unattended runs: nothing when nothing changes, one line per change
    /// on stdout, one line per refusal on stderr.
    pub quiet: bool,
    /// Write a revision mcpatch does not know without verifying the patched copy first.
    pub no_verify: bool,
    /// As root: run the install's code even when another user can change it (see trust).
    pub trust_owner: bool,
}

/// How a revision mcpatch does not know was checked before it was written.
enum Gate {
    /// A known revision: the patched result is the one mcpatch verified.
    Known,
    /// Verified on the staged copy, and it passed.
    Passed(GateReport),
    /// Written without verify (`--no-verify`).
    Skipped,
}

impl Gate {
    /// What to say about it under the install's line, if anything.
    fn line(&self) -> Option<String> {
        match self {
            Gate::Known => None,
            Gate::Passed(r) => Some(format!(
                "verified first (a revision mcpatch does not know): all {} scenario runs of the patched copy met the current patch revision's expectations (overall {}, node {})",
                r.scenarios.len(),
                r.overall,
                r.node_version
            )),
            Gate::Skipped => Some(NOT_VERIFIED.to_string()),
        }
    }

    /// The same in a few words, for `--quiet`.
    fn short(&self) -> &'static str {
        match self {
            Gate::Known => "",
            Gate::Passed(_) => ", verified first (a revision mcpatch does not know)",
            Gate::Skipped => ", NOT verified (--no-verify; a revision mcpatch does not know)",
        }
    }
}

/// What apply says when `--no-verify` let an unknown revision through.
const NOT_VERIFIED: &str = "not verified (--no-verify): a revision mcpatch does not know was written without proof that it recovers; check it with `mcpatch verify`";

/// What happened to one file.
enum FileResult {
    Patched {
        backup_id: String,
        sha256: String,
        /// The earlier patch revision it was upgraded from, if any.
        upgraded_from: Option<u32>,
        /// Whether the backup holds a known original (else the modified file
        /// as it was, or the one an earlier patch revision was put on).
        known_base: bool,
        /// Whether that backup was already there (made by an earlier apply).
        reused: bool,
        gate: Gate,
    },
    WouldPatch {
        upgrade_from: Option<u32>,
        gate: Gate,
    },
    AlreadyPatched,
    NothingToDo(&'static str),
    Refused(String),
    /// An unknown revision whose patched copy did not pass verify.
    FailedVerify {
        why: String,
        report: GateReport,
    },
}

pub fn run(targets: &[&PatchSpec], opts: &ApplyOptions, env: &Environment) -> Result<Outcome> {
    let mut report = ChangeReport {
        dry_run: Some(opts.dry_run),
        ..ChangeReport::default()
    };
    let result = apply_all(targets, opts, env, &mut report);
    if opts.json {
        report.finish(result)
    } else {
        result
    }
}

fn apply_all(
    targets: &[&PatchSpec],
    opts: &ApplyOptions,
    env: &Environment,
    report_out: &mut ChangeReport,
) -> Result<Outcome> {
    // Human lines go to stdout only without --json; --quiet keeps one line per change.
    let say = |args: std::fmt::Arguments<'_>| {
        if !opts.json && !opts.quiet {
            crate::out!("{}", crate::table::for_a_person(&args.to_string()));
        }
    };
    let say_quiet = |args: std::fmt::Arguments<'_>| {
        if !opts.json && opts.quiet {
            crate::out!("{}", crate::table::for_a_person(&args.to_string()));
        }
    };
    let survey::Collected { report, failed } = survey::collect_all(targets, &opts.paths, env)
        .inspect_err(|e| report_out.searched = survey::searched_before(&opts.paths, e))?;
    report_out.searched = report.searched.clone();
    report_out
        .installs
        .extend(report.errors.iter().map(InstallChange::unreadable));
    if report.installs.is_empty() && failed.is_empty() {
        if !opts.json && !opts.quiet {
            crate::out!("{}", survey::table::render_table(&report));
        }
        return Ok(Outcome::Clean);
    }
    // node is needed only when something may be patched.
    let node = if report
        .installs
        .iter()
        .any(|i| matches!(i.state, State::Affected | State::Modified | State::Outdated))
    {
        Some(node::find(opts.node.as_deref())?)
    } else {
        None
    };
    let home = env.state_home()?;
    let mut outcome = Outcome::Clean;
    let mut changed_targets: Vec<&PatchSpec> = Vec::new();
    let items = survey::each_file(&report.installs);
    let mut failures = Failures::new(items.len() + failed.len(), "patched");
    let mut failed = failed.into_iter();
    // One backups folder and lock per target, taken before its first install.
    let mut locked: Option<(&str, PathBuf, Option<lock::WriteLock>)> = None;
    let processes = ProcessTable::scan();
    for item in &items {
        let spec = registry::find(targets, item.target, &item.install.package);
        if locked.as_ref().is_none_or(|(t, _, _)| *t != spec.target) {
            drop(locked.take());
            let root = backup::root(&home, spec);
            // A dry run creates nothing: no backups folder, no lock file.
            let lock = if opts.dry_run {
                backup::check_root_for_dry_run(&root)?;
                None
            } else {
                backup::prepare_root(&root)?;
                Some(lock::acquire(&root)?)
            };
            kill_point::reached("locked")?;
            for e in failed.by_ref() {
                failures.absorb::<()>(Err(e))?;
            }
            locked = Some((spec.target, root, lock));
        }
        let root = &locked.as_ref().expect("locked above").1;
        let (file, package_dir, state_before) = (&item.file, &item.dir, &item.state);
        let label = match &item.version {
            Some(v) => format!("{} ({v})", package_dir.display()),
            None => package_dir.display().to_string(),
        };
        report_out.installs.push(InstallChange::new(
            spec.target,
            package_dir,
            file,
            Some(*state_before),
        ));
        let result = if let Some(why) = &item.unfound {
            Ok(FileResult::Refused(format!("unsupported: {why}")))
        } else {
            apply_file(
                spec,
                node.as_ref(),
                root,
                item.install,
                package_dir,
                file,
                opts,
            )
            .map_err(|e| interrupted_at(e, file))
        };
        let entry = report_out.installs.last_mut().expect("just pushed");
        if let Err(e) = &result {
            entry.error = Some(e.to_string());
            entry.state_after = automation::state_now(spec, file);
        }
        let Some(result) = failures.absorb(result)? else {
            continue;
        };
        entry.state_after = automation::state_now(spec, file);
        match result {
            FileResult::Patched {
                backup_id,
                sha256,
                upgraded_from,
                known_base,
                reused,
                gate,
            } => {
                if !changed_targets.iter().any(|t| t.target == spec.target) {
                    changed_targets.push(spec);
                }
                entry.changed = true;
                entry.backup = Some(backup_id.clone());
                let what = match upgraded_from {
                    Some(r) => format!("upgraded {label} from patch revision {r}"),
                    None => format!("patched {label}"),
                };
                // Say what the backup holds: the original only when it is one.
                let kept = match (known_base, upgraded_from) {
                    (true, _) => "original".to_string(),
                    (false, None) => {
                        "file as it was (modified, not a revision mcpatch knows)".to_string()
                    }
                    (false, Some(r)) => {
                        format!("modified file patch revision {r} was put on")
                    }
                };
                let saved = if reused {
                    "already saved as"
                } else {
                    "saved as"
                };
                say(format_args!(
                    "{what}\n    sha256 now {}, {kept} {saved} backup {backup_id}",
                    survey::table::short_hash(&sha256)
                ));
                if let Some(line) = gate.line() {
                    say(format_args!("    {line}"));
                }
                let running = processes.running(spec, package_dir, file);
                for line in running::lines(&running) {
                    say(format_args!("    {line}"));
                }
                say_quiet(format_args!(
                    "{what}: backup {backup_id}{}{}",
                    gate.short(),
                    running::short(&running)
                ));
                if let Gate::Passed(r) = gate {
                    entry.verify = Some(r);
                }
            }
            FileResult::WouldPatch { upgrade_from, gate } => {
                entry.changed = true;
                entry.state_after = Some(State::Patched);
                let what = match upgrade_from {
                    Some(r) => format!("upgraded from patch revision {r}"),
                    None => "patched".to_string(),
                };
                say(format_args!(
                    "dry run: {label} would be {what} (the patch fits, node --check and the load check pass); nothing changed"
                ));
                if let Some(line) = gate.line() {
                    say(format_args!("    {line}"));
                }
                say_quiet(format_args!(
                    "dry run: {label} would be {what}{}",
                    gate.short()
                ));
                if let Gate::Passed(r) = gate {
                    entry.verify = Some(r);
                }
            }
            FileResult::AlreadyPatched => {
                say(format_args!("already patched: {label}; nothing to do"));
                for line in running::lines(&processes.running(spec, package_dir, file)) {
                    say(format_args!("    {line}"));
                }
            }
            FileResult::NothingToDo(why) => say(format_args!("{why}: {label}; nothing to do")),
            FileResult::Refused(why) => {
                outcome = Outcome::Attention;
                say(format_args!("refused: {label}\n    {why}"));
                if opts.quiet && !opts.json {
                    let line = format!("refused: {label}: {}", why.replace('\n', " "));
                    crate::errln!("{}", crate::output::clean(&line));
                }
                entry.error = Some(format!("refused: {why}"));
            }
            FileResult::FailedVerify { why, report } => {
                outcome = Outcome::Attention;
                let verdicts = report.failing_lines();
                say(format_args!("refused: {label}\n    {why}"));
                for line in &verdicts {
                    say(format_args!("    {line}"));
                }
                if opts.quiet && !opts.json {
                    let line = format!("refused: {label}: {why}");
                    crate::errln!("{}", crate::output::clean(&line));
                }
                entry.error = Some(format!("refused: {why}\n{}", verdicts.join("\n")));
                entry.verify = Some(report);
            }
        }
    }
    drop(locked);
    report_out.fill_running(targets, &processes);
    for e in failed {
        failures.absorb::<()>(Err(e))?;
    }
    for spec in &changed_targets {
        say(format_args!(
            "{}; check it with `mcpatch verify`",
            spec.texts.restart_patched
        ));
    }
    if !changed_targets.is_empty() {
        // A host that cannot start would be blamed on the patch: say so before the restart.
        let mut told = Vec::new();
        for (i, d) in report
            .installs
            .iter()
            .filter_map(|i| Some((i, i.host_defect.as_ref()?)))
        {
            if !told.contains(&&d.host) {
                told.push(&d.host);
                let host = registry::find(targets, i.target, &i.package).texts.host;
                let columns = crate::width::stdout_columns();
                say(format_args!(
                    "{}{}",
                    crate::table::hanging(
                        "",
                        &format!(
                            "but the {host} host at {} cannot start, and that is NOT the patch: fix it first",
                            crate::output::path(&d.host)
                        ),
                        columns
                    ),
                    survey::table::render_host_defect(d, columns).trim_end()
                ));
            }
        }
    }
    failures.finish()?;
    Ok(outcome)
}

/// A signal caught while `file` was being patched: stop every install, naming it.
fn interrupted_at(e: Error, file: &Path) -> Error {
    match e {
        Error::StepInterrupted { signal, .. }
        | Error::Interrupted { signal }
        | Error::BridgeInterrupted { signal, .. } => Error::ApplyInterrupted {
            signal,
            path: file.to_path_buf(),
        },
        e => e,
    }
}

/// As root, the load check (and any verify) runs the install's code: a
/// refusal when another user can change it (`paths` and the folders on the
/// way) and the user did not say --trust-owner.
fn untrusted(package_dir: &Path, paths: &[&Path], opts: &ApplyOptions) -> Option<FileResult> {
    crate::trust::check(
        package_dir,
        paths,
        opts.trust_owner,
        "this install's code (apply's load check)",
        "apply",
    )
    .err()
    .map(|e| FileResult::Refused(e.to_string().replace("\nhelp: ", "; ")))
}

/// One file of an install staged, checked and backed up, ready to be renamed
/// into place together with the install's other files.
struct Ready {
    tx: Transaction,
    pending: replace::PendingFile,
    after: String,
    made: backup::Backup,
    reused: bool,
    upgrade_from: Option<u32>,
    known_base: bool,
    gate: Gate,
}

/// What preparing one file gave: a change ready to commit, or a result for
/// the file that writes nothing.
enum Prepared {
    Ready(Box<Ready>),
    Done(FileResult),
}

/// Patch one install: its file and, for a target of several files per
/// install (mcp-sdk's ESM and CJS builds), its companions, as one
/// transaction: every file is staged, checked and backed up first; then all
/// are renamed into place and re-hashed; any failure rolls back every file
/// already replaced and every backup made (both or neither).
fn apply_file(
    spec: &PatchSpec,
    node: Option<&Node>,
    backup_root: &Path,
    install: &Install,
    package_dir: &Path,
    file: &Path,
    opts: &ApplyOptions,
) -> Result<FileResult> {
    let mut parts: Vec<(&PatchSpec, PathBuf)> = vec![(spec, file.to_path_buf())];
    for c in &spec.companions {
        match crate::companions::resolve(c, package_dir) {
            Ok(Some(path)) if path != file => parts.push((c, path)),
            Ok(_) => {}
            // package.json names a companion mcpatch refuses: no file of
            // this install is written.
            Err(why) => {
                return Ok(FileResult::Refused(format!(
                    "the {} build: {why}",
                    c.role.as_deref().unwrap_or_default()
                )))
            }
        }
    }
    // Held until the change is committed or rolled back: runs with another
    // DSH_HOME take turns on this install too.
    let mut locks = Vec::new();
    let mut ready: Vec<Ready> = Vec::new();
    let mut would: Option<FileResult> = None;
    for (part, path) in &parts {
        match prepare_file(
            part,
            node,
            backup_root,
            install,
            package_dir,
            path,
            opts,
            &mut locks,
        )? {
            Prepared::Ready(r) => ready.push(*r),
            Prepared::Done(FileResult::AlreadyPatched) => {}
            Prepared::Done(w @ FileResult::WouldPatch { .. }) => {
                would.get_or_insert(w);
            }
            // Nothing of this install is written: the files already staged
            // and their backups go with their transactions.
            Prepared::Done(other) => return Ok(other),
        }
    }
    if let Some(w) = would {
        return Ok(w);
    }
    if ready.is_empty() {
        return Ok(FileResult::AlreadyPatched);
    }
    let mut placed = Vec::new();
    for r in ready {
        let Ready {
            mut tx,
            pending,
            after,
            made,
            reused,
            upgrade_from,
            known_base,
            gate,
        } = r;
        // Checks the file is still the one read above, renames, then re-hashes.
        tx.replace(pending)?;
        let now = tx.confirm(&after)?;
        placed.push((tx, now, made, reused, upgrade_from, known_base, gate));
        if placed.len() == 1 && parts.len() > 1 {
            kill_point::reached("first-of-several-replaced")?;
        }
    }
    let mut ids = Vec::new();
    let mut first = None;
    for (tx, now, made, reused, upgrade_from, known_base, gate) in placed {
        tx.commit();
        if reused {
            // The patch this backup was made for is on again: no longer reverted.
            backup::unmark_reverted(&made);
        }
        ids.push(made.id);
        first.get_or_insert((now, upgrade_from, known_base, reused, gate));
    }
    kill_point::reached("committed")?;
    let (sha256, upgraded_from, known_base, reused, gate) = first.expect("one file at least");
    Ok(FileResult::Patched {
        backup_id: ids.join(" + "),
        sha256,
        upgraded_from,
        known_base,
        reused,
        gate,
    })
}

#[allow(clippy::too_many_arguments)]
fn prepare_file(
    spec: &PatchSpec,
    node: Option<&Node>,
    backup_root: &Path,
    install: &Install,
    package_dir: &Path,
    file: &Path,
    opts: &ApplyOptions,
    locks: &mut Vec<lock::InstallLock>,
) -> Result<Prepared> {
    let lock = lock::lock_install(file)?;
    let fresh = lock.fresh;
    locks.push(lock);
    kill_point::reached("install-locked")?;
    if fresh {
        replace::remove_stale_temps(file);
    }
    // Re-read under the lock: another mcpatch may have patched it meanwhile.
    let snapshot = identity::read(file)?;
    let before = snapshot.sha256.clone();
    let bytes = &snapshot.bytes;
    let (state, _, note) = classify::classify_bytes(spec, bytes, &before);
    match state {
        State::Affected | State::Outdated => {}
        State::Patched => return Ok(Prepared::Done(FileResult::AlreadyPatched)),
        State::UpstreamFixed => {
            return Ok(Prepared::Done(FileResult::NothingToDo("upstream-fixed")))
        }
        State::Unsupported => {
            return Ok(Prepared::Done(FileResult::Refused(format!(
                "unsupported: {}",
                note.unwrap_or_else(|| "the patch cannot help this revision".into())
            ))))
        }
        State::Modified => {}
    }
    let current = std::str::from_utf8(bytes).map_err(|_| Error::PatchDoesNotApply {
        reinstall: spec.texts.reinstall,
        path: file.to_path_buf(),
        detail: "the file is not UTF-8 text".into(),
    })?;
    // An earlier patch revision comes out first: for its known hash the result
    // must be the original, byte for byte; on a locally modified file, the
    // modified file it was put on.
    let upgrade = if state == State::Outdated {
        Some(stage::remove_earlier(spec, current, &before, file)?)
    } else {
        None
    };
    let (original, original_hash, upgrade_from) = match &upgrade {
        Some((text, revision)) => (text.as_str(), sha256_hex(text.as_bytes()), Some(*revision)),
        None => (current, before.clone(), None),
    };
    // Under the patch is the revision it was cut against, or a file mcpatch
    // does not know (patched only when the user says so).
    let expected = spec.patched_for(&original_hash);
    let known_base = expected.is_some();
    let staged = stage::apply_diff(spec, original, file)
        .map_err(|e| backup::point_to_original(e, backup_root, spec, file))?;
    kill_point::reached("staged")?;
    let after = sha256_hex(staged.as_bytes());
    if let Some(expected) = expected.filter(|e| *e != after) {
        return Err(Error::HashMismatch {
            path: file.to_path_buf(),
            expected: expected.to_string(),
            found: after,
            undone: APPLY_UNDONE,
        });
    }
    let relative = file
        .strip_prefix(package_dir)
        .unwrap_or(file)
        .to_string_lossy()
        .into_owned();
    // Before anyone is asked: the install itself (node is looked at once found).
    if let Some(refused) = untrusted(package_dir, &[file], opts) {
        return Ok(Prepared::Done(refused));
    }
    // A release mcpatch has no record of that the anchors fit unmarked is
    // pristine (`affected`): the verify gate below proves it, no --yes needed.
    let pristine_fit = state == State::Affected && spec.anchors.is_some();
    if !known_base && !opts.yes && !pristine_fit {
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() && !opts.dry_run {
            match upgrade_from {
                Some(r) => crate::errln_fit!(
                    "{} carries patch revision {r} on a locally modified file; upgrading it would change:",
                    crate::output::path(file)
                ),
                None => crate::errln_fit!(
                    "{} is modified (not a revision mcpatch knows); the patch would change:",
                    crate::output::path(file)
                ),
            }
            crate::err!(
                "{}",
                crate::unified_diff::render_change(
                    &relative,
                    current,
                    &staged,
                    crate::color::stderr().on()
                )
            );
            let go = dialoguer::Confirm::new()
                .with_prompt("patch this file anyway?")
                .default(false)
                .interact()
                .unwrap_or(false);
            if !go {
                return Ok(Prepared::Done(FileResult::Refused(
                    "modified: you declined; nothing changed".into(),
                )));
            }
        } else if let Some(r) = upgrade_from {
            return Ok(Prepared::Done(FileResult::Refused(format!(
                "outdated: sha256 {before} carries patch revision {r} on a file mcpatch does not know; review with `mcpatch diff --path {}`, then rerun with --yes to upgrade it anyway",
                crate::scope::quote(&package_dir.to_string_lossy())
            ))));
        } else {
            return Ok(Prepared::Done(FileResult::Refused(format!(
                "modified: sha256 {before} is not a revision mcpatch knows{}; review with `mcpatch diff --path {}`, then rerun with --yes to patch it anyway",
                note.map(|n| format!(" ({n})")).unwrap_or_default(),
                crate::scope::quote(&package_dir.to_string_lossy())
            ))));
        }
    }
    let node = match node {
        Some(n) => n.clone(),
        None => node::find(opts.node.as_deref())?,
    };
    let node = &node;
    if let Some(refused) = untrusted(package_dir, &[file, &node.path], opts) {
        return Ok(Prepared::Done(refused));
    }
    stage::syntax_check(node, &staged, package_dir, &relative)?;
    kill_point::reached("syntax-checked")?;
    // What the backup keeps: the original (for an upgrade, the one recovered above).
    let original_bytes = original.as_bytes().to_vec();
    let mut tx = Transaction::begin(file, snapshot, APPLY_UNDONE, APPLY_CHANGED_HELP);
    // A result mcpatch never verified is written only after it recovers as
    // the current patch revision must, checked before anything else touches
    // the install (a copy that does not even load fails the load check first).
    let gate = if known_base {
        Gate::Known
    } else if opts.no_verify {
        Gate::Skipped
    } else {
        // From the copy staged in the install to the gate's end, a signal stops
        // this install with nothing of it left (see on_signal).
        let _catching = crate::on_signal::catch();
        let pending = tx.stage(staged.as_bytes())?;
        stage::load_check(node, pending.path(), &spec.exports)?;
        drop(pending);
        let progress = !opts.json && !opts.quiet;
        if progress {
            crate::errln_fit!(
                "{} is a revision mcpatch does not know: verifying the patched copy before writing it",
                crate::output::path(file)
            );
        }
        let report =
            verify::verify_staged_strict(spec, node, install, file, staged.as_bytes(), progress)?;
        if !report.passed {
            return Ok(Prepared::Done(FileResult::FailedVerify {
                why: format!(
                    "sha256 {before} is not a revision mcpatch knows, and its patched copy did not recover as the current patch revision must (verify: {}); the install is untouched",
                    report.overall
                ),
                report,
            }));
        }
        Gate::Passed(report)
    };
    if opts.dry_run {
        // The load check still runs from inside the install, then the temp file goes.
        let catching = crate::on_signal::catch();
        let pending = tx.stage(staged.as_bytes())?;
        stage::load_check(node, pending.path(), &spec.exports)?;
        drop(pending);
        drop(catching);
        stage::interrupted("the load check")?;
        tx.commit();
        return Ok(Prepared::Done(FileResult::WouldPatch {
            upgrade_from,
            gate,
        }));
    }
    // From the backup to the load check's end, a signal removes both the
    // backup and the staged file (the transaction's drop), and stops node.
    let catching = crate::on_signal::catch();
    let (made, reused) = backup::save(
        backup_root,
        spec,
        NewBackup {
            file,
            package_dir,
            version: classify::package_version(package_dir),
            bytes: &original_bytes,
            sha256_before: &original_hash,
            replaced_sha256: upgrade_from.map(|_| before.as_str()),
            sha256_after: &after,
            mode: Some(tx.before().mode),
        },
    )?;
    if !reused {
        // A backup an earlier run made stays, whatever happens to this one.
        tx.set_backup(made.dir.clone());
    }
    kill_point::reached("backed-up")?;
    let pending = tx.stage(staged.as_bytes())?;
    kill_point::reached("temp-written")?;
    stage::load_check(node, pending.path(), &spec.exports)?;
    drop(catching);
    stage::interrupted("the load check")?;
    kill_point::reached("load-checked")?;
    Ok(Prepared::Ready(Box::new(Ready {
        tx,
        pending,
        after,
        made,
        reused,
        upgrade_from,
        known_base,
        gate,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_says_how_an_unknown_revision_was_checked_in_full_and_in_few_words() {
        let passed = Gate::Passed(GateReport {
            passed: true,
            overall: "SEAMLESS",
            node_version: "v22.12.0".into(),
            scenarios: Vec::new(),
            exploration: None,
        });
        assert_eq!(
            [Gate::Known.line(), passed.line(), Gate::Skipped.line()],
            [
                None,
                Some("verified first (a revision mcpatch does not know): all 0 scenario runs of the patched copy met the current patch revision's expectations (overall SEAMLESS, node v22.12.0)".to_string()),
                Some("not verified (--no-verify): a revision mcpatch does not know was written without proof that it recovers; check it with `mcpatch verify`".to_string()),
            ]
        );
        assert_eq!(
            [Gate::Known.short(), passed.short(), Gate::Skipped.short()],
            [
                "",
                ", verified first (a revision mcpatch does not know)",
                ", NOT verified (--no-verify; a revision mcpatch does not know)",
            ]
        );
    }
}
