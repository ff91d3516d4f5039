//! The gemini-cli driver: installs also live in Homebrew's Cellar, and
//! gemini-cli updates itself (`npm install -g @google/gemini-cli@latest`,
//! which drops the patch), so status reads its settings to say when
//! auto-update is on. verify cannot drive it yet.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::locate::{Environment, Search};

/// Homebrew's Cellar (`…/Cellar/gemini-cli/<v>/libexec/lib/node_modules`).
pub fn search(search: &mut Search, env: &Environment) {
    search.homebrew_cellar("gemini-cli", env);
}

/// A settings file larger than this is not read.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// Whether gemini-cli's auto-update is on, as its merged settings say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutoUpdate {
    pub on: bool,
    /// The settings file that decided it; null for gemini-cli's default (on).
    #[serde(serialize_with = "set_by_json")]
    pub set_by: Option<PathBuf>,
}

fn set_by_json<S: serde::Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => crate::path_json::serialize(p, s),
        None => s.serialize_none(),
    }
}

/// Whether gemini-cli's own updater replaces this install: it updates npm,
/// pnpm, yarn, bun and volta globals, never Homebrew's Cellar or npx/pnpx/bunx caches.
pub fn self_updating(install: &Path) -> bool {
    !install
        .components()
        .any(|c| matches!(c.as_os_str().to_str(), Some("Cellar" | "_npx" | "dlx")))
}

/// The settings files, lowest precedence first: system defaults, user,
/// system (a project's `.gemini/settings.json` counts only in a folder the
/// user trusted, which status cannot know, so it is not read).
pub fn settings_files(env: &Environment) -> Vec<PathBuf> {
    let var = |name: &str| {
        env.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| !p.as_os_str().is_empty())
    };
    let system = var("GEMINI_CLI_SYSTEM_SETTINGS_PATH").unwrap_or_else(|| {
        if cfg!(target_os = "macos") {
            env.sysroot
                .join("Library/Application Support/GeminiCli/settings.json")
        } else {
            env.sysroot.join("etc/gemini-cli/settings.json")
        }
    });
    let defaults = var("GEMINI_CLI_SYSTEM_DEFAULTS_PATH").unwrap_or_else(|| {
        system
            .parent()
            .unwrap_or(Path::new("/"))
            .join("system-defaults.json")
    });
    let mut files = vec![defaults];
    if let Some(home) = var("GEMINI_CLI_HOME").or_else(|| env.home.clone()) {
        files.push(home.join(".gemini/settings.json"));
    }
    files.push(system);
    files
}

/// Auto-update is on unless `general.enableAutoUpdate` or
/// `general.enableAutoUpdateNotification` is false in the merged settings
/// (the deprecated `general.disableAutoUpdate` / `general.disableUpdateNag`
/// count as their inverses where the new name is absent).
pub fn auto_update(env: &Environment) -> AutoUpdate {
    let mut update: (bool, Option<PathBuf>) = (true, None);
    let mut notify: (bool, Option<PathBuf>) = (true, None);
    for file in settings_files(env) {
        let Some(general) = read_settings(&file).and_then(|v| v.get("general").cloned()) else {
            continue;
        };
        let flag = |name: &str, inverse: &str| {
            general
                .get(name)
                .and_then(serde_json::Value::as_bool)
                .or_else(|| general.get(inverse).and_then(|v| v.as_bool()).map(|b| !b))
        };
        if let Some(b) = flag("enableAutoUpdate", "disableAutoUpdate") {
            update = (b, Some(file.clone()));
        }
        if let Some(b) = flag("enableAutoUpdateNotification", "disableUpdateNag") {
            notify = (b, Some(file.clone()));
        }
    }
    match (update, notify) {
        ((false, by), _) | (_, (false, by)) => AutoUpdate {
            on: false,
            set_by: by,
        },
        ((true, by), _) => AutoUpdate {
            on: true,
            set_by: by,
        },
    }
}

/// A settings file as JSON (comments allowed), if it is there and parses.
fn read_settings(path: &Path) -> Option<serde_json::Value> {
    let (bytes, _) = crate::identity::read_capped(path, MAX_SETTINGS_BYTES, true).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    serde_json::from_str(&without_comments(&text)).ok()
}

/// JSON text without `//` and `/* */` comments (strings kept as they are).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// What status says under an install when auto-update is on.
pub fn auto_update_note(a: &AutoUpdate) -> String {
    let why = match &a.set_by {
        None => "gemini-cli's default; no settings file turns it off".to_string(),
        Some(p) => format!("as {} says", crate::output::path(p)),
    };
    format!(
        "on ({why}): gemini-cli's next update replaces the package and drops the patch; turn it off (\"general\": {{\"enableAutoUpdate\": false}} in ~/.gemini/settings.json), or re-apply after every update unattended (`mcpatch apply --yes --quiet`, e.g. from cron or a login script)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Environment) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let env = Environment::from_vars(
            vec![
                ("HOME".into(), dir.path().join("home").into()),
                ("MCPATCH_SYSROOT".into(), dir.path().join("sys").into()),
            ],
            dir.path().to_path_buf(),
        );
        (dir, env)
    }

    #[test]
    fn auto_update_is_on_by_default_and_off_when_a_setting_says_so() {
        let (_d, env) = env_with(&[]);
        assert_eq!(
            auto_update(&env),
            AutoUpdate {
                on: true,
                set_by: None
            }
        );
        let (d, env) = env_with(&[(
            "home/.gemini/settings.json",
            "{\n  // no updates, please\n  \"general\": { /* \"x\" */ \"enableAutoUpdate\": false, \"url\": \"http://a//b\" }\n}\n",
        )]);
        assert_eq!(
            auto_update(&env),
            AutoUpdate {
                on: false,
                set_by: Some(d.path().join("home/.gemini/settings.json"))
            }
        );
        // The system file wins over the user's; the deprecated inverse counts.
        let (d, env) = env_with(&[
            (
                "home/.gemini/settings.json",
                r#"{"general":{"enableAutoUpdate":false}}"#,
            ),
            (
                "sys/etc/gemini-cli/settings.json",
                r#"{"general":{"disableAutoUpdate":false}}"#,
            ),
        ]);
        assert_eq!(
            auto_update(&env),
            AutoUpdate {
                on: true,
                set_by: Some(d.path().join("sys/etc/gemini-cli/settings.json"))
            }
        );
        let (_d, env) = env_with(&[(
            "home/.gemini/settings.json",
            r#"{"general":{"disableUpdateNag":true}}"#,
        )]);
        assert!(!auto_update(&env).on);
    }
}
