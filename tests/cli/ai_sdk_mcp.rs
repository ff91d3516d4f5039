//! ai-sdk-mcp, the target over the Vercel AI SDK's own MCP client
//! (`@ai-sdk/mcp`), on copies of real npm projects
//! (test-fixtures/ai-sdk-mcp/fetch.sh puts them in .cache/ai-sdk-mcp/<version>):
//! its builds are found through package.json `exports` (2.x: one ESM build,
//! `dist/index.js`; 1.x: ESM `dist/index.mjs` and CJS `dist/index.js`, patched
//! and reverted together), and a package.json naming a file outside the
//! package is refused.

use serde_json::Value;

use super::harden::backup_ids_under;
use super::mcp_sdk::{builds_runs, cp, verify_target_runs};
use super::*;

pub(super) const PKG: &str = "node_modules/@ai-sdk/mcp";

/// A real project with `@ai-sdk/mcp@version` fetched by test-fixtures/ai-sdk-mcp/fetch.sh.
fn fetched(version: &str) -> PathBuf {
    let p = cache().join("ai-sdk-mcp").join(version);
    assert!(
        p.join(".done").is_file(),
        "the real npm project with @ai-sdk/mcp@{version} is missing from {}: run test-fixtures/ai-sdk-mcp/fetch.sh (needs npm and the npm registry)",
        p.display()
    );
    p
}

/// Copy the project into the sandbox (hard links), the builds `rels` of
/// `@ai-sdk/mcp` and its package.json files of their own; returns the
/// project folder, canonical.
pub(super) fn project_copy(sb: &Sandbox, version: &str, rels: &[&str]) -> PathBuf {
    let dest = sb.root().join(format!("ai-{version}"));
    cp(&["-al"], &fetched(version), &dest);
    for rel in rels.iter().chain(&["package.json"]) {
        let f = dest.join(PKG).join(rel);
        let bytes = std::fs::read(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        std::fs::write(&f, bytes).unwrap();
    }
    dest.canonicalize().unwrap()
}

/// [`project_copy`] of 2.0.99 (its one build, `dist/index.js`), patched with `apply --yes`.
pub(super) fn patched_2_0_99(sb: &Sandbox) -> PathBuf {
    let project = project_copy(sb, "2.0.99", &["dist/index.js"]);
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    project
}

/// The ESM and CJS builds of `@ai-sdk/mcp` 1.x.
const BUILDS_1X: [&str; 2] = ["dist/index.mjs", "dist/index.js"];

/// [`project_copy`] of 1.0.102 with both its builds: the project and its package folder.
fn project_1x(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let project = project_copy(sb, "1.0.102", &BUILDS_1X);
    let pkg = project.join(PKG);
    (project, pkg)
}

fn installs(v: &Value) -> Vec<&Value> {
    v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["target"] == "ai-sdk-mcp")
        .collect()
}

fn hashes(pkg: &Path, rels: &[&str]) -> Vec<String> {
    rels.iter().map(|r| sha256_file(&pkg.join(r))).collect()
}

/// How many backups the ai-sdk-mcp target keeps.
fn backups(sb: &Sandbox) -> usize {
    backups_of(sb, "ai-sdk-mcp-session-loss")
}

#[test]
fn a_2x_project_is_affected_then_its_one_esm_build_is_patched_once_and_reverted_byte_for_byte() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "2.0.99", &["dist/index.js"]);
    let p = project.to_str().unwrap();
    let pkg = project.join(PKG);
    let before = sha256_file(&pkg.join("dist/index.js"));
    let spec = target_spec("ai-sdk-mcp");

    let o = sb.run(&["status", "--json", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let found = installs(&v);
    assert_eq!(found.len(), 1, "{v:#}");
    let i = found[0];
    assert_eq!(i["state"], "affected", "{i:#}");
    assert_eq!(i["version"], "2.0.99");
    assert_eq!(i["role"], "esm");
    // 2.x exports `import` only: its dist/index.js is the ESM build, no CJS companion.
    assert_eq!(i["file"], pkg.join("dist/index.js").to_str().unwrap());
    assert_eq!(i["companions"], Value::Null, "{i:#}");
    assert!(spec.is_original(&before), "2.0.99 is a recorded original");

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let after = sha256_file(&pkg.join("dist/index.js"));
    assert_eq!(Some(after.as_str()), spec.patched_for(&before));
    assert_eq!(backups(&sb), 1);
    let v = status_json(&sb, &["--path", p]);
    assert_eq!(installs(&v)[0]["state"], "patched", "{v:#}");

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "already patched: {} (2.0.99); nothing to do\n",
            pkg.display()
        )
    );
    assert_eq!(sha256_file(&pkg.join("dist/index.js")), after);
    assert_eq!(backups(&sb), 1, "a second apply makes no backup");

    let o = sb.run(&["revert", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&pkg.join("dist/index.js")), before);
}

