//! `verify` of an installed stdio bridge (mcp-remote): the install's program,
//! started as its manifest's `verify.command` says, with mcpatch as its stdio
//! host, through the bridge scenarios of `verify --command`. A file that is
//! not the installed one (a backup's saved original, the control of `verify
//! --backup`; the patched copy `apply` checks before it writes a release
//! mcpatch does not know) is run in place: the folder of the command's entry
//! file is copied with that file in it (mirror.rs), and the copy's entry runs.
//! The explored runs (`verify --explore`) go through the same bridge
//! (explored.rs).

mod explored;

use super::stdio_host::{self, BridgeOptions};
use crate::classify::Install;
use crate::error::{Error, Result};
use crate::node::Node;
use crate::registry::PatchSpec;
use crate::verify::drivers::mirror;
use crate::verify::drivers::{ClientDriver, Job, Verifying};
use crate::verify::explore;
use crate::verify::report::{InstallResult, ScenarioResult};
use crate::verify::scenario::{Scenario, ScenarioName};
use crate::verify::target::{Target, COPY_PREFIX};
use crate::verify::VerifyOptions;

/// An installed stdio bridge (mcp-remote), run as its manifest's `verify.command` says.
pub(crate) struct InstalledBridge;

impl ClientDriver for InstalledBridge {
    fn verify<'a>(&'a self, job: Job<'a>) -> Verifying<'a> {
        Box::pin(verify_install(
            job.spec,
            job.node,
            job.install,
            job.target,
            job.scenarios,
            job.opts,
            job.progress,
        ))
    }

    fn always_strict(&self) -> bool {
        true
    }

    fn explores(&self) -> bool {
        true
    }

    /// `late-answers`: a loss answered late to one request, after another
    /// request's new session is up, which must not start a second one
    /// (mcp-remote's catalogue, mutant 14). One bridge run, a few seconds.
    fn default_extras(&self) -> Vec<Scenario> {
        vec![crate::verify::scenario::find(ScenarioName::LateAnswers)]
    }
}

/// Verify one install of a stdio bridge on `target.load`: the installed
/// file, or a copy of the entry's folder holding `target.load` in its place.
/// The bridge is always held to the current revision's expectations (the
/// scenarios' seamless ones): the saved original is expected to fail them.
async fn verify_install(
    spec: &PatchSpec,
    node: &Node,
    install: &Install,
    target: &Target,
    scenarios: &[Scenario],
    opts: &VerifyOptions,
    progress: bool,
) -> Result<InstallResult> {
    // Node reads its argv as UTF-8: a path that is not would be read as another
    // one (U+FFFD in place of each bad byte), a file someone else may have put there.
    for path in [&install.file, &target.load] {
        if path.to_str().is_none() {
            return Err(Error::PathNotLoadable {
                path: install.path.clone(),
                url: crate::stage::file_url(&install.path),
            });
        }
    }
    let mirror = if target.load == install.file {
        None
    } else {
        let entry = crate::targets::stdio_bridge::entry(spec, &install.path).ok_or_else(|| {
            Error::BridgeNoEntry {
                target: spec.target,
                file: install.file.clone(),
            }
        })?;
        Some(mirror::build(
            &entry,
            &install.file,
            &target.load,
            COPY_PREFIX,
        )?)
    };
    // Removed when dropped, a signal included: verify's own listener turns
    // SIGINT, SIGTERM and SIGHUP into an error that unwinds through here.
    let scratch = crate::stage::scratch_dir("mcpatch-bridge-")?;
    // The manifest's words filled in once per server, each placeholder in one
    // pass: a path (not UTF-8, or holding `{url}`) goes in as it is.
    let run = mirror.as_ref().map(|m| m.entry.as_path());
    let launch = |url: &str| {
        crate::targets::stdio_bridge::command(
            spec,
            &node.path,
            &install.path,
            run,
            url,
            scratch.path(),
        )
    };
    if progress {
        let what = match &target.backup {
            Some(id) => format!(" (backup {}, the control)", crate::output::clean(id)),
            None if mirror.is_some() => " (a copy to check)".to_string(),
            None => String::new(),
        };
        crate::errln_fit!(
            "{}{what}: {} as a stdio bridge",
            crate::output::path(&install.path),
            spec.target
        );
    }
    let bridge_opts = BridgeOptions {
        command: String::new(),
        scenarios: scenarios.iter().map(|s| s.name).collect(),
        json: !progress,
        startup: stdio_host::DEFAULT_STARTUP,
        verbose: false,
        // Found by mcpatch, not named by the user: no secret of mcpatch's environment reaches it.
        environment: crate::verify::process::Environment::Cleared(scratch.path().to_path_buf()),
        // mcp-remote passes its host's handshake on as it comes.
        own_handshake: false,
        // Its stdio carries no caller's timeout or abort signal.
        caller_bounds: false,
        auth_provider: false,
        // mcp-remote's bundled SDK client opens its GET stream once connected.
        get_stream: true,
        jobs: opts.jobs.unwrap_or(stdio_host::DEFAULT_JOBS),
    };
    let (runs, overall, left_out) = if opts.explore_only {
        (Vec::new(), "FAILED", Vec::new())
    } else {
        stdio_host::run_launch(&bridge_opts, &launch, progress).await?
    };
    let explore_runs = explored::runs(target, opts);
    let table_failed = !runs.iter().all(|r| r.judgement.ok);
    let found = if explore_runs > 0 && !opts.explores_after(table_failed) {
        Some(explore::not_run_after_failed_table(
            opts.seed.unwrap_or(explore::DEFAULT_SEED),
        ))
    } else if explore_runs > 0 {
        Some(
            explored::explore(
                &launch,
                &bridge_opts.environment,
                bridge_opts.startup,
                explore_runs,
                opts,
                progress,
            )
            .await?,
        )
    } else {
        None
    };
    let scenarios = runs
        .into_iter()
        .map(|r| ScenarioResult {
            build: None,
            name: r.name,
            policy: "bridge",
            expected: r.expected,
            judgement: r.judgement,
            node_version: node.version.clone(),
        })
        .collect();
    let result = stdio_host::checked_install(
        install,
        target,
        node.version.clone(),
        scenarios,
        overall,
        left_out,
        "the saved original, run as the control: judged as any file, so STUCK here is the bug the patch fixes, reproduced",
    );
    Ok(match found {
        Some(found) => explored::add(result, found, opts.explore_only),
        None => result,
    })
}
