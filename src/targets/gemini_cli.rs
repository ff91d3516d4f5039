//! The gemini-cli driver: installs also live in Homebrew's Cellar, and
//! gemini-cli updates itself (`npm install -g @google/gemini-cli@latest`,
//! which drops the patch), so status reads its settings (system, user, and
//! the project's of the folder status runs in, as gemini-cli's folder trust
//! allows) to say when auto-update is on. verify cannot drive it yet.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::environment::Environment;
use crate::locate::search::Search;

/// Homebrew's Cellar (`…/Cellar/gemini-cli/<v>/libexec/lib/node_modules`).
pub fn search(search: &mut Search, env: &Environment) {
    search.homebrew_cellar("gemini-cli", env);
}

/// A settings file larger than this is not read.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// Whether gemini-cli's auto-update is on, as its merged settings say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutoUpdate {
    /// For a session started in any folder without project settings of its
    /// own: system defaults, user and system settings merged.
    pub on: bool,
    /// The settings file that decided it; null for gemini-cli's default (on).
    #[serde(serialize_with = "set_by_json")]
    pub set_by: Option<PathBuf>,
    /// The project settings of the folder status runs in, when they set
    /// auto-update; else null.
    pub project: Option<Project>,
}

/// A project's `.gemini/settings.json` that sets auto-update: it counts
/// only for sessions started in its folder, and only if that folder is trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Project {
    /// The folder (gemini-cli's workspace: the folder a session starts in).
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub folder: PathBuf,
    /// `<folder>/.gemini/settings.json`.
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub file: PathBuf,
    /// Whether gemini-cli trusts the folder (else it ignores the file).
    pub trusted: bool,
    /// What the file alone says: false when it turns either setting off.
    pub file_on: bool,
    /// Whether auto-update is on for sessions started in the folder.
    pub on: bool,
    /// The settings file that decided it there; null for the default.
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

/// The value of the environment variable `name`, if set and not empty.
fn var(env: &Environment, name: &str) -> Option<std::ffi::OsString> {
    env.vars
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
}

/// gemini-cli's home (`GEMINI_CLI_HOME`, else `$HOME`).
fn gemini_home(env: &Environment) -> Option<PathBuf> {
    var(env, "GEMINI_CLI_HOME")
        .map(PathBuf::from)
        .or_else(|| env.home.clone())
}

/// The settings files every session reads, lowest precedence first: system
/// defaults, user, system. A project's file ([`workspace_settings`]) goes
/// between user and system, and only in a trusted folder.
pub fn settings_files(env: &Environment) -> Vec<PathBuf> {
    let system = var(env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                env.sysroot
                    .join("Library/Application Support/GeminiCli/settings.json")
            } else {
                env.sysroot.join("etc/gemini-cli/settings.json")
            }
        });
    let defaults = var(env, "GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            system
                .parent()
                .unwrap_or(Path::new("/"))
                .join("system-defaults.json")
        });
    let mut files = vec![defaults];
    if let Some(home) = gemini_home(env) {
        files.push(home.join(".gemini/settings.json"));
    }
    files.push(system);
    files
}

/// The project settings a session started in the folder status runs in
/// reads, if any. gemini-cli 0.45.2 to 0.61.0 (`loadSettings(workspaceDir =
/// process.cwd())` in `packages/cli/src/config/settings.ts`, called so by
/// `main()`) takes the folder the session starts in as the workspace, not a
/// project root above it: `new Storage(workspaceDir).getWorkspaceSettingsPath()`
/// is `<cwd>/.gemini/settings.json`, and it is not read when that folder is
/// the home folder (`isWorkspaceHomeDir()`: then it is the user's own file).
fn workspace_settings(env: &Environment) -> Option<(PathBuf, PathBuf)> {
    let folder = env.cwd.clone();
    if folder.as_os_str().is_empty() {
        return None;
    }
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if gemini_home(env).is_some_and(|h| real(&h) == real(&folder)) {
        return None;
    }
    let file = folder.join(".gemini/settings.json");
    Some((folder, file))
}

/// One settings file, parsed.
struct Layer {
    file: PathBuf,
    settings: serde_json::Value,
}

fn layer(file: &Path) -> Option<Layer> {
    read_settings(file).map(|settings| Layer {
        file: file.to_path_buf(),
        settings,
    })
}