#[test]
fn a_1x_project_has_its_esm_and_cjs_builds_patched_together_and_reverted_byte_for_byte() {
    let sb = Sandbox::new();
    let rels = BUILDS_1X;
    let (project, pkg) = project_1x(&sb);
    let p = project.to_str().unwrap();
    let before = hashes(&pkg, &rels);

    let o = sb.run(&["status", "--json", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let found = installs(&v);
    assert_eq!(found.len(), 1, "{v:#}");
    let i = found[0];
    assert_eq!(i["state"], "affected", "{i:#}");
    assert_eq!(
        (&i["role"], &i["file"]),
        (&"esm".into(), &pkg.join(rels[0]).to_str().unwrap().into())
    );
    let c = &i["companions"][0];
    assert_eq!(
        (&c["role"], &c["file"]),
        (&"cjs".into(), &pkg.join(rels[1]).to_str().unwrap().into())
    );
    assert_eq!(c["state"], "affected", "{i:#}");
    assert_eq!(c["sha256"], before[1].as_str());

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(backups(&sb), 2, "one backup per build");
    let after = hashes(&pkg, &rels);
    assert_ne!(after[0], before[0], "the ESM build was not patched");
    assert_ne!(after[1], before[1], "the CJS build was not patched");
    let v = status_json(&sb, &["--path", p]);
    let i = installs(&v)[0];
    assert_eq!(i["state"], "patched", "{i:#}");
    assert_eq!(i["companions"][0]["state"], "patched", "{i:#}");

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(hashes(&pkg, &rels), after, "a second apply changed a file");

    let o = sb.run(&["revert", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(hashes(&pkg, &rels), before);
}

#[test]
fn a_package_json_whose_require_names_the_import_build_has_that_one_file_patched_once() {
    let sb = Sandbox::new();
    let rels = BUILDS_1X;
    let (project, pkg) = project_1x(&sb);
    let p = project.to_str().unwrap();
    edit_file(&pkg.join("package.json"), |t| {
        t.replace(
            r#""require": "./dist/index.js""#,
            r#""require": "./dist/index.mjs""#,
        )
    });
    let before = hashes(&pkg, &rels);

    let v = status_json(&sb, &["--path", p]);
    let i = installs(&v)[0];
    assert_eq!(
        (&i["state"], &i["companions"]),
        (&"affected".into(), &Value::Null),
        "{i:#}"
    );

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let after = hashes(&pkg, &rels);
    assert_ne!(after[0], before[0], "the one build was not patched");
    assert_eq!(
        after[1], before[1],
        "a build package.json no longer names was patched"
    );
    let id = backup_ids_under(&sb, "backups/ai-sdk-mcp-session-loss");
    assert_eq!(id.len(), 1, "one backup of the one file: {id:?}");
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "patched [SANDBOX]/ai-1.0.102/{PKG} (1.0.102)\n  sha256 now {}, original saved as backup {}\nrestart the processes of this project that use @ai-sdk/mcp so they load the patched client; check it with `mcpatch verify --path [SANDBOX]/ai-1.0.102`\n",
            short(&after[0]),
            id[0]
        )
    );
}

#[test]
fn a_package_json_naming_a_build_outside_the_package_is_refused_and_nothing_is_written() {
    let sb = Sandbox::new();
    let rels = BUILDS_1X;
    let (project, pkg) = project_1x(&sb);
    let p = project.to_str().unwrap();
    std::fs::write(project.join("evil.js"), "module.exports = {};\n").unwrap();
    edit_file(&pkg.join("package.json"), |t| {
        t.replace(
            r#""require": "./dist/index.js""#,
            r#""require": "./../../../evil.js""#,
        )
    });
    let before = hashes(&pkg, &rels);
    let why = format!(
        "the cjs build: {}: exports[\".\"][\"require\"] is \"./../../../evil.js\", not a path inside the package (`./...`)",
        pkg.join("package.json").display()
    );

    let v = status_json(&sb, &["--path", p]);
    let i = installs(&v)[0];
    assert_eq!(i["state"], "modified", "{i:#}");
    assert_eq!(i["note"], why.as_str());

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("refused: {} (1.0.102)\n    {why}\n", pkg.display())
    );
    assert_eq!(hashes(&pkg, &rels), before);
    assert_eq!(
        std::fs::read_to_string(project.join("evil.js")).unwrap(),
        "module.exports = {};\n"
    );
    assert_eq!(backups(&sb), 0);
}

#[test]
fn verify_drives_the_installed_create_mcp_client_stuck_before_apply_and_seamless_after() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "2.0.99", &["dist/index.js"]);
    assert_eq!(
        verify_target_runs(&sb, "ai-sdk-mcp", &project),
        (1, builds_runs(&["esm"], "STUCK"))
    );
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        verify_target_runs(&sb, "ai-sdk-mcp", &project),
        (0, builds_runs(&["esm"], "SEAMLESS"))
    );
}

