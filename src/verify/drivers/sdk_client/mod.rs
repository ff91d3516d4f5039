//! `verify` of an MCP TypeScript SDK install (the `sdk-client` driver): the
//! target's host script (`verify.host_script`, embedded) is written to a
//! private scratch folder and run as a stdio bridge,
//! `node <scratch>/<host script> <package-dir> esm|cjs <url>`, once per build
//! of the install (the file and each companion), so the install's own
//! `Client` and `StreamableHTTPClientTransport` (the very files patched) meet
//! the scenarios through the bridge machinery. A file that is not the
//! installed one (a backup's saved original, apply's patched copy of a
//! release mcpatch has not recorded) is run in place: the folder of that
//! build's file is copied beside it with the file to check in it
//! (mirror.rs), and the host loads the build from the copy (a fourth
//! argument).

use std::path::{Path, PathBuf};

use super::{mirror, ClientDriver, Job, Verifying};
use crate::classify::Install;
use crate::error::{Error, Result};
use crate::node::Node;
use crate::registry::PatchSpec;
use crate::verify::explore::{self, Exploration};
use crate::verify::report::Expectations;
use crate::verify::report::{with_exploration, InstallResult, ScenarioResult};
use crate::verify::scenario::Scenario;
use crate::verify::target::{Target, COPY_PREFIX};
use crate::verify::VerifyOptions;

/// The MCP TypeScript SDK's own client, through the target's host script.
pub(crate) struct SdkClient;

impl ClientDriver for SdkClient {
    fn explores(&self) -> bool {
        true
    }

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
}

