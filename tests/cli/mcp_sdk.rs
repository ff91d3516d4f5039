//! mcp-sdk, the target over the MCP TypeScript SDK itself
//! (`@modelcontextprotocol/sdk` 1.x and `@modelcontextprotocol/client` 2.x),
//! on copies of real npm projects (test-fixtures/mcp-sdk/fetch.sh puts them in
//! .cache/mcp-sdk/projects/ and the bare releases in .cache/mcp-sdk/packs/):
//! every copy in a project's node_modules tree is found once, with the
//! package that pulled it in; its ESM and CJS builds are patched and reverted
//! together; a release mcpatch has no record of that the anchors fit is
//! `affected`, with a note that apply verifies it first.

use serde_json::Value;

use super::*;

pub(super) const SDK: &str = "@modelcontextprotocol/sdk";
pub(super) const ESM: &str = "dist/esm/client/streamableHttp.js";
pub(super) const CJS: &str = "dist/cjs/client/streamableHttp.js";

/// A real project fetched by test-fixtures/mcp-sdk/fetch.sh.
fn fetched_project(name: &str) -> PathBuf {
    let p = cache().join("mcp-sdk/projects").join(name);
    assert!(
        p.join(".done").is_file(),
        "the real npm project {name} is missing from {}: run test-fixtures/mcp-sdk/fetch.sh (needs npm and the npm registry)",
        p.display()
    );
    p
}

/// A real release of `package` (`npm pack`, unpacked) from test-fixtures/mcp-sdk/fetch.sh.
fn fetched_pack(package: &str, version: &str) -> PathBuf {
    let p = cache()
        .join("mcp-sdk/packs")
        .join(format!("{package}@{version}"));
    assert!(
        p.join(".done").is_file(),
        "the real package {package}@{version} is missing from {}: run test-fixtures/mcp-sdk/fetch.sh (needs npm and the npm registry)",
        p.display()
    );
    p.join("package")
}

pub(super) fn cp(args: &[&str], from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let st = std::process::Command::new("cp")
        .args(args)
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(
        st.success(),
        "cp {args:?} {} {}",
        from.display(),
        to.display()
    );
}

/// Copy a fetched project into the sandbox (hard links), each SDK copy's two
/// builds real copies of their own; returns the project folder, canonical.
pub(super) fn project_copy(sb: &Sandbox, name: &str) -> PathBuf {
    let dest = sb.root().join(name);
    cp(&["-al"], &fetched_project(name), &dest);
    own_builds(&dest.join("node_modules").join(SDK));
    dest.canonicalize().unwrap()
}

/// Make `pkg`'s two builds files of their own (not hard links into the cache).
fn own_builds(pkg: &Path) {
    for rel in [ESM, CJS] {
        let f = pkg.join(rel);
        let bytes = std::fs::read(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        std::fs::write(&f, bytes).unwrap();
    }
}

fn sdk_installs(v: &Value) -> Vec<&Value> {
    v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["target"] == "mcp-sdk")
        .collect()
}

/// How many backups the mcp-sdk target keeps.
fn sdk_backups(sb: &Sandbox) -> usize {
    backups_of(sb, "mcp-sdk-session-loss")
}

fn hashes(pkg: &Path) -> [String; 2] {
    [sha256_file(&pkg.join(ESM)), sha256_file(&pkg.join(CJS))]
}

