//! npm's global root (`npm root -g`), worked out the way npm works it out,
//! without starting npm (a node program that costs a third of a second): the
//! same configuration layers in the same order, the same npmrc syntax, and the
//! same `${VAR}` and `~/` expansion of values.
//!
//! The layers, highest first: `npm_config_*` in the environment (any case),
//! the user config (`userconfig`, default `~/.npmrc`), the global config
//! (`globalconfig`, default `<prefix so far>/etc/npmrc`), npm's builtin config
//! (`<npm's own package>/npmrc`), then the default: `$PREFIX`, else the prefix
//! of the node that runs npm (`<prefix>/bin/node`, under `$DESTDIR` if set; on
//! Windows the folder holding node.exe). A project's `.npmrc` is not read in
//! global mode. The root is `<prefix>/lib/node_modules` (Windows:
//! `<prefix>/node_modules`).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::small_file;

/// Largest npmrc file read; larger ones are ignored and said so.
const MAX_NPMRC_BYTES: u64 = 1024 * 1024;

/// What the resolution reads from the machine.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    /// The whole environment, in order (a later duplicate wins, as in npm).
    pub vars: &'a [(OsString, OsString)],
    /// `$HOME`, for `~/` in values.
    pub home: Option<&'a Path>,
    /// The working folder, for relative values.
    pub cwd: &'a Path,
    /// The node found on PATH, links resolved (what node reports as `process.execPath`).
    pub node: Option<PathBuf>,
    /// npm's own package folder (the one holding its builtin `npmrc`), if npm is on PATH.
    pub npm_package: Option<PathBuf>,
    /// Windows layout: prefix is node's folder and packages go in `<prefix>/node_modules`.
    pub windows: bool,
}

/// npm's global package folder and where its prefix came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalRoot {
    pub root: PathBuf,
    /// For example "prefix in user config /home/me/.npmrc".
    pub source: String,
    /// Config files that exist but were not read, and why.
    pub notes: Vec<String>,
}

/// Why the global root could not be worked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// Nothing sets a prefix and there is no node on PATH to take it from.
    NoPrefix { notes: Vec<String> },
    /// The prefix is set to something that is not a path (npm itself stops on it).
    NotAPath {
        from: String,
        value: String,
        notes: Vec<String>,
    },
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let notes = match self {
            Unresolved::NoPrefix { notes } => {
                write!(
                    f,
                    "no `node` on PATH and no prefix set in the environment or npm's config files"
                )?;
                notes
            }
            Unresolved::NotAPath { from, value, notes } => {
                write!(
                    f,
                    "prefix {from} is {value}, not a path (npm stops on it too)"
                )?;
                notes
            }
        };
        for n in notes {
            write!(f, "; {n}")?;
        }
        Ok(())
    }
}

/// A config value as npm's ini parser leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Text(String),
    /// Anything but a string (a boolean, null, number, list or section), described.
    Other(String),
}

impl Value {
    /// JavaScript truthiness, as `out[section] || {}` in npm's ini parser tests it.
    fn truthy(&self) -> bool {
        match self {
            Value::Text(t) => !t.is_empty(),
            Value::Other(d) => !matches!(d.as_str(), "false" | "null" | "0"),
        }
    }
}

/// One setting and the words naming where it came from.
#[derive(Debug, Clone)]
struct Setting {
    value: Value,
    /// "from NPM_CONFIG_PREFIX", "in user config /home/me/.npmrc".
    from: String,
}

/// The settings of one layer that decide the global root.
#[derive(Debug, Default)]
struct Layer {
    prefix: Option<Setting>,
    userconfig: Option<Setting>,
    globalconfig: Option<Setting>,
    cache: Option<Setting>,
}

impl Layer {
    fn set(&mut self, key: &str, setting: Setting) {
        match key {
            "prefix" => self.prefix = Some(setting),
            "userconfig" => self.userconfig = Some(setting),
            "globalconfig" => self.globalconfig = Some(setting),
            "cache" => self.cache = Some(setting),
            _ => {}
        }
    }
}

struct Resolver<'a> {
    inputs: &'a Inputs<'a>,
    notes: Vec<String>,
}

