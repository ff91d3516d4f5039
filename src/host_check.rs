//! Tells when the DSH host around an install cannot start at all, whatever the
//! patch: a user who restarts DSH after `apply` and sees it die blames the
//! patch. The known defect: `npm install -g @deepseek-ai/dsh@0.1.0-rc.8` resolves
//! its `@deepseek-ai/cordis-plugin-hmr ^1.0.16` to 1.0.19, which no longer has
//! the `registerConfig()` that `@deepseek-ai/dsh-app-boot` calls; and the shipped
//! web and headless profiles switch the `hmr` row off, so that even with 1.0.17
//! DSH's own late start of the HMR service is not ready when the boot asks for
//! it, unless `$DSH_HOME/cordis.patch.yml` switches the row on. Every profile
//! then dies with `dsh: user patch-layer watching requires the Cordis HMR service`.
//!
//! It is told by what the files hold, not by version numbers: the boot's code
//! calls `registerConfig(`, the HMR plugin's code has it or not, the bundles'
//! patch layers switch the `hmr` row off, the home layer switches it on. Only
//! installs nested in a `@deepseek-ai/dsh` package are looked at, with a few
//! small reads each; everything is read through [`small_file`] (regular files
//! only, capped, a file that is itself a symlink not read), and anything that
//! cannot be read means "no known defect", never an error.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::path_json;
use crate::small_file;

/// The host package whose start-up is checked.
pub const HOST_PACKAGE: &str = "@deepseek-ai/dsh";
/// The package of DSH's boot, which calls the HMR service.
const BOOT_PACKAGE: &str = "@deepseek-ai/dsh-app-boot";
/// The Cordis HMR plugin.
const HMR_PACKAGE: &str = "@deepseek-ai/cordis-plugin-hmr";
/// The newest HMR plugin release that still has `registerConfig()`, proven to
/// start DSH 0.1.0-rc.8 (with the `hmr` row switched on).
pub const HMR_FIX_VERSION: &str = "1.0.17";
/// The profile bundles that may switch the `hmr` row off, with the command that starts each profile.
const BUNDLES: [(&str, &str); 2] = [
    ("@deepseek-ai/dsh-web-app", "dsh web"),
    ("@deepseek-ai/dsh-headless", "dsh --profile headless"),
];
/// DSH's message when the HMR service is not there when the boot asks for it.
pub const NO_HMR_SERVICE: &str = "dsh: user patch-layer watching requires the Cordis HMR service";
/// Node's message when the service is there but lacks `registerConfig()`.
const NO_REGISTER_CONFIG: &str = "TypeError: hmr.registerConfig is not a function";
/// The home-level patch layer DSH applies over every profile.
pub const HOME_PATCH: &str = "cordis.patch.yml";
/// How a step to do by hand starts.
const BY_HAND: &str = "add";
/// No file read here is larger.
const CAP: u64 = 1024 * 1024;
/// How many folders above an install its host may be.
const MAX_DEPTH: usize = 12;

/// A known defect that keeps the host from starting, and its proven fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostDefect {
    /// The `@deepseek-ai/dsh` package folder.
    #[serde(serialize_with = "path_json::serialize")]
    pub host: PathBuf,
    /// What the user sees.
    pub what: String,
    /// Why, from what the files hold.
    pub why: String,
    /// One shell command line that fixes it (ending in words, after `; then`,
    /// when a file must be edited by hand).
    pub fix: String,
    /// What the user sees, in a few words (the human note's first line).
    #[serde(skip)]
    pub headline: String,
    /// Why, in a few words (the human note's second line).
    #[serde(skip)]
    pub short_why: String,
    /// The fix, step by step: each command on a line of its own.
    #[serde(skip)]
    pub steps: Vec<FixStep>,
}

/// One step of a host's fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixStep {
    /// Commands to run in order, each one shell command line.
    Run(Vec<String>),
    /// Words for a file mcpatch cannot safely write: edit it by hand.
    ByHand(String),
}

