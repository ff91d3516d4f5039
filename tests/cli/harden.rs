//! mcpatch run as root on files others may write: planted links, hostile
//! manifests and backups folders, files replaced mid-apply, runs with other
//! DSH_HOMEs, node runs that never end, odd paths and sizes (harden_output.rs: pipes, scratch files, escapes).
//! Several tests need root (CI runs as root) and say so when it is missing.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::Stdio;

use super::pause::Paused;
use super::*;

pub(crate) const BACKUPS: &str = "backups/dsh-mcp-client-session-loss";
/// A uid and gid no account uses, for files "someone else" owns.
pub(crate) const STRANGER: u32 = 4_242_424;

pub(crate) fn require_root(why: &str) {
    assert!(
        unsafe { libc::geteuid() } == 0,
        "this test needs root ({why}); CI runs as root: run it as root (sudo -E cargo test)"
    );
}

/// The ids of the DSH plugin's backups in the sandbox's DSH_HOME, oldest first.
pub(crate) fn backup_ids(sb: &Sandbox) -> Vec<String> {
    backup_ids_under(sb, BACKUPS)
}

/// The ids of the backups in `folder` (`backups/<patch-id>`) of the
/// sandbox's DSH_HOME, oldest first; none when it does not exist.
pub(crate) fn backup_ids_under(sb: &Sandbox, folder: &str) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(sb.dsh_home().join(folder))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Files mcpatch left in an install's lib folder.
pub(crate) fn litter(lib: &Path) -> Vec<String> {
    std::fs::read_dir(lib)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".mcpatch"))
        .collect()
}

pub(crate) fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().mode() & 0o7777
}

pub(crate) fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
}

/// `cmd` run through util-linux setpriv with `options` (which need root),
/// keeping its arguments and environment.
fn through_setpriv(options: &[String], cmd: std::process::Command) -> std::process::Command {
    let setpriv = which::which("setpriv")
        .unwrap_or_else(|_| panic!("setpriv (util-linux) is needed: apt-get install util-linux"));
    let mut c = std::process::Command::new(setpriv);
    c.args(options)
        .arg("--")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c
}

/// `cmd` run as root without the capabilities that let root read and write
/// any file (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), through util-linux setpriv.
fn without_dac_override(cmd: std::process::Command) -> std::process::Command {
    require_root("it drops root's file-access override with setpriv");
    through_setpriv(
        &[
            "--bounding-set".into(),
            "-dac_override,-dac_read_search".into(),
        ],
        cmd,
    )
}

#[test]
fn revert_never_takes_a_wider_mode_from_a_manifest() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let id = backup_ids(&sb).remove(0);
    let manifest_path = sb.dsh_home().join(BACKUPS).join(&id).join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    // Whoever can write the backups folder asks for setuid, setgid and world-writable.
    manifest["mode"] = serde_json::json!(0o106777);
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);
    assert_eq!(mode_of(&file), 0o644, "the file keeps its own mode");
    // The saved copy never carries more than the original's read/execute bits.
    assert_eq!(
        mode_of(&sb.dsh_home().join(BACKUPS).join(&id).join("index.js")),
        0o644
    );
}

