//! The mcpatch binary: parse the command line, run it, map the result to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = mcpatch::cli::Cli::parse();
    match mcpatch::run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(mcpatch::exit_code::ERROR)
        }
    }
}
