//! `verify` on gemini-cli drives the real installed CLI headless (mcpatch is
//! its model, the fake server its only MCP server): STUCK on each proven
//! release before `apply`, SEAMLESS after, the saved original STUCK as the
//! control; a release mcpatch has never seen is written only after the strict
//! verify of its patched copy passes, on a copy of its bundle folder.

use serde_json::Value;

use super::gemini::{json, original_of};
use super::*;

/// One CLI-heavy test at a time: a verify of the whole table (or apply's
/// gate) runs some fourteen real gemini-cli processes, and the machines are
/// small. Tests of a few scenarios run beside it: a test waiting here holds
/// one of the harness's threads.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(super) fn heavy() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// The scenarios gemini-cli runs (the others measure the DSH plugin's own API),
/// its own five last (scenario/extra.rs).
const GEMINI_SCENARIOS: [&str; 20] = [
    "expired-404",
    "expired-400",
    "expired-401",
    "idle-timeout",
    "restart",
    "restart-persisted",
    "ordinary-errors",
    "sse-404",
    "strict-reinit",
    "concurrent-loss",
    "call-during-renewal",
    "forgetful",
    "cut-mid-call",
    "slow-timeout",
    "slow-relist",
    "late-answers",
    "lost-again",
    "cut-kept",
    "reinit-timeout",
    "tools-changed",
];

/// `verify --json` of the install at `pkg`, with `extra` arguments.
fn verify(sb: &Sandbox, pkg: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "verify",
        "--json",
        "--jobs",
        "2",
        "--target",
        "gemini-cli",
        "--path",
        pkg.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = sb.run(&args);
    (code(&o), json(&o), stderr(&o))
}