/// Auto-update as these layers (lowest precedence first) merge it: on
/// unless `general.enableAutoUpdate` or `general.enableAutoUpdateNotification`
/// is false (the deprecated `general.disableAutoUpdate` /
/// `general.disableUpdateNag` count as their inverses where the new name is
/// absent); with the file that decided it.
fn merged<'a>(layers: impl IntoIterator<Item = &'a Layer>) -> (bool, Option<PathBuf>) {
    let mut update: (bool, Option<PathBuf>) = (true, None);
    let mut notify: (bool, Option<PathBuf>) = (true, None);
    for l in layers {
        let Some(general) = l.settings.get("general") else {
            continue;
        };
        let flag = |name: &str, inverse: &str| {
            general
                .get(name)
                .and_then(serde_json::Value::as_bool)
                .or_else(|| general.get(inverse).and_then(|v| v.as_bool()).map(|b| !b))
        };
        if let Some(b) = flag("enableAutoUpdate", "disableAutoUpdate") {
            update = (b, Some(l.file.clone()));
        }
        if let Some(b) = flag("enableAutoUpdateNotification", "disableUpdateNag") {
            notify = (b, Some(l.file.clone()));
        }
    }
    match (update, notify) {
        ((false, by), _) | (_, (false, by)) => (false, by),
        ((true, by), _) => (true, by),
    }
}

/// Whether the layer sets either auto-update setting (or a deprecated inverse).
fn sets_auto_update(l: &Layer) -> bool {
    l.settings.get("general").is_some_and(|g| {
        [
            "enableAutoUpdate",
            "disableAutoUpdate",
            "enableAutoUpdateNotification",
            "disableUpdateNag",
        ]
        .iter()
        .any(|k| g.get(k).is_some_and(serde_json::Value::is_boolean))
    })
}