/// Work out `npm root -g` for these inputs.
pub fn global_root(inputs: &Inputs) -> Result<GlobalRoot, Unresolved> {
    let mut r = Resolver {
        inputs,
        notes: Vec::new(),
    };
    let env = r.env_layer();
    let builtin = match &inputs.npm_package {
        Some(pkg) => r.file_layer(&pkg.join("npmrc"), "npm's builtin config"),
        None => Layer::default(),
    };
    let default = r.default_prefix();

    let userconfig = first([&env.userconfig, &builtin.userconfig])
        .cloned()
        .unwrap_or(Setting {
            value: Value::Text("~/.npmrc".into()),
            from: "by default".into(),
        });
    let user = match r.path_of(&userconfig) {
        Ok(path) => r.file_layer(&path, "user config"),
        Err(_) => r.ignored_setting("userconfig", &userconfig),
    };

    // The global config's default place follows the prefix known before it is read.
    let prefix_so_far = first([&env.prefix, &user.prefix, &builtin.prefix]).or(default.as_ref());
    let globalconfig = match first([&env.globalconfig, &user.globalconfig, &builtin.globalconfig]) {
        Some(s) => match r.path_of(s) {
            Ok(path) => Some(path),
            Err(s) => {
                r.ignored_setting("globalconfig", s);
                None
            }
        },
        None => match prefix_so_far {
            Some(p) => Some(r.path_of(p).map_err(|e| r.not_a_path(e))?.join("etc/npmrc")),
            None => None,
        },
    };
    let global = match globalconfig {
        Some(path) => r.file_layer(&path, "global config"),
        None => Layer::default(),
    };

    let Some(prefix) =
        first([&env.prefix, &user.prefix, &global.prefix, &builtin.prefix]).or(default.as_ref())
    else {
        return Err(Unresolved::NoPrefix { notes: r.notes });
    };
    let dir = r.path_of(prefix).map_err(|e| r.not_a_path(e))?;
    let root = if inputs.windows {
        dir.join("node_modules")
    } else {
        dir.join("lib").join("node_modules")
    };
    Ok(GlobalRoot {
        root,
        source: format!("prefix {}", prefix.from),
        notes: r.notes,
    })
}

/// npm's cache folder (where npx keeps `_npx`) and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheDir {
    pub dir: PathBuf,
    /// For example "cache from npm_config_cache", "default cache".
    pub source: String,
}

/// Work out npm's `cache` setting for these inputs: `npm_config_cache`, the
/// user config, npm's builtin config, else `~/.npm` (Windows:
/// `%LocalAppData%/npm-cache`). None when no layer sets a path and there is
/// no home folder.
pub fn cache_dir(inputs: &Inputs) -> Option<CacheDir> {
    let mut r = Resolver {
        inputs,
        notes: Vec::new(),
    };
    let env = r.env_layer();
    let builtin = match &inputs.npm_package {
        Some(pkg) => r.file_layer(&pkg.join("npmrc"), "npm's builtin config"),
        None => Layer::default(),
    };
    let userconfig = first([&env.userconfig, &builtin.userconfig])
        .cloned()
        .unwrap_or(Setting {
            value: Value::Text("~/.npmrc".into()),
            from: "by default".into(),
        });
    let user = match r.path_of(&userconfig) {
        Ok(path) => r.file_layer(&path, "user config"),
        Err(_) => Layer::default(),
    };
    if let Some(set) = first([&env.cache, &user.cache, &builtin.cache]) {
        if let Ok(dir) = r.path_of(set) {
            return Some(CacheDir {
                dir,
                source: format!("cache {}", set.from),
            });
        }
    }
    let dir = if inputs.windows {
        PathBuf::from(r.var("LocalAppData").filter(|v| !v.is_empty())?).join("npm-cache")
    } else {
        inputs.home?.join(".npm")
    };
    Some(CacheDir {
        dir,
        source: "default cache".into(),
    })
}

fn first<const N: usize>(settings: [&Option<Setting>; N]) -> Option<&Setting> {
    settings.into_iter().flatten().next()
}