#[test]
fn a_project_sdk_copy_is_affected_then_both_builds_are_patched_once_and_reverted_byte_for_byte() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let p = project.to_str().unwrap();
    let sdk = project.join("node_modules").join(SDK);
    let before = hashes(&sdk);

    let o = sb.run(&["status", "--json", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let found = sdk_installs(&v);
    assert_eq!(found.len(), 1, "{v:#}");
    let i = found[0];
    assert_eq!(i["state"], "affected");
    assert_eq!(i["role"], "esm");
    assert_eq!(i["file"], sdk.join(ESM).to_str().unwrap());
    assert_eq!(i["sha256"], before[0].as_str());
    assert_eq!(i["companions"][0]["role"], "cjs");
    assert_eq!(i["companions"][0]["file"], sdk.join(CJS).to_str().unwrap());
    assert_eq!(i["companions"][0]["state"], "affected");
    assert_eq!(
        i["via"],
        serde_json::json!(["mcpatch-fixture (the project)"])
    );

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sdk_backups(&sb), 2, "one backup per build");
    let after = hashes(&sdk);
    assert_ne!(after[0], before[0], "the ESM build was not patched");
    assert_ne!(after[1], before[1], "the CJS build was not patched");
    let v = status_json(&sb, &["--path", p]);
    let i = sdk_installs(&v)[0];
    assert_eq!(i["state"], "patched", "{i:#}");
    assert_eq!(i["companions"][0]["state"], "patched", "{i:#}");

    let o = sb.run(&["apply", "--yes", "--json", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["changed"], false,
        "a second apply changed something: {v:#}"
    );
    assert_eq!(hashes(&sdk), after);

    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(hashes(&sdk), before, "revert did not restore both builds");
}

#[test]
fn a_failure_after_the_first_build_is_replaced_puts_it_back_and_keeps_no_backup() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let sdk = project.join("node_modules").join(SDK);
    let before = hashes(&sdk);
    let o = sb
        .cmd(&["apply", "--yes", "--path", project.to_str().unwrap()])
        .env("MCPATCH_TEST_FAIL_AT", "first-of-several-replaced")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("fault injected at step first-of-several-replaced"),
        "{}",
        stderr(&o)
    );
    assert_eq!(hashes(&sdk), before, "one build was left patched");
    assert_eq!(
        sdk_backups(&sb),
        0,
        "a backup of an unpatched file was kept"
    );
    // Nothing half-written is left beside either build.
    for rel in [ESM, CJS] {
        let dir = sdk.join(rel);
        let dir = dir.parent().unwrap();
        let left: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "left in {}: {left:?}", dir.display());
    }
}

/// Killed between the two builds' replacements (power lost, `kill -9`): the
/// ESM build is patched and the CJS one is not; the next apply finishes the
/// install, and revert restores both.
#[test]
fn an_apply_killed_between_the_two_builds_leaves_one_patched_and_the_next_apply_finishes_the_other()
{
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let p = project.to_str().unwrap();
    let sdk = project.join("node_modules").join(SDK);
    let before = hashes(&sdk);
    let o = sb
        .cmd(&["apply", "--yes", "--path", p])
        .env("MCPATCH_TEST_KILL_AT", "first-of-several-replaced")
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(9),
        "{}",
        stderr(&o)
    );
    let killed = hashes(&sdk);
    assert_ne!(killed[0], before[0], "the ESM build was not replaced first");
    assert_eq!(
        killed[1], before[1],
        "the CJS build was replaced before the kill"
    );

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let after = hashes(&sdk);
    assert_eq!(after[0], killed[0]);
    assert_ne!(after[1], before[1], "the next apply left the CJS build");
    let o = sb.run(&["revert", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(hashes(&sdk), before);
}

/// The step between two builds' replacements is only in an install of several.
#[test]
fn a_one_file_install_never_reaches_the_step_between_builds() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let o = sb
        .cmd(&["apply", "--path", client.to_str().unwrap()])
        .env("MCPATCH_TEST_FAIL_AT", "first-of-several-replaced")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn every_copy_in_a_project_tree_is_found_once_with_the_package_that_pulled_it_in() {
    let sb = Sandbox::new();
    // langchain's project: the SDK hoisted, wanted by the adapters and the project.
    let project = project_copy(&sb, "langchain-1.1.4");
    // A nested older copy inside a dependent's own node_modules.
    let adapters = project.join("node_modules/@langchain/mcp-adapters");
    let nested = adapters.join("node_modules").join(SDK);
    cp(&["-a"], &fetched_pack(SDK, "1.17.0"), &nested);
    let v = status_json(&sb, &["--path", project.to_str().unwrap()]);
    let mut found: Vec<(String, String, Value)> = sdk_installs(&v)
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().to_string(),
                i["version"].as_str().unwrap().to_string(),
                i["via"].clone(),
            )
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let hoisted = project.join("node_modules").join(SDK);
    assert_eq!(
        found,
        vec![
            (
                nested.to_str().unwrap().to_string(),
                "1.17.0".to_string(),
                serde_json::json!(["@langchain/mcp-adapters"])
            ),
            (
                hoisted.to_str().unwrap().to_string(),
                "1.32.2".to_string(),
                serde_json::json!(["mcpatch-fixture (the project)"])
            ),
        ],
        "{v:#}"
    );
    let o = sb.run(&["status", "--path", project.to_str().unwrap()]);
    let text = sb.normalize(&o.stdout);
    assert!(text.contains("\n  via @langchain/mcp-adapters\n"), "{text}");
}

