//! Finds every installed copy of the client package that a host on this
//! machine could load, without walking whole disks: the cost grows with the
//! number of package folders looked at, never with the number of files.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How deep `node_modules` folders may nest below a search root.
const MAX_NESTING: usize = 8;
/// Upper bound on folders visited below one root (a guard against pathological trees).
const MAX_FOLDERS_PER_ROOT: usize = 200_000;
/// How long `npm root -g` may take.
const NPM_TIMEOUT: Duration = Duration::from_secs(5);
/// The host package that carries the client as a dependency.
const HOST_PACKAGE: &str = "@deepseek-ai/dsh";

/// What the environment offers the search; tests and sandboxes set it explicitly.
#[derive(Debug, Clone)]
pub struct Environment {
    pub path_var: Option<std::ffi::OsString>,
    pub home: Option<PathBuf>,
    pub dsh_home: Option<PathBuf>,
    pub pnpm_home: Option<PathBuf>,
    /// Replaces the fixed list of usual global roots when set (`MCPATCH_SYSTEM_ROOTS`).
    pub system_roots: Option<Vec<PathBuf>>,
}

impl Environment {
    pub fn from_process() -> Self {
        Environment {
            path_var: std::env::var_os("PATH"),
            home: std::env::var_os("HOME").map(PathBuf::from),
            dsh_home: std::env::var_os("DSH_HOME")
                .filter(|v| !v.to_string_lossy().trim().is_empty())
                .map(PathBuf::from),
            pnpm_home: std::env::var_os("PNPM_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            system_roots: std::env::var_os("MCPATCH_SYSTEM_ROOTS").map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            }),
        }
    }

    /// `$DSH_HOME`, or `~/.dsh`, resolved as DSH resolves it: a blank value
    /// is unset, and a leading `~` means the home folder.
    pub fn dsh_home(&self) -> Result<PathBuf> {
        match (&self.dsh_home, &self.home) {
            (Some(d), home) => {
                let text = d.to_string_lossy();
                match (text.as_ref(), home) {
                    ("~", Some(h)) => Ok(h.clone()),
                    (t, Some(h)) if t.starts_with("~/") => Ok(h.join(&t[2..])),
                    _ => Ok(std::path::absolute(d).unwrap_or_else(|_| d.clone())),
                }
            }
            (None, Some(h)) => Ok(h.join(".dsh")),
            (None, None) => Err(Error::NoHome),
        }
    }
}

/// One installed copy of the package: a real file, possibly reachable by several paths.
#[derive(Debug, Clone)]
pub struct Located {
    /// The package folder (holding package.json).
    pub package_dir: PathBuf,
    /// Its `lib/index.js`, as found.
    pub file: PathBuf,
    /// Which search sources led here.
    pub found_via: Vec<String>,
    /// Other package folders whose file is this very file (same device and inode).
    pub same_file_as: Vec<PathBuf>,
    /// Link count of the file: more than 1 means a shared store copy (pnpm).
    pub hard_links: u64,
}

/// Everything a search found, and where it looked.
#[derive(Debug, Default)]
pub struct LocateReport {
    pub installs: Vec<Located>,
    pub searched: Vec<String>,
}

/// Search the explicit `--path` arguments, or (when there are none) every usual source.
pub fn locate(
    package: &str,
    file: &str,
    paths: &[PathBuf],
    env: &Environment,
) -> Result<LocateReport> {
    let mut search = Search::new(package, file);
    if !paths.is_empty() {
        for p in paths {
            search.explicit(p)?;
        }
    } else {
        search.dsh_on_path(env);
        search.npm_root(env);
        if let Ok(dsh_home) = env.dsh_home() {
            search.dsh_home(&dsh_home);
        }
        search.usual_roots(env);
    }
    Ok(search.finish())
}

struct Found {
    package_dir: PathBuf,
    file: PathBuf,
    via: String,
}

struct Search<'a> {
    package: &'a str,
    file: &'a str,
    found: Vec<Found>,
    searched: Vec<String>,
    visited: HashSet<PathBuf>,
    budget: usize,
}

impl<'a> Search<'a> {
    fn new(package: &'a str, file: &'a str) -> Self {
        Search {
            package,
            file,
            found: Vec::new(),
            searched: Vec::new(),
            visited: HashSet::new(),
            budget: 0,
        }
    }