/// Each scenario's (name, verdict, ok).
fn verdicts(install: &Value) -> Vec<(String, String, bool)> {
    install["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["verdict"].as_str().unwrap().to_string(),
                s["ok"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// What is left in the package and its bundle folder besides its own files.
pub(super) fn leftovers(pkg: &Path) -> Vec<String> {
    let mut names: Vec<String> = [pkg.to_path_buf(), pkg.join("bundle")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".mcpatch"))
        .collect();
    names.sort();
    names
}

/// On `version`: verify STUCK (exit 1), apply, verify SEAMLESS (exit 0), and
/// the saved original STUCK as the control. `scenarios` empty: every one
/// gemini-cli runs.
fn stuck_then_seamless(version: &str, scenarios: &[&str]) {
    // The whole table is heavy; a few scenarios run beside the others.
    let _one = scenarios.is_empty().then(heavy);
    let sb = Sandbox::new();
    let pkg = sb.gemini_install(version, "g").canonicalize().unwrap();
    let (original, chunk, patched) = original_of(version);
    let mut extra = Vec::new();
    for s in scenarios {
        extra.extend(["--scenario", *s]);
    }
    let names: Vec<&str> = if scenarios.is_empty() {
        GEMINI_SCENARIOS.to_vec()
    } else {
        scenarios.to_vec()
    };
    let recovers = |n: &str| {
        n.starts_with("expired-")
            || [
                "idle-timeout",
                "restart",
                "strict-reinit",
                "concurrent-loss",
                "call-during-renewal",
                "slow-relist",
                "late-answers",
                "tools-changed",
            ]
            .contains(&n)
    };

    // Before apply, the scenarios the patch must make recover, each STUCK (what
    // the others do on the original is not the bug; they run after apply).
    let before: Vec<&str> = names.iter().copied().filter(|n| recovers(n)).collect();
    let before_args: Vec<&str> = before.iter().flat_map(|s| ["--scenario", *s]).collect();
    let (c, v, err) = verify(&sb, &pkg, &before_args);
    let i = &v["installs"][0];
    assert_eq!(
        (c, i["overall"].as_str()),
        (1, Some("STUCK")),
        "{v:#}\n{err}"
    );
    assert_eq!(i["state"], "affected");
    assert_eq!(i["sha256"], original.as_str());
    assert_eq!(i["note"], "not patched: run `mcpatch apply`");
    let got = verdicts(i);
    assert_eq!(
        got.iter().map(|(n, _, _)| n.as_str()).collect::<Vec<_>>(),
        before,
        "{v:#}"
    );
    for (name, verdict, ok) in got {
        assert_eq!((verdict.as_str(), ok), ("STUCK", false), "{name}: {v:#}");
    }

    let o = sb.run(&["apply", "--yes", "--quiet", "--path", pkg.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(sha256_file(&pkg.join(&chunk)), patched);

    let (c, v, err) = verify(&sb, &pkg, &extra);
    let i = &v["installs"][0];
    assert_eq!(
        (c, i["overall"].as_str()),
        (0, Some("SEAMLESS")),
        "{v:#}\n{err}"
    );
    assert_eq!(i["state"], "patched");
    let got = verdicts(i);
    assert_eq!(
        got.iter().map(|(n, _, _)| n.as_str()).collect::<Vec<_>>(),
        names,
        "{v:#}"
    );
    for (name, verdict, ok) in &got {
        let want = match name.as_str() {
            n if recovers(n) => "SEAMLESS",
            "cut-mid-call" | "cut-kept" => "NOT-RETRIED",
            "forgetful" => "BOUNDED",
            "lost-again" => "RELOADED",
            // The call that met the loss fails: its new session got no answer.
            "reinit-timeout" => "RECOVERED",
            _ => "HELD",
        };
        assert_eq!((verdict.as_str(), *ok), (want, true), "{name}: {v:#}");
    }
    for s in i["scenarios"].as_array().unwrap() {
        if recovers(s["name"].as_str().unwrap()) {
            assert_eq!(s["failed_calls"], 0, "{s:#}");
            assert_eq!(s["initialize_count"], 2, "{s:#}");
        }
    }

    // The saved original, on a copy of the bundle folder: the control (one
    // scenario reproduces the bug; the table ran on the original above).
    let (c, v, err) = verify(&sb, &pkg, &["--backup", "--scenario", "expired-404"]);
    let i = &v["installs"][0];
    assert_eq!(
        (c, i["overall"].as_str()),
        (1, Some("STUCK")),
        "{v:#}\n{err}"
    );
    assert_eq!(
        i["note"],
        "the saved original, run as the control: judged as any file, so STUCK here is the bug the patch fixes, reproduced"
    );
    assert_eq!(i["sha256"], original.as_str());
    assert_eq!(
        sha256_file(&pkg.join(&chunk)),
        patched,
        "verify changes nothing"
    );
    assert_eq!(leftovers(&pkg), Vec::<String>::new());
}

#[test]
fn verify_runs_the_real_cli_of_0_61_0_stuck_before_apply_and_seamless_after() {
    stuck_then_seamless("0.61.0", &[]);
}

#[test]
fn verify_runs_the_real_cli_of_0_56_0_stuck_before_apply_and_seamless_after() {
    stuck_then_seamless("0.56.0", &["expired-404", "expired-400", "expired-401"]);
}

#[test]
fn verify_runs_the_real_cli_of_0_51_0_stuck_before_apply_and_seamless_after() {
    stuck_then_seamless("0.51.0", &["expired-404", "expired-400", "expired-401"]);
}

#[test]
fn verify_runs_the_real_cli_of_0_47_0_stuck_before_apply_and_seamless_after() {
    stuck_then_seamless("0.47.0", &["expired-404", "expired-400", "expired-401"]);
}

#[test]
fn verify_runs_the_real_cli_of_0_45_2_stuck_before_apply_and_seamless_after() {
    stuck_then_seamless("0.45.2", &[]);
}

#[test]
fn a_release_never_seen_that_the_anchors_fit_is_patched_after_its_copy_passes_strict_verify() {
    let _one = heavy();
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (_, chunk, _) = original_of("0.61.0");
    let file = pkg.join(&chunk);
    let edited = edit_file(&file, |t| format!("{t}// a local edit\n"));
    let path = pkg.to_str().unwrap();
    let v = json(&sb.run(&["status", "--json", "--path", path]));
    assert_eq!(v["installs"][0]["state"], "affected", "{v:#}");
    assert_eq!(
        v["installs"][0]["note"],
        "a release mcpatch has no record of; the patch's content anchors fit it, and `mcpatch apply` verifies the patched copy before writing it"
    );
    // No --yes: the verify gate is what decides.
    let o = sb.run(&["apply", "--json", "--path", path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["changed"], true, "{v:#}");
    let gate = &v["installs"][0]["verify"];
    assert_eq!(gate["passed"], true, "{v:#}");
    assert_eq!(gate["overall"], "SEAMLESS");
    let names: Vec<&str> = gate["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, GEMINI_SCENARIOS);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("(mcpatch: gemini-cli-session-loss)"));
    assert!(text.ends_with("// a local edit\n"));
    assert_ne!(sha256_file(&file), edited);
    let v = json(&sb.run(&["status", "--json", "--path", path]));
    assert_eq!(v["installs"][0]["state"], "patched", "{v:#}");
    assert_eq!(leftovers(&pkg), Vec::<String>::new());
    // A second apply leaves it alone.
    let o = sb.run(&["apply", "--yes", "--json", "--path", path]);
    assert_eq!(json(&o)["changed"], false);
}

/// A release whose `McpClient.connect` keeps the client it has: the anchors
/// still fit, but the patch's new session is the dead one.
fn keeps_its_client(text: String) -> String {
    let connect = "this.client = await connectToMcpServer(";
    assert_eq!(text.matches(connect).count(), 1);
    text.replace(
        connect,
        "this.client = this.client ?? await connectToMcpServer(",
    )
}

#[test]
fn a_release_never_seen_whose_patched_copy_stays_stuck_is_refused_untouched() {
    let _one = heavy();
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (_, chunk, _) = original_of("0.61.0");
    let file = pkg.join(&chunk);
    let broken = edit_file(&file, keeps_its_client);
    let path = pkg.to_str().unwrap();
    // One gated apply (the quiet form of a gated refusal is evidence.rs's):
    // the refusal, then each scenario that failed.
    let o = sb.run(&["apply", "--yes", "--path", path]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = sb.normalize(&o.stdout);
    let head = format!("refused: [SANDBOX]/g/lib/node_modules/@google/gemini-cli (0.61.0)\n  sha256 {broken} is not a revision mcpatch knows, and its patched copy did not recover as the current patch revision must (verify: STUCK); the install is untouched\n");
    assert!(out.starts_with(&head), "{out}");
    assert!(
        out.contains("\n  expired-404: STUCK (expected SEAMLESS): "),
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
    assert_eq!(leftovers(&pkg), Vec::<String>::new());
}

#[test]
fn gemini_on_path_is_resolved_to_its_package_and_verified() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "prefix");
    std::os::unix::fs::symlink(
        "../prefix/lib/node_modules/@google/gemini-cli/bundle/gemini.js",
        sb.root().join("bin/gemini"),
    )
    .unwrap();
    let v = json(&sb.run(&["status", "--json", "--target", "gemini-cli"]));
    let pkg = pkg.canonicalize().unwrap();
    assert_eq!(v["installs"][0]["path"], pkg.to_str().unwrap(), "{v:#}");
    assert_eq!(v["installs"][0]["state"], "affected");
    assert_eq!(
        v["installs"][0]["found_via"][0],
        format!(
            "`gemini` on PATH ({})",
            sb.root().join("bin/gemini").display()
        )
    );
    let o = sb.run(&[
        "verify",
        "--target",
        "gemini-cli",
        "--scenario",
        "expired-404",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let out = sb.normalize(&o.stdout);
    assert!(
        out.starts_with("[SANDBOX]/prefix/lib/node_modules/@google/gemini-cli (affected)\n"),
        "{out}"
    );
    assert!(
        out.contains("\nexpired-404  STUCK (expected RECOVERED)"),
        "{out}"
    );
    assert!(
        out.ends_with("\nnote: not patched: run `mcpatch apply --target gemini-cli`\nSTUCK\n"),
        "{out}"
    );
}

/// Processes whose command line names `needle`.
pub(super) fn processes_naming(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(needle).then(|| format!("{pid}: {cmd}"))
        })
        .collect()
}

#[test]
fn a_signal_stops_verify_with_no_cli_left_running_and_nothing_left_in_the_install() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let path = pkg.to_str().unwrap();
    let o = sb.run(&["apply", "--yes", "--quiet", "--path", path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let tmp = sb.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // The saved original runs on a copy of bundle/ beside it.
        let child = sb
            .command(&["verify", "--backup", "--path", path])
            .env("TMPDIR", &tmp)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        // The CLI runs from the copy (a fork of mcpatch not yet exec'd names the path too).
        while !processes_naming(path)
            .iter()
            .any(|p| p.contains(".mcpatch-verify-bundle-"))
        {
            assert!(std::time::Instant::now() < until, "no CLI started");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        let name = match signal {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            _ => "SIGHUP",
        };
        assert!(
            stderr(&o).contains(&format!("error: interrupted by {name}: the check stopped")),
            "{}",
            stderr(&o)
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(processes_naming(path), Vec::<String>::new(), "{name}");
        assert_eq!(leftovers(&pkg), Vec::<String>::new(), "{name}");
        let scratch: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
        assert!(scratch.is_empty(), "{name}: {scratch:?}");
    }
}

#[test]
fn scenarios_gemini_cli_cannot_run_are_left_out_saying_why() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let (c, v, err) = verify(
        &sb,
        &pkg,
        &["--scenario", "expired-404", "--scenario", "gave-up"],
    );
    assert_eq!(c, 1, "{v:#}\n{err}");
    let i = &v["installs"][0];
    assert_eq!(verdicts(i), [("expired-404".into(), "STUCK".into(), false)]);
    assert_eq!(
        i["left_out"],
        serde_json::json!([{"name": "gave-up", "why": "its verdict measures the DSH plugin's reconnect policy (backoff and attempts per outage), which gemini-cli does not share"}])
    );
    let o = sb.run(&[
        "verify",
        "--target",
        "gemini-cli",
        "--path",
        pkg.to_str().unwrap(),
        "--scenario",
        "abort-waiting",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        sb.normalize(&o.stderr).contains("error: no scenario asked for runs against gemini-cli:\n  - abort-waiting: its abort signal or deadline is an argument of the DSH plugin's call API (toolCallTimeoutMs, AbortSignal), which a model cannot pass to gemini-cli\nhelp: leave out --scenario, or name a scenario gemini-cli can run\n"),
        "{}",
        stderr(&o)
    );
}

/// `code` put right after the shebang of the CLI's entry file.
fn at_start_of_entry(pkg: &Path, code: &str) {
    let entry = pkg.join("bundle/gemini.js");
    let text = std::fs::read_to_string(&entry).unwrap();
    let (shebang, rest) = text.split_once('\n').unwrap();
    std::fs::write(&entry, format!("{shebang}\n{code}\n{rest}")).unwrap();
}

#[test]
fn a_cli_that_ends_before_it_asks_the_model_anything_is_started_again_up_to_three_times() {
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let starts = sb.root().join("starts");
    let starts_js = serde_json::to_string(&starts.to_string_lossy()).unwrap();
    let original = std::fs::read_to_string(pkg.join("bundle/gemini.js")).unwrap();

    // Ends at its first start only (as gemini-cli now and then does on a busy
    // machine): started again, the scenario runs and is judged.
    at_start_of_entry(
        &pkg,
        &format!(
            "{{ const fs = await import('node:fs'); const first = !fs.existsSync({starts_js}); fs.appendFileSync({starts_js}, 'x'); if (first) process.exit(0); }}"
        ),
    );
    let (c, v, err) = verify(&sb, &pkg, &["--scenario", "expired-404"]);
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(
        (c, s["verdict"].as_str()),
        (1, Some("STUCK")),
        "{v:#}\n{err}"
    );
    assert_eq!(std::fs::read_to_string(&starts).unwrap(), "xx");

    // Ends at every start: BROKEN after three.
    std::fs::write(pkg.join("bundle/gemini.js"), &original).unwrap();
    std::fs::remove_file(&starts).unwrap();
    at_start_of_entry(
        &pkg,
        &format!(
            "{{ (await import('node:fs')).appendFileSync({starts_js}, 'x'); process.exit(0); }}"
        ),
    );
    let (c, v, err) = verify(&sb, &pkg, &["--scenario", "expired-404"]);
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(
        (c, s["verdict"].as_str()),
        (1, Some("BROKEN")),
        "{v:#}\n{err}"
    );
    assert_eq!(
        s["note"],
        "gemini-cli exited before it asked the model anything (exit status: 0), each of 3 times it was started; its stderr was empty"
    );
    assert_eq!(std::fs::read_to_string(&starts).unwrap(), "xxx");
}