/// A project in pnpm's layout, built from the real packages: each package in
/// `.pnpm/<name>@<version>/node_modules/<name>`, its dependencies links beside
/// it, the project's direct dependencies links in `node_modules`.
fn pnpm_project(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let project = sb.root().join("pnpm-project");
    let store = project.join("node_modules/.pnpm");
    let sdk_slot = store.join("@modelcontextprotocol+sdk@1.32.2/node_modules");
    let sdk = sdk_slot.join(SDK);
    cp(&["-al"], &fetched_pack(SDK, "1.32.2"), &sdk);
    own_builds(&sdk);
    let adapters_slot =
        store.join("@langchain+mcp-adapters@1.1.4_@langchain+core@1.0.0/node_modules");
    let langchain = fetched_project("langchain-1.1.4");
    cp(
        &["-al"],
        &langchain.join("node_modules/@langchain/mcp-adapters"),
        &adapters_slot.join("@langchain/mcp-adapters"),
    );
    std::fs::create_dir_all(adapters_slot.join("@modelcontextprotocol")).unwrap();
    std::os::unix::fs::symlink(
        "../../../@modelcontextprotocol+sdk@1.32.2/node_modules/@modelcontextprotocol/sdk",
        adapters_slot.join(SDK),
    )
    .unwrap();
    std::fs::create_dir_all(project.join("node_modules/@langchain")).unwrap();
    std::os::unix::fs::symlink(
        "../.pnpm/@langchain+mcp-adapters@1.1.4_@langchain+core@1.0.0/node_modules/@langchain/mcp-adapters",
        project.join("node_modules/@langchain/mcp-adapters"),
    )
    .unwrap();
    std::fs::write(
        project.join("package.json"),
        r#"{"name":"pnpm-app","private":true,"dependencies":{"@langchain/mcp-adapters":"1.1.4"}}"#,
    )
    .unwrap();
    (project.canonicalize().unwrap(), sdk.canonicalize().unwrap())
}

#[test]
fn a_pnpm_project_has_one_real_sdk_copy_pulled_in_by_its_dependent() {
    let sb = Sandbox::new();
    let (project, sdk) = pnpm_project(&sb);
    let v = status_json(&sb, &["--path", project.to_str().unwrap()]);
    let found = sdk_installs(&v);
    assert_eq!(found.len(), 1, "{v:#}");
    assert_eq!(found[0]["path"], sdk.to_str().unwrap());
    assert_eq!(found[0]["state"], "affected");
    assert_eq!(
        found[0]["via"],
        serde_json::json!(["@langchain/mcp-adapters"])
    );
}

#[test]
fn a_plain_status_inside_a_project_finds_the_project_copy() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let inside = project.join("src/agents");
    std::fs::create_dir_all(&inside).unwrap();
    let o = sb
        .cmd(&["status", "--json", "--target", "mcp-sdk"])
        .current_dir(&inside)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let found = sdk_installs(&v);
    assert_eq!(found.len(), 1, "{v:#}");
    assert_eq!(
        found[0]["path"],
        project.join("node_modules").join(SDK).to_str().unwrap()
    );
    let nm = project.join("node_modules");
    assert_eq!(
        found[0]["found_via"],
        serde_json::json!([format!(
            "the project of the current folder ({})",
            nm.display()
        )])
    );
}

