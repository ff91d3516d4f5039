//! What apply and revert refuse or undo, each proven by a test that fails
//! when the guard is removed: the rollback after a failure past the rename,
//! half-written backups, revert without --yes, the backup named by --backup,
//! dry runs that must report failed checks, and backups of the wrong revision.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;

use super::harden::{backup_ids, litter, BACKUPS};
use super::pause::{reached_step, Paused};
use super::*;

const FAULT: &str = "help: unset MCPATCH_TEST_FAIL_AT; it is for mcpatch's own tests\n";
const FILE: &str = "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js";

#[test]
fn a_failure_after_the_rename_rolls_apply_back_and_removes_its_backup() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let o = sb
        .cmd(&["apply", "--path", client.to_str().unwrap()])
        .env("MCPATCH_TEST_FAIL_AT", "renamed")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        stderr(&o),
        format!("error: fault injected at step renamed (MCPATCH_TEST_FAIL_AT)\n{FAULT}")
    );
    assert_eq!(sha256_file(&file), ORIGINAL, "the original is back");
    assert_eq!(backup_count(&sb), 0, "the backup made for it is removed");
    assert!(litter(&client.join("lib")).is_empty());
}

#[test]
fn a_failure_after_the_rename_rolls_revert_back() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let o = sb
        .cmd(&["revert", "--path", p])
        .env("MCPATCH_TEST_FAIL_AT", "renamed")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        stderr(&o),
        format!("error: fault injected at step renamed (MCPATCH_TEST_FAIL_AT)\n{FAULT}")
    );
    assert_eq!(
        sha256_file(&file),
        patched_hash(),
        "the patched file is back"
    );
    assert_eq!(backup_count(&sb), 1, "backups are kept");
    assert!(litter(&client.join("lib")).is_empty());
}

/// Change one byte of `file` in place, keeping its size and modification time,
/// so only its sha256 can tell; returns the new sha256.
fn flip_a_byte_quietly(file: &Path) -> String {
    let mtime = std::fs::metadata(file).unwrap().modified().unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    let mut byte = [0u8; 1];
    std::fs::File::open(file)
        .unwrap()
        .read_exact_at(&mut byte, 100)
        .unwrap();
    f.write_all_at(&[byte[0] ^ 1], 100).unwrap();
    f.set_times(std::fs::FileTimes::new().set_modified(mtime))
        .unwrap();
    drop(f);
    sha256_file(file)
}

#[test]
fn a_wrong_hash_after_the_rename_rolls_apply_back() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let mut run = Paused::start(
        sb.command(&["apply", "--path", client.to_str().unwrap()]),
        "renamed",
    );
    run.expect_reached("renamed");
    let found = flip_a_byte_quietly(&file);
    run.resume();
    let o = run.finish();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: after writing {FILE} its sha256 is {found}, expected {}\nhelp: the original was restored; report this with the output of `mcpatch status --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client --json`\n", patched_hash())
    );
    assert_eq!(
        sha256_file(&file),
        ORIGINAL,
        "the original was restored, as it says"
    );
    assert_eq!(backup_count(&sb), 0);
}

#[test]
fn a_wrong_hash_after_the_rename_rolls_revert_back_and_says_so() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let mut run = Paused::start(sb.command(&["revert", "--path", p]), "renamed");
    run.expect_reached("renamed");
    let found = flip_a_byte_quietly(&file);
    run.resume();
    let o = run.finish();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: after writing {FILE} its sha256 is {found}, expected {ORIGINAL}\nhelp: the file as it was before the revert was put back; report this with the output of `mcpatch status --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client --json`\n")
    );
    assert_eq!(
        sha256_file(&file),
        patched_hash(),
        "the patched file was put back, as it says"
    );
    assert_eq!(backup_count(&sb), 1);
}

#[test]
fn a_kill_inside_backup_creation_leaves_a_hidden_half_backup_that_the_next_run_removes() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    let o = sb
        .cmd(&["apply", "--path", p])
        .env("MCPATCH_TEST_KILL_AT", "backup-writing")
        .output()
        .unwrap();
    assert_eq!(
        o.status.signal(),
        Some(libc::SIGKILL),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let root = sb.dsh_home().join(BACKUPS);
    let half: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".incomplete-")
        })
        .collect();
    assert_eq!(half.len(), 1, "the half-written backup is aside, hidden");
    assert!(half[0].join("index.js").is_file());
    assert!(!half[0].join("manifest.json").exists());
    assert_eq!(backup_count(&sb), 0, "no visible backup");
    assert_eq!(sha256_file(&file), ORIGINAL);

    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        !half[0].exists(),
        "the next run removed the half-written backup"
    );
    assert_eq!(backup_ids(&sb).len(), 1);
    assert_eq!(sha256_file(&file), patched_hash());
}

