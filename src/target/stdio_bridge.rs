//! The stdio-bridge driver (mcp-remote): an install is a program a host
//! starts as a child and talks MCP to over stdio. Verify starts it the way
//! its manifest's `verify.command` says, with mcpatch as its stdio host.

use std::ffi::OsString;
use std::path::Path;

use crate::registry::PatchSpec;

/// The command line and environment that start `package` against `url`:
/// `{node}`, `{package}`, `{url}` and `{scratch}` in the manifest's
/// `verify.command` and `verify.env` replaced.
pub fn command(
    spec: &PatchSpec,
    node: &Path,
    package: &Path,
    url: &str,
    scratch: &Path,
) -> (Vec<OsString>, Vec<(String, OsString)>) {
    let fill = |text: &str| -> OsString {
        let mut out = OsString::new();
        let mut rest = text;
        while let Some(at) = rest.find('{') {
            out.push(&rest[..at]);
            let tail = &rest[at..];
            let (value, len): (Option<&std::ffi::OsStr>, usize) = if tail.starts_with("{node}") {
                (Some(node.as_os_str()), 6)
            } else if tail.starts_with("{package}") {
                (Some(package.as_os_str()), 9)
            } else if tail.starts_with("{scratch}") {
                (Some(scratch.as_os_str()), 9)
            } else if tail.starts_with("{url}") {
                (Some(std::ffi::OsStr::new(url)), 5)
            } else {
                (None, 1)
            };
            match value {
                Some(v) => out.push(v),
                None => out.push("{"),
            }
            rest = &tail[len..];
        }
        out.push(rest);
        out
    };
    let argv = spec.verify_command.iter().map(|a| fill(a)).collect();
    let env = spec
        .verify_env
        .iter()
        .map(|(k, v)| (k.clone(), fill(v)))
        .collect();
    (argv, env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_command_is_filled_in() {
        let spec = crate::registry::select(Some("mcp-remote")).unwrap()[0];
        let (argv, env) = command(
            spec,
            Path::new("/n/node"),
            Path::new("/p/mcp-remote"),
            "http://127.0.0.1:9/mcp",
            Path::new("/s"),
        );
        assert_eq!(
            argv,
            [
                "/n/node",
                "/p/mcp-remote/dist/proxy.js",
                "http://127.0.0.1:9/mcp",
                "--transport",
                "http-only"
            ]
            .map(OsString::from)
        );
        assert_eq!(
            env,
            [(
                "MCP_REMOTE_CONFIG_DIR".to_string(),
                OsString::from("/s/mcp-auth")
            )]
        );
    }
}
