//! One search for the installs of some targets, and what it finds: the
//! places it lists (each folder once), the package folders it records, and
//! the report it ends with. It knows no driver: drivers add their places
//! through its public methods.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use walkdir::{DirEntry, WalkDir};

use super::package_files::{
    file_identity, find_by_content, folder_identity, host_dirs_named_in_script, npm_package,
    package_name, package_name_is,
};
use super::run_command::run_with_timeout;
use crate::environment::Environment;
use crate::error::{Error, Result};
use crate::npm_config;
use crate::registry::{FileFind, PatchSpec};

/// How deep `node_modules` folders may nest below a search root.
const MAX_NESTING: usize = 8;
/// Upper bound on folder entries looked at below one root (a guard against pathological trees).
const MAX_ENTRIES_PER_ROOT: usize = 200_000;
/// How long `npm root -g` may take (`--npm`).
const NPM_TIMEOUT: Duration = Duration::from_secs(5);
/// The fixed system roots, below [`crate::environment::Environment::sysroot`].
const SYSTEM_ROOTS: [&str; 3] = [
    "usr/local/lib/node_modules",
    "usr/lib/node_modules",
    "opt/homebrew/lib/node_modules",
];

/// One installed copy of a package: a real file, possibly reachable by several paths.
#[derive(Debug, Clone)]
pub struct Located {
    /// The target it is an install of.
    pub target: &'static str,
    /// The package folder (holding package.json).
    pub package_dir: PathBuf,
    /// The file to patch, as found (for a file found by content and not
    /// found, the glob it was looked for by).
    pub file: PathBuf,
    /// For a file found by content: why no one file was found, else None.
    pub unfound: Option<String>,
    /// Which search sources led here.
    pub found_via: Vec<String>,
    /// Other package folders whose file is this very file (same device and inode).
    pub same_file_as: Vec<PathBuf>,
    /// Link count of the file: more than 1 means a shared store copy (pnpm).
    pub hard_links: u64,
    /// The npm package it is (package.json `name`).
    pub package: String,
    /// Every package folder path it was seen at, before links were resolved
    /// (pnpm's links in other packages' `.pnpm` slots): what pulled it in.
    pub seen_at: Vec<PathBuf>,
}

/// Everything a search found, and where it looked.
#[derive(Debug, Default)]
pub struct LocateReport {
    pub installs: Vec<Located>,
    /// The cache the search used, when it was given one (see `locate_remembering`).
    pub cache: Option<crate::status_cache::StatusCache>,
    pub searched: Vec<String>,
    /// How many folders the search listed: its cost, which grows with the
    /// number of package folders and never with the files inside them.
    pub folders_read: usize,
}

struct Found {
    target: &'static str,
    package: String,
    package_dir: PathBuf,
    file: PathBuf,
    unfound: Option<String>,
    via: String,
}

/// One package the search looks for.
struct Wanted {
    target: &'static str,
    package: String,
    /// Packages that nest it (DSH's host): copies of other targets inside them are its own.
    hosts: Vec<String>,
    find: FileFind,
}

/// How a folder queued for listing is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// A `node_modules`: packages, `@scope` folders, pnpm's `.pnpm` store.
    NodeModules,
    /// A folder given with `--path`: read as a `node_modules`, and each
    /// sub-folder is also tried as a project (`node_modules`) or a prefix
    /// (`lib/node_modules`).
    Given,
}

/// Counts the folders one walk lists: entries come from their parent's
/// listing, and one listing's entries all have the same parent.
#[derive(Default)]
struct ReadCounter {
    /// The parent of the last entry seen at each depth.
    last_parent: Vec<PathBuf>,
    reads: usize,
}

impl ReadCounter {
    fn saw(&mut self, entry: &DirEntry) {
        let Some(parent) = entry.path().parent() else {
            return;
        };
        let depth = entry.depth();
        if self.last_parent.len() <= depth {
            self.last_parent.resize(depth + 1, PathBuf::new());
        }
        if self.last_parent[depth] != parent {
            self.last_parent[depth] = parent.to_path_buf();
            self.reads += 1;
        }
    }
}