#[test]
fn revert_without_yes_refuses_a_file_changed_since_patching() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let changed = edit_file(&file, |t| t + "\n// edited after patching\n");
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("refused: {FILE}\n  the file changed since it was patched (sha256 {changed}); rerun with --yes to overwrite it with the backup\n")
    );
    assert_eq!(stderr(&o), "");
    assert_eq!(sha256_file(&file), changed, "nothing changed");
    assert_eq!(backup_count(&sb), 1);
}

#[test]
fn revert_without_yes_restores_a_file_an_earlier_mcpatch_patched_with_revision_1() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    // An earlier mcpatch put revision 1 on the original and saved a backup
    // whose manifest names revision 1 as the file it left.
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let [id] = &backup_ids(&sb)[..] else {
        panic!("one backup: {:?}", backup_ids(&sb))
    };
    let saved = sb.dsh_home().join(BACKUPS).join(id);
    std::fs::write(&file, std::fs::read(saved.join("index.js")).unwrap()).unwrap();
    let r1 = super::verify::patch_with_revision_1(&client);
    let manifest = saved.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["sha256_after"] = r1.clone().into();
    std::fs::write(&manifest, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    assert_ne!(r1, patched_hash());

    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        sb.normalize(&o.stdout)
            .starts_with(&format!("restored {FILE} from backup ")),
        "{}",
        stdout(&o)
    );
    assert_eq!(sha256_file(&file), ORIGINAL);
}

#[test]
fn revert_without_yes_refuses_a_backup_of_an_unknown_original() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    let modified = edit_file(&file, |t| t + "\n// local edit\n");
    // The gate before writing an unknown revision is checked in evidence.rs.
    assert_eq!(
        code(&sb.run(&["apply", "--yes", "--no-verify", "--path", p])),
        0
    );
    let patched = sha256_file(&file);
    let id = backup_ids(&sb).remove(0);
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("refused: {FILE}\n  backup {id} holds sha256 {modified}, which is not a known original; rerun with --yes to restore it anyway\n")
    );
    assert_eq!(stderr(&o), "");
    assert_eq!(sha256_file(&file), patched, "nothing changed");
}

#[test]
fn revert_backup_id_restores_the_named_backup_not_the_newest() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    // Backup one holds the known original; backup two, newer, a local edit of it.
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    assert_eq!(code(&sb.run(&["revert", "--path", p])), 0);
    let edited = edit_file(&file, |t| t + "\n// local edit\n");
    // The gate before writing an unknown revision is checked in evidence.rs.
    assert_eq!(
        code(&sb.run(&["apply", "--yes", "--no-verify", "--path", p])),
        0
    );
    let ids = backup_ids(&sb);
    assert_eq!(ids.len(), 2);
    let (first, newest) = (&ids[0], &ids[1]);
    let listing: serde_json::Value =
        serde_json::from_slice(&sb.run(&["backups", "--json"]).stdout).unwrap();
    assert_eq!(listing["backups"][1]["id"], newest.as_str());
    assert_eq!(listing["backups"][1]["manifest"]["sha256_before"], edited);

    let o = sb.run(&["revert", "--yes", "--backup", first, "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("restored {FILE} from backup {first}\n  sha256 now b126dcec…7d56\nbackups are kept (`mcpatch backups`); restart DSH so it loads the restored client\n")
    );
    assert_eq!(
        sha256_file(&file),
        ORIGINAL,
        "the named backup, not the newest"
    );
}

