//! What fleet tools read: `apply --json`, `revert --json` and `verify --json`
//! report per install `changed`, `state_before`, `state_after`, `backup` and
//! `error`, and the exit code means the same in all three: 2 when an install
//! failed, after the others were handled as reported.

use serde_json::{json, Value};

use super::apply::ReadOnly;
use super::harden::backup_ids;
use super::*;

const A: &str = "[SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client";
const B: &str = "[SANDBOX]/b/lib/node_modules/@deepseek-ai/dsh-mcp-client";
fn not_writable() -> String {
    format!("[SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib is not writable: Operation not permitted (os error 1) at path \"[SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/.mcpatch-staged-*.js\"\nhelp: {}", not_writable_help())
}

/// `text` with the random part of staged file names replaced by `*`.
pub(crate) fn without_staged_names(text: &str) -> String {
    let marker = ".mcpatch-staged-";
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(marker) {
        out.push_str(&rest[..i + marker.len()]);
        out.push('*');
        rest = &rest[i + marker.len()..];
        rest = &rest[rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len())..];
    }
    out + rest
}

/// Stdout as JSON, the sandbox path and staged file names normalised.
fn json_of(sb: &Sandbox, o: &Output) -> Value {
    let text = without_staged_names(&sb.normalize(&o.stdout));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}{}", stdout(o), stderr(o)))
}

fn entry(
    path: &str,
    changed: bool,
    before: &str,
    after: &str,
    backup: Option<&str>,
    error: Option<&str>,
) -> Value {
    json!({
        "target": "dsh-mcp-client",
        "path": path,
        "file": format!("{path}/lib/index.js"),
        "changed": changed,
        "state_before": before,
        "state_after": after,
        "backup": backup,
        "error": error,
        "running": [],
    })
}

/// Two installs: `a` (0.1.0-rc.8) and `b` (0.1.0-rc.7), both affected.
fn two_installs(sb: &Sandbox) -> (PathBuf, PathBuf) {
    (
        sb.client_install("0.1.0-rc.8", "a"),
        sb.client_install("0.1.0-rc.7", "b"),
    )
}