    fn explicit(&mut self, p: &Path) -> Result<()> {
        let via = format!("--path {}", p.display());
        self.searched.push(via.clone());
        let meta = std::fs::metadata(p)
            .map_err(|e| Error::io("read", p, e, "check the --path argument: it must exist"))?;
        if meta.is_file() {
            // A lib/index.js: its package folder is two levels up when it has a package.json.
            let pkg = p
                .parent()
                .and_then(Path::parent)
                .filter(|d| d.join("package.json").is_file());
            match pkg {
                Some(dir) if self.is_package(dir) => self.record(dir, &via),
                _ if p.file_name() == Some(OsStr::new("index.js")) => self.found.push(Found {
                    package_dir: p.parent().and_then(Path::parent).unwrap_or(p).to_path_buf(),
                    file: p.to_path_buf(),
                    via,
                }),
                _ => {
                    return Err(Error::NotAnInstall {
                        path: p.to_path_buf(),
                    })
                }
            }
            return Ok(());
        }
        if self.is_package(p) {
            self.record(p, &via);
            return Ok(());
        }
        // Any folder: a node_modules itself, a project holding one, or a global prefix.
        self.budget = 0;
        self.scan_node_modules(p, 0, &via);
        self.scan_node_modules(&p.join("node_modules"), 0, &via);
        self.scan_node_modules(&p.join("lib").join("node_modules"), 0, &via);
        // One level further: a folder holding several projects or prefixes.
        if p.file_name() != Some(OsStr::new("node_modules")) {
            if let Ok(entries) = std::fs::read_dir(p) {
                for child in entries.flatten().map(|e| e.path()).filter(|c| c.is_dir()) {
                    self.scan_node_modules(&child.join("node_modules"), 0, &via);
                    self.scan_node_modules(&child.join("lib").join("node_modules"), 0, &via);
                }
            }
        }
        Ok(())
    }

    fn dsh_on_path(&mut self, env: &Environment) {
        let Some(path_var) = &env.path_var else {
            return;
        };
        let Ok(bin) = which::which_in(
            "dsh",
            Some(path_var),
            std::env::current_dir().unwrap_or_default(),
        ) else {
            self.searched.push("`dsh` on PATH (not found)".into());
            return;
        };
        let via = format!("`dsh` on PATH ({})", bin.display());
        self.searched.push(via.clone());
        let real = std::fs::canonicalize(&bin).unwrap_or(bin.clone());
        let mut hosts: Vec<PathBuf> = real
            .ancestors()
            .filter(|d| self.is_named(d, HOST_PACKAGE))
            .map(Path::to_path_buf)
            .take(1)
            .collect();
        if hosts.is_empty() {
            // A shim script (pnpm, volta, a wrapper): look for the host's path inside it.
            hosts = host_dirs_named_in_script(&real)
                .into_iter()
                .filter(|d| self.is_named(d, HOST_PACKAGE))
                .collect();
        }
        for host in hosts {
            self.budget = 0;
            self.scan_node_modules(&host.join("node_modules"), 0, &via);
            // Hoisted next to the host in the same node_modules (possibly inside a scope folder).
            for up in host.ancestors().skip(1).take(2) {
                if up.file_name() == Some(OsStr::new("node_modules")) {
                    let sibling = up.join(self.package);
                    if self.is_package(&sibling) {
                        self.record(&sibling, &via);
                    }
                    break;
                }
            }
        }
    }

    fn npm_root(&mut self, env: &Environment) {
        let Some(path_var) = &env.path_var else {
            return;
        };
        let Ok(npm) = which::which_in(
            "npm",
            Some(path_var),
            std::env::current_dir().unwrap_or_default(),
        ) else {
            return;
        };
        match run_with_timeout(
            Command::new(&npm)
                .args(["root", "-g"])
                .env("PATH", path_var),
            NPM_TIMEOUT,
        ) {
            Some(out) => {
                let root = PathBuf::from(out.trim());
                if !root.as_os_str().is_empty() {
                    let via = format!("`npm root -g` ({})", root.display());
                    self.searched.push(via.clone());
                    self.budget = 0;
                    self.scan_node_modules(&root, 0, &via);
                }
            }
            None => self
                .searched
                .push(format!("`{} root -g` (failed or timed out)", npm.display())),
        }
    }

