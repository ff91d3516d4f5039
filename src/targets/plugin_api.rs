//! The plugin-api driver (DSH's client): plugins live in the host's profiles
//! under `$DSH_HOME/profiles`, and a host that cannot start is said so.

use std::path::Path;

use crate::environment::Environment;
use crate::host_check::{self, HostDefect};
use crate::locate::search::Search;

/// The host's profiles: `$DSH_HOME/profiles/node_modules` and
/// `$DSH_HOME/profiles/<profile>/node_modules`.
pub fn search(search: &mut Search, env: &Environment) {
    if let Ok(home) = env.dsh_home() {
        search.profiles(&home.join("profiles"), "DSH_HOME profiles");
    }
}

/// A known defect of the DSH host around this install.
pub fn host_defect(install: &Path, env: &Environment) -> Option<HostDefect> {
    host_check::check(install, env.dsh_home().ok().as_deref())
}
