//! The stdio-bridge driver (mcp-remote): an install is a program a host
//! starts as a child and talks MCP to over stdio. Verify starts it the way
//! its manifest's `verify.command` says, with mcpatch as its stdio host.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::registry::PatchSpec;

/// What names the package folder in the manifest's `verify.command`.
const PACKAGE: &str = "{package}";

/// The program file the manifest's `verify.command` runs, inside `package`:
/// its first word naming a file of the package (`{package}/dist/proxy.js`).
/// None when the command names none (it runs the package some other way).
pub fn entry(spec: &PatchSpec, package: &Path) -> Option<PathBuf> {
    entry_word(spec).map(|i| {
        let word = &spec.verify_command[i];
        package.join(word[PACKAGE.len()..].trim_start_matches('/'))
    })
}

/// Where in the command the entry file is named.
fn entry_word(spec: &PatchSpec) -> Option<usize> {
    spec.verify_command.iter().position(|w| {
        w.strip_prefix(PACKAGE)
            .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
    })
}

/// The command line and environment that start `package` against `url`:
/// `{node}`, `{package}`, `{url}` and `{scratch}` in the manifest's
/// `verify.command` and `verify.env` replaced; with `run` given, the word
/// naming the entry file ([`entry`]) is `run` instead (a copy of the entry's
/// folder holding a file to check in place).
pub fn command(
    spec: &PatchSpec,
    node: &Path,
    package: &Path,
    run: Option<&Path>,
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
    let replaced = run.and_then(|r| entry_word(spec).map(|i| (i, r)));
    let argv = spec
        .verify_command
        .iter()
        .enumerate()
        .map(|(i, a)| match replaced {
            Some((at, run)) if at == i => run.as_os_str().to_os_string(),
            _ => fill(a),
        })
        .collect();
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
            None,
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

    #[test]
    fn the_entry_file_is_the_word_naming_a_file_of_the_package_and_can_be_swapped() {
        let spec = crate::registry::select(Some("mcp-remote")).unwrap()[0];
        let package = Path::new("/p/mcp-remote");
        assert_eq!(
            entry(spec, package),
            Some(PathBuf::from("/p/mcp-remote/dist/proxy.js"))
        );
        let (argv, _) = command(
            spec,
            Path::new("/n/node"),
            package,
            Some(Path::new("/p/mcp-remote/.copy/proxy.js")),
            "{url}",
            Path::new("/s"),
        );
        assert_eq!(
            argv,
            [
                "/n/node",
                "/p/mcp-remote/.copy/proxy.js",
                "{url}",
                "--transport",
                "http-only"
            ]
            .map(OsString::from)
        );
    }
}
