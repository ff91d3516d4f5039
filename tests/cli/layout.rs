//! The shape of the code: no import circles between modules of src/, and no
//! file of src/ or tests/ over about 1,000 lines of code (issue 32). The
//! module graph is read from the source text: a module depends on every
//! module it names as `crate::a::b`, `crate::{a, b}`, `super::a` or
//! `super::{a, b}` before its `#[cfg(test)]` (doc links included: they name
//! what a reader must know first); a module naming its own ancestor or
//! descendant does not count (that is how Rust nests modules).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Most lines of code (not blank, not a comment, before `#[cfg(test)]`) one
/// file of src/ or tests/ may hold.
const MAX_LINES_OF_CODE: usize = 1000;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| {
            e.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path()
        })
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            files.push(path);
        }
    }
    files
}

/// The file's path below src/, with `/` between parts.
fn relative(file: &Path) -> String {
    let rel = file.strip_prefix(src()).unwrap_or(file);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The module a file of src/ is: `verify::scenario` for
/// `verify/scenario.rs` and `verify` for `verify/mod.rs`; `crate` for
/// `lib.rs` and `main.rs`.
fn module_of(relative: &str) -> String {
    let path = relative.strip_suffix(".rs").unwrap_or(relative);
    let path = path.strip_suffix("/mod").unwrap_or(path);
    if path == "lib" || path == "main" {
        return "crate".to_string();
    }
    path.replace('/', "::")
}

/// A file's text before its first `#[cfg(test)]`: the code that ships.
fn shipped(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// Each module of src/ and its shipped text.
fn modules() -> BTreeMap<String, String> {
    let files = rust_files(&src());
    assert!(
        !files.is_empty(),
        "no .rs file found below {}",
        src().display()
    );
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
            (module_of(&relative(f)), shipped(&text).to_string())
        })
        .collect()
}

/// Whether `b` is `a`'s ancestor (`crate` is everyone's).
fn is_ancestor(a: &str, b: &str) -> bool {
    b == "crate" || a.starts_with(&format!("{b}::"))
}

/// The longest module that `path` (`a::b::Item`) starts with, below `base`
/// (empty: the crate root), if any.
fn resolve(path: &str, base: &str, names: &BTreeSet<String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").map(str::trim).collect();
    (1..=parts.len()).rev().find_map(|n| {
        let tail = parts[..n].join("::");
        let candidate = if base.is_empty() {
            tail
        } else {
            format!("{base}::{tail}")
        };
        names.contains(&candidate).then_some(candidate)
    })
}

/// The modules `module`'s text names, ancestors and descendants left out.
fn dependencies(module: &str, text: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let parent = module.rsplit_once("::").map_or("crate", |(p, _)| p);
    let super_base = if parent == "crate" { "" } else { parent };
    let word = regex::Regex::new(r"(crate|super)::([a-z_:]+)").expect("a valid pattern");
    let group = regex::Regex::new(r"(crate|super)::\{([^}]*)\}").expect("a valid pattern");
    let mut deps = BTreeSet::new();
    for c in word.captures_iter(text) {
        match &c[1] {
            "crate" => deps.extend(resolve(&c[2], "", names)),
            _ => match resolve(&c[2], super_base, names) {
                Some(m) => {
                    deps.insert(m);
                }
                None if names.contains(parent) => {
                    deps.insert(parent.to_string());
                }
                None => {}
            },
        }
    }
    for c in group.captures_iter(text) {
        let base = if &c[1] == "crate" { "" } else { super_base };
        for item in c[2].split([',', ' ', '\n', '\t', '\r']) {
            let item = item.trim_start_matches('{');
            if !item.is_empty() {
                deps.extend(resolve(item, base, names));
            }
        }
    }
    deps.remove(module);
    deps.retain(|d| !is_ancestor(module, d) && !is_ancestor(d, module));
    deps
}

/// The module graph of `modules`: each module and the modules it uses.
fn graph(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    modules
        .iter()
        .map(|(m, text)| (m.clone(), dependencies(m, text, &names)))
        .collect()
}

/// One circle through each group of modules that import each other
/// (Tarjan's strongly connected components of more than one module), as
/// `a -> b -> ... -> a`, with the whole group when the circle is not all of it.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    struct Tarjan<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        groups: Vec<Vec<&'g str>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.groups
        .iter()
        .map(|group| {
            let circle = shortest_circle(graph, group);
            let mut said = circle.join(" -> ");
            if circle.len() - 1 < group.len() {
                said.push_str(&format!(
                    " (the whole circle of {}: {})",
                    group.len(),
                    group.join(", ")
                ));
            }
            said
        })
        .collect()
}