#[test]
fn verify_drives_both_builds_of_a_1x_release_stuck_before_apply_and_seamless_after() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "1.0.102", &["dist/index.mjs", "dist/index.js"]);
    assert_eq!(
        verify_target_runs(&sb, "ai-sdk-mcp", &project),
        (1, builds_runs(&["esm", "cjs"], "STUCK"))
    );
    let o = sb.run(&["apply", "--yes", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        verify_target_runs(&sb, "ai-sdk-mcp", &project),
        (0, builds_runs(&["esm", "cjs"], "SEAMLESS"))
    );
}

#[test]
fn after_apply_the_whole_default_verify_passes_and_a_get_stream_answered_404_keeps_the_session() {
    // A server without a GET stream that answers its GET 404 (sse-404): the
    // transport drops the session id itself; the patched client carries it
    // again, so a live session is kept (HELD), not thrown away each request.
    let sb = Sandbox::new();
    let project = project_copy(&sb, "2.0.99", &["dist/index.js"]);
    let p = project.to_str().unwrap();
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = output_within(
        sb.command(&["verify", "--json", "--target", "ai-sdk-mcp", "--path", p]),
        std::time::Duration::from_secs(300),
        "the default verify of the patched @ai-sdk/mcp",
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    let failed: Vec<String> = v["installs"][0]["scenarios"]
        .as_array()
        .unwrap_or_else(|| panic!("no scenarios: {v:#}"))
        .iter()
        .filter(|s| s["ok"] != true)
        .map(|s| format!("{}: {} ({})", s["name"], s["verdict"], s["note"]))
        .collect();
    assert_eq!(
        (code(&o), failed, v["installs"][0]["overall"].as_str()),
        (0, Vec::<String>::new(), Some("SEAMLESS"))
    );
    let sse = v["installs"][0]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "sse-404")
        .unwrap_or_else(|| panic!("sse-404 did not run: {v:#}"));
    assert_eq!(
        (&sse["verdict"], &sse["initialize_count"]),
        (&Value::from("HELD"), &Value::from(1))
    );
    // The calls its transport sends without an id while the new session starts
    // are refused only once it is up, and each is sent once more on it.
    let renewal = v["installs"][0]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "call-during-renewal")
        .unwrap_or_else(|| panic!("call-during-renewal did not run: {v:#}"));
    assert_eq!(
        (&renewal["verdict"], &renewal["initialize_count"]),
        (&Value::from("SEAMLESS"), &Value::from(2))
    );
}

#[test]
fn the_real_create_mcp_client_is_stuck_across_a_real_server_restart_and_seamless_patched() {
    // test-fixtures/ai-sdk-mcp/prove.mjs: the real createMCPClient of 2.0.99 and
    // of 1.0.102 (ESM and CJS) against the real TypeScript SDK server restarted
    // twice mid-session, on 404, 400 and 401; unpatched, then patched with the
    // bytes `mcpatch apply` writes (held to the manifest's patched_sha256, which
    // the apply tests above check mcpatch gives).
    let node = node22_dir().join("node");
    let mut cmd = std::process::Command::new(&node);
    cmd.arg("test-fixtures/ai-sdk-mcp/prove.mjs")
        .args(["--versions", "2.0.99,1.0.102", "--node"])
        .arg(&node)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let o = output_within(
        cmd,
        std::time::Duration::from_secs(600),
        "prove.mjs of ai-sdk-mcp",
    );
    let out = stdout(&o);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" unpatched ") || l.contains(" patched "))
        .collect();
    assert_eq!(code(&o), 0, "{out}{}", stderr(&o));
    // 2.0.99 (esm) and 1.0.102 (esm, cjs), 3 answers, unpatched and patched.
    assert_eq!(lines.len(), 18, "{out}");
    for l in lines {
        let want = if l.contains(" unpatched ") {
            ": STUCK "
        } else {
            ": SEAMLESS 0/8 failed, new sessions per restart 1,1;"
        };
        assert!(l.contains(want), "{l}\n{out}");
    }
}