#[test]
fn as_root_a_backups_folder_that_others_own_or_can_write_is_refused() {
    require_root("only root can give the backups folder to another uid");
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let root = sb.dsh_home().join(BACKUPS);
    let help = "help: check what is in it, then `chown -R root:root [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss` and `chmod -R go-w [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss`, or set DSH_HOME to a folder only root can write (such as DSH_HOME=/root/.dsh)\n";

    std::os::unix::fs::lchown(&root, Some(STRANGER), Some(STRANGER)).unwrap();
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: refusing [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss: it is owned by uid {STRANGER}, not root; running as root, mcpatch trusts a backups folder only when root owns it and no one else can write it\n{help}")
    );
    assert_eq!(sha256_file(&file), patched_hash(), "nothing changed");

    std::os::unix::fs::lchown(&root, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o775)).unwrap();
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: refusing [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss: its group or others can write it (mode 0775); running as root, mcpatch trusts a backups folder only when root owns it and no one else can write it\n{help}")
    );
    assert_eq!(sha256_file(&file), patched_hash(), "nothing changed");

    // apply refuses it too, before touching the install, and so does its dry run.
    let fresh = sb.client_install("0.1.0-rc.7", "h");
    let refused = format!("error: refusing [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss: its group or others can write it (mode 0775); running as root, mcpatch trusts a backups folder only when root owns it and no one else can write it\n{help}");
    for dry_run in [true, false] {
        let mut args = vec!["apply", "--path", fresh.to_str().unwrap()];
        if dry_run {
            args.push("--dry-run");
        }
        let o = sb.run(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stdout(&o));
        assert_eq!(sb.normalize(&o.stderr), refused, "{args:?}");
        assert_eq!(sha256_file(&fresh.join("lib/index.js")), ORIGINAL);
    }

    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);
}

/// `cmd` (made by `sb`) run as the uid and gid [`STRANGER`], with no
/// supplementary groups. The checkout may be one [`STRANGER`] cannot enter
/// (a clone under a mode-700 home), so the mcpatch binary and node are
/// reached through the sandbox: hard-linked there (copied across file
/// systems), and PATH points at them.
fn as_stranger(sb: &Sandbox, cmd: std::process::Command) -> std::process::Command {
    require_root("it runs mcpatch as another uid with setpriv");
    let tools = sb.root().join("stranger-tools");
    let mcpatch = tools.join("mcpatch");
    let node_dir = tools.join("node-bin");
    if !mcpatch.exists() {
        std::fs::create_dir_all(&node_dir).unwrap();
        for (from, to) in [
            (assert_cmd::cargo::cargo_bin("mcpatch"), mcpatch.clone()),
            (node22_dir().join("node"), node_dir.join("node")),
        ] {
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).unwrap();
            }
            assert!(
                to.metadata().unwrap().mode() & 0o005 == 0o005,
                "{} must be readable and runnable by others",
                from.display()
            );
        }
        for d in [sb.root(), &tools, &node_dir] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let mut c = std::process::Command::new(&mcpatch);
    c.args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.env(
        "PATH",
        std::env::join_paths([sb.root().join("bin"), node_dir]).unwrap(),
    );
    through_setpriv(
        &[
            format!("--reuid={STRANGER}"),
            format!("--regid={STRANGER}"),
            "--clear-groups".into(),
        ],
        c,
    )
}

/// Give [`STRANGER`] the sandbox's folders and the files mcpatch writes; the
/// package's other files stay root's (hard links into the fixture cache).
fn give_sandbox_to_stranger(sb: &Sandbox) {
    use std::os::unix::fs::MetadataExt;
    std::fs::set_permissions(sb.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for entry in walkdir::WalkDir::new(sb.root()) {
        let entry = entry.unwrap();
        let meta = entry.path().symlink_metadata().unwrap();
        if meta.is_dir() || (meta.is_file() && meta.nlink() == 1) {
            std::os::unix::fs::lchown(entry.path(), Some(STRANGER), Some(STRANGER)).unwrap();
        }
    }
}

#[test]
fn a_user_without_root_patches_and_reverts_an_install_they_own() {
    use std::os::unix::fs::MetadataExt;
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    give_sandbox_to_stranger(&sb);

    let o = as_stranger(&sb, sb.command(&["apply", "--path", p]))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), patched_hash());
    let [id] = &backup_ids(&sb)[..] else {
        panic!("one backup: {:?}", backup_ids(&sb))
    };
    let saved = sb.dsh_home().join(BACKUPS).join(id);
    for made in [
        sb.dsh_home().join(BACKUPS),
        saved.clone(),
        saved.join("index.js"),
    ] {
        let meta = made.symlink_metadata().unwrap();
        assert_eq!(
            (meta.uid(), meta.gid()),
            (STRANGER, STRANGER),
            "{}",
            made.display()
        );
    }
    assert_eq!(file.metadata().unwrap().uid(), STRANGER);

    let o = as_stranger(&sb, sb.command(&["revert", "--path", p]))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);
    assert_eq!(file.metadata().unwrap().uid(), STRANGER);
}

