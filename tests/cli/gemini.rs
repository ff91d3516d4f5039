//! gemini-cli, mcpatch's third target, content-anchored: real releases from
//! the npm registry (test-fixtures/gemini-cli/fetch.sh, run by
//! scripts/fetch-fixtures.sh, puts 0.45.2 0.47.0 0.51.0 0.56.0 0.61.0 in
//! .cache/gemini-cli/<v>), their loaded McpClient chunk found by reachability
//! from the bin entry, classified by sha256, patched through the manifest's
//! anchors, and reverted byte for byte; a chunk the anchors do not fit is
//! refused naming the anchor.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use serde_json::Value;

use super::*;

const RELEASES: [&str; 5] = ["0.61.0", "0.56.0", "0.51.0", "0.47.0", "0.45.2"];
/// The known original of `version`: (sha256, chunk in the package, patched sha256).
pub(super) fn original_of(version: &str) -> (String, String, String) {
    let r = original_revision("gemini-cli", version);
    let m: Value =
        serde_json::from_str(include_str!("../../patches/gemini-cli/manifest.json")).unwrap();
    let chunk = m["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["sha256"].as_str() == r.sha256.as_deref())
        .map(|x| x["file"].as_str().unwrap().to_string())
        .unwrap();
    (
        r.sha256.clone().unwrap(),
        chunk,
        r.patched_sha256.clone().unwrap(),
    )
}

/// Every file of bundle/ as (inode, size, mtime), and the chunk's sha256:
/// what apply and revert may change.
fn bundle(pkg: &Path, chunk: &str) -> (BTreeMap<PathBuf, (u64, u64, i64)>, String) {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(pkg.join("bundle")).unwrap().flatten() {
        let m = e.metadata().unwrap();
        if m.is_file() && e.file_name().to_string_lossy() != chunk.trim_start_matches("bundle/") {
            out.insert(e.path(), (m.ino(), m.len(), m.mtime()));
        }
    }
    (out, sha256_file(&pkg.join(chunk)))
}

pub(super) fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}{}", stdout(o), stderr(o)))
}

