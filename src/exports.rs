//! Finding a file of a package the way Node does for `import` and `require`:
//! through its package.json `exports` (a manifest's `find: {export,
//! condition}`). A fixed path cannot say which build a file is (`@ai-sdk/mcp`
//! 2.x's `dist/index.js` is ESM, 1.x's is CJS). package.json is treated as
//! hostile: the file it names must be a regular file inside the package
//! folder (no `..`, no absolute path, no symlink, nothing resolving outside).

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// package.json is read only up to this size (a real one is a few KiB).
const MAX_PACKAGE_JSON: u64 = 1 << 20;

/// The file `exports[export][condition]` of the package in `dir` names:
/// `Ok(None)` when package.json's exports have no such condition for that
/// subpath (the package has no such build), `Err` (the reason, naming the
/// path) when package.json cannot be read or names a file mcpatch refuses.
pub fn resolve(dir: &Path, export: &str, condition: &str) -> Result<Option<PathBuf>, String> {
    let pj = dir.join("package.json");
    let text = read_capped(&pj)?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON ({e})", pj.display()))?;
    let Some(exports) = v.get("exports") else {
        return Err(format!("{} has no `exports`", pj.display()));
    };
    let Some(target) = target_of(exports, export, condition) else {
        return Ok(None);
    };
    let named = format!("{}: exports[{export:?}][{condition:?}]", pj.display());
    let rel = inside(target)
        .ok_or_else(|| format!("{named} is {target:?}, not a path inside the package (`./...`)"))?;
    let file = dir.join(&rel);
    let meta = std::fs::symlink_metadata(&file).map_err(|e| {
        format!(
            "{named} names {}, which cannot be read ({e})",
            file.display()
        )
    })?;
    if !meta.file_type().is_file() {
        return Err(format!(
            "{named} names {}, which is not a regular file (a symlink or a folder)",
            file.display()
        ));
    }
    // A folder of the path may still be a symlink out of the package.
    let real_dir = dir
        .canonicalize()
        .map_err(|e| format!("{} cannot be read ({e})", dir.display()))?;
    let real_file = file
        .canonicalize()
        .map_err(|e| format!("{} cannot be read ({e})", file.display()))?;
    if !real_file.starts_with(&real_dir) {
        return Err(format!(
            "{named} names {}, which resolves to {}, outside the package folder",
            file.display(),
            real_file.display()
        ));
    }
    Ok(Some(file))
}

/// The file a target's own file (not optional) is: as [`resolve`], with an
/// absent condition an error naming it.
pub fn find(dir: &Path, export: &str, condition: &str) -> Result<PathBuf, String> {
    resolve(dir, export, condition)?.ok_or_else(|| {
        format!(
            "{}: exports[{export:?}] has no `{condition}` build",
            dir.join("package.json").display()
        )
    })
}

/// Whether the manifest revision `r` is one of the file whose build is
/// `role` in `package`: a file found through exports has no fixed path (the
/// same `dist/index.js` is ESM in one release and CJS in another), so its
/// revisions are told apart by `build`, and by `package` when they name one.
pub fn revision_of(r: &Value, role: &str, package: &str) -> bool {
    r.get("build").and_then(|v| v.as_str()) == Some(role)
        && r.get("package")
            .and_then(|v| v.as_str())
            .is_none_or(|p| p == package)
}

/// The target string for `export` and `condition`: the subpath's value (or
/// the whole of `exports` when it has no subpath keys) is a string (every
/// condition), or an object whose `condition` is a string or an object with
/// a `default` string.
fn target_of<'a>(exports: &'a Value, export: &str, condition: &str) -> Option<&'a str> {
    let subpath_keys = exports
        .as_object()
        .is_some_and(|o| o.keys().any(|k| k.starts_with('.')));
    let entry = match exports {
        Value::String(_) if export == "." => exports,
        Value::Object(o) if subpath_keys => o.get(export)?,
        Value::Object(_) if export == "." => exports,
        _ => return None,
    };
    match entry {
        Value::String(s) => Some(s),
        Value::Object(o) => match o.get(condition)? {
            Value::String(s) => Some(s),
            Value::Object(nested) => nested.get("default")?.as_str(),
            _ => None,
        },
        _ => None,
    }
}

/// `./dist/index.js` as `dist/index.js`: None unless it starts with `./`
/// and every later part is a plain name (no `..`, `.`, `node_modules`).
fn inside(target: &str) -> Option<PathBuf> {
    let rest = target.strip_prefix("./")?;
    let p = Path::new(rest);
    let plain = !rest.is_empty()
        && !rest.contains('\\')
        && p.components().all(|c| match c {
            Component::Normal(n) => n != "node_modules",
            _ => false,
        });
    plain.then(|| p.to_path_buf())
}