#[test]
fn a_dsh_home_the_user_cannot_write_fails_the_dry_run_as_it_fails_the_real_run() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    give_sandbox_to_stranger(&sb);
    std::os::unix::fs::lchown(sb.dsh_home(), Some(0), Some(0)).unwrap();
    std::fs::set_permissions(sb.dsh_home(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for dry_run in [true, false] {
        let mut args = vec!["apply", "--path", p];
        if dry_run {
            args.push("--dry-run");
        }
        let o = as_stranger(&sb, sb.command(&args)).output().unwrap();
        assert_eq!(code(&o), 2, "{args:?}: {}", stdout(&o));
        assert_eq!(
            sb.normalize(&o.stderr),
            "error: cannot write the backup folder [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss: Permission denied (os error 13)
help: nothing was changed; make [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss writable or set MCPATCH_HOME to a writable folder
",
            "{args:?}"
        );
        assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    }
}

#[test]
fn a_planted_lock_link_is_refused_and_a_dry_run_creates_nothing() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let o = sb.run(&["apply", "--dry-run", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !sb.dsh_home().join("backups").exists(),
        "a dry run creates no backups folder"
    );

    let root = sb.dsh_home().join(BACKUPS);
    std::fs::create_dir_all(&root).unwrap();
    let victim = sb.root().join("victim");
    std::os::unix::fs::symlink(&victim, root.join(".lock")).unwrap();
    let o = sb.run(&["apply", "--dry-run", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !victim.exists(),
        "a dry run creates nothing through the link"
    );

    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: refusing the lock file [SANDBOX]/home/.dsh/backups/dsh-mcp-client-session-loss/.lock: it is a symbolic link, not a regular file
help: remove it (no mcpatch holds a lock through it); mcpatch creates a fresh one
"
    );
    assert!(!victim.exists(), "nothing is created through the link");
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    assert_eq!(backup_count(&sb), 0);
}

/// How a host upgrade lands on lib/index.js.
#[derive(Debug, Clone, Copy)]
enum Landing {
    /// A new file renamed over the path (a new inode), as package managers extract.
    Renamed,
    /// The same file rewritten in place.
    InPlace,
}

fn land(file: &Path, bytes: &[u8], how: Landing) {
    match how {
        Landing::Renamed => {
            let temp = file.with_file_name(".host-upgrade.tmp");
            std::fs::write(&temp, bytes).unwrap();
            std::fs::rename(&temp, file).unwrap();
        }
        Landing::InPlace => std::fs::write(file, bytes).unwrap(),
    }
}

fn newer_release(file: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(file).unwrap();
    bytes.extend_from_slice(b"\n// a newer release, installed while mcpatch ran\n");
    bytes
}

const APPLY_RACE_STEPS: &[&str] = &[
    "locked",
    "install-locked",
    "staged",
    "syntax-check",
    "syntax-checked",
    "backup-writing",
    "backed-up",
    "temp-written",
    "load-checked",
    "renamed",
    "committed",
];

#[test]
fn a_file_replaced_at_any_step_of_apply_is_never_lost() {
    for step in APPLY_RACE_STEPS {
        for how in [Landing::Renamed, Landing::InPlace] {
            let sb = Sandbox::new();
            let client = sb.client_install("0.1.0-rc.8", "g");
            let file = client.join("lib/index.js");
            let newer = newer_release(&file);
            let mut run = Paused::start(
                sb.command(&["apply", "--path", client.to_str().unwrap()]),
                step,
            );
            run.expect_reached(step);
            land(&file, &newer, how);
            run.resume();
            let o = run.finish();
            let case = format!("{step} ({how:?}): {}{}", stdout(&o), stderr(&o));
            assert_eq!(
                std::fs::read(&file).unwrap(),
                newer,
                "the newer file is kept: {case}"
            );
            assert!(litter(&client.join("lib")).is_empty(), "{case}");
            match *step {
                // Before the read: the newer file is what mcpatch sees, and it is not a known revision.
                "locked" | "install-locked" => {
                    assert_eq!(code(&o), 1, "{case}");
                    assert!(stdout(&o).contains("modified: sha256 "), "{case}");
                    assert_eq!(backup_count(&sb), 0, "{case}");
                }
                "committed" => {
                    assert_eq!(code(&o), 0, "{case}");
                    assert_eq!(backup_count(&sb), 1, "{case}");
                }
                _ => {
                    assert_eq!(code(&o), 2, "{case}");
                    let err = sb.normalize(&o.stderr);
                    assert!(
                        err.starts_with("error: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js changed while mcpatch was working on it: "),
                        "{case}"
                    );
                    assert!(
                        err.ends_with("; mcpatch left it as it is\nhelp: nothing of this run was kept and the backup made for it was removed; run `mcpatch status --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` to see what the file is now, then apply again if it is affected\n"),
                        "{case}"
                    );
                    // The reason says what happened to the file.
                    let why = match (*step, how) {
                        ("renamed", _) => {
                            "another program replaced it right after mcpatch's rename"
                        }
                        (_, Landing::Renamed) => "it was replaced by another file (inode ",
                        (_, Landing::InPlace) => "it was rewritten (",
                    };
                    assert!(err.contains(&format!("working on it: {why}")), "{case}");
                    assert_eq!(
                        backup_count(&sb),
                        0,
                        "the backup of a change that did not stick is removed: {case}"
                    );
                }
            }
        }
    }
}

const REVERT_RACE_STEPS: &[&str] = &[
    "locked",
    "install-locked",
    "backup-checked",
    "temp-written",
    "renamed",
];

#[test]
fn a_file_replaced_at_any_step_of_revert_is_never_lost() {
    for step in REVERT_RACE_STEPS {
        for how in [Landing::Renamed, Landing::InPlace] {
            let sb = Sandbox::new();
            let client = sb.client_install("0.1.0-rc.8", "g");
            let file = client.join("lib/index.js");
            let p = client.to_str().unwrap();
            let newer = newer_release(&file);
            assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
            let mut run = Paused::start(sb.command(&["revert", "--path", p]), step);
            run.expect_reached(step);
            land(&file, &newer, how);
            run.resume();
            let o = run.finish();
            let case = format!("{step} ({how:?}): {}{}", stdout(&o), stderr(&o));
            assert_eq!(
                std::fs::read(&file).unwrap(),
                newer,
                "the newer file is kept: {case}"
            );
            assert!(litter(&client.join("lib")).is_empty(), "{case}");
            assert_eq!(backup_count(&sb), 1, "backups are kept: {case}");
            if matches!(*step, "locked" | "install-locked") {
                assert_eq!(code(&o), 1, "{case}");
                assert!(
                    stdout(&o).contains("the file changed since it was patched"),
                    "{case}"
                );
            } else {
                assert_eq!(code(&o), 2, "{case}");
                assert!(
                    sb.normalize(&o.stderr).ends_with("; mcpatch left it as it is\nhelp: run `mcpatch status --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` to see what the file is now, then revert again if it is still patched\n"),
                    "{case}"
                );
            }
        }
    }
}

#[test]
fn runs_with_different_dsh_homes_take_turns_on_one_install() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let other_home = sb.root().join("root-home/.dsh");
    std::fs::create_dir_all(&other_home).unwrap();

    let mut first = Paused::start(sb.command(&["apply", "--path", p]), "temp-written");
    first.expect_reached("temp-written");
    let mut second = sb
        .command(&["apply", "--path", p])
        .env("DSH_HOME", &other_home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(second.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert_eq!(
        sb.normalize(line.as_bytes()),
        "waiting for another mcpatch working on [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib\n",
        "the second run waits for the first (its temp file is alive)"
    );
    first.resume();
    let a = first.finish();
    assert_eq!(code(&a), 0, "{}{}", stdout(&a), stderr(&a));
    assert!(stdout(&a).starts_with("patched "), "{}", stdout(&a));
    let b = second.wait_with_output().unwrap();
    assert_eq!(code(&b), 0, "{}", stdout(&b));
    assert_eq!(
        sb.normalize(&b.stdout),
        "already patched: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8); nothing to do\n"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
    assert_eq!(backup_count(&sb), 1);
    let other_backups = std::fs::read_dir(other_home.join(BACKUPS))
        .map(|d| {
            d.flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(other_backups, 0, "the second run made no backup");
    assert!(litter(&client.join("lib")).is_empty());
}

#[test]
fn backups_are_synced_before_the_install_changes() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let fresh = sb.root().join("fresh/.dsh");
    let o = sb
        .cmd(&["apply", "--path", client.to_str().unwrap()])
        .env("DSH_HOME", &fresh)
        .env("MCPATCH_TEST_TRACE", "1")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let id = std::fs::read_dir(fresh.join(BACKUPS))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|n| !n.starts_with('.'))
        .unwrap();
    let err = sb.normalize(&o.stderr).replace(&id, "<id>");
    let trace: Vec<String> = err
        .lines()
        .filter_map(|l| l.strip_prefix("trace: "))
        .map(|l| {
            // Random temp names: keep their prefix.
            let mut out = String::new();
            for word in l.split(' ') {
                let w = match (word.find(".incomplete-"), word.find(".mcpatch-staged-")) {
                    (Some(i), _) => format!("{}.incomplete-*", &word[..i]),
                    (None, Some(i)) => format!("{}.mcpatch-staged-*.js", &word[..i]),
                    _ => word.to_string(),
                };
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(&w);
            }
            out
        })
        .collect();
    let b = "[SANDBOX]/fresh/.dsh/backups/dsh-mcp-client-session-loss";
    let lib = "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib";
    let expected: Vec<String> = [
        "created [SANDBOX]/fresh",
        "synced [SANDBOX]",
        "created [SANDBOX]/fresh/.dsh",
        "synced [SANDBOX]/fresh",
        "created [SANDBOX]/fresh/.dsh/backups",
        "synced [SANDBOX]/fresh/.dsh",
        &format!("created {b}"),
        "synced [SANDBOX]/fresh/.dsh/backups",
        "locked",
        "install-locked",
        "staged",
        "syntax-check",
        "syntax-checked",
        "backup-writing",
        &format!("synced {b}/.incomplete-*"),
        &format!("renamed {b}/.incomplete-* -> {b}/<id>"),
        &format!("synced {b}"),
        "backed-up",
        "temp-written",
        "load-checked",
        &format!("renamed {lib}/.mcpatch-staged-*.js -> {lib}/index.js"),
        &format!("synced {lib}"),
        "renamed",
        "committed",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(trace, expected, "{err}");
}

/// A percent-encoded `file://` URL of a path's bytes, as README documents for JSON.
fn documented_url(p: &Path) -> String {
    let mut url = String::from("file://");
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~@+".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

#[test]
fn a_non_utf8_install_path_is_carried_losslessly_and_never_panics() {
    let sb = Sandbox::new();
    let prefix = sb.root().join(OsStr::from_bytes(b"caf\xe9"));
    let client = sb.copy_client("0.1.0-rc.8", &prefix.join("lib/node_modules").join(CLIENT));
    let real = client.canonicalize().unwrap();
    let file = real.join("lib/index.js");

    let o = sb
        .command(&["status", "--json", "--path"])
        .arg(&client)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["installs"][0]["path"], documented_url(&real));
    assert_eq!(v["installs"][0]["file"], documented_url(&file));
    assert!(documented_url(&real).ends_with("/caf%E9/lib/node_modules/@deepseek-ai/dsh-mcp-client"));

    // Node (and so DSH) cannot import a module from such a path: a clear refusal, nothing changed.
    let o = sb
        .command(&["apply", "--path"])
        .arg(&client)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: node cannot load [SANDBOX]/caf\u{FFFD}/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib: its path is not UTF-8 (as a URL: file://[SANDBOX]/caf%E9/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib)
help: nothing was changed; node cannot import a module from such a path, so no host can load it: reinstall it under a folder whose name is UTF-8
"
    );
    assert_eq!(sha256_file(&file), ORIGINAL);
    assert_eq!(backup_count(&sb), 0);

    // A backup of that install (its file patched elsewhere, copied in) names it in the
    // documented form, and revert reads it back to the same bytes.
    let other = sb.client_install("0.1.0-rc.8", "g");
    assert_eq!(
        code(&sb.run(&["apply", "--path", other.to_str().unwrap()])),
        0
    );
    let made = backup_ids(&sb).remove(0);
    let root = sb.dsh_home().join(BACKUPS);
    let id = "20000101T000000.000Z-b126dcec";
    std::fs::create_dir_all(root.join(id)).unwrap();
    std::fs::copy(
        root.join(&made).join("index.js"),
        root.join(id).join("index.js"),
    )
    .unwrap();
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(&made).join("manifest.json")).unwrap())
            .unwrap();
    manifest["id"] = serde_json::json!(id);
    manifest["original_path"] = serde_json::json!(documented_url(&file));
    manifest["package_dir"] = serde_json::json!(documented_url(&real));
    std::fs::write(root.join(id).join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::copy(other.join("lib/index.js"), &file).unwrap();

    let o = sb.run(&["backups", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["backups"][0]["id"], id);
    assert_eq!(
        v["backups"][0]["manifest"]["original_path"],
        documented_url(&file)
    );
    let o = sb
        .command(&["revert", "--path"])
        .arg(&client)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!("from backup {id}\n")),
        "{}",
        stdout(&o)
    );
    assert_eq!(sha256_file(&file), ORIGINAL);
}

#[test]
fn one_unreadable_install_does_not_stop_status_or_apply_for_the_others() {
    let sb = Sandbox::new();
    let locked = sb.client_install("0.1.0-rc.8", "a");
    let open = sb.client_install("0.1.0-rc.7", "b");
    std::fs::set_permissions(
        locked.join("lib/index.js"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let all = sb.root().to_str().unwrap();
    let unreadable = "error: cannot read [SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js: Permission denied (os error 13)\nhelp: check that the file exists and is readable\n";

    let o = without_dac_override(sb.command(&["status", "--path", all]))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "PATH  VERSION  STATE  NEXT STEP
[SANDBOX]/b/lib/node_modules/@deepseek-ai/dsh-mcp-client  0.1.0-rc.7  affected  run `mcpatch apply --path [SANDBOX]`
  sha256 b126dcec…7d56 (original)
  note: affected: the patch targets this revision
1 install(s): 1 affected, 0 patched, 0 outdated, 0 upstream-fixed, 0 modified, 0 unsupported
"
    );
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("{unreadable}error: 1 of 2 install(s) could not be read; each error is above\nhelp: fix what each error names and run again; the other installs are reported above\n")
    );

    let o = without_dac_override(sb.command(&["status", "--json", "--path", all]))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["installs"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["errors"][0]["file"],
        locked.join("lib/index.js").to_str().unwrap()
    );

    let o = without_dac_override(sb.command(&["apply", "--path", all]))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("{unreadable}error: 1 of 2 install(s) could not be patched; each error is above\nhelp: each install that failed was left as it was, the others were handled as reported; fix what each error names and run again (a rerun skips what is done)\n")
    );
    assert_eq!(sha256_file(&open.join("lib/index.js")), patched_hash());
    assert_eq!(backup_count(&sb), 1);
}

#[test]
fn one_unreadable_install_does_not_stop_revert_for_the_others() {
    let sb = Sandbox::new();
    let locked = sb.client_install("0.1.0-rc.8", "a");
    let open = sb.client_install("0.1.0-rc.7", "b");
    let all = sb.root().to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", all])), 0);
    std::fs::set_permissions(
        locked.join("lib/index.js"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();

    let o = without_dac_override(sb.command(&["revert", "--path", all]))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: cannot read [SANDBOX]/a/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js: Permission denied (os error 13)
help: check that the file exists and is readable
error: 1 of 2 install(s) could not be restored; each error is above
help: each install that failed was left as it was, the others were handled as reported; fix what each error names and run again (a rerun skips what is done)
"
    );
    assert_eq!(sha256_file(&open.join("lib/index.js")), ORIGINAL);
    std::fs::set_permissions(
        locked.join("lib/index.js"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    assert_eq!(sha256_file(&locked.join("lib/index.js")), patched_hash());
}

/// Run to the end, failing (and killing the run's whole process group) if it
/// has not ended after a generous bound: this guards against a hang, it
/// decides nothing about speed.
fn run_guarded(mut cmd: std::process::Command) -> Output {
    let child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output().unwrap());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(300)) {
        Ok(o) => o,
        Err(_) => {
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            panic!("the run did not end within 300 s: a node run is unbounded");
        }
    }
}

#[test]
fn a_module_whose_load_never_ends_is_stopped_and_nothing_changes() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| {
        t + "\nawait new Promise(() => { setInterval(() => {}, 1000); });\n"
    });
    let mut cmd = sb.command(&["apply", "--yes", "--path", client.to_str().unwrap()]);
    cmd.env("MCPATCH_NODE_TIMEOUT", "5");
    let o = run_guarded(cmd);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        stderr(&o),
        format!("error: the load check ({}) did not finish within 5 s and was stopped\nhelp: nothing was changed; the module may wait on something while it loads (import it with node to see), or allow more time with MCPATCH_NODE_TIMEOUT=SECONDS\n", node22_dir().join("node").display())
    );
    assert_eq!(sha256_file(&file), before);
    assert_eq!(backup_count(&sb), 0, "no orphan backup");
    assert!(
        litter(&client.join("lib")).is_empty(),
        "no staged file left"
    );
}

