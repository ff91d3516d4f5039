//! mcpatch: finds installed copies of `@deepseek-ai/dsh-mcp-client`, patches
//! them so session loss reaches the reconnect supervisor, reverts from backup,
//! and verifies the result against a bundled fake stateful MCP server.

pub mod apply;
pub mod automation;
pub mod backup;
pub mod classify;
pub mod cli;
pub mod color;
pub mod diff;
pub mod error;
pub mod exit_code;
pub mod identity;
pub mod kill_point;
pub mod locate;
pub mod lock;
pub mod node;
pub mod npm_config;
pub mod output;
pub mod path_json;
pub mod probe;
pub mod registry;
pub mod replace;
pub mod revert;
pub mod small_file;
pub mod stage;
pub mod status;
pub mod table;
pub mod transaction;
pub mod verify;
pub mod width;

use clap::CommandFactory;

use crate::cli::{Cli, Command};
use crate::error::Result;
use crate::exit_code::Outcome;
use crate::locate::Environment;

/// Run one parsed command line.
pub fn run(cli: Cli) -> Result<Outcome> {
    color::set_choice(cli.color);
    let spec = registry::session_loss()?;
    let mut env = Environment::from_process();
    env.ask_npm = cli.command.path_args().is_some_and(|p| p.npm);
    match cli.command {
        Command::Status { paths, json } => status::run(&spec, &paths.paths, json, &env),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "mcpatch",
                &mut std::io::stdout(),
            );
            Ok(Outcome::Clean)
        }
        Command::Apply {
            paths,
            dry_run,
            yes,
            node,
            json,
        } => apply::run(
            &spec,
            &apply::ApplyOptions {
                paths: paths.paths,
                dry_run,
                yes,
                node: node.node,
                json,
            },
            &env,
        ),
        Command::Revert {
            paths,
            backup,
            yes,
            json,
        } => revert::run(
            &spec,
            &revert::RevertOptions {
                paths: paths.paths,
                backup,
                yes,
                json,
            },
            &env,
        ),
        Command::Backups { json } => revert::list(&spec, json, &env),
        Command::Diff { paths } => diff::run(&spec, &paths.paths, &env),
        Command::Verify {
            paths,
            backup,
            scenarios,
            jobs,
            strict,
            node,
            json,
        } => verify::run(
            &spec,
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
            &spec,
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
