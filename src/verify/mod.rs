//! `mcpatch verify` and `mcpatch serve`: prove, offline and in seconds, that an
//! installed client heals itself when a server drops its session — the real
//! installed file, the real MCP SDK, real node, real HTTP servers.

pub mod drivers;
pub mod explore;
pub mod fake_server;
pub mod process;
pub mod scenario;
mod serve;

pub use serve::serve;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::backup;
use crate::classify::{self, Install, State};
use crate::color::visible_width;
use crate::color::{self, Painter, Style};
use crate::error::{Error, Failures, Result};
use crate::exit_code::Outcome;
use crate::locate::Environment;
use crate::node::{self, Node};
use crate::registry::PatchSpec;
use crate::status;
use crate::table::{hanging, shorten_middle, Align, Table};
use scenario::{Expectation, Judgement, Scenario, ScenarioName};

/// Options of `mcpatch verify`.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    pub paths: Vec<PathBuf>,
    /// `Some("")`: the newest backup; `Some(id)`: that one.
    pub backup: Option<String>,
    pub scenarios: Vec<ScenarioName>,
    pub node: Option<PathBuf>,
    pub json: bool,
    /// Scenario runs at once (default: all).
    pub jobs: Option<usize>,
    /// Judge every file by the current revision's expectations, whatever its sha256.
    pub strict: bool,
    /// As root: run the install's code even when another user can change it (see trust).
    pub trust_owner: bool,
    /// Explored runs (`None`: [`explore::DEFAULT_RUNS`] for a file judged by the
    /// current revision's expectations, none for others).
    pub explore: Option<u32>,
    /// The explored plans' seed (`None`: [`explore::DEFAULT_SEED`]).
    pub seed: Option<u64>,
    /// Only the explored runs, not the fixed table.
    pub explore_only: bool,
}

/// Which expectations a file was judged by, as `verify --json` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expectations {
    /// The file is the current patch revision: recovery must be seamless.
    CurrentRevision,
    /// `--strict`: the current revision's expectations, for a file that is not it.
    Strict,
    /// Any other file (earlier revision, unknown, the saved original): recovering
    /// after failed calls is enough.
    Relaxed,
}

impl Expectations {
    pub fn as_str(self) -> &'static str {
        match self {
            Expectations::CurrentRevision => "current-revision",
            Expectations::Strict => "strict",
            Expectations::Relaxed => "relaxed",
        }
    }

    /// Whether these are the current revision's (seamless) expectations.
    pub fn seamless(self) -> bool {
        self != Expectations::Relaxed
    }

    fn of(current_patch: bool, strict: bool) -> Self {
        match (current_patch, strict) {
            (true, _) => Expectations::CurrentRevision,
            (false, true) => Expectations::Strict,
            (false, false) => Expectations::Relaxed,
        }
    }
}

/// One scenario's result, as `verify --json` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub name: ScenarioName,
    /// The reconnect policy the client ran with: short (100 ms first backoff) or default (the package's own).
    pub policy: &'static str,
    pub expected: Expectation,
    /// verdict, ok, recovery_ms, trigger_ms, failed_calls, initialize_count, trigger_error, note.
    #[serde(flatten)]
    pub judgement: Judgement,
    pub node_version: String,
    /// For an install of several builds (mcp-sdk): the build it ran (`esm`, `cjs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// One install's results.
