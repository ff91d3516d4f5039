//! The mcpatch binary: parse the command line, run it, map the result to an exit code.

use std::panic::AssertUnwindSafe;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = mcpatch::cli::Cli::parse();
    mcpatch::output::quiet_broken_pipe_panics();
    match std::panic::catch_unwind(AssertUnwindSafe(|| mcpatch::run(cli))) {
        Ok(Ok(outcome)) => outcome.exit_code(),
        Ok(Err(err)) => {
            eprintln!("error: {err}");
            ExitCode::from(mcpatch::exit_code::ERROR)
        }
        Err(panic) => mcpatch::output::exit_after_panic(panic),
    }
}
