//! Content anchors: how mcpatch patches a file whose bundle changes with every
//! release but whose code that matters barely moves (gemini-cli). A target's
//! manifest gives `anchors`: exact code fragments, identifiers matched by the
//! manifest's `placeholder` pattern as `{{NAME}}`, that must each match exactly
//! once in the file; each is replaced by its fragment with the captured
//! identifiers put back in. A file the anchors do not fit is refused naming the
//! anchor. A file is patched (and apply leaves it alone) only when that is
//! proven from its content, as DSH's diffs prove it: every replacement is in
//! it exactly once, and putting each anchor's text back gives a file the
//! anchors patch into exactly this one (the marker alone, say in a comment,
//! proves nothing). The reference implementation is
//! `test-fixtures/gemini-cli/apply-anchors.mjs`; the tests below hold this port
//! to its outputs on the real releases.

use std::collections::BTreeMap;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The one placeholder pattern mcpatch knows: a JavaScript identifier, taken
/// whole (bundlers rename `McpClient` to `McpClient2`, `result` to `result2`).
pub const IDENTIFIER: &str = "[A-Za-z_$][A-Za-z0-9_$]*";

/// One part of an anchor's text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Bytes that must be there as they are.
    Literal(String),
    /// `{{NAME}}`: an identifier, captured under NAME.
    Placeholder(String),
}

/// One anchor, ready to match.
#[derive(Debug, Clone)]
pub struct Anchor {
    /// Its name in messages (`callable-call-tool`).
    pub name: String,
    parts: Vec<Part>,
    /// The replacement: the fragment file's text minus its final newline.
    replace: String,
    /// The replacement as a pattern, to find it in a patched file.
    replace_parts: Vec<Part>,
}

/// A target's anchors and the marker every replacement carries.
#[derive(Debug, Clone)]
pub struct Anchors {
    pub marker: String,
    pub anchors: Vec<Anchor>,
}

/// An anchor as the manifest gives it.
#[derive(Debug, Clone, Deserialize)]
pub struct AnchorEntry {
    pub name: String,
    /// Lines joined with "\n", no trailing newline.
    #[serde(rename = "match")]
    pub lines: Vec<String>,
    /// The fragment file, relative to the target's folder.
    pub replace: String,
    /// sha256 of that fragment file as stored.
    pub replace_sha256: String,
}

/// Why a file is refused: the anchor that did not fit, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("anchor `{name}` matched {count} times (expected exactly once)")]
    Count { name: String, count: usize },
    #[error("anchors `{first}` and `{second}` overlap")]
    Overlap { first: String, second: String },
}

/// What applying the anchors to a text gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The patched text.
    Patched(String),
    /// The text holds the marker: left alone.
    AlreadyPatched,
}

/// `{{NAME}}` occurrences in `text`: (start, end, NAME).
fn placeholders(text: &str) -> Vec<(usize, usize, &str)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find("{{").map(|i| from + i) {
        let name_start = open + 2;
        let name_len = text[name_start..]
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let name_end = name_start + name_len;
        if text[name_end..].starts_with("}}") {
            found.push((open, name_end + 2, &text[name_start..name_end]));
            from = name_end + 2;
        } else {
            from = open + 1;
        }
    }
    found
}

fn is_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_uppercase())
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Splits an anchor's text into literal and placeholder parts.
fn parse(name: &str, text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut last = 0;
    for (start, end, ph) in placeholders(text) {
        if !is_name(ph) {
            return Err(format!(
                "anchor `{name}`: bad placeholder {{{{{ph}}}}}; use {{{{NAME}}}} with NAME in A-Z, 0-9, _"
            ));
        }
        if start > last {
            parts.push(Part::Literal(text[last..start].to_string()));
        }
        parts.push(Part::Placeholder(ph.to_string()));
        last = end;
    }
    if last < text.len() {
        parts.push(Part::Literal(text[last..].to_string()));
    }
    if !matches!(parts.first(), Some(Part::Literal(_)))
        || !matches!(parts.last(), Some(Part::Literal(_)))
    {
        return Err(format!(
            "anchor `{name}` must start and end with literal text"
        ));
    }
    if parts
        .windows(2)
        .any(|w| matches!(w, [Part::Placeholder(_), Part::Placeholder(_)]))
    {
        return Err(format!(
            "anchor `{name}`: two placeholders must be separated by literal text"
        ));
    }
    if parts
        .iter()
        .any(|p| matches!(p, Part::Literal(l) if l.contains("{{")))
    {
        return Err(format!("anchor `{name}`: stray \"{{{{\""));
    }
    Ok(parts)
}

fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

fn ident_part(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Where the anchor matches in `src`: (start, end, captures).
type Hit = (usize, usize, BTreeMap<String, String>);

/// Tries the anchor's parts at `at`.
fn match_at(src: &str, parts: &[Part], at: usize) -> Option<Hit> {
    let bytes = src.as_bytes();
    let mut i = at;
    let mut captures: BTreeMap<String, String> = BTreeMap::new();
    for part in parts {
        match part {
            Part::Literal(lit) => {
                if !bytes[i..].starts_with(lit.as_bytes()) {
                    return None;
                }
                i += lit.len();
            }
            Part::Placeholder(name) => {
                if i >= bytes.len() || !ident_start(bytes[i]) {
                    return None;
                }
                let end = i
                    + 1
                    + bytes[i + 1..]
                        .iter()
                        .take_while(|b| ident_part(**b))
                        .count();
                let id = &src[i..end];
                match captures.get(name) {
                    Some(seen) if seen != id => return None,
                    _ => {
                        captures.insert(name.clone(), id.to_string());
                    }
                }
                i = end;
            }
        }
    }
    Some((at, i, captures))
}

/// Every offset where the anchor matches (overlapping matches counted).
fn find_all(src: &str, parts: &[Part]) -> Vec<Hit> {
    let Some(Part::Literal(first)) = parts.first() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = src[from..].find(first.as_str()).map(|i| from + i) {
        if let Some(hit) = match_at(src, parts, at) {
            found.push(hit);
        }
        // The next possible start is the next character boundary.
        from = at + src[at..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// `{{NAME}}` in a fragment replaced by the captures.
fn substitute(template: &str, captures: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut last = 0;
    for (start, end, name) in placeholders(template) {
        out.push_str(&template[last..start]);
        // load() checked that every placeholder of a fragment is captured.
        out.push_str(&captures[name]);
        last = end;
    }
    out.push_str(&template[last..]);
    out
}

impl Anchors {
    /// Checks the manifest's anchors and reads their fragments with `text`
    /// (a file of the target's folder by name), sha256-checked.
    pub fn load(
        placeholder: &str,
        marker: &str,
        entries: &[AnchorEntry],
        text: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        if placeholder != IDENTIFIER {
            return Err(format!(
                "unsupported placeholder pattern {placeholder}; mcpatch knows {IDENTIFIER}"
            ));
        }
        if entries.is_empty() {
            return Err("anchors is empty".into());
        }
        let mut anchors: Vec<Anchor> = Vec::new();
        for e in entries {
            if anchors.iter().any(|a| a.name == e.name) {
                return Err(format!("two anchors named `{}`", e.name));
            }
            let raw = text(&e.replace).ok_or_else(|| {
                format!("anchor `{}` names {}, which is missing", e.name, e.replace)
            })?;
            let sha = hex::encode(Sha256::digest(raw.as_bytes()));
            if !sha.eq_ignore_ascii_case(&e.replace_sha256) {
                return Err(format!(
                    "{}: sha256 {sha}, the manifest expects {}",
                    e.replace, e.replace_sha256
                ));
            }
            let Some(replace) = raw.strip_suffix('\n') else {
                return Err(format!("{} must end with a newline", e.replace));
            };
            if !replace.contains(marker) {
                return Err(format!(
                    "{} does not contain the patch marker {marker}",
                    e.replace
                ));
            }
            let parts = parse(&e.name, &e.lines.join("\n"))?;
            let replace_parts = parse(&e.name, replace)
                .map_err(|why| format!("{} as a pattern: {why}", e.replace))?;
            // Every identifier the anchor captures is in its replacement, so a
            // patched file gives the anchor's text back (is_patched's proof).
            for p in &parts {
                if let Part::Placeholder(name) = p {
                    if !replace_parts
                        .iter()
                        .any(|r| matches!(r, Part::Placeholder(n) if n == name))
                    {
                        return Err(format!(
                            "{} does not use {{{{{name}}}}}, which anchor `{}` captures",
                            e.replace, e.name
                        ));
                    }
                }
            }
            for (_, _, name) in placeholders(replace) {
                if !parts
                    .iter()
                    .any(|p| matches!(p, Part::Placeholder(n) if n == name))
                {
                    return Err(format!(
                        "{} uses {{{{{name}}}}}, which anchor `{}` does not capture",
                        e.replace, e.name
                    ));
                }
            }
            anchors.push(Anchor {
                name: e.name.clone(),
                parts,
                replace: replace.to_string(),
                replace_parts,
            });
        }
        Ok(Anchors {
            marker: marker.to_string(),
            anchors,
        })
    }

    /// Each anchor's text against its replacement, as unified diffs (what
    /// `mcpatch diff` shows with no install).
    pub fn preview(&self) -> String {
        let mut out = String::new();
        for a in &self.anchors {
            let text: String = a
                .parts
                .iter()
                .map(|p| match p {
                    Part::Literal(l) => l.clone(),
                    Part::Placeholder(n) => format!("{{{{{n}}}}}"),
                })
                .collect();
            out.push_str(&format!("# anchor `{}`\n", a.name));
            out.push_str(
                &diffy::create_patch(&format!("{text}\n"), &format!("{}\n", a.replace)).to_string(),
            );
        }
        out
    }

    /// Whether `src` is proven patched: it holds every replacement exactly
    /// once, and with each anchor's text put back in their place the anchors
    /// patch it into `src` byte for byte.
    pub fn is_patched(&self, src: &str) -> bool {
        self.original_of(src).is_some()
    }

    /// The text these anchors patched into `src`, when `src` is proven
    /// patched by them (an earlier revision's anchors take themselves out).
    pub fn original_of(&self, src: &str) -> Option<String> {
        if !src.contains(self.marker.as_str()) {
            return None;
        }
        self.unpatched(src)
    }

    /// `src` with each replacement turned back into its anchor's text, when
    /// `src` is exactly what the anchors make of that text.
    fn unpatched(&self, src: &str) -> Option<String> {
        let mut hits = Vec::new();
        for a in &self.anchors {
            let mut found = find_all(src, &a.replace_parts);
            if found.len() != 1 {
                return None;
            }
            hits.push((a, found.remove(0)));
        }
        hits.sort_by_key(|(_, (start, _, _))| *start);
        if hits.windows(2).any(|w| w[1].1 .0 < w[0].1 .1) {
            return None;
        }
        let mut base = String::with_capacity(src.len());
        let mut last = 0;
        for (a, (start, end, captures)) in &hits {
            base.push_str(&src[last..*start]);
            for part in &a.parts {
                match part {
                    Part::Literal(l) => base.push_str(l),
                    Part::Placeholder(n) => base.push_str(captures.get(n)?),
                }
            }
            last = *end;
        }
        base.push_str(&src[last..]);
        (self.replace_all(&base).ok()? == src).then_some(base)
    }

    /// The first anchor that does not match `src` exactly once, if any.
    pub fn check(&self, src: &str) -> Result<(), Refused> {
        self.hits(src).map(|_| ())
    }

    fn hits<'a>(&'a self, src: &str) -> Result<Vec<(&'a Anchor, Hit)>, Refused> {
        let mut hits = Vec::new();
        for a in &self.anchors {
            let mut found = find_all(src, &a.parts);
            if found.len() != 1 {
                return Err(Refused::Count {
                    name: a.name.clone(),
                    count: found.len(),
                });
            }
            hits.push((a, found.remove(0)));
        }
        hits.sort_by_key(|(_, (start, _, _))| *start);
        for w in hits.windows(2) {
            if w[1].1 .0 < w[0].1 .1 {
                return Err(Refused::Overlap {
                    first: w[0].0.name.clone(),
                    second: w[1].0.name.clone(),
                });
            }
        }
        Ok(hits)
    }

    /// Patches `src`: every anchor matched against the original text, then all
    /// replaced at once. A text holding the marker is left alone.
    pub fn apply(&self, src: &str) -> Result<Applied, Refused> {
        if self.is_patched(src) {
            return Ok(Applied::AlreadyPatched);
        }
        self.replace_all(src).map(Applied::Patched)
    }

    /// Every anchor of `src` replaced by its fragment, all at once.
    fn replace_all(&self, src: &str) -> Result<String, Refused> {
        let hits = self.hits(src)?;
        let mut out = String::with_capacity(src.len() + 16 * 1024);
        let mut last = 0;
        for (a, (start, end, captures)) in hits {
            out.push_str(&src[last..start]);
            out.push_str(&substitute(&a.replace, &captures));
            last = end;
        }
        out.push_str(&src[last..]);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARK: &str = "(mcpatch: t)";

    fn anchors(list: &[(&str, &[&str], &str)]) -> Result<Anchors, String> {
        let entries: Vec<AnchorEntry> = list
            .iter()
            .map(|(name, lines, replace)| AnchorEntry {
                name: name.to_string(),
                lines: lines.iter().map(|l| l.to_string()).collect(),
                replace: format!("{name}.js"),
                replace_sha256: hex::encode(Sha256::digest(format!("{replace}\n").as_bytes())),
            })
            .collect();
        Anchors::load(IDENTIFIER, MARK, &entries, |file| {
            list.iter()
                .find(|(n, _, _)| format!("{n}.js") == file)
                .map(|(_, _, r)| format!("{r}\n"))
        })
    }

    #[test]
    fn placeholders_capture_whole_identifiers_and_are_substituted() {
        let a = anchors(&[(
            "a",
            &["var X = class {", "  s = {{S}}.D;"],
            &format!("var X = class {{\n  s = {{{{S}}}}.D; /* {MARK} */ t = {{{{S}}}}.C;"),
        )])
        .unwrap();
        assert_eq!(
            a.apply("var X = class {\n  s = Status2.D;\n}").unwrap(),
            Applied::Patched(format!(
                "var X = class {{\n  s = Status2.D; /* {MARK} */ t = Status2.C;\n}}"
            ))
        );
    }

    #[test]
    fn an_identifier_is_taken_whole_with_no_backtracking() {
        let parts = parse("a", "x {{A}}2;").unwrap();
        assert!(find_all("x abc2;", &parts).is_empty());
        assert!(find_all("x abc 2;", &parts).is_empty());
        assert_eq!(
            find_all("x abc;2;", &parse("a", "x {{A}};").unwrap()).len(),
            1
        );
    }

    #[test]
    fn a_name_used_twice_must_capture_the_same_identifier() {
        let parts = parse("a", "({{A}}, {{A}})").unwrap();
        assert_eq!(find_all("(a1, a1)", &parts).len(), 1);
        assert!(find_all("(a1, a2)", &parts).is_empty());
    }

    #[test]
    fn zero_or_several_matches_refuse_the_file_naming_the_anchor() {
        let a = anchors(&[
            ("first", &["f("], &format!("f( // {MARK}")),
            ("second", &["g({{A}})"], &format!("g({{{{A}}}}) // {MARK}")),
        ])
        .unwrap();
        let msg = |src: &str| a.apply(src).unwrap_err().to_string();
        assert_eq!(
            msg("f(g(1)"),
            "anchor `second` matched 0 times (expected exactly once)"
        );
        assert_eq!(
            msg("f( g(a) g(b)"),
            "anchor `second` matched 2 times (expected exactly once)"
        );
        assert_eq!(
            msg("g(a) f( f("),
            "anchor `first` matched 2 times (expected exactly once)"
        );
        // Overlapping occurrences count too.
        let b = anchors(&[("aa", &["aa"], &format!("aa{MARK}"))]).unwrap();
        assert_eq!(
            b.apply("aaa").unwrap_err().to_string(),
            "anchor `aa` matched 2 times (expected exactly once)"
        );
    }

    #[test]
    fn overlapping_anchors_are_refused() {
        let a = anchors(&[
            ("x", &["abc"], &format!("abc{MARK}")),
            ("y", &["bcd"], &format!("bcd{MARK}")),
        ])
        .unwrap();
        assert_eq!(
            a.apply("abcd").unwrap_err().to_string(),
            "anchors `x` and `y` overlap"
        );
    }

    #[test]
    fn a_file_holding_the_marker_is_already_patched_and_left_alone() {
        let a = anchors(&[("a", &["f();"], &format!("f(); // {MARK}"))]).unwrap();
        let Applied::Patched(once) = a.apply("f();\n").unwrap() else {
            panic!("not patched")
        };
        assert_eq!(once, format!("f(); // {MARK}\n"));
        assert_eq!(a.apply(&once).unwrap(), Applied::AlreadyPatched);
    }

    #[test]
    fn patched_is_proven_from_the_replacements_not_from_the_marker() {
        let a = anchors(&[
            ("a", &["f({{X}});"], &format!("f({{{{X}}}}); // {MARK}")),
            ("b", &["g();"], &format!("g(); h(); // {MARK}")),
        ])
        .unwrap();
        let src = "f(x1);\ng();\n";
        let Applied::Patched(once) = a.apply(src).unwrap() else {
            panic!("not patched")
        };
        assert!(a.is_patched(&once));
        assert_eq!(a.unpatched(&once).as_deref(), Some(src));
        // The marker in a comment of an unpatched text.
        let commented = format!("{src}/* {MARK} */\n");
        assert!(!a.is_patched(&commented));
        assert_eq!(
            a.apply(&commented).unwrap(),
            Applied::Patched(format!("{once}/* {MARK} */\n"))
        );
        // One replacement only, or one edited.
        assert!(!a.is_patched(&format!("f(x1); // {MARK}\ng();\n")));
        assert!(!a.is_patched(&once.replace("h();", "h(1);")));
        // A replacement twice.
        assert!(!a.is_patched(&format!("{once}{once}")));
    }

    #[test]
    fn bad_anchors_are_refused_when_the_manifest_is_read() {
        assert_eq!(
            parse("a", "{{A}} = 1").unwrap_err(),
            "anchor `a` must start and end with literal text"
        );
        assert_eq!(
            parse("a", "x {{A}}{{B}} y").unwrap_err(),
            "anchor `a`: two placeholders must be separated by literal text"
        );
        assert_eq!(
            parse("a", "x {{a}} y").unwrap_err(),
            "anchor `a`: bad placeholder {{a}}; use {{NAME}} with NAME in A-Z, 0-9, _"
        );
        assert_eq!(
            anchors(&[("a", &["x"], "no marker")]).unwrap_err(),
            "a.js does not contain the patch marker (mcpatch: t)"
        );
        assert_eq!(
            anchors(&[("a", &["x"], &format!("x {{{{B}}}} {MARK}"))]).unwrap_err(),
            "a.js uses {{B}}, which anchor `a` does not capture"
        );
    }

    /// The gemini-cli manifest's anchors, read from the source tree.
    fn gemini() -> Anchors {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("patches/gemini-cli");
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap())
                .unwrap();
        let entries: Vec<AnchorEntry> =
            serde_json::from_value(manifest["anchors"].clone()).unwrap();
        Anchors::load(
            manifest["placeholder"].as_str().unwrap(),
            manifest["patch_marker"].as_str().unwrap(),
            &entries,
            |f| std::fs::read_to_string(dir.join(f)).ok(),
        )
        .unwrap()
    }

    /// The proven releases' loaded chunks (in `.cache/gemini-cli`, fetched by
    /// scripts/fetch-fixtures.sh) give, byte for byte, the patched sha256 the
    /// manifest records (apply-anchors.mjs's outputs), and patch once only.
    #[test]
    fn the_proven_gemini_cli_releases_patch_to_the_recorded_sha256() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/gemini-cli");
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("patches/gemini-cli/manifest.json"),
            )
            .unwrap(),
        )
        .unwrap();
        let revisions = manifest["revisions"].as_array().unwrap();
        let a = gemini();
        let mut checked = 0;
        for original in revisions.iter().filter(|r| r["kind"] == "original") {
            let version = original["versions"][0].as_str().unwrap();
            let patched = revisions
                .iter()
                .find(|r| r["kind"] == "patched" && r["versions"][0] == version)
                .unwrap();
            let path = root
                .join(version)
                .join("lib/node_modules/@google/gemini-cli")
                .join(original["file"].as_str().unwrap());
            let src = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; run scripts/fetch-fixtures.sh (test-fixtures/gemini-cli/fetch.sh)",
                    path.display()
                )
            });
            assert_eq!(
                hex::encode(Sha256::digest(src.as_bytes())),
                original["sha256"].as_str().unwrap(),
                "{version}"
            );
            let Applied::Patched(out) = a.apply(&src).unwrap() else {
                panic!("{version} reported already patched")
            };
            assert_eq!(
                hex::encode(Sha256::digest(out.as_bytes())),
                patched["sha256"].as_str().unwrap(),
                "{version}"
            );
            assert_eq!(a.apply(&out).unwrap(), Applied::AlreadyPatched);
            checked += 1;
        }
        assert_eq!(checked, 5);
    }

    #[test]
    fn a_gemini_cli_chunk_without_an_anchor_is_refused_naming_it() {
        let a = gemini();
        let src = "var McpClient = class {\n  serverName;\n}";
        assert_eq!(
            a.apply(src).unwrap_err().to_string(),
            "anchor `mcp-client-fields` matched 0 times (expected exactly once)"
        );
    }
}
