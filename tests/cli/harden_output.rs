//! mcpatch as root, continued: closed and full stdout or stderr, setgid and
//! owners kept, scratch files private whatever the umask, leftovers of dead
//! runs, names holding escape sequences, `status --npm`'s limits, and the
//! security model naming every command that runs an install's code.

use std::fs::{File, OpenOptions};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Stdio;

use super::harden::{backup_ids, mode_of, require_root, BACKUPS, STRANGER};
use super::*;

/// stdout a closed pipe: its reader is gone before mcpatch writes.
fn closed_stdout() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

#[test]
fn a_closed_stdout_neither_panics_nor_stops_the_work() {
    let sb = Sandbox::new();
    let a = sb.client_install("0.1.0-rc.8", "a");
    let b = sb.client_install("0.1.0-rc.7", "b");
    let all = sb.root().to_str().unwrap();
    for args in [
        &["apply", "--path", all][..],
        &["status", "--path", all][..],
        &["status", "--json", "--path", all][..],
        &["backups"][..],
        &["backups", "--json"][..],
    ] {
        let o = sb
            .command(args)
            .stdout(closed_stdout())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}: quiet");
    }
    for client in [&a, &b] {
        assert_eq!(
            sha256_file(&client.join("lib/index.js")),
            patched_hash(),
            "both installs patched"
        );
    }
    assert_eq!(backup_count(&sb), 2);
    let o = sb
        .command(&["revert", "--path", all])
        .stdout(closed_stdout())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for client in [&a, &b] {
        assert_eq!(
            sha256_file(&client.join("lib/index.js")),
            ORIGINAL,
            "both installs restored"
        );
    }
    // Commands that print as they go end as Unix tools do on a closed pipe: quietly, by SIGPIPE.
    let o = sb
        .command(&["diff", "--path", all])
        .stdout(closed_stdout())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn apply_and_revert_keep_setgid_and_the_owner_exactly() {
    require_root("only root can give the file to another uid");
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    std::os::unix::fs::chown(&file, Some(STRANGER), Some(STRANGER)).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o2755)).unwrap();
    // The file is another user's: as root, apply runs its load check only when told to trust them.
    for (args, hash) in [
        (&["apply", "--trust-owner", "--path", p][..], patched_hash()),
        (&["revert", "--path", p][..], ORIGINAL.to_string()),
    ] {
        let o = sb.run(args);
        assert_eq!(code(&o), 0, "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert_eq!(sha256_file(&file), hash);
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o2755, "{args:?}: mode kept exactly");
        assert_eq!(
            (meta.uid(), meta.gid()),
            (STRANGER, STRANGER),
            "{args:?}: owner kept"
        );
    }
}

/// `/dev/full` opened for writing: every write fails with "no space left".
fn full_device() -> File {
    OpenOptions::new().write(true).open("/dev/full").unwrap()
}

#[test]
fn a_closed_or_full_stdout_or_stderr_never_panics() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "a");
    let p = client.to_str().unwrap();
    let fake =
        super::probe::Fake::start(mcpatch::verify::fake_server::LostSessionAnswer::NotFoundText);
    let url = fake.url();
    // A closed stdout: completions and diff print as they go and end by SIGPIPE (or finish first).
    for args in [&["completions", "bash"][..], &["diff", "--path", p][..]] {
        let o = sb
            .command(args)
            .stdout(closed_stdout())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            o.status.signal() == Some(libc::SIGPIPE) || code(&o) == 0,
            "{args:?}: {:?} {}",
            o.status,
            stderr(&o)
        );
        assert_eq!(stderr(&o), "", "{args:?}");
    }
    // A full stdout: the output is lost, so the run says so and exits 2.
    for args in [
        &["completions", "bash"][..],
        &["probe", url.as_str()][..],
        &["status", "--path", p][..],
    ] {
        let o = sb
            .command(args)
            .stdout(full_device())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(code(&o), 2, "{args:?}: {:?} {}", o.status, stderr(&o));
        assert_eq!(
            stderr(&o),
            "error: cannot write to standard output: No space left on device (os error 28); the rest of the output is lost\nhelp: write it where there is room (another disk, or a pipe)\n",
            "{args:?}"
        );
    }
    // A closed or full stderr: the run ends with its own exit code, quietly.
    let missing = sb.root().join("missing");
    for (args, want) in [
        (vec!["status", "--path", missing.to_str().unwrap()], 2),
        (vec!["probe", "-v", url.as_str()], 0),
        (vec!["verify", "--path", p, "--scenario", "expired-404"], 1),
    ] {
        for closed in [true, false] {
            let mut cmd = sb.command(&args);
            cmd.stdout(Stdio::piped());
            if closed {
                cmd.stderr(closed_stdout());
            } else {
                cmd.stderr(full_device());
            }
            let o = cmd.output().unwrap();
            assert_eq!(
                code(&o),
                want,
                "{args:?} closed={closed}: {:?} {}",
                o.status,
                stdout(&o)
            );
        }
    }
}

