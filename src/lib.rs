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
pub mod error;
pub mod exit_code;
pub mod exports;
pub mod host_check;
pub mod identity;
pub mod kill_point;
pub mod locate;
pub mod lock;
pub mod node;
pub mod npm_config;
pub mod on_signal;
pub mod output;
pub mod path_json;
pub mod probe;
pub mod reachable;
pub mod registry;
pub mod replace;
pub mod revert;
pub mod running;
pub mod small_file;
pub mod stage;
pub mod status;
pub mod table;
pub mod target;
pub mod transaction;
pub mod verify;
pub mod width;

use crate::cli::{Cli, Command};
use crate::error::Result;
use crate::exit_code::Outcome;
use crate::locate::Environment;

/// Run one parsed command line.
pub fn run(cli: Cli) -> Result<Outcome> {
    color::set_choice(cli.color);
    let targets = registry::select(cli.target.as_deref())?;
    let mut env = Environment::from_process();
    env.ask_npm = cli.command.path_args().is_some_and(|p| p.npm);
    match cli.command {
        Command::Status { paths, json } => status::run(&targets, &paths.paths, json, &env),
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
            node,
            json,
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
            },
            &env,
        ),
        Command::Revert {
            paths,
            backup,
            yes,
            json,
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
        Command::Backups { json, ids } => revert::list(&targets, json, ids, &env),
        Command::Diff { paths } => diff::run(&targets, &paths.paths, &env),
        Command::Verify {
            paths,
            backup,
            scenarios,
            jobs,
            // A bridge is always judged by the current revision's expectations.
            strict: _,
            node,
            json,
            command: Some(command),
            startup_timeout,
            verbose,
        } => {
            let flag = if !paths.paths.is_empty() {
                Some("--path")
            } else if paths.npm {
                Some("--npm")
            } else if backup.is_some() {
                Some("--backup")
            } else if jobs.is_some() {
                Some("--jobs")
            } else if node.node.is_some() {
                Some("--node")
            } else {
                None
            };
            if let Some(flag) = flag {
                return Err(crate::error::Error::BridgeConflict { flag });
            }
            verify::bridge::run(&verify::bridge::BridgeOptions {
                command,
                scenarios,
                json,
                startup: startup_timeout,
                verbose,
                env: Vec::new(),
            })
        }
        Command::Verify {
            paths,
            backup,
            scenarios,
            jobs,
            node,
            json,
            strict,
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
            },
            &env,
        ),
        Command::Serve { scenario, port } => verify::serve(scenario, port),
        Command::Probe {
            url,
            headers,
            json,
            timeout,
            verbose,
        } => probe::run(
            target::probed(&targets)?,
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
