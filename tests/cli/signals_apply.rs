//! A signal (SIGINT, SIGTERM, SIGHUP) while `apply` runs node on something in
//! an install (the strict verify of a release mcpatch has not seen, the load
//! check of the staged file) stops apply with exit 2 and its interrupt
//! message, and leaves nothing behind: no copy, no staged file, no backup of a
//! file that was never patched, no node or CLI running, no scratch folder.

use super::gemini::original_of;
use super::gemini_verify::{heavy, leftovers, processes_naming};
use super::harden::litter;
use super::*;

fn name_of(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    }
}

/// apply's whole message when `signal` stopped it on DSH's plugin installed
/// globally under `g` (normalised).
fn dsh_interrupted(signal: &str) -> String {
    format!("error: interrupted by {signal}: apply stopped before changing [SANDBOX]/g/lib/node_modules/{CLIENT}/lib/index.js; node and any fake servers were stopped, and the copies and the backup made for it were removed (installs reported before it keep their changes)\nhelp: run `mcpatch status --path [SANDBOX]/g/lib/node_modules/{CLIENT}` to see each install, then `mcpatch apply --path [SANDBOX]/g/lib/node_modules/{CLIENT}` again to finish\n")
}

/// Start `args`, wait until some process's command line names every one of
/// `needles` (at least `count` of them), send `signal`, and return the output.
fn signal_when_running(
    sb: &Sandbox,
    args: &[&str],
    tmp: &Path,
    needles: &[&str],
    count: usize,
    signal: i32,
) -> Output {
    let child = sb
        .command(args)
        .env("TMPDIR", tmp)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let running = || {
        processes_naming(needles[0])
            .into_iter()
            .filter(|p| needles.iter().all(|n| p.contains(n)))
            .count()
    };
    while running() < count {
        assert!(
            std::time::Instant::now() < until,
            "nothing naming {needles:?} started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("apply did not end within 60 s of the signal")
        .unwrap()
}

#[test]
fn a_signal_during_the_verify_of_a_release_never_seen_stops_apply_leaving_nothing() {
    let _one = heavy();
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (_, chunk, _) = original_of("0.61.0");
    let file = pkg.join(&chunk);
    let edited = edit_file(&file, |t| format!("{t}// a local edit\n"));
    let path = pkg.to_str().unwrap();
    let tmp = sb.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let name = name_of(signal);
        // The gate runs the real CLI from a copy of bundle/ beside it.
        let o = signal_when_running(
            &sb,
            &["apply", "--yes", "--path", path],
            &tmp,
            &[".mcpatch-verify-bundle-", path],
            1,
            signal,
        );
        assert_eq!(code(&o), 2, "{name}: {}", stderr(&o));
        let err = sb.normalize(&o.stderr);
        assert!(
            err.ends_with(&format!(
                "error: interrupted by {name}: apply stopped before changing [SANDBOX]/g/lib/node_modules/@google/gemini-cli/{chunk}; node and any fake servers were stopped, and the copies and the backup made for it were removed (installs reported before it keep their changes)\nhelp: run `mcpatch status --path [SANDBOX]/g/lib/node_modules/@google/gemini-cli` to see each install, then `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@google/gemini-cli` again to finish\n"
            )),
            "{name}: {err}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(processes_naming(path), Vec::<String>::new(), "{name}");
        assert_eq!(leftovers(&pkg), Vec::<String>::new(), "{name}");
        let scratch: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
        assert!(scratch.is_empty(), "{name}: {scratch:?}");
        assert_eq!(sha256_file(&file), edited, "{name}: untouched");
        assert_eq!(
            super::harden::backup_ids_under(&sb, "backups/gemini-cli-session-loss"),
            Vec::<String>::new(),
            "{name}"
        );
    }
}

#[test]
fn a_signal_during_the_load_check_stops_apply_with_no_backup_no_staged_file_and_no_node() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    // One of its dependencies takes a minute to load: the load check is still
    // running when the signal comes (a copy: the fixture is hard-linked).
    let slow = client.join("node_modules/@deepseek-ai/dsh-timeout/lib/index.js");
    let text = std::fs::read_to_string(&slow).unwrap();
    std::fs::remove_file(&slow).unwrap();
    std::fs::write(
        &slow,
        format!("{text}\nawait new Promise((r) => setTimeout(r, 60000));\n"),
    )
    .unwrap();
    let path = client.to_str().unwrap();
    let tmp = sb.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let name = name_of(signal);
        let o = signal_when_running(
            &sb,
            &["apply", "--path", path],
            &tmp,
            &["mcpatch-load-check-ok", path],
            1,
            signal,
        );
        assert_eq!(code(&o), 2, "{name}: {}", stderr(&o));
        assert_eq!(sb.normalize(&o.stderr), dsh_interrupted(name), "{name}");
        std::thread::sleep(std::time::Duration::from_millis(300));
        let left: Vec<String> = processes_naming(path)
            .into_iter()
            .filter(|p| p.contains("mcpatch-load-check-ok"))
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{name}: node left running");
        assert_eq!(
            backup_count(&sb),
            0,
            "{name}: a backup of a file never patched"
        );
        let staged = litter(&client.join("lib"));
        assert_eq!(staged, Vec::<String>::new(), "{name}");
        assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
        let v = status_json(&sb, &["--path", path]);
        assert_eq!(v["installs"][0]["state"], "affected", "{name}: {v:#}");
    }
}