/// Replace the random part of mcpatch's scratch and staged file names.
fn without_temp_names(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = ["mcpatch-stage-", ".mcpatch-staged-"]
        .iter()
        .filter_map(|p| rest.find(p).map(|i| (i, p.len())))
        .min()
        .map(|(i, len)| i + len)
    {
        out.push_str(&rest[..i]);
        out.push('*');
        rest = &rest[i..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn a_dry_run_reports_a_staged_file_that_fails_node_check() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| t + "\nexport const broken = ;\n");
    let o = sb.run(&[
        "apply",
        "--dry-run",
        "--yes",
        "--path",
        client.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let tmp = std::env::temp_dir().display().to_string();
    let err = without_stack(&without_temp_names(&sb.normalize(&o.stderr)).replace(&tmp, "[TMP]"));
    // The broken line is the staged file's last: the edited file's plus what the patch adds.
    let lines = std::fs::read_to_string(&file).unwrap().lines().count() + lines_the_patch_adds();
    assert_eq!(
        err,
        format!(
            "error: the patched file fails `node --check` ([TMP]/mcpatch-stage-*/lib/index.js):
[TMP]/mcpatch-stage-*/lib/index.js:{lines}
export const broken = ;
  ^

SyntaxError: Unexpected token ';'

Node.js {}
help: nothing was changed; report this with the output of `mcpatch status --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client --json`
",
            node22_version()
        )
    );
    assert_eq!(stdout(&o), "", "no dry-run success line");
    assert_eq!(sha256_file(&file), before);
}

#[test]
fn a_dry_run_reports_a_staged_file_that_does_not_load() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| {
        t.replace(
            "from \"@deepseek-ai/dsh-subprocess\"",
            "from \"@deepseek-ai/dsh-subprocess-missing\"",
        )
    });
    let o = sb.run(&[
        "apply",
        "--dry-run",
        "--yes",
        "--path",
        client.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let err = without_stack(&without_temp_names(&sb.normalize(&o.stderr)));
    assert!(
        err.starts_with("error: the patched module does not load from [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib:\n"),
        "{err}"
    );
    assert!(
        err.contains("Error [ERR_MODULE_NOT_FOUND]: Cannot find package '@deepseek-ai/dsh-subprocess-missing' imported from [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/.mcpatch-staged-*.js\n"),
        "{err}"
    );
    assert!(
        err.ends_with(&format!("Node.js {}\nhelp: nothing was changed; check that the install's dependencies are present (`npm ls` in that folder) and that node is 22 or later\n", node22_version())),
        "{err}"
    );
    assert_eq!(stdout(&o), "", "no dry-run success line");
    assert_eq!(sha256_file(&file), before);
    assert!(litter(&client.join("lib")).is_empty());
}

/// Without node's stack lines (`  at ...`), which change with node's own code.
fn without_stack(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("at "))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn lines_the_patch_adds() -> usize {
    let patch = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("patches/dsh-mcp-client-session-loss/session-loss.patch"),
    )
    .unwrap();
    let count = |sign: char, header: &str| {
        patch
            .lines()
            .filter(|l| l.starts_with(sign) && !l.starts_with(header))
            .count()
    };
    count('+', "+++") - count('-', "---")
}

#[test]
fn a_backup_holding_the_patched_revision_is_refused() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let id = backup_ids(&sb).remove(0);
    let dir = sb.dsh_home().join(BACKUPS).join(&id);
    // A backup that "saved" the patched file, its manifest consistent with it.
    std::fs::copy(&file, dir.join("index.js")).unwrap();
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    manifest["sha256_before"] = serde_json::json!(patched_hash());
    let mut f = std::fs::File::create(dir.join("manifest.json")).unwrap();
    f.write_all(manifest.to_string().as_bytes()).unwrap();
    let o = sb.run(&["revert", "--yes", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: backup {id} is damaged: [SANDBOX]/home/.dsh/{BACKUPS}/{id}/index.js is the patched revision, not an original\nhelp: nothing was changed; pick another backup with `mcpatch backups` and `--backup ID`, or reinstall the package that holds the file\n")
    );
    assert_eq!(sha256_file(&file), patched_hash(), "nothing changed");
}

// ---- signals leave no scratch behind, and the backups folder is trusted before node runs ----

/// Names in `dir` that start with `prefix`.
fn named_in(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

#[test]
fn a_signal_during_applys_syntax_check_leaves_no_stage_folder() {
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        let sb = Sandbox::new();
        let client = sb.client_install("0.1.0-rc.8", "g");
        let tmp = sb.root().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let pause = sb.root().join("pause");
        std::fs::create_dir(&pause).unwrap();
        for fifo in ["reached", "resume"] {
            let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(
                pause.join(fifo).as_os_str(),
            ))
            .unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }
        // Read-write: opening never blocks.
        let reached = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(pause.join("reached"))
            .unwrap();
        let mut child = sb
            .command(&["apply", "--path", client.to_str().unwrap()])
            .env("TMPDIR", &tmp)
            .env("MCPATCH_TEST_PAUSE_AT", "syntax-check")
            .env("MCPATCH_TEST_PAUSE_DIR", &pause)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let line = reached_step(&reached, &mut child, std::time::Duration::from_secs(120));
        assert_eq!(line, "syntax-check\n");
        assert_eq!(
            named_in(&tmp, "mcpatch-stage-").len(),
            1,
            "the stage folder is there"
        );
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.signal(),
            Some(signal),
            "ends by the signal, as before: {}",
            stderr(&o)
        );
        assert_eq!(
            named_in(&tmp, "mcpatch-stage-"),
            Vec::<String>::new(),
            "signal {signal}"
        );
        assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
        assert_eq!(backup_ids(&sb), Vec::<String>::new());
    }
}