impl Resolver<'_> {
    /// A variable as npm sees it (`process.env[name]`, which is getenv: the first of that name).
    fn var(&self, name: &str) -> Option<String> {
        self.inputs
            .vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    }

    /// `npm_config_<key>` variables, any case, empty ones skipped; `_` inside the key is `-`.
    fn env_layer(&self) -> Layer {
        let mut layer = Layer::default();
        for (name, value) in self.inputs.vars {
            let name = name.to_string_lossy();
            let value = value.to_string_lossy();
            let Some(head) = name.get(..11) else {
                continue;
            };
            if !head.eq_ignore_ascii_case("npm_config_") || value.is_empty() {
                continue;
            }
            let rest = &name[11..];
            let key = if rest.starts_with("//") {
                rest.to_string()
            } else {
                let mut k = String::new();
                for (i, c) in rest.chars().enumerate() {
                    k.push(if c == '_' && i > 0 { '-' } else { c });
                }
                k.to_lowercase()
            };
            let key = env_replace(&key, |n| self.var(n));
            layer.set(
                &key,
                Setting {
                    value: Value::Text(value.into_owned()),
                    from: format!("from {name}"),
                },
            );
        }
        layer
    }

    /// One npmrc file; a missing one is an empty layer, an unreadable one is noted.
    fn file_layer(&mut self, path: &Path, what: &str) -> Layer {
        let mut layer = Layer::default();
        let text = match small_file::read_capped(path, MAX_NPMRC_BYTES) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(small_file::Refused::Missing) => return layer,
            Err(why) => {
                self.notes
                    .push(format!("ignored {what} {}: {why}", path.display()));
                return layer;
            }
        };
        for (key, value) in parse_ini(&text) {
            let key = env_replace(&key, |n| self.var(n));
            layer.set(
                &key,
                Setting {
                    value,
                    from: format!("in {what} {}", path.display()),
                },
            );
        }
        layer
    }

    /// `$PREFIX`, else the prefix of node on PATH (under `$DESTDIR`).
    fn default_prefix(&self) -> Option<Setting> {
        if let Some(p) = self.var("PREFIX").filter(|p| !p.is_empty()) {
            return Some(Setting {
                value: Value::Text(p),
                from: "from PREFIX".into(),
            });
        }
        let node = self.inputs.node.as_ref()?;
        let (dir, mut from) = if self.inputs.windows {
            (
                node.parent()?.to_path_buf(),
                format!("of `node` on PATH ({})", node.display()),
            )
        } else {
            (
                node.parent()?.parent()?.to_path_buf(),
                format!("of `node` on PATH ({})", node.display()),
            )
        };
        let mut dir = dir.to_string_lossy().into_owned();
        if !self.inputs.windows {
            if let Some(destdir) = self.var("DESTDIR").filter(|d| !d.is_empty()) {
                dir = normalize(&Path::new(&destdir).join(dir.trim_start_matches('/')))
                    .to_string_lossy()
                    .into_owned();
                from.push_str(&format!(" under DESTDIR {destdir}"));
            }
        }
        Some(Setting {
            value: Value::Text(dir),
            from,
        })
    }

    /// A path-typed value as npm parses it: trimmed, `${VAR}` replaced, a
    /// leading `~/` under HOME, anything else resolved against the working folder.
    fn path_of<'s>(&self, s: &'s Setting) -> Result<PathBuf, &'s Setting> {
        let Value::Text(text) = &s.value else {
            return Err(s);
        };
        let text = env_replace(js_trim(text), |n| self.var(n));
        match (text.strip_prefix("~/"), self.inputs.home) {
            (Some(rest), Some(home)) => Ok(normalize(&home.join(rest))),
            _ => Ok(normalize(&self.inputs.cwd.join(&text))),
        }
    }

    fn not_a_path(&self, s: &Setting) -> Unresolved {
        let value = match &s.value {
            Value::Text(t) => t.clone(),
            Value::Other(d) => d.clone(),
        };
        Unresolved::NotAPath {
            from: s.from.clone(),
            value,
            notes: self.notes.clone(),
        }
    }

    fn ignored_setting(&mut self, key: &str, s: &Setting) -> Layer {
        let what = match &s.value {
            Value::Text(t) => t.clone(),
            Value::Other(d) => d.clone(),
        };
        self.notes
            .push(format!("ignored {key} {} ({what}): not a path", s.from));
        Layer::default()
    }
}