#[test]
fn a_module_that_ends_node_while_loading_fails_the_load_check() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let before = edit_file(&file, |t| t + "\nprocess.exit(0);\n");
    let o = sb.run(&["apply", "--yes", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: the patched module does not load from [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib:
the module ended node before the load check finished (exit status 0, no success marker)
help: nothing was changed; check that the install's dependencies are present (`npm ls` in that folder) and that node is 22 or later
"
    );
    assert_eq!(sha256_file(&file), before);
    assert_eq!(backup_count(&sb), 0);
}

#[test]
fn only_a_binary_that_reports_a_node_version_is_taken_for_node() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let fake = which::which("true").expect("`true` (coreutils) on PATH");
    let o = sb
        .command(&["apply", "--path", client.to_str().unwrap(), "--node"])
        .arg(&fake)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        stderr(&o),
        format!("error: cannot run node ({}): it does not report a node version (it printed \"\")\nhelp: check the path given to --node: it must be a node binary that runs (DSH itself needs Node.js 22 or later; with an older node, `verify` adds a Promise.withResolvers shim); or leave --node out to use `node` on PATH\n", fake.display())
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
}

#[test]
fn an_explicit_path_without_an_install_is_an_error_naming_where_it_looked() {
    let sb = Sandbox::new();
    let empty = sb.root().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for command in ["status", "apply", "revert", "diff", "verify"] {
        let o = sb.run(&[command, "--path", empty.to_str().unwrap()]);
        assert_eq!(code(&o), 2, "{command}: {}", stdout(&o));
        assert_eq!(
            sb.normalize(&o.stderr),
            "error: no @deepseek-ai/dsh-mcp-client, mcp-remote, @google/gemini-cli, @modelcontextprotocol/sdk, @modelcontextprotocol/client or @ai-sdk/mcp install under the --path given; looked in:
  - --path [SANDBOX]/empty
help: pass the package folder (the one holding package.json and lib/index.js), its lib/index.js, or a folder to search below
",
            "{command}"
        );
    }
}