/// A proven release: affected, patched once (a second apply changes
/// nothing), reverted byte for byte, no other file of its bundle touched.
fn proven_release_is_affected_patched_once_and_reverted_byte_for_byte(version: &str) {
    let sb = Sandbox::new();
    {
        let pkg = sb
            .gemini_install(version, &format!("g-{version}"))
            .canonicalize()
            .unwrap();
        let path = pkg.to_str().unwrap();
        let (sha, chunk, patched) = original_of(version);
        let before = bundle(&pkg, &chunk);
        assert_eq!(before.1, sha, "{version}");

        let o = sb.run(&["status", "--json", "--path", path]);
        assert_eq!(code(&o), 1, "{version}: {}", stderr(&o));
        let v = json(&o);
        let i = &v["installs"][0];
        assert_eq!(v["installs"].as_array().unwrap().len(), 1, "{v:#}");
        assert_eq!(i["target"], "gemini-cli");
        assert_eq!(i["file"], pkg.join(&chunk).to_str().unwrap());
        assert_eq!(i["version"], version);
        assert_eq!(i["state"], "affected", "{version}: {v:#}");
        assert_eq!(i["next_step"], "run `mcpatch apply`");

        let o = sb.run(&["apply", "--json", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
        let v = json(&o);
        assert_eq!(v["changed"], true, "{version}: {v:#}");
        assert_eq!(v["installs"][0]["state_before"], "affected");
        assert_eq!(v["installs"][0]["state_after"], "patched");
        let after = bundle(&pkg, &chunk);
        assert_eq!(after.1, patched, "{version}");
        assert_eq!(after.0, before.0, "{version}: apply touched another file");

        let o = sb.run(&["status", "--json", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}", stderr(&o));
        assert_eq!(json(&o)["installs"][0]["state"], "patched", "{version}");

        // A second apply changes nothing.
        let o = sb.run(&["apply", "--json", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}", stderr(&o));
        assert_eq!(json(&o)["changed"], false, "{version}");
        assert_eq!(bundle(&pkg, &chunk), after, "{version}");

        let o = sb.run(&["revert", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
        assert!(
            stdout(&o).ends_with("restart gemini-cli so it loads the restored MCP client\n"),
            "{}",
            stdout(&o)
        );
        let reverted = bundle(&pkg, &chunk);
        assert_eq!(reverted.1, sha, "{version}: revert is not byte for byte");
        assert_eq!(reverted.0, before.0, "{version}");
    }
}

/// `text` patched by `anchors` (gemini-cli's current ones, or an earlier revision's).
fn patched_by(anchors: &mcpatch::anchors::Anchors, text: &str) -> String {
    match anchors.apply(text).unwrap() {
        mcpatch::anchors::Applied::Patched(t) => t,
        other => panic!("the anchors did not patch: {other:?}"),
    }
}

/// `text` as the earlier patch revision `revision` of gemini-cli made it.
fn patched_by_earlier_revision(text: &str, revision: u32) -> String {
    let earlier = target_spec("gemini-cli")
        .earlier_anchors
        .iter()
        .find(|e| e.revision == revision)
        .unwrap();
    patched_by(&earlier.anchors, text)
}

#[test]
fn a_copy_patched_by_revision_1_is_outdated_and_apply_upgrades_it_to_the_current_revision() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let path = pkg.to_str().unwrap();
    let (original, chunk, patched) = original_of("0.61.0");
    let file = pkg.join(&chunk);
    // Revision 1 on the original gives the hash the manifest records as outdated.
    let r1 = edit_file(&file, |t| patched_by_earlier_revision(&t, 1));
    assert_eq!(
        r1,
        "012c034f4b54c7bf78d4468348f73631e7526fe60f579e9064a2d65acba173d8"
    );
    let o = sb.run(&["status", "--json", "--path", path]);
    let v = json(&o);
    let i = &v["installs"][0];
    assert_eq!(
        (code(&o), i["state"].as_str()),
        (1, Some("outdated")),
        "{v:#}"
    );
    assert_eq!(
        i["next_step"],
        "run `mcpatch apply` to upgrade to the current patch revision"
    );
    let o = sb.run(&["apply", "--json", "--no-verify", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v = json(&o);
    assert_eq!(v["installs"][0]["state_before"], "outdated", "{v:#}");
    assert_eq!(v["installs"][0]["state_after"], "patched", "{v:#}");
    assert_eq!(sha256_file(&file), patched);
    // The backup holds the original, so revert gives it back byte for byte.
    let o = sb.run(&["revert", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), original);

    // A release mcpatch has no record of, patched by revision 1: outdated by
    // its content, upgraded to what the current anchors make of its original.
    let unrecorded = edit_file(&file, |t| format!("{t}// a release mcpatch has not seen\n"));
    let base = std::fs::read_to_string(&file).unwrap();
    let r1_unrecorded = edit_file(&file, |t| patched_by_earlier_revision(&t, 1));
    let o = sb.run(&["status", "--json", "--path", path]);
    let v = json(&o);
    let i = &v["installs"][0];
    assert_eq!(i["state"], "outdated", "{v:#}");
    assert_eq!(
        i["note"],
        "patched by an earlier mcpatch revision (1) on a revision mcpatch has no record of: a late refusal of a session already replaced starts a second new session when the calls were of one tool, and after a new session that got no answer the next call is sent on the lost session"
    );
    // Not pristine code the anchors fit: upgraded only when the user says so.
    let o = sb.run(&["apply", "--no-verify", "--path", path]);
    assert_eq!(
        (code(&o), stdout(&o)),
        (
            1,
            format!("refused: {path} (0.61.0)\n    outdated: sha256 {r1_unrecorded} carries patch revision 1 on a file mcpatch does not know; review with `mcpatch diff --path {path}`, then rerun with --yes to upgrade it anyway\n")
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(sha256_file(&file), r1_unrecorded);
    let o = sb.run(&["apply", "--yes", "--no-verify", "--json", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let current = target_spec("gemini-cli").anchors.as_ref().unwrap();
    let want = patched_by(current, &base);
    assert!(
        std::fs::read_to_string(&file).unwrap() == want,
        "not the current revision on the unrecorded original"
    );
    let o = sb.run(&["revert", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), unrecorded);
}

// One test per release, so the harness runs them beside the others.
#[test]
fn release_0_61_0_is_affected_patched_once_and_reverted_byte_for_byte() {
    proven_release_is_affected_patched_once_and_reverted_byte_for_byte("0.61.0");
}

#[test]
fn release_0_56_0_is_affected_patched_once_and_reverted_byte_for_byte() {
    proven_release_is_affected_patched_once_and_reverted_byte_for_byte("0.56.0");
}

#[test]
fn release_0_51_0_is_affected_patched_once_and_reverted_byte_for_byte() {
    proven_release_is_affected_patched_once_and_reverted_byte_for_byte("0.51.0");
}

#[test]
fn release_0_47_0_is_affected_patched_once_and_reverted_byte_for_byte() {
    proven_release_is_affected_patched_once_and_reverted_byte_for_byte("0.47.0");
}

#[test]
fn release_0_45_2_is_affected_patched_once_and_reverted_byte_for_byte() {
    proven_release_is_affected_patched_once_and_reverted_byte_for_byte("0.45.2");
}

#[test]
fn every_proven_release_has_a_test_of_its_own() {
    let src = include_str!("gemini.rs");
    for version in RELEASES {
        let name = format!("fn release_{}_is_affected", version.replace('.', "_"));
        assert!(src.contains(&name), "no test {name}");
    }
}

#[test]
fn a_release_whose_anchor_does_not_match_is_refused_naming_it_and_left_untouched() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (_, chunk, _) = original_of("0.61.0");
    let file = pkg.join(&chunk);
    let edited = edit_file(&file, |t| {
        t.replacen(
            "        arguments: call.args,\n",
            "        arguments: call.args ,\n",
            1,
        )
    });
    let path = pkg.to_str().unwrap();
    let o = sb.run(&["status", "--json", "--path", path]);
    let v = json(&o);
    let i = &v["installs"][0];
    assert_eq!(i["state"], "modified", "{v:#}");
    assert_eq!(
        i["note"],
        "unknown revision; the patch's content anchors do not fit it (anchor `callable-call-tool` matched 0 times (expected exactly once))"
    );
    assert_eq!(
        i["next_step"],
        "reinstall gemini-cli (`npm install -g @google/gemini-cli`, or however it was installed), then run `mcpatch apply`"
    );
    let o = sb.run(&["apply", "--yes", "--no-verify", "--path", path]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: the patch of gemini-cli does not fit [SANDBOX]/g/lib/node_modules/@google/gemini-cli/{chunk}: anchor `callable-call-tool` matched 0 times (expected exactly once)\nhelp: nothing was changed; the patch goes where each of its content anchors matches exactly once, and this file has changed there: reinstall gemini-cli (`npm install -g @google/gemini-cli`, or however it was installed), then run `mcpatch status --path [SANDBOX]/g/lib/node_modules/@google/gemini-cli` (a release mcpatch does not fit yet needs a newer mcpatch)\n")
    );
    assert_eq!(sha256_file(&file), edited, "the install was changed");
    let backups = super::harden::backup_ids_under(&sb, "backups/gemini-cli-session-loss");
    assert!(backups.is_empty(), "{backups:?}");
}

/// `status` on a gemini-cli install with this sandbox's own settings only,
/// run in the sandbox's root folder (no project settings).
fn status_of(sb: &Sandbox, pkg: &Path, json: bool) -> Output {
    status_in(sb, pkg, json, sb.root())
}

/// [`status_of`] run in the folder `cwd` (whose `.gemini/settings.json` counts).
fn status_in(sb: &Sandbox, pkg: &Path, json: bool, cwd: &Path) -> Output {
    let mut args = vec!["status", "--path", pkg.to_str().unwrap()];
    if json {
        args.push("--json");
    }
    let mut c = sb.command(&args);
    c.current_dir(cwd)
        .env("MCPATCH_SYSROOT", sb.root().join("sys"))
        .env("COLUMNS", "1000")
        .env_remove("GEMINI_CLI_HOME")
        .env_remove("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
        .env_remove("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
        .env_remove("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        .env_remove("GEMINI_CLI_TRUST_WORKSPACE")
        .env_remove("GEMINI_RESTRICTED_MODE");
    c.output().unwrap()
}

/// Write a settings file (or trustedFolders.json) of the sandbox.
fn settings(sb: &Sandbox, rel: &str, text: &str) -> PathBuf {
    let p = sb.root().join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// The `auto-update:` line of a status text, if any.
fn auto_update_line(text: &str) -> Option<&str> {
    text.lines().find(|l| l.starts_with("  auto-update: "))
}

/// The way out for an install found by `status --path` of the package folder: its commands keep the --path.
const WAYS_OUT: &str = "or re-apply after every update unattended (`mcpatch apply --path [SANDBOX]/g/lib/node_modules/@google/gemini-cli --yes --quiet`, e.g. from cron or a login script)";

#[test]
fn status_says_when_auto_update_will_drop_the_patch_and_both_ways_out() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let o = status_of(&sb, &pkg, false);
    let text = sb.normalize(&o.stdout);
    assert!(
        text.contains("\n  auto-update: on (gemini-cli's default; no settings file turns it off): gemini-cli's next update replaces the package and drops the patch; turn it off (\"general\": {\"enableAutoUpdate\": false} in ~/.gemini/settings.json), or re-apply after every update unattended (`mcpatch apply --path [SANDBOX]/g/lib/node_modules/@google/gemini-cli --yes --quiet`, e.g. from cron or a login script)\n"),
        "{text}"
    );
    let v = json(&status_of(&sb, &pkg, true));
    assert_eq!(
        v["installs"][0]["auto_update"],
        serde_json::json!({"on": true, "set_by": null, "project": null})
    );
    // Turned off in the user's settings (JSON with comments): no note.
    let settings = sb.root().join("home/.gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        "{\n  // mcpatch's patch stays\n  \"general\": { \"enableAutoUpdate\": false }\n}\n",
    )
    .unwrap();
    let text = sb.normalize(&status_of(&sb, &pkg, false).stdout);
    assert!(!text.contains("auto-update"), "{text}");
    let v = json(&status_of(&sb, &pkg, true));
    assert_eq!(
        v["installs"][0]["auto_update"],
        serde_json::json!({"on": false, "set_by": settings.to_str().unwrap(), "project": null})
    );
    // The system settings file wins over the user's.
    let system = sb.root().join("sys/etc/gemini-cli/settings.json");
    std::fs::create_dir_all(system.parent().unwrap()).unwrap();
    std::fs::write(&system, r#"{"general":{"enableAutoUpdate":true}}"#).unwrap();
    let text = sb.normalize(&status_of(&sb, &pkg, false).stdout);
    assert!(
        text.contains("\n  auto-update: on (as [SANDBOX]/sys/etc/gemini-cli/settings.json says): "),
        "{text}"
    );
}

#[test]
fn a_project_that_turns_auto_update_off_protects_only_sessions_started_in_its_folder() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let proj = sb.root().join("proj");
    let file = settings(
        &sb,
        "proj/.gemini/settings.json",
        r#"{"general": {"enableAutoUpdate": false}}"#,
    );
    settings(
        &sb,
        "home/.gemini/trustedFolders.json",
        &format!(r#"{{"{}": "TRUST_FOLDER"}}"#, proj.display()),
    );
    let text = sb.normalize(&status_in(&sb, &pkg, false, &proj).stdout);
    assert_eq!(
        auto_update_line(&text),
        Some(format!("  auto-update: on (gemini-cli's default; no settings file turns it off): gemini-cli's next update replaces the package and drops the patch; [SANDBOX]/proj/.gemini/settings.json turns it off only for gemini-cli sessions started in [SANDBOX]/proj (a trusted folder): a session started in any other folder still updates; turn it off (\"general\": {{\"enableAutoUpdate\": false}} in ~/.gemini/settings.json), {WAYS_OUT}").as_str()),
        "{text}"
    );
    let v = json(&status_in(&sb, &pkg, true, &proj));
    assert_eq!(
        v["installs"][0]["auto_update"],
        serde_json::json!({"on": true, "set_by": null, "project": {
            "folder": proj.to_str().unwrap(), "file": file.to_str().unwrap(),
            "trusted": true, "file_on": false, "on": false, "set_by": file.to_str().unwrap()}})
    );
    // Not trusted: gemini-cli ignores the file.
    std::fs::remove_file(sb.root().join("home/.gemini/trustedFolders.json")).unwrap();
    let text = sb.normalize(&status_in(&sb, &pkg, false, &proj).stdout);
    assert_eq!(
        auto_update_line(&text),
        Some(format!("  auto-update: on (gemini-cli's default; no settings file turns it off): gemini-cli's next update replaces the package and drops the patch; [SANDBOX]/proj/.gemini/settings.json would turn it off, but gemini-cli ignores it: [SANDBOX]/proj is not a trusted folder; turn it off (\"general\": {{\"enableAutoUpdate\": false}} in ~/.gemini/settings.json), {WAYS_OUT}").as_str()),
        "{text}"
    );
    // A session started in a folder below reads only that folder's settings.
    std::fs::create_dir_all(proj.join("src")).unwrap();
    let v = json(&status_in(&sb, &pkg, true, &proj.join("src")));
    assert_eq!(v["installs"][0]["auto_update"]["project"], Value::Null);
    // Trusted again, but the system settings file turns it on over the project's.
    settings(
        &sb,
        "home/.gemini/trustedFolders.json",
        &format!(r#"{{"{}": "TRUST_FOLDER"}}"#, proj.display()),
    );
    settings(
        &sb,
        "sys/etc/gemini-cli/settings.json",
        r#"{"general": {"enableAutoUpdate": true}}"#,
    );
    let text = sb.normalize(&status_in(&sb, &pkg, false, &proj).stdout);
    assert_eq!(
        auto_update_line(&text),
        Some(format!("  auto-update: on (as [SANDBOX]/sys/etc/gemini-cli/settings.json says): gemini-cli's next update replaces the package and drops the patch; [SANDBOX]/proj/.gemini/settings.json turns it off, but [SANDBOX]/sys/etc/gemini-cli/settings.json overrides it; turn it off (\"general\": {{\"enableAutoUpdate\": false}} in ~/.gemini/settings.json), {WAYS_OUT}").as_str()),
        "{text}"
    );
}

#[test]
fn a_trusted_project_that_turns_auto_update_on_drops_the_patch_from_its_folder() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let proj = sb.root().join("proj");
    let user = settings(
        &sb,
        "home/.gemini/settings.json",
        r#"{"general": {"enableAutoUpdate": false}}"#,
    );
    let file = settings(
        &sb,
        "proj/.gemini/settings.json",
        "{\n  // this team wants updates\n  \"general\": {\"enableAutoUpdate\": true}\n}\n",
    );
    // Trusted by a parent rule (TRUST_PARENT on a folder inside it).
    settings(
        &sb,
        "home/.gemini/trustedFolders.json",
        &format!(r#"{{"{}/src": "TRUST_PARENT"}}"#, proj.display()),
    );
    let text = sb.normalize(&status_in(&sb, &pkg, false, &proj).stdout);
    assert_eq!(
        auto_update_line(&text),
        Some(format!("  auto-update: off (as [SANDBOX]/home/.gemini/settings.json says), but on for gemini-cli sessions started in [SANDBOX]/proj (as [SANDBOX]/proj/.gemini/settings.json says; a trusted folder): the next update started from that folder replaces the package and drops the patch; turn it off there (\"general\": {{\"enableAutoUpdate\": false}} in [SANDBOX]/proj/.gemini/settings.json, instead of the setting that turns it on), {WAYS_OUT}").as_str()),
        "{text}"
    );
    let v = json(&status_in(&sb, &pkg, true, &proj));
    assert_eq!(
        v["installs"][0]["auto_update"],
        serde_json::json!({"on": false, "set_by": user.to_str().unwrap(), "project": {
            "folder": proj.to_str().unwrap(), "file": file.to_str().unwrap(),
            "trusted": true, "file_on": true, "on": true, "set_by": file.to_str().unwrap()}})
    );
    // Anywhere else, or with the folder not trusted, auto-update is off: no note.
    let text = sb.normalize(&status_of(&sb, &pkg, false).stdout);
    assert_eq!(auto_update_line(&text), None, "{text}");
    settings(
        &sb,
        "home/.gemini/trustedFolders.json",
        &format!(r#"{{"{}": "DO_NOT_TRUST"}}"#, proj.display()),
    );
    let text = sb.normalize(&status_in(&sb, &pkg, false, &proj).stdout);
    assert_eq!(auto_update_line(&text), None, "{text}");
    // The system settings file wins over the project's.
    settings(
        &sb,
        "home/.gemini/trustedFolders.json",
        &format!(r#"{{"{}": "TRUST_FOLDER"}}"#, proj.display()),
    );
    settings(
        &sb,
        "sys/etc/gemini-cli/settings.json",
        r#"{"general": {"enableAutoUpdate": false}}"#,
    );
    let text = sb.normalize(&status_in(&sb, &pkg, false, &proj).stdout);
    assert_eq!(auto_update_line(&text), None, "{text}");
}

#[test]
fn homebrew_cellar_and_bun_globals_are_searched() {
    let sb = Sandbox::new();
    let cellar = sb.gemini_install(
        "0.61.0",
        "sys/opt/homebrew/Cellar/gemini-cli/0.61.0/libexec",
    );
    let bun = sb
        .root()
        .join("home/.bun/install/global/node_modules")
        .join(GEMINI_PACKAGE);
    std::fs::create_dir_all(bun.parent().unwrap()).unwrap();
    let st = std::process::Command::new("cp")
        .arg("-al")
        .arg(fetched_gemini("0.56.0"))
        .arg(&bun)
        .status()
        .unwrap();
    assert!(st.success());
    let mut c = sb.command(&["status", "--json", "--target", "gemini-cli"]);
    c.env_remove("MCPATCH_SYSTEM_ROOTS")
        .env("MCPATCH_SYSROOT", sb.root().join("sys"));
    let v = json(&c.output().unwrap());
    let found: Vec<(String, String, String)> = v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().to_string(),
                i["state"].as_str().unwrap().to_string(),
                i["found_via"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let cellar = cellar.canonicalize().unwrap();
    let bun = bun.canonicalize().unwrap();
    let bun_root = sb.root().join("home/.bun/install/global/node_modules");
    let formula = sb.root().join("sys/opt/homebrew/Cellar/gemini-cli");
    let mut want = vec![
        (
            cellar.display().to_string(),
            "affected".to_string(),
            format!("Homebrew Cellar ({})", formula.display()),
        ),
        (
            bun.display().to_string(),
            "affected".to_string(),
            format!("global root {}", bun_root.display()),
        ),
    ];
    want.sort();
    let mut found = found;
    found.sort();
    assert_eq!(found, want, "{v:#}");
    // Homebrew's gemini-cli is never auto-updated by gemini-cli itself.
    for i in v["installs"].as_array().unwrap() {
        let in_cellar = i["path"].as_str().unwrap().contains("/Cellar/");
        assert_eq!(i.get("auto_update").is_none(), in_cellar, "{i:#}");
    }
}

/// The status cache: `(state home)/cache/status.json`.
fn status_cache(sb: &Sandbox) -> PathBuf {
    sb.dsh_home().join("cache/status.json")
}

#[test]
fn a_plain_status_remembers_what_it_read_and_apply_never_trusts_it() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let path = pkg.to_str().unwrap();
    let (original, chunk, patched) = original_of("0.61.0");
    let status = |sb: &Sandbox| json(&sb.run(&["status", "--json", "--path", path]));
    assert_eq!(status(&sb)["installs"][0]["state"], "affected");
    let cache = status_cache(&sb);
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the cache is private");
    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(text.contains(&original), "{text}");

    // A cache that lies about an unchanged chunk is believed by status alone
    // (it is what status saves its reading on) ...
    std::fs::write(&cache, text.replace(&original, &patched)).unwrap();
    assert_eq!(status(&sb)["installs"][0]["state"], "patched");
    // ... never by apply: it reads the file, finds it affected, patches it.
    let o = sb.run(&["apply", "--json", "--path", path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(
        (&v["changed"], &v["installs"][0]["state_before"]),
        (&Value::Bool(true), &Value::from("affected")),
        "{v:#}"
    );
    assert_eq!(sha256_file(&pkg.join(&chunk)), patched);

    // A chunk that changes is read again, whatever the cache says.
    assert_eq!(status(&sb)["installs"][0]["state"], "patched");
    let o = sb.run(&["revert", "--path", path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(status(&sb)["installs"][0]["state"], "affected");
}
