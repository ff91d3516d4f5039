//! What a target needs that is code, not data: one driver per kind of client,
//! named by the manifest's `verify.driver`. Everything else about a target is
//! in its folder under `patches/` (see [`crate::registry`]).

pub mod gemini_cli;
pub mod plugin_api;
pub mod stdio_bridge;

use std::path::Path;

use crate::error::{Error, Result};
use crate::host_check::HostDefect;
use crate::locate::{Environment, Search};
use crate::registry::PatchSpec;

/// The target `probe` judges a server by: the first of `targets` whose
/// patch's session-loss predicate the probe has a port of.
pub fn probed<'a>(targets: &[&'a PatchSpec]) -> Result<&'a PatchSpec> {
    targets
        .iter()
        .find(|t| crate::probe::predicate::Predicate::from_spec(t).is_ok())
        .copied()
        .ok_or_else(|| Error::NoProbePredicate {
            targets: crate::registry::said(targets.iter().map(|t| t.target)),
        })
}

/// How mcpatch drives a target's installs beyond what its manifest says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// A plugin a host loads in-process (DSH's plugin API): its host's own
    /// install places, a check that the host can start, verify through the
    /// plugin harness.
    PluginApi,
    /// A program a host starts as a child and talks to over stdio
    /// (mcp-remote): verify starts it with mcpatch as its stdio host.
    StdioBridge,
    /// gemini-cli, a CLI that loads its MCP client from a bundle chunk:
    /// found also in Homebrew's Cellar; verify cannot drive it yet.
    GeminiCli,
    /// A library projects depend on (the MCP TypeScript SDK): found also in
    /// the project of the current folder; verify drives the install's own
    /// `Client` and transport, each build, through an embedded host script.
    SdkClient,
}

impl Driver {
    /// The driver a manifest's `verify.driver` names.
    pub fn from_name(name: &str) -> Option<Driver> {
        match name {
            "plugin-api" => Some(Driver::PluginApi),
            "stdio-bridge" => Some(Driver::StdioBridge),
            "gemini-cli" => Some(Driver::GeminiCli),
            "sdk-client" => Some(Driver::SdkClient),
            _ => None,
        }
    }

    /// Search the places only this driver knows (after npm's global root).
    pub fn search(self, search: &mut Search, env: &Environment) {
        match self {
            Driver::PluginApi => plugin_api::search(search, env),
            Driver::StdioBridge | Driver::SdkClient => {}
            Driver::GeminiCli => gemini_cli::search(search, env),
        }
    }

    /// A known defect that keeps the host around this install from starting.
    pub fn host_defect(self, install: &Path, env: &Environment) -> Option<HostDefect> {
        match self {
            Driver::PluginApi => plugin_api::host_defect(install, env),
            Driver::StdioBridge | Driver::GeminiCli | Driver::SdkClient => None,
        }
    }
}
