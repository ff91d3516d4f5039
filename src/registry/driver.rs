//! The drivers' names: how a manifest's `verify.driver` names the code that
//! drives a target's installs. The name mapping is data, beside the spec; the
//! per-driver code is in `src/targets/`.

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
}