#[test]
fn a_release_mcpatch_has_not_recorded_that_the_anchors_fit_is_affected_with_the_note() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let sdk = project.join("node_modules").join(SDK);
    // A build no release of the registry has: same code, one more line.
    for rel in [ESM, CJS] {
        edit_file(&sdk.join(rel), |t| format!("{t}// a local build\n"));
    }
    let o = sb.run(&["status", "--json", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let i = sdk_installs(&v)[0];
    assert_eq!(i["state"], "affected", "{i:#}");
    assert_eq!(i["revision"], Value::Null);
    assert_eq!(
        i["note"],
        "a release mcpatch has no record of; the patch's content anchors fit it, and `mcpatch apply` verifies the patched copy before writing it"
    );
    assert_eq!(i["next_step"], "run `mcpatch apply`");
    assert_eq!(i["companions"][0]["state"], "affected");
}

#[test]
fn an_unrecorded_release_written_without_verify_is_reverted_by_the_command_status_suggests() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let p = project.to_str().unwrap();
    let sdk = project.join("node_modules").join(SDK);
    for rel in [ESM, CJS] {
        edit_file(&sdk.join(rel), |t| format!("{t}// a local build\n"));
    }
    let before = hashes(&sdk);
    let o = sb.run(&["apply", "--no-verify", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_ne!(hashes(&sdk), before);
    let v = status_json(&sb, &["--path", p]);
    let i = sdk_installs(&v)[0];
    assert_eq!(i["state"], "patched", "{i:#}");
    assert_eq!(
        i["next_step"],
        "none (`mcpatch verify` to check, `mcpatch revert` to undo)"
    );
    // The command status names works as written: no --yes.
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(hashes(&sdk), before);
}

/// `verify --json --target mcp-sdk` of a project on the three lost-session
/// answers: (exit code, each run as (build, scenario, verdict)).
fn verify_runs(sb: &Sandbox, project: &Path) -> (i32, Vec<(String, String, String)>) {
    verify_target_runs(sb, "mcp-sdk", project)
}

/// `verify --json --target TARGET` of a project on the three lost-session
/// answers: (exit code, each run as (build, scenario, verdict)).
pub(super) fn verify_target_runs(
    sb: &Sandbox,
    target: &str,
    project: &Path,
) -> (i32, Vec<(String, String, String)>) {
    verify_json_runs(
        sb,
        project,
        &[
            "--target",
            target,
            "--scenario",
            "expired-404",
            "--scenario",
            "expired-400",
            "--scenario",
            "expired-401",
        ],
        ["build", "name", "verdict"],
        "verify of the project's SDK",
    )
}

/// `verify --json ARGS --path PROJECT`: the exit code and, for each run,
/// its `fields` (three strings of a scenario's JSON).
fn verify_json_runs(
    sb: &Sandbox,
    project: &Path,
    args: &[&str],
    fields: [&str; 3],
    what: &str,
) -> (i32, Vec<(String, String, String)>) {
    let mut all = vec!["verify", "--json"];
    all.extend_from_slice(args);
    all.extend(["--path", project.to_str().unwrap()]);
    let o = output_within(sb.command(&all), std::time::Duration::from_secs(180), what);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    let field = |s: &Value, f: &str| s[f].as_str().unwrap().to_string();
    let runs = v["installs"][0]["scenarios"]
        .as_array()
        .unwrap_or_else(|| panic!("no scenarios: {v:#}"))
        .iter()
        .map(|s| {
            (
                field(s, fields[0]),
                field(s, fields[1]),
                field(s, fields[2]),
            )
        })
        .collect();
    (code(&o), runs)
}

fn each_build(verdict: &str) -> Vec<(String, String, String)> {
    builds_runs(&["esm", "cjs"], verdict)
}

/// Each of `builds` on the three lost-session answers, each run `verdict`.
pub(super) fn builds_runs(builds: &[&str], verdict: &str) -> Vec<(String, String, String)> {
    builds
        .iter()
        .flat_map(|b| {
            ["expired-404", "expired-400", "expired-401"]
                .iter()
                .map(move |s| (b.to_string(), s.to_string(), verdict.to_string()))
        })
        .collect()
}

#[test]
fn verify_drives_both_builds_of_the_installed_sdk_stuck_before_apply_and_seamless_after() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    assert_eq!(verify_runs(&sb, &project), (1, each_build("STUCK")));
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(verify_runs(&sb, &project), (0, each_build("SEAMLESS")));
}

#[test]
fn an_unrecorded_release_is_written_without_yes_once_both_patched_builds_pass_verify() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.24.0");
    let p = project.to_str().unwrap();
    let sdk = project.join("node_modules").join(SDK);
    for rel in [ESM, CJS] {
        edit_file(&sdk.join(rel), |t| format!("{t}// a local build\n"));
    }
    let o = output_within(
        sb.command(&["apply", "--json", "--path", p]),
        std::time::Duration::from_secs(240),
        "apply with the verify gate",
    );
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["changed"], true, "{v:#}");
    assert_eq!(v["installs"][0]["verify"]["passed"], true, "{v:#}");
    for rel in [ESM, CJS] {
        let text = std::fs::read_to_string(sdk.join(rel)).unwrap();
        assert!(
            text.contains("(mcpatch: mcp-sdk-session-loss)"),
            "{rel} not patched"
        );
        assert!(text.ends_with("// a local build\n"));
    }
    // Nothing of the gate's copies is left in the install.
    let left: Vec<String> = ["dist/esm", "dist/cjs", "dist/esm/client", "dist/cjs/client"]
        .iter()
        .flat_map(|d| std::fs::read_dir(sdk.join(d)).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".mcpatch"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn diff_shows_each_build_under_its_own_state_and_each_hunk_is_what_apply_writes() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let p = project.to_str().unwrap();
    let sdk = project.join("node_modules").join(SDK);

    let o = sb.run(&["diff", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = stdout(&o);
    let headers: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("# ") || l.starts_with("--- ") || l.starts_with("+++ "))
        .collect();
    let (esm, cjs) = (
        sdk.join(ESM).display().to_string(),
        sdk.join(CJS).display().to_string(),
    );
    assert_eq!(
        headers,
        [
            format!("# {esm} (affected)"),
            format!("--- a/{ESM}"),
            format!("+++ b/{ESM}"),
            format!("# {cjs} (affected)"),
            format!("--- a/{CJS}"),
            format!("+++ b/{CJS}"),
        ]
    );

    // The printed change, applied with patch(1) to a copy, is what apply writes.
    let copy = sb.root().join("copy");
    cp(&["-a"], &sdk, &copy);
    let body: String = out
        .lines()
        .filter(|l| !l.starts_with("# "))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut child = std::process::Command::new("patch")
        .args(["-s", "-p1", "-d"])
        .arg(&copy)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("patch(1) applies the printed diff: apt-get install patch");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "{out}");
    assert_eq!(
        code(&sb.run(&["apply", "--yes", "--quiet", "--path", p])),
        0
    );
    assert_eq!(hashes(&copy), hashes(&sdk));

    let o = sb.run(&["diff", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "# {esm} (patched)\nalready patched; `mcpatch revert --path {p}` restores the original\n\
             # {cjs} (patched)\nalready patched; `mcpatch revert --path {p}` restores the original\n"
        )
    );
}