/// Whether gemini-cli trusts `folder`, as `isWorkspaceTrusted` /
/// `checkPathTrust` (`packages/cli/src/config/trustedFolders.ts`) decide
/// it: `GEMINI_RESTRICTED_MODE=true` or `GEMINI_CLI_TRUST_WORKSPACE=false`
/// distrust, `GEMINI_CLI_TRUST_WORKSPACE=true` trusts; with folder trust off
/// (`security.folderTrust.enabled: false` in system defaults, user or system
/// settings; it is on by default) every folder is trusted; else the longest
/// rule of `trustedFolders.json` (`GEMINI_CLI_TRUSTED_FOLDERS_PATH`, default
/// `~/.gemini/trustedFolders.json`) that contains the folder decides
/// (`TRUST_PARENT` trusts the rule's parent), and a folder no rule covers
/// is not trusted (`loadSettings` reads `isTrusted ?? false`). mcpatch reads
/// its own environment, which a session's may differ from, and cannot see
/// an IDE's trust answer (gemini-cli's IDE companion).
fn trusted(env: &Environment, folder: &Path, global: &[&Layer]) -> bool {
    let is = |name: &str, value: &str| var(env, name).is_some_and(|v| v == value);
    if is("GEMINI_RESTRICTED_MODE", "true") || is("GEMINI_CLI_TRUST_WORKSPACE", "false") {
        return false;
    }
    if is("GEMINI_CLI_TRUST_WORKSPACE", "true") {
        return true;
    }
    let folder_trust = global
        .iter()
        .filter_map(|l| {
            l.settings
                .pointer("/security/folderTrust/enabled")?
                .as_bool()
        })
        .next_back()
        .unwrap_or(true);
    if !folder_trust {
        return true;
    }
    let rules_file = var(env, "GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        .map(PathBuf::from)
        .or_else(|| gemini_home(env).map(|h| h.join(".gemini/trustedFolders.json")));
    // An unreadable or invalid rules file stops gemini-cli (FatalConfigError): no session.
    let Some(rules) = rules_file
        .as_deref()
        .and_then(read_settings)
        .and_then(|v| v.as_object().cloned())
    else {
        return false;
    };
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let here = real(folder);
    let mut best: Option<(usize, &str)> = None;
    for (rule, level) in &rules {
        let Some(level) = level.as_str() else {
            return false;
        };
        if !matches!(level, "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST") {
            return false;
        }
        let rule_path = env.cwd.join(rule);
        let effective = if level == "TRUST_PARENT" {
            rule_path.parent().unwrap_or(&rule_path).to_path_buf()
        } else {
            rule_path
        };
        if here.starts_with(real(&effective)) && best.is_none_or(|(len, _)| rule.len() > len) {
            best = Some((rule.len(), level));
        }
    }
    matches!(best, Some((_, "TRUST_FOLDER" | "TRUST_PARENT")))
}

/// gemini-cli's auto-update for sessions started anywhere, and in the
/// folder status runs in when its project settings set it.
pub fn auto_update(env: &Environment) -> AutoUpdate {
    let files = settings_files(env);
    let (system_file, lower_files) = files.split_last().expect("the system file is always there");
    let lower: Vec<Layer> = lower_files.iter().filter_map(|f| layer(f)).collect();
    let system = layer(system_file);
    let global: Vec<&Layer> = lower.iter().chain(system.as_ref()).collect();
    let (on, set_by) = merged(global.iter().copied());
    let project = workspace_settings(env).and_then(|(folder, file)| {
        let project = layer(&file).filter(sets_auto_update)?;
        let trusted = trusted(env, &folder, &global);
        let (on, set_by) = if trusted {
            // Merged low to high: system defaults, user, workspace, system.
            merged(lower.iter().chain([&project]).chain(system.as_ref()))
        } else {
            (on, set_by.clone())
        };
        Some(Project {
            folder,
            file,
            trusted,
            file_on: merged([&project]).0,
            on,
            set_by,
        })
    });
    AutoUpdate {
        on,
        set_by,
        project,
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

/// The ways out of a dropped patch, after "turn it off".
const RE_APPLY: &str = "or re-apply after every update unattended (`mcpatch apply --yes --quiet`, e.g. from cron or a login script)";

/// What status says under an install when an update by gemini-cli itself
/// drops the patch: from any folder (auto-update on), or only from the
/// folder status runs in (its project settings turn it on); else nothing.
pub fn auto_update_note(a: &AutoUpdate) -> Option<String> {
    let path = |p: &Path| crate::output::path(p);
    let why = match &a.set_by {
        None => "gemini-cli's default; no settings file turns it off".to_string(),
        Some(p) => format!("as {} says", path(p)),
    };
    let project = a.project.as_ref();
    if !a.on {
        // Untrusted, a project file does not count: then it is off there too.
        let p = project.filter(|p| p.on)?;
        let there = match &p.set_by {
            Some(f) => format!("as {} says", path(f)),
            None => "gemini-cli's default".to_string(),
        };
        return Some(format!(
            "off ({why}), but on for gemini-cli sessions started in {} ({there}; a trusted folder): the next update started from that folder replaces the package and drops the patch; turn it off there (\"general\": {{\"enableAutoUpdate\": false}} in {}, instead of the setting that turns it on), {RE_APPLY}",
            path(&p.folder),
            path(&p.file),
        ));
    }
    let clause = match project.filter(|p| !p.file_on) {
        Some(p) if !p.trusted => format!(
            "{} would turn it off, but gemini-cli ignores it: {} is not a trusted folder; ",
            path(&p.file),
            path(&p.folder)
        ),
        Some(p) if !p.on => format!(
            "{} turns it off only for gemini-cli sessions started in {} (a trusted folder): a session started in any other folder still updates; ",
            path(&p.file),
            path(&p.folder)
        ),
        Some(p) => format!(
            "{} turns it off, but {} overrides it; ",
            path(&p.file),
            p.set_by.as_deref().map_or_else(|| "a system settings file".to_string(), path)
        ),
        None => String::new(),
    };
    Some(format!(
        "on ({why}): gemini-cli's next update replaces the package and drops the patch; {clause}turn it off (\"general\": {{\"enableAutoUpdate\": false}} in ~/.gemini/settings.json), {RE_APPLY}"
    ))
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
                set_by: None,
                project: None
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
                set_by: Some(d.path().join("home/.gemini/settings.json")),
                project: None
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
                set_by: Some(d.path().join("sys/etc/gemini-cli/settings.json")),
                project: None
            }
        );
        let (_d, env) = env_with(&[(
            "home/.gemini/settings.json",
            r#"{"general":{"disableUpdateNag":true}}"#,
        )]);
        assert!(!auto_update(&env).on);
    }

    /// The environment of a status run in `cwd` (relative to `dir`), with `vars` set.
    fn env_in(dir: &Path, cwd: &str, vars: &[(&str, &str)]) -> Environment {
        let mut all: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
            ("HOME".into(), dir.join("home").into()),
            ("MCPATCH_SYSROOT".into(), dir.join("sys").into()),
        ];
        all.extend(vars.iter().map(|(k, v)| (k.into(), v.into())));
        Environment::from_vars(all, dir.join(cwd))
    }

    fn write(dir: &Path, name: &str, text: &str) {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_project_file_counts_only_in_the_trusted_folder_it_is_in_and_below_the_system_file() {
        let (d, _) = env_with(&[
            (
                "home/.gemini/settings.json",
                r#"{"general":{"enableAutoUpdate":false}}"#,
            ),
            (
                "proj/.gemini/settings.json",
                r#"{"general":{"enableAutoUpdate":true}}"#,
            ),
        ]);
        let dir = d.path();
        let user = dir.join("home/.gemini/settings.json");
        let file = dir.join("proj/.gemini/settings.json");
        let project = |trusted: bool, on: bool, set_by: &Path| {
            Some(Project {
                folder: dir.join("proj"),
                file: file.clone(),
                trusted,
                file_on: true,
                on,
                set_by: Some(set_by.to_path_buf()),
            })
        };
        // No rule covers the folder: gemini-cli does not trust it.
        let a = auto_update(&env_in(dir, "proj", &[]));
        assert_eq!((a.on, a.set_by.as_deref()), (false, Some(user.as_path())));
        assert_eq!(a.project, project(false, false, &user));
        let rules = |text: &str| write(dir, "home/.gemini/trustedFolders.json", text);
        let p = dir.join("proj").display().to_string();
        rules(&format!(r#"{{"{p}": "TRUST_FOLDER"}}"#));
        assert_eq!(
            auto_update(&env_in(dir, "proj", &[])).project,
            project(true, true, &file)
        );
        // TRUST_PARENT trusts the rule's parent; the longest rule wins.
        rules(&format!(r#"{{"{p}/x": "TRUST_PARENT"}}"#));
        assert!(
            auto_update(&env_in(dir, "proj", &[]))
                .project
                .unwrap()
                .trusted
        );
        rules(&format!(
            r#"{{"{}": "TRUST_FOLDER", "{p}": "DO_NOT_TRUST"}}"#,
            dir.display()
        ));
        assert!(
            !auto_update(&env_in(dir, "proj", &[]))
                .project
                .unwrap()
                .trusted
        );
        // An invalid rule stops gemini-cli: never trusted.
        rules(&format!(r#"{{"{p}": "TRUST_ME"}}"#));
        assert!(
            !auto_update(&env_in(dir, "proj", &[]))
                .project
                .unwrap()
                .trusted
        );
        // The environment decides first; folder trust turned off trusts every folder.
        rules(&format!(r#"{{"{p}": "TRUST_FOLDER"}}"#));
        let env = env_in(dir, "proj", &[("GEMINI_CLI_TRUST_WORKSPACE", "false")]);
        assert!(!auto_update(&env).project.unwrap().trusted);
        std::fs::remove_file(dir.join("home/.gemini/trustedFolders.json")).unwrap();
        let env = env_in(dir, "proj", &[("GEMINI_CLI_TRUST_WORKSPACE", "true")]);
        assert!(auto_update(&env).project.unwrap().trusted);
        write(
            dir,
            "home/.gemini/settings.json",
            r#"{"general":{"enableAutoUpdate":false},"security":{"folderTrust":{"enabled":false}}}"#,
        );
        assert_eq!(
            auto_update(&env_in(dir, "proj", &[])).project,
            project(true, true, &file)
        );
        // The system file overrides the project's.
        let system = dir.join("sys/etc/gemini-cli/settings.json");
        write(
            dir,
            "sys/etc/gemini-cli/settings.json",
            r#"{"general":{"enableAutoUpdate":false}}"#,
        );
        assert_eq!(
            auto_update(&env_in(dir, "proj", &[])).project,
            project(true, false, &system)
        );
        // Only the folder a session starts in counts: not a folder below it,
        // and not the home folder (its .gemini/settings.json is the user's).
        assert_eq!(auto_update(&env_in(dir, "proj/sub", &[])).project, None);
        write(
            dir,
            "home/.gemini/settings.json",
            r#"{"general":{"enableAutoUpdate":true}}"#,
        );
        assert_eq!(auto_update(&env_in(dir, "home", &[])).project, None);
        // A project file that does not set auto-update is not reported.
        write(
            dir,
            "proj/.gemini/settings.json",
            r#"{"general":{"vimMode":true}}"#,
        );
        assert_eq!(auto_update(&env_in(dir, "proj", &[])).project, None);
    }
}