#[derive(Debug, Clone, Serialize)]
pub struct InstallResult {
    /// The target it is an install of (`--target NAME`).
    pub target: &'static str,
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub path: PathBuf,
    /// The file that was loaded: the install's, or the saved file of a backup.
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub file: PathBuf,
    pub backup: Option<String>,
    /// sha256 of what was loaded.
    pub sha256: String,
    /// The state of what was loaded (a backup's saved original is `affected`).
    pub state: State,
    /// Always false: verify changes no install (a backup's copy is removed after the run).
    pub changed: bool,
    /// The install's state as verify found it (with `--backup`, `state` is the
    /// backup's); fleet tools read the same fields from apply and revert.
    pub state_before: State,
    /// The same as `state_before`: verify leaves the install as it found it.
    pub state_after: State,
    /// Why the check of this install could not run (then `overall` is FAILED
    /// and `scenarios` is empty), else null.
    pub error: Option<String>,
    pub node_version: String,
    /// Whether the harness had to add Promise.withResolvers (Node < 22).
    pub node_shim: bool,
    /// The expectations the file was judged by: `current-revision` (it is the
    /// current patch revision), `strict` (`--strict` on any other file) or
    /// `relaxed` (any other file without `--strict`).
    pub expectations: Expectations,
    /// SEAMLESS, RECOVERED or HELD when every scenario met its expectation (by the
    /// weakest recovery seen, HELD when no recovery scenario ran), else STUCK or FAILED.
    pub overall: &'static str,
    /// What to make of the result, if anything.
    pub note: Option<String>,
    pub scenarios: Vec<ScenarioResult>,
    /// The explored runs (`verify --explore`), if any ran.
    pub exploration: Option<explore::Exploration>,
    /// Scenarios asked for that this install's client driver does not run, and why.
    pub left_out: Vec<drivers::LeftOut>,
}

#[derive(Debug, Serialize)]
struct VerifyReport {
    installs: Vec<InstallResult>,
    /// What stopped verify outside any one install (no install found, node
    /// missing, an interrupt), else null; each install's own failure is in its `error`.
    error: Option<String>,
}

/// The scenarios named, in the order verify reports them (when none are
/// named, all but those that run only when named: [`scenario::reload::by_name_only`]).
fn select(names: &[ScenarioName]) -> Vec<Scenario> {
    scenario::all()
        .into_iter()
        .filter(|s| {
            if names.is_empty() {
                !scenario::reload::by_name_only(s)
            } else {
                names.contains(&s.name)
            }
        })
        .collect()
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            Error::io(
                "start",
                "the async runtime",
                e,
                "check the machine's thread limits",
            )
        })
}

pub fn run(targets: &[&PatchSpec], opts: &VerifyOptions, env: &Environment) -> Result<Outcome> {
    let mut results = Vec::new();
    let result = verify_all(targets, opts, env, &mut results);
    if opts.json {
        // An error outside any one install is the report's own.
        let error = match &result {
            Err(e) if results.iter().all(|r| r.error.is_none()) => Some(e.to_string()),
            _ => None,
        };
        let text = serde_json::to_string_pretty(&VerifyReport {
            installs: results,
            error,
        })
        .expect("report serializes");
        crate::outln!("{text}");
    }
    result
}

