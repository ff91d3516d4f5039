//! The README and docs/ against the binary: every command and flag the README's
//! usage block shows exists, every JSON example has the shape of a real run,
//! every example run (`$ mcpatch ...`) is what a real run prints, paths, ids and
//! timings aside, and every link between the documents leads somewhere.
//!
//! The examples are regenerated from real runs with
//! `MCPATCH_README_WRITE=1 cargo test --test cli readme` (scripts/readme-examples.sh).

use std::collections::BTreeSet;

use serde_json::Value;

use super::real_servers::{Kind, RealServer};
use super::*;

fn readme_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")
}

fn readme() -> String {
    std::fs::read_to_string(readme_path()).unwrap()
}

/// README.md and every file under docs/, each with its text: the documents
/// the examples may live in.
fn documents() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths.insert(0, readme_path());
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The document that holds `needle`, and its text.
fn document_with(needle: &str) -> (PathBuf, String) {
    documents()
        .into_iter()
        .find(|(_, text)| text.contains(needle))
        .unwrap_or_else(|| panic!("neither README.md nor docs/ has {needle:?}"))
}

/// The fenced blocks of a kind (`text`, `json`) in order, each with the text
/// before it since the previous block, and its own body.
fn blocks(text: &str, lang: &str) -> Vec<(usize, usize)> {
    let open = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find(&open) {
        let start = at + i + open.len();
        let end = start + text[start..].find("```").unwrap();
        out.push((start, end));
        at = end + 3;
    }
    out
}

#[test]
fn the_usage_block_lists_every_command_and_each_flag_it_shows_exists() {
    let readme = readme();
    let usage = &readme[readme.find("## Usage").expect("README has a Usage section")..];
    let (start, end) = blocks(usage, "text")[0];
    let sb = Sandbox::new();
    let mut listed = BTreeSet::new();
    for line in usage[start..end].lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "mcpatch", "{line}");
        let command = words[1];
        let help_args: Vec<&str> = if command.starts_with('[') {
            vec!["--help"]
        } else {
            listed.insert(command.to_string());
            vec![command, "--help"]
        };
        let o = sb.run(&help_args);
        assert_eq!(code(&o), 0, "mcpatch {help_args:?}: {}", stderr(&o));
        let help = stdout(&o);
        for word in &words[2..] {
            let flag = word.trim_matches(|c| c == '[' || c == ']' || c == '.' || c == '\'');
            if flag.starts_with('-') {
                let shown = help.match_indices(flag).any(|(i, _)| {
                    !help[i + flag.len()..]
                        .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
                });
                assert!(
                    shown,
                    "the README shows `{flag}` for `mcpatch {command}`, its --help does not:\n{help}"
                );
            }
        }
    }
    let o = sb.run(&["--help"]);
    let help = stdout(&o);
    let commands: BTreeSet<String> = help[help.find("Commands:").unwrap()..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect();
    assert_eq!(
        listed, commands,
        "the README's usage block and `mcpatch --help` list different commands"
    );
}

/// Keys, recursively (an array by its first element); values are not compared.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.first().map(shape).into_iter().collect()),
        _ => Value::Null,
    }
}

/// The JSON example that follows `heading` (the first ```json block after it),
/// in whichever document holds it.
fn json_example(heading: &str) -> Value {
    let (_, readme) = document_with(heading);
    let at = readme.find(heading).unwrap();
    let (start, end) = blocks(&readme[at..], "json")[0];
    serde_json::from_str(&readme[at + start..at + end])
        .unwrap_or_else(|e| panic!("the JSON example after {heading:?} is not JSON: {e}"))
}