/// Lexical normalisation as node's `path.resolve` does it: `.` dropped, `..`
/// taken back, repeated and trailing separators gone.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whitespace as JavaScript's `trim()` and `\s` know it (including U+FEFF, a byte-order mark).
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

fn js_trim(s: &str) -> &str {
    s.trim_matches(js_space)
}

/// npm's `${VAR}` replacement: `${VAR}` becomes the variable's value (left
/// as written when unset), `${VAR?}` becomes empty when unset, and an odd run
/// of backslashes before `$` escapes it; each pair of backslashes is one.
fn env_replace(text: &str, var: impl Fn(&str) -> Option<String>) -> String {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if !(bytes[i] == b'$' && bytes[i + 1] == b'{') {
            i += 1;
            continue;
        }
        let name_start = i + 2;
        let name_end = text[name_start..]
            .find(['$', '{', '}', '?'])
            .map(|n| name_start + n)
            .unwrap_or(bytes.len());
        let optional = bytes.get(name_end) == Some(&b'?');
        let close = name_end + usize::from(optional);
        if name_end == name_start || bytes.get(close) != Some(&b'}') {
            i += 1;
            continue;
        }
        let mut esc_start = i;
        while esc_start > copied && bytes[esc_start - 1] == b'\\' {
            esc_start -= 1;
        }
        let escapes = i - esc_start;
        out.push_str(&text[copied..esc_start]);
        let name = &text[name_start..name_end];
        if escapes % 2 == 1 {
            out.push_str(&"\\".repeat(escapes / 2));
            out.push_str(&text[i..=close]);
        } else {
            out.push_str(&"\\".repeat(escapes / 2));
            match var(name) {
                Some(v) => out.push_str(&v),
                None if optional => {}
                None => out.push_str(&format!("${{{name}}}")),
            }
        }
        i = close + 1;
        copied = i;
    }
    out.push_str(&text[copied..]);
    out
}

/// The top-level keys of an npmrc as npm's ini parser (ini 4-5) leaves them,
/// in its key order: quoted values, `;`/`#` comments, `key[]` lists, `true`,
/// `false` and `null`, and sections that turn a top-level key into an object.
fn parse_ini(text: &str) -> Vec<(String, Value)> {
    let mut top: Vec<(String, Value)> = Vec::new();
    let mut sections: Vec<String> = Vec::new();
    let mut in_section = false;
    fn set(top: &mut Vec<(String, Value)>, key: &str, value: Value) {
        match top.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => top.push((key.to_string(), value)),
        }
    }
    for line in text.split(['\r', '\n']) {
        let first = line.trim_start_matches(js_space);
        if first.is_empty() || first.starts_with([';', '#']) {
            continue;
        }
        if let Some(name) = line
            .strip_prefix('[')
            .and_then(|rest| rest.trim_end_matches(js_space).strip_suffix(']'))
            .filter(|name| !name.contains(']'))
        {
            in_section = true;
            let Value::Text(name) = unsafe_value(name) else {
                continue;
            };
            if name == "__proto__" {
                continue;
            }
            let existing = top.iter().find(|(k, _)| *k == name).map(|(_, v)| v);
            if !existing.is_some_and(Value::truthy) {
                set(&mut top, &name, Value::Other("a section".into()));
                sections.push(name);
            }
            continue;
        }
        let (key_raw, value_raw) = match line.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (line, None),
        };
        // `(.*)` does not cross U+2028/U+2029: such a line matches nothing.
        if value_raw.is_some_and(|v| v.contains(['\u{2028}', '\u{2029}'])) {
            continue;
        }
        if in_section {
            continue;
        }
        let key = match unsafe_value(key_raw) {
            Value::Text(t) => t,
            Value::Other(d) => d,
        };
        let is_list = key.len() > 2 && key.ends_with("[]");
        let key = if is_list { &key[..key.len() - 2] } else { &key };
        if key == "__proto__" {
            continue;
        }
        let value = match value_raw.map(unsafe_value) {
            None => Value::Other("true".into()),
            Some(Value::Text(t)) if matches!(t.as_str(), "true" | "false" | "null") => {
                Value::Other(t)
            }
            Some(v) => v,
        };
        let already_list = top
            .iter()
            .any(|(k, v)| k == key && *v == Value::Other("a list".into()));
        if is_list || already_list {
            set(&mut top, key, Value::Other("a list".into()));
        } else {
            set(&mut top, key, value);
        }
    }
    // `[a.b]` nests under `a`, turning a top-level `a` into an object. (ini
    // does not split at a dot escaped with `\`, but the part before such a
    // dot ends with `\` and so is never a key read here: a plain split does.)
    for name in sections {
        let parts: Vec<&str> = name.split('.').collect();
        if parts.len() < 2 {
            continue;
        }
        if let Some(head) = parts[..parts.len() - 1].iter().find(|p| **p != "__proto__") {
            // `typeof x === 'object'` holds for sections, lists and null alike.
            let is_object = top.iter().any(|(k, v)| {
                k == head
                    && matches!(v, Value::Other(d) if matches!(d.as_str(), "a section" | "a list" | "an object" | "null"))
            });
            if !is_object {
                set(&mut top, head, Value::Other("a section".into()));
            }
        }
        top.retain(|(k, _)| *k != name);
    }
    top
}

