//! `mcpatch backups` and the manifests it reads: a header row names the
//! columns, and a manifest writes the file mode as an octal string ("0644")
//! while manifests of earlier mcpatch versions, which hold a number, still read.

use serde_json::{json, Value};

use super::harden::{backup_ids, BACKUPS};
use super::*;

const FILE: &str = "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js";

#[test]
fn backups_lists_under_a_header_row_and_a_manifest_writes_the_mode_in_octal() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    std::fs::set_permissions(
        client.join("lib/index.js"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let id = backup_ids(&sb).remove(0);
    // Neither a stray file nor a hidden folder (a half-written backup) is a backup.
    let root = sb.dsh_home().join(BACKUPS);
    std::fs::write(root.join("notes.txt"), "").unwrap();
    std::fs::create_dir(root.join(".incomplete-x")).unwrap();

    let o = sb.run(&["backups"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("backups under [SANDBOX]/home/.dsh/{BACKUPS}:\nID  VERSION  SAVED SHA256  FILE\n{id}  0.1.0-rc.8  b126dcec…7d56  {FILE}\n")
    );

    let dir = sb.dsh_home().join(BACKUPS).join(&id);
    let written: Value =
        serde_json::from_str(&sb.normalize(&std::fs::read(dir.join("manifest.json")).unwrap()))
            .unwrap();
    let created = written["created"].as_str().unwrap().to_string();
    assert!(created.ends_with('Z'), "{created}");
    let manifest = json!({
        "id": id,
        "patch_id": "dsh-mcp-client-session-loss",
        "original_path": FILE,
        "package_dir": "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client",
        "version": "0.1.0-rc.8",
        "sha256_before": ORIGINAL,
        "sha256_after": patched_hash(),
        "mode": "0640",
        "mcpatch_version": env!("CARGO_PKG_VERSION"),
        "created": created,
    });
    assert_eq!(written, manifest);
    let listing = json!({
        "root": format!("[SANDBOX]/home/.dsh/{BACKUPS}"),
        "backups": [{
            "id": id,
            "dir": format!("[SANDBOX]/home/.dsh/{BACKUPS}/{id}"),
            "manifest": manifest,
            "damaged": null,
        }],
    });
    let o = sb.run(&["backups", "--json"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        serde_json::from_str::<Value>(&sb.normalize(&o.stdout)).unwrap(),
        listing
    );

    // A manifest an earlier mcpatch wrote holds the whole st_mode as a number:
    // it still reads, is shown in octal, and its backup still restores.
    let mut old = written.clone();
    old["mode"] = json!(0o100640);
    std::fs::write(
        dir.join("manifest.json"),
        old.to_string()
            .replace("[SANDBOX]", sb.root().to_str().unwrap()),
    )
    .unwrap();
    let o = sb.run(&["backups", "--json"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        serde_json::from_str::<Value>(&sb.normalize(&o.stdout)).unwrap(),
        listing
    );
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
}

#[test]
fn backups_without_a_backups_folder_says_so_and_a_file_in_its_place_is_an_error() {
    let sb = Sandbox::new();
    let o = sb.run(&["backups"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("no backups under [SANDBOX]/home/.dsh/{BACKUPS}\n")
    );
    let o = sb.run(&["backups", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backups"], json!([]), "{v:#}");

    let root = sb.dsh_home().join(BACKUPS);
    std::fs::create_dir_all(root.parent().unwrap()).unwrap();
    std::fs::write(&root, "").unwrap();
    for args in [&["backups"][..], &["backups", "--json"]] {
        let o = sb.run(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stdout(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
        assert_eq!(
            sb.normalize(&o.stderr),
            format!("error: cannot read [SANDBOX]/home/.dsh/{BACKUPS}: Not a directory (os error 20)
help: make it a readable folder (move aside anything else at that path), or set DSH_HOME to another folder
"),
            "{args:?}"
        );
    }
}

#[test]
fn revert_finds_the_backup_after_the_prefix_moved_behind_a_symbolic_link() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    // The prefix moves, and a link keeps its old path working: the backup
    // names the old path, the search finds the new real one.
    std::fs::rename(sb.root().join("g"), sb.root().join("moved")).unwrap();
    std::os::unix::fs::symlink(sb.root().join("moved"), sb.root().join("g")).unwrap();
    let moved = sb
        .root()
        .join("moved/lib/node_modules/@deepseek-ai/dsh-mcp-client");
    let o = sb.run(&["revert", "--path", moved.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let id = backup_ids(&sb).remove(0);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("restored [SANDBOX]/moved/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js from backup {id}\n  sha256 now b126dcec…7d56\nbackups are kept (`mcpatch backups`); restart DSH so it loads the restored client\n")
    );
    assert_eq!(sha256_file(&moved.join("lib/index.js")), ORIGINAL);
}

#[test]
fn a_manifest_that_is_a_fifo_is_listed_as_damaged_without_blocking() {
    let sb = Sandbox::new();
    let dir = sb
        .dsh_home()
        .join(BACKUPS)
        .join("20261130T000000.000Z-b126dcec");
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("manifest.json");
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(manifest.as_os_str()))
        .unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    // Nothing ever writes to the FIFO: opening it to read must not wait for a writer.
    let o = super::locate::output_within_a_minute(sb.command(&["backups"]));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("backups under [SANDBOX]/home/.dsh/{BACKUPS}:\nID  VERSION  SAVED SHA256  FILE\n20261130T000000.000Z-b126dcec  ?  ?  DAMAGED: [SANDBOX]/home/.dsh/{BACKUPS}/20261130T000000.000Z-b126dcec/manifest.json is a FIFO, not a regular file; mcpatch reads only regular files there\n")
    );
}

#[test]
fn a_manifest_that_is_a_symbolic_link_is_listed_as_damaged_and_never_followed() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    let id = backup_ids(&sb).remove(0);
    let manifest = sb.dsh_home().join(BACKUPS).join(&id).join("manifest.json");
    let elsewhere = sb.root().join("elsewhere.json");
    std::fs::rename(&manifest, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &manifest).unwrap();
    let o = sb.run(&["backups"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("backups under [SANDBOX]/home/.dsh/{BACKUPS}:\nID  VERSION  SAVED SHA256  FILE\n{id}  ?  ?  DAMAGED: cannot read [SANDBOX]/home/.dsh/{BACKUPS}/{id}/manifest.json: Too many levels of symbolic links (os error 40)\n")
    );
}