fn verify_all(
    targets: &[&PatchSpec],
    opts: &VerifyOptions,
    env: &Environment,
    results: &mut Vec<InstallResult>,
) -> Result<Outcome> {
    let scenarios = select(&opts.scenarios);
    let report = status::collect(targets, &opts.paths, env)?;
    if report.installs.is_empty() {
        return Err(Error::NothingToVerify {
            packages: report.looked_for.packages,
            hosts: report.looked_for.hosts,
            searched: report.searched,
        });
    }
    if let Some(wanted) = opts.backup.as_deref() {
        for spec in targets {
            let installs: Vec<Install> = report
                .installs
                .iter()
                .filter(|i| i.target == spec.target)
                .cloned()
                .collect();
            check_backups_first(spec, &installs, wanted, env)?;
        }
    }
    let node = node::find(opts.node.as_deref())?;
    let progress = !opts.json || std::io::stderr().is_terminal();
    if progress {
        crate::errln!(
            "node {} ({})",
            crate::output::clean(&node.version),
            crate::output::path(&node.path)
        );
        // Only the plugin harness (DSH's plugin API) needs the shim.
        let plugin_host = report.installs.iter().find_map(|i| {
            let spec = crate::registry::find(targets, i.target, &i.package);
            drivers::of(spec.driver)
                .needs_with_resolvers()
                .then_some(spec.texts.host)
        });
        if let (false, Some(host)) = (node.has_with_resolvers, plugin_host) {
            crate::err!(
                "{}",
                crate::table::within(
                    &format!(
                        "note: node {} lacks Promise.withResolvers ({host} needs Node >= 22); the harness adds a spec-equivalent shim",
                        crate::output::clean(&node.version)
                    ),
                    crate::width::stderr_columns()
                )
            );
        }
    }
    let rt = runtime()?;
    // Before anything is put in an install: from here a signal is ours to handle.
    let mut interrupts = rt.block_on(async { Interrupts::listen() })?;
    let mut outcome = Outcome::Clean;
    // One install that cannot be checked does not stop the others.
    let mut failures = Failures::new(report.installs.len(), "verified");
    for install in &report.installs {
        let spec = crate::registry::find(targets, install.target, &install.package);
        if install.state == State::Unsupported {
            if !opts.json {
                crate::outln!(
                    "skipped {}: unsupported (no reconnect supervisor)",
                    crate::output::path(&install.path)
                );
            }
            outcome = Outcome::Attention;
            continue;
        }
        // With more than one install, each one's progress says whose it is.
        if progress && report.installs.len() > 1 {
            let lead = format!("verifying {} install ", spec.target);
            let path = crate::output::path(&install.path);
            let path = match crate::width::stderr_columns() {
                Some(c) => shorten_middle(&path, c.saturating_sub(lead.len())),
                None => path,
            };
            crate::errln!("{lead}{path}");
        }
        // A bridge is always held to the current revision's expectations.
        let strict = drivers::of(spec.driver).always_strict() || opts.strict;
        // As root, the install's code runs only if no other user can change it.
        let checked = crate::trust::check(
            &install.path,
            &[&install.file, &node.path],
            opts.trust_owner,
            "this install's code (verify)",
            "verify",
        )
        .and_then(|()| Target::for_install(spec, install, opts.backup.as_deref(), env))
        .and_then(
            |target| {
                // Ctrl-C or SIGTERM: stop, let node and the fake servers go, remove the copy.
                let result = rt.block_on(async {
                    tokio::select! {
                        r = check_install(spec, &node, install, &target, &scenarios, opts, progress) => r,
                        signal = interrupts.next() => Err(Error::Interrupted { signal }),
                    }
                });
                drop(target);
                result
            },
        );
        let result = match checked {
            Ok(result) => result,
            Err(e @ (Error::Interrupted { .. } | Error::BridgeInterrupted { .. })) => {
                return Err(e)
            }
            Err(e) => {
                results.push(not_checked(install, &node, &e, strict));
                failures.absorb::<()>(Err(e))?;
                continue;
            }
        };
        if !result.passed() {
            outcome = Outcome::Attention;
        }
        if !opts.json {
            crate::out!("{}", render(&result));
        }
        results.push(result);
    }
    failures.finish()?;
    Ok(outcome)
}

/// Before node is even looked for: the backups folder must be trusted (as
/// apply and revert check it: run as root, root's and writable by no one
/// else), and some install must have the backup asked for; else the error
/// names the install, the backups folder and the fix.
fn check_backups_first(
    spec: &PatchSpec,
    installs: &[Install],
    wanted: &str,
    env: &Environment,
) -> Result<()> {
    let root = backup::root(&env.state_home()?, spec);
    backup::check_trusted(&root)?;
    let backups = backup::list(&root)?;
    let checked: Vec<&Install> = installs
        .iter()
        .filter(|i| i.state != State::Unsupported)
        .collect();
    let named = (!wanted.is_empty()).then_some(wanted);
    match checked.first() {
        Some(first)
            if checked
                .iter()
                .all(|i| backup::pick(&backups, &i.file, named).is_none()) =>
        {
            Err(no_backup(&first.file, named, &root))
        }
        _ => Ok(()),
    }
}

/// No backup of `file` under `root` (or none named `named`).
fn no_backup(file: &std::path::Path, named: Option<&str>, root: &std::path::Path) -> Error {
    match named {
        Some(id) => Error::BackupNotFound {
            id: id.to_string(),
            dir: root.to_path_buf(),
        },
        None => Error::NoBackupToVerify {
            file: file.to_path_buf(),
            dir: root.to_path_buf(),
        },
    }
}