#[test]
fn apply_and_revert_json_report_what_changed_for_each_install() {
    let sb = Sandbox::new();
    let (a, b) = two_installs(&sb);
    let all = sb.root().to_str().unwrap();
    // b was patched with another DSH_HOME: this one holds no backup of it.
    let o = sb
        .cmd(&["apply", "--path", b.to_str().unwrap()])
        .env("DSH_HOME", sb.root().join("elsewhere"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let o = sb.run(&["apply", "--json", "--path", all]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let id = backup_ids(&sb).remove(0);
    assert_eq!(
        json_of(&sb, &o),
        json!({
            "changed": true,
            "dry_run": false,
            "installs": [
                entry(A, true, "affected", "patched", Some(&id), None),
                entry(B, false, "patched", "patched", None, None),
            ],
            "searched": ["--path [SANDBOX]"],
            "error": null,
        })
    );
    assert_eq!(sha256_file(&a.join("lib/index.js")), patched_hash());

    let o = sb.run(&["revert", "--json", "--path", all]);
    assert_eq!(code(&o), 1, "b could not be reverted: {}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_eq!(
        json_of(&sb, &o),
        json!({
            "changed": true,
            "installs": [
                entry(A, true, "patched", "affected", Some(&id), None),
                entry(B, false, "patched", "patched", None, Some("not reverted: it carries the patch, and no backup of it is under [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss\nto get the original back: reinstall @deepseek-ai/dsh; or, if it was patched with another state folder (sudo uses root's), run `MCPATCH_HOME=<that folder> mcpatch revert` (`--backup ID` picks one of the backups `mcpatch backups` lists there)")),
            ],
            "searched": ["--path [SANDBOX]"],
            "error": null,
        })
    );
    assert_eq!(sha256_file(&a.join("lib/index.js")), ORIGINAL);
    assert_eq!(sha256_file(&b.join("lib/index.js")), patched_hash());

    // A run with nothing to do changes nothing.
    assert_eq!(code(&sb.run(&["apply", "--path", all])), 0);
    let o = sb.run(&["apply", "--json", "--path", all]);
    assert_eq!(code(&o), 0);
    let v = json_of(&sb, &o);
    assert_eq!(v["changed"], false);
    assert_eq!(
        v["installs"],
        json!([
            entry(A, false, "patched", "patched", None, None),
            entry(B, false, "patched", "patched", None, None),
        ])
    );
}

#[test]
fn apply_json_dry_run_says_what_would_change_and_writes_nothing() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "a");
    let o = sb.run(&[
        "apply",
        "--json",
        "--dry-run",
        "--path",
        client.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        json_of(&sb, &o),
        json!({
            "changed": true,
            "dry_run": true,
            "installs": [entry(A, true, "affected", "patched", None, None)],
            "searched": [format!("--path {A}")],
            "error": null,
        })
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    assert_eq!(backup_count(&sb), 0);
}

#[test]
fn one_failing_install_ends_apply_and_revert_in_2_after_the_others_were_handled() {
    let sb = Sandbox::new();
    let (a, b) = two_installs(&sb);
    let all = sb.root().to_str().unwrap();
    let summary = |action: &str| {
        format!("error: 1 of 2 install(s) could not be {action}; each error is above\nhelp: each install that failed was left as it was, the others were handled as reported; fix what each error names and run again (a rerun skips what is done)\n")
    };

    let guard = ReadOnly::new(&a.join("lib"));
    let o = sb.run(&["apply", "--json", "--path", all]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let id_b = backup_ids(&sb).remove(0);
    assert_eq!(
        json_of(&sb, &o),
        json!({
            "changed": true,
            "dry_run": false,
            "installs": [
                entry(A, false, "affected", "affected", None, Some(&not_writable())),
                entry(B, true, "affected", "patched", Some(&id_b), None),
            ],
            "searched": ["--path [SANDBOX]"],
            "error": null,
        })
    );
    assert_eq!(
        without_staged_names(&sb.normalize(&o.stderr)),
        format!("error: {}\n{}", not_writable(), summary("patched"))
    );
    assert_eq!(
        sha256_file(&a.join("lib/index.js")),
        ORIGINAL,
        "left as it was"
    );
    assert_eq!(sha256_file(&b.join("lib/index.js")), patched_hash());

    // After the fix, a rerun does the rest and skips what is done.
    drop(guard);
    let o = sb.run(&["apply", "--json", "--path", all]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id_a = backup_ids(&sb).into_iter().find(|id| id != &id_b).unwrap();
    assert_eq!(
        json_of(&sb, &o)["installs"],
        json!([
            entry(A, true, "affected", "patched", Some(&id_a), None),
            entry(B, false, "patched", "patched", None, None),
        ])
    );

    // revert means the same by 2.
    let _guard = ReadOnly::new(&a.join("lib"));
    let o = sb.run(&["revert", "--json", "--path", all]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let revert_error = not_writable();
    assert_eq!(
        json_of(&sb, &o),
        json!({
            "changed": true,
            "installs": [
                entry(A, false, "patched", "patched", None, Some(&revert_error)),
                entry(B, true, "patched", "affected", Some(&id_b), None),
            ],
            "searched": ["--path [SANDBOX]"],
            "error": null,
        })
    );
    assert_eq!(
        without_staged_names(&sb.normalize(&o.stderr)),
        format!("error: {revert_error}\n{}", summary("restored"))
    );
    assert_eq!(sha256_file(&a.join("lib/index.js")), patched_hash());
    assert_eq!(sha256_file(&b.join("lib/index.js")), ORIGINAL);
}

/// A verify install object with what changes from run to run left out of its scenarios.
fn verify_install_shape(install: &Value) -> Value {
    let mut shape = install.clone();
    let scenarios: Vec<Value> = install["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([s["name"], s["policy"], s["expected"], s["verdict"], s["ok"]]))
        .collect();
    shape["scenarios"] = json!(scenarios);
    shape
}

#[test]
fn verify_json_carries_the_automation_fields_and_goes_on_past_an_install_it_cannot_check() {
    let sb = Sandbox::new();
    let (_, b) = two_installs(&sb);
    let all = sb.root().to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", b.to_str().unwrap()])), 0);
    let id = backup_ids(&sb).remove(0);
    let node = String::from_utf8(
        std::process::Command::new(node22_dir().join("node"))
            .arg("--version")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();

    // a has no backup to run as the control; b's backup runs.
    let o = sb.run(&[
        "verify",
        "--json",
        "--backup",
        "--scenario",
        "expired-404",
        "--path",
        all,
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let v = json_of(&sb, &o);
    let no_backup = format!("no backup of {A}/lib/index.js under [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss, so `verify --backup` has no saved original to run\nhelp: `mcpatch apply` saves the original when it patches the install; if it was patched with another state folder (sudo uses root's), run `MCPATCH_HOME=<that folder> mcpatch verify --backup`; `mcpatch backups` lists the backups under this one");
    assert_eq!(v["installs"].as_array().unwrap().len(), 2, "{v:#}");
    assert_eq!(
        v["installs"][0],
        json!({
            "target": "dsh-mcp-client",
            "path": A, "file": format!("{A}/lib/index.js"), "backup": null,
            "sha256": ORIGINAL, "state": "affected",
            "changed": false, "state_before": "affected", "state_after": "affected",
            "error": no_backup,
            "node_version": node, "node_shim": false, "expectations": "relaxed",
            "overall": "FAILED", "note": null,
            "scenarios": [], "left_out": [], "exploration": null,
        })
    );
    assert_eq!(
        verify_install_shape(&v["installs"][1]),
        json!({
            "target": "dsh-mcp-client",
            "path": B,
            "file": format!("[SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss/{id}/index.js"),
            "backup": id,
            "sha256": ORIGINAL, "state": "affected",
            "changed": false, "state_before": "patched", "state_after": "patched",
            "error": null,
            "node_version": node, "node_shim": false, "expectations": "relaxed",
            "overall": "STUCK",
            "note": "the saved original, run as the control: judged as any file, so STUCK here is the bug the patch fixes, reproduced",
            "scenarios": [
                ["expired-404", "short", "recover", "STUCK", false],
                ["expired-404", "default", "recover", "STUCK", false],
            ],
            "left_out": [],
            "exploration": null,
        })
    );
    assert_eq!(v["error"], Value::Null);
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: {no_backup}\nerror: 1 of 2 install(s) could not be verified; each error is above\nhelp: each install that failed was left as it was, the others were handled as reported; fix what each error names and run again\n")
    );
    assert_eq!(
        sha256_file(&b.join("lib/index.js")),
        patched_hash(),
        "verify changes nothing"
    );
}

#[test]
fn with_json_an_error_before_any_install_is_still_one_json_document() {
    let sb = Sandbox::new();
    let missing = sb.root().join("missing");
    let p = missing.to_str().unwrap();
    let error = "cannot read [SANDBOX]/missing: No such file or directory (os error 2)\nhelp: check the --path argument: it must exist";
    for (args, expected) in [
        (
            vec!["apply", "--json", "--path", p],
            json!({"changed": false, "dry_run": false, "installs": [], "searched": ["--path [SANDBOX]/missing"], "error": error}),
        ),
        (
            vec!["revert", "--json", "--path", p],
            json!({"changed": false, "installs": [], "searched": ["--path [SANDBOX]/missing"], "error": error}),
        ),
        (
            vec!["verify", "--json", "--path", p],
            json!({"installs": [], "error": error}),
        ),
    ] {
        let o = sb.run(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        assert_eq!(json_of(&sb, &o), expected, "{args:?}");
        assert_eq!(
            sb.normalize(&o.stderr),
            format!("error: {error}\n"),
            "{args:?}"
        );
    }
}

/// Each value replaced by the name of its JSON type, arrays by their first element's shape.
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(items) => json!(items.first().map(shape).into_iter().collect::<Vec<_>>()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
    }
}

#[test]
fn the_readme_apply_json_example_has_the_shape_of_a_real_run() {
    let readme = doc("commands.md");
    let section = &readme[readme
        .find("## Automation")
        .expect("docs/commands.md has an Automation section")..];
    let block = &section[section.find("```json\n").unwrap() + 8..];
    let example: Value = serde_json::from_str(&block[..block.find("```").unwrap()]).unwrap();
    let task = &section[section.find("```yaml\n").unwrap()..];
    assert!(
        task.contains("argv: \"{{ ['mcpatch', 'apply', '--json']"),
        "{task}"
    );
    assert!(
        task.contains("changed_when: (mcpatch_apply.stdout | from_json).changed"),
        "{task}"
    );

    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "a");
    let o = sb.run(&["apply", "--json", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let real = json_of(&sb, &o);
    assert_eq!(
        shape(&example),
        shape(&real),
        "README: {example:#}\nreal: {real:#}"
    );
    assert_eq!(
        example["installs"][0]["state_before"],
        real["installs"][0]["state_before"]
    );
    assert_eq!(
        example["installs"][0]["state_after"],
        real["installs"][0]["state_after"]
    );
}

/// The contrib/ file at `rel`.
fn contrib(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("contrib")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The mcpatch arguments of a shipped command line (after `.../mcpatch`).
fn mcpatch_args(line: &str) -> Vec<&str> {
    let at = line
        .find("/usr/local/bin/mcpatch ")
        .unwrap_or_else(|| panic!("no /usr/local/bin/mcpatch in {line:?}"));
    line[at + "/usr/local/bin/mcpatch ".len()..]
        .split_whitespace()
        .collect()
}

#[test]
fn apply_yes_quiet_is_silent_when_nothing_changes_and_says_one_line_per_change() {
    let sb = Sandbox::new();
    // Nothing installed: nothing to say.
    let o = sb.run(&["apply", "--yes", "--quiet"]);
    assert_eq!(
        (code(&o), stdout(&o), stderr(&o)),
        (0, String::new(), String::new())
    );

    let (a, b) = two_installs(&sb);
    let all = sb.root().to_str().unwrap();
    let o = sb.run(&["apply", "--yes", "--quiet", "--path", all]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    let ids = backup_ids(&sb);
    let id_of = |dir: &Path| {
        ids.iter()
            .find(|id| {
                let m: Value = serde_json::from_slice(
                    &std::fs::read(
                        sb.dsh_home()
                            .join("backups/dsh-mcp-client-session-loss")
                            .join(id)
                            .join("manifest.json"),
                    )
                    .unwrap(),
                )
                .unwrap();
                m["package_dir"] == dir.canonicalize().unwrap().to_str().unwrap()
            })
            .unwrap()
            .clone()
    };
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "patched {A} (0.1.0-rc.8): backup {}\npatched {B} (0.1.0-rc.7): backup {}\n",
            id_of(&a),
            id_of(&b)
        )
    );
    // Run again, as a path unit or cron does after every change: silent.
    let o = sb.run(&["apply", "--yes", "--quiet", "--path", all]);
    assert_eq!(
        (code(&o), stdout(&o), stderr(&o)),
        (0, String::new(), String::new())
    );
    // An unsupported install is refused: one line on stderr, exit 1.
    sb.client_install("0.0.1-rc.1", "c");
    let o = sb.run(&["apply", "--yes", "--quiet", "--path", all]);
    assert_eq!(code(&o), 1);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        sb.normalize(&o.stderr),
        "refused: [SANDBOX]/c/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.0.1-rc.1): unsupported: no reconnect supervisor: the patch cannot help this revision; upgrade @deepseek-ai/dsh to 0.1.0-rc.7 or later\n"
    );
}

#[test]
fn the_shipped_unit_files_pass_systemd_analyze_verify_and_run_apply_yes_quiet() {
    let analyze = which::which("systemd-analyze").unwrap_or_else(|_| {
        panic!("systemd-analyze is missing: install it with `apt-get install systemd` (scripts/test.sh checks for it)")
    });
    let service = contrib("systemd/mcpatch.service");
    let path_unit = contrib("systemd/mcpatch.path");
    let exec = service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("the service has an ExecStart");
    assert_eq!(mcpatch_args(exec), ["apply", "--yes", "--quiet"]);
    assert!(
        path_unit.contains("\nUnit=mcpatch.service\n"),
        "{path_unit}"
    );
    assert!(
        path_unit.contains("\nPathChanged=/usr/local/lib/node_modules/@deepseek-ai/dsh/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js\n"),
        "{path_unit}"
    );

    // systemd-analyze checks that ExecStart's program exists: point it at this build.
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("mcpatch");
    std::fs::write(
        dir.path().join("mcpatch.service"),
        service.replace("/usr/local/bin/mcpatch", bin.to_str().unwrap()),
    )
    .unwrap();
    std::fs::write(dir.path().join("mcpatch.path"), &path_unit).unwrap();
    let o = std::process::Command::new(&analyze)
        .args(["verify", "--man=no"])
        .arg(dir.path().join("mcpatch.path"))
        .arg(dir.path().join("mcpatch.service"))
        .output()
        .unwrap();
    assert_eq!(
        (code(&o), stderr(&o)),
        (0, String::new()),
        "systemd-analyze verify: {}",
        stdout(&o)
    );

    // The unit's command, run as the service runs it.
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "a");
    let mut args = mcpatch_args(exec);
    let p = client.to_str().unwrap();
    args.extend(["--path", p]);
    let o = sb.run(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("patched {A} (0.1.0-rc.8): backup {}\n", backup_ids(&sb)[0])
    );
    let o = sb.run(&args);
    assert_eq!(
        (code(&o), stdout(&o), stderr(&o)),
        (0, String::new(), String::new())
    );
}

#[test]
fn the_shipped_cron_line_runs_apply_yes_quiet_as_root_and_the_readme_shows_it() {
    let cron = contrib("cron.d/mcpatch");
    let lines: Vec<&str> = cron
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(lines.len(), 1, "{cron}");
    let fields: Vec<&str> = lines[0].split_whitespace().collect();
    // /etc/cron.d: five time fields, the user, the command.
    for (field, max) in fields[..5].iter().zip([59, 23, 31, 12, 7]) {
        let ok = field.split(',').all(|part| {
            let (range, step) = part.split_once('/').unwrap_or((part, "1"));
            let in_range = |n: &str| n.parse::<u32>().is_ok_and(|n| n <= max);
            step.parse::<u32>().is_ok_and(|s| s >= 1)
                && (range == "*"
                    || range
                        .split_once('-')
                        .map_or(in_range(range), |(a, b)| in_range(a) && in_range(b)))
        });
        assert!(ok, "cron field {field:?} in {:?}", lines[0]);
    }
    assert_eq!(fields[5], "root");
    assert_eq!(mcpatch_args(lines[0]), ["apply", "--yes", "--quiet"]);
    let readme = doc("commands.md");
    assert!(
        readme.contains(lines[0]),
        "docs/commands.md shows the cron line"
    );
    for unit in ["systemd/mcpatch.path", "systemd/mcpatch.service"] {
        for line in contrib(unit)
            .lines()
            .filter(|l| l.contains('=') && !l.starts_with('#'))
        {
            assert!(
                readme.contains(line),
                "docs/commands.md shows {unit}'s {line:?}"
            );
        }
    }
}