/// Verify every build of one SDK install on `target.load` (for the build
/// `target.file` is; the others as installed), each held to seamless recovery.
async fn verify_install(
    spec: &PatchSpec,
    node: &Node,
    install: &Install,
    target: &Target,
    scenarios: &[Scenario],
    verify: &VerifyOptions,
    progress: bool,
) -> Result<InstallResult> {
    let script = spec
        .verify_host_script
        .as_deref()
        .ok_or(Error::BridgeNoEntry {
            target: spec.target,
            file: install.file.clone(),
        })?;
    // Removed when dropped, a signal included.
    let scratch = crate::stage::scratch_dir("mcpatch-sdk-")?;
    let host = scratch.write("sdk-host.mjs", script.as_bytes())?;
    let mut builds: Vec<(String, PathBuf)> = vec![(
        install.role.clone().unwrap_or_else(|| "esm".into()),
        install.file.clone(),
    )];
    builds.extend(
        install
            .companions
            .iter()
            .map(|c| (c.role.clone(), c.file.clone())),
    );
    // A gate or a control checks one file: only its build runs.
    let checking_copy = target.load != target.file || target.backup.is_some();
    if checking_copy {
        builds.retain(|(_, f)| *f == target.file);
    }
    for path in [&install.path, &host] {
        loadable(path)?;
    }
    let mut all = Vec::new();
    let mut left_out = Vec::new();
    let mut overall = "SEAMLESS";
    let mut explored: Option<Exploration> = None;
    let seamless = Expectations::of(target.is_current_patch(), verify.strict).seamless();
    let explore_runs = verify.explore_runs(seamless);
    // Each build's table, then its explored runs (left out once a table failed).
    let mut table_failed = false;
    for (build, file) in &builds {
        let mirror = if target.load != *file && *file == target.file {
            Some(mirror::build(file, file, &target.load, COPY_PREFIX)?)
        } else {
            None
        };
        // Kept as OS strings: a path goes in as it is, `{url}` only where this
        // code puts it.
        let mirror_dir = mirror
            .as_ref()
            .map(|m| m.entry.parent().unwrap_or(Path::new("/")).to_path_buf());
        let launch = |url: &str| {
            let mut argv: Vec<std::ffi::OsString> = vec![
                node.path.clone().into_os_string(),
                host.clone().into_os_string(),
                install.path.clone().into_os_string(),
                build.into(),
                url.into(),
            ];
            if let Some(dir) = &mirror_dir {
                argv.push(dir.clone().into_os_string());
            }
            (argv, Vec::new())
        };
        if progress {
            crate::errln_fit!(
                "{}: the {build} build of {} ({}) as a client",
                crate::output::path(&install.path),
                install.package,
                match (&target.backup, &mirror) {
                    (Some(id), _) => format!("backup {}, the control", crate::output::clean(id)),
                    (None, Some(_)) => "a copy to check".into(),
                    (None, None) => "installed".into(),
                }
            );
        }
        let opts = super::stdio_host::BridgeOptions {
            command: String::new(),
            scenarios: scenarios.iter().map(|s| s.name).collect(),
            json: !progress,
            startup: super::stdio_host::DEFAULT_STARTUP,
            verbose: false,
            // Found by mcpatch, not named by the user: no secret of mcpatch's environment reaches it.
            environment: crate::verify::process::Environment::Cleared(scratch.path().to_path_buf()),
            // The SDK's own Client and transport do every handshake, a recovery's too.
            own_handshake: true,
            // The host script gives each call the caller's timeout and abort signal it is sent.
            caller_bounds: true,
            // The host script makes its transport with a minimal authProvider when asked (mcpatch/auth).
            auth_provider: true,
            // The SDK's client opens its GET stream once connected.
            get_stream: true,
            jobs: verify.jobs.unwrap_or(super::stdio_host::DEFAULT_JOBS),
        };
        if !verify.explore_only {
            let (runs, this, out) = super::stdio_host::run_launch(&opts, &launch, progress).await?;
            table_failed |= runs.iter().any(|r| !r.judgement.ok);
            // Every scenario asked for needs what this install's host cannot do.
            if runs.is_empty() {
                return Err(Error::NothingToRunFor {
                    target: spec.target,
                    left_out: out
                        .iter()
                        .map(|l| format!("{}: {}", l.name, l.why))
                        .collect(),
                });
            }
            if rank(this) > rank(overall) {
                overall = this;
            }
            if left_out.is_empty() {
                left_out = out;
            }
            all.extend(runs.into_iter().map(|r| ScenarioResult {
                build: Some(build.clone()),
                name: r.name,
                policy: "bridge",
                expected: r.expected,
                judgement: r.judgement,
                node_version: node.version.clone(),
            }));
        }
        if explore_runs > 0 && verify.explores_after(table_failed) {
            let runner = super::stdio_host::HostPlans {
                launch: &launch,
                environment: &opts.environment,
                startup: opts.startup,
                own_handshake: opts.own_handshake,
                caller_bounds: opts.caller_bounds,
                jobs: explore::jobs(verify.jobs, explore_runs),
                left_out: Default::default(),
            };
            let seed = verify.seed.unwrap_or(explore::DEFAULT_SEED);
            let found = explore::explore(&runner, explore_runs, seed, progress).await?;
            let why = runner.left_out.lock().ok().and_then(|l| *l);
            explored = Some(add_build(explored, found, build, why));
        }
    }
    if explore_runs > 0 && explored.is_none() && table_failed {
        explored = Some(explore::not_run_after_failed_table(
            verify.seed.unwrap_or(explore::DEFAULT_SEED),
        ));
    }
    let mut result = super::stdio_host::checked_install(
        install,
        target,
        node.version.clone(),
        all,
        overall,
        left_out,
        "the saved original, run as the control: it is expected to be STUCK",
    );
    if let Some(found) = explored {
        if let (true, true, Some(why)) = (found.ok, verify.explore_only, &found.left_out) {
            return Err(Error::NothingToRunFor {
                target: spec.target,
                left_out: vec![format!("--explore-only: {why}")],
            });
        }
        result.overall = with_exploration(result.overall, found.ok, verify.explore_only);
        result.exploration = Some(found);
    }
    Ok(result)
}

/// One build's exploration added to the install's: the failures name the
/// build; `why`: the build's host could not run the plans.
fn add_build(
    so_far: Option<Exploration>,
    mut found: Exploration,
    build: &str,
    why: Option<&'static str>,
) -> Exploration {
    for f in &mut found.failures {
        f.build = Some(build.to_string());
    }
    let mut all = so_far.unwrap_or(Exploration {
        builds: Vec::new(),
        failures: Vec::new(),
        ..found.clone()
    });
    all.builds.push(build.to_string());
    all.ok &= found.ok;
    all.failures.extend(found.failures);
    if let Some(why) = why {
        all.left_out = Some(why.to_string());
    }
    all
}

/// The worse of two overall words ranks higher.
fn rank(overall: &str) -> u8 {
    match overall {
        "SEAMLESS" => 0,
        "RECOVERED" => 1,
        "STUCK" => 2,
        _ => 3,
    }
}

/// Node reads its argv as UTF-8: a path that is not would name another file.
fn loadable(p: &Path) -> Result<()> {
    match p.to_str() {
        Some(_) => Ok(()),
        None => Err(Error::PathNotLoadable {
            path: p.to_path_buf(),
            url: crate::stage::file_url(p),
        }),
    }
}