/// Run the verify scenarios against `file`, a client file inside the package
/// folder `package_dir` (the install's `lib/index.js`, or a copy beside it, so
/// its imports resolve from the install), by the current revision's
/// expectations when `opts.strict`. Nothing is located or changed; only
/// `scenarios`, `node`, `jobs` and `strict` of `opts` are used. For callers such
/// as an apply that verifies a patched file before it keeps it.
pub fn verify_file(
    spec: &PatchSpec,
    package_dir: &Path,
    file: &Path,
    opts: &VerifyOptions,
) -> Result<InstallResult> {
    let (bytes, sha256) = classify::hash_file(file)?;
    let assessed = classify::assess(spec, &bytes, &sha256);
    let install = Install {
        target: spec.target,
        path: package_dir.to_path_buf(),
        file: file.to_path_buf(),
        version: classify::package_version(package_dir),
        sha256: sha256.clone(),
        state: assessed.state,
        revision: assessed.revision,
        hard_links: 1,
        same_file_as: Vec::new(),
        found_via: vec!["verify_file".into()],
        next_step: assessed.next_step,
        note: assessed.note,
        host_defect: None,
        unfound: None,
        package: spec.package.clone(),
        role: spec.role.clone(),
        companions: Vec::new(),
        via: Vec::new(),
    };
    let target = Target {
        load: file.to_path_buf(),
        file: file.to_path_buf(),
        backup: None,
        sha256,
        state: install.state,
        _copy: None,
    };
    let scenarios = select(&opts.scenarios);
    let node = node::find(opts.node.as_deref())?;
    crate::trust::check(
        package_dir,
        &[file, &node.path],
        opts.trust_owner,
        "this install's code (verify)",
        "verify",
    )?;
    let rt = runtime()?;
    let mut interrupts = rt.block_on(async { Interrupts::listen() })?;
    rt.block_on(async {
        tokio::select! {
            r = check_install(spec, &node, &install, &target, &scenarios, opts, false) => r,
            signal = interrupts.next() => Err(Error::Interrupted { signal }),
        }
    })
}

/// The report of an install whose check could not run: `error` says why.
fn not_checked(install: &Install, node: &Node, e: &Error, strict: bool) -> InstallResult {
    InstallResult {
        target: install.target,
        path: install.path.clone(),
        file: install.file.clone(),
        backup: None,
        sha256: install.sha256.clone(),
        state: install.state,
        changed: false,
        state_before: install.state,
        state_after: install.state,
        error: Some(e.to_string()),
        node_version: node.version.clone(),
        node_shim: !node.has_with_resolvers,
        expectations: Expectations::of(install.state == State::Patched, strict),
        overall: "FAILED",
        note: None,
        scenarios: Vec::new(),
        exploration: None,
        left_out: Vec::new(),
    }
}

/// The file a verify run loads: the install's own, or a backup's saved file
/// copied next to it (so its imports resolve from the install) and removed afterwards.
pub(crate) struct Target {
    /// What node loads.
    load: PathBuf,
    /// What the report names: the install's file, or the backup's saved file.
    file: PathBuf,
    backup: Option<String>,
    sha256: String,
    state: State,
    /// The copy, locked while this run lives (removed on drop).
    _copy: Option<tempfile::NamedTempFile>,
}

/// Name prefix of the copy of a backup that `verify --backup` loads from inside an install.
const COPY_PREFIX: &str = ".mcpatch-verify-";