#[test]
fn the_status_verify_and_probe_json_examples_have_the_shape_of_real_runs() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();

    let real = status_json(&sb, &["--path", p]);
    let example = json_example("`status --json` prints one object");
    assert_eq!(
        shape(&example),
        shape(&real),
        "status --json\nREADME: {example:#}\nreal: {real:#}"
    );

    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let o = sb.run(&[
        "verify",
        "--json",
        "--path",
        p,
        "--scenario",
        "expired-404",
        "--explore",
        "1",
    ]);
    let real: Value = serde_json::from_slice(&o.stdout).unwrap();
    let example = json_example("`verify --json`:");
    assert_eq!(
        shape(&example),
        shape(&real),
        "verify --json\nREADME: {example:#}\nreal: {real:#}"
    );

    let server = RealServer::start(Kind::PythonFastMcp, None);
    let o = sb.run(&["probe", "--json", &server.url()]);
    let real: Value = serde_json::from_slice(&o.stdout).unwrap();
    let example = json_example("`probe --json` prints one object");
    assert_eq!(
        shape(&example),
        shape(&real),
        "probe --json\nREADME: {example:#}\nreal: {real:#}"
    );
}

/// What may differ between the README and a real run: paths, backup ids, ports,
/// and column padding.
fn masked(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            line.split_whitespace()
                .map(|w| {
                    if w.starts_with('/') || w.starts_with("[SANDBOX]") {
                        "<PATH>".to_string()
                    } else if w.len() == 29 && w.as_bytes()[8] == b'T' && w.as_bytes()[19] == b'Z' {
                        "<ID>".to_string()
                    } else if let Some(i) = w.find("127.0.0.1:") {
                        let rest: String = w[i + 10..]
                            .chars()
                            .skip_while(char::is_ascii_digit)
                            .collect();
                        format!("{}127.0.0.1:<PORT>{rest}", &w[..i])
                    } else {
                        w.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// One example run: the command line the README shows and what it printed.
struct Example {
    command: String,
    output: String,
}

/// Compare each `$ mcpatch ...` example in the README or docs/ with its real
/// run; with MCPATCH_README_WRITE=1, write the real runs in their place instead.
fn check_examples(examples: &[Example]) {
    let write = std::env::var_os("MCPATCH_README_WRITE").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for ex in examples {
        let head = format!("```text\n$ {}\n", ex.command);
        let (path, mut readme) = document_with(&head);
        let at = readme.find(&head).unwrap();
        let start = at + head.len();
        let end = start + readme[start..].find("```").unwrap();
        if masked(&readme[start..end]) != masked(&ex.output) {
            if write {
                readme.replace_range(start..end, &ex.output);
            } else {
                stale.push(format!(
                    "{} shows for `$ {}`:\n{}\na real run prints:\n{}",
                    path.display(),
                    ex.command,
                    &readme[start..end],
                    ex.output
                ));
            }
        }
        if write {
            std::fs::write(&path, &readme).unwrap();
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nregenerate with scripts/readme-examples.sh",
        stale.join("\n")
    );
}

/// A system-wide global install of DSH under the sandbox's stand-in for `/`, with
/// the client nested under the host, as `npm install -g @deepseek-ai/dsh` lays it out.
fn system_install(sb: &Sandbox) -> PathBuf {
    sb.copy_client(
        "0.1.0-rc.8",
        &sb.root()
            .join("sys/usr/lib/node_modules/@deepseek-ai/dsh/node_modules")
            .join(CLIENT),
    )
}

/// Run mcpatch as a user would, with the system roots under the sandbox; paths
/// shown as on a real machine.
fn as_user(sb: &Sandbox, args: &[&str], columns: Option<&str>) -> String {
    let mut c = sb.command(args);
    c.env_remove("MCPATCH_SYSTEM_ROOTS")
        .env("MCPATCH_SYSROOT", sb.root().join("sys"));
    if let Some(cols) = columns {
        c.env("COLUMNS", cols);
    }
    let o = c.output().unwrap();
    let sys = sb.root().join("sys").display().to_string();
    String::from_utf8_lossy(&o.stdout)
        .replace(&sys, "")
        .replace(&sb.dsh_home().display().to_string(), "/home/me/.dsh")
}

#[test]
fn the_readme_examples_are_what_real_runs_print() {
    let sb = Sandbox::new();
    let client = system_install(&sb);
    let status = as_user(&sb, &["status"], Some("80"));
    let status_piped = as_user(&sb, &["status"], None);
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    let backups = as_user(&sb, &["backups"], None);
    let server = RealServer::start(Kind::PythonFastMcp, None);
    let url = server.url();
    let probe = as_user(&sb, &["probe", &url], None).replace(&url, "http://127.0.0.1:8000/mcp");
    check_examples(&[
        Example {
            command: "mcpatch status".into(),
            output: status,
        },
        Example {
            command: "mcpatch status | cat".into(),
            output: status_piped,
        },
        Example {
            command: "mcpatch backups".into(),
            output: backups,
        },
        Example {
            command: "mcpatch probe http://127.0.0.1:8000/mcp".into(),
            output: probe,
        },
    ]);
}

#[test]
fn the_install_line_builds_with_the_locked_dependencies() {
    let readme = readme();
    let install = &readme[readme
        .find("## Install")
        .expect("README has an Install section")..];
    let (start, end) = blocks(install, "sh")[0];
    assert_eq!(&install[start..end], "cargo install --locked --path .\n");
}

/// GitHub's anchor of a heading: lowercase, spaces to `-`, punctuation other
/// than `-` and `_` dropped.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (outside fenced blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor_of(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_document_is_linked_from_the_readme_and_every_link_between_them_leads_somewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = documents();
    let readme = &docs[0].1;
    let mut broken = Vec::new();
    for (path, _) in &docs[1..] {
        let name = format!("docs/{}", path.file_name().unwrap().to_str().unwrap());
        if !readme.contains(&format!("]({name})")) {
            broken.push(format!("README.md does not link {name}"));
        }
    }
    for (path, text) in &docs {
        let dir = path.parent().unwrap();
        for target in links(text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file)
            };
            if !resolved.exists() {
                broken.push(format!(
                    "{}: the link ({target}) leads to no file",
                    path.strip_prefix(root).unwrap().display()
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                let text = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&text).contains(anchor) {
                    broken.push(format!(
                        "{}: the link ({target}) names no heading of {}",
                        path.strip_prefix(root).unwrap().display(),
                        resolved.strip_prefix(root).unwrap_or(&resolved).display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The targets of the Markdown links `[text](target)` in a text, outside fenced
/// blocks and inline code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'`' => in_code = !in_code,
                b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                    if let Some(end) = line[i + 2..].find(')') {
                        out.push(line[i + 2..i + 2 + end].to_string());
                        i += 2 + end;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The README's catalogue table against `test-fixtures/patch-mutants/`: each
/// row counts its target's broken patches and those marked equivalent, and
/// caught, missed and equivalent add up to the whole catalogue.
#[test]
fn the_readmes_catalogue_table_counts_each_catalogue() {
    let readme = readme();
    let at = readme
        .find("## How well verify catches a broken patch")
        .expect("README has the catalogue section");
    let section = &readme[at..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/patch-mutants");
    let mut rows = 0;
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let target = cells[1].trim_matches('`');
        let number = |i: usize| -> usize {
            cells[i]
                .parse()
                .unwrap_or_else(|_| panic!("{target}: column {i} is {:?}", cells[i]))
        };
        let dir = if target == "dsh-mcp-client" {
            root.clone()
        } else {
            root.join(target)
        };
        let mutants: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        let equivalent = mutants
            .iter()
            .filter(|m| m.contains("\"equivalent\""))
            .count();
        assert_eq!(
            (number(2), number(5)),
            (mutants.len(), equivalent),
            "{target}: the README's broken patches and equivalent ones against {}",
            dir.display()
        );
        assert_eq!(number(3) + number(4) + number(5), number(2), "{target}");
        rows += 1;
    }
    assert_eq!(rows, 5, "one row per target");
}