#[test]
fn the_patched_create_mcp_client_answers_every_call_of_a_server_reloading_every_2_s() {
    let sb = Sandbox::new();
    let project = project_copy(&sb, "2.0.99", &["dist/index.js"]);
    let p = project.to_str().unwrap();
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = output_within(
        sb.command(&[
            "verify",
            "--json",
            "--target",
            "ai-sdk-mcp",
            "--scenario",
            "reload",
            "--path",
            p,
        ]),
        std::time::Duration::from_secs(180),
        "verify --scenario reload of the patched @ai-sdk/mcp",
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(
        (code(&o), &s["name"], &s["verdict"], &s["failed_calls"]),
        (
            0,
            &Value::from("reload"),
            &Value::from("RELOADED"),
            &Value::from(0)
        ),
        "{v:#}"
    );
}

#[test]
fn strict_verify_breaks_a_create_mcp_client_whose_new_session_skips_notifications_initialized() {
    use super::mcp_sdk::{handshake_note, mutate_builds, strict_expired_404};
    let sb = Sandbox::new();
    let project = patched_2_0_99(&sb);
    mutate_builds(
        &project.join(PKG),
        &["dist/index.js"],
        "ai-sdk-mcp",
        "14-no-initialized-notification",
    );
    let (rc, runs) = strict_expired_404(&sb, "ai-sdk-mcp", &project);
    let runs: Vec<_> = runs
        .into_iter()
        .map(|(b, v, n)| (b, v, handshake_note(&n)))
        .collect();
    assert_eq!(
        (rc, runs),
        (
            1,
            vec![(
                "esm".to_string(),
                "BROKEN".to_string(),
                "tools/call (request N) used session S before the client sent its notifications/initialized: the handshake of that session was never finished".to_string(),
            )]
        )
    );
}

#[test]
fn strict_verify_breaks_a_create_mcp_client_that_sends_a_call_a_third_time_when_its_repeat_meets_the_loss(
) {
    use super::mcp_sdk::{mutate_builds, strict_scenario};
    let sb = Sandbox::new();
    let project = patched_2_0_99(&sb);
    mutate_builds(
        &project.join(PKG),
        &["dist/index.js"],
        "ai-sdk-mcp",
        "08-resend-twice",
    );
    let (rc, runs) = strict_scenario(&sb, "ai-sdk-mcp", &project, "forgetful");
    assert_eq!(
        (rc, runs),
        (
            1,
            vec![(
                "esm".to_string(),
                "REPEATED".to_string(),
                "call c1 was sent 3 times: more than the one repeat a lost session allows"
                    .to_string(),
            )]
        )
    );
}

#[test]
fn strict_verify_catches_a_create_mcp_client_that_drops_a_call_whose_refusal_comes_after_the_new_session(
) {
    use super::mcp_sdk::{mutate_builds, strict_scenario};
    let sb = Sandbox::new();
    let project = patched_2_0_99(&sb);
    mutate_builds(
        &project.join(PKG),
        &["dist/index.js"],
        "ai-sdk-mcp",
        "21-late-refusal-during-renewal",
    );
    // c1 before the loss, c2 to c9 the batch that meets it, c10 to c13 sent
    // without an id while the new session starts: their refusals, held until it
    // is up, are not recovered by the mutant.
    let (rc, runs) = strict_scenario(&sb, "ai-sdk-mcp", &project, "call-during-renewal");
    assert_eq!(
        (rc, runs),
        (
            1,
            vec![(
                "esm".to_string(),
                "RECOVERED".to_string(),
                format!("one fresh initialize without the dead id, calls succeeded; 4 call(s) failed, the first c10 (echo): MCP HTTP Transport Error: POSTing to endpoint (HTTP 400): {}", r#"{"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null,"jsonrpc":"2.0"}"#),
            )]
        )
    );
}