/// Remove copies that earlier `verify --backup` runs left behind when they were killed:
/// only those no live run holds (a run keeps its copy locked), never a link or non-file.
fn remove_dead_copies(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with(COPY_PREFIX)
            && [".js", ".cjs", ".mjs"].iter().any(|x| name.ends_with(x)))
        {
            continue;
        }
        let path = entry.path();
        let mut open = std::fs::OpenOptions::new();
        open.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            open.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        let Ok(file) = open.open(&path) else { continue };
        let dead = file.metadata().is_ok_and(|m| m.is_file()) && file.try_lock().is_ok();
        if dead {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// `bytes` written beside `file` as a locked `.mcpatch-verify-*.js`, so node
/// loads it with the install's imports; removed when dropped.
fn copy_beside(file: &std::path::Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile> {
    if let Some(dir) = file.parent() {
        remove_dead_copies(dir);
    }
    let mut temp = crate::replace::temp_beside(file, COPY_PREFIX)?;
    temp.as_file().try_lock().map_err(|e| {
        Error::io(
            "lock",
            temp.path(),
            std::io::Error::other(e.to_string()),
            "check that the install's folder is on a local disk",
        )
    })?;
    temp.write_all(bytes)
        .map_err(|e| Error::io("write", temp.path(), e, "check free space on that disk"))?;
    Ok(temp)
}

/// What the gate `apply` puts a revision mcpatch does not know through found
/// ([`verify_staged_strict`]).
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    /// Whether every scenario met the current patch revision's expectations.
    pub passed: bool,
    /// As `verify` reports it: SEAMLESS when it passed, else STUCK or FAILED.
    pub overall: &'static str,
    pub node_version: String,
    pub scenarios: Vec<ScenarioResult>,
}

/// What a scenario's name says of the run's policy, when it is not the
/// scenario's usual one: the DSH plugin's default policy, or that policy with
/// the package's own call timeout (60 s).
fn policy_label(policy: &str) -> &'static str {
    match policy {
        "default" => " (default policy)",
        "package" => " (60 s calls)",
        _ => "",
    }
}

impl GateReport {
    /// One line per scenario that did not meet its expectation.
    pub fn failing_lines(&self) -> Vec<String> {
        self.scenarios
            .iter()
            .filter(|x| !x.judgement.ok)
            .map(|x| {
                let policy = policy_label(x.policy);
                let j = &x.judgement;
                format!(
                    "{}{policy}: {} (expected {}): {}",
                    x.name,
                    j.verdict,
                    x.expected.verdict(),
                    j.note
                )
            })
            .collect()
    }
}

/// The gate `apply` puts a revision mcpatch does not know through, before
/// anything touches the install: the patched copy `staged` of `file` (the
/// install's file the patch changes) is written beside it as a locked
/// `.mcpatch-verify-*.js` (so its imports resolve from the install, as
/// `verify --backup` loads a backup; a driver that runs a program from the
/// install runs it on a copy of the file's folder holding it) and removed
/// afterwards, and every scenario runs on it with the current patch
/// revision's strict expectations (every recovery scenario SEAMLESS)
/// whatever the copy classifies as.
pub fn verify_staged_strict(
    spec: &PatchSpec,
    node: &Node,
    install: &Install,
    file: &std::path::Path,
    staged: &[u8],
    progress: bool,
) -> Result<GateReport> {
    let sha256 = classify::sha256_hex(staged);
    let (state, _, _) = classify::classify_bytes(spec, staged, &sha256);
    let copy = copy_beside(file, staged)?;
    let target = Target {
        load: copy.path().to_path_buf(),
        file: file.to_path_buf(),
        backup: None,
        sha256,
        state,
        _copy: Some(copy),
    };
    let scenarios = select(&[]);
    let strict = VerifyOptions {
        strict: true,
        ..VerifyOptions::default()
    };
    // A signal is recorded, not fatal, while the gate runs (apply goes on
    // after it and must stay stoppable, so no handler of the runtime's is
    // installed): the run below is dropped, which stops node and the fake
    // servers and removes the copies, and apply reports the interrupt.
    let catching = crate::on_signal::catch();
    let rt = runtime()?;
    let result = rt.block_on(async {
        tokio::select! {
            r = check_install(spec, node, install, &target, &scenarios, &strict, progress) => r,
            signal = caught_signal() => Err(Error::Interrupted { signal }),
        }
    });
    drop(rt);
    drop(target);
    drop(catching);
    if let Some(signal) = crate::on_signal::caught() {
        return Err(Error::Interrupted { signal });
    }
    let result = result?;
    Ok(GateReport {
        passed: result.passed(),
        overall: result.overall,
        node_version: result.node_version,
        scenarios: result.scenarios,
    })
}