#[test]
fn revert_of_an_install_whose_esm_build_was_put_back_names_the_cjs_build_it_restores() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let p = project.to_str().unwrap();
    let sdk = project.join("node_modules").join(SDK);
    let before = hashes(&sdk);
    assert_eq!(
        code(&sb.run(&["apply", "--yes", "--quiet", "--path", p])),
        0
    );
    // An install of the package puts the ESM build back, not the CJS one.
    let original_esm = fetched_project("sdk-1.32.2")
        .join("node_modules")
        .join(SDK)
        .join(ESM);
    std::fs::remove_file(sdk.join(ESM)).unwrap();
    std::fs::copy(&original_esm, sdk.join(ESM)).unwrap();

    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o).replace(&sb.root().display().to_string(), "[SANDBOX]");
    let first: Vec<&str> = out.lines().take(3).collect();
    let rel = |f: &str| format!("[SANDBOX]/sdk-1.32.2/node_modules/{SDK}/{f}");
    assert_eq!(first.len(), 3, "{out}");
    assert!(
        first[0].starts_with(&format!("restored {} from backup ", rel(CJS))),
        "{out}"
    );
    assert_eq!(first[1], format!("    sha256 now {}", short(&before[1])));
    assert_eq!(
        first[2],
        format!("    {} was already the original", rel(ESM))
    );
    assert_eq!(hashes(&sdk), before);
}

