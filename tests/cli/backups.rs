//! `mcpatch backups` and the manifests it reads: a header row names the
//! columns, and a manifest writes the file mode as an octal string ("0644")
//! while manifests of earlier mcpatch versions, which hold a number, still read.

use serde_json::{json, Value};

use super::harden::{backup_ids, backup_ids_under, BACKUPS};
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
        "roots": [
            {"target": "dsh-mcp-client", "root": format!("[SANDBOX]/home/.dsh/{BACKUPS}")},
            {"target": "mcp-remote", "root": "[SANDBOX]/home/.dsh/backups/mcp-remote-session-loss"},
            {"target": "gemini-cli", "root": "[SANDBOX]/home/.dsh/backups/gemini-cli-session-loss"},
            {"target": "mcp-sdk", "root": "[SANDBOX]/home/.dsh/backups/mcp-sdk-session-loss"},
            {"target": "ai-sdk-mcp", "root": "[SANDBOX]/home/.dsh/backups/ai-sdk-mcp-session-loss"},
        ],
        "backups": [{
            "target": "dsh-mcp-client",
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
        "no backups under [SANDBOX]/home/.dsh/backups\n"
    );
    // One target: its own folder.
    let o = sb.run(&["backups", "--target", "mcp-remote"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "no backups under [SANDBOX]/home/.dsh/backups/mcp-remote-session-loss\n"
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
help: make it a readable folder (move aside anything else at that path), or set MCPATCH_HOME to another folder
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

#[test]
fn a_backup_whose_saved_file_was_changed_or_removed_is_listed_damaged_as_revert_refuses_it() {
    let sb = Sandbox::new();
    let a = sb.client_install("0.1.0-rc.8", "a");
    let b = sb.client_install("0.1.0-rc.8", "b");
    for client in [&a, &b] {
        let o = sb.run(&["apply", "--path", client.to_str().unwrap()]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let ids = backup_ids(&sb);
    let (id_a, id_b) = (&ids[0], &ids[1]);
    let root = sb.dsh_home().join(BACKUPS);
    let saved_a = root.join(id_a).join("index.js");
    let mut text = std::fs::read(&saved_a).unwrap();
    text.extend_from_slice(b"\n// changed\n");
    std::fs::write(&saved_a, &text).unwrap();
    let changed = hex::encode(Sha256::digest(&text));
    std::fs::remove_file(root.join(id_b).join("index.js")).unwrap();
    let why_a = format!("[SANDBOX]/home/.dsh/{BACKUPS}/{id_a}/index.js has sha256 {changed}, its manifest says {ORIGINAL}");
    let why_b = format!("cannot read [SANDBOX]/home/.dsh/{BACKUPS}/{id_b}/index.js: No such file or directory (os error 2)");

    let o = sb.run(&["backups"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("backups under [SANDBOX]/home/.dsh/{BACKUPS}:\nID  VERSION  SAVED SHA256  FILE\n{id_b}  0.1.0-rc.8  b126dcec…7d56  DAMAGED: {why_b}\n{id_a}  0.1.0-rc.8  b126dcec…7d56  DAMAGED: {why_a}\n")
    );
    let o = sb.run(&["backups", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&sb.normalize(&o.stdout)).unwrap();
    let listed: Vec<(Value, Value)> = v["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].clone(), e["damaged"].clone()))
        .collect();
    assert_eq!(
        listed,
        [(json!(id_a), json!(why_a)), (json!(id_b), json!(why_b))]
    );
    assert_eq!(v["backups"][0]["manifest"]["sha256_before"], ORIGINAL);

    // revert refuses each for the same reason.
    for (client, id, why) in [(&a, id_a, &why_a), (&b, id_b, &why_b)] {
        let o = sb.run(&["revert", "--path", client.to_str().unwrap()]);
        assert_eq!(code(&o), 2, "{}", stdout(&o));
        assert_eq!(
            sb.normalize(&o.stderr),
            format!("error: backup {id} is damaged: {why}\nhelp: nothing was changed; pick another backup with `mcpatch backups` and `--backup ID`, or reinstall the package that holds the file\n")
        );
        assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
    }
}

#[test]
fn apply_after_revert_reuses_the_backup_of_the_same_original_and_a_new_original_gets_its_own() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let id = backup_ids(&sb).remove(0);
    for _ in 0..3 {
        let o = sb.run(&["revert", "--path", p]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(sha256_file(&file), ORIGINAL);
        let o = sb.run(&["apply", "--path", p]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            sb.normalize(&o.stdout),
            format!("patched [SANDBOX]/g/lib/node_modules/{CLIENT} (0.1.0-rc.8)\n  sha256 now {}, original already saved as backup {id}\nrestart DSH so it loads the patched client; check it with `mcpatch verify --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`\n", short(&patched_hash()))
        );
    }
    assert_eq!(
        backup_ids(&sb),
        std::slice::from_ref(&id),
        "one backup of one original"
    );

    // An apply that fails after reusing the backup leaves that backup alone.
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = sb
        .cmd(&["apply", "--path", p])
        .env("MCPATCH_TEST_FAIL_AT", "load-checked")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);
    assert_eq!(
        backup_ids(&sb),
        std::slice::from_ref(&id),
        "the backup is kept"
    );

    // Another original (a local edit) is saved apart, and says what it saved.
    let edited = edit_file(&file, |t| t + "\n// local edit\n");
    let o = sb.run(&["apply", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let ids = backup_ids(&sb);
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("patched [SANDBOX]/g/lib/node_modules/{CLIENT} (0.1.0-rc.8)\n  sha256 now {}, file as it was (modified, not a revision mcpatch knows) saved as backup {}\n  verified first (a revision mcpatch does not know): all 26 scenario runs of the patched copy met the current patch revision's expectations (overall SEAMLESS, node {})\nrestart DSH so it loads the patched client; check it with `mcpatch verify --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`\n", short(&sha256_file(&file)), ids[1], node22_version())
    );
    let o = sb.run(&["revert", "--yes", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&file), edited);
    // ... and the newest backup is the one reused, never an older one made newest again.
    std::fs::write(
        &file,
        std::fs::read(sb.dsh_home().join(BACKUPS).join(&id).join("index.js")).unwrap(),
    )
    .unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    assert_eq!(backup_ids(&sb).len(), 3);
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);
}

#[test]
fn backups_fit_80_and_60_columns_with_each_file_on_its_own_line() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    let id = backup_ids(&sb).remove(0);
    let file = client.join("lib/index.js").display().to_string();
    for columns in [80, 60] {
        let o = sb
            .cmd(&["backups"])
            .env("COLUMNS", columns.to_string())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let text = stdout(&o);
        for line in text.lines() {
            assert!(
                line.chars().count() <= columns,
                "{columns} columns: {line:?} is {} wide:\n{text}",
                line.chars().count()
            );
        }
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "FILE", "{text}");
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["ID", "VERSION", "SAVED", "SHA256"]
        );
        let shown = mcpatch::table::shorten_middle(&file, columns);
        assert!(shown.ends_with("/dsh-mcp-client/lib/index.js"), "{shown}");
        assert_eq!(lines[3], shown);
        assert_eq!(
            lines[4].split_whitespace().collect::<Vec<_>>(),
            [id.as_str(), "0.1.0-rc.8", "b126dcec…7d56"]
        );
        assert_eq!(lines.len(), 5, "{text}");
    }
    // Into a pipe: no limit, a row per backup.
    let o = sb.run(&["backups"]);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("backups under [SANDBOX]/home/.dsh/{BACKUPS}:\nID  VERSION  SAVED SHA256  FILE\n{id}  0.1.0-rc.8  b126dcec…7d56  {FILE}\n")
    );
}

#[test]
fn apply_never_reuses_a_damaged_backup_nor_one_a_damaged_backup_is_newer_than() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    let root = sb.dsh_home().join(BACKUPS);
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    assert_eq!(code(&sb.run(&["revert", "--path", p])), 0);
    let first = backup_ids(&sb).remove(0);
    // Its saved file changed: a new backup, not the damaged one.
    let saved = root.join(&first).join("index.js");
    let bytes = std::fs::read(&saved).unwrap();
    std::fs::write(&saved, [&bytes[..], b"//"].concat()).unwrap();
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let ids = backup_ids(&sb);
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(
        stdout(&o).contains(&format!("original saved as backup {}\n", ids[1])),
        "{}",
        stdout(&o)
    );
    assert_eq!(code(&sb.run(&["revert", "--path", p])), 0);
    assert_eq!(sha256_file(&file), ORIGINAL);

    // A damaged backup newer than the good one: revert would stop at it, so a new one is made.
    let second = ids[1].clone();
    std::fs::create_dir(root.join(format!("{second}-x"))).unwrap();
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let ids = backup_ids(&sb);
    assert_eq!(ids.len(), 4, "{ids:?}");
    let third = &ids[3];
    assert!(
        stdout(&o).contains(&format!("original saved as backup {third}\n")),
        "{}",
        stdout(&o)
    );
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);
}

#[test]
fn applying_or_reverting_two_installs_of_one_client_says_once_to_restart_it() {
    let sb = Sandbox::new();
    let a = sb.client_install("0.1.0-rc.8", "a");
    let b = sb.client_install("0.1.0-rc.8", "b");
    let all = sb.root().to_str().unwrap();
    let o = sb.run(&["apply", "--path", all]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let applied = sb.normalize(&o.stdout);
    let o = sb.run(&["revert", "--path", all]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let ids = backup_ids(&sb);
    let id_of = |prefix: &str| {
        ids.iter()
            .find(|id| {
                std::fs::read_to_string(sb.dsh_home().join(BACKUPS).join(id).join("manifest.json"))
                    .unwrap()
                    .contains(&format!("{}/", sb.root().join(prefix).display()))
            })
            .unwrap_or_else(|| panic!("no backup of {prefix} among {ids:?}"))
            .clone()
    };
    let (id_a, id_b) = (id_of("a"), id_of("b"));
    let dir = "lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js";
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("restored [SANDBOX]/a/{dir} from backup {id_a}\n  sha256 now b126dcec…7d56\nrestored [SANDBOX]/b/{dir} from backup {id_b}\n  sha256 now b126dcec…7d56\nbackups are kept (`mcpatch backups`); restart DSH so it loads the restored client\n")
    );
    for install in [a, b] {
        assert_eq!(sha256_file(&install.join("lib/index.js")), ORIGINAL);
    }
    // Applying them said it once too.
    let now = short(&patched_hash());
    let pkg = "lib/node_modules/@deepseek-ai/dsh-mcp-client";
    assert_eq!(
        applied,
        format!("patched [SANDBOX]/a/{pkg} (0.1.0-rc.8)\n  sha256 now {now}, original saved as backup {id_a}\npatched [SANDBOX]/b/{pkg} (0.1.0-rc.8)\n  sha256 now {now}, original saved as backup {id_b}\nrestart DSH so it loads the patched client; check it with `mcpatch verify --path [SANDBOX]`\n")
    );
}

#[test]
fn one_apply_over_two_clients_keeps_each_backup_in_its_own_targets_folder_and_names_each_to_restart(
) {
    let sb = Sandbox::new();
    sb.client_install("0.1.0-rc.8", "d");
    sb.gemini_install("0.61.0", "g");
    let o = sb.run(&["apply", "--path", sb.root().to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let gemini_backups = "backups/gemini-cli-session-loss";
    let (dsh, gemini) = (
        backup_ids_under(&sb, BACKUPS),
        backup_ids_under(&sb, gemini_backups),
    );
    assert_eq!((dsh.len(), gemini.len()), (1, 1), "{dsh:?} {gemini:?}");
    let (dsh, gemini) = (&dsh[0], &gemini[0]);
    // Each client is named once in what to restart.
    let manifest = sb
        .dsh_home()
        .join(gemini_backups)
        .join(gemini)
        .join("manifest.json");
    let manifest: Value = serde_json::from_slice(&std::fs::read(manifest).unwrap()).unwrap();
    let gemini_after = manifest["sha256_after"].as_str().unwrap().to_string();
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "patched [SANDBOX]/d/lib/node_modules/{CLIENT} (0.1.0-rc.8)
  sha256 now {}, original saved as backup {dsh}
patched [SANDBOX]/g/lib/node_modules/@google/gemini-cli (0.61.0)
  sha256 now {}, original saved as backup {gemini}
restart DSH so it loads the patched client; check it with `mcpatch verify --path [SANDBOX]`
restart gemini-cli so it loads the patched MCP client; check it with `mcpatch verify --path [SANDBOX]`
",
            short(&patched_hash()),
            short(&gemini_after)
        )
    );
}
