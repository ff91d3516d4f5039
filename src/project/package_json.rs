//! Edits a project's package.json the way a person would: one string set
//! (a script, a pnpm patch entry) and every other byte left as it was (the
//! order of keys, the indentation, the line ends, a byte order mark). The
//! result is parsed again and compared with the intended change before
//! anyone writes it.

use serde_json::Value;

/// Why package.json could not be edited.
#[derive(Debug, PartialEq, Eq)]
pub enum EditError {
    /// It is not JSON, or not an object at the top.
    NotJson(String),
    /// A key on the way is there but holds no object (`"scripts": 1`).
    NotAnObject(String),
    /// The value to change is there but is no string.
    NotAString(String),
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::NotJson(why) => write!(f, "it is not a JSON object ({why})"),
            EditError::NotAnObject(key) => write!(f, "its `{key}` is not an object"),
            EditError::NotAString(key) => write!(f, "its `{key}` is not a string"),
        }
    }
}

/// One `"key": value` of an object, as byte offsets into the text.
struct Member {
    key: String,
    value_start: usize,
    value_end: usize,
}

/// The string at `path` (keys from the top object), if it is there and a string.
pub fn get_string<'a>(doc: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(doc, |v, key| v.get(key))
        .and_then(Value::as_str)
}

/// `text` with the string at `path` set to `make(current)`, the objects on the
/// way made when missing (each as the last key of its parent).
pub fn set_string(
    text: &str,
    path: &[&str],
    make: impl Fn(Option<&str>) -> String,
) -> Result<String, EditError> {
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    let before: Value =
        serde_json::from_str(body).map_err(|e| EditError::NotJson(e.to_string()))?;
    if !before.is_object() {
        return Err(EditError::NotJson("the top is no object".into()));
    }
    let current = match path.iter().try_fold(&before, |v, key| v.get(key)) {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(EditError::NotAString(path.join("."))),
        None => None,
    };
    let value = make(current);
    let style = Style::of(body);
    let open = skip_ws(body, 0);
    let edited = edit(body, open, 1, path, &value, &style)?;
    // What the edit must mean: the same document with that one string set.
    let mut expected = before.clone();
    let mut at = &mut expected;
    for key in &path[..path.len() - 1] {
        let Some(object) = at.as_object_mut() else {
            return Err(EditError::NotAnObject((*key).into()));
        };
        at = object
            .entry((*key).to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    let Some(object) = at.as_object_mut() else {
        return Err(EditError::NotAnObject(path[..path.len() - 1].join(".")));
    };
    object.insert(path[path.len() - 1].to_string(), Value::String(value));
    let after: Value =
        serde_json::from_str(&edited).map_err(|e| EditError::NotJson(e.to_string()))?;
    if after != expected {
        // A key given twice, or a layout this editor misread: nothing is written.
        return Err(EditError::NotJson(format!(
            "`{}` could not be set without touching the rest (is a key there twice?)",
            path.join(".")
        )));
    }
    Ok(format!("{bom}{edited}"))
}

/// The file's own layout: its line end and one level of indentation ("" and
/// "" for a file on one line).
struct Style {
    newline: &'static str,
    unit: String,
}

impl Style {
    fn of(text: &str) -> Style {
        // The whitespace before the first key of the top object: a file whose
        // top object opens on a line of its own is laid out one key a line.
        let open = skip_ws(text, 0);
        let first = skip_ws(text, open + 1);
        let gap = &text[open + 1..first];
        let Some(n) = gap.rfind('\n') else {
            return Style {
                newline: "",
                unit: String::new(),
            };
        };
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let unit = match &gap[n + 1..] {
            "" => "  ".to_string(),
            unit => unit.to_string(),
        };
        Style { newline, unit }
    }

    fn indent(&self, depth: usize) -> String {
        if self.newline.is_empty() {
            return String::new();
        }
        self.unit.repeat(depth)
    }

    /// Between a value and the next key: a comma and a new line, or ", ".
    fn comma(&self, depth: usize) -> String {
        if self.newline.is_empty() {
            ", ".to_string()
        } else {
            format!(",{}{}", self.newline, self.indent(depth))
        }
    }

    /// `path`'s last key with `value`, in the objects made for the keys
    /// before it, as the text of one member at `depth`.
    fn member(&self, path: &[&str], value: &str, depth: usize) -> String {
        let key = Value::String(path[0].to_string()).to_string();
        if path.len() == 1 {
            return format!("{key}: {}", Value::String(value.to_string()));
        }
        let inner = self.member(&path[1..], value, depth + 1);
        if self.newline.is_empty() {
            return format!("{key}: {{ {inner} }}");
        }
        format!(
            "{key}: {{{nl}{}{inner}{nl}{}}}",
            self.indent(depth + 1),
            self.indent(depth),
            nl = self.newline
        )
    }
}

/// Set `path` in the object that opens at `open` (its members at `depth`).
fn edit(
    text: &str,
    open: usize,
    depth: usize,
    path: &[&str],
    value: &str,
    style: &Style,
) -> Result<String, EditError> {
    let (members, close) = members(text, open)?;
    let Some(found) = members.iter().find(|m| m.key == path[0]) else {
        // Added as the last member of this object.
        let member = style.member(path, value, depth);
        return Ok(match members.last() {
            Some(last) => format!(
                "{}{}{member}{}",
                &text[..last.value_end],
                style.comma(depth),
                &text[last.value_end..]
            ),
            None if style.newline.is_empty() => {
                format!("{}{{ {member} }}{}", &text[..open], &text[close + 1..])
            }
            None => format!(
                "{}{{{nl}{}{member}{nl}{}}}{}",
                &text[..open],
                style.indent(depth),
                style.indent(depth - 1),
                &text[close + 1..],
                nl = style.newline
            ),
        });
    };
    if path.len() == 1 {
        let quoted = Value::String(value.to_string()).to_string();
        return Ok(format!(
            "{}{quoted}{}",
            &text[..found.value_start],
            &text[found.value_end..]
        ));
    }
    if text.as_bytes()[found.value_start] != b'{' {
        return Err(EditError::NotAnObject(path[0].into()));
    }
    edit(text, found.value_start, depth + 1, &path[1..], value, style)
}

/// The members of the object whose `{` is at `open`, and where its `}` is.
fn members(text: &str, open: usize) -> Result<(Vec<Member>, usize), EditError> {
    let bytes = text.as_bytes();
    let bad = |at: usize| EditError::NotJson(format!("unexpected text at byte {at}"));
    if bytes.get(open) != Some(&b'{') {
        return Err(bad(open));
    }
    let mut list = Vec::new();
    let mut i = skip_ws(text, open + 1);
    if bytes.get(i) == Some(&b'}') {
        return Ok((list, i));
    }
    loop {
        let key_end = string_end(text, i).ok_or_else(|| bad(i))?;
        let key: String = serde_json::from_str(&text[i..key_end]).map_err(|_| bad(i))?;
        i = skip_ws(text, key_end);
        if bytes.get(i) != Some(&b':') {
            return Err(bad(i));
        }
        let value_start = skip_ws(text, i + 1);
        let value_end = value_end(text, value_start).ok_or_else(|| bad(value_start))?;
        list.push(Member {
            key,
            value_start,
            value_end,
        });
        i = skip_ws(text, value_end);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(text, i + 1),
            Some(b'}') => return Ok((list, i)),
            _ => return Err(bad(i)),
        }
    }
}

fn skip_ws(text: &str, mut i: usize) -> usize {
    let bytes = text.as_bytes();
    while matches!(bytes.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Where the string that opens at `i` ends (after its closing quote).
fn string_end(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match bytes.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// Where the value that starts at `i` ends.
fn value_end(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    match bytes.get(i)? {
        b'"' => string_end(text, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match bytes.get(j)? {
                    b'"' => {
                        j = string_end(text, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while !matches!(
                bytes.get(j),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "mcpatch apply --quiet --path .";

    fn chain(old: Option<&str>) -> String {
        match old {
            Some(old) => format!("{old} && {LINE}"),
            None => LINE.to_string(),
        }
    }

    #[test]
    fn an_existing_postinstall_is_chained_and_nothing_else_moves() {
        let text = "{\n    \"name\": \"a\",\n    \"scripts\": {\n        \"test\": \"jest\",\n        \"postinstall\": \"patch-package\"\n    },\n    \"b\": [1, {\"c\": \"}\"}]\n}\n";
        let out = set_string(text, &["scripts", "postinstall"], chain).unwrap();
        assert_eq!(
            out,
            text.replace("\"patch-package\"", &format!("\"patch-package && {LINE}\""))
        );
    }

    #[test]
    fn a_missing_postinstall_goes_last_in_scripts_with_the_files_indent() {
        let text = "{\n\t\"name\": \"a\",\n\t\"scripts\": {\n\t\t\"test\": \"jest\"\n\t}\n}";
        let out = set_string(text, &["scripts", "postinstall"], chain).unwrap();
        assert_eq!(
            out,
            format!("{{\n\t\"name\": \"a\",\n\t\"scripts\": {{\n\t\t\"test\": \"jest\",\n\t\t\"postinstall\": \"{LINE}\"\n\t}}\n}}")
        );
    }

    #[test]
    fn missing_objects_are_made_last_with_crlf_kept() {
        let text = "{\r\n  \"name\": \"a\"\r\n}\r\n";
        let out = set_string(text, &["pnpm", "patchedDependencies", "x@1.0.0"], |_| {
            "patches/x@1.0.0.patch".into()
        })
        .unwrap();
        assert_eq!(
            out,
            "{\r\n  \"name\": \"a\",\r\n  \"pnpm\": {\r\n    \"patchedDependencies\": {\r\n      \"x@1.0.0\": \"patches/x@1.0.0.patch\"\r\n    }\r\n  }\r\n}\r\n"
        );
    }

    #[test]
    fn empty_objects_and_one_line_files_and_a_bom() {
        let out = set_string(
            "{\n  \"scripts\": {}\n}\n",
            &["scripts", "postinstall"],
            chain,
        )
        .unwrap();
        assert_eq!(
            out,
            format!("{{\n  \"scripts\": {{\n    \"postinstall\": \"{LINE}\"\n  }}\n}}\n")
        );
        let out = set_string(
            "\u{feff}{\"name\":\"a\"}",
            &["scripts", "postinstall"],
            chain,
        )
        .unwrap();
        assert_eq!(
            out,
            format!("\u{feff}{{\"name\":\"a\", \"scripts\": {{ \"postinstall\": \"{LINE}\" }}}}")
        );
        let out = set_string("{\"name\":\"x\"}\n", &["scripts", "postinstall"], chain).unwrap();
        assert_eq!(
            out,
            format!("{{\"name\":\"x\", \"scripts\": {{ \"postinstall\": \"{LINE}\" }}}}\n")
        );
        let out = set_string("{\n}\n", &["scripts", "postinstall"], chain).unwrap();
        assert_eq!(
            out,
            format!("{{\n  \"scripts\": {{\n    \"postinstall\": \"{LINE}\"\n  }}\n}}\n")
        );
        let out = set_string("{}", &["scripts", "postinstall"], chain).unwrap();
        assert_eq!(
            out,
            format!("{{ \"scripts\": {{ \"postinstall\": \"{LINE}\" }} }}")
        );
    }

    #[test]
    fn strings_with_quotes_and_escapes_are_written_as_json() {
        let text = "{\"scripts\": {\"postinstall\": \"echo \\\"hi\\\"\"}}";
        let out = set_string(text, &["scripts", "postinstall"], chain).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["scripts"]["postinstall"],
            format!("echo \"hi\" && {LINE}")
        );
    }

    #[test]
    fn what_cannot_be_edited_is_refused() {
        assert!(matches!(
            set_string("[1]", &["scripts", "postinstall"], chain),
            Err(EditError::NotJson(_))
        ));
        assert!(matches!(
            set_string("{\"a\":", &["scripts", "postinstall"], chain),
            Err(EditError::NotJson(_))
        ));
        assert_eq!(
            set_string("{\"scripts\": 1}", &["scripts", "postinstall"], chain),
            Err(EditError::NotAnObject("scripts".into()))
        );
        assert_eq!(
            set_string(
                "{\"scripts\": {\"postinstall\": 2}}",
                &["scripts", "postinstall"],
                chain
            ),
            Err(EditError::NotAString("scripts.postinstall".into()))
        );
        // A key given twice: the edit would not mean what it says.
        assert!(matches!(
            set_string(
                "{\"scripts\": {\"postinstall\": \"a\"}, \"scripts\": {}}",
                &["scripts", "postinstall"],
                chain
            ),
            Err(EditError::NotJson(_))
        ));
    }
}