/// `cmd` run under `umask 000`, as a careless shell or service might start it.
fn with_umask_000(mut cmd: std::process::Command) -> std::process::Command {
    // SAFETY: umask(2) is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    cmd
}

/// The folders in `dir` whose names start with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Set `p`'s modification time (not following a link) a minute back.
fn age(p: &Path) {
    let st = std::process::Command::new("touch")
        .args(["-h", "-d", "1 minute ago"])
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success(), "touch {}", p.display());
}

#[test]
fn scratch_folders_and_files_are_private_whatever_the_umask() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "a");
    let p = client.to_str().unwrap();
    let tmp = sb.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for (args, step, prefix, dirs, files) in [
        (
            &["apply", "--path", p][..],
            "syntax-check",
            "mcpatch-stage-",
            &["lib"][..],
            &["package.json", "lib/index.js"][..],
        ),
        (
            &["verify", "--path", p, "--scenario", "expired-404"][..],
            "harness-written",
            "mcpatch-harness-",
            &[][..],
            &["harness.mjs"][..],
        ),
    ] {
        // Killed there, so the folder is left as it was while node ran from it.
        let mut cmd = with_umask_000(sb.command(args));
        let o = cmd
            .env("MCPATCH_TEST_KILL_AT", step)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        assert_eq!(
            o.status.signal(),
            Some(libc::SIGKILL),
            "{step}: {}",
            stderr(&o)
        );
        let found = named(&tmp, prefix);
        assert_eq!(found.len(), 1, "{found:?}");
        let scratch = &found[0];
        assert_eq!(mode_of(scratch), 0o700, "{}", scratch.display());
        for d in dirs {
            assert_eq!(mode_of(&scratch.join(d)), 0o700, "{d}");
        }
        for f in files {
            assert_eq!(mode_of(&scratch.join(f)), 0o600, "{f}");
        }
        std::fs::remove_dir_all(scratch).unwrap();
    }
    // A whole apply under umask 000: the backup folder is no wider than mcpatch makes it.
    let mut cmd = with_umask_000(sb.command(&["apply", "--path", p]));
    let o = cmd.env("TMPDIR", &tmp).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = backup_ids(&sb).remove(0);
    assert_eq!(mode_of(&sb.dsh_home().join(BACKUPS).join(&id)), 0o755);
    assert_eq!(named(&tmp, "mcpatch-"), Vec::<PathBuf>::new());
}

#[test]
fn a_later_run_removes_the_scratch_folders_of_dead_runs_only() {
    require_root("it gives a leftover folder to another uid");
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "a");
    let p = client.to_str().unwrap();
    let tmp = sb.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // A run killed while node checked the staged file leaves its folder behind.
    let o = sb
        .command(&["apply", "--path", p])
        .env("MCPATCH_TEST_KILL_AT", "syntax-check")
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(o.status.signal(), Some(libc::SIGKILL), "{}", stderr(&o));
    let dead = named(&tmp, "mcpatch-stage-");
    assert_eq!(dead.len(), 1);
    let dead = dead[0].clone();
    // A live run's folder (locked, as a run holds its own), another user's, a link.
    let live = tmp.join("mcpatch-stage-live");
    std::fs::create_dir(&live).unwrap();
    let held = File::open(&live).unwrap();
    held.lock().unwrap();
    let theirs = tmp.join("mcpatch-stage-theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::lchown(&theirs, Some(STRANGER), Some(STRANGER)).unwrap();
    let elsewhere = sb.root().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("keep"), "x").unwrap();
    let link = tmp.join("mcpatch-stage-link");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    // A folder just made, not yet locked by the run that made it.
    let young = tmp.join("mcpatch-stage-young");
    std::fs::create_dir(&young).unwrap();
    for old in [&dead, &live, &theirs, &link] {
        age(old);
    }
    let o = sb
        .command(&["apply", "--path", p])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        named(&tmp, "mcpatch-stage-"),
        vec![link.clone(), live.clone(), theirs.clone(), young.clone()],
        "only the dead run's folder is removed"
    );
    assert!(elsewhere.join("keep").is_file());
    drop(held);
}

