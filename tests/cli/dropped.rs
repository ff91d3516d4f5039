//! An upgrade or reinstall of the host puts an unpatched file where mcpatch
//! patched one: `status` keeps the state `affected` and says the patch was
//! dropped, with the backup's time; a revert on purpose is not a drop.

use serde_json::{json, Value};

use super::harden::backup_ids;
use super::*;

/// Put the registry's original back the way npm does: write it beside, rename over.
fn reinstall_original(file: &Path) {
    let fresh = fetched_prefix("0.1.0-rc.8")
        .join("lib/node_modules")
        .join(CLIENT)
        .join("lib/index.js");
    let beside = file.with_file_name(".index.js-npm-reify");
    std::fs::copy(fresh, &beside).unwrap();
    std::fs::rename(&beside, file).unwrap();
}

fn created_of(sb: &Sandbox, id: &str) -> String {
    let manifest = sb
        .dsh_home()
        .join("backups/dsh-mcp-client-session-loss")
        .join(id)
        .join("manifest.json");
    let v: Value = serde_json::from_slice(&std::fs::read(manifest).unwrap()).unwrap();
    v["created"].as_str().unwrap().to_string()
}

#[test]
fn an_original_put_back_over_a_patched_file_is_a_dropped_patch() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let file = client.join("lib/index.js");
    assert_eq!(
        status_json(&sb, &["--path", p])["installs"][0]["dropped"],
        Value::Null
    );
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let id = backup_ids(&sb).remove(0);
    let patched_at = created_of(&sb, &id);
    assert_eq!(
        status_json(&sb, &["--path", p])["installs"][0]["dropped"],
        Value::Null
    );

    reinstall_original(&file);
    let o = sb.run(&["status", "--path", p]);
    assert_eq!(code(&o), 1, "affected again: attention");
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "PATH  VERSION  STATE  NEXT STEP
[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client  0.1.0-rc.8  affected  run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`
  sha256 b126dcec…7d56 (original)
  note: affected: the patch targets this revision
  dropped: mcpatch patched this file at {patched_at} (backup {id}), and an upgrade or a reinstall has put an unpatched file back; run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` to patch it again (or `mcpatch revert --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` to keep it unpatched and drop this note)
1 install(s): 1 affected, 0 patched, 0 outdated, 0 upstream-fixed, 0 modified, 0 unsupported
"
        )
    );
    let v = status_json(&sb, &["--path", p]);
    assert_eq!(v["installs"][0]["state"], "affected");
    assert_eq!(
        v["installs"][0]["dropped"],
        json!({"backup": id, "patched_at": patched_at})
    );

    // Patched again: nothing is dropped.
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    assert_eq!(
        status_json(&sb, &["--path", p])["installs"][0]["dropped"],
        Value::Null
    );
}

#[test]
fn a_revert_is_not_a_dropped_patch() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = status_json(&sb, &["--path", p]);
    assert_eq!(v["installs"][0]["state"], "affected");
    assert_eq!(v["installs"][0]["dropped"], Value::Null);
    assert!(!stdout(&sb.run(&["status", "--path", p])).contains("dropped"));

    // Patched again, then dropped by a reinstall: the newer patch is the one dropped.
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let newest = backup_ids(&sb).pop().unwrap();
    reinstall_original(&client.join("lib/index.js"));
    let v = status_json(&sb, &["--path", p]);
    assert_eq!(v["installs"][0]["dropped"]["backup"], newest.as_str());

    // A revert of the dropped patch keeps the file unpatched and drops the note.
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js is already the original; nothing to do\n"
    );
    assert_eq!(
        status_json(&sb, &["--path", p])["installs"][0]["dropped"],
        Value::Null
    );
}