/// Apply mutant `name` of the SDK catalogue `catalogue`
/// (test-fixtures/patch-mutants/<catalogue>/NN-name.json) to each patched
/// build `rels` of `pkg`, as scripts/patch-mutants.sh does: each search
/// string must match exactly once in each build.
pub(super) fn mutate_builds(pkg: &Path, rels: &[&str], catalogue: &str, name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test-fixtures/patch-mutants")
        .join(catalogue);
    let file = dir.join(format!("{name}.json"));
    let mutant: Value = serde_json::from_slice(
        &std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())),
    )
    .unwrap();
    for rel in rels {
        edit_file(&pkg.join(rel), |mut text| {
            for pair in mutant["replace"].as_array().unwrap() {
                let search = pair["search"].as_str().unwrap();
                assert_eq!(
                    text.matches(search).count(),
                    1,
                    "{name} in {rel}: {search:?} must match exactly once"
                );
                text = text.replacen(search, pair["with"].as_str().unwrap(), 1);
            }
            text
        });
    }
}

/// `verify --strict --json --target T --scenario expired-404` of `project`:
/// the exit code and each build's (build, verdict, note).
pub(super) fn strict_expired_404(
    sb: &Sandbox,
    target: &str,
    project: &Path,
) -> (i32, Vec<(String, String, String)>) {
    strict_scenario(sb, target, project, "expired-404")
}

/// `verify --strict --json --target T --scenario S` of `project`: the exit
/// code and each build's (build, verdict, note).
pub(super) fn strict_scenario(
    sb: &Sandbox,
    target: &str,
    project: &Path,
    scenario: &str,
) -> (i32, Vec<(String, String, String)>) {
    verify_json_runs(
        sb,
        project,
        &["--strict", "--target", target, "--scenario", scenario],
        ["build", "verdict", "note"],
        "strict verify of the project's SDK",
    )
}

/// The note of a run whose new session was used before its handshake ended,
/// with the request number and session id (they vary) taken out.
pub(super) fn handshake_note(note: &str) -> String {
    match (
        note.split_once(" (request "),
        note.split_once(" used session "),
    ) {
        (Some((method, _)), Some((_, rest))) => {
            let after_id = rest.split_once(' ').map_or("", |(_, r)| r);
            format!("{method} (request N) used session S {after_id}")
        }
        _ => note.to_string(),
    }
}

#[test]
fn strict_verify_breaks_an_sdk_whose_new_session_is_used_without_notifications_initialized() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let pkg = project.join("node_modules").join(SDK);
    mutate_builds(
        &pkg,
        &[ESM, CJS],
        "mcp-sdk",
        "22-no-initialized-notification",
    );
    let (rc, runs) = strict_expired_404(&sb, "mcp-sdk", &project);
    let runs: Vec<_> = runs
        .into_iter()
        .map(|(b, v, n)| (b, v, handshake_note(&n)))
        .collect();
    let want = |b: &str| {
        (
            b.to_string(),
            "BROKEN".to_string(),
            "tools/call (request N) used session S before the client sent its notifications/initialized: the handshake of that session was never finished".to_string(),
        )
    };
    assert_eq!((rc, runs), (1, vec![want("esm"), want("cjs")]));
}

