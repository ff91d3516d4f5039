//! The mcpatch binary: parse the command line, run it, map the result to an exit code.

use std::process::ExitCode;

use mcpatch::exit_code::{Outcome, ATTENTION, ERROR, SUCCESS};

fn main() -> ExitCode {
    let cli = mcpatch::cli::parse();
    let code = match mcpatch::run(cli) {
        Ok(Outcome::Clean) => SUCCESS,
        Ok(Outcome::Attention) => ATTENTION,
        Err(err) => {
            let message = mcpatch::output::clean_lines(&err.to_string()).into_owned();
            // Wrapped with its "error: " label, which is painted after.
            let columns = mcpatch::width::stderr_columns();
            let message = mcpatch::scope::commands_within(&message, columns);
            let wrapped = mcpatch::table::within(&format!("error: {message}"), columns);
            let message = wrapped.trim_end_matches('\n').trim_start_matches("error: ");
            mcpatch::errln!("{}", mcpatch::color::stderr().error(message));
            ERROR
        }
    };
    mcpatch::output::finish(code)
}