impl HostDefect {
    /// The fix as a POSIX shell script (`mcpatch status --host-fix | sh`): it
    /// stops at the first command that fails; a step to do by hand is a
    /// comment. Text from the install is in comments only after
    /// [`crate::output::clean`] and with no line break, so it cannot run.
    pub fn script(&self) -> String {
        // `clean` shows a line break as `\n`, so nothing planted leaves its comment.
        let one_line = |s: &str| crate::output::clean(s).replace(['\n', '\r'], " ");
        let mut s = format!(
            "# the DSH host at {}\n# {}\n",
            one_line(&self.host.display().to_string()),
            one_line(&self.headline)
        );
        for step in &self.steps {
            match step {
                FixStep::Run(commands) => {
                    for c in commands {
                        s.push_str(c);
                        s.push('\n');
                    }
                }
                FixStep::ByHand(words) => {
                    s.push_str(&format!("# then, by hand: {}\n", one_line(words)));
                }
            }
        }
        s
    }
}

/// The known start-up defect of the host that `install` (a client package
/// folder) is nested in, if it has one; `dsh_home` is DSH's data folder.
pub fn check(install: &Path, dsh_home: Option<&Path>) -> Option<HostDefect> {
    let real = std::fs::canonicalize(install).ok()?;
    let (host, host_manifest) = find_host(&real)?;
    let boot = resolve_package(&host, BOOT_PACKAGE)?;
    if !read_main(&boot)?.contains(".registerConfig(") {
        return None;
    }
    let hmr = resolve_package(&host, HMR_PACKAGE)?;
    let hmr_has_it = read_main(&hmr)?.contains("registerConfig(");
    let row_off_in: Vec<&str> = BUNDLES
        .iter()
        .filter(|(bundle, _)| {
            resolve_package(&host, bundle)
                .and_then(|dir| read_text(&dir.join(bundle_patch(&dir))))
                .is_some_and(|text| hmr_row_disabled(&text) == Some(true))
        })
        .map(|(_, command)| *command)
        .collect();
    let home = dsh_home.map(Home::read);
    let row_needs_switching_on =
        !row_off_in.is_empty() && !matches!(home, Some(Home::Enabled) | None);
    if hmr_has_it && !row_needs_switching_on {
        return None;
    }
    let hmr_version = manifest_string(&read_json(&hmr.join("package.json")), "version");
    let range = host_manifest
        .get("dependencies")
        .and_then(|d| d.get(HMR_PACKAGE))
        .and_then(|v| v.as_str())
        .map(printable)
        .map(|r| format!(" for its `{r}`"))
        .unwrap_or_default();
    let host_version = manifest_string(&host_manifest, "version");
    let profiles = if row_off_in.is_empty() {
        "`dsh web`, `dsh --profile headless`".to_string()
    } else {
        row_off_in
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    };
    let mut steps = Vec::new();
    let mut why = Vec::new();
    let mut short_why = Vec::new();
    // With the row on, the service is there at the boot's call, but lacks the method.
    let row_on = matches!(home, Some(Home::Enabled)) || row_off_in.is_empty();
    let dies_with = if !hmr_has_it && row_on {
        NO_REGISTER_CONFIG
    } else {
        NO_HMR_SERVICE
    };
    if !hmr_has_it {
        steps.push(FixStep::Run(replace_hmr_commands(&hmr)));
        short_why.push(format!(
            "its {} {hmr_version} has no registerConfig()",
            HMR_PACKAGE.trim_start_matches("@deepseek-ai/")
        ));
        why.push(format!(
            "its {BOOT_PACKAGE} calls registerConfig() on the Cordis HMR service, and the {HMR_PACKAGE} {hmr_version} that npm installed{range} ({}) has no registerConfig() (1.0.16 and {HMR_FIX_VERSION} have it)",
            hmr.display()
        ));
    }
    if let (true, Some(home_dir), Some(home)) = (row_needs_switching_on, dsh_home, &home) {
        why.push(format!(
            "its {} profile{} switch the `hmr` row off, and DSH's own late start of the HMR service is not ready when the boot asks for it, unless {} switches the row on",
            row_off_in
                .iter()
                .map(|c| c.trim_start_matches("dsh ").trim_start_matches("--profile "))
                .collect::<Vec<_>>()
                .join(" and "),
            if row_off_in.len() > 1 { "s" } else { "" },
            home_dir.join(HOME_PATCH).display()
        ));
        steps.push(home.switch_row_on(home_dir));
        short_why.push(format!(
            "its {} profile{} switch the `hmr` row off",
            row_off_in
                .iter()
                .map(|c| c
                    .trim_start_matches("dsh ")
                    .trim_start_matches("--profile "))
                .collect::<Vec<_>>()
                .join(" and "),
            if row_off_in.len() > 1 { "s" } else { "" },
        ));
    }
    Some(HostDefect {
        host,
        what: format!(
            "DSH {host_version} cannot start: {profiles} die{} at start-up with `{dies_with}`; this is DSH's own defect, NOT the mcpatch patch",
            if row_off_in.len() == 1 { "s" } else { "" }
        ),
        why: why.join("; and "),
        fix: join_steps(&steps),
        headline: format!(
            "DSH {host_version} cannot start; DSH's own defect, NOT the mcpatch patch"
        ),
        short_why: short_why.join("; "),
        steps,
    })
}