#[test]
fn strict_verify_breaks_an_sdk_whose_refused_new_session_reaches_the_caller_without_the_servers_words(
) {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let pkg = project.join("node_modules").join(SDK);
    mutate_builds(&pkg, &[ESM, CJS], "mcp-sdk", "19-words-dropped");
    let (rc, runs) = strict_scenario(&sb, "mcp-sdk", &project, "refused-once");
    let want = |b: &str| {
        (
            b.to_string(),
            "MUTE".to_string(),
            "the error of call c2 (the new session refused) does not carry the server's words (\"session store unavailable, cannot open a session now\"): \"session lost\"".to_string(),
        )
    };
    assert_eq!((rc, runs), (1, vec![want("esm"), want("cjs")]));
}

#[test]
fn a_run_that_hangs_only_beside_the_others_is_run_again_alone_and_passes() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "sdk-1.32.2");
    let o = sb.run(&[
        "apply",
        "--yes",
        "--no-verify",
        "--path",
        project.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    // Each host takes the next numbered slot of its build when it first
    // sends: the first run (alone) takes 0, the two side-by-side runs 1 and 2,
    // the runs again alone 3 and 4. A tools/call never leaves slots 1 and 2:
    // hosts starved beside other runs, whatever the machine's speed (a check
    // of which hosts are alive depends on when each starts and is reaped).
    let slots = sb.root().join("host-slots");
    let pkg = project.join("node_modules").join(SDK);
    for (build, rel) in [("esm", ESM), ("cjs", CJS)] {
        let hang = format!(
            r#"        {{
            const fs = await import("node:fs");
            const dir = {dir:?};
            if (globalThis.mcpatchTestSlot === undefined) {{
                fs.mkdirSync(dir, {{ recursive: true }});
                let n = 0;
                for (;;) {{
                    try {{ fs.writeFileSync(`${{dir}}/{build}-${{n}}`, String(process.pid), {{ flag: "wx" }}); break; }}
                    catch (e) {{ if (e.code !== "EEXIST") throw e; n += 1; }}
                }}
                globalThis.mcpatchTestSlot = n;
            }}
            const beside = globalThis.mcpatchTestSlot === 1 || globalThis.mcpatchTestSlot === 2;
            if (message.method === "tools/call" && beside) return new Promise(() => {{}});
        }}
        return this._mcpatchSend(message, options);
"#,
            dir = slots.to_str().unwrap()
        );
        edit_file(&pkg.join(rel), |t| {
            let send = "        return this._mcpatchSend(message, options);\n";
            assert_eq!(t.matches(send).count(), 1, "{rel}");
            t.replacen(send, &hang, 1)
        });
    }
    let mut args = vec!["--jobs", "2", "--target", "mcp-sdk"];
    for s in ["expired-404", "expired-400", "expired-401"] {
        args.extend(["--scenario", s]);
    }
    let (rc, runs, notes) = super::sdk_scenarios::runs_and_notes(&sb, &project, &args, "verify");
    // The call that hung varies: keep what each note says of the rerun.
    let runs: Vec<(String, String, String, String)> = runs
        .into_iter()
        .zip(notes)
        .map(|((build, name, verdict), note)| {
            let rerun = note
                .split_once(" (run again alone: ")
                .map(|(_, r)| r.split(": call ").next().unwrap_or_default().to_string())
                .unwrap_or_default();
            (build, name, verdict, rerun)
        })
        .collect();
    let want = |b: &str, s: &str, rerun: &str| {
        (
            b.to_string(),
            s.to_string(),
            "SEAMLESS".to_string(),
            rerun.to_string(),
        )
    };
    let beside = "beside 1 other run it was HANG";
    assert_eq!(
        (rc, runs),
        (
            0,
            vec![
                want("esm", "expired-404", ""),
                want("esm", "expired-400", beside),
                want("esm", "expired-401", beside),
                want("cjs", "expired-404", ""),
                want("cjs", "expired-400", beside),
                want("cjs", "expired-401", beside),
            ]
        )
    );
}
