//! pnpm-workspace.yaml's `patchedDependencies`, where pnpm 10 and later read
//! a project's patches (pnpm 11 and later no longer read package.json's
//! `pnpm` field). Only that top-level block is read or written, line by line
//! (no YAML library): every other line of the file is left as it was.

/// The top-level key this module reads and writes.
const BLOCK: &str = "patchedDependencies:";

/// Why the file could not be edited.
#[derive(Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The entries of the top-level `patchedDependencies:` block: (key, value),
/// quotes taken off.
pub fn entries(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if !line.starts_with([' ', '\t']) && !line.trim().is_empty() && !line.starts_with('#') {
            inside = line.trim_end() == BLOCK;
            continue;
        }
        if inside {
            if let Some((k, v)) = split_entry(line.trim()) {
                out.push((k, v));
            }
        }
    }
    out
}

/// `key: value` with either side single- or double-quoted.
fn split_entry(line: &str) -> Option<(String, String)> {
    if line.starts_with('#') || line.is_empty() {
        return None;
    }
    let (key, rest) = match line.chars().next()? {
        q @ ('\'' | '"') => {
            let end = line[1..].find(q)? + 1;
            (line[1..end].to_string(), line[end + 1..].trim_start())
        }
        _ => {
            let at = line.find(": ")?;
            (line[..at].to_string(), &line[at..])
        }
    };
    let value = rest.strip_prefix(':')?.trim();
    let value = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
        .unwrap_or(value);
    Some((key, value.to_string()))
}

/// The file's text (None: no file yet) with `key` naming `value` in
/// `patchedDependencies`: an entry with that key set, else one added as the
/// block's first line, else the block added at the end.
pub fn set(text: Option<&str>, key: &str, value: &str) -> Result<String, Unsupported> {
    let entry = |indent: &str| format!("{indent}'{}': {value}", key.replace('\'', "''"));
    let Some(text) = text else {
        return Ok(format!("{BLOCK}\n{}\n", entry("  ")));
    };
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let head = lines.iter().position(|l| {
        let l = l.trim_end();
        l.starts_with("patchedDependencies:")
    });
    let Some(head) = head else {
        let sep = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            newline
        };
        return Ok(format!(
            "{text}{sep}{BLOCK}{newline}{}{newline}",
            entry("  ")
        ));
    };
    if lines[head].trim_end() != BLOCK {
        return Err(Unsupported(format!(
            "its `patchedDependencies` is not a block of `key: value` lines (`{}`)",
            lines[head].trim_end()
        )));
    }
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let mut indent = "  ".to_string();
    for (n, line) in lines.iter().enumerate().skip(head + 1) {
        let bare = line.trim_end_matches(['\r', '\n']);
        if !bare.starts_with([' ', '\t']) && !bare.trim().is_empty() {
            break;
        }
        if let Some((k, _)) = split_entry(bare.trim()) {
            indent = bare[..bare.len() - bare.trim_start().len()].to_string();
            if k == key {
                out[n] = format!("{}{}", entry(&indent), &line[bare.len()..]);
                return Ok(out.concat());
            }
        }
    }
    let first = format!("{}{newline}", entry(&indent));
    if !out[head].ends_with('\n') {
        out[head].push_str(newline);
    }
    out.insert(head + 1, first);
    Ok(out.concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "@modelcontextprotocol/sdk@1.32.2";
    const FILE: &str = "patches/@modelcontextprotocol__sdk@1.32.2.patch";

    #[test]
    fn a_new_file_a_file_without_the_block_and_one_with_it() {
        let made = set(None, KEY, FILE).unwrap();
        assert_eq!(made, format!("patchedDependencies:\n  '{KEY}': {FILE}\n"));
        assert_eq!(entries(&made), vec![(KEY.to_string(), FILE.to_string())]);

        let text = "packages:\n  - 'apps/*'\nonlyBuiltDependencies:\n  - esbuild";
        let out = set(Some(text), KEY, FILE).unwrap();
        assert_eq!(
            out,
            format!("{text}\npatchedDependencies:\n  '{KEY}': {FILE}\n")
        );

        let text = "patchedDependencies:\n    left-pad@1.0.0: patches/left-pad@1.0.0.patch\npackages:\n  - a\n";
        let out = set(Some(text), KEY, FILE).unwrap();
        assert_eq!(
            out,
            format!("patchedDependencies:\n    '{KEY}': {FILE}\n    left-pad@1.0.0: patches/left-pad@1.0.0.patch\npackages:\n  - a\n")
        );
        assert_eq!(entries(&out).len(), 2);
        assert_eq!(
            set(Some(&out), KEY, FILE).unwrap(),
            out,
            "set twice: no change"
        );
    }

    #[test]
    fn an_entry_there_is_replaced_and_flow_style_is_refused() {
        let text = format!("patchedDependencies:\r\n  \"{KEY}\": patches/old.patch\r\n");
        let out = set(Some(&text), KEY, FILE).unwrap();
        assert_eq!(
            out,
            format!("patchedDependencies:\r\n  '{KEY}': {FILE}\r\n")
        );
        assert!(set(Some("patchedDependencies: {}\n"), KEY, FILE).is_err());
    }
}
