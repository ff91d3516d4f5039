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
            mcpatch::errln!("{}", mcpatch::color::stderr().error(&message));
            ERROR
        }
    };
    mcpatch::output::finish(code)
}
