//! Finds the file to patch by reachability: a bundled package (gemini-cli)
//! ships several copies of the class to patch in differently hashed chunks,
//! and only the one its bin entry loads matters. Starting at the entry file,
//! every relative import is followed (the static import block at the top of
//! each chunk, and `import("./x.js")` anywhere), breadth-first, and the one
//! reachable file that declares the class is the file. The reference is
//! `test-fixtures/gemini-cli/reachable.mjs`. The scan is bounded: each real
//! file (device and inode) is read once whatever names lead to it, at most
//! [`MAX_FILES`] of them and [`MAX_TOTAL_BYTES`] in all.

use std::collections::{HashSet, VecDeque};
use std::path::{Component, Path, PathBuf};

use crate::identity;
use crate::status_cache::Stamp;

/// Largest file read while following imports (gemini-cli's biggest chunk is
/// about 15 MB).
const MAX_CHUNK_BYTES: u64 = 64 * 1024 * 1024;

/// Most files followed from one entry (a release has a few hundred chunks).
const MAX_FILES: usize = 4096;

/// Most bytes read in all from one entry (a release's whole bundle is about 100 MB).
const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;

/// The one file reachable from `entry` (relative to `package_dir`) that holds
/// `declares`, or why there is none.
pub fn find(package_dir: &Path, entry: &str, declares: &str) -> Result<PathBuf, String> {
    find_within(
        package_dir,
        entry,
        declares,
        MAX_TOTAL_BYTES,
        &mut Vec::new(),
    )
}

/// [`find`], with each file it read (relative to `package_dir`) and its
/// stamp as read: what `status` remembers ([`crate::status_cache`]).
pub fn find_traced(
    package_dir: &Path,
    entry: &str,
    declares: &str,
) -> (Result<PathBuf, String>, Vec<(PathBuf, Stamp)>) {
    let mut read = Vec::new();
    let found = find_within(package_dir, entry, declares, MAX_TOTAL_BYTES, &mut read);
    (found, read)
}