#[test]
fn sighup_sigterm_or_sigint_during_verify_backup_removes_its_copy_and_the_harness_folder() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let lib = client.join("lib");
    let tmp = sb.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (signal, name) in [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGINT, "SIGINT"),
    ] {
        let child = sb
            .command(&[
                "verify",
                "--backup",
                "--path",
                p,
                "--scenario",
                "idle-timeout",
            ])
            .env("TMPDIR", &tmp)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the copy and the harness folder to appear (bounded).
        for _ in 0..4000 {
            if !named_in(&lib, ".mcpatch-verify-").is_empty()
                && !named_in(&tmp, "mcpatch-harness-").is_empty()
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(
            named_in(&lib, ".mcpatch-verify-").len(),
            1,
            "{name}: the copy is there"
        );
        assert_eq!(
            named_in(&tmp, "mcpatch-harness-").len(),
            1,
            "{name}: the harness folder is there"
        );
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 2, "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).ends_with(&format!("error: interrupted by {name}: the check stopped, node and the fake servers were stopped, and any copy of a backup it had put in the install was removed\nhelp: run `mcpatch verify --path {p}` again to finish the check\n")),
            "{}",
            stderr(&o)
        );
        assert_eq!(
            named_in(&lib, ".mcpatch-verify-"),
            Vec::<String>::new(),
            "{name}"
        );
        assert_eq!(
            named_in(&tmp, "mcpatch-harness-"),
            Vec::<String>::new(),
            "{name}"
        );
    }
}

#[test]
fn verify_backup_refuses_an_untrusted_backups_folder_before_node_runs_anything() {
    super::harden::require_root("the backups folder is checked only when mcpatch runs as root");
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let root = sb.dsh_home().join(BACKUPS);
    for (dir, mode) in [
        (root.clone(), 0o777),
        (root.parent().unwrap().to_path_buf(), 0o775),
    ] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let why = format!("its group or others can write it (mode {mode:04o})");
        let shown = sb.normalize(dir.to_str().unwrap().as_bytes());
        let shown = shown.trim_end();
        let expected = format!("error: refusing {shown}: {why}; running as root, mcpatch trusts a backups folder only when root owns it and no one else can write it\nhelp: check what is in it, then `chown -R root:root {shown}` and `chmod -R go-w {shown}`, or set DSH_HOME to a folder only root can write (such as DSH_HOME=/root/.dsh)\n");
        // revert refuses it so ...
        let o = sb.run(&["revert", "--path", p]);
        assert_eq!(code(&o), 2);
        assert_eq!(sb.normalize(&o.stderr), expected);
        // ... and so does verify --backup, before it even looks for node.
        for args in [
            vec!["verify", "--backup", "--path", p],
            vec!["verify", "--backup", "--path", p, "--json"],
        ] {
            let o = sb.run(&args);
            assert_eq!(code(&o), 2, "{args:?}: {}", stdout(&o));
            assert_eq!(sb.normalize(&o.stderr), expected, "{args:?}");
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
}

#[test]
fn verify_backup_with_no_backup_names_the_install_and_the_backups_folder_before_the_node_line() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let o = sb.run(&["verify", "--backup", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: no backup of {FILE} under [SANDBOX]/home/.dsh/{BACKUPS}, so `verify --backup` has no saved original to run\nhelp: `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` saves the original when it patches the install; if it was patched with another state folder (sudo uses root's), run `MCPATCH_HOME=<that folder> mcpatch verify --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client --backup`; `mcpatch backups` lists the backups under this one\n")
    );
    assert_eq!(stdout(&o), "");
    let o = sb.run(&["verify", "--backup", "nope", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: no backup named nope under [SANDBOX]/home/.dsh/{BACKUPS}\nhelp: list the backups with `mcpatch backups`\n")
    );
}
