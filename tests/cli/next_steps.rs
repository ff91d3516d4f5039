//! One next step per install, and one that works: a file that already carries
//! the patch's hunks on a locally modified base is recognised (patched, or
//! outdated for revision 1), a file the patch does not fit is never told to
//! run a command that fails, and `revert` with no backup says where it looked
//! and how to get the original back.

use super::harden::backup_ids;
use super::*;

const DIR: &str = "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client";

fn spec() -> mcpatch::registry::PatchSpec {
    mcpatch::registry::session_loss().unwrap()
}

/// The one install of `status --json`, with the fields that depend on the sandbox normalised.
fn status_install(sb: &Sandbox, p: &str) -> serde_json::Value {
    let o = sb.run(&["status", "--json", "--path", p]);
    let v: serde_json::Value = serde_json::from_str(&sb.normalize(&o.stdout)).unwrap();
    assert_eq!(v["installs"].as_array().unwrap().len(), 1, "{v:#}");
    v["installs"][0].clone()
}

fn expected_install(sha256: &str, state: &str, next_step: &str, note: &str) -> serde_json::Value {
    serde_json::json!({
        "target": "dsh-mcp-client",
        "path": DIR,
        "file": format!("{DIR}/lib/index.js"),
        "version": "0.1.0-rc.8",
        "sha256": sha256,
        "state": state,
        "revision": null,
        "hard_links": 1,
        "same_file_as": [],
        "found_via": [format!("--path {DIR}")],
        "next_step": next_step,
        "note": note,
        "dropped": null,
        "running": [],
    })
}

#[test]
fn a_locally_edited_file_patched_with_yes_is_patched_and_its_one_next_step_works() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    let edited = edit_file(&file, |t| t + "\n// local edit\n");
    // The gate before writing an unknown revision is checked in evidence.rs.
    let o = sb.run(&["apply", "--yes", "--no-verify", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let patched = sha256_file(&file);
    let id = backup_ids(&sb).remove(0);

    let o = sb.run(&["status", "--path", p]);
    assert_eq!(code(&o), 0, "patched: nothing needs attention");
    assert_eq!(
        status_install(&sb, p),
        expected_install(
            &patched,
            "patched",
            "none (`mcpatch verify` to check, `mcpatch revert --yes` to undo)",
            "carries the current patch revision, on a locally modified file",
        )
    );

    // apply treats it as already patched, not as a file the hunks do not fit.
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("already patched: {DIR} (0.1.0-rc.8); nothing to do\n")
    );
    assert_eq!(stderr(&o), "");
    assert_eq!(sha256_file(&file), patched);
    assert_eq!(backup_ids(&sb), std::slice::from_ref(&id), "no new backup");

    // The next step, as it says: verify expects the current patch to be seamless ...
    let o = sb.run(&["verify", "--scenario", "expired-404", "--json", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["installs"][0]["overall"], "SEAMLESS", "{v:#}");
    // ... and `revert --yes` gives back the edited file it was patched on.
    let o = sb.run(&["revert", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "restored {DIR}/lib/index.js from backup {id}\n  sha256 now {}\nbackups are kept (`mcpatch backups`); restart DSH so it loads the restored client\n",
            short(&edited)
        )
    );
    assert_eq!(sha256_file(&file), edited);
}

#[test]
fn revision_1_on_a_locally_edited_file_is_outdated_and_apply_yes_upgrades_it() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    let spec = spec();
    let edited = std::fs::read_to_string(&file).unwrap() + "\n// local edit\n";
    let r1 = diffy::apply(&edited, &spec.earlier[0].parsed_diff()).unwrap();
    std::fs::write(&file, &r1).unwrap();
    let r1_hash = sha256_file(&file);

    let o = sb.run(&["status", "--path", p]);
    assert_eq!(code(&o), 1, "outdated needs attention");
    assert_eq!(
        status_install(&sb, p),
        expected_install(
            &r1_hash,
            "outdated",
            "run `mcpatch apply --yes` to upgrade to the current patch revision",
            "carries patch revision 1, on a locally modified file: it recovers, but the call that meets a lost session fails",
        )
    );

    // Without --yes (and no terminal) it is refused, as for any file mcpatch does not know.
    let o = sb
        .cmd(&["apply", "--path", p])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(code(&o), 1);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "refused: {DIR} (0.1.0-rc.8)\n  outdated: sha256 {r1_hash} carries patch revision 1 on a file mcpatch does not know; review with `mcpatch diff --path {DIR}`, then rerun with --yes to upgrade it anyway\n"
        )
    );
    assert_eq!(sha256_file(&file), r1_hash, "nothing changed");
    let o = sb.run(&["diff", "--path", p]);
    assert_eq!(
        code(&o),
        1,
        "the review it names works (a change to show): {}",
        stdout(&o)
    );

    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = backup_ids(&sb).remove(0);
    let upgraded = diffy::apply(&edited, &spec.parsed_diff()).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), upgraded);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "upgraded {DIR} (0.1.0-rc.8) from patch revision 1\n  sha256 now {}, modified file patch revision 1 was put on saved as backup {id}\n  verified first (a revision mcpatch does not know): all 26 scenario runs of the patched copy met the current patch revision's expectations (overall SEAMLESS, node {})\nrestart DSH so it loads the patched client; check it with `mcpatch verify --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`\n",
            short(&sha256_file(&file)),
            String::from_utf8_lossy(
                &std::process::Command::new(node22_dir().join("node"))
                    .arg("--version")
                    .output()
                    .unwrap()
                    .stdout
            )
            .trim()
        )
    );
    assert_eq!(status_install(&sb, p)["state"], "patched");
    // The backup holds the edited file revision 1 was put on.
    let o = sb.run(&["revert", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
}

#[test]
fn a_file_the_patch_does_not_fit_is_told_to_reinstall_and_never_to_run_a_failing_command() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    let before = edit_file(&file, |t| {
        t.replace(
            "if (attemptSettled) generationDown(generation);",
            "if (attemptSettled) { generationDown(generation); }",
        )
    });
    assert_eq!(
        status_install(&sb, p),
        expected_install(
            &before,
            "modified",
            "reinstall @deepseek-ai/dsh, then run `mcpatch apply`",
            "unknown revision with the reconnect supervisor present; the patch does not fit it (its context lines are not all in the file)",
        )
    );
    // `diff` shows why, and its hint does not send you back to `diff`.
    let o = sb.run(&["diff", "--path", p]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("# {DIR}/lib/index.js (modified)\nthe patch does not apply to {DIR}/lib/index.js: hunk #7 (@@ -623,6 +794,9 @@) does not match: its context lines are not in the file\nhelp: nothing was changed; the patch fits the revision it was cut against, also with local edits away from its hunks, and this file is neither: reinstall @deepseek-ai/dsh, then run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`\n")
    );
    assert_eq!(sha256_file(&file), before);
}