#[test]
fn folder_names_holding_escape_sequences_are_printed_escaped() {
    let sb = Sandbox::new();
    let name = "x\u{1b}]0;owned\u{7}\u{1b}[2Jy";
    let client = sb.client_install("0.1.0-rc.8", name);
    let p = client.to_str().unwrap();
    let shown = "x\\u{1b}]0;owned\\u{7}\\u{1b}[2Jy";
    let missing = format!("{p}/missing\u{1b}[2J");
    for args in [
        vec!["status", "--path", p],
        vec!["diff", "--path", p],
        vec!["apply", "--path", p],
        vec!["backups"],
        vec!["verify", "--path", p, "--scenario", "expired-404"],
        vec!["revert", "--path", p],
        vec!["status", "--path", &missing],
    ] {
        let o = sb.run(&args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(
            !all.contains('\u{1b}') && !all.contains('\u{7}'),
            "{args:?} printed an escape raw:\n{all}"
        );
        assert!(all.contains(shown), "{args:?}:\n{all}");
    }
    // An install's own text in a diff (a planted file) is escaped too; tabs are kept.
    assert_eq!(
        mcpatch::unified_diff::render_change("lib/index.js", "x\u{1b}[2J\tz\n", "y\n", false),
        "--- a/lib/index.js\n+++ b/lib/index.js\n@@ -1 +1 @@\n-x\\u{1b}[2J\tz\n+y\n"
    );
    // JSON output stays JSON, with the name as serde escapes it.
    let o = sb.run(&["status", "--json", "--path", p]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["installs"][0]["path"].as_str().unwrap().contains(name));
}

/// Whether process `pid` still runs (a zombie waiting to be reaped does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn status_npm_stops_npm_and_what_it_started_at_its_limit_and_keeps_little_of_its_output() {
    let sb = Sandbox::new();
    let yes = which::which("yes").expect("yes (coreutils) is needed");
    let npm = sb.root().join("bin/npm");
    let pid_file = sb.root().join("child.pid");
    // npm answers at once, but leaves a child streaming into its stdout forever.
    std::fs::write(
        &npm,
        format!(
            "#!/bin/sh\necho {}/npm-root\n{} 0123456789abcdef0123456789abcdef &\necho $! > {}\n",
            sb.root().display(),
            yes.display(),
            pid_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = sb.command(&["status", "--npm"]);
    // Bounded memory, so a run that keeps all of the output fails instead of eating the machine.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    let (o, took) = super::probe::bounded(cmd, std::time::Duration::from_secs(60));
    assert!(
        stdout(&o).contains(&format!(
            "`{}/bin/npm root -g` (failed: no answer within 5 s)",
            sb.root().display()
        )),
        "{:?}: {}{}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    assert!(took < std::time::Duration::from_secs(15), "took {took:?}");
    let child: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone_by = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running(child) && std::time::Instant::now() < gone_by {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if running(child) {
        unsafe { libc::kill(child as i32, libc::SIGKILL) };
        panic!("npm's child {child} was left running");
    }
    // An npm that prints far more than a folder's name: refused, not kept.
    let head = which::which("head").expect("head (coreutils) is needed");
    std::fs::write(
        &npm,
        format!(
            "#!/bin/sh
{} /x | {} -c 10000000
",
            yes.display(),
            head.display()
        ),
    )
    .unwrap();
    let o = sb.run(&["status", "--npm"]);
    assert!(
        stdout(&o).contains(&format!(
            "`{}/bin/npm root -g` (failed: it printed more than 64 KiB)",
            sb.root().display()
        )),
        "{}",
        stdout(&o)
    );
}

#[test]
fn the_security_model_names_every_command_that_runs_the_installs_code() {
    let section = doc("security.md");
    let flat = section.split_whitespace().collect::<Vec<_>>().join(" ");
    for named in [
        "`apply`'s load check",
        "`apply --dry-run` runs too",
        "every `verify` run",
        "`verify --backup`",
        "as root under sudo",
    ] {
        assert!(
            flat.contains(named),
            "the Security model does not say {named:?}:\n{section}"
        );
    }
}
