//! `mcpatch diff`: shows the patch as it would apply to each install found,
//! coloured on a terminal unless NO_COLOR is set.

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::classify::{self, State};
use crate::error::Result;
use crate::exit_code::Outcome;
use crate::locate::Environment;
use crate::registry::PatchSpec;
use crate::{stage, status};

/// Format a diff, coloured if asked.
pub fn format(patch: &diffy::Patch<'_, str>, color: bool) -> String {
    let formatter = if color {
        diffy::PatchFormatter::new().with_color()
    } else {
        diffy::PatchFormatter::new()
    };
    let text = formatter.fmt_patch(patch).to_string();
    text
}

fn use_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

pub fn run(spec: &PatchSpec, paths: &[PathBuf], env: &Environment) -> Result<Outcome> {
    let report = status::collect(spec, paths, env)?;
    let color = use_color();
    if report.installs.is_empty() {
        println!(
            "no install found; the patch {} against {} is:",
            spec.id, spec.file
        );
        print!("{}", format(&spec.parsed_diff(), color));
        return Ok(Outcome::Clean);
    }
    let mut outcome = Outcome::Clean;
    for install in &report.installs {
        println!("# {} ({})", install.file.display(), install.state.as_str());
        match install.state {
            State::Affected | State::Modified | State::Outdated => {
                let (bytes, sha256) = classify::hash_file(&install.file)?;
                let current = String::from_utf8_lossy(&bytes);
                let staged = if install.state == State::Outdated {
                    stage::remove_earlier(spec, &current, &sha256, &install.file)
                        .and_then(|(original, _)| stage::apply_diff(spec, &original, &install.file))
                } else {
                    stage::apply_diff(spec, &current, &install.file)
                };
                match staged {
                    Ok(staged) => {
                        let patch = diffy::create_patch(&current, &staged);
                        let text = format(&patch, color)
                            .replacen("--- original", &format!("--- a/{}", spec.file), 1)
                            .replacen("+++ modified", &format!("+++ b/{}", spec.file), 1);
                        print!("{text}");
                    }
                    Err(e) => {
                        outcome = Outcome::Attention;
                        println!("{e}");
                    }
                }
            }
            State::Patched => println!("already patched; `mcpatch revert` restores the original"),
            State::UpstreamFixed => println!("already routes session loss; nothing to patch"),
            State::Unsupported => println!("unsupported: the patch cannot help this revision"),
        }
    }
    Ok(outcome)
}
