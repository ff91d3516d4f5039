//! `mcpatch verify` and `mcpatch serve`: prove, offline and in seconds, that an
//! installed client heals itself when a server drops its session — the real
//! installed file, the real MCP SDK, real node, real HTTP servers.

pub mod drivers;
pub mod explore;
pub mod fake_server;
pub mod process;
pub(crate) mod render;
pub mod report;
pub mod scenario;
mod serve;
pub(crate) mod signals;
pub(crate) mod target;

pub use report::{Expectations, GateReport, InstallResult, ScenarioResult};
pub use serve::serve;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use self::report::{not_checked, VerifyReport};
use self::signals::{caught_signal, Interrupts};
use self::target::{check_backups_first, copy_beside, Target};
use crate::classify::{self, Install, State};
use crate::environment::Environment;
use crate::error::{Error, Failures, Result};
use crate::exit_code::Outcome;
use crate::node::{self, Node};
use crate::registry::PatchSpec;
use crate::survey;
use crate::table::shorten_middle;
use scenario::{Scenario, ScenarioName};

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

impl VerifyOptions {
    /// How many explored runs to make of an install: the runs asked for, else
    /// the short exploration that goes with the whole table of a file judged
    /// by the current revision's expectations (`seamless`: the current patch
    /// revision, or `--strict`) or with `--explore-only`; none with scenarios
    /// picked by name, nor for a saved original or an unpatched file.
    pub(crate) fn explore_runs(&self, seamless: bool) -> u32 {
        self.explore.unwrap_or(
            if (seamless && self.scenarios.is_empty()) || self.explore_only {
                explore::DEFAULT_RUNS
            } else {
                0
            },
        )
    }

    /// Whether the explored runs are left out because the fixed table
    /// already failed (`table_failed`): only those `verify` adds by itself;
    /// `--explore N` always runs (see [`explore::not_run_after_failed_table`]).
    pub(crate) fn explores_after(&self, table_failed: bool) -> bool {
        !table_failed || self.explore.is_some()
    }
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
    let report = survey::collect(targets, &opts.paths, env)?;
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
    // Asked for by name, exploration must reach every install it would check.
    if opts.explore.is_some_and(|n| n > 0) || opts.explore_only {
        if let Some((spec, why)) = report
            .installs
            .iter()
            .map(|i| crate::registry::find(targets, i.target, &i.package))
            .find_map(|spec| Some((spec, drivers::of(spec.driver).no_exploration()?)))
        {
            return Err(Error::ExploreUnsupported {
                target: spec.target,
                why,
            });
        }
    }
    let node = node::find(opts.node.as_deref())?;
    let progress = !opts.json || std::io::stderr().is_terminal();
    if progress {
        crate::err!(
            "{}",
            crate::table::within(
                &format!(
                    "node {} ({})",
                    crate::output::clean(&node.version),
                    crate::output::path(&node.path)
                ),
                crate::width::stderr_columns()
            )
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
                crate::outln_fit!(
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
            crate::out!("{}", render::render(&result));
        }
        results.push(result);
    }
    failures.finish()?;
    Ok(outcome)
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
    let sha256 = crate::identity::sha256_hex(staged);
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
        exploration: result.exploration.map(Box::new),
    })
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
    // With the whole table, the scenarios the driver runs by default besides it.
    let driver = drivers::of(spec.driver);
    let extras = if opts.scenarios.is_empty() {
        driver.default_extras()
    } else {
        Vec::new()
    };
    // The scenarios the target's manifest leaves out (`verify.left_out`), with its reasons.
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    for s in scenarios.iter().chain(&extras) {
        match spec.verify_left_out.iter().find(|(n, _)| *n == s.name) {
            Some((_, why)) => left_out.push(drivers::LeftOut {
                name: s.name.to_string(),
                why,
            }),
            None => kept.push(s.clone()),
        }
    }
    if kept.is_empty() && !left_out.is_empty() {
        return Err(Error::NothingToRunFor {
            target: spec.target,
            left_out: left_out
                .iter()
                .map(|l| format!("{}: {}", l.name, l.why))
                .collect(),
        });
    }
    let mut result = driver
        .verify(drivers::Job {
            spec,
            node,
            install,
            target,
            scenarios: &kept,
            opts,
            progress,
        })
        .await?;
    result.left_out.extend(left_out);
    Ok(result)
}