#[test]
fn a_signal_during_the_verify_of_a_dsh_plugin_never_seen_stops_apply_leaving_nothing() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let edited = edit_file(&file, |t| format!("{t}// a local edit\n"));
    let path = client.to_str().unwrap();
    let tmp = sb.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let name = name_of(signal);
        // The harness imports the patched copy beside lib/index.js.
        let o = signal_when_running(
            &sb,
            &["apply", "--yes", "--path", path],
            &tmp,
            &[".mcpatch-verify-", path],
            1,
            signal,
        );
        assert_eq!(code(&o), 2, "{name}: {}", stderr(&o));
        let err = sb.normalize(&o.stderr);
        assert!(err.ends_with(&dsh_interrupted(name)), "{name}: {err}");
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(processes_naming(path), Vec::<String>::new(), "{name}");
        assert_eq!(litter(&client.join("lib")), Vec::<String>::new(), "{name}");
        let scratch: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
        assert!(scratch.is_empty(), "{name}: {scratch:?}");
        assert_eq!(sha256_file(&file), edited, "{name}: untouched");
        assert_eq!(backup_count(&sb), 0, "{name}");
    }
}

#[test]
fn a_signal_during_the_verify_of_an_mcp_remote_never_seen_stops_apply_leaving_nothing() {
    use super::mcp_remote::{chunk_of, project, remote_backups};
    let sb = Sandbox::new();
    let dir = project(&sb, "0.15.1", "p");
    let pkg = dir.join("node_modules/mcp-remote").canonicalize().unwrap();
    let rel = chunk_of("0.15.1");
    let chunk = pkg.join(&rel);
    let path = dir.to_str().unwrap();
    let edited = edit_file(&chunk, |t| t + "\n// local edit\n");
    let tmp = sb.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let name = name_of(signal);
        // The bridge runs from a copy of dist/ beside it.
        let o = signal_when_running(
            &sb,
            &["apply", "--yes", "--path", path],
            &tmp,
            &[".mcpatch-verify-bundle-", pkg.to_str().unwrap()],
            1,
            signal,
        );
        assert_eq!(code(&o), 2, "{name}: {}", stderr(&o));
        let err = sb.normalize(&o.stderr);
        assert!(
            err.ends_with(&format!(
                "error: interrupted by {name}: apply stopped before changing [SANDBOX]/p/node_modules/mcp-remote/{rel}; node and any fake servers were stopped, and the copies and the backup made for it were removed (installs reported before it keep their changes)\nhelp: run `mcpatch status --path [SANDBOX]/p` to see each install, then `mcpatch apply --path [SANDBOX]/p` again to finish\n"
            )),
            "{name}: {err}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(
            processes_naming(pkg.to_str().unwrap()),
            Vec::<String>::new(),
            "{name}"
        );
        assert_eq!(
            super::mcp_remote::leftovers(&pkg),
            Vec::<PathBuf>::new(),
            "{name}"
        );
        let scratch: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
        assert!(scratch.is_empty(), "{name}: {scratch:?}");
        assert_eq!(sha256_file(&chunk), edited, "{name}: untouched");
        assert_eq!(remote_backups(&sb), Vec::<String>::new(), "{name}");
    }
}

#[test]
fn a_signal_that_comes_just_as_node_ends_still_stops_apply() {
    // Node's check has ended, the signal is caught (not yet acted on): apply
    // must report it, not go on to change the install.
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let path = client.to_str().unwrap();
    let o = sb
        .cmd(&["apply", "--path", path])
        .env("MCPATCH_TEST_SIGNAL_AT", "node-ended")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(sb.normalize(&o.stderr), dsh_interrupted("SIGTERM"));
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    assert_eq!(backup_count(&sb), 0, "a backup of a file never patched");
    let staged = litter(&client.join("lib"));
    assert_eq!(staged, Vec::<String>::new());
}
