//! `mcpatch diff`: what apply would change in each install found, as a
//! unified diff between the install's file and what apply would write,
//! computed by `similar` (see `unified_diff.rs`). (The patch itself is
//! applied by `stage`, with diffy, all or nothing.)

use std::path::PathBuf;

use crate::backup;
use crate::classify::{self, State};
use crate::color;
use crate::environment::Environment;
use crate::error::Result;
use crate::exit_code::Outcome;
use crate::registry::PatchSpec;
use crate::unified_diff::{paint_unified, render_change};
use crate::{stage, survey};

/// Exit 1 (attention) when an install is affected, outdated or modified:
/// there is a change to show, as `diff(1)` and `git diff --exit-code` say.
pub fn run(targets: &[&PatchSpec], paths: &[PathBuf], env: &Environment) -> Result<Outcome> {
    let report = survey::collect(targets, paths, env)?;
    crate::output::end_on_closed_pipe();
    let paint = color::stdout();
    if report.installs.is_empty() {
        for spec in targets {
            crate::outln!(
                "no install found; the patch {} against {} is:",
                spec.id,
                spec.file
            );
            crate::out!("{}", paint_unified(&spec.diff, paint.on()));
        }
        return Ok(Outcome::Clean);
    }
    let mut outcome = survey::outcome(&report);
    for install in &report.installs {
        let spec = crate::registry::find(targets, install.target, &install.package);
        if install.companions.is_empty() || install.unfound.is_some() {
            show_file(
                spec,
                install,
                &install.file,
                install.state,
                install.revision,
                env,
                &mut outcome,
            )?;
            continue;
        }
        // Several builds (mcp-sdk's ESM and CJS): each file under its own state.
        let (bytes, sha256) = classify::hash_file(&install.file)?;
        let own = classify::assess(spec, &bytes, &sha256);
        show_file(
            spec,
            install,
            &install.file,
            own.state,
            own.revision,
            env,
            &mut outcome,
        )?;
        for (c, c_spec) in install.companions_with(spec) {
            show_file(
                c_spec,
                install,
                &c.file,
                c.state,
                c.revision,
                env,
                &mut outcome,
            )?;
        }
    }
    Ok(outcome)
}

/// One file of `install` under its header: what apply would change in it,
/// or why nothing.
fn show_file(
    spec: &PatchSpec,
    install: &classify::Install,
    path: &std::path::Path,
    state: State,
    revision: Option<&'static str>,
    env: &Environment,
    outcome: &mut Outcome,
) -> Result<()> {
    let paint = color::stdout();
    let relative = path
        .strip_prefix(&install.path)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    let shown = survey::table::paint_state(paint, state);
    let file = crate::output::path(path);
    let file = match crate::width::stdout_columns() {
        // "# " before the path, " (state)" after it.
        Some(c) => crate::table::shorten_middle(&file, c.saturating_sub(5 + state.as_str().len())),
        None => file,
    };
    crate::outln!("# {file} ({shown})");
    match state {
        State::Affected | State::Modified | State::Outdated if install.unfound.is_none() => {
            let (bytes, sha256) = classify::hash_file(path)?;
            let current = String::from_utf8_lossy(&bytes);
            let staged = if state == State::Outdated {
                stage::remove_earlier(spec, &current, &sha256, path)
                    .and_then(|(original, _)| stage::apply_diff(spec, &original, path))
            } else {
                stage::apply_diff(spec, &current, path)
            };
            match staged {
                Ok(staged) => {
                    crate::out!("{}", render_change(&relative, &current, &staged, paint.on()));
                }
                Err(e) => {
                    *outcome = Outcome::Attention;
                    // A patched file edited by hand: its backup is the way back.
                    let e = match env.state_home() {
                        Ok(home) => {
                            backup::point_to_original(e, &backup::root(&home, spec), spec, path)
                        }
                        Err(_) => e,
                    };
                    crate::out!("{}", crate::table::for_a_person(&e.to_string()));
                }
            }
        }
        State::Patched if revision.is_none() => crate::out!(
            "{}",
            crate::table::for_a_person("already patched (on a locally modified file); `mcpatch revert --yes` restores the file as it was before")
        ),
        State::Patched => crate::out!(
            "{}",
            crate::table::for_a_person("already patched; `mcpatch revert` restores the original")
        ),
        State::UpstreamFixed => crate::outln!("already routes session loss; nothing to patch"),
        State::Affected | State::Modified | State::Outdated | State::Unsupported => {
            crate::outln!("unsupported: the patch cannot help this revision")
        }
    }
    Ok(())
}
