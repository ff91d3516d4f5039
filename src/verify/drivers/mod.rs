//! The ways verify runs a real installed client against the fake server, each
//! behind one interface ([`ClientDriver`]), chosen by the target's manifest
//! (`verify.driver`, [`Driver`]):
//!
//! * `plugin` — the DSH plugin, loaded in node by the bundled JS harness.
//! * `bridge` — an installed stdio bridge (mcp-remote), run as its manifest says.
//! * `headless_cli` — gemini-cli's real CLI, run headless with mcpatch as its model.
//! * `sdk_client` — the MCP TypeScript SDK's own client, through a host script run as a bridge.
//!
//! Shared by the drivers, knowing none of them by name: `stdio_host` (mcpatch
//! as a bridge's stdio host, also `verify --command`), `steps` (a plan's
//! calls, for the drivers in which mcpatch makes the calls) and `mirror` (a
//! copy of an install's folder holding the file to check); the child
//! processes they start are handled by [`crate::verify::process`].

mod bridge;
mod headless_cli;
pub(crate) mod mirror;
pub mod plugin;
mod sdk_client;
pub mod stdio_host;
pub(crate) mod steps;

use std::future::Future;
use std::pin::Pin;

use crate::classify::Install;
use crate::error::Result;
use crate::node::Node;
use crate::registry::Driver;
use crate::registry::PatchSpec;
use crate::verify::report::InstallResult;
pub use crate::verify::report::LeftOut;
use crate::verify::scenario::Scenario;
use crate::verify::target::Target;
use crate::verify::VerifyOptions;

/// One install to put through the scenarios: what every driver is handed.
pub(crate) struct Job<'a> {
    pub spec: &'a PatchSpec,
    pub node: &'a Node,
    pub install: &'a Install,
    /// The file to load: the install's own, or a copy beside it.
    pub target: &'a Target,
    pub scenarios: &'a [Scenario],
    pub opts: &'a VerifyOptions,
    /// Whether to print each scenario's verdict on stderr as it comes.
    pub progress: bool,
}

/// A driver's check of one install, under way.
pub(crate) type Verifying<'a> = Pin<Box<dyn Future<Output = Result<InstallResult>> + 'a>>;

/// One way of running a real installed client through the scenarios.
pub(crate) trait ClientDriver: Sync {
    /// Put `job.target` through `job.scenarios` and judge every run.
    fn verify<'a>(&'a self, job: Job<'a>) -> Verifying<'a>;

    /// Whether every install is held to the current revision's expectations,
    /// whatever its state (a bridge: its saved original is expected to fail them).
    fn always_strict(&self) -> bool {
        false
    }

    /// Whether the driver runs explored plans (`verify --explore`).
    fn explores(&self) -> bool {
        false
    }

    /// Why the driver runs no explored plans, if it does not.
    fn no_exploration(&self) -> Option<&'static str> {
        (!self.explores()).then_some("its driver runs no explored plans")
    }

    /// The scenarios run only when named that this driver runs by default too
    /// (with the whole table, no `--scenario` named).
    fn default_extras(&self) -> Vec<crate::verify::scenario::Scenario> {
        Vec::new()
    }

    /// Whether the client needs `Promise.withResolvers`, which the driver
    /// shims on a node that lacks it (only the DSH plugin's harness).
    fn needs_with_resolvers(&self) -> bool {
        false
    }
}

/// The driver a target's manifest names.
pub(crate) fn of(driver: Driver) -> &'static dyn ClientDriver {
    match driver {
        Driver::PluginApi => &plugin::PluginHarness,
        Driver::StdioBridge => &bridge::InstalledBridge,
        Driver::GeminiCli => &headless_cli::HeadlessCli,
        Driver::SdkClient => &sdk_client::SdkClient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_driver_but_the_headless_cli_runs_explored_plans() {
        let all = [
            Driver::PluginApi,
            Driver::StdioBridge,
            Driver::GeminiCli,
            Driver::SdkClient,
        ];
        let exploring: Vec<Driver> = all.into_iter().filter(|d| of(*d).explores()).collect();
        assert_eq!(
            exploring,
            [Driver::PluginApi, Driver::StdioBridge, Driver::SdkClient]
        );
        // The one that does not says why, in its own words.
        assert!(of(Driver::GeminiCli)
            .no_exploration()
            .is_some_and(|why| why.starts_with("its calls are turns of the model")));
        assert_eq!(of(Driver::StdioBridge).no_exploration(), None);
    }

    #[test]
    fn only_the_bridge_is_always_strict_and_only_the_plugin_needs_the_shim() {
        let all = [
            Driver::PluginApi,
            Driver::StdioBridge,
            Driver::GeminiCli,
            Driver::SdkClient,
        ];
        let strict: Vec<Driver> = all.into_iter().filter(|d| of(*d).always_strict()).collect();
        assert_eq!(strict, [Driver::StdioBridge]);
        let shimmed: Vec<Driver> = all
            .into_iter()
            .filter(|d| of(*d).needs_with_resolvers())
            .collect();
        assert_eq!(shimmed, [Driver::PluginApi]);
    }
}