/// ini's `unsafe`: trim; a value quoted with `"` or `'` is JSON-decoded
/// (single quotes stripped first; left as is when that fails); otherwise
/// cut at the first `;` or `#` not escaped with `\`.
fn unsafe_value(raw: &str) -> Value {
    let val = js_trim(raw);
    let quoted = (val.starts_with('"') && val.ends_with('"'))
        || (val.starts_with('\'') && val.ends_with('\''));
    if quoted {
        let inner = if val.starts_with('\'') {
            val.get(1..val.len().saturating_sub(1)).unwrap_or("")
        } else {
            val
        };
        return match serde_json::from_str::<serde_json::Value>(inner) {
            Ok(serde_json::Value::String(s)) => Value::Text(s),
            Ok(serde_json::Value::Array(_)) => Value::Other("a list".into()),
            Ok(serde_json::Value::Object(_)) => Value::Other("an object".into()),
            Ok(other) => Value::Other(other.to_string()),
            Err(_) => Value::Text(inner.to_string()),
        };
    }
    let mut out = String::new();
    let mut esc = false;
    for c in val.chars() {
        if esc {
            if !matches!(c, '\\' | ';' | '#') {
                out.push('\\');
            }
            out.push(c);
            esc = false;
        } else if c == ';' || c == '#' {
            break;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    if esc {
        out.push('\\');
    }
    Value::Text(js_trim(&out).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn top(text: &str) -> Vec<(String, Value)> {
        parse_ini(text)
    }

    fn text(s: &str) -> Value {
        Value::Text(s.into())
    }

    fn other(s: &str) -> Value {
        Value::Other(s.into())
    }

    #[test]
    fn ini_values_are_read_as_npm_reads_them() {
        for (file, want) in [
            ("prefix=/a", text("/a")),
            ("  prefix  =  /a  ", text("/a")),
            ("prefix = /a ; comment", text("/a")),
            ("prefix = /a # comment", text("/a")),
            ("prefix = /a\\;b", text("/a;b")),
            ("prefix = /a\\qb", text("/a\\qb")),
            ("prefix = /a\\", text("/a\\")),
            ("prefix = \"/q a\"", text("/q a")),
            ("prefix = \"/q a\" ; c", text("\"/q a\"")),
            ("prefix = '/s'", text("/s")),
            ("prefix = '\"/j\"'", text("/j")),
            ("prefix = '", text("")),
            ("prefix = \"", text("\"")),
            ("prefix = \"\\u0041\"", text("A")),
            ("prefix = '123'", other("123")),
            ("prefix = \"true\"", other("true")),
            ("prefix = null", other("null")),
            ("prefix", other("true")),
            ("prefix=", text("")),
            ("prefix[]=/a", other("a list")),
            ("prefix=/a\nprefix[]=/b", other("a list")),
            ("prefix[]=/a\nprefix=/b", other("a list")),
            ("\u{FEFF}prefix=/bom", text("/bom")),
            ("prefix=/a=b", text("/a=b")),
            ("prefix=/first\r\nprefix=/second", text("/second")),
            ("[prefix]\na=1", other("a section")),
            ("prefix=/x\n[prefix]\na=1", text("/x")),
            ("prefix=\n[prefix]\na=1", other("a section")),
            ("prefix=/x\n[prefix.y]\na=1", other("a section")),
            ("prefix=/x\n[prefix\\.y]\na=1", text("/x")),
        ] {
            let got: Vec<_> = top(file)
                .into_iter()
                .filter(|(k, _)| k == "prefix")
                .collect();
            assert_eq!(got, vec![("prefix".to_string(), want)], "{file:?}");
        }
        for file in [
            "; prefix=/a",
            "  # prefix=/a",
            "[s]\nprefix=/a",
            "=x",
            "prefix=/a\u{2028}b",
            "  [s]\nprefix=/a",
        ] {
            let got: Vec<_> = top(file)
                .into_iter()
                .filter(|(k, v)| k == "prefix" && *v == text("/a"))
                .collect();
            if file.starts_with("  [s]") {
                // An indented header is a key, not a section: prefix stays top-level.
                assert_eq!(got.len(), 1, "{file:?}");
            } else {
                assert!(got.is_empty(), "{file:?}: {got:?}");
            }
        }
    }

    #[test]
    fn env_replace_follows_npm() {
        let env = |n: &str| match n {
            "A" => Some("x".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        for (input, want) in [
            ("${A}", "x"),
            ("/p/${A}/q", "/p/x/q"),
            ("${NOPE}", "${NOPE}"),
            ("${NOPE?}", ""),
            ("${EMPTY}", ""),
            ("${A?}", "x"),
            ("\\${A}", "${A}"),
            ("\\\\${A}", "\\x"),
            ("\\\\\\${A}", "\\${A}"),
            ("${}", "${}"),
            ("${A", "${A"),
            ("$A", "$A"),
            ("${A${A}}", "${Ax}"),
            ("${A}${A}", "xx"),
            ("é${A}é", "éxé"),
        ] {
            assert_eq!(env_replace(input, env), want, "{input:?}");
        }
    }

    #[test]
    fn windows_layout_puts_packages_beside_node() {
        let cwd = PathBuf::from("/w");
        let inputs = Inputs {
            vars: &[],
            home: None,
            cwd: &cwd,
            node: Some(PathBuf::from("/n/nodejs/node.exe")),
            npm_package: None,
            windows: true,
        };
        assert_eq!(
            global_root(&inputs).unwrap().root,
            PathBuf::from("/n/nodejs/node_modules")
        );
        let unix = Inputs {
            windows: false,
            node: Some(PathBuf::from("/n/bin/node")),
            ..inputs
        };
        assert_eq!(
            global_root(&unix).unwrap().root,
            PathBuf::from("/n/lib/node_modules")
        );
    }

    #[test]
    fn destdir_and_prefix_variables_set_the_default() {
        let cwd = PathBuf::from("/w");
        let env = vars(&[("DESTDIR", "/stage")]);
        let mut inputs = Inputs {
            vars: &env,
            home: None,
            cwd: &cwd,
            node: Some(PathBuf::from("/usr/bin/node")),
            npm_package: None,
            windows: false,
        };
        let r = global_root(&inputs).unwrap();
        assert_eq!(r.root, PathBuf::from("/stage/usr/lib/node_modules"));
        assert_eq!(
            r.source,
            "prefix of `node` on PATH (/usr/bin/node) under DESTDIR /stage"
        );
        let env = vars(&[("PREFIX", "/termux/usr")]);
        inputs.vars = &env;
        inputs.node = None;
        let r = global_root(&inputs).unwrap();
        assert_eq!(r.root, PathBuf::from("/termux/usr/lib/node_modules"));
        assert_eq!(r.source, "prefix from PREFIX");
    }

    #[test]
    fn nothing_to_go_on_is_said() {
        let cwd = PathBuf::from("/w");
        let inputs = Inputs {
            vars: &[],
            home: None,
            cwd: &cwd,
            node: None,
            npm_package: None,
            windows: false,
        };
        let err = global_root(&inputs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no `node` on PATH and no prefix set in the environment or npm's config files"
        );
    }
}