#[test]
fn a_huge_lib_index_js_is_refused_without_being_read() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    // 2 GiB, sparse: no disk used, but a reader that loads it whole needs 2 GiB of memory.
    File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let mut cmd = sb.command(&["status", "--path", client.to_str().unwrap()]);
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js is larger than 16777216 bytes, far larger than any file mcpatch reads there
help: check what is at that path: it is not a file of the package or of mcpatch
"
    );
}

#[test]
fn a_damaged_backup_is_listed_and_refused_never_skipped() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let good = backup_ids(&sb).remove(0);
    let bad = "99991231T235959.999Z-b126dcec";
    let bad_dir = sb.dsh_home().join(BACKUPS).join(bad);
    std::fs::create_dir_all(&bad_dir).unwrap();
    std::fs::write(bad_dir.join("manifest.json"), "{not json").unwrap();
    std::fs::copy(
        sb.dsh_home().join(BACKUPS).join(&good).join("index.js"),
        bad_dir.join("index.js"),
    )
    .unwrap();
    let why = format!("[SANDBOX]/home/.dsh/{BACKUPS}/{bad}/manifest.json is not a valid manifest: key must be a string at line 1 column 2");

    let o = sb.run(&["backups"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!("backups under [SANDBOX]/home/.dsh/{BACKUPS}:\nID  VERSION  SAVED SHA256  FILE\n{bad}  ?  ?  DAMAGED: {why}\n{good}  0.1.0-rc.8  b126dcec…7d56  [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js\n")
    );
    let v: serde_json::Value =
        serde_json::from_slice(&sb.run(&["backups", "--json"]).stdout).unwrap();
    assert_eq!(v["backups"][1]["id"], bad);
    assert_eq!(v["backups"][1]["manifest"], serde_json::Value::Null);
    assert!(v["backups"][1]["damaged"]
        .as_str()
        .unwrap()
        .ends_with("is not a valid manifest: key must be a string at line 1 column 2"));
    assert_eq!(v["backups"][0]["damaged"], serde_json::Value::Null);

    let help = "help: nothing was changed; pick another backup with `mcpatch backups` and `--backup ID`, or reinstall the package that holds the file\n";
    let o = sb.run(&["revert", "--backup", bad, "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: backup {bad} is damaged: {why}\n{help}")
    );
    assert_eq!(sha256_file(&file), patched_hash());

    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: backup {bad} is damaged: {why}; it is newer than backup {good}, so it may be the newest backup of [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js\n{help}")
    );
    assert_eq!(
        sha256_file(&file),
        patched_hash(),
        "no silent fall-back to an older backup"
    );

    let o = sb.run(&["revert", "--backup", &good, "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&file), ORIGINAL);
}

#[test]
fn a_backup_that_lost_its_saved_file_is_damaged_and_nothing_changes() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
    let id = backup_ids(&sb).remove(0);
    let saved = sb.dsh_home().join(BACKUPS).join(&id).join("index.js");
    std::fs::remove_file(&saved).unwrap();

    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("error: backup {id} is damaged: cannot read [SANDBOX]/home/.dsh/{BACKUPS}/{id}/index.js: No such file or directory (os error 2)
help: nothing was changed; pick another backup with `mcpatch backups` and `--backup ID`, or reinstall the package that holds the file
")
    );
    assert_eq!(sha256_file(&file), patched_hash());
}

#[test]
fn a_user_without_root_who_cannot_write_the_install_is_told_to_use_sudo() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    give_sandbox_to_stranger(&sb);
    // The folder of the file to patch is root's again, as after `sudo npm install -g`.
    let lib = client.join("lib");
    std::os::unix::fs::lchown(&lib, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o755)).unwrap();

    let o = as_stranger(&sb, sb.command(&["apply", "--path", p]))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        super::automation::without_staged_names(&sb.normalize(&o.stderr)),
        "error: [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib is not writable: Permission denied (os error 13) at path \"[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/.mcpatch-staged-*.js\"\nhelp: run with sudo, or use --path on a writable copy of the install\n"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
}