/// One search for the installs of some targets (drivers add their own places to it).
pub struct Search {
    wanted: Vec<Wanted>,
    found: Vec<Found>,
    searched: Vec<String>,
    /// Real paths of the folders already listed, so that links and repeats are read once.
    /// Folders already listed, by device and inode (links and other paths to
    /// them included): each is read once.
    visited: HashSet<(u64, u64)>,
    folders_read: usize,
    /// The file found by content or reachability in a package folder (by
    /// wanted index, device and inode), relative to it, or why none: a
    /// package seen from several places (`gemini` on PATH and npm's global
    /// root) has its chunks read once.
    found_in: HashMap<(usize, u64, u64), std::result::Result<PathBuf, String>>,
    /// What a plain `status` remembers of searches by reachability (only
    /// `status` sets it: the other commands always read the files).
    pub(super) cache: Option<crate::status_cache::StatusCache>,
}

impl Search {
    pub(super) fn new(targets: &[&PatchSpec]) -> Self {
        Search {
            wanted: targets
                .iter()
                .map(|t| Wanted {
                    target: t.target,
                    package: t.package.clone(),
                    hosts: t.installs.hosts.clone(),
                    find: t.find.clone(),
                })
                .collect(),
            found: Vec::new(),
            searched: Vec::new(),
            visited: HashSet::new(),
            folders_read: 0,
            found_in: HashMap::new(),
            cache: None,
        }
    }

    pub(super) fn explicit(&mut self, p: &Path) -> Result<()> {
        let via = format!("--path {}", p.display());
        self.searched.push(via.clone());
        let meta = std::fs::metadata(p)
            .map_err(|e| Error::io("read", p, e, "check the --path argument: it must exist"))?;
        if meta.is_file() {
            // A file to patch: its package folder is the nearest folder above
            // it whose package.json names a target (for a file given by path,
            // the folder that path puts it in).
            let by_path = self.wanted.iter().find_map(|w| match &w.find {
                FileFind::Path(rel) => {
                    let up = Path::new(rel).components().count();
                    let dir = p.ancestors().nth(up)?;
                    p.ends_with(rel)
                        .then(|| (w.target, w.package.clone(), dir.to_path_buf()))
                }
                FileFind::Content { .. } | FileFind::Reachable { .. } | FileFind::Export { .. } => {
                    None
                }
            });
            let pkg = p.ancestors().skip(1).take(4).find_map(|d| {
                let w = self.wanted_at(d)?;
                Some((w, d.to_path_buf()))
            });
            match (pkg, by_path) {
                (Some((w, dir)), _) => self.record(w, &dir, &via),
                (None, Some((target, package, dir))) => self.found.push(Found {
                    target,
                    package,
                    package_dir: dir,
                    file: p.to_path_buf(),
                    unfound: None,
                    via,
                }),
                (None, None) => {
                    return Err(Error::NotAnInstall {
                        path: p.to_path_buf(),
                        packages: crate::registry::said(
                            self.wanted.iter().map(|w| w.package.as_str()),
                        ),
                    })
                }
            }
            return Ok(());
        }
        if let Some(w) = self.wanted_at(p) {
            self.record(w, p, &via);
            return Ok(());
        }
        // Any folder: a node_modules itself, a project holding one, a global
        // prefix, or a folder of those one level down.
        let listing = if p.file_name() == Some(OsStr::new("node_modules")) {
            Listing::NodeModules
        } else {
            Listing::Given
        };
        self.search_below(
            vec![
                (p.to_path_buf(), listing),
                (p.join("node_modules"), Listing::NodeModules),
                (p.join("lib").join("node_modules"), Listing::NodeModules),
            ],
            &via,
        );
        Ok(())
    }

