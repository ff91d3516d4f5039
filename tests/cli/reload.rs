//! Hot-reloading servers (issue 30): a server in watch mode forgets every
//! session on each save. On the REAL client 0.1.0-rc.8, with the package's
//! default reconnect policy, every call after each restart must be answered at
//! once, with verify's 3 s call timeout and with the package's own 60 s one;
//! revision 2 of the patch (a loss soon after a recovery counted as the same
//! outage) must show it does not; and mcp-remote patched by mcpatch passes too.

use serde_json::Value;

use super::verify::verify_json;
use super::*;

/// Each scenario run of the first install: (name, policy, verdict, failed calls).
fn runs(v: &Value) -> Vec<(String, String, String, u64)> {
    v["installs"][0]["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["policy"].as_str().unwrap_or("").to_string(),
                s["verdict"].as_str().unwrap().to_string(),
                s["failed_calls"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn row(name: &str, policy: &str, verdict: &str, failed: u64) -> (String, String, String, u64) {
    (name.into(), policy.into(), verdict.into(), failed)
}

/// The slowest call a RELOADED note names, after checking the rest of it word for word.
fn reloaded_note(note: &str, calls: u32, restarts: u32, every: u32) -> u64 {
    let head = format!(
        "{calls} calls, one after each of {restarts} restarts {every} s apart, each answered within 1000 ms (the slowest "
    );
    let rest = note
        .strip_prefix(&head)
        .unwrap_or_else(|| panic!("{note:?} does not start {head:?}"));
    let (ms, tail) = rest.split_once(" ms); ").unwrap();
    // One new session per restart, and the first: no more handshakes than that.
    assert_eq!(tail, format!("{calls} handshakes"), "{note}");
    ms.parse().unwrap()
}

#[test]
fn a_patched_client_answers_every_call_at_once_across_15_and_8_restarts_and_stays_bounded_when_sessions_die_at_once(
) {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (rc, v) = verify_json(
        &sb,
        &[
            "--path",
            p,
            "--scenario",
            "reload",
            "--scenario",
            "reload-5s",
            "--scenario",
            "forgetful",
        ],
    );
    assert_eq!(rc, 0, "{v:#}");
    assert_eq!(
        runs(&v),
        [
            row("forgetful", "short", "BOUNDED", 8),
            row("reload", "default", "RELOADED", 0),
            row("reload-5s", "default", "RELOADED", 0),
            row("reload", "package", "RELOADED", 0),
            row("reload-5s", "package", "RELOADED", 0),
        ],
        "{v:#}"
    );
    for s in v["installs"][0]["scenarios"].as_array().unwrap() {
        let note = s["note"].as_str().unwrap();
        match s["name"].as_str().unwrap() {
            "reload" => assert!(reloaded_note(note, 16, 15, 2) <= 1000),
            "reload-5s" => assert!(reloaded_note(note, 9, 8, 5) <= 1000),
            _ => assert!(note.starts_with("6 handshakes (bound 6): "), "{note}"),
        }
    }
}

#[test]
fn a_revision_2_file_is_outdated_slowed_by_a_reloading_server_upgraded_by_apply_and_reverted_byte_for_byte(
) {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let spec = mcpatch::registry::session_loss().unwrap();
    let r2 = spec.earlier.iter().find(|e| e.revision == 2).unwrap();
    let sha = edit_file(&client.join("lib/index.js"), |text| {
        diffy::apply(&text, &diffy::Patch::from_str(&r2.diff).unwrap()).unwrap()
    });
    assert_eq!(Some(sha.as_str()), r2.sha256.as_deref());

    let o = sb.run(&["status", "--path", p]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        sb.normalize(&o.stdout),
        "PATH  VERSION  STATE  NEXT STEP\n\
         [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client  0.1.0-rc.8  outdated  run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` to upgrade to the current patch revision\n  \
         sha256 cc17424d…8b19 (outdated)\n  \
         note: patched by an earlier mcpatch revision (2): it recovers seamlessly, but a server that restarts often (watch mode) makes it wait a growing backoff and finally give up; run `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client` to upgrade\n\
         1 install(s): 0 affected, 0 patched, 1 outdated, 0 upstream-fixed, 0 modified, 0 unsupported\n"
    );

    // Its second reconnect waits the policy's second backoff (1 s): the run
    // stops at that call, which took longer than the limit.
    let (rc, v) = verify_json(&sb, &["--path", p, "--scenario", "reload"]);
    assert_eq!(rc, 1, "{v:#}");
    assert_eq!(
        runs(&v),
        [
            row("reload", "default", "SLOWED", 0),
            row("reload", "package", "SLOWED", 0),
        ],
        "{v:#}"
    );
    for s in v["installs"][0]["scenarios"].as_array().unwrap() {
        let note = s["note"].as_str().unwrap();
        let rest = note.strip_prefix("1 of 3 calls took longer than 1000 ms (the slowest ");
        let ms: u64 = rest
            .and_then(|r| {
                r.strip_suffix(" ms): a reconnect after a completed recovery waited a backoff")
            })
            .unwrap_or_else(|| panic!("{note}"))
            .parse()
            .unwrap();
        assert!(ms > 1000, "{note}");
    }

    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = sb.normalize(&o.stdout);
    assert!(
        out.starts_with("upgraded [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (0.1.0-rc.8) from patch revision 2\n"),
        "{out}"
    );
    assert_eq!(sha256_file(&client.join("lib/index.js")), patched_hash());
    let backups: Value = serde_json::from_slice(&sb.run(&["backups", "--json"]).stdout).unwrap();
    let manifest = &backups["backups"][0]["manifest"];
    assert_eq!(manifest["sha256_before"], ORIGINAL);
    assert_eq!(manifest["replaced_sha256"], r2.sha256.as_deref().unwrap());

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

#[test]
fn mcp_remote_is_stuck_on_a_reloading_server_answering_400_before_apply_and_answers_every_call_after(
) {
    let sb = Sandbox::new();
    let dir = super::mcp_remote::project(&sb, "0.15.1", "p");
    let path = dir.to_str().unwrap();
    // 0.15.1 recovers from a 404 on its own, not from the 400 `reload` answers.
    let (rc, v) = verify_json(&sb, &["--path", path, "--scenario", "reload"]);
    assert_eq!(rc, 1, "{v:#}");
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(s["verdict"], "STUCK", "{v:#}");
    let note = s["note"].as_str().unwrap();
    assert!(
        note.starts_with(
            "1 of 2 calls failed across 15 restarts 2 s apart (the first: call c2 after "
        ),
        "{note}"
    );
    let o = sb.run(&["apply", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let (rc, v) = verify_json(&sb, &["--path", path, "--scenario", "reload"]);
    assert_eq!(rc, 0, "{v:#}");
    assert_eq!(v["installs"][0]["target"], "mcp-remote");
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(s["name"], "reload", "{v:#}");
    assert_eq!(s["verdict"], "RELOADED", "{v:#}");
    assert!(reloaded_note(s["note"].as_str().unwrap(), 16, 15, 2) <= 1000);
}

#[test]
fn gemini_cli_is_stuck_on_a_reloading_server_before_apply_and_answers_every_call_after() {
    let _one = super::gemini_verify::heavy();
    let sb = Sandbox::new();
    let pkg = sb.gemini_install("0.61.0", "g").canonicalize().unwrap();
    let path = pkg.to_str().unwrap();
    let args = [
        "--jobs",
        "1",
        "--target",
        "gemini-cli",
        "--path",
        path,
        "--scenario",
        "reload",
    ];
    // The original fails the call after the first restart; the run stops there.
    let (rc, v) = verify_json(&sb, &args);
    assert_eq!(rc, 1, "{v:#}");
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(
        (&s["name"], &s["verdict"]),
        (&"reload".into(), &"STUCK".into()),
        "{v:#}"
    );
    let note = s["note"].as_str().unwrap();
    assert!(
        note.starts_with(
            "1 of 2 calls failed across 15 restarts 2 s apart (the first: call c2 after "
        ),
        "{note}"
    );

    let o = sb.run(&["apply", "--yes", "--quiet", "--path", path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let (rc, v) = verify_json(&sb, &args);
    assert_eq!(rc, 0, "{v:#}");
    let s = &v["installs"][0]["scenarios"][0];
    assert_eq!(s["verdict"], "RELOADED", "{v:#}");
    let head = "16 calls, one after each of 15 restarts 2 s apart, each answered within 2000 ms (the slowest ";
    let note = s["note"].as_str().unwrap();
    assert!(
        note.starts_with(head) && note.ends_with(" ms); 16 handshakes"),
        "{note}"
    );
}

#[tokio::test]
async fn the_fake_server_forgets_every_session_on_each_reload_only_once_started_and_counts_them() {
    use mcpatch::verify::fake_server::reload::ReloadCycle;
    use mcpatch::verify::fake_server::{FakeServer, ServerBehaviour};
    let cycle = ReloadCycle {
        every: std::time::Duration::from_millis(150),
        times: 3,
    };
    let behaviour = ServerBehaviour {
        reload: Some(cycle),
        ..ServerBehaviour::default()
    };
    let server = FakeServer::start(behaviour, 0).await.unwrap();
    let ready = format!("http://{}/control/ready", server.addr());
    let token = format!("Bearer {}", server.control_token());
    let reloads = || async {
        let v: Value = reqwest::Client::new()
            .get(&ready)
            .header("Authorization", &token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        v["reloads"].as_u64().unwrap()
    };
    // Nothing happens before the plan starts the cycle.
    tokio::time::sleep(cycle.every * 2).await;
    assert_eq!((server.reloads(), reloads().await), (0, 0));
    server.start_reloads();
    server.start_reloads(); // a second start changes nothing
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while server.reloads() < 3 && std::time::Instant::now() < until {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(cycle.every * 2).await;
    assert_eq!((server.reloads(), reloads().await), (3, 3));
    let notes: Vec<String> = server
        .witness()
        .into_iter()
        .filter_map(|e| e.note)
        .collect();
    assert_eq!(
        notes,
        [
            "reload 1/3: dropped 0 session(s)",
            "reload 2/3: dropped 0 session(s)",
            "reload 3/3: dropped 0 session(s)"
        ]
    );
}

#[test]
fn the_dsh_manifest_hashes_are_what_the_script_computes_from_the_real_releases() {
    // Fails loudly when a release is not fetched (the script names the fix).
    let _ = fetched_prefix("0.1.0-rc.8");
    let _ = fetched_prefix("0.1.0-rc.7");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/dsh-revisions.sh");
    let o = std::process::Command::new(&script)
        .env("NODE", node22_dir().join("node"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let spec = mcpatch::registry::session_loss().unwrap();
    for v in ["0.1.0-rc.7", "0.1.0-rc.8"] {
        assert!(
            out.contains(&format!("{v} current  {}\n", patched_hash())),
            "{out}"
        );
        for e in &spec.earlier {
            assert!(
                out.contains(&format!(
                    "{v} {:<8} {}\n",
                    e.revision,
                    e.sha256.as_deref().unwrap()
                )),
                "{out}"
            );
        }
    }
    assert!(out.ends_with("manifest.json: up to date\n"), "{out}");
}