/// Commands joined with `&&`; words for a file to edit by hand come last, after `; then`.
fn join_steps(steps: &[FixStep]) -> String {
    let mut commands = Vec::new();
    let mut words = Vec::new();
    for step in steps {
        match step {
            FixStep::Run(c) => commands.extend(c.iter().map(String::as_str)),
            FixStep::ByHand(w) => words.push(w),
        }
    }
    let mut fix = commands.join(" && ");
    for w in words {
        if !fix.is_empty() {
            fix.push_str("; then ");
        }
        fix.push_str(w);
    }
    fix
}

/// The nearest package folder above `real` whose package.json names the host, with that manifest.
fn find_host(real: &Path) -> Option<(PathBuf, serde_json::Value)> {
    for dir in real.ancestors().skip(1).take(MAX_DEPTH) {
        if !is_package_folder(dir) {
            continue;
        }
        let manifest = read_json(&dir.join("package.json"));
        if manifest.get("name").and_then(|n| n.as_str()) == Some(HOST_PACKAGE) {
            return Some((dir.to_path_buf(), manifest));
        }
    }
    None
}

/// A folder right in `node_modules` (or in a scope there), by its path alone.
fn is_package_folder(dir: &Path) -> bool {
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
    };
    let own = name(Some(dir)).unwrap_or_default();
    if own.starts_with('@') || own == "node_modules" {
        return false;
    }
    let parent = name(dir.parent());
    let grandparent = name(dir.parent().and_then(Path::parent));
    parent.as_deref() == Some("node_modules")
        || (parent.is_some_and(|p| p.starts_with('@'))
            && grandparent.as_deref() == Some("node_modules"))
}

/// Where Node finds `name` from `from`: `node_modules/<name>` in it and each folder above.
fn resolve_package(from: &Path, name: &str) -> Option<PathBuf> {
    from.ancestors()
        .take(64)
        .filter(|dir| dir.file_name().is_none_or(|n| n != "node_modules"))
        .map(|dir| dir.join("node_modules").join(name))
        .find(|candidate| candidate.join("package.json").is_file())
}

/// The text of a package's main module (`exports["."]`, else `main`, else index.js).
fn read_main(package: &Path) -> Option<String> {
    let manifest = read_json(&package.join("package.json"));
    let dot = manifest.get("exports").and_then(|e| e.get(".").or(Some(e)));
    let main = dot
        .and_then(|d| d.get("default").or(Some(d)))
        .and_then(|d| d.as_str())
        .or_else(|| manifest.get("main").and_then(|m| m.as_str()))
        .unwrap_or("index.js");
    read_text(&package.join(relative(main)?))
}

/// A bundle's patch layer (`dsh.bundle.patch`, else cordis.patch.yml).
fn bundle_patch(package: &Path) -> PathBuf {
    let manifest = read_json(&package.join("package.json"));
    manifest
        .pointer("/dsh/bundle/patch")
        .and_then(|p| p.as_str())
        .and_then(relative)
        .unwrap_or_else(|| PathBuf::from(HOME_PATCH))
}

