//! `mcpatch apply`, `revert`, `diff`, `backups` on the real package.

use super::harden::litter;
use super::*;

fn node22() -> PathBuf {
    node22_dir().join("node")
}

fn node_check(file: &Path) {
    let o = std::process::Command::new(node22())
        .arg("--check")
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "node --check {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn node_loads(file: &Path) {
    let url = format!("file://{}", file.display());
    let o = std::process::Command::new(node22())
        .args(["--input-type=module", "-e", "const m = await import(process.argv[1]); if (typeof m.apply !== 'function') process.exit(3);"])
        .arg(url)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "import {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn apply_patches_the_real_rc8_and_is_idempotent_and_revert_restores_it() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();

    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = sb.normalize(&o.stdout);
    let id = std::fs::read_dir(sb.dsh_home().join("backups/dsh-mcp-client-session-loss"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|n| !n.starts_with('.'))
        .unwrap();
    assert_eq!(
        out,
        format!(
            "patched [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8)
  sha256 now {}, original saved as backup {id}
restart DSH so it loads the patched client; check it with `mcpatch verify --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`
",
            short(&patched_hash())
        )
    );
    assert_eq!(sha256_file(&file), patched_hash());
    node_check(&file);
    node_loads(&file);
    assert!(litter(&client.join("lib")).is_empty());

    // The backup: byte-for-byte original, mode kept, manifest complete.
    let backup_dir = sb
        .dsh_home()
        .join("backups/dsh-mcp-client-session-loss")
        .join(&id);
    assert_eq!(sha256_file(&backup_dir.join("index.js")), ORIGINAL);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(backup_dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["sha256_before"], ORIGINAL);
    assert_eq!(manifest["sha256_after"], patched_hash());
    assert_eq!(manifest["version"], "0.1.0-rc.8");
    assert_eq!(
        manifest["original_path"],
        file.canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(manifest["mcpatch_version"], env!("CARGO_PKG_VERSION"));
    assert!(manifest["created"].as_str().unwrap().ends_with('Z'));
    assert_eq!(manifest["mode"], "0644", "the mode as an octal string");

    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        sb.normalize(&o.stdout),
        "already patched: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8); nothing to do\n"
    );
    assert_eq!(backup_count(&sb), 1, "no new backup");

    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "restored [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js from backup {id}
  sha256 now b126dcec…7d56
backups are kept (`mcpatch backups`); restart DSH so it loads the restored client
"
        )
    );
    assert_eq!(sha256_file(&file), ORIGINAL);
    assert_eq!(backup_count(&sb), 1, "backups are kept");
}

#[test]
fn apply_keeps_the_file_mode() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o640);
    assert_eq!(
        code(&sb.run(&["revert", "--path", client.to_str().unwrap()])),
        0
    );
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o640);
}

#[test]
fn apply_on_rc7_works_too() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.7", "g");
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
}

