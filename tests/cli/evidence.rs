//! Fault injection and robustness: a SIGKILL at every step of apply and revert,
//! many concurrent applies, full disks, random mutations of the original, and
//! random input to the fake server.

use std::os::unix::process::ExitStatusExt;

use super::*;

const APPLY_STEPS: &[&str] = &[
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
const REVERT_STEPS: &[&str] = &[
    "locked",
    "install-locked",
    "backup-checked",
    "temp-written",
    "renamed",
];

/// Every complete backup holds the original byte-for-byte, as its manifest says.
fn assert_backups_intact(sb: &Sandbox) {
    let root = sb.dsh_home().join("backups/dsh-mcp-client-session-loss");
    let Ok(entries) = std::fs::read_dir(&root) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(e.path().join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(manifest["sha256_before"], ORIGINAL);
        assert_eq!(
            sha256_file(&e.path().join("index.js")),
            ORIGINAL,
            "backup {:?}",
            e.file_name()
        );
    }
}

fn killed_at(sb: &Sandbox, args: &[&str], step: &str) -> Output {
    let o = sb
        .cmd(args)
        .env("MCPATCH_TEST_KILL_AT", step)
        // A killed run leaves its scratch folder: in the sandbox, removed with it.
        .env("TMPDIR", sb.root())
        .output()
        .unwrap();
    assert_eq!(
        o.status.signal(),
        Some(libc::SIGKILL),
        "step {step} was reached and killed: {}{}",
        stdout(&o),
        stderr(&o)
    );
    o
}

#[test]
fn a_kill_at_any_step_of_apply_leaves_the_file_original_or_patched() {
    for step in APPLY_STEPS {
        let sb = Sandbox::new();
        let client = sb.client_install("0.1.0-rc.8", "g");
        let file = client.join("lib/index.js");
        let p = client.to_str().unwrap();
        killed_at(&sb, &["apply", "--path", p], step);
        let now = sha256_file(&file);
        let expect = if matches!(*step, "renamed" | "committed") {
            patched_hash()
        } else {
            ORIGINAL.to_string()
        };
        assert_eq!(now, expect, "after a kill at {step}");
        assert_backups_intact(&sb);
        // The next run finishes the job and cleans up what the killed one left.
        let o = sb.run(&["apply", "--path", p]);
        assert_eq!(code(&o), 0, "{step}: {}{}", stdout(&o), stderr(&o));
        assert_eq!(sha256_file(&file), patched_hash());
        assert!(
            std::fs::read_dir(client.join("lib"))
                .unwrap()
                .flatten()
                .all(|e| !e.file_name().to_string_lossy().starts_with(".mcpatch")),
            "{step}: temp files cleaned up"
        );
        assert!(backup_count(&sb) >= 1);
        assert_backups_intact(&sb);
        let o = sb.run(&["revert", "--path", p]);
        assert_eq!(code(&o), 0, "{step}: {}{}", stdout(&o), stderr(&o));
        assert_eq!(sha256_file(&file), ORIGINAL, "{step}: restorable");
    }
}

#[test]
fn a_kill_at_any_step_of_revert_leaves_the_file_patched_or_original() {
    for step in REVERT_STEPS {
        let sb = Sandbox::new();
        let client = sb.client_install("0.1.0-rc.8", "g");
        let file = client.join("lib/index.js");
        let p = client.to_str().unwrap();
        assert_eq!(code(&sb.run(&["apply", "--path", p])), 0);
        killed_at(&sb, &["revert", "--path", p], step);
        let expect = if *step == "renamed" {
            ORIGINAL.to_string()
        } else {
            patched_hash()
        };
        assert_eq!(sha256_file(&file), expect, "after a kill at {step}");
        assert_backups_intact(&sb);
        let o = sb.run(&["revert", "--path", p]);
        assert_eq!(code(&o), 0, "{step}: {}{}", stdout(&o), stderr(&o));
        assert_eq!(sha256_file(&file), ORIGINAL);
        assert_eq!(backup_count(&sb), 1);
    }
}

#[test]
fn eight_applies_started_at_once_leave_one_patch_and_one_backup() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let outs = applies_at_once(&sb, &client, 8);
    assert!(outs.iter().all(|o| code(o) == 0), "every apply succeeds");
    assert_eq!(
        outs.iter()
            .filter(|o| stdout(o).starts_with("patched "))
            .count(),
        1
    );
    assert_eq!(
        outs.iter()
            .filter(|o| stdout(o).starts_with("already patched: "))
            .count(),
        7
    );
    assert_eq!(backup_count(&sb), 1);
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
    assert_backups_intact(&sb);
}