#[test]
fn a_patched_file_edited_inside_its_hunks_is_told_to_revert_when_its_backup_holds_the_original() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let id = backup_ids(&sb).remove(0);
    let changed = edit_file(&file, |t| {
        t.replace(
            "function isSessionLostError(error) {",
            "function isSessionLostError(error) { // tuned here",
        )
    });
    let revert_step = "run `mcpatch revert --yes` to restore the original its backup holds (dropping the edits), then `mcpatch apply`";
    assert_eq!(
        status_install(&sb, p),
        expected_install(
            &changed,
            "modified",
            revert_step,
            &format!("carries the mcpatch patch, edited since: mcpatch cannot take it out cleanly; backup {id} holds a known original of this file"),
        )
    );
    let o = sb.run(&["status", "--path", p]);
    assert!(
        sb.normalize(&o.stdout)
            .contains(&format!("  modified  run `mcpatch revert --path {DIR} --yes` to restore the original its backup holds (dropping the edits), then `mcpatch apply --path {DIR}`\n")),
        "{}",
        stdout(&o)
    );
    let hint = format!("help: nothing was changed; backup {id} holds the original of this file: run `mcpatch revert --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client --yes` to restore it (the edits made to the file since are dropped), then `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`\n");
    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: the patch does not apply to {DIR}/lib/index.js: hunk #1 (@@ -103,6 +103,39 @@) does not match: its context lines are not in the file\n{hint}")
    );
    let o = sb.run(&["diff", "--path", p]);
    assert_eq!(code(&o), 1);
    assert!(sb.normalize(&o.stdout).ends_with(&hint), "{}", stdout(&o));
    assert_eq!(sha256_file(&file), changed);

    // The way back it names works, at once.
    let o = sb.run(&["revert", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    assert_eq!(sha256_file(&file), patched_hash());
}

#[test]
fn a_patched_file_edited_inside_its_hunks_with_no_backup_is_told_to_reinstall() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    // Patched with another DSH_HOME: no backup under this one.
    let o = sb
        .cmd(&["apply", "--path", p])
        .env("DSH_HOME", sb.root().join("other-home"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let changed = edit_file(&file, |t| {
        t.replace(
            "function isSessionLostError(error) {",
            "function isSessionLostError(error) { // tuned here",
        )
    });
    assert_eq!(
        status_install(&sb, p),
        expected_install(
            &changed,
            "modified",
            "reinstall @deepseek-ai/dsh, then run `mcpatch apply`",
            "carries the mcpatch patch, edited since: mcpatch cannot take it out cleanly",
        )
    );
    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: the patch does not apply to {DIR}/lib/index.js: hunk #1 (@@ -103,6 +103,39 @@) does not match: its context lines are not in the file\nhelp: nothing was changed; the patch fits the revision it was cut against, also with local edits away from its hunks, and this file is neither: reinstall @deepseek-ai/dsh, then run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`\n")
    );
    assert_eq!(sha256_file(&file), changed);
}

#[test]
fn revert_with_no_backup_of_a_patched_install_exits_1_names_the_folder_and_the_way_back() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    // Patched with one DSH_HOME (as `sudo mcpatch apply` uses root's) ...
    let patched_with = sb.root().join("root-home/.dsh");
    let o = sb
        .cmd(&["apply", "--path", p])
        .env("DSH_HOME", &patched_with)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    // ... and reverted with another, which holds no backup of it.
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "not reverted: {DIR}/lib/index.js\n  it carries the patch, and no backup of it is under [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss\n  to get the original back: reinstall @deepseek-ai/dsh; or, if it was patched with another state folder (sudo uses root's), run `MCPATCH_HOME=<that folder> mcpatch revert --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` (`--backup ID` picks one of the backups `mcpatch backups` lists there)\n"
        )
    );
    assert_eq!(stderr(&o), "");
    assert_eq!(sha256_file(&file), patched_hash(), "it stays patched");

    // The way back it names works.
    let o = sb
        .cmd(&["revert", "--path", p])
        .env("DSH_HOME", &patched_with)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);

    // An original with no backup has nothing to revert: not a problem.
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("no backup of {DIR}/lib/index.js; nothing to revert\n")
    );
}
