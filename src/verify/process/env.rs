//! The one rule for the environment of a program mcpatch starts by itself to
//! check an install (an installed bridge, gemini-cli's headless CLI, the
//! harness that loads DSH's plugin):
//! cleared, then only what running a program needs and tells no secret —
//! PATH, the locale (LANG, LANGUAGE, LC_*) and TZ — with HOME and TMPDIR set
//! to the check's scratch folder, so neither mcpatch's tokens and API keys
//! nor the user's own configuration reach a program that may be hostile. A
//! driver adds its own variables after this (the manifest's `verify.env`).
//! The user's own `verify --command` inherits mcpatch's environment instead
//! (docs/security-bridges.md).

use std::ffi::OsStr;
use std::path::Path;

/// Variables passed on as they are.
const PASSED: &[&str] = &["PATH", "LANG", "LANGUAGE", "TZ"];

/// Whether the variable `name` is passed on.
pub fn passed(name: &OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| PASSED.contains(&n) || n.starts_with("LC_"))
}

/// Clear `cmd`'s environment but for the variables [`passed`] lets through
/// from mcpatch's, with HOME and TMPDIR `scratch`.
pub fn clear(cmd: &mut std::process::Command, scratch: &Path) {
    cmd.env_clear();
    for (name, value) in std::env::vars_os() {
        if passed(&name) {
            cmd.env(name, value);
        }
    }
    cmd.env("HOME", scratch).env("TMPDIR", scratch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_path_the_locale_and_the_time_zone_pass() {
        for name in ["PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ"] {
            assert!(passed(OsStr::new(name)), "{name}");
        }
        for name in [
            "HOME",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "NODE_OPTIONS",
            "HTTP_PROXY",
            "https_proxy",
            "NPM_CONFIG_USERCONFIG",
            "LD_PRELOAD",
            "path",
        ] {
            assert!(!passed(OsStr::new(name)), "{name}");
        }
    }
}