impl Target {
    fn for_install(
        spec: &PatchSpec,
        install: &Install,
        backup_id: Option<&str>,
        env: &Environment,
    ) -> Result<Target> {
        let Some(wanted) = backup_id else {
            return Ok(Target {
                load: install.file.clone(),
                file: install.file.clone(),
                backup: None,
                sha256: install.sha256.clone(),
                state: install.state,
                _copy: None,
            });
        };
        let root = backup::root(&env.state_home()?, spec);
        // Trusted as apply and revert trust it, before node runs what it holds.
        backup::check_trusted(&root)?;
        let backups = backup::list(&root)?;
        let named = (!wanted.is_empty()).then_some(wanted);
        let chosen = backup::pick(&backups, &install.file, named)
            .ok_or_else(|| no_backup(&install.file, named, &root))?;
        let bytes = backup::read_checked(chosen, spec)?;
        let (state, _, _) = classify::classify_bytes(spec, &bytes, &chosen.manifest.sha256_before);
        let temp = copy_beside(&install.file, &bytes)?;
        Ok(Target {
            load: temp.path().to_path_buf(),
            file: chosen.dir.join(backup::SAVED_FILE),
            backup: Some(chosen.id.clone()),
            sha256: chosen.manifest.sha256_before.clone(),
            state,
            _copy: Some(temp),
        })
    }

    /// Whether what is loaded carries the current patch revision, so recovery must be seamless.
    fn is_current_patch(&self) -> bool {
        self.state == State::Patched
    }
}

/// Put one install's file (`target.load`) through `scenarios` with its
/// target's client driver ([`drivers::of`]).
async fn check_install(
    spec: &PatchSpec,
    node: &Node,
    install: &Install,
    target: &Target,
    scenarios: &[Scenario],
    opts: &VerifyOptions,
    progress: bool,
) -> Result<InstallResult> {
    drivers::of(spec.driver)
        .verify(drivers::Job {
            spec,
            node,
            install,
            target,
            scenarios,
            opts,
            progress,
        })
        .await
}

impl InstallResult {
    /// Whether every scenario met its expectation and every explored run kept the rules.
    pub fn passed(&self) -> bool {
        self.scenarios.iter().all(|s| s.judgement.ok)
            && self.exploration.as_ref().is_none_or(|e| e.ok)
    }

    /// The report of an install whose file (`target.load`) went through its
    /// scenarios; `overall` from their verdicts, no note, no shim, nothing left out.
    fn checked(
        install: &Install,
        target: &Target,
        node_version: String,
        expectations: Expectations,
        scenarios: Vec<ScenarioResult>,
    ) -> InstallResult {
        InstallResult {
            target: install.target,
            path: install.path.clone(),
            file: target.file.clone(),
            backup: target.backup.clone(),
            sha256: target.sha256.clone(),
            state: target.state,
            changed: false,
            state_before: install.state,
            state_after: install.state,
            error: None,
            node_version,
            node_shim: false,
            expectations,
            overall: overall(&scenarios),
            note: None,
            scenarios,
            exploration: None,
            left_out: Vec::new(),
        }
    }
}

