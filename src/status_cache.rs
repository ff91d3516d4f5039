//! What a plain `mcpatch status` remembers between runs, as git's index does:
//! for a package whose file is found by following imports (gemini-cli reads
//! some 100 MB of bundle chunks to find the one that declares its MCP
//! client), the files that search read, each with its stamp (device, inode,
//! size, modification and change times), the file it found, and that file's
//! sha256. A later `status` that finds every stamp unchanged takes the answer
//! without reading the chunks; any change, and the search runs again.
//!
//! Only `status` uses it: `apply`, `revert`, `diff` and `verify` always read
//! the files themselves. It lives in the state home (`cache/status.json`,
//! private), is written atomically, and is ignored when it cannot be read,
//! parsed or written: it only ever saves time. A stamp taken within
//! [`RACY`] of the moment it is saved is not kept, so a file rewritten within
//! the file system's clock tick is never taken for the one stamped.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The cache file under the state home.
const FILE: &str = "cache/status.json";
/// The most the cache file may hold; a larger one is ignored.
const MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Entries kept (the newest); each is one package seen by `status`.
const MAX_ENTRIES: usize = 64;
/// A stamp this close to the save is not kept (nanoseconds).
const RACY: i64 = 2_000_000_000;
/// The format; another is ignored.
const VERSION: u32 = 1;

/// A file's identity and times: equal stamps mean the same bytes, unless the
/// file was rewritten within one tick of the clock (see [`RACY`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl Stamp {
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
        }
    }

    /// The stamp of `path` now (following links, as the search reads it).
    pub fn now(path: &Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
    }

    /// Modified so close to `saved_ns` that a rewrite in the same clock
    /// tick would leave the stamp as it is (a rewrite later moves mtime).
    fn racy(&self, saved_ns: i64) -> bool {
        saved_ns - self.mtime_ns < RACY
    }
}

/// One package folder's search: what it read, what it found.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    dir: PathBuf,
    entry: String,
    declares: String,
    /// Each file read, relative to `dir`, with its stamp.
    read: Vec<(PathBuf, Stamp)>,
    /// The file found (relative to `dir`), or why none.
    found: Result<PathBuf, String>,
    /// The found file's stamp and sha256, once classified.
    hash: Option<(Stamp, String)>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Doc {
    version: u32,
    entries: Vec<Entry>,
}

/// The cache of one `status` run: loaded at its start, saved at its end.
#[derive(Debug, Default)]
pub struct StatusCache {
    file: Option<PathBuf>,
    doc: Doc,
    changed: bool,
}

impl StatusCache {
    /// The cache under `state_home` (empty when there is none or it cannot be read).
    pub fn load(state_home: Option<&Path>) -> StatusCache {
        let file = state_home.map(|h| h.join(FILE));
        let doc = file
            .as_deref()
            .and_then(|f| crate::small_file::read_capped(f, MAX_BYTES).ok())
            .and_then(|b| serde_json::from_slice::<Doc>(&b).ok())
            .filter(|d| d.version == VERSION)
            .unwrap_or_default();
        StatusCache {
            file,
            doc,
            changed: false,
        }
    }

    fn position(&self, dir: &Path, entry: &str, declares: &str) -> Option<usize> {
        self.doc
            .entries
            .iter()
            .position(|e| e.dir == dir && e.entry == entry && e.declares == declares)
    }

    /// The file reachable from `entry` in `dir` that declares `declares`:
    /// remembered when every file the last search read is unchanged, else
    /// `search` (which returns what it read) runs and is remembered.
    pub fn reachable(
        &mut self,
        dir: &Path,
        entry: &str,
        declares: &str,
        search: impl FnOnce() -> (Result<PathBuf, String>, Vec<(PathBuf, Stamp)>),
    ) -> Result<PathBuf, String> {
        if let Some(at) = self.position(dir, entry, declares) {
            let e = &self.doc.entries[at];
            let unchanged = !e.read.is_empty()
                && e.read
                    .iter()
                    .all(|(rel, stamp)| Stamp::now(&dir.join(rel)).as_ref() == Some(stamp));
            if unchanged {
                return e
                    .found
                    .as_ref()
                    .map(|rel| dir.join(rel))
                    .map_err(String::clone);
            }
            self.doc.entries.remove(at);
        }
        let (found, read) = search();
        self.doc.entries.push(Entry {
            dir: dir.to_path_buf(),
            entry: entry.to_string(),
            declares: declares.to_string(),
            read,
            found: found
                .as_ref()
                .map(|f| f.strip_prefix(dir).unwrap_or(f).to_path_buf())
                .map_err(String::clone),
            hash: None,
        });
        self.changed = true;
        found
    }