    /// The host a command on PATH starts (`bin`, of one of the `host_packages`):
    /// the targets nested in it or hoisted beside it.
    pub(super) fn host_on_path(
        &mut self,
        bin_name: &str,
        host_packages: &[String],
        env: &Environment,
    ) {
        let bin = match env.which(bin_name) {
            Ok(bin) => bin,
            Err(why) => {
                self.searched.push(format!("`{bin_name}` on PATH ({why})"));
                return;
            }
        };
        let via = format!("`{bin_name}` on PATH ({})", bin.display());
        self.searched.push(via.clone());
        let real = std::fs::canonicalize(&bin).unwrap_or(bin.clone());
        let is_host = |d: &Path| host_packages.iter().any(|h| package_name_is(d, h));
        let mut hosts: Vec<PathBuf> = real
            .ancestors()
            .filter(|d| is_host(d))
            .map(Path::to_path_buf)
            .take(1)
            .collect();
        if hosts.is_empty() {
            // A shim script (pnpm, volta, a wrapper): look for the host's path inside it.
            hosts = host_packages
                .iter()
                .flat_map(|h| host_dirs_named_in_script(&real, h))
                .filter(|d| is_host(d))
                .collect();
        }
        for host in hosts {
            self.search_below(
                vec![(host.join("node_modules"), Listing::NodeModules)],
                &via,
            );
            // Hoisted next to the host in the same node_modules (possibly inside a scope folder).
            for up in host.ancestors().skip(1).take(2) {
                if up.file_name() == Some(OsStr::new("node_modules")) {
                    let siblings: Vec<PathBuf> =
                        self.wanted.iter().map(|w| up.join(&w.package)).collect();
                    for sibling in siblings {
                        if let Some(w) = self.wanted_at(&sibling) {
                            self.record(w, &sibling, &via);
                        }
                    }
                    break;
                }
            }
        }
    }

    /// The project of the folder mcpatch runs in: the nearest `node_modules`
    /// upward from `cwd`, as npm resolves a package from there.
    pub(super) fn project_of(&mut self, cwd: &Path) {
        let Some(nm) = cwd
            .ancestors()
            .map(|d| d.join("node_modules"))
            .find(|nm| nm.is_dir())
        else {
            self.searched
                .push("the project of the current folder (no node_modules above it)".into());
            return;
        };
        let via = format!("the project of the current folder ({})", nm.display());
        self.searched.push(via.clone());
        self.search_below(vec![(nm, Listing::NodeModules)], &via);
    }

    /// npm's global root: read from npm's configuration, or, with `--npm`,
    /// asked of `npm root -g` (falling back to the configuration if that fails).
    pub(super) fn npm_root(&mut self, env: &Environment) {
        if env.ask_npm && self.ask_npm(env) {
            return;
        }
        let inputs = self.npm_inputs(env);
        match npm_config::global_root(&inputs) {
            Ok(found) => {
                let mut via = format!(
                    "npm global root ({}, {}",
                    found.root.display(),
                    found.source
                );
                for note in &found.notes {
                    via.push_str(&format!("; {note}"));
                }
                via.push(')');
                self.searched.push(via.clone());
                self.search_below(vec![(found.root, Listing::NodeModules)], &via);
            }
            Err(why) => self
                .searched
                .push(format!("npm global root (skipped: {why})")),
        }
    }