/// A path from a manifest, only if it stays inside the package.
fn relative(text: &str) -> Option<PathBuf> {
    let path = Path::new(text);
    path.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        .then(|| path.to_path_buf())
}

/// A regular file's text: not through a symlink, at most [`CAP`] bytes, UTF-8.
fn read_text(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return None;
    }
    String::from_utf8(small_file::read_capped(path, CAP).ok()?).ok()
}

fn read_json(path: &Path) -> serde_json::Value {
    read_text(path)
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// A manifest's string field, fit to print, or "?".
fn manifest_string(manifest: &serde_json::Value, field: &str) -> String {
    manifest
        .get(field)
        .and_then(|v| v.as_str())
        .map(printable)
        .unwrap_or_else(|| "?".into())
}

/// A short value from a file, fit to print: a version or range, else "?".
fn printable(text: &str) -> String {
    let ok = text.len() <= 64
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "^~<>=.+-_ |*".contains(c));
    if ok && !text.is_empty() {
        text.to_string()
    } else {
        "?".into()
    }
}

/// What the home-level patch layer says of the `hmr` row, and how to switch it on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Home {
    /// It switches the row on.
    Enabled,
    /// Missing, empty or a block list: an entry can be appended.
    Append,
    /// It holds only `[]` (and comments): it can be replaced by the entry.
    Replace,
    /// Something else (a flow list, a symlink, unreadable): edit it by hand.
    ByHand,
}

impl Home {
    fn read(dsh_home: &Path) -> Home {
        let path = dsh_home.join(HOME_PATCH);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Home::Append,
            Err(_) => return Home::ByHand,
            Ok(m) if !m.file_type().is_file() => return Home::ByHand,
            Ok(_) => {}
        }
        let Some(text) = read_text(&path) else {
            return Home::ByHand;
        };
        if hmr_row_disabled(&text) == Some(false) {
            return Home::Enabled;
        }
        let significant: Vec<&str> = text
            .lines()
            .map(|l| l.split(" #").next().unwrap_or_default().trim())
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        match significant.first() {
            None => Home::Append,
            Some(l) if l.starts_with('-') => Home::Append,
            Some(&"[]") if significant.len() == 1 => Home::Replace,
            Some(_) => Home::ByHand,
        }
    }

    /// The commands (or, for a file mcpatch cannot safely write, the words) that switch the row on.
    fn switch_row_on(&self, dsh_home: &Path) -> FixStep {
        let file = dsh_home.join(HOME_PATCH);
        match self {
            Home::Enabled => FixStep::Run(Vec::new()),
            Home::Append => FixStep::Run(vec![
                format!("mkdir -p {}", shell_quote(dsh_home)),
                format!(
                    "printf '\\n- id: hmr\\n  disabled: false\\n' >> {}",
                    shell_quote(&file)
                ),
            ]),
            Home::Replace => FixStep::Run(vec![format!(
                "printf -- '- id: hmr\\n  disabled: false\\n' > {}",
                shell_quote(&file)
            )]),
            Home::ByHand => FixStep::ByHand(format!(
                "{BY_HAND} the entry `{{id: hmr, disabled: false}}` to the list in {} by hand",
                file.display()
            )),
        }
    }
}

/// The commands that put the HMR plugin release with `registerConfig()` in
/// place of the folder `hmr`: fetched first, so a failed download changes
/// nothing; a symlinked folder is replaced, never written through.
fn replace_hmr_commands(hmr: &Path) -> Vec<String> {
    let scope = hmr.parent().unwrap_or(hmr);
    let folder = hmr
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder = shell_quote(Path::new(&folder));
    let tarball = format!("deepseek-ai-cordis-plugin-hmr-{HMR_FIX_VERSION}.tgz");
    vec![
        format!("cd {}", shell_quote(scope)),
        format!("npm pack --silent {HMR_PACKAGE}@{HMR_FIX_VERSION}"),
        format!("rm -rf {folder}"),
        format!("mkdir {folder}"),
        format!("tar xzf {tarball} -C {folder} --strip-components=1"),
        format!("rm {tarball}"),
    ]
}

