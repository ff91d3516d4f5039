//! Which packages pulled a found copy in (`via`, as `npm ls` shows a
//! dependency under its dependents), from where the copy sits in the
//! project's `node_modules` tree: nested in a package's own `node_modules`,
//! linked into another package's pnpm `.pnpm` slot, or hoisted to the top
//! (then npm's `node_modules/.package-lock.json`, or else the package.json of
//! each package beside it, names who depends on it). Reads only small JSON
//! files; never lists the inside of a package.

use std::ffi::OsStr;
use std::path::{Component, Path};

use crate::locate::Located;
use crate::small_file;

/// The largest package.json or hidden lockfile read for this.
const MAX_JSON_BYTES: u64 = 32 * 1024 * 1024;
/// The most package.json files read beside a hoisted copy with no lockfile.
const MAX_SIBLINGS: usize = 5_000;

/// The packages that depend on this copy, each once, sorted.
pub fn via(located: &Located) -> Vec<String> {
    let name = located.package.as_str();
    let mut found: Vec<String> = Vec::new();
    for at in &located.seen_at {
        for v in via_path(at, name) {
            if !found.contains(&v) {
                found.push(v);
            }
        }
    }
    found.sort();
    found
}

/// The folder holding `<nm>/<name>` for a package folder `at` of package
/// `name`, if `at` sits in a `node_modules`.
fn node_modules_of<'a>(at: &'a Path, name: &str) -> Option<&'a Path> {
    let depth = Path::new(name).components().count();
    let nm = at.ancestors().nth(depth)?;
    (nm.file_name() == Some(OsStr::new("node_modules")) && at.ends_with(name)).then_some(nm)
}

fn via_path(at: &Path, name: &str) -> Vec<String> {
    let Some(nm) = node_modules_of(at, name) else {
        return Vec::new();
    };
    let Some(owner) = nm.parent() else {
        return Vec::new();
    };
    // pnpm: .pnpm/<slot>/node_modules/<name>; the slot is its package's own.
    if owner.parent().and_then(Path::file_name) == Some(OsStr::new(".pnpm")) {
        return match owner
            .file_name()
            .and_then(OsStr::to_str)
            .map(pnpm_slot_package)
        {
            Some(p) if p != name => vec![p],
            _ => Vec::new(),
        };
    }
    // Nested: <...>/node_modules/<owner>/node_modules/<name>.
    if let Some(owner_name) = package_in_node_modules(owner) {
        return vec![owner_name];
    }
    hoisted(nm, owner, name)
}

/// The package a pnpm `.pnpm` slot folder is for: `@scope+name@1.2.3_peer` is
/// `@scope/name`.
fn pnpm_slot_package(slot: &str) -> String {
    let (scoped, rest) = match slot.strip_prefix('@') {
        Some(rest) => (true, rest),
        None => (false, slot),
    };
    let base = rest.split('@').next().unwrap_or(rest);
    if scoped {
        format!("@{}", base.replacen('+', "/", 1))
    } else {
        base.to_string()
    }
}

/// The package name `dir` has by its place in a `node_modules`
/// (`.../node_modules/@scope/name` or `.../node_modules/name`).
fn package_in_node_modules(dir: &Path) -> Option<String> {
    let parts: Vec<&OsStr> = dir
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let n = parts.len();
    if n >= 2 && parts[n - 2] == "node_modules" {
        return parts[n - 1].to_str().map(str::to_string);
    }
    if n >= 3 && parts[n - 3] == "node_modules" && parts[n - 2].to_str()?.starts_with('@') {
        return Some(format!(
            "{}/{}",
            parts[n - 2].to_str()?,
            parts[n - 1].to_str()?
        ));
    }
    None
}

/// A copy at the top of a project's `node_modules`: the project itself when
/// it depends on it directly, and every package that depends on it and has
/// no nested copy of its own.
fn hoisted(nm: &Path, project: &Path, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(pkg) = read_json(&project.join("package.json")) {
        if depends_on(&pkg, name) {
            let label = pkg
                .get("name")
                .and_then(|n| n.as_str())
                .map(str::to_string)
                .or_else(|| project.file_name()?.to_str().map(str::to_string))
                .unwrap_or_else(|| "the project".into());
            out.push(format!("{label} (the project)"));
        }
    }
    if let Some(lock) = read_json(&nm.join(".package-lock.json")) {
        if let Some(packages) = lock.get("packages").and_then(|p| p.as_object()) {
            for (key, entry) in packages {
                let Some(dependent) = key.rsplit("node_modules/").next() else {
                    continue;
                };
                let own_copy = format!("{key}/node_modules/{name}");
                // One with a copy of its own (in the lockfile, or put there
                // since) does not load this one.
                if key.is_empty()
                    || dependent == name
                    || !depends_on(entry, name)
                    || packages.contains_key(&own_copy)
                    || project.join(&own_copy).is_dir()
                {
                    continue;
                }
                out.push(dependent.to_string());
            }
        }
        return dedup(out);
    }
    // No npm lockfile (yarn, bun): ask each package beside it.
    for dir in packages_in(nm).into_iter().take(MAX_SIBLINGS) {
        if dir.ends_with(name) || dir.join("node_modules").join(name).is_dir() {
            continue;
        }
        if let Some(pkg) = read_json(&dir.join("package.json")) {
            if depends_on(&pkg, name) {
                if let Some(n) = pkg.get("name").and_then(|n| n.as_str()) {
                    out.push(n.to_string());
                }
            }
        }
    }
    dedup(out)
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// The package folders directly in `nm` (scoped ones one level down).
fn packages_in(nm: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(nm) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let bytes = name.as_encoded_bytes();
        if bytes.starts_with(b".") {
            continue;
        }
        if bytes.starts_with(b"@") {
            if let Ok(inner) = std::fs::read_dir(e.path()) {
                out.extend(inner.flatten().map(|i| i.path()));
            }
        } else {
            out.push(e.path());
        }
    }
    out
}

/// Whether a package.json (or lockfile entry) depends on `name`.
fn depends_on(pkg: &serde_json::Value, name: &str) -> bool {
    [
        "dependencies",
        "optionalDependencies",
        "peerDependencies",
        "devDependencies",
    ]
    .iter()
    .any(|k| pkg.get(k).and_then(|d| d.get(name)).is_some())
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    let bytes = small_file::read_capped(path, MAX_JSON_BYTES).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pnpm_slot_names_give_the_package() {
        assert_eq!(
            pnpm_slot_package("@langchain+mcp-adapters@1.1.4_@langchain+core@1.0.0"),
            "@langchain/mcp-adapters"
        );
        assert_eq!(pnpm_slot_package("zod@3.25.0"), "zod");
    }

    #[test]
    fn a_nested_copy_is_pulled_in_by_the_package_it_sits_in() {
        let at = Path::new("/p/node_modules/@mastra/mcp/node_modules/@modelcontextprotocol/sdk");
        assert_eq!(
            via_path(at, "@modelcontextprotocol/sdk"),
            vec!["@mastra/mcp".to_string()]
        );
    }
}
