//! mcpatch: finds installed copies of MCP clients that lose their server for
//! good when it forgets the session (the targets under `patches/`), patches
//! them so they recover, reverts from backup, and verifies the result against
//! a bundled fake stateful MCP server.

pub mod anchors;
pub mod apply;
pub mod automation;
pub mod backup;
pub mod classify;
pub mod cli;
pub mod color;
pub mod companions;
pub mod dependents;
pub mod diff;
pub mod environment;
pub mod error;
pub mod exit_code;
pub mod exports;
pub mod host_check;
pub mod identity;
pub mod keep;
pub mod kill_point;
pub mod locate;
pub mod lock;
pub mod node;
pub mod npm_config;
pub mod on_signal;
pub mod output;
pub mod path_json;
pub mod probe;
pub mod project;
pub mod reachable;
pub mod registry;
pub mod replace;
pub mod revert;
pub mod running;
pub mod scope;
pub mod small_file;
pub mod stage;
pub mod status;
pub mod status_cache;
pub mod survey;
pub mod table;
pub mod targets;
pub mod transaction;
pub mod trust;
pub mod unified_diff;
pub mod verify;
pub mod width;

use crate::cli::{Cli, Command};
use crate::environment::Environment;
use crate::error::Result;
use crate::exit_code::Outcome;

/// Run one parsed command line.
pub fn run(cli: Cli) -> Result<Outcome> {
    color::set_choice(cli.color);
    // `mcpatch --target X status` as well as `mcpatch status --target X`.
    let target = match (&cli.target, cli.command.takes_target()) {
        (Some(name), false) => {
            return Err(error::Error::TargetUnused {
                name: output::clean(name).into_owned(),
                command: cli.command.name(),
            })
        }
        (top, true) => cli.command.target().map(str::to_string).or(top.clone()),
        (None, false) => None,
    };
    let targets = registry::select(target.as_deref())?;
    let mut env = Environment::from_process();
    env.ask_npm = cli.command.path_args().is_some_and(|p| p.npm);
    scope::set(scope::Scope {
        paths: cli
            .command
            .path_args()
            .map(|p| p.paths.clone())
            .unwrap_or_default(),
        npm: env.ask_npm,
        target,
    });
    if matches!(
        cli.command,
        Command::Apply { dry_run: false, .. } | Command::Revert { .. }
    ) {
        output::changes_installs();
    }
    match cli.command {
        Command::Status {
            paths,
            host_fix: true,
            ..
        } => status::print_host_fix(&targets, &paths.paths, &env),
        Command::Status { paths, json, .. } => status::run(&targets, &paths.paths, json, &env),
        Command::Completions { shell } => {
            // Made whole first: clap_complete panics on a stream it cannot write.
            output::end_on_closed_pipe();
            output::print_bytes(cli::completions(shell).as_bytes());
            Ok(Outcome::Clean)
        }
        Command::Apply {
            paths,
            dry_run,
            yes,
            quiet,
            no_verify,
            trust_owner,
            node,
            json,
            ..
        } => apply::run(
            &targets,
            &apply::ApplyOptions {
                paths: paths.paths,
                dry_run,
                yes,
                node: node.node,
                json,
                quiet,
                no_verify,
                trust_owner,
            },
            &env,
        ),
        Command::Revert {
            paths,
            backup,
            yes,
            json,
            ..
        } => revert::run(
            &targets,
            &revert::RevertOptions {
                paths: paths.paths,
                backup,
                yes,
                json,
            },
            &env,
        ),
        Command::Backups { json, ids, .. } => revert::list(&targets, json, ids, &env),
        Command::Diff { paths, .. } => diff::run(&targets, &paths.paths, &env),
        Command::Verify {
            paths,
            backup,
            scenarios,
            jobs,
            // A bridge is always judged by the current revision's expectations.
            strict: _,
            trust_owner: _,
            node,
            json,
            command: Some(command),
            startup_timeout,
            verbose,
            explore,
            seed,
            explore_only,
            ..
        } => {
            // None of these reach a bridge named by --command; --jobs only its explored runs.
            let exploring = explore.is_some_and(|n| n > 0) || explore_only;
            let flag = if seed.is_some() && !exploring {
                Some("--seed")
            } else if !paths.paths.is_empty() {
                Some("--path")
            } else if paths.npm {
                Some("--npm")
            } else if backup.is_some() {
                Some("--backup")
            } else if jobs.is_some() && !exploring {
                Some("--jobs")
            } else if node.node.is_some() {
                Some("--node")
            } else {
                None
            };
            if let Some(flag) = flag {
                return Err(crate::error::Error::BridgeConflict { flag });
            }
            // Explored runs only when asked for (a bridge named by --command has no patch revision).
            let explore = exploring.then(|| verify::drivers::stdio_host::CommandExplore {
                runs: explore.unwrap_or(verify::explore::DEFAULT_RUNS),
                seed: seed.unwrap_or(verify::explore::DEFAULT_SEED),
                only: explore_only,
                jobs: jobs.map(usize::from),
            });
            verify::drivers::stdio_host::run(
                &verify::drivers::stdio_host::BridgeOptions {
                    command,
                    scenarios,
                    json,
                    startup: startup_timeout,
                    verbose,
                    // The user's own command runs as the user would run it.
                    environment: verify::process::Environment::Inherited,
                    // A bridge may pass its host's handshake on as it comes.
                    own_handshake: false,
                    // A bridge's stdio carries no caller's timeout or abort signal.
                    caller_bounds: false,
                    auth_provider: false,
                    // Whether a bridge named by --command keeps a GET stream is not known.
                    get_stream: false,
                    // Its own resources (a fixed port, a lock file) are not known: one at a time.
                    jobs: 1,
                },
                explore.as_ref(),
            )
        }
        Command::Verify {
            paths,
            backup,
            scenarios,
            jobs,
            node,
            json,
            strict,
            trust_owner,
            explore,
            seed,
            explore_only,
            ..
        } => verify::run(
            &targets,
            &verify::VerifyOptions {
                paths: paths.paths,
                backup,
                scenarios,
                node: node.node,
                json,
                jobs: jobs.map(usize::from),
                strict,
                trust_owner,
                explore,
                seed,
                explore_only,
            },
            &env,
        ),
        Command::Keep { how, path, .. } => keep::run(&targets, how, &path, &env),
        Command::Serve { scenario, port } => verify::serve(scenario, port),
        Command::Probe {
            url,
            headers,
            json,
            timeout,
            verbose,
            ..
        } => probe::run(
            probe::probed(&targets)?,
            &probe::ProbeOptions {
                url,
                headers,
                json,
                timeout,
                verbose,
            },
        ),
    }
}