/// A path as one POSIX shell word.
pub fn shell_quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+@:,".contains(c))
    {
        return text.into_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Whether a patch layer's last entry for the `hmr` row sets `disabled`, and
/// to what (`None`: no entry sets it). A line reading of the block style DSH's
/// own layers use (`- id: hmr` then `disabled: true|false` indented under it);
/// a flow-style entry is not seen.
fn hmr_row_disabled(text: &str) -> Option<bool> {
    let mut found = None;
    let mut entry_indent: Option<usize> = None;
    for line in text.lines() {
        let content = line.split(" #").next().unwrap_or_default();
        let trimmed = content.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = content.len() - trimmed.len();
        if let Some(rest) = trimmed.strip_prefix('-') {
            let rest = rest.trim();
            let id = rest
                .strip_prefix("id:")
                .map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"'));
            if id == Some("hmr") {
                entry_indent = Some(indent);
                continue;
            }
            if entry_indent.is_some_and(|e| indent <= e) {
                entry_indent = None;
            }
            continue;
        }
        match entry_indent {
            Some(e) if indent > e => {
                if let Some(value) = trimmed.strip_prefix("disabled:") {
                    match value.trim() {
                        "true" => found = Some(true),
                        "false" => found = Some(false),
                        _ => {}
                    }
                }
            }
            Some(_) => entry_indent = None,
            None => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOT_CALLS: &str = "const register = hmr.registerConfig(filename, async () => {});";
    const HMR_HAS: &str = "class Hmr { async registerConfig(filename, refresh) {} }";
    const HMR_LACKS: &str = "class Hmr { async *[Service.init]() {} }";

    /// A hand-made global install: the host, its boot, its HMR plugin, its two
    /// bundles switching the row off, and the client nested in it.
    struct Fake {
        dir: tempfile::TempDir,
    }

    impl Fake {
        fn new(hmr_code: &str) -> Fake {
            let dir = tempfile::tempdir().unwrap();
            let fake = Fake { dir };
            let host = fake.host();
            fake.package(&host, HOST_PACKAGE, "0.1.0-rc.8", None);
            std::fs::write(
                host.join("package.json"),
                r#"{"name":"@deepseek-ai/dsh","version":"0.1.0-rc.8","dependencies":{"@deepseek-ai/cordis-plugin-hmr":"^1.0.16"}}"#,
            )
            .unwrap();
            let nm = host.join("node_modules");
            fake.package(
                &nm.join(BOOT_PACKAGE),
                BOOT_PACKAGE,
                "0.1.0-rc.8",
                Some(BOOT_CALLS),
            );
            fake.package(&nm.join(HMR_PACKAGE), HMR_PACKAGE, "1.0.19", Some(hmr_code));
            for (bundle, _) in BUNDLES {
                fake.package(&nm.join(bundle), bundle, "0.1.0-rc.8", None);
                std::fs::write(
                    nm.join(bundle).join("cordis.patch.yml"),
                    "# the row stays off\n- id: hmr\n  disabled: true\n\n- id: tools\n  config: {}\n",
                )
                .unwrap();
            }
            fake.package(
                &fake.client(),
                "@deepseek-ai/dsh-mcp-client",
                "0.1.0-rc.8",
                None,
            );
            std::fs::create_dir_all(fake.home()).unwrap();
            fake
        }

        fn host(&self) -> PathBuf {
            self.dir
                .path()
                .join("prefix/lib/node_modules/@deepseek-ai/dsh")
        }

        fn client(&self) -> PathBuf {
            self.host().join("node_modules/@deepseek-ai/dsh-mcp-client")
        }

        fn hmr(&self) -> PathBuf {
            self.host().join("node_modules").join(HMR_PACKAGE)
        }

        fn home(&self) -> PathBuf {
            self.dir.path().join("home/.dsh")
        }

        fn package(&self, dir: &Path, name: &str, version: &str, main: Option<&str>) {
            std::fs::create_dir_all(dir.join("lib")).unwrap();
            std::fs::write(
                dir.join("package.json"),
                format!(r#"{{"name":"{name}","version":"{version}","main":"lib/index.js","exports":{{".":{{"default":"./lib/index.js"}}}}}}"#),
            )
            .unwrap();
            if let Some(code) = main {
                std::fs::write(dir.join("lib/index.js"), code).unwrap();
            }
        }

        fn check(&self) -> Option<HostDefect> {
            check(&self.client(), Some(&self.home()))
        }
    }

    #[test]
    fn an_hmr_plugin_without_register_config_under_a_boot_that_calls_it_is_the_defect() {
        let fake = Fake::new(HMR_LACKS);
        let d = fake.check().expect("a defect");
        let host = std::fs::canonicalize(fake.host()).unwrap();
        let hmr = host.join("node_modules").join(HMR_PACKAGE);
        assert_eq!(d.host, host);
        assert_eq!(
            d.what,
            "DSH 0.1.0-rc.8 cannot start: `dsh web` and `dsh --profile headless` die at start-up with `dsh: user patch-layer watching requires the Cordis HMR service`; this is DSH's own defect, NOT the mcpatch patch"
        );
        assert_eq!(
            d.why,
            format!(
                "its @deepseek-ai/dsh-app-boot calls registerConfig() on the Cordis HMR service, and the @deepseek-ai/cordis-plugin-hmr 1.0.19 that npm installed for its `^1.0.16` ({}) has no registerConfig() (1.0.16 and 1.0.17 have it); and its web and headless profiles switch the `hmr` row off, and DSH's own late start of the HMR service is not ready when the boot asks for it, unless {}/cordis.patch.yml switches the row on",
                hmr.display(),
                fake.home().display()
            )
        );
        assert_eq!(
            d.fix,
            format!(
                "cd {} && npm pack --silent @deepseek-ai/cordis-plugin-hmr@1.0.17 && rm -rf cordis-plugin-hmr && mkdir cordis-plugin-hmr && tar xzf deepseek-ai-cordis-plugin-hmr-1.0.17.tgz -C cordis-plugin-hmr --strip-components=1 && rm deepseek-ai-cordis-plugin-hmr-1.0.17.tgz && mkdir -p {} && printf '\\n- id: hmr\\n  disabled: false\\n' >> {}/cordis.patch.yml",
                hmr.parent().unwrap().display(),
                fake.home().display(),
                fake.home().display()
            )
        );
    }

    #[test]
    fn the_fix_script_runs_one_command_a_line_and_keeps_planted_text_in_comments() {
        let fake = Fake::new(HMR_LACKS);
        let mut d = fake.check().expect("a defect");
        assert_eq!(
            d.headline,
            "DSH 0.1.0-rc.8 cannot start; DSH's own defect, NOT the mcpatch patch"
        );
        assert_eq!(
            d.short_why,
            "its cordis-plugin-hmr 1.0.19 has no registerConfig(); its web and headless profiles switch the `hmr` row off"
        );
        let host = std::fs::canonicalize(fake.host()).unwrap();
        let home = fake.home();
        assert_eq!(
            d.script(),
            format!(
                "# the DSH host at {}\n\
                 # DSH 0.1.0-rc.8 cannot start; DSH's own defect, NOT the mcpatch patch\n\
                 cd {}/node_modules/@deepseek-ai\n\
                 npm pack --silent @deepseek-ai/cordis-plugin-hmr@1.0.17\n\
                 rm -rf cordis-plugin-hmr\n\
                 mkdir cordis-plugin-hmr\n\
                 tar xzf deepseek-ai-cordis-plugin-hmr-1.0.17.tgz -C cordis-plugin-hmr --strip-components=1\n\
                 rm deepseek-ai-cordis-plugin-hmr-1.0.17.tgz\n\
                 mkdir -p {}\n\
                 printf '\\n- id: hmr\\n  disabled: false\\n' >> {}/cordis.patch.yml\n",
                host.display(),
                host.display(),
                home.display(),
                home.display()
            )
        );
        // A planted host path with a line break stays inside its comment.
        d.host = PathBuf::from("/x\nrm -rf /tmp/victim\n#");
        d.steps = vec![FixStep::ByHand("add it\ntouch /tmp/planted".into())];
        assert_eq!(
            d.script(),
            "# the DSH host at /x\\nrm -rf /tmp/victim\\n#\n\
             # DSH 0.1.0-rc.8 cannot start; DSH's own defect, NOT the mcpatch patch\n\
             # then, by hand: add it\\ntouch /tmp/planted\n"
        );
    }

    #[test]
    fn with_register_config_the_row_switched_off_is_still_the_defect_until_the_home_layer_switches_it_on(
    ) {
        let fake = Fake::new(HMR_HAS);
        let d = fake.check().expect("a defect");
        assert_eq!(
            d.why,
            format!("its web and headless profiles switch the `hmr` row off, and DSH's own late start of the HMR service is not ready when the boot asks for it, unless {}/cordis.patch.yml switches the row on", fake.home().display())
        );
        assert_eq!(
            d.fix,
            format!(
                "mkdir -p {h} && printf '\\n- id: hmr\\n  disabled: false\\n' >> {h}/cordis.patch.yml",
                h = fake.home().display()
            )
        );
        std::fs::write(
            fake.home().join(HOME_PATCH),
            "- id: other\n  disabled: true\n\n- id: hmr\n  disabled: false\n",
        )
        .unwrap();
        assert_eq!(fake.check(), None);
    }

    #[test]
    fn with_the_row_switched_on_the_missing_method_is_what_dsh_dies_of() {
        let fake = Fake::new(HMR_LACKS);
        std::fs::write(
            fake.home().join(HOME_PATCH),
            "- id: hmr\n  disabled: false\n",
        )
        .unwrap();
        let d = fake.check().expect("a defect");
        assert!(
            d.what
                .contains("with `TypeError: hmr.registerConfig is not a function`"),
            "{}",
            d.what
        );
        assert!(!d.fix.contains("printf"), "{}", d.fix);
    }

    #[test]
    fn a_home_layer_of_only_an_empty_list_is_replaced_and_a_flow_list_is_left_to_the_user() {
        let fake = Fake::new(HMR_HAS);
        let file = fake.home().join(HOME_PATCH);
        std::fs::write(&file, "# mine\n[]\n").unwrap();
        assert_eq!(
            fake.check().unwrap().fix,
            format!(
                "printf -- '- id: hmr\\n  disabled: false\\n' > {}",
                file.display()
            )
        );
        std::fs::write(&file, "[{id: timer, disabled: true}]\n").unwrap();
        assert_eq!(
            fake.check().unwrap().fix,
            format!(
                "add the entry `{{id: hmr, disabled: false}}` to the list in {} by hand",
                file.display()
            )
        );
    }

    #[test]
    fn no_host_no_boot_call_or_a_boot_that_does_not_call_it_is_no_defect() {
        let fake = Fake::new(HMR_LACKS);
        // An install that is not nested in a host.
        let lone = fake
            .dir
            .path()
            .join("lib/node_modules/@deepseek-ai/dsh-mcp-client");
        std::fs::create_dir_all(&lone).unwrap();
        assert_eq!(check(&lone, Some(&fake.home())), None);
        // A boot that no longer calls registerConfig.
        let boot = fake.host().join("node_modules").join(BOOT_PACKAGE);
        std::fs::write(boot.join("lib/index.js"), "hmr.watch(filename);").unwrap();
        assert_eq!(fake.check(), None);
        // No boot at all (a host mcpatch's other tests make by hand).
        std::fs::remove_dir_all(&boot).unwrap();
        assert_eq!(fake.check(), None);
    }

    #[test]
    fn planted_files_are_not_read_and_nothing_panics() {
        let fake = Fake::new(HMR_LACKS);
        let main = fake.hmr().join("lib/index.js");
        // A symlink to a file that has the method is not followed.
        let elsewhere = fake.dir.path().join("elsewhere.js");
        std::fs::write(&elsewhere, HMR_HAS).unwrap();
        std::fs::remove_file(&main).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &main).unwrap();
        assert_eq!(fake.check(), None);
        // A device, a FIFO, a huge file, a manifest pointing outside, broken JSON.
        std::fs::remove_file(&main).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &main).unwrap();
        assert_eq!(fake.check(), None);
        std::fs::remove_file(&main).unwrap();
        let c = std::ffi::CString::new(main.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert_eq!(fake.check(), None);
        std::fs::remove_file(&main).unwrap();
        std::fs::write(&main, vec![b'x'; (CAP + 1) as usize]).unwrap();
        assert_eq!(fake.check(), None);
        std::fs::write(&main, HMR_LACKS).unwrap();
        std::fs::write(
            fake.hmr().join("package.json"),
            r#"{"main":"../../../../../../../../etc/passwd","exports":"../x"}"#,
        )
        .unwrap();
        assert_eq!(fake.check(), None);
        std::fs::write(fake.hmr().join("package.json"), "{not json").unwrap();
        // No manifest to read: the main module is index.js, which is not there.
        assert_eq!(fake.check(), None);
        // A home layer that is a symlink is not written through: edit by hand,
        // after the commands.
        let fake = Fake::new(HMR_HAS);
        let home_patch = fake.home().join(HOME_PATCH);
        std::os::unix::fs::symlink(&elsewhere, &home_patch).unwrap();
        let by_hand = format!(
            "add the entry `{{id: hmr, disabled: false}}` to the list in {} by hand",
            home_patch.display()
        );
        assert_eq!(fake.check().unwrap().fix, by_hand);
        let fake = Fake::new(HMR_LACKS);
        let home_patch = fake.home().join(HOME_PATCH);
        std::os::unix::fs::symlink(&elsewhere, &home_patch).unwrap();
        let fix = fake.check().unwrap().fix;
        assert!(
            fix.starts_with("cd ")
                && fix.ends_with(&format!(
                    "&& rm deepseek-ai-cordis-plugin-hmr-1.0.17.tgz; then add the entry `{{id: hmr, disabled: false}}` to the list in {} by hand",
                    home_patch.display()
                )),
            "{fix}"
        );
    }

    #[test]
    fn versions_and_paths_from_files_are_printed_only_when_plain() {
        assert_eq!(printable("1.0.19"), "1.0.19");
        assert_eq!(printable("^1.0.16"), "^1.0.16");
        assert_eq!(printable("1.0.19\u{1b}[2J"), "?");
        assert_eq!(printable(""), "?");
        assert_eq!(
            shell_quote(Path::new("/usr/lib/node_modules")),
            "/usr/lib/node_modules"
        );
        assert_eq!(shell_quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
        assert_eq!(shell_quote(Path::new("/x;rm -rf /")), "'/x;rm -rf /'");
    }

    #[test]
    fn the_hmr_row_is_read_from_block_style_entries_the_last_one_winning() {
        let base = "- insert:\n    - id: timer\n      name: t\n\n    - id: hmr\n      name: '@deepseek-ai/cordis-plugin-hmr'\n      config:\n        root: ['.']\n";
        assert_eq!(hmr_row_disabled(base), None);
        assert_eq!(
            hmr_row_disabled("- id: hmr\n  disabled: true\n"),
            Some(true)
        );
        assert_eq!(
            hmr_row_disabled("- id: 'hmr'   # the row\n  disabled: false # on\n"),
            Some(false)
        );
        assert_eq!(
            hmr_row_disabled("- id: hmr\n  disabled: true\n- id: hmr\n  disabled: false\n"),
            Some(false)
        );
        // `disabled` of another row, or at the top level, is not the hmr row's.
        assert_eq!(
            hmr_row_disabled("- id: hmr\n  config: {}\n- id: tools\n  disabled: false\n"),
            None
        );
        assert_eq!(hmr_row_disabled("- id: hmr\ndisabled: false\n"), None);
        assert_eq!(hmr_row_disabled("- id: hmrx\n  disabled: false\n"), None);
    }
}
