//! The mcpatch binary: parse the command line, run it, map the result to an exit code.

use std::panic::AssertUnwindSafe;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = mcpatch::cli::parse();
    mcpatch::output::quiet_broken_pipe_panics();
    match std::panic::catch_unwind(AssertUnwindSafe(|| mcpatch::run(cli))) {
        Ok(Ok(outcome)) => outcome.exit_code(),
        Ok(Err(err)) => {
            eprintln!("{}", mcpatch::color::stderr().error(&err.to_string()));
            ExitCode::from(mcpatch::exit_code::ERROR)
        }
        Err(panic) => mcpatch::output::exit_after_panic(panic),
    }
}