    fn dsh_home(&mut self, dsh_home: &Path) {
        let profiles = dsh_home.join("profiles");
        let via = format!("DSH_HOME profiles ({})", profiles.display());
        self.searched.push(via.clone());
        self.budget = 0;
        self.scan_node_modules(&profiles.join("node_modules"), 0, &via);
        if let Ok(entries) = std::fs::read_dir(&profiles) {
            for entry in entries.flatten() {
                if entry.file_name() != "node_modules" {
                    self.scan_node_modules(&entry.path().join("node_modules"), 0, &via);
                }
            }
        }
    }

    fn usual_roots(&mut self, env: &Environment) {
        let roots = match &env.system_roots {
            Some(list) => list.clone(),
            None => usual_global_roots(env),
        };
        for root in roots {
            if root.is_dir() {
                let via = format!("global root {}", root.display());
                self.searched.push(via.clone());
                self.budget = 0;
                self.scan_node_modules(&root, 0, &via);
            }
        }
    }

    /// Look at the packages of one `node_modules` folder, following nested
    /// `node_modules` and pnpm's `.pnpm` virtual store.
    fn scan_node_modules(&mut self, dir: &Path, depth: usize, via: &str) {
        if depth > MAX_NESTING || self.budget >= MAX_FOLDERS_PER_ROOT {
            return;
        }
        let Ok(real) = std::fs::canonicalize(dir) else {
            return;
        };
        if !self.visited.insert(real) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            self.budget += 1;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let path = entry.path();
            if name == ".pnpm" {
                if let Ok(store) = std::fs::read_dir(&path) {
                    for slot in store.flatten() {
                        self.budget += 1;
                        self.scan_node_modules(&slot.path().join("node_modules"), depth + 1, via);
                    }
                }
            } else if name.starts_with('@') {
                if let Ok(scope) = std::fs::read_dir(&path) {
                    for pkg in scope.flatten() {
                        self.budget += 1;
                        self.visit_package(&pkg.path(), depth, via);
                    }
                }
            } else if !name.starts_with('.') {
                self.visit_package(&path, depth, via);
            }
        }
    }

    fn visit_package(&mut self, dir: &Path, depth: usize, via: &str) {
        if dir.ends_with(self.package) && self.is_package(dir) {
            self.record(dir, via);
        }
        let nested = dir.join("node_modules");
        if nested.is_dir() {
            self.scan_node_modules(&nested, depth + 1, via);
        }
    }

    fn is_named(&self, dir: &Path, name: &str) -> bool {
        let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
            return false;
        };
        serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(|n| n == name))
            .unwrap_or(false)
    }

    fn is_package(&self, dir: &Path) -> bool {
        self.is_named(dir, self.package) && dir.join(self.file).is_file()
    }

    fn record(&mut self, dir: &Path, via: &str) {
        self.found.push(Found {
            package_dir: dir.to_path_buf(),
            file: dir.join(self.file),
            via: via.to_string(),
        });
    }

    /// Merge finds of the same file: first by real path, then by device and inode.
    fn finish(self) -> LocateReport {
        let mut by_real: BTreeMap<PathBuf, Located> = BTreeMap::new();
        for f in self.found {
            let real = std::fs::canonicalize(&f.file).unwrap_or(f.file.clone());
            let real_dir = std::fs::canonicalize(&f.package_dir).unwrap_or(f.package_dir.clone());
            let entry = by_real.entry(real.clone()).or_insert_with(|| Located {
                package_dir: real_dir,
                file: real,
                found_via: Vec::new(),
                same_file_as: Vec::new(),
                hard_links: 1,
            });
            if !entry.found_via.contains(&f.via) {
                entry.found_via.push(f.via);
            }
        }
        let mut installs: Vec<Located> = Vec::new();
        let mut by_inode: BTreeMap<(u64, u64), usize> = BTreeMap::new();
        for (_, mut loc) in by_real {
            let key = file_identity(&loc.file);
            loc.hard_links = key.map(|k| k.2).unwrap_or(1);
            match key.and_then(|(dev, ino, _)| by_inode.get(&(dev, ino)).copied()) {
                Some(i) => {
                    let first = &mut installs[i];
                    first.same_file_as.push(loc.package_dir);
                    for v in loc.found_via {
                        if !first.found_via.contains(&v) {
                            first.found_via.push(v);
                        }
                    }
                }
                None => {
                    if let Some((dev, ino, _)) = key {
                        by_inode.insert((dev, ino), installs.len());
                    }
                    installs.push(loc);
                }
            }
        }
        LocateReport {
            installs,
            searched: self.searched,
        }
    }
}

