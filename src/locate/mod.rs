//! Finds every installed copy of each target's package that a host on this
//! machine could load, without walking whole disks: the cost grows with the
//! number of package folders looked at, never with the number of files. One
//! search looks for every target at once; each target's manifest says which
//! places it needs (npm's global root, npx caches, pnpm's dlx cache, the
//! commands that start its host), and its driver adds its own.
//!
//! `search.rs` holds the search and what it finds; this file says which
//! places each target needs, asking each driver (`src/targets/`) for its own.

mod package_files;
mod run_command;
pub mod search;

use std::path::PathBuf;

use crate::environment::Environment;
use crate::error::Result;
use crate::registry::PatchSpec;

pub use search::{LocateReport, Located, Search};

/// Search the explicit `--path` arguments, or (when there are none) every
/// place one of the targets needs, for installs of any of them.
pub fn locate(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    env: &Environment,
) -> Result<LocateReport> {
    locate_with(targets, paths, env, None)
}

/// [`locate`] for a plain `status`: searches by reachability whose files are
/// unchanged since `cache` saw them are taken from it (the report gives it back).
pub fn locate_remembering(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    env: &Environment,
    cache: crate::status_cache::StatusCache,
) -> Result<LocateReport> {
    locate_with(targets, paths, env, Some(cache))
}

fn locate_with(
    targets: &[&PatchSpec],
    paths: &[PathBuf],
    env: &Environment,
    cache: Option<crate::status_cache::StatusCache>,
) -> Result<LocateReport> {
    let mut search = Search::new(targets);
    search.cache = cache;
    if !paths.is_empty() {
        for p in paths {
            search.explicit(p)?;
        }
    } else {
        let wants = |f: fn(&PatchSpec) -> bool| targets.iter().any(|t| f(t));
        let mut bins: Vec<(String, Vec<String>)> = Vec::new();
        for t in targets {
            for bin in &t.installs.host_bins {
                if !bins.iter().any(|(b, _)| b == bin) {
                    bins.push((bin.clone(), t.installs.hosts.clone()));
                }
            }
        }
        for (bin, hosts) in &bins {
            search.host_on_path(bin, hosts, env);
        }
        if wants(|t| t.installs.project) {
            search.project_of(&env.cwd);
        }
        if wants(|t| t.installs.npm_global) {
            search.npm_root(env);
        }
        let mut drivers = Vec::new();
        for t in targets {
            if !drivers.contains(&t.driver) {
                drivers.push(t.driver);
                crate::targets::search(t.driver, &mut search, env);
            }
        }
        if wants(|t| t.installs.npm_global) {
            search.usual_roots(env);
        }
        if wants(|t| t.installs.npx_cache) {
            search.npx_cache(env);
        }
        if wants(|t| t.installs.pnpm_dlx) {
            search.pnpm_dlx(env);
        }
    }
    Ok(search.finish())
}
