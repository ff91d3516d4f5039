//! mcpatch as root on installs other users can write: the copy of an entry's
//! folder cannot be turned into a way to fill another folder, and (see
//! docs/security.md) code another user can write is not run as root unless
//! the user says so.

use super::gemini_verify::{heavy, leftovers};
use super::pause::reached_step;
use super::*;

/// A pause folder with the FIFOs `reached` and `resume` (src/kill_point.rs),
/// and `reached` open read-write so opening never blocks.
fn pause_dir(sb: &Sandbox) -> (PathBuf, std::fs::File) {
    let pause = sb.root().join("pause");
    std::fs::create_dir(&pause).unwrap();
    for fifo in ["reached", "resume"] {
        let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(
            pause.join(fifo).as_os_str(),
        ))
        .unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }
    let reached = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(pause.join("reached"))
        .unwrap();
    (pause, reached)
}

#[test]
fn a_copy_of_the_bundle_swapped_for_a_symlink_while_built_fills_nothing_and_runs_nothing() {
    let _one = heavy();
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let path = pkg.to_str().unwrap();
    let o = sb.run(&["apply", "--yes", "--quiet", "--path", path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A folder only root may write, which the copy must never reach.
    let private = sb.root().join("root-only");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (pause, reached) = pause_dir(&sb);
    let mut child = sb
        .command(&[
            "verify",
            "--backup",
            "--scenario",
            "expired-404",
            "--path",
            path,
        ])
        .env("MCPATCH_TEST_PAUSE_AT", "mirror-made")
        .env("MCPATCH_TEST_PAUSE_DIR", &pause)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = reached_step(&reached, &mut child, std::time::Duration::from_secs(120));
    assert_eq!(line, "mirror-made\n");
    // The other user moves the new copy away and leaves a symlink in its place.
    let copy = std::fs::read_dir(&pkg)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".mcpatch-verify-bundle-")
        })
        .expect("the copy of bundle/ was made");
    let moved = pkg.join("moved-away");
    std::fs::rename(&copy, &moved).unwrap();
    std::os::unix::fs::symlink(&private, &copy).unwrap();
    std::fs::write(pause.join("resume"), "\n").unwrap();
    let o = output_within_child(child);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stderr).lines().last().map(str::to_string),
        Some("help: another user can write the install's folder; check who owns it (`ls -la` of it), then run mcpatch as that user".to_string()),
        "{}",
        stderr(&o)
    );
    assert!(
        sb.normalize(&o.stderr).contains(&format!(
            "error: the copy mcpatch made of the install's entry folder at {} was changed under it (found a symlink); nothing runs from it\n",
            sb.normalize(copy.to_str().unwrap().as_bytes()).trim_end()
        )),
        "{}",
        stderr(&o)
    );
    let filled: Vec<_> = std::fs::read_dir(&private).unwrap().flatten().collect();
    assert!(filled.is_empty(), "made through the symlink: {filled:?}");
    // What was made in the moved folder is gone too (it was made through its descriptor).
    let kept: Vec<_> = std::fs::read_dir(&moved).unwrap().flatten().collect();
    assert!(kept.is_empty(), "{kept:?}");
    std::fs::remove_file(&copy).unwrap();
    std::fs::remove_dir(&moved).unwrap();
    assert_eq!(leftovers(&pkg), Vec::<String>::new());
}

/// Wait for a spawned mcpatch, failing the test after 120 s.
fn output_within_child(child: std::process::Child) -> Output {
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("mcpatch did not finish within 120 s");
        }
    }
}

/// An owner with no name in the user database (as tests/cli/harden.rs uses).
const STRANGER: u32 = 4_242_424;

#[test]
fn as_root_an_install_another_user_owns_is_not_run_without_trust_owner() {
    super::harden::require_root("only root can give the package folder to another uid");
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    std::os::unix::fs::lchown(&client, Some(STRANGER), Some(STRANGER)).unwrap();
    let shown = format!("[SANDBOX]/g/lib/node_modules/{CLIENT}");
    let owned = format!("{shown} is owned by uid {STRANGER}, a user with no name");

    // status says it, once per install.
    let o = sb.run(&["status", "--path", p]);
    let out = sb.normalize(&o.stdout);
    assert!(
        out.contains(&format!("\n  trust: {owned}: as root, verify and apply will not run this install's code unless given --trust-owner (or run them as '#{STRANGER}')\n")),
        "{out}"
    );
    let v = status_json(&sb, &["--path", p]);
    assert_eq!(
        sb.normalize(v["installs"][0]["untrusted"].as_str().unwrap().as_bytes()),
        format!("{owned}: as root, verify and apply will not run this install's code unless given --trust-owner (or run them as '#{STRANGER}')\n")
    );

    // verify refuses to run it, naming the owner and both ways out.
    let o = sb.run(&["verify", "--scenario", "expired-404", "--path", p]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = sb.normalize(&o.stderr);
    assert!(
        err.ends_with(&format!("error: refusing to run this install's code (verify) as root: {owned}, so that user could run anything as root through it\nhelp: run mcpatch as '#{STRANGER}' (`sudo -u '#{STRANGER}' mcpatch verify --path [SANDBOX]/g/lib/node_modules/{CLIENT} ...`), or pass --trust-owner to run its code as root anyway\n")),
        "{err}"
    );

    // apply refuses it untouched (its load check would run the install's code).
    let o = sb.run(&["apply", "--quiet", "--path", p]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        sb.normalize(&o.stderr),
        format!("refused: {shown} (0.1.0-rc.8): refusing to run this install's code (apply's load check) as root: {owned}, so that user could run anything as root through it; run mcpatch as '#{STRANGER}' (`sudo -u '#{STRANGER}' mcpatch apply ...`), or pass --trust-owner to run its code as root anyway\n")
    );
    assert_eq!(sha256_file(&file), ORIGINAL);
    assert_eq!(backup_count(&sb), 0);

    // --trust-owner: the user said so.
    let o = sb.run(&["apply", "--trust-owner", "--quiet", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&file), patched_hash());
    let o = sb.run(&[
        "verify",
        "--trust-owner",
        "--scenario",
        "expired-404",
        "--path",
        p,
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn as_root_a_folder_every_user_can_write_on_the_way_to_the_install_is_named() {
    super::harden::require_root("the check applies to root only");
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let open = sb.root().join("g/lib");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = sb.run(&["verify", "--scenario", "expired-404", "--path", p]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = sb.normalize(&o.stderr);
    assert!(
        err.ends_with("error: refusing to run this install's code (verify) as root: [SANDBOX]/g/lib is writable by every user, so that user could run anything as root through it\nhelp: make it writable by root only (`chmod go-w [SANDBOX]/g/lib`), or pass --trust-owner to run its code as root anyway\n"),
        "{err}"
    );
    // With the write bit gone, it runs (STUCK: not patched yet).
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = sb.run(&["verify", "--scenario", "expired-404", "--path", p]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
}