#[test]
fn apply_through_a_pnpm_hard_link_leaves_the_store_copy_unchanged() {
    let sb = Sandbox::new();
    let a = sb.pnpm_profile("0.1.0-rc.8", "work");
    let b = sb.pnpm_profile("0.1.0-rc.8", "play");
    let store = sb.root().join("pnpm-store/index.js");
    let store_ino = std::fs::metadata(&store).unwrap().ino();
    let o = sb.run(&["apply"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        sha256_file(&store),
        ORIGINAL,
        "the store copy is byte-identical"
    );
    assert_eq!(std::fs::metadata(&store).unwrap().ino(), store_ino);
    assert_eq!(
        std::fs::metadata(&store).unwrap().nlink(),
        1,
        "both profiles now have their own file"
    );
    for client in [&a, &b] {
        assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
    }
    assert_eq!(backup_count(&sb), 2);
    assert_eq!(code(&sb.run(&["revert"])), 0);
    for client in [&a, &b] {
        assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    }
    assert_eq!(sha256_file(&store), ORIGINAL);
}

#[test]
fn dry_run_checks_everything_and_changes_nothing() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let o = sb.run(&["apply", "--dry-run", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "dry run: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8) would be patched (the patch fits, node --check and the load check pass); nothing changed\n"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    assert_eq!(backup_count(&sb), 0);
    assert!(litter(&client.join("lib")).is_empty());
}

/// Make a folder unwritable even for root (immutable), undone on drop.
pub(crate) struct ReadOnly(PathBuf);

impl ReadOnly {
    pub(crate) fn new(dir: &Path) -> Self {
        let root = unsafe { libc::geteuid() } == 0;
        let ok = if root {
            std::process::Command::new("chattr")
                .arg("+i")
                .arg(dir)
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        } else {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).is_ok()
        };
        assert!(ok, "cannot make {} read-only: as root this needs chattr (e2fsprogs) on a filesystem with attributes", dir.display());
        ReadOnly(dir.to_path_buf())
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn a_read_only_install_fails_clearly_and_stays_unchanged() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let lib = client.join("lib");
    let _guard = ReadOnly::new(&lib);
    let o = sb.run(&["apply", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let err = sb.normalize(&o.stderr);
    assert!(
        err.starts_with(
            "error: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib is not writable: "
        ) && err.ends_with(&format!("help: {}\n", not_writable_help())),
        "{err}"
    );
    assert_eq!(sha256_file(&lib.join("index.js")), ORIGINAL);
    assert_eq!(
        backup_count(&sb),
        0,
        "the backup of a change that did not happen is removed"
    );
}

#[test]
fn an_unwritable_backup_folder_stops_before_touching_anything() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    std::fs::write(sb.root().join("not-a-dir"), "").unwrap();
    let o = sb
        .cmd(&["apply", "--path", client.to_str().unwrap()])
        .env("DSH_HOME", sb.root().join("not-a-dir/.dsh"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: cannot write the backup folder [SANDBOX]/not-a-dir/.dsh/backups/dsh-mcp-client-session-loss: Not a directory (os error 20)
help: nothing was changed; make [SANDBOX]/not-a-dir/.dsh/backups/dsh-mcp-client-session-loss writable or set MCPATCH_HOME to a writable folder
"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
}

#[test]
fn a_modified_file_is_refused_without_yes_and_nothing_changes() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| t + "\n// local edit\n");
    let o = sb
        .cmd(&["apply", "--path", client.to_str().unwrap()])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(code(&o), 1);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "refused: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8)
  modified: sha256 {before} is not a revision mcpatch knows (unknown revision with the reconnect supervisor present); review with `mcpatch diff --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`, then rerun with --yes to patch it anyway
"
        )
    );
    assert_eq!(sha256_file(&file), before);
    assert_eq!(backup_count(&sb), 0);

    // With --yes it is patched (the hunks still apply) and revert restores the
    // edit (the gate before writing an unknown revision is checked in evidence.rs).
    let o = sb.run(&[
        "apply",
        "--yes",
        "--no-verify",
        "--path",
        client.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("function isSessionLostError(error)"));
    let o = sb.run(&["revert", "--yes", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), before);
}

#[test]
fn a_failing_hunk_is_named_and_nothing_changes() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| {
        t.replace(
            "if (attemptSettled) generationDown(generation);",
            "if (attemptSettled) { generationDown(generation); }",
        )
    });
    let o = sb.run(&["apply", "--yes", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: the patch does not apply to [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js: hunk #7 (@@ -623,6 +794,9 @@) does not match: its context lines are not in the file
help: nothing was changed; the patch fits the revision it was cut against, also with local edits away from its hunks, and this file is neither: reinstall @deepseek-ai/dsh, then run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`
"
    );
    assert_eq!(sha256_file(&file), before);
    assert_eq!(backup_count(&sb), 0);
}

#[test]
fn a_staged_file_that_fails_node_check_changes_nothing() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| t + "\nexport const broken = ;\n");
    let o = sb.run(&["apply", "--yes", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: the patched file fails `node --check` ("),
        "{err}"
    );
    assert!(err.contains("SyntaxError: Unexpected token ';'"), "{err}");
    assert!(
        err.ends_with(&format!(
            "help: nothing was changed; report this with the output of `mcpatch status --path {} --json`\n",
            client.display()
        )),
        "{err}"
    );
    assert_eq!(sha256_file(&file), before);
    assert_eq!(backup_count(&sb), 0);
    assert!(litter(&client.join("lib")).is_empty());
}

#[test]
fn a_staged_file_that_does_not_load_changes_nothing() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| {
        t.replace(
            "from \"@deepseek-ai/dsh-subprocess\"",
            "from \"@deepseek-ai/dsh-subprocess-missing\"",
        )
    });
    let o = sb.run(&["apply", "--yes", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let err = sb.normalize(&o.stderr);
    assert!(err.starts_with("error: the patched module does not load from [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib:"), "{err}");
    assert!(
        err.contains("Cannot find package '@deepseek-ai/dsh-subprocess-missing'"),
        "{err}"
    );
    assert_eq!(sha256_file(&file), before);
    assert_eq!(backup_count(&sb), 0);
    assert!(litter(&client.join("lib")).is_empty());
}

#[test]
fn an_unsupported_install_is_refused() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.0.1-rc.1", "old");
    let o = sb.run(&["apply", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        sb.normalize(&o.stdout),
        "refused: [SANDBOX]/old/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.0.1-rc.1)
  unsupported: no reconnect supervisor: the patch cannot help this revision; upgrade @deepseek-ai/dsh to 0.1.0-rc.7 or later
"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), UNSUPPORTED);
}

#[test]
fn no_node_is_an_error_naming_the_flag() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let o = sb.run(&[
        "apply",
        "--node",
        "/nonexistent/node",
        "--path",
        client.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: cannot run node (/nonexistent/node): No such file or directory (os error 2)\nhelp: check the path given to --node: it must be a node binary that runs (DSH itself needs Node.js 22 or later; with an older node, `verify` adds a Promise.withResolvers shim); or leave --node out to use `node` on PATH\n"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
}

#[test]
fn a_damaged_backup_is_refused_and_nothing_changes() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    let root = sb.dsh_home().join("backups/dsh-mcp-client-session-loss");
    let id = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|n| !n.starts_with('.'))
        .unwrap();
    let saved = root.join(&id).join("index.js");
    let mut bytes = std::fs::read(&saved).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&saved, &bytes).unwrap();
    let damaged = sha256_file(&saved);
    let o = sb.run(&["revert", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        sb.normalize(&o.stderr),
        format!(
            "error: backup {id} is damaged: [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss/{id}/index.js has sha256 {damaged}, its manifest says {ORIGINAL}
help: nothing was changed; pick another backup with `mcpatch backups` and `--backup ID`, or reinstall the package that holds the file
"
        )
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
}

#[test]
fn revert_restores_the_named_backup() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let listing: serde_json::Value =
        serde_json::from_slice(&sb.run(&["backups", "--json"]).stdout).unwrap();
    let id = listing["backups"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(listing["backups"][0]["manifest"]["sha256_before"], ORIGINAL);
    let o = sb.run(&["revert", "--backup", "no-such-backup", "--path", p]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: no backup named no-such-backup under [SANDBOX]/home/.dsh/backups\nhelp: list the backups with `mcpatch backups`\n"
    );
    let o = sb.run(&["revert", "--backup", &id, "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    let o = sb.run(&["backups"]);
    let text = sb.normalize(&o.stdout);
    assert_eq!(
        text,
        format!(
            "backups under [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss:\nID  VERSION  SAVED SHA256  FILE\n{id}  0.1.0-rc.8  b126dcec…7d56  [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js\n"
        )
    );
}

#[test]
fn revert_with_a_backup_of_another_install_names_that_file_and_changes_nothing() {
    let sb = Sandbox::new();
    let a = sb.client_install("0.1.0-rc.8", "a");
    let b = sb.client_install("0.1.0-rc.7", "b");
    let (pa, pb) = (a.to_str().unwrap(), b.to_str().unwrap());
    assert_eq!(code(&sb.run(&["apply", "--path", pa])), 0);
    assert_eq!(code(&sb.run(&["apply", "--path", pb])), 0);
    let listing: serde_json::Value =
        serde_json::from_slice(&sb.run(&["backups", "--json"]).stdout).unwrap();
    let of_a = listing["backups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["manifest"]["original_path"] == a.join("lib/index.js").to_str().unwrap())
        .unwrap_or_else(|| panic!("no backup of a: {listing:#}"));
    let id = of_a["id"].as_str().unwrap();

    let o = sb.run(&["revert", "--backup", id, "--path", pb]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!(
            "error: backup {id} is of [SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js, which is not among the installs found
help: nothing was changed; to restore it, pass the package folder of that file with --path; `mcpatch backups` lists which backup is of which file
"
        )
    );
    assert_eq!(sha256_file(&a.join("lib/index.js")), patched_hash());
    assert_eq!(sha256_file(&b.join("lib/index.js")), patched_hash());

    let o = sb.run(&["revert", "--backup", id, "--path", pa]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&a.join("lib/index.js")), ORIGINAL);
    assert_eq!(sha256_file(&b.join("lib/index.js")), patched_hash());
}

#[test]
fn diff_shows_the_patch_as_it_would_apply() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let o = sb.run(&["diff", "--path", client.to_str().unwrap()]);
    // A change to show exits 1, as diff(1) and `git diff --exit-code` do.
    assert_eq!(code(&o), 1);
    let out = sb.normalize(&o.stdout);
    assert!(out.starts_with("# [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js (affected)\n--- a/lib/index.js\n+++ b/lib/index.js\n@@ -103,6 +103,39 @@"), "{out}");
    assert!(
        out.contains("+function isSessionLostError(error) {"),
        "{out}"
    );
    assert!(
        !out.contains('\u{1b}'),
        "no colour when NO_COLOR is set or not a terminal"
    );
    // Nothing to change once patched: exit 0.
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    let o = sb.run(&["diff", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "# [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js (patched)\nalready patched; `mcpatch revert --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` restores the original\n"
    );
}

#[test]
fn two_applies_at_once_make_one_patch_and_one_backup() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let outs = applies_at_once(&sb, &client, 2);
    for o in &outs {
        assert_eq!(code(o), 0, "{}{}", stdout(o), stderr(o));
    }
    let patched = outs
        .iter()
        .filter(|o| stdout(o).starts_with("patched "))
        .count();
    let already = outs
        .iter()
        .filter(|o| stdout(o).starts_with("already patched: "))
        .count();
    assert_eq!((patched, already), (1, 1));
    assert_eq!(backup_count(&sb), 1);
    let file = client.join("lib/index.js");
    assert_eq!(sha256_file(&file), patched_hash());
    node_check(&file);
}

#[test]
fn the_session_loss_predicate_is_narrow_on_real_sdk_errors() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    assert_eq!(
        code(&sb.run(&["apply", "--path", client.to_str().unwrap()])),
        0
    );
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/predicate-table.mjs");
    let o = std::process::Command::new(node22())
        .arg(table)
        .arg(client.join("lib/index.js"))
        .arg(&client)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let verdicts: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let expected = serde_json::json!({
        "404 json -32001": true,
        "404 html": true,
        "404 rmcp": true,
        "404 python": true,
        "400 ts examples": true,
        "400 python text": true,
        "400 header required": true,
        "400 server not initialized": true,
        "401 old rmcp": true,
        "v2 404": true,
        "v2 400 session": true,
        "500": false,
        "400 invalid params": false,
        "400 invalid params naming a session field": false,
        "401 bad token": false,
        "403": false,
        "404 on the GET stream": false,
        "jsonrpc error": false,
        "timeout": false,
        "v2 string code": false,
        "string code only": false,
        "plain error naming the session": false,
        "fetch failed": false,
        "abort": false,
        "null": false,
        "string": false,
    });
    assert_eq!(verdicts, expected);
}

/// Run mcpatch on a pseudo-terminal (util-linux `script`), typing `keys` once it
/// asks (its prompt is on the screen), and return its exit code and the screen.
fn on_a_terminal(sb: &Sandbox, args: &[&str], keys: &str) -> (i32, String) {
    on_a_terminal_with(sb, args, keys, "")
}

/// [`on_a_terminal`] with `redirect` appended to mcpatch's command line (such
/// as `< /dev/null`, so that stdin is not the terminal).
fn on_a_terminal_with(sb: &Sandbox, args: &[&str], keys: &str, redirect: &str) -> (i32, String) {
    use std::io::{Read, Write};
    const PROMPT: &str = "patch this file anyway?";
    let script = which::which("script").unwrap_or_else(|_| {
        panic!(
            "`script` (util-linux) is needed to test the terminal prompt: apt-get install bsdutils"
        )
    });
    let cmd = sb.command(args);
    let line = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| format!("'{}'", a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = std::process::Command::new(script);
    c.args(["-qec", &format!("{line} {redirect}"), "/dev/null"]);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let mut child = c
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let (seen_tx, seen) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut screen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            screen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&screen).contains(PROMPT) {
                let _ = seen_tx.send(());
            }
        }
        String::from_utf8_lossy(&screen).to_string()
    });
    // Type once the prompt is there (an event); a run that never asks fails the test below.
    let _ = seen.recv_timeout(std::time::Duration::from_secs(60));
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(keys.as_bytes());
    drop(stdin);
    let status = child.wait().unwrap();
    let screen = reader.join().unwrap();
    (status.code().unwrap_or(-1), screen)
}

#[test]
fn a_modified_file_on_a_terminal_shows_the_change_and_asks() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| t + "\n// local edit\n");
    let p = client.to_str().unwrap();

    let (rc, screen) = on_a_terminal(&sb, &["apply", "--path", p], "n");
    assert_eq!(rc, 1, "{screen}");
    assert!(
        screen.contains("is modified (not a revision mcpatch knows); the patch would change:"),
        "{screen}"
    );
    assert!(
        screen.contains("+function isSessionLostError(error) {"),
        "{screen}"
    );
    assert!(screen.contains("patch this file anyway?"), "{screen}");
    assert!(
        screen.contains("modified: you declined; nothing changed"),
        "{screen}"
    );
    assert_eq!(sha256_file(&file), before);
    assert_eq!(backup_count(&sb), 0);

    let (rc, screen) = on_a_terminal(&sb, &["apply", "--path", p], "y");
    assert_eq!(rc, 0, "{screen}");
    let now = sha256_file(&file);
    assert!(
        screen.contains(&format!("sha256 now {}…{}", &now[..8], &now[60..])),
        "{screen}"
    );
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("function isSessionLostError(error)"));
    assert_eq!(backup_count(&sb), 1);
}

#[test]
fn a_modified_file_asks_only_when_stdin_and_stderr_are_both_a_terminal() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| t + "\n// local edit\n");
    let p = client.to_str().unwrap();
    let refused = format!(
        "refused: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8)
  modified: sha256 {before} is not a revision mcpatch knows (unknown revision with the reconnect supervisor present); review with `mcpatch diff --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`, then rerun with --yes to patch it anyway
"
    );
    // stdin from /dev/null (a script, a pipe), stderr on the terminal: no one can answer.
    let (rc, screen) = on_a_terminal_with(&sb, &["apply", "--path", p], "y", "< /dev/null");
    assert_eq!(rc, 1, "{screen}");
    // On the terminal the lines are wrapped to its width: the words are the same.
    assert_eq!(words(&sb.normalize(screen.as_bytes())), words(&refused));
    // stdin on the terminal, stderr to a file: the question would not be seen.
    let log = sb.root().join("stderr.log");
    let (rc, screen) = on_a_terminal_with(
        &sb,
        &["apply", "--path", p],
        "y",
        &format!("2> '{}'", log.display()),
    );
    assert_eq!(rc, 1, "{screen}");
    // On the terminal the lines are wrapped to its width: the words are the same.
    assert_eq!(words(&sb.normalize(screen.as_bytes())), words(&refused));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "");
    assert_eq!(sha256_file(&file), before);
    assert_eq!(backup_count(&sb), 0);
}

#[test]
fn one_read_only_install_does_not_stop_the_others() {
    let sb = Sandbox::new();
    let locked = sb.client_install("0.1.0-rc.8", "a");
    let open = sb.client_install("0.1.0-rc.7", "b");
    let _guard = ReadOnly::new(&locked.join("lib"));
    let o = sb.run(&["apply", "--path", sb.root().to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let err = sb.normalize(&o.stderr);
    assert!(
        err.starts_with(
            "error: [SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib is not writable"
        ),
        "{err}"
    );
    assert!(
        err.ends_with("error: 1 of 2 install(s) could not be patched; each error is above\nhelp: each install that failed was left as it was, the others were handled as reported; fix what each error names and run again (a rerun skips what is done)\n"),
        "{err}"
    );
    assert!(sb.normalize(&o.stdout).starts_with(
        "patched [SANDBOX]/b/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.7)"
    ));
    assert_eq!(sha256_file(&locked.join("lib/index.js")), ORIGINAL);
    assert_eq!(sha256_file(&open.join("lib/index.js")), patched_hash());
    assert_eq!(backup_count(&sb), 1);
}

/// The text of `text` without its white space, however it is wrapped (a
/// word too long for a line is cut).
fn words(text: &str) -> String {
    text.split_whitespace().collect()
}