/// The signal [`crate::on_signal`] records while a `catch` guard lives, once it comes.
async fn caught_signal() -> &'static str {
    loop {
        if let Some(signal) = crate::on_signal::caught() {
            return signal;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// SIGINT, SIGTERM and SIGHUP (the terminal closed), caught from the moment
/// they are listened to.
pub(crate) struct Interrupts {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

impl Interrupts {
    /// Start catching the signals (call inside the runtime).
    pub(crate) fn listen() -> Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let catch = |kind: SignalKind, name: &str| {
                signal(kind)
                    .map_err(|e| Error::io("catch", name, e, "check the machine's signal limits"))
            };
            Ok(Interrupts {
                int: catch(SignalKind::interrupt(), "SIGINT")?,
                term: catch(SignalKind::terminate(), "SIGTERM")?,
                hup: catch(SignalKind::hangup(), "SIGHUP")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Interrupts {})
    }

    /// The next signal caught.
    pub(crate) async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.int.recv() => "SIGINT",
                _ = self.term.recv() => "SIGTERM",
                _ = self.hup.recv() => "SIGHUP",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

fn broken(note: String) -> Judgement {
    Judgement {
        verdict: "BROKEN",
        ok: false,
        recovery_ms: None,
        trigger_ms: None,
        failed_calls: 0,
        initialize_count: 0,
        trigger_error: None,
        note,
    }
}

/// One word for an install: the weakest result that still met every expectation, or what failed.
fn overall(results: &[ScenarioResult]) -> &'static str {
    if !results.iter().all(|r| r.judgement.ok) {
        return if results.iter().any(|r| r.judgement.verdict == "STUCK") {
            "STUCK"
        } else {
            "FAILED"
        };
    }
    let recoveries: Vec<&str> = results
        .iter()
        .filter(|r| matches!(r.judgement.verdict, "SEAMLESS" | "RECOVERED"))
        .map(|r| r.judgement.verdict)
        .collect();
    if recoveries.contains(&"RECOVERED") {
        "RECOVERED"
    } else if recoveries.is_empty() {
        "HELD"
    } else {
        "SEAMLESS"
    }
}

fn install_note(target: &Target, overall: &str, expectations: Expectations) -> Option<String> {
    if target.backup.is_some() {
        return Some("the saved original, run as the control: judged as any file, so STUCK here is the bug the patch fixes, reproduced".into());
    }
    let strict = expectations == Expectations::Strict;
    match (target.state, overall) {
        (State::Patched, _) => None,
        (State::Outdated, "RECOVERED" | "SEAMLESS") if !strict => Some(
            "patched by an earlier mcpatch revision: it recovers, but calls that meet a lost session fail first; run `mcpatch apply` to upgrade to seamless recovery".into(),
        ),
        (State::Outdated, _) => Some(
            "patched by an earlier mcpatch revision; run `mcpatch apply` to upgrade".into(),
        ),
        (State::Affected, _) => Some("not patched: run `mcpatch apply`".into()),
        (_, "SEAMLESS" | "HELD") if strict => Some(
            "not the current patch revision, judged by its expectations (--strict): it meets them"
                .into(),
        ),
        (_, _) if strict => Some(
            "not the current patch revision, judged by its expectations (--strict): it falls short of them"
                .into(),
        ),
        (State::Modified | State::UpstreamFixed, "RECOVERED") => Some(
            "not a revision mcpatch patched: recovering after failed calls is enough to pass".into(),
        ),
        _ => None,
    }
}

/// A verdict as shown, coloured: green when it met its expectation, yellow
/// for RECOVERED (it met it, after failed calls), red with what was expected
/// when it did not.
fn shown_verdict(paint: Painter, j: &Judgement, expect: Expectation) -> String {
    if !j.ok {
        let text = format!("{} (expected {})", j.verdict, expect.verdict());
        return paint.paint(Style::Red, &text);
    }
    paint.paint(overall_style(j.verdict), j.verdict)
}

/// The colour of a verdict that met its expectation, or of an overall result.
fn overall_style(verdict: &str) -> Style {
    match verdict {
        "RECOVERED" => Style::Yellow,
        "STUCK" | "FAILED" => Style::Red,
        _ => Style::Green,
    }
}

fn render(r: &InstallResult) -> String {
    render_within(r, crate::width::stdout_columns(), color::stdout())
}

/// One install's results in at most `columns` (when given): a row per
/// scenario with its note wrapped under itself when that fits, else each
/// scenario on a line of its own (name and verdict) above its figures and note.
fn render_within(r: &InstallResult, columns: Option<usize>, paint: Painter) -> String {
    let mut s = String::new();
    let path = crate::output::path(&r.path);
    let (what, after) = match &r.backup {
        Some(id) => (
            path,
            format!(" (backup {}, the control)", crate::output::clean(id)),
        ),
        None => (path, format!(" ({})", status::paint_state(paint, r.state))),
    };
    let what = match columns {
        Some(c) if visible_width(&what) + visible_width(&after) > c => {
            format!("{}\n   {after}", shorten_middle(&what, c))
        }
        _ => format!("{what}{after}"),
    };
    s.push_str(&format!("{what}\n"));
    s.push_str(&hanging(
        "    ",
        &format!(
            "sha256 {}, node {}{}",
            status::short_hash(&r.sha256),
            r.node_version,
            if r.node_shim {
                " with Promise.withResolvers shim"
            } else {
                ""
            }
        ),
        columns,
    ));
    let rows: Vec<(String, &Judgement, Expectation)> = r
        .scenarios
        .iter()
        .map(|x| {
            let name = format!("{}{}", x.name, policy_label(x.policy));
            let name = match &x.build {
                Some(b) => format!("{b}: {name}"),
                None => name,
            };
            (name, &x.judgement, x.expected)
        })
        .collect();
    if !rows.is_empty() {
        s.push_str(&scenario_table(&rows, columns, paint));
    }
    if let Some(note) = &r.note {
        let note = crate::output::clean_lines(note);
        let note = crate::scope::commands_within(&note, columns);
        s.push_str(&hanging("note: ", &note, columns));
    }
    if let Some(e) = &r.exploration {
        s.push_str(&explore::render(e, columns, paint));
    }
    s.push_str(&paint.paint(overall_style(r.overall), r.overall));
    s.push('\n');
    s
}

/// The scenario table of a report (an install's, or a bridge's), in at most
/// `columns` (when given): a row per scenario (name, verdict, failed calls,
/// recovery ms, handshakes, note wrapped under itself) when the note gets at
/// least 30 columns, else each scenario on a line of its own (name and verdict)
/// above its figures and note. Notes carry servers' words: escaped.
pub(crate) fn scenario_table(
    rows: &[(String, &Judgement, Expectation)],
    columns: Option<usize>,
    paint: Painter,
) -> String {
    let mut table = Table::new(
        &[
            "SCENARIO",
            "VERDICT",
            "FAILED CALLS",
            "RECOVERY MS",
            "HANDSHAKES",
            "NOTE",
        ],
        &[
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    for (name, j, expected) in rows {
        table.row(vec![
            name.clone(),
            shown_verdict(paint, j, *expected),
            j.failed_calls.to_string(),
            j.recovery_ms
                .map(|m| m.to_string())
                .unwrap_or_else(|| "-".into()),
            j.initialize_count.to_string(),
            crate::output::clean(&j.note).into_owned(),
        ]);
    }
    match columns {
        Some(c) if table.width() > c && table.lead_width() + 30 > c => {
            let mut s = String::new();
            for (name, j, expected) in rows {
                s.push_str(&hanging(
                    "",
                    &format!("{name}: {}", shown_verdict(paint, j, *expected)),
                    Some(c),
                ));
                let calls = if j.failed_calls == 1 { "call" } else { "calls" };
                let handshakes = if j.initialize_count == 1 {
                    "handshake"
                } else {
                    "handshakes"
                };
                let recovered = match j.recovery_ms {
                    Some(ms) => format!(", recovery {ms} ms"),
                    None => String::new(),
                };
                s.push_str(&hanging(
                    "    ",
                    &format!(
                        "{} failed {calls}{recovered}, {} {handshakes}",
                        j.failed_calls, j.initialize_count
                    ),
                    Some(c),
                ));
                s.push_str(&hanging("    ", &crate::output::clean(&j.note), Some(c)));
            }
            s
        }
        _ => table.lines_within(columns).concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_green_when_met_yellow_when_recovered_and_red_when_not() {
        let paint = Painter::new(true);
        let met = |verdict: &'static str| Judgement {
            verdict,
            ok: true,
            ..broken(String::new())
        };
        assert_eq!(
            shown_verdict(paint, &met("SEAMLESS"), Expectation::Seamless),
            "\x1b[32mSEAMLESS\x1b[0m"
        );
        assert_eq!(
            shown_verdict(paint, &met("RECOVERED"), Expectation::Recover),
            "\x1b[33mRECOVERED\x1b[0m"
        );
        let stuck = Judgement {
            verdict: "STUCK",
            ..broken(String::new())
        };
        assert_eq!(
            shown_verdict(paint, &stuck, Expectation::Seamless),
            "\x1b[31mSTUCK (expected SEAMLESS)\x1b[0m"
        );
        assert_eq!(
            shown_verdict(Painter::new(false), &stuck, Expectation::Recover),
            "STUCK (expected RECOVERED)"
        );
        assert_eq!(overall_style("FAILED"), Style::Red);
        assert_eq!(overall_style("HELD"), Style::Green);
    }
}
