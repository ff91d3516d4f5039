//! Releases mcpatch has no record of (issue 29 item 17): a pristine file of
//! a content-anchored target (gemini-cli here; mcp-sdk in mcp_sdk.rs) whose
//! anchors fit is `affected`, with a note that apply verifies the patched
//! copy before writing it, never `modified` with "patch anyway"; once
//! written, the `mcpatch revert` status suggests works as written, and
//! needs `--yes` once the file or its backup is not what apply left.

use super::gemini::{json, original_of};
use super::*;

const NOTE: &str = "a release mcpatch has no record of; the patch's content anchors fit it, and `mcpatch apply` verifies the patched copy before writing it";

#[test]
fn an_unrecorded_gemini_release_the_anchors_fit_is_affected_and_its_revert_needs_no_yes() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (_, chunk, _) = original_of("0.61.0");
    let file = pkg.join(&chunk);
    let unrecorded = edit_file(&file, |t| format!("{t}// a release of its own\n"));
    let path = pkg.to_str().unwrap();
    let o = sb.run(&["status", "--path", path]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let out = sb.normalize(&o.stdout);
    assert!(
        out.contains(
            "  affected  run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@google/gemini-cli`\n"
        ),
        "{out}"
    );
    assert!(!out.contains("patch anyway"), "{out}");
    let v = json(&sb.run(&["status", "--json", "--path", path]));
    assert_eq!(v["installs"][0]["state"], "affected", "{v:#}");
    assert_eq!(v["installs"][0]["revision"], serde_json::Value::Null);
    assert_eq!(v["installs"][0]["note"], NOTE);
    // Written without the gate here (the gate runs the real CLI: gemini_verify.rs).
    let o = sb.run(&["apply", "--no-verify", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v = json(&sb.run(&["status", "--json", "--path", path]));
    assert_eq!(v["installs"][0]["state"], "patched", "{v:#}");
    assert_eq!(
        v["installs"][0]["next_step"],
        "none (`mcpatch verify` to check, `mcpatch revert` to undo)"
    );
    let o = sb.run(&["revert", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), unrecorded, "not restored byte for byte");
}

#[test]
fn a_file_changed_after_apply_still_needs_yes_to_be_reverted() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (_, chunk, _) = original_of("0.61.0");
    let file = pkg.join(&chunk);
    let unrecorded = edit_file(&file, |t| format!("{t}// a release of its own\n"));
    let path = pkg.to_str().unwrap();
    let o = sb.run(&["apply", "--no-verify", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let changed = edit_file(&file, |t| format!("{t}// edited after apply\n"));
    let o = sb.run(&["revert", "--path", path]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    // No longer what apply wrote: the backup is only a release of no record.
    let (_, id) = the_backup(&sb);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "refused: [SANDBOX]/g/lib/node_modules/@google/gemini-cli/{chunk}\n  backup {id} holds sha256 {unrecorded}, which is not a known original; rerun with --yes to restore it anyway\n"
        )
    );
    assert_eq!(sha256_file(&file), changed, "overwritten without --yes");
}

/// The one backup of gemini-cli in the sandbox: its folder and id.
fn the_backup(sb: &Sandbox) -> (PathBuf, String) {
    let folder = "backups/gemini-cli-session-loss";
    let id = super::harden::backup_ids_under(sb, folder)
        .pop()
        .expect("apply kept a backup");
    (sb.dsh_home().join(folder).join(&id), id)
}

#[test]
fn a_backup_the_anchors_do_not_fit_is_not_restored_without_yes() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (_, chunk, _) = original_of("0.61.0");
    let file = pkg.join(&chunk);
    edit_file(&file, |t| format!("{t}// a release of its own\n"));
    let path = pkg.to_str().unwrap();
    let o = sb.run(&["apply", "--no-verify", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let patched = sha256_file(&file);
    // The file is still what apply wrote, but its backup now holds code the
    // patch's anchors do not fit (its manifest names its hash, so it is whole).
    let (dir, id) = the_backup(&sb);
    let other = edit_file(&dir.join("index.js"), |_| "console.log(1);\n".into());
    let manifest = dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["sha256_before"] = other.clone().into();
    std::fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let o = sb.run(&["revert", "--path", path]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "refused: [SANDBOX]/g/lib/node_modules/@google/gemini-cli/{chunk}\n  backup {id} holds sha256 {other}, which is not a known original; rerun with --yes to restore it anyway\n"
        )
    );
    assert_eq!(sha256_file(&file), patched, "restored without --yes");
}
