//! What a target needs that is code, not data: one driver per kind of client,
//! named by the manifest's `verify.driver` (the name mapping is data, in
//! `registry::driver`). Everything else about a target is
//! in its folder under `patches/` (see [`crate::registry`]).

pub mod gemini_cli;
pub mod plugin_api;
pub mod stdio_bridge;

use std::path::Path;

use crate::environment::Environment;
use crate::host_check::HostDefect;
use crate::locate::search::Search;
use crate::registry::Driver;

/// Search the places only this driver knows (after npm's global root).
pub fn search(driver: Driver, search: &mut Search, env: &Environment) {
    match driver {
        Driver::PluginApi => plugin_api::search(search, env),
        Driver::StdioBridge | Driver::SdkClient => {}
        Driver::GeminiCli => gemini_cli::search(search, env),
    }
}

/// A known defect that keeps the host around this install from starting.
pub fn host_defect(driver: Driver, install: &Path, env: &Environment) -> Option<HostDefect> {
    match driver {
        Driver::PluginApi => plugin_api::host_defect(install, env),
        Driver::StdioBridge | Driver::GeminiCli | Driver::SdkClient => None,
    }
}