fn read_capped(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(path)
        .map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    let mut text = String::new();
    f.take(MAX_PACKAGE_JSON + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    if text.len() as u64 > MAX_PACKAGE_JSON {
        return Err(format!(
            "{} is larger than {MAX_PACKAGE_JSON} bytes: not a package.json mcpatch reads",
            path.display()
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(exports: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("package.json"),
            format!(r#"{{"name":"p","exports":{exports}}}"#),
        )
        .unwrap();
        std::fs::create_dir_all(d.path().join("dist")).unwrap();
        std::fs::write(d.path().join("dist/index.js"), "cjs").unwrap();
        std::fs::write(d.path().join("dist/index.mjs"), "esm").unwrap();
        d
    }

    #[test]
    fn each_condition_names_its_build_and_an_absent_one_is_no_file() {
        let d = package(
            r#"{".":{"types":"./dist/index.d.ts","import":"./dist/index.mjs","require":"./dist/index.js"}}"#,
        );
        let at = |c| resolve(d.path(), ".", c);
        assert_eq!(at("import"), Ok(Some(d.path().join("dist/index.mjs"))));
        assert_eq!(at("require"), Ok(Some(d.path().join("dist/index.js"))));
        assert_eq!(at("module"), Ok(None));
    }

    #[test]
    fn a_string_or_nested_default_or_sugar_exports_resolve() {
        for exports in [
            r#""./dist/index.js""#,
            r#"{"import":"./dist/index.js"}"#,
            r#"{".":{"import":{"types":"./x.d.ts","default":"./dist/index.js"}}}"#,
        ] {
            let d = package(exports);
            assert_eq!(
                resolve(d.path(), ".", "import"),
                Ok(Some(d.path().join("dist/index.js"))),
                "{exports}"
            );
        }
    }

    #[test]
    fn a_target_outside_the_package_is_refused_with_the_path() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("evil.js"), "x").unwrap();
        for target in [
            "../evil.js".to_string(),
            "./dist/../../evil.js".into(),
            outside.path().join("evil.js").display().to_string(),
            "./node_modules/x/index.js".into(),
        ] {
            let d = package(&format!(r#"{{".":{{"import":{target:?}}}}}"#));
            let pj = d.path().join("package.json");
            assert_eq!(
                resolve(d.path(), ".", "import"),
                Err(format!(
                    "{}: exports[\".\"][\"import\"] is {target:?}, not a path inside the package (`./...`)",
                    pj.display()
                ))
            );
        }
    }

    #[test]
    fn a_symlink_out_of_the_package_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("index.js"), "x").unwrap();
        let d = package(r#"{".":{"import":"./out/index.js"}}"#);
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let got = resolve(d.path(), ".", "import").unwrap_err();
        assert!(got.ends_with("outside the package folder"), "{got}");
        let d = package(r#"{".":{"import":"./dist/link.js"}}"#);
        std::os::unix::fs::symlink(
            outside.path().join("index.js"),
            d.path().join("dist/link.js"),
        )
        .unwrap();
        let got = resolve(d.path(), ".", "import").unwrap_err();
        assert!(
            got.ends_with("which is not a regular file (a symlink or a folder)"),
            "{got}"
        );
    }
}

#[cfg(test)]
mod ai_sdk_mcp {
    use crate::registry::{all, FileFind};

    /// `@ai-sdk/mcp`'s manifest: one spec, its ESM build found through
    /// exports' `import` and its CJS build (optional: 2.x has none) through
    /// `require`, each with the revisions of its own build only.
    #[test]
    fn ai_sdk_mcp_finds_its_builds_through_exports_and_keeps_each_builds_revisions() {
        let specs: Vec<_> = all()
            .unwrap()
            .iter()
            .filter(|s| s.target == "ai-sdk-mcp")
            .collect();
        assert_eq!(specs.len(), 1);
        let s = specs[0];
        assert_eq!(s.package, "@ai-sdk/mcp");
        let export = |condition: &str, optional| FileFind::Export {
            export: ".".into(),
            condition: condition.into(),
            optional,
        };
        assert_eq!(
            (s.role.as_deref(), &s.find),
            (Some("esm"), &export("import", false))
        );
        let [cjs] = s.companions.as_slice() else {
            panic!("{:?}", s.companions)
        };
        assert_eq!(
            (cjs.role.as_deref(), &cjs.find),
            (Some("cjs"), &export("require", true))
        );
        // 2.0.99's ESM dist/index.js is the ESM spec's; 1.0.102's CJS dist/index.js the CJS spec's.
        let esm_299 = "6f7eeeee026151687572d07a31fbdd15a5a0dfe17f27ed4200911c0bf91b86ba";
        let cjs_1102 = "1a2d70546009d46e4d917adf53a2f4bb89e45612c241d73b716acdcf0f5e6548";
        assert!(s.is_original(esm_299) && !cjs.is_original(esm_299));
        assert!(cjs.is_original(cjs_1102) && !s.is_original(cjs_1102));
        assert!(s.verify_host_script.is_some());
    }
}