/// [`find`], reading at most `budget` bytes in all; each file read is
/// pushed to `traced`.
fn find_within(
    package_dir: &Path,
    entry: &str,
    declares: &str,
    budget: u64,
    traced: &mut Vec<(PathBuf, Stamp)>,
) -> Result<PathBuf, String> {
    use std::os::unix::fs::MetadataExt;
    let start = resolve(Path::new(""), entry)
        .ok_or_else(|| format!("the entry file {entry} is not in the package"))?;
    let mut seen: HashSet<PathBuf> = HashSet::new();
    // Real files read (device, inode): another name for one adds nothing.
    let mut read: HashSet<(u64, u64)> = HashSet::new();
    let mut total: u64 = 0;
    let mut queue = VecDeque::from([start]);
    let mut holders = Vec::new();
    while let Some(rel) = queue.pop_front() {
        if !seen.insert(rel.clone()) {
            continue;
        }
        if seen.len() > MAX_FILES {
            return Err(format!(
                "more than {MAX_FILES} files are reachable from {entry}"
            ));
        }
        let path = package_dir.join(&rel);
        let unreadable = || format!("{} (reachable from {entry}) cannot be read", rel.display());
        let meta = std::fs::metadata(&path).map_err(|_| unreadable())?;
        if !read.insert((meta.dev(), meta.ino())) {
            continue;
        }
        traced.push((rel.clone(), Stamp::of(&meta)));
        total = total.saturating_add(meta.len());
        if total > budget {
            let limit = if budget >= 1024 * 1024 {
                format!("{} MB", budget / (1024 * 1024))
            } else {
                format!("{budget} bytes")
            };
            return Err(format!(
                "the files reachable from {entry} hold more than {limit} in all; the scan stopped there"
            ));
        }
        let (bytes, _) =
            identity::read_capped(&path, MAX_CHUNK_BYTES, true).map_err(|_| unreadable())?;
        let src = crate::identity::text_of(&bytes);
        if src.contains(declares) {
            holders.push(rel.clone());
        }
        let dir = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        for spec in static_imports(&src) {
            if !spec.starts_with("./") && !spec.starts_with("../") {
                continue; // node:… and packages
            }
            match resolve(&dir, spec) {
                Some(next) if package_dir.join(&next).is_file() => queue.push_back(next),
                _ => {
                    return Err(format!(
                        "{} imports {spec}, which is not a file of the package",
                        rel.display()
                    ))
                }
            }
        }
        for spec in dynamic_imports(&src) {
            if let Some(next) = resolve(&dir, spec) {
                if package_dir.join(&next).is_file() {
                    queue.push_back(next);
                }
            }
        }
    }
    match holders.as_slice() {
        [one] => Ok(package_dir.join(one)),
        _ => Err(format!(
            "{} files reachable from {entry} declare `{declares}`{}",
            holders.len(),
            if holders.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    holders
                        .iter()
                        .map(|h| h.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )),
    }
}

/// `spec` resolved against `dir` (both relative to the package folder),
/// lexically; `None` when it leaves the package.
fn resolve(dir: &Path, spec: &str) -> Option<PathBuf> {
    let mut out = dir.to_path_buf();
    for c in Path::new(spec).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// The specifiers of the import block at the top of a chunk: after an
/// optional shebang and the banner line gemini's build adds
/// (`const require = …`), statement by statement, up to the first other
/// statement (so code in strings and comments further down is never taken).
fn static_imports(src: &str) -> Vec<&str> {
    let b = src.as_bytes();
    let mut i = 0;
    if src.starts_with("#!") {
        i = src.find('\n').map_or(src.len(), |n| n + 1);
    }
    if src[i..].starts_with("const require = ") {
        i = src[i..].find('\n').map_or(src.len(), |n| i + n + 1);
    }
    let mut specs = Vec::new();
    loop {
        let rest = &src[i..];
        if rest.is_empty() {
            break;
        }
        if b[i].is_ascii_whitespace() {
            i += rest.len() - rest.trim_start().len();
            continue;
        }
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
            continue;
        }
        if let Some(comment) = rest.strip_prefix("/*") {
            match comment.find("*/") {
                Some(n) => i += n + 4,
                None => break,
            }
            continue;
        }
        match import_statement(rest) {
            Some((len, spec)) => {
                specs.push(spec);
                i += len;
            }
            None => break,
        }
    }
    specs
}

/// `import|export [clause from] "spec";` at the start of `s`: its length and spec.
/// The clause holds only identifier characters, `*`, braces, commas and
/// whitespace, as the reference's pattern allows.
fn import_statement(s: &str) -> Option<(usize, &str)> {
    let keyword = ["import", "export"]
        .into_iter()
        .find(|k| s.starts_with(k))?;
    let after = &s[keyword.len()..];
    let body = after.trim_start();
    let mut at = keyword.len() + (after.len() - body.len());
    let spec_start = if body.starts_with(['"', '\'']) {
        at
    } else {
        // A clause, then `from`.
        let clause_len = body
            .bytes()
            .take_while(|c| {
                c.is_ascii_alphanumeric() || b"_$*{},".contains(c) || c.is_ascii_whitespace()
            })
            .count();
        let clause = &body[..clause_len];
        // The clause ends with `from` (the reference matches it lazily).
        let trimmed = clause.trim_end();
        let from_at = trimmed.strip_suffix("from")?;
        if !from_at.is_empty()
            && !from_at.ends_with(|c: char| c.is_whitespace() || "{},*".contains(c))
        {
            return None;
        }
        at += clause_len;
        at
    };
    let quote = s[spec_start..].chars().next()?;
    if quote != '"' && quote != '\'' {
        return None;
    }
    let inner = &s[spec_start + 1..];
    let end = inner.find(['"', '\'', '\n'])?;
    let spec = &inner[..end];
    if inner[end..].starts_with('\n') || spec.is_empty() {
        return None;
    }
    let mut len = spec_start + 1 + end + 1;
    if s[len..].starts_with(';') {
        len += 1;
    }
    Some((len, spec))
}

/// `import("./x.js")` / `import('../x.js')` with a relative string literal, anywhere.
fn dynamic_imports(src: &str) -> Vec<&str> {
    let mut specs = Vec::new();
    for at in memchr::memmem::find_iter(src.as_bytes(), b"import(") {
        let from = at + "import(".len();
        let word_before = src[..at]
            .bytes()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$');
        if word_before {
            continue;
        }
        let rest = src[from..].trim_start();
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let inner = &rest[1..];
        let Some(end) = inner.find(['"', '\'', '\n']) else {
            continue;
        };
        let spec = &inner[..end];
        let closes =
            inner[end..].starts_with(quote) && inner[end + 1..].trim_start().starts_with(')');
        if closes && (spec.starts_with("./") || spec.starts_with("../")) && spec.ends_with(".js") {
            specs.push(spec);
        }
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_import_block_is_read_up_to_the_first_other_statement() {
        let src = "#!/usr/bin/env node\nconst require = x;\n// c\nimport {\n  a,\n  b as c\n} from \"./chunk-A.js\";\nimport \"./side.js\";\nexport * from './re.js';\nimport x from \"node:fs\";\nvar y = 1;\nimport z from \"./not-head.js\";\n";
        assert_eq!(
            static_imports(src),
            ["./chunk-A.js", "./side.js", "./re.js", "node:fs"]
        );
    }

    #[test]
    fn dynamic_imports_are_relative_js_string_literals() {
        let src = "a = import(\"./x.js\"); b = await import( './y.js' ); c = import(`./z.js`); d = myimport(\"./w.js\"); e = import(\"./t.d.ts\"); f = import(\"pkg/a.js\")";
        assert_eq!(dynamic_imports(src), ["./x.js", "./y.js"]);
    }

    #[test]
    fn each_real_file_is_read_once_and_the_total_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bundle");
        std::fs::create_dir_all(&p).unwrap();
        let imports: String = (0..50)
            .map(|i| format!("import(\"./s{i}.js\");\n"))
            .collect();
        std::fs::write(p.join("gemini.js"), format!("run();\n{imports}")).unwrap();
        std::fs::write(
            p.join("big.js"),
            format!("var McpClient = class {{\n}};\n{}", "x".repeat(1000)),
        )
        .unwrap();
        for i in 0..50 {
            std::os::unix::fs::symlink("big.js", p.join(format!("s{i}.js"))).unwrap();
        }
        // Fifty names of one file: read once, found once, well within 2 kB.
        assert_eq!(
            find_within(
                dir.path(),
                "bundle/gemini.js",
                "var McpClient = class {",
                2048,
                &mut Vec::new()
            )
            .unwrap(),
            dir.path().join("bundle/s0.js")
        );
        // Distinct files beyond the budget stop the scan, saying so.
        for i in 0..50 {
            std::fs::remove_file(p.join(format!("s{i}.js"))).unwrap();
            std::fs::write(p.join(format!("s{i}.js")), "y".repeat(100)).unwrap();
        }
        assert_eq!(
            find_within(
                dir.path(),
                "bundle/gemini.js",
                "var McpClient = class {",
                2 * 1024 * 1024,
                &mut Vec::new()
            )
            .unwrap_err(),
            "0 files reachable from bundle/gemini.js declare `var McpClient = class {`"
        );
        assert_eq!(
            find_within(
                dir.path(),
                "bundle/gemini.js",
                "var McpClient = class {",
                3000,
                &mut Vec::new()
            )
            .unwrap_err(),
            "the files reachable from bundle/gemini.js hold more than 3000 bytes in all; the scan stopped there"
        );
    }

    #[test]
    fn only_the_reachable_copy_of_the_declaration_is_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("bundle")).unwrap();
        let w = |name: &str, text: &str| std::fs::write(p.join("bundle").join(name), text).unwrap();
        w(
            "gemini.js",
            "import { a } from \"./chunk-A.js\";\nrun(() => import(\"./chunk-B.js\"));\n",
        );
        w("chunk-A.js", "export const a = 1;\n");
        w("chunk-B.js", "var McpClient = class {\n};\n");
        w("chunk-C.js", "var McpClient = class {\n};\n");
        assert_eq!(
            find(p, "bundle/gemini.js", "var McpClient = class {").unwrap(),
            p.join("bundle/chunk-B.js")
        );
        w(
            "chunk-A.js",
            "import \"./chunk-C.js\";\nexport const a = 1;\n",
        );
        assert_eq!(
            find(p, "bundle/gemini.js", "var McpClient = class {").unwrap_err(),
            "2 files reachable from bundle/gemini.js declare `var McpClient = class {`: bundle/chunk-B.js, bundle/chunk-C.js"
        );
        w("chunk-A.js", "import \"./gone.js\";\n");
        assert_eq!(
            find(p, "bundle/gemini.js", "var McpClient = class {").unwrap_err(),
            "bundle/chunk-A.js imports ./gone.js, which is not a file of the package"
        );
    }

    /// On the real releases, the file found is the one the manifest records
    /// (reachable.mjs's answer).
    #[test]
    fn the_loaded_mcp_client_chunk_of_each_proven_release_is_found() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root.join("patches/gemini-cli/manifest.json")).unwrap(),
        )
        .unwrap();
        let mut checked = 0;
        for r in manifest["revisions"].as_array().unwrap() {
            if r["kind"] != "original" {
                continue;
            }
            let v = r["versions"][0].as_str().unwrap();
            let pkg = root
                .join(".cache/gemini-cli")
                .join(v)
                .join("lib/node_modules/@google/gemini-cli");
            assert!(
                pkg.join("package.json").is_file(),
                "{} is missing; run scripts/fetch-fixtures.sh",
                pkg.display()
            );
            assert_eq!(
                find(&pkg, "bundle/gemini.js", "var McpClient = class {").unwrap(),
                pkg.join(r["file"].as_str().unwrap()),
                "{v}"
            );
            checked += 1;
        }
        assert_eq!(checked, 5);
    }
}