#[cfg(unix)]
fn file_identity(path: &Path) -> Option<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino(), m.nlink()))
}

#[cfg(not(unix))]
fn file_identity(_path: &Path) -> Option<(u64, u64, u64)> {
    None
}

/// Package folders named `@deepseek-ai/dsh` inside a small launcher script.
fn host_dirs_named_in_script(script: &Path) -> Vec<PathBuf> {
    let mut head = Vec::new();
    let Ok(f) = std::fs::File::open(script) else {
        return Vec::new();
    };
    if f.take(16 * 1024).read_to_end(&mut head).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&head);
    let base = script.parent().unwrap_or(Path::new("/"));
    let marker = format!("node_modules/{HOST_PACKAGE}");
    let mut dirs = Vec::new();
    for (at, _) in text.match_indices(&marker) {
        let start = text[..at]
            .rfind(|c: char| c == '"' || c == '\'' || c.is_whitespace() || c == '=')
            .map(|i| i + 1)
            .unwrap_or(0);
        let raw = &text[start..at + marker.len()];
        let raw = raw
            .replace("$basedir", &base.to_string_lossy())
            .replace("${basedir}", &base.to_string_lossy());
        let candidate = if Path::new(&raw).is_absolute() {
            PathBuf::from(raw)
        } else {
            base.join(raw)
        };
        if let Ok(real) = std::fs::canonicalize(&candidate) {
            if !dirs.contains(&real) {
                dirs.push(real);
            }
        }
    }
    dirs
}

/// The usual global package roots of node version managers and package managers.
fn usual_global_roots(env: &Environment) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(home) = &env.home {
        for versions in [home.join(".nvm/versions/node")] {
            if let Ok(entries) = std::fs::read_dir(&versions) {
                for e in entries.flatten() {
                    roots.push(e.path().join("lib/node_modules"));
                }
            }
        }
        // volta keeps each global package in its own prefix (scoped names one level deeper).
        if let Ok(entries) = std::fs::read_dir(home.join(".volta/tools/image/packages")) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with('@') {
                    for scoped in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                        roots.push(scoped.path().join("lib/node_modules"));
                    }
                } else {
                    roots.push(e.path().join("lib/node_modules"));
                }
            }
        }
        for (versions, inner) in [
            (
                home.join(".local/share/fnm/node-versions"),
                "installation/lib/node_modules",
            ),
            (home.join(".asdf/installs/nodejs"), "lib/node_modules"),
        ] {
            if let Ok(entries) = std::fs::read_dir(&versions) {
                for e in entries.flatten() {
                    roots.push(e.path().join(inner));
                }
            }
        }
        roots.push(home.join(".config/yarn/global/node_modules"));
        roots.push(home.join(".yarn/global/node_modules"));
        roots.push(home.join(".npm-global/lib/node_modules"));
    }
    let pnpm_home = env
        .pnpm_home
        .clone()
        .or_else(|| env.home.as_ref().map(|h| h.join(".local/share/pnpm")));
    if let Some(pnpm) = pnpm_home {
        if let Ok(entries) = std::fs::read_dir(pnpm.join("global")) {
            for e in entries.flatten() {
                roots.push(e.path().join("node_modules"));
            }
        }
    }
    roots.push(PathBuf::from("/usr/local/lib/node_modules"));
    roots.push(PathBuf::from("/usr/lib/node_modules"));
    roots.push(PathBuf::from("/opt/homebrew/lib/node_modules"));
    roots
}

/// Run a command and return its stdout, or None on failure or timeout.
fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Option<String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => {
                let mut out = String::new();
                child.stdout.take()?.read_to_string(&mut out).ok()?;
                return Some(out);
            }
            Ok(Some(_)) => return None,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}
