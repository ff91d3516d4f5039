//! An install of several files patched together (mcp-sdk: the ESM and the
//! CJS build of one package folder): classifies the other files beside the
//! first and says what the install as a whole is. Apply and revert change
//! all of them in one transaction (see [`crate::apply`], [`crate::revert`]).

use std::path::{Path, PathBuf};

use crate::classify::{self, Companion, Install, State};
use crate::error::Result;
use crate::registry::{FileFind, PatchSpec};

/// The path of a companion's file in the package folder `dir`; None when
/// this install has no such file (an optional build its package.json does
/// not export, see [`resolve`]) or the file is `first`, the install's own.
pub fn file_of(companion: &PatchSpec, dir: &std::path::Path, first: &Path) -> Option<PathBuf> {
    resolve(companion, dir)
        .ok()
        .flatten()
        .filter(|f| f.as_path() != first)
}

/// The path of a companion's file in `dir`: `Ok(None)` for an optional file
/// found through exports that this package does not export; `Err` (why)
/// when a file found through exports cannot be.
pub fn resolve(companion: &PatchSpec, dir: &Path) -> std::result::Result<Option<PathBuf>, String> {
    Ok(Some(match &companion.find {
        FileFind::Path(rel) => dir.join(rel),
        FileFind::Content { glob, .. } => dir.join(glob),
        FileFind::Reachable { from, .. } => dir.join(from),
        FileFind::Export {
            export,
            condition,
            optional: true,
        } => return crate::exports::resolve(dir, export, condition),
        FileFind::Export {
            export, condition, ..
        } => crate::exports::find(dir, export, condition)?,
    }))
}

/// Classify each companion file of `install` and fold their states into it.
pub fn classify_with(spec: &PatchSpec, install: &mut Install) -> Result<()> {
    if spec.companions.is_empty() || install.unfound.is_some() {
        return Ok(());
    }
    for c in &spec.companions {
        let role = c.role.clone().unwrap_or_default();
        let file = match resolve(c, &install.path) {
            Ok(Some(file)) if file != install.file => file,
            // Not part of this install (or the same file as its own).
            Ok(_) => continue,
            // package.json names a file mcpatch refuses (outside the
            // package, a symlink) or cannot read: not the package as
            // released, so the whole install is modified; nothing is patched.
            Err(why) => {
                install.state = State::Modified;
                install.revision = None;
                install.note = Some(format!("the {role} build: {why}"));
                install.next_step = spec.texts.reinstall_step;
                install.companions.clear();
                return Ok(());
            }
        };
        let companion = if file.is_file() {
            let (bytes, sha256) = classify::hash_file(&file)?;
            let a = classify::assess(c, &bytes, &sha256);
            Companion {
                role,
                file,
                sha256,
                state: a.state,
                revision: a.revision,
                note: a.note,
            }
        } else {
            Companion {
                role,
                note: Some(format!("{} is missing", file.display())),
                file,
                sha256: String::new(),
                state: State::Unsupported,
                revision: None,
            }
        };
        install.companions.push(companion);
    }
    fold(spec, install);
    Ok(())
}

/// The state of the install as a whole: the one state all its files share;
/// else unsupported when one is, affected when each is affected or patched
/// (apply patches the rest), and modified otherwise.
fn fold(spec: &PatchSpec, install: &mut Install) {
    let first = install.state;
    if install.companions.iter().all(|c| c.state == first) {
        if install.note.is_none() {
            install.note = install.companions.iter().find_map(|c| c.note.clone());
        }
        return;
    }
    let role = install.role.clone().unwrap_or_default();
    let each: Vec<String> = std::iter::once(format!("the {role} build is {}", first.as_str()))
        .chain(
            install
                .companions
                .iter()
                .map(|c| format!("the {} build is {}", c.role, c.state.as_str())),
        )
        .collect();
    let states: Vec<State> = std::iter::once(first)
        .chain(install.companions.iter().map(|c| c.state))
        .collect();
    let (state, why) = if let Some(c) = install
        .companions
        .iter()
        .find(|c| c.state == State::Unsupported)
    {
        (
            State::Unsupported,
            format!(
                "the {} build: {}",
                c.role,
                c.note.clone().unwrap_or_default()
            ),
        )
    } else if states
        .iter()
        .all(|s| matches!(s, State::Affected | State::Patched))
    {
        (
            State::Affected,
            format!("{}; `mcpatch apply` patches the rest", each.join(", ")),
        )
    } else {
        (State::Modified, each.join(", "))
    };
    install.state = state;
    install.revision = None;
    install.note = Some(why);
    install.next_step = match state {
        State::Modified => spec.texts.reinstall_step,
        s => s.next_step(spec),
    };
}