    /// What npm's configuration is read from.
    fn npm_inputs<'e>(&self, env: &'e Environment) -> npm_config::Inputs<'e> {
        npm_config::Inputs {
            vars: &env.vars,
            home: env.home.as_deref().filter(|h| !h.as_os_str().is_empty()),
            cwd: &env.cwd,
            node: env
                .which("node")
                .ok()
                .map(|n| std::fs::canonicalize(&n).unwrap_or(n)),
            npm_package: env.which("npm").ok().and_then(|n| npm_package(&n)),
            windows: cfg!(windows),
        }
    }

    /// Run `npm root -g`; false (with the reason in the searched list) if it gave no root.
    fn ask_npm(&mut self, env: &Environment) -> bool {
        let npm = match env.which("npm") {
            Ok(npm) => npm,
            Err(why) => {
                self.searched
                    .push(format!("`npm root -g` (skipped: `npm` on PATH: {why})"));
                return false;
            }
        };
        let mut cmd = Command::new(&npm);
        cmd.args(["root", "-g"]).current_dir(&env.cwd);
        if let Some(path_var) = &env.path_var {
            cmd.env("PATH", path_var);
        }
        match run_with_timeout(&mut cmd, NPM_TIMEOUT) {
            Ok(out) if !out.trim().is_empty() => {
                let root = PathBuf::from(out.trim());
                let via = format!("`npm root -g` ({})", root.display());
                self.searched.push(via.clone());
                self.search_below(vec![(root, Listing::NodeModules)], &via);
                true
            }
            Ok(_) => {
                self.searched.push(format!(
                    "`{} root -g` (failed: it printed nothing)",
                    npm.display()
                ));
                false
            }
            Err(why) => {
                self.searched
                    .push(format!("`{} root -g` (failed: {why})", npm.display()));
                false
            }
        }
    }

    /// A host's profiles folder: `<profiles>/node_modules` and
    /// `<profiles>/<profile>/node_modules`, said as `what (<profiles>)`.
    pub fn profiles(&mut self, profiles: &Path, what: &str) {
        let via = format!("{what} ({})", profiles.display());
        self.searched.push(via.clone());
        let mut roots = vec![(profiles.join("node_modules"), Listing::NodeModules)];
        for profile in self.child_dirs(profiles) {
            if profile.file_name() != Some(OsStr::new("node_modules")) {
                roots.push((profile.join("node_modules"), Listing::NodeModules));
            }
        }
        self.search_below(roots, &via);
    }

    pub(super) fn usual_roots(&mut self, env: &Environment) {
        let roots = match &env.system_roots {
            Some(list) => list.clone(),
            None => self.usual_global_roots(env),
        };
        for root in roots {
            if root.is_dir() {
                let via = format!("global root {}", root.display());
                self.searched.push(via.clone());
                self.search_below(vec![(root, Listing::NodeModules)], &via);
            }
        }
    }

    /// Homebrew's Cellar: `<Cellar>/<formula>/<version>/libexec/lib/node_modules`,
    /// for `$HOMEBREW_CELLAR` and the usual prefixes (below the sysroot).
    pub fn homebrew_cellar(&mut self, formula: &str, env: &Environment) {
        let mut cellars: Vec<PathBuf> = env
            .vars
            .iter()
            .find(|(k, _)| k == "HOMEBREW_CELLAR")
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
            .into_iter()
            .collect();
        for prefix in ["opt/homebrew", "usr/local", "home/linuxbrew/.linuxbrew"] {
            cellars.push(env.sysroot.join(prefix).join("Cellar"));
        }
        for cellar in cellars {
            let formula_dir = cellar.join(formula);
            if !formula_dir.is_dir() {
                continue;
            }
            let via = format!("Homebrew Cellar ({})", formula_dir.display());
            self.searched.push(via.clone());
            let roots = self
                .child_dirs(&formula_dir)
                .into_iter()
                .map(|v| (v.join("libexec/lib/node_modules"), Listing::NodeModules))
                .collect();
            self.search_below(roots, &via);
        }
    }

    /// The usual global package roots of node version managers and package managers.
    fn usual_global_roots(&mut self, env: &Environment) -> Vec<PathBuf> {
        let mut roots = Vec::new();
        if let Some(home) = &env.home {
            for version in self.child_dirs(&home.join(".nvm/versions/node")) {
                roots.push(version.join("lib/node_modules"));
            }
            // volta keeps each global package in its own prefix (scoped names one level deeper).
            for package in self.child_dirs(&home.join(".volta/tools/image/packages")) {
                if package
                    .file_name()
                    .map(OsStr::as_encoded_bytes)
                    .unwrap_or_default()
                    .starts_with(b"@")
                {
                    for scoped in self.child_dirs(&package) {
                        roots.push(scoped.join("lib/node_modules"));
                    }
                } else {
                    roots.push(package.join("lib/node_modules"));
                }
            }
            for (versions, inner) in [
                (
                    home.join(".local/share/fnm/node-versions"),
                    "installation/lib/node_modules",
                ),
                (home.join(".asdf/installs/nodejs"), "lib/node_modules"),
            ] {
                for version in self.child_dirs(&versions) {
                    roots.push(version.join(inner));
                }
            }
            roots.push(home.join(".config/yarn/global/node_modules"));
            roots.push(home.join(".yarn/global/node_modules"));
            // bun add -g
            roots.push(home.join(".bun/install/global/node_modules"));
            roots.push(home.join(".npm-global/lib/node_modules"));
        }
        let pnpm_home = env
            .pnpm_home
            .clone()
            .or_else(|| env.home.as_ref().map(|h| h.join(".local/share/pnpm")));
        if let Some(pnpm) = pnpm_home {
            for layout in self.child_dirs(&pnpm.join("global")) {
                roots.push(layout.join("node_modules"));
            }
        }
        for fixed in SYSTEM_ROOTS {
            roots.push(env.sysroot.join(fixed));
        }
        roots
    }

    /// The sub-folders of `dir` (links to folders included), in one counted listing.
    fn child_dirs(&mut self, dir: &Path) -> Vec<PathBuf> {
        let mut reads = ReadCounter::default();
        let dirs = WalkDir::new(dir)
            .min_depth(1)
            .max_depth(1)
            .follow_links(true)
            .into_iter()
            .filter_entry(|e| {
                reads.saw(e);
                e.file_type().is_dir()
            })
            .flatten()
            .map(DirEntry::into_path)
            .collect();
        self.folders_read += reads.reads;
        dirs
    }

    /// List the queued folders and the `node_modules` found below them (nested
    /// ones, pnpm's `.pnpm/<slot>/node_modules`), each at most once. Package
    /// folders are looked at (their package.json when the name fits, and
    /// whether they hold a `node_modules`) but never listed.
    fn search_below(&mut self, roots: Vec<(PathBuf, Listing)>, via: &str) {
        let mut queue: VecDeque<(PathBuf, Listing, usize)> =
            roots.into_iter().map(|(dir, l)| (dir, l, 0)).collect();
        let mut budget = MAX_ENTRIES_PER_ROOT;
        while let Some((dir, listing, nesting)) = queue.pop_front() {
            if nesting > MAX_NESTING || budget == 0 {
                continue;
            }
            if !self.first_visit(&dir) {
                continue;
            }
            // Packages, scopes and the store are listed; scoped packages and store
            // slots one level down; nothing inside a package is ever listed.
            for (name, path) in self.subfolders(&dir) {
                budget = budget.saturating_sub(1);
                if budget == 0 {
                    break;
                }
                let name = name.as_encoded_bytes();
                let seen_before =
                    (name == b".pnpm" || name.starts_with(b"@")) && !self.first_visit(&path);
                if seen_before {
                    // A link back to a folder already listed (or a broken one).
                    continue;
                }
                if name == b".pnpm" {
                    for (_, slot) in self.subfolders(&path) {
                        budget = budget.saturating_sub(1);
                        queue.push_back((
                            slot.join("node_modules"),
                            Listing::NodeModules,
                            nesting + 1,
                        ));
                    }
                } else if name.starts_with(b"@") {
                    for (_, package) in self.subfolders(&path) {
                        budget = budget.saturating_sub(1);
                        self.visit_package(
                            &package,
                            Listing::NodeModules,
                            nesting,
                            &mut queue,
                            via,
                        );
                    }
                } else if name.starts_with(b".") {
                    // A dot folder of a --path folder (say ~/.npm-global): a project or a prefix.
                    if listing == Listing::Given {
                        for nm in [
                            path.join("node_modules"),
                            path.join("lib").join("node_modules"),
                        ] {
                            if nm.is_dir() {
                                queue.push_back((nm, Listing::NodeModules, nesting + 1));
                            }
                        }
                    }
                } else {
                    self.visit_package(&path, listing, nesting, &mut queue, via);
                }
            }
        }
    }

    /// Whether `dir` is a folder not visited before (marking it visited); false
    /// for a missing folder. One stat, where resolving the real path would read
    /// every link along it.
    fn first_visit(&mut self, dir: &Path) -> bool {
        match std::fs::metadata(dir) {
            #[cfg(unix)]
            Ok(m) if m.is_dir() => self.visited.insert(folder_identity(&m)),
            #[cfg(not(unix))]
            Ok(m) if m.is_dir() => {
                use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
                let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
                let key = BuildHasherDefault::<DefaultHasher>::default().hash_one(&real);
                self.visited.insert((key, 0))
            }
            _ => false,
        }
    }

    /// Look at one package folder without listing it: record it when it is the
    /// client, and queue its own `node_modules` (and, for a sub-folder of a
    /// `--path` folder, its `lib/node_modules`: a prefix) when they exist.
    fn visit_package(
        &mut self,
        pkg: &Path,
        listing: Listing,
        nesting: usize,
        queue: &mut VecDeque<(PathBuf, Listing, usize)>,
        via: &str,
    ) {
        let named = self
            .wanted
            .iter()
            .any(|w| pkg.ends_with(Path::new(&w.package)));
        if named {
            if let Some(w) = self.wanted_at(pkg) {
                self.record(w, pkg, via);
            }
        }
        let mut below = vec![pkg.join("node_modules")];
        if listing == Listing::Given {
            below.push(pkg.join("lib").join("node_modules"));
        }
        for nm in below.into_iter().filter(|nm| nm.is_dir()) {
            queue.push_back((nm, Listing::NodeModules, nesting + 1));
        }
    }

    /// The sub-folders of one folder (links to folders included), from one
    /// counted listing that never opens them. (A directory walker opens every
    /// folder it returns before it can be told to skip it: for a global root of
    /// thousands of packages that would double the cost of the search.)
    fn subfolders(&mut self, dir: &Path) -> Vec<(std::ffi::OsString, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        self.folders_read += 1;
        entries
            .flatten()
            .filter_map(|e| {
                let ft = e.file_type().ok()?;
                let is_dir = ft.is_dir() || (ft.is_symlink() && e.path().is_dir());
                is_dir.then(|| (e.file_name(), e.path()))
            })
            .collect()
    }

    /// The wanted package `dir` is (its package.json names it, and a file
    /// given by path is there), as an index into the wanted list.
    fn wanted_at(&self, dir: &Path) -> Option<usize> {
        let name = package_name(dir)?;
        self.wanted.iter().position(|w| {
            w.package == name
                && match &w.find {
                    FileFind::Path(rel) => dir.join(rel).is_file(),
                    FileFind::Content { .. }
                    | FileFind::Reachable { .. }
                    | FileFind::Export { .. } => true,
                }
        })
    }

    fn record(&mut self, wanted: usize, dir: &Path, via: &str) {
        let w = &self.wanted[wanted];
        let cache = &mut self.cache;
        let mut search = || match &w.find {
            FileFind::Path(rel) => Ok(dir.join(rel)),
            FileFind::Content { glob, contains } => find_by_content(dir, glob, contains),
            FileFind::Reachable { from, declares } => match cache {
                Some(c) => c.reachable(dir, from, declares, || {
                    crate::reachable::find_traced(dir, from, declares)
                }),
                None => crate::reachable::find(dir, from, declares),
            },
            FileFind::Export {
                export, condition, ..
            } => crate::exports::find(dir, export, condition),
        };
        use std::os::unix::fs::MetadataExt;
        let key = std::fs::metadata(dir)
            .ok()
            .map(|m| (wanted, m.dev(), m.ino()))
            .filter(|_| !matches!(w.find, FileFind::Path(_)));
        let found = match key.and_then(|k| self.found_in.get(&k)) {
            Some(Ok(rel)) => Ok(dir.join(rel)),
            Some(Err(why)) => Err(why.clone()),
            None => {
                let found = search();
                if let Some(k) = key {
                    let rel = found
                        .as_ref()
                        .map(|f| f.strip_prefix(dir).unwrap_or(f).to_path_buf());
                    self.found_in.insert(k, rel.map_err(String::clone));
                }
                found
            }
        };
        let (file, unfound) = match (found, &w.find) {
            (Ok(file), _) => (file, None),
            (Err(why), FileFind::Content { glob, .. }) => (dir.join(glob), Some(why)),
            (Err(why), FileFind::Reachable { from, .. }) => (dir.join(from), Some(why)),
            (Err(why), FileFind::Path(rel)) => (dir.join(rel), Some(why)),
            (Err(why), FileFind::Export { .. }) => (dir.join("package.json"), Some(why)),
        };
        self.found.push(Found {
            target: w.target,
            package: w.package.clone(),
            package_dir: dir.to_path_buf(),
            file,
            unfound,
            via: via.to_string(),
        });
    }

    /// npx's cache: `<npm cache>/_npx/<hash>/node_modules`, one folder per
    /// package set npx ran.
    pub(super) fn npx_cache(&mut self, env: &Environment) {
        let inputs = self.npm_inputs(env);
        let Some(cache) = npm_config::cache_dir(&inputs) else {
            self.searched
                .push("npx cache (skipped: no HOME and no cache set in npm's config)".into());
            return;
        };
        let npx = cache.dir.join("_npx");
        let via = format!("npx cache ({}, {})", npx.display(), cache.source);
        self.searched.push(via.clone());
        let roots = self
            .child_dirs(&npx)
            .into_iter()
            .map(|d| (d.join("node_modules"), Listing::NodeModules))
            .collect();
        self.search_below(roots, &via);
    }

    /// pnpm's dlx cache: `<pnpm cache>/dlx/<key>/<stamp>/node_modules`
    /// (`$XDG_CACHE_HOME/pnpm`, else `~/.cache/pnpm`; `~/Library/Caches/pnpm` on macOS).
    pub(super) fn pnpm_dlx(&mut self, env: &Environment) {
        let var = |name: &str| {
            env.vars
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| PathBuf::from(v))
                .filter(|p| p.is_absolute())
        };
        let cache = match (var("XDG_CACHE_HOME"), &env.home) {
            (Some(x), _) => Some(x.join("pnpm")),
            (None, Some(h)) if cfg!(target_os = "macos") => Some(h.join("Library/Caches/pnpm")),
            (None, Some(h)) => Some(h.join(".cache/pnpm")),
            (None, None) => None,
        };
        let Some(cache) = cache else {
            self.searched
                .push("pnpm dlx cache (skipped: no HOME and no XDG_CACHE_HOME)".into());
            return;
        };
        let dlx = cache.join("dlx");
        let via = format!("pnpm dlx cache ({})", dlx.display());
        self.searched.push(via.clone());
        let mut roots = Vec::new();
        for key in self.child_dirs(&dlx) {
            for stamp in self.child_dirs(&key) {
                roots.push((stamp.join("node_modules"), Listing::NodeModules));
            }
        }
        self.search_below(roots, &via);
    }

    /// Merge finds of the same file: first by real path, then by device and inode.
    pub(super) fn finish(self) -> LocateReport {
        let mut by_real: BTreeMap<PathBuf, Located> = BTreeMap::new();
        for f in self.found {
            let real = std::fs::canonicalize(&f.file).unwrap_or(f.file.clone());
            let real_dir = std::fs::canonicalize(&f.package_dir).unwrap_or(f.package_dir.clone());
            let entry = by_real.entry(real.clone()).or_insert_with(|| Located {
                target: f.target,
                package_dir: real_dir,
                file: real,
                unfound: f.unfound.clone(),
                found_via: Vec::new(),
                same_file_as: Vec::new(),
                hard_links: 1,
                package: f.package.clone(),
                seen_at: Vec::new(),
            });
            if !entry.found_via.contains(&f.via) {
                entry.found_via.push(f.via);
            }
            if !entry.seen_at.contains(&f.package_dir) {
                entry.seen_at.push(f.package_dir);
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
                    first.seen_at.extend(loc.seen_at);
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
        // A copy of one target inside another target's package or host (the
        // MCP SDK DSH's plugin and DSH itself carry in their node_modules) is
        // that target's business: its patch is what they are proven with.
        // Told by the folder names alone: the outer package need not be readable.
        let wanted = &self.wanted;
        installs.retain(|l| {
            !l.package_dir.ancestors().skip(1).any(|dir| {
                wanted.iter().filter(|w| w.target != l.target).any(|w| {
                    std::iter::once(&w.package).chain(&w.hosts).any(|outer| {
                        dir.ends_with(outer)
                            && dir
                                .ancestors()
                                .nth(Path::new(outer).components().count())
                                .and_then(Path::file_name)
                                == Some(OsStr::new("node_modules"))
                    })
                })
            })
        });
        LocateReport {
            installs,
            cache: self.cache,
            searched: self.searched,
            folders_read: self.folders_read,
        }
    }
}
