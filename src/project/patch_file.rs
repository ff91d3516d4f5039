//! The patch as a file a JavaScript package manager applies at each install:
//! a git-style unified diff (computed by `similar`), named and laid out as
//! patch-package writes it (`patches/<package>+<version>.patch`, paths
//! `a/node_modules/<package>/...`) or as `pnpm patch-commit` writes it
//! (`patches/<scope>__<name>@<version>.patch`, paths relative to the package).

use std::path::{Component, Path};

use similar::TextDiff;

/// One file of an install: its path in the package folder, before and after.
pub struct Change {
    pub file: String,
    pub original: String,
    pub patched: String,
}

/// Lines of context around each change, as git and patch-package write them.
const CONTEXT: usize = 3;

/// The patch file's text: each change as `diff --git a/P b/P`, `--- a/P`,
/// `+++ b/P` and its hunks, where P is `prefix` and the file's path.
pub fn render(prefix: &str, changes: &[Change]) -> String {
    let mut out = String::new();
    for c in changes {
        let path = format!("{prefix}{}", c.file);
        let (a, b) = (format!("a/{path}"), format!("b/{path}"));
        let diff = TextDiff::from_lines(&c.original, &c.patched);
        let body = diff
            .unified_diff()
            .context_radius(CONTEXT)
            .header(&a, &b)
            .to_string();
        if body.is_empty() {
            continue;
        }
        out.push_str(&format!("diff --git {a} {b}\n"));
        out.push_str(&body);
    }
    out
}

/// patch-package's name for the patch of the package folder `package_dir`
/// in `project`'s node_modules: the path below node_modules with each `/`
/// written `+` and each nested `node_modules` written `++`, then `+<version>.patch`
/// (`@modelcontextprotocol+sdk+1.32.2.patch`,
/// `@langchain+mcp-adapters++@modelcontextprotocol+sdk+1.32.2.patch`). None
/// for a folder outside that tree or in pnpm's store, which patch-package
/// does not patch.
pub fn patch_package_name(
    project: &Path,
    package_dir: &Path,
    version: Option<&str>,
) -> Option<String> {
    let rel = package_dir
        .strip_prefix(project.join("node_modules"))
        .ok()?;
    let mut packages: Vec<Vec<String>> = vec![Vec::new()];
    for c in rel.components() {
        let Component::Normal(name) = c else {
            return None;
        };
        let name = name.to_str()?;
        if name == "node_modules" {
            packages.push(Vec::new());
        } else {
            packages.last_mut()?.push(name.to_string());
        }
    }
    let first = packages.first()?.first()?;
    if first.starts_with('.') || packages.iter().any(|p| p.is_empty()) {
        return None;
    }
    let names: Vec<String> = packages.iter().map(|p| p.join("+")).collect();
    Some(format!("{}+{}.patch", names.join("++"), version?))
}

/// pnpm's name for the patch of `package`@`version`: `/` written `__`.
pub fn pnpm_name(package: &str, version: &str) -> String {
    format!("{}@{version}.patch", package.replace('/', "__"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_package_names_hoisted_nested_and_refuses_the_pnpm_store() {
        let p = Path::new("/p");
        let name = |rel: &str| patch_package_name(p, &p.join(rel), Some("1.32.2"));
        assert_eq!(
            name("node_modules/@modelcontextprotocol/sdk").as_deref(),
            Some("@modelcontextprotocol+sdk+1.32.2.patch")
        );
        assert_eq!(
            name("node_modules/@langchain/mcp-adapters/node_modules/@modelcontextprotocol/sdk")
                .as_deref(),
            Some("@langchain+mcp-adapters++@modelcontextprotocol+sdk+1.32.2.patch")
        );
        assert_eq!(
            name("node_modules/left-pad").as_deref(),
            Some("left-pad+1.32.2.patch")
        );
        assert_eq!(name("node_modules/.pnpm/x@1/node_modules/x"), None);
        assert_eq!(name("elsewhere/x"), None);
        assert_eq!(
            pnpm_name("@modelcontextprotocol/sdk", "1.32.2"),
            "@modelcontextprotocol__sdk@1.32.2.patch"
        );
    }

    #[test]
    fn a_change_is_a_git_style_unified_diff() {
        let c = Change {
            file: "dist/a.js".into(),
            original: "1\n2\n3\n4\n5\n6\n7\n8\n".into(),
            patched: "1\n2\n3\n4\nfive\n6\n7\n8\n".into(),
        };
        assert_eq!(
            render("node_modules/x/", &[c]),
            "diff --git a/node_modules/x/dist/a.js b/node_modules/x/dist/a.js\n--- a/node_modules/x/dist/a.js\n+++ b/node_modules/x/dist/a.js\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }
}