/// A small tmpfs, filled up, unmounted on drop.
struct FullDisk(PathBuf);

impl FullDisk {
    fn new(at: &Path, size: &str) -> Self {
        std::fs::create_dir_all(at).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "cannot mount a tmpfs at {} to simulate a full disk: these tests need root (CI runs as root)", at.display());
        FullDisk(at.to_path_buf())
    }

    fn fill(&self) {
        let _ = std::process::Command::new("dd")
            .args(["if=/dev/zero", "bs=4k"])
            .arg(format!("of={}", self.0.join("filler").display()))
            .stderr(std::process::Stdio::null())
            .status();
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_backup_disk_changes_nothing() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let disk = FullDisk::new(&sb.root().join("small"), "64k");
    std::fs::create_dir_all(
        sb.root()
            .join("small/.dsh/backups/dsh-mcp-client-session-loss"),
    )
    .unwrap();
    disk.fill();
    let o = sb
        .cmd(&["apply", "--path", client.to_str().unwrap()])
        .env("DSH_HOME", sb.root().join("small/.dsh"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let err = sb.normalize(&o.stderr);
    assert!(
        err.starts_with("error: cannot write the backup folder [SANDBOX]/small/.dsh/backups/dsh-mcp-client-session-loss: No space left on device"),
        "{err}"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    drop(disk);
}

#[test]
fn a_full_install_disk_changes_nothing_and_keeps_no_backup() {
    let sb = Sandbox::new();
    let disk = FullDisk::new(&sb.root().join("small"), "48m");
    let src = fetched_prefix("0.1.0-rc.8")
        .join("lib/node_modules")
        .join(CLIENT);
    let client = sb.root().join("small/client");
    assert!(std::process::Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(&client)
        .status()
        .unwrap()
        .success());
    disk.fill();
    let o = sb.run(&["apply", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    let err = sb.normalize(&o.stderr);
    assert!(err.starts_with("error: cannot write [SANDBOX]/small/client/lib/.mcpatch-staged-*.js: No space left on device"), "{err}");
    assert_eq!(sha256_file(&client.join("lib/index.js")), ORIGINAL);
    assert_eq!(
        backup_count(&sb),
        0,
        "the backup of a change that did not happen is removed"
    );
    drop(disk);
}

/// A small deterministic generator, so a failure names a reproducible case.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn mutate(original: &[u8], rng: &mut Lcg) -> Vec<u8> {
    let mut m = original.to_vec();
    match rng.below(4) {
        0 => {
            let i = rng.below(m.len());
            m[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = rng.below(m.len());
            m.insert(i, b" \n;/x"[rng.below(5)]);
        }
        2 => {
            let i = rng.below(m.len());
            m.remove(i);
        }
        _ => {
            let lines: Vec<&[u8]> = m.split(|b| *b == b'\n').collect();
            let drop_line = rng.below(lines.len());
            m = lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != drop_line)
                .map(|(_, l)| l.to_vec())
                .collect::<Vec<_>>()
                .join(&b'\n');
        }
    }
    m
}

#[test]
fn a_hundred_random_mutations_are_never_affected_and_never_patched_without_yes() {
    let spec = mcpatch::registry::session_loss().unwrap();
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let original = std::fs::read(&file).unwrap();
    let mut rng = Lcg(0x006d_6370_6174_6368);
    for case in 0..100 {
        let mut mutated = mutate(&original, &mut rng);
        if mutated == original {
            mutated.push(b'\n');
        }
        let hash = mcpatch::identity::sha256_hex(&mutated);
        let (state, _, _) = mcpatch::classify::classify_bytes(&spec, &mutated, &hash);
        assert_ne!(state, mcpatch::classify::State::Affected, "case {case}");
        std::fs::write(&file, &mutated).unwrap();
        // Through the binary too: refused (modified/unsupported) or failed, never patched.
        let o = sb
            .cmd(&["apply", "--path", client.to_str().unwrap()])
            .write_stdin("")
            .output()
            .unwrap();
        assert_ne!(code(&o), 0, "case {case}: {}", stdout(&o));
        assert_eq!(sha256_file(&file), hash, "case {case}: unchanged");
    }
    assert_eq!(backup_count(&sb), 0);
}

mod server_robustness {
    use std::time::{Duration, Instant};

    use mcpatch::verify::fake_server::{FakeServer, ServerBehaviour};
    use proptest::prelude::*;
    use serde_json::json;

    fn body_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..512),
            "[ -~]{0,200}".prop_map(|s| s.into_bytes()),
            (any::<Option<i64>>(), "[a-z/]{0,20}", any::<bool>()).prop_map(
                |(id, method, params)| {
                    let mut m = json!({"jsonrpc": "2.0", "method": method});
                    if let Some(id) = id {
                        m["id"] = json!(id);
                    }
                    if params {
                        m["params"] = json!({"name": "echo", "arguments": {"text": 1}});
                    }
                    m.to_string().into_bytes()
                }
            ),
            Just(br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#.to_vec()),
            Just(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#.to_vec()),
        ]
    }

    #[test]
    fn random_and_malformed_bodies_never_crash_the_server_or_disturb_other_sessions() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = rt
            .block_on(FakeServer::start(ServerBehaviour::default(), 0))
            .unwrap();
        let http = reqwest::Client::new();
        let url = server.url();
        let post = |body: Vec<u8>, ct: &'static str, session: Option<String>| {
            let mut r = http
                .post(&url)
                .header("content-type", ct)
                .header("accept", "application/json, text/event-stream")
                .body(body);
            if let Some(s) = session {
                r = r.header("mcp-session-id", s);
            }
            r.send()
        };
        let healthy = rt.block_on(async {
            let r = post(
                json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"0"}}}).to_string().into_bytes(),
                "application/json",
                None,
            )
            .await
            .unwrap();
            r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string()
        });
        let started = Instant::now();
        let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
            cases: 300,
            ..Default::default()
        });
        runner
            .run(&(body_strategy(), prop_oneof![Just("application/json"), Just("text/plain"), Just("")], any::<bool>()), |(body, ct, with_session)| {
                let session = with_session.then(|| healthy.clone());
                let status = rt.block_on(async { post(body, ct, session).await.map(|r| r.status().as_u16()) });
                let status = status.map_err(|e| TestCaseError::fail(format!("request failed: {e}")))?;
                prop_assert!(status < 500, "random input answered {}", status);
                let ok = rt.block_on(async {
                    post(
                        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}).to_string().into_bytes(),
                        "application/json",
                        Some(healthy.clone()),
                    )
                    .await
                    .map(|r| r.status().as_u16())
                });
                prop_assert_eq!(ok.ok(), Some(200));
                Ok(())
            })
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "bounded in time"
        );
        assert!(server.witness().len() >= 600);
    }
}