/// The shortest way from the group's first module back to itself, inside the group.
fn shortest_circle(graph: &BTreeMap<String, BTreeSet<String>>, group: &[&str]) -> Vec<String> {
    let start = group[0];
    let inside: BTreeSet<&str> = group.iter().copied().collect();
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if w == start {
                let mut path = vec![start.to_string()];
                let mut at = v;
                while at != start {
                    path.push(at.to_string());
                    at = came_from[at];
                }
                path.push(start.to_string());
                path.reverse();
                return path;
            }
            if inside.contains(w) && !came_from.contains_key(w) {
                came_from.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    unreachable!("a strongly connected group has a circle through each of its modules")
}

/// Lines of code: not blank, not a `//` comment, before `#[cfg(test)]`.
fn lines_of_code(text: &str) -> usize {
    shipped(text)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

#[test]
fn no_module_of_src_imports_itself_through_others() {
    let circles = circles(&graph(&modules()));
    assert!(
        circles.is_empty(),
        "import circles in src/ (each module here uses the next):\n{}\nhelp: move what the lower module needs from the higher one down (a shared step, data beside the spec), so each layer uses only the ones below it (docs/contributing.md, Layout)",
        circles
            .iter()
            .map(|c| format!("  {c}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The commands: each is a module of its own over the shared steps (find,
/// classify, survey, stage, back up, replace, verify's engine), and none is
/// used by a step or by another command. The dispatch (`lib.rs`) and the
/// argument parser (`cli`) sit above them all.
const COMMANDS: [&str; 6] = ["apply", "diff", "keep", "probe", "revert", "status"];

/// The command `module` is or is inside, if any.
fn command_of(module: &str) -> Option<&'static str> {
    COMMANDS
        .into_iter()
        .find(|c| module == *c || module.starts_with(&format!("{c}::")))
}

#[test]
fn commands_use_steps_and_no_step_uses_a_command() {
    let mut wrong = Vec::new();
    for (module, deps) in graph(&modules()) {
        if module == "cli" {
            continue;
        }
        for dep in deps {
            if let Some(used) = command_of(&dep) {
                if command_of(&module) != Some(used) {
                    wrong.push(format!("  {module} -> {dep}"));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules of src/ using a command ({}):\n{}\nhelp: move what they share into a step both use (as survey/ holds what status found)",
        COMMANDS.join(", "),
        wrong.join("\n")
    );
}

#[test]
fn no_file_of_src_or_tests_is_over_a_thousand_lines_of_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = [rust_files(&src()), rust_files(&root.join("tests"))].concat();
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()));
            let n = lines_of_code(&text);
            let shown = f.strip_prefix(root).unwrap_or(f).display();
            (n > MAX_LINES_OF_CODE).then(|| format!("  {shown}: {n} lines of code"))
        })
        .collect();
    assert!(
        over.is_empty(),
        "files over {MAX_LINES_OF_CODE} lines of code (not blank, not a comment, before #[cfg(test)]):\n{}\nhelp: split each into files of one concern each",
        over.join("\n")
    );
}

#[test]
fn the_module_graph_reads_every_way_a_module_is_named() {
    let names: BTreeSet<String> = ["a", "b", "c", "d", "e", "e::f", "e::g", "h"]
        .into_iter()
        .map(String::from)
        .collect();
    let text = "use crate::a::Thing;\nuse crate::{b, c::Other};\n/// see [`crate::d`]\nfn x() { super::g::y(); }\nuse super::{f, h};\n";
    let deps = dependencies("e::f", text, &names);
    let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
    // `e` (the parent) and `e::f` itself are left out; `super::g` is `e::g`.
    assert_eq!(deps, ["a", "b", "c", "d", "e::g"]);
    assert_eq!(module_of("verify/mod.rs"), "verify");
    assert_eq!(module_of("verify/explore/plan.rs"), "verify::explore::plan");
    assert_eq!(module_of("lib.rs"), "crate");
}

#[test]
fn a_circle_is_named_module_by_module() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a", "d"]),
        ("d", vec![]),
        ("x", vec!["y"]),
        ("y", vec![]),
    ]
    .into_iter()
    .map(|(m, ds)| (m.to_string(), ds.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(circles(&graph), ["a -> b -> c -> a"]);
    let mut acyclic = graph.clone();
    acyclic.get_mut("c").unwrap().remove("a");
    assert!(circles(&acyclic).is_empty());
}

#[test]
fn lines_of_code_leave_out_blanks_comments_and_tests() {
    let text = "//! doc\nuse a;\n\n    // note\nfn f() {}\n#[cfg(test)]\nmod tests {\n}\n";
    assert_eq!(lines_of_code(text), 2);
}
