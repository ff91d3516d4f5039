//! `mcpatch revert`: restores each install from its newest backup (or the one
//! named), atomically, after checking the backup; backups are kept.

use std::path::{Path, PathBuf};

use crate::backup::{self, Backup};
use crate::classify;
use crate::error::{Error, Failures, Result};
use crate::exit_code::Outcome;
use crate::kill_point;
use crate::locate::Environment;
use crate::registry::{PatchSpec, RevisionKind};
use crate::replace::{self, PendingFile};
use crate::status;

/// Options of `mcpatch revert`.
#[derive(Debug, Clone, Default)]
pub struct RevertOptions {
    pub paths: Vec<PathBuf>,
    pub backup: Option<String>,
    pub yes: bool,
}

pub fn run(spec: &PatchSpec, opts: &RevertOptions, env: &Environment) -> Result<Outcome> {
    let root = backup::root(&env.dsh_home()?, spec);
    let report = status::collect(spec, &opts.paths, env)?;
    if report.installs.is_empty() {
        print!("{}", status::render_table(&report));
        return Ok(Outcome::Clean);
    }
    let _lock = crate::lock::acquire(&root)?;
    kill_point::reached("locked");
    let backups = backup::list(&root)?;
    if let Some(id) = &opts.backup {
        if !backups.iter().any(|b| &b.id == id) {
            return Err(Error::BackupNotFound {
                id: id.clone(),
                dir: root.clone(),
            });
        }
    }
    let mut outcome = Outcome::Clean;
    let mut restored_any = false;
    let mut matched_named = false;
    let files: Vec<PathBuf> = report
        .installs
        .iter()
        .flat_map(|install| {
            std::iter::once(install.file.clone())
                .chain(install.same_file_as.iter().map(|d| d.join(&spec.file)))
        })
        .collect();
    let mut failures = Failures::new(files.len(), "restored");
    for file in &files {
        let Some(chosen) = backup::pick(&backups, file, opts.backup.as_deref()) else {
            if opts.backup.is_none() {
                println!("no backup of {}; nothing to revert", file.display());
            }
            continue;
        };
        matched_named = true;
        let Some(result) = failures.absorb(revert_file(spec, file, chosen, opts.yes))? else {
            continue;
        };
        match result {
            Reverted::Restored => {
                restored_any = true;
                println!(
                    "restored {} from backup {}\n    sha256 now {}",
                    file.display(),
                    chosen.id,
                    status::short_hash(&chosen.manifest.sha256_before)
                );
            }
            Reverted::AlreadyOriginal => {
                println!("{} is already the original; nothing to do", file.display())
            }
            Reverted::Refused(why) => {
                outcome = Outcome::Attention;
                println!("refused: {}\n    {why}", file.display());
            }
        }
    }
    if let (Some(id), false) = (&opts.backup, matched_named) {
        let target = backups
            .iter()
            .find(|b| &b.id == id)
            .map(|b| b.manifest.original_path.clone());
        return Err(Error::BackupDamaged {
            id: id.clone(),
            detail: format!(
                "it belongs to {}, which is not among the installs found",
                target.map(|p| p.display().to_string()).unwrap_or_default()
            ),
        });
    }
    if restored_any {
        println!(
            "backups are kept (`mcpatch backups`); restart DSH so it loads the restored client"
        );
    }
    failures.finish()?;
    Ok(outcome)
}

enum Reverted {
    Restored,
    AlreadyOriginal,
    Refused(String),
}

fn revert_file(spec: &PatchSpec, file: &Path, chosen: &Backup, yes: bool) -> Result<Reverted> {
    let saved = backup::read_checked(chosen, spec)?;
    // read_checked proved the saved bytes hash to the manifest's sha256_before.
    let saved_hash = chosen.manifest.sha256_before.clone();
    let known_original = spec.revision(&saved_hash).map(|r| r.kind) == Some(RevisionKind::Original);
    let (_, current) = classify::hash_file(file)?;
    if current == saved_hash {
        return Ok(Reverted::AlreadyOriginal);
    }
    if !yes {
        if !known_original {
            return Ok(Reverted::Refused(format!(
                "backup {} holds sha256 {saved_hash}, which is not a known original; rerun with --yes to restore it anyway",
                chosen.id
            )));
        }
        if current != chosen.manifest.sha256_after && current != spec.patched_sha256() {
            return Ok(Reverted::Refused(format!(
                "the file changed since it was patched (sha256 {current}); rerun with --yes to overwrite it with the backup"
            )));
        }
    }
    kill_point::reached("backup-checked");
    replace::remove_stale_temps(file);
    let (current_mode, owner) = replace::mode_and_owner(file)?;
    let mode = chosen.manifest.mode.or(current_mode);
    let pending = PendingFile::write_beside(file, &saved, mode, owner)?;
    kill_point::reached("temp-written");
    pending.persist()?;
    kill_point::reached("renamed");
    let (_, now) = classify::hash_file(file)?;
    if now != saved_hash {
        return Err(Error::HashMismatch {
            path: file.to_path_buf(),
            expected: saved_hash,
            found: now,
        });
    }
    Ok(Reverted::Restored)
}

/// `mcpatch backups`: list them.
pub fn list(spec: &PatchSpec, json: bool, env: &Environment) -> Result<Outcome> {
    let root = backup::root(&env.dsh_home()?, spec);
    let backups = backup::list(&root)?;
    if json {
        #[derive(serde::Serialize)]
        struct Listing<'a> {
            root: &'a Path,
            backups: &'a [Backup],
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&Listing {
                root: &root,
                backups: &backups
            })
            .expect("backups serialize")
        );
        return Ok(Outcome::Clean);
    }
    if backups.is_empty() {
        println!("no backups under {}", root.display());
        return Ok(Outcome::Clean);
    }
    println!("backups under {}:", root.display());
    for b in backups.iter().rev() {
        println!(
            "{}  {}  {}  {}",
            b.id,
            b.manifest.version.as_deref().unwrap_or("?"),
            status::short_hash(&b.manifest.sha256_before),
            b.manifest.original_path.display()
        );
    }
    Ok(Outcome::Clean)
}