    /// The remembered sha256 of `file`, a file some search found, if its
    /// stamp is unchanged.
    pub fn sha256(&self, file: &Path) -> Option<String> {
        let now = Stamp::now(file)?;
        self.doc
            .entries
            .iter()
            .find_map(|e| match (&e.found, &e.hash) {
                (Ok(rel), Some((stamp, sha))) if e.dir.join(rel) == file && *stamp == now => {
                    Some(sha.clone())
                }
                _ => None,
            })
    }

    /// Remember `sha256` for `file` as read with `stamp`.
    pub fn remember_sha256(&mut self, file: &Path, stamp: Stamp, sha256: &str) {
        for e in &mut self.doc.entries {
            if e.found.as_ref().is_ok_and(|rel| e.dir.join(rel) == file) {
                e.hash = Some((stamp, sha256.to_string()));
                self.changed = true;
            }
        }
    }

    /// Write the cache if this run changed it: private, atomically; racy
    /// stamps left out; errors ignored.
    pub fn save(mut self) {
        let Some(file) = self.file.take().filter(|_| self.changed) else {
            return;
        };
        let saved_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        self.doc.version = VERSION;
        self.doc.entries.retain(|e| {
            !e.read.iter().any(|(_, s)| s.racy(saved_ns))
                && !e.hash.as_ref().is_some_and(|(s, _)| s.racy(saved_ns))
        });
        let excess = self.doc.entries.len().saturating_sub(MAX_ENTRIES);
        self.doc.entries.drain(..excess);
        let Ok(bytes) = serde_json::to_vec(&self.doc) else {
            return;
        };
        let _ = write_private(&file, &bytes);
    }
}

/// `bytes` to `file` through a private temp file beside it, renamed over it.
fn write_private(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // tempfile creates the file 0600 whatever the umask.
    let mut tmp = tempfile::Builder::new()
        .prefix(".status-cache-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A package folder with an entry and a chunk, old enough not to be racy.
    fn package() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("pkg");
        std::fs::create_dir_all(pkg.join("bundle")).unwrap();
        std::fs::write(pkg.join("bundle/a.js"), "import './b.js';\n").unwrap();
        std::fs::write(pkg.join("bundle/b.js"), "class McpClient {}\n").unwrap();
        let old = SystemTime::now() - std::time::Duration::from_secs(60);
        for f in ["bundle/a.js", "bundle/b.js"] {
            std::fs::File::options()
                .write(true)
                .open(pkg.join(f))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        (dir, pkg)
    }

    fn search(
        pkg: &Path,
        runs: &std::cell::Cell<u32>,
    ) -> (Result<PathBuf, String>, Vec<(PathBuf, Stamp)>) {
        runs.set(runs.get() + 1);
        crate::reachable::find_traced(pkg, "bundle/a.js", "class McpClient")
    }

    #[test]
    fn an_unchanged_search_is_remembered_and_a_changed_file_searches_again() {
        let (dir, pkg) = package();
        let home = dir.path().join("state");
        let runs = std::cell::Cell::new(0);
        let mut c = StatusCache::load(Some(&home));
        let found = c.reachable(&pkg, "bundle/a.js", "class McpClient", || {
            search(&pkg, &runs)
        });
        assert_eq!(found, Ok(pkg.join("bundle/b.js")));
        let b = pkg.join("bundle/b.js");
        c.remember_sha256(&b, Stamp::now(&b).unwrap(), "abc");
        c.save();
        let mode = std::fs::metadata(home.join(FILE)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);

        // The next run: nothing changed, nothing read.
        let mut c = StatusCache::load(Some(&home));
        let found = c.reachable(&pkg, "bundle/a.js", "class McpClient", || {
            search(&pkg, &runs)
        });
        assert_eq!((found, runs.get()), (Ok(b.clone()), 1));
        assert_eq!(c.sha256(&b).as_deref(), Some("abc"));

        // A chunk rewritten (even to the same size): searched again, no hash kept.
        std::fs::write(&b, "class McpClient {}\n").unwrap();
        assert_eq!(c.sha256(&b), None);
        let found = c.reachable(&pkg, "bundle/a.js", "class McpClient", || {
            search(&pkg, &runs)
        });
        assert_eq!((found, runs.get()), (Ok(b.clone()), 2));
        // Stamped just now: racy, so not saved.
        c.save();
        let c = StatusCache::load(Some(&home));
        assert_eq!(c.doc.entries.len(), 0);
    }

    #[test]
    fn a_damaged_or_foreign_cache_file_is_ignored() {
        let (dir, pkg) = package();
        let home = dir.path().join("state");
        std::fs::create_dir_all(home.join("cache")).unwrap();
        for text in ["not json", r#"{"version": 99, "entries": []}"#] {
            std::fs::write(home.join(FILE), text).unwrap();
            let runs = std::cell::Cell::new(0);
            let mut c = StatusCache::load(Some(&home));
            let found = c.reachable(&pkg, "bundle/a.js", "class McpClient", || {
                search(&pkg, &runs)
            });
            assert_eq!((found, runs.get()), (Ok(pkg.join("bundle/b.js")), 1));
        }
    }
}