/// A revision mcpatch does not know but the patch fits is written only after
/// its patched copy passes verify with the current revision's expectations.
mod unknown_revisions {
    use super::*;
    use crate::pause::reached_step;

    const DIR: &str = "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client";

    /// What is left in the install's lib folder besides its own files.
    fn leftovers(client: &Path) -> Vec<String> {
        let mut names = crate::harden::litter(&client.join("lib"));
        names.sort();
        names
    }

    /// An original with a change outside every hunk that stops reconnecting:
    /// `generationDown` no longer schedules the reconnect. The patch still fits.
    fn no_reconnect(text: String) -> String {
        let call = "\t\tclientClosed = void 0;\n\t\tscheduleReconnect();\n";
        assert_eq!(text.matches(call).count(), 1);
        text.replace(call, "\t\tclientClosed = void 0;\n")
    }

    #[test]
    fn an_unknown_revision_the_patch_fits_is_patched_only_after_verify_passes() {
        let sb = Sandbox::new();
        let client = sb.client_install("0.1.0-rc.8", "g");
        let p = client.to_str().unwrap();
        let file = client.join("lib/index.js");
        let edited = edit_file(&file, |t| t + "\n// local edit\n");
        let verified = format!(
            "  verified first (a revision mcpatch does not know): all 26 scenario runs of the patched copy met the current patch revision's expectations (overall SEAMLESS, node {})\n",
            node22_version()
        );

        // A dry run shows the same verdicts and writes nothing.
        let o = sb.run(&["apply", "--dry-run", "--yes", "--path", p]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            sb.normalize(&o.stdout),
            format!("dry run: {DIR} (0.1.0-rc.8) would be patched (the patch fits, node --check and the load check pass); nothing changed\n{verified}")
        );
        let err = sb.normalize(&o.stderr);
        assert!(
            err.starts_with(&format!("{DIR}/lib/index.js is a revision mcpatch does not know: verifying the patched copy before writing it\n")),
            "{err}"
        );
        assert!(err.contains("[26/26] "), "{err}");
        assert_eq!(sha256_file(&file), edited);
        assert_eq!(backup_count(&sb), 0);
        assert_eq!(leftovers(&client), Vec::<String>::new());

        let o = sb.run(&["apply", "--dry-run", "--yes", "--json", "--path", p]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let gate = &v["installs"][0]["verify"];
        assert_eq!(gate["passed"], true, "{v:#}");
        assert_eq!(gate["overall"], "SEAMLESS");
        assert_eq!(gate["scenarios"].as_array().unwrap().len(), 26);
        assert_eq!(gate["exploration"]["runs"], 3, "{v:#}");
        assert_eq!(gate["exploration"]["ok"], true, "{v:#}");
        assert!(gate["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["ok"] == true));

        let o = sb.run(&["apply", "--yes", "--path", p]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let patched = sha256_file(&file);
        let id = super::super::harden::backup_ids(&sb).remove(0);
        assert_eq!(
            sb.normalize(&o.stdout),
            format!(
                "patched {DIR} (0.1.0-rc.8)\n  sha256 now {}, file as it was (modified, not a revision mcpatch knows) saved as backup {id}\n{verified}restart DSH so it loads the patched client; check it with `mcpatch verify --path {DIR}`\n",
                short(&patched)
            )
        );
        assert_eq!(
            status_json(&sb, &["--path", p])["installs"][0]["state"],
            "patched"
        );
        assert_eq!(leftovers(&client), Vec::<String>::new());
    }

    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        assert_eq!(
            unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
            0,
            "mkfifo {}",
            path.display()
        );
    }

    #[test]
    fn after_the_gate_apply_still_stops_on_sigterm() {
        let sb = Sandbox::new();
        let client = sb.client_install("0.1.0-rc.8", "g");
        let file = client.join("lib/index.js");
        let edited = edit_file(&file, |t| t + "\n// local edit\n");
        let pause = tempfile::tempdir().unwrap();
        mkfifo(&pause.path().join("reached"));
        mkfifo(&pause.path().join("resume"));
        let reached = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(pause.path().join("reached"))
            .unwrap();
        let mut child = sb
            .command(&[
                "apply",
                "--yes",
                "--quiet",
                "--path",
                client.to_str().unwrap(),
            ])
            .env("MCPATCH_TEST_PAUSE_AT", "backed-up")
            .env("MCPATCH_TEST_PAUSE_DIR", pause.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The gate passed (it runs before the backup), and the run waits at the backup.
        let line = reached_step(&reached, &mut child, std::time::Duration::from_secs(300));
        assert_eq!(line, "backed-up\n");
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("SIGTERM after the gate was swallowed: apply went on waiting");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // Recorded, as from the backup on a signal is: the step stops at once,
        // the backup and the staged file go, and apply says why.
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{err}");
        assert!(err.contains("SIGTERM"), "{err}");
        assert_eq!(sha256_file(&file), edited, "untouched");
        assert_eq!(backup_count(&sb), 0, "{err}");
        assert_eq!(leftovers(&client), Vec::<String>::new());
    }

    #[test]
    fn an_unknown_revision_whose_patched_copy_does_not_recover_is_refused_untouched() {
        let sb = Sandbox::new();
        let client = sb.client_install("0.1.0-rc.8", "g");
        let p = client.to_str().unwrap();
        let file = client.join("lib/index.js");
        let broken = edit_file(&file, no_reconnect);
        let i = &status_json(&sb, &["--path", p])["installs"][0];
        assert_eq!(i["state"], "modified");
        assert_eq!(
            i["next_step"],
            "review with `mcpatch diff`, then `mcpatch apply --yes` to patch anyway"
        );
        let why = format!(
            "sha256 {broken} is not a revision mcpatch knows, and its patched copy did not recover as the current patch revision must (verify: STUCK); the install is untouched"
        );

        let o = sb.run(&["apply", "--yes", "--path", p]);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        // The refusal is said on stdout; stderr has only the gate's progress.
        assert!(
            !stderr(&o).lines().any(|l| l.starts_with("refused:")),
            "{}",
            stderr(&o)
        );
        let out = sb.normalize(&o.stdout);
        let head = format!("refused: {DIR} (0.1.0-rc.8)\n  {why}\n");
        assert!(out.starts_with(&head), "{out}");
        assert!(
            out.contains("\n  expired-404: STUCK (expected SEAMLESS): no new initialize after the session was lost; 1 request(s) kept the dead session id\n"),
            "{out}"
        );
        assert!(
            out[head.len()..]
                .lines()
                .all(|l| l.starts_with("  ") && l.contains(" (expected ")),
            "{out}"
        );
        assert_eq!(sha256_file(&file), broken, "untouched");
        assert_eq!(backup_count(&sb), 0);
        assert_eq!(leftovers(&client), Vec::<String>::new());

        // Unattended: nothing on stdout, the refusal in one line on stderr.
        let o = sb.run(&["apply", "--yes", "--quiet", "--path", p]);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        assert_eq!(stdout(&o), "");
        assert_eq!(
            sb.normalize(&o.stderr),
            format!("refused: {DIR} (0.1.0-rc.8): {why}\n")
        );
        assert_eq!(sha256_file(&file), broken, "untouched");
        assert_eq!(backup_count(&sb), 0);
        // With --json too, the refusal is only in the one JSON document.
        let o = sb.run(&["apply", "--yes", "--quiet", "--json", "--path", p]);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        assert_eq!(stderr(&o), "");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            v["installs"][0]["error"].as_str().unwrap().lines().next(),
            Some(format!("refused: {why}").as_str())
        );

        // --no-verify opts out, and says so.
        let o = sb.run(&["apply", "--yes", "--no-verify", "--path", p]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let out = sb.normalize(&o.stdout);
        assert!(
            out.contains(&format!("\n  not verified (--no-verify): a revision mcpatch does not know was written without proof that it recovers; check it with `mcpatch verify --path {DIR}`\n")),
            "{out}"
        );
        assert_ne!(sha256_file(&file), broken);
        assert_eq!(backup_count(&sb), 1);

        // Its whole table, strict: STUCK, and the short exploration is left
        // out, saying why (the verdict is known; failing runs would only add
        // minutes, to apply's refusal above too).
        let (rc, v) = crate::verify::verify_json(&sb, &["--strict", "--path", p]);
        assert_eq!(rc, 1, "{v:#}");
        assert_eq!(v["installs"][0]["overall"], "STUCK", "{v:#}");
        assert_eq!(
            v["installs"][0]["exploration"],
            serde_json::json!({"seed": 2026, "runs": 0, "left_out": "the fixed table already failed, so the short exploration was not run (`--explore 3` runs it)", "ok": true, "failures": []})
        );
    }
}
