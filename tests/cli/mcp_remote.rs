//! mcp-remote, mcpatch's second target: real releases from the npm registry
//! (scripts/fetch-fixtures.sh puts 0.15.1, 0.1.44 and 0.1.38 in
//! .cache/mcp-remote/<v>), one of each patch family, found in an npm
//! project given with --path and in an npx cache found with no --path; their
//! file found by content (chunk names change with each release), classified
//! by sha256, patched, and reverted byte for byte. `--target` limits every
//! command to one target.

use std::collections::BTreeMap;

use serde_json::Value;

use super::*;

pub(super) const RELEASES: [&str; 3] = ["0.15.1", "0.1.44", "0.1.38"];

/// The fetched npm project holding the real mcp-remote `version`.
fn fetched_project(version: &str) -> PathBuf {
    let p = cache().join("mcp-remote").join(version);
    assert!(
        p.join(".done").is_file(),
        "the real package mcp-remote@{version} is missing from {}: run scripts/fetch-fixtures.sh (needs npm and the npm registry)",
        p.display()
    );
    p
}

/// The known original revision of `version`: (sha256, file in the package, patched sha256).
pub(super) fn original_of(version: &str) -> (String, String, String) {
    let r = original_revision("mcp-remote", version);
    (
        r.sha256.clone().unwrap(),
        chunk_of(version),
        r.patched_sha256.clone().unwrap(),
    )
}

/// The chunk holding `function mcpProxy(` in the fetched release, relative to the package.
pub(super) fn chunk_of(version: &str) -> String {
    let dist = fetched_project(version).join("node_modules/mcp-remote/dist");
    let mut found: Vec<String> = std::fs::read_dir(&dist)
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("chunk-")
                && n.ends_with(".js")
                && std::fs::read_to_string(e.path())
                    .unwrap()
                    .contains("function mcpProxy(")
        })
        .map(|e| format!("dist/{}", e.file_name().to_string_lossy()))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

/// Copy the fetched project's `node_modules` to `dest` (dependencies hard-linked,
/// mcp-remote itself a real copy) and return mcp-remote's package folder.
pub(super) fn copy_node_modules(version: &str, dest: &Path) -> PathBuf {
    let src = fetched_project(version).join("node_modules");
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    let st = std::process::Command::new("cp")
        .arg("-al")
        .arg(&src)
        .arg(dest)
        .status()
        .unwrap();
    assert!(st.success());
    let pkg = dest.join("mcp-remote");
    std::fs::remove_dir_all(&pkg).unwrap();
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(src.join("mcp-remote"))
        .arg(&pkg)
        .status()
        .unwrap();
    assert!(st.success());
    pkg
}

/// An npm project holding mcp-remote `version`: `<root>/<name>/node_modules/mcp-remote`.
pub(super) fn project(sb: &Sandbox, version: &str, name: &str) -> PathBuf {
    let dir = sb.root().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        format!(
            r#"{{"name":"{name}","version":"1.0.0","dependencies":{{"mcp-remote":"{version}"}}}}"#
        ),
    )
    .unwrap();
    copy_node_modules(version, &dir.join("node_modules"));
    dir
}

/// Every file of a package folder and its sha256.
pub(super) fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), sha256_file(&p));
            }
        }
    }
    out
}

pub(super) fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}{}", stdout(o), stderr(o)))
}

/// The installs of a `status --json`, as (target, state, version).
pub(super) fn summary(v: &Value) -> Vec<(String, String, String)> {
    v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["target"].as_str().unwrap().to_string(),
                i["state"].as_str().unwrap().to_string(),
                i["version"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect()
}

#[test]
fn each_release_in_an_npm_project_is_found_by_content_and_affected() {
    let sb = Sandbox::new();
    for version in RELEASES {
        let dir = project(&sb, version, &format!("p-{version}"));
        let pkg = dir.join("node_modules/mcp-remote").canonicalize().unwrap();
        let (sha, chunk, _) = original_of(version);
        let o = sb.run(&["status", "--json", "--path", dir.to_str().unwrap()]);
        assert_eq!(code(&o), 1, "{version}: {}", stderr(&o));
        let v = json(&o);
        let installs = v["installs"].as_array().unwrap();
        assert_eq!(installs.len(), 1, "{version}: {v:#}");
        let i = &installs[0];
        assert_eq!(i["target"], "mcp-remote");
        assert_eq!(i["path"], pkg.to_str().unwrap());
        assert_eq!(i["file"], pkg.join(&chunk).to_str().unwrap());
        assert_eq!(i["version"], version);
        assert_eq!(i["sha256"], sha);
        assert_eq!(i["state"], "affected");
        assert_eq!(i["revision"], "original");
        assert_eq!(i["next_step"], "run `mcpatch apply`");
    }
}

#[test]
fn apply_patches_each_release_once_and_revert_restores_every_file_byte_for_byte() {
    let sb = Sandbox::new();
    for version in RELEASES {
        let dir = project(&sb, version, &format!("p-{version}"));
        let pkg = dir.join("node_modules/mcp-remote");
        let (_, chunk, patched) = original_of(version);
        let before = tree(&pkg);
        let path = dir.to_str().unwrap();

        let o = sb.run(&["apply", "--json", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
        let v = json(&o);
        assert_eq!(v["changed"], true, "{version}: {v:#}");
        assert_eq!(v["installs"][0]["target"], "mcp-remote");
        assert_eq!(v["installs"][0]["state_before"], "affected");
        assert_eq!(v["installs"][0]["state_after"], "patched");
        assert_eq!(sha256_file(&pkg.join(&chunk)), patched, "{version}");
        // Only the chunk changed.
        let after = tree(&pkg);
        let changed: Vec<&PathBuf> = after
            .iter()
            .filter(|(p, h)| before.get(*p) != Some(h))
            .map(|(p, _)| p)
            .collect();
        assert_eq!(changed, [&PathBuf::from(&chunk)], "{version}");
        assert_eq!(after.len(), before.len(), "{version}");

        let o = sb.run(&["status", "--json", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}", stderr(&o));
        assert_eq!(
            summary(&json(&o)),
            [("mcp-remote".into(), "patched".into(), version.into())]
        );

        // A second apply changes nothing.
        let o = sb.run(&["apply", "--json", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}", stderr(&o));
        let v = json(&o);
        assert_eq!(v["changed"], false, "{version}: {v:#}");
        assert_eq!(tree(&pkg), after, "{version}");

        let o = sb.run(&["revert", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
        assert!(
            stdout(&o).ends_with("backups are kept (`mcpatch backups`); restart the MCP hosts that run mcp-remote so they load the restored bridge\n"),
            "{}",
            stdout(&o)
        );
        assert_eq!(tree(&pkg), before, "{version}: revert left a file changed");
    }
    // The backups are the target's own.
    let backups = sb.dsh_home().join("backups/mcp-remote-session-loss");
    assert_eq!(
        std::fs::read_dir(&backups)
            .unwrap()
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .count(),
        3
    );
    assert!(!sb
        .dsh_home()
        .join("backups/dsh-mcp-client-session-loss")
        .exists());
}

/// `$npm_config_cache/_npx/<hash>/node_modules` holding mcp-remote `version`.
fn npx_install(cache: &Path, hash: &str, version: &str) -> PathBuf {
    copy_node_modules(version, &cache.join("_npx").join(hash).join("node_modules"))
}

#[test]
fn an_npx_cache_is_found_with_no_path_patched_and_reverted() {
    let sb = Sandbox::new();
    let cache = sb.root().join("npm-cache");
    let new = npx_install(&cache, "6f1e2a9b0c3d4e5f", "0.15.1");
    let old = npx_install(&cache, "0a1b2c3d4e5f6a7b", "0.1.38");
    let trees = [tree(&new), tree(&old)];
    let run = |args: &[&str]| {
        sb.cmd(args)
            .env("npm_config_cache", &cache)
            .output()
            .unwrap()
    };
    let o = run(&["status", "--json"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v = json(&o);
    let npx = format!(
        "npx cache ({}/_npx, cache from npm_config_cache)",
        cache.display()
    );
    assert!(
        v["searched"]
            .as_array()
            .unwrap()
            .contains(&Value::from(npx.clone())),
        "{v:#}"
    );
    let mut found = summary(&v);
    found.sort();
    assert_eq!(
        found,
        [
            ("mcp-remote".into(), "affected".into(), "0.1.38".into()),
            ("mcp-remote".into(), "affected".into(), "0.15.1".into()),
        ]
    );
    for i in v["installs"].as_array().unwrap() {
        assert_eq!(i["found_via"], serde_json::json!([npx]), "{v:#}");
    }

    let o = run(&["apply"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = run(&["status", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(summary(&json(&o)).iter().all(|(_, s, _)| s == "patched"));

    let o = run(&["revert"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!([tree(&new), tree(&old)], trees);
}

#[test]
fn the_default_npx_cache_is_under_home() {
    let sb = Sandbox::new();
    let pkg = npx_install(&sb.root().join("home/.npm"), "abc", "0.1.44");
    let o = sb.run(&["status", "--json"]);
    let v = json(&o);
    assert_eq!(
        v["installs"][0]["path"],
        pkg.canonicalize().unwrap().to_str().unwrap(),
        "{v:#}"
    );
    assert_eq!(
        v["installs"][0]["found_via"],
        serde_json::json!([format!(
            "npx cache ({}/home/.npm/_npx, default cache)",
            sb.root().display()
        )])
    );
}

#[test]
fn target_limits_every_command_to_one_target() {
    let sb = Sandbox::new();
    let dsh = sb.client_install("0.1.0-rc.8", "all/g");
    project(&sb, "0.1.44", "all/p");
    let all = sb.root().join("all");
    let all = all.to_str().unwrap();
    let o = sb.run(&["status", "--json", "--path", all]);
    assert_eq!(
        summary(&json(&o)),
        [
            (
                "dsh-mcp-client".into(),
                "affected".into(),
                "0.1.0-rc.8".into()
            ),
            ("mcp-remote".into(), "affected".into(), "0.1.44".into()),
        ]
    );
    let o = sb.run(&["--target", "mcp-remote", "status", "--json", "--path", all]);
    assert_eq!(
        summary(&json(&o)),
        [("mcp-remote".into(), "affected".into(), "0.1.44".into())]
    );
    let o = sb.run(&[
        "status",
        "--target",
        "dsh-mcp-client",
        "--json",
        "--path",
        all,
    ]);
    assert_eq!(
        summary(&json(&o)),
        [(
            "dsh-mcp-client".into(),
            "affected".into(),
            "0.1.0-rc.8".into()
        )]
    );

    // apply and revert touch only the target named.
    let o = sb.run(&["apply", "--target", "mcp-remote", "--json", "--path", all]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["installs"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(v["installs"][0]["target"], "mcp-remote");
    assert_eq!(sha256_file(&dsh.join("lib/index.js")), ORIGINAL);
    let o = sb.run(&["status", "--json", "--path", all]);
    assert_eq!(
        summary(&json(&o)),
        [
            (
                "dsh-mcp-client".into(),
                "affected".into(),
                "0.1.0-rc.8".into()
            ),
            ("mcp-remote".into(), "patched".into(), "0.1.44".into()),
        ]
    );
    let o = sb.run(&[
        "revert",
        "--target",
        "dsh-mcp-client",
        "--json",
        "--path",
        all,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["changed"], false);
    let o = sb.run(&["--target", "mcp-remote", "revert", "--path", all]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = sb.run(&["status", "--json", "--path", all]);
    assert!(summary(&json(&o)).iter().all(|(_, s, _)| s == "affected"));

    // A name mcpatch does not know.
    let o = sb.run(&["status", "--target", "nope"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: unknown target nope; mcpatch knows dsh-mcp-client, mcp-remote, gemini-cli, mcp-sdk, ai-sdk-mcp\nhelp: pass one of those to --target, or leave --target out for all of them\n"
    );
}

#[test]
fn a_release_whose_proxy_is_in_two_chunks_is_unsupported_and_left_alone() {
    let sb = Sandbox::new();
    let dir = project(&sb, "0.1.44", "p");
    let pkg = dir.join("node_modules/mcp-remote");
    let chunk = chunk_of("0.1.44");
    std::fs::copy(pkg.join(&chunk), pkg.join("dist/chunk-COPY.js")).unwrap();
    let before = tree(&pkg);
    let path = dir.to_str().unwrap();
    let o = sb.run(&["status", "--json", "--path", path]);
    let v = json(&o);
    assert_eq!(code(&o), 0, "{v:#}");
    let i = &v["installs"][0];
    assert_eq!(i["state"], "unsupported", "{v:#}");
    assert_eq!(
        i["note"],
        "2 of its files matching dist/chunk-*.js hold `function mcpProxy(` and `transportToServer.onerror = onServerError;`: mcpatch patches exactly one"
    );
    let o = sb.run(&["apply", "--path", path]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(tree(&pkg), before);
}

/// `verify --json` of the lost-session answers 404, 400 and 401, with `args`.
fn verify_answers(sb: &Sandbox, args: &[&str]) -> (Output, Value) {
    let mut all = vec![
        "verify",
        "--json",
        "--scenario",
        "expired-404",
        "--scenario",
        "expired-400",
        "--scenario",
        "expired-401",
    ];
    all.extend_from_slice(args);
    let o = output_within_five_minutes(sb.command(&all));
    let v = json(&o);
    (o, v)
}

/// Run a command, failing the test if it has not finished after five minutes (a hang).
pub(super) fn output_within_five_minutes(cmd: std::process::Command) -> Output {
    output_within(cmd, std::time::Duration::from_secs(300), "mcpatch verify")
}

/// Each scenario of one install of a `verify --json`: (name, verdict, failed calls).
pub(super) fn verdicts(install: &Value) -> Vec<(String, String, u64)> {
    install["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["verdict"].as_str().unwrap().to_string(),
                s["failed_calls"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn verify_drives_each_release_stuck_before_apply_and_seamless_after() {
    let sb = Sandbox::new();
    // Before apply: 0.15.1 recovers from 404 only; 0.1.44 from nothing; 0.1.38
    // never answers a call after the loss (HANG, so the whole run FAILED).
    let before = [
        ("0.15.1", "STUCK", ["SEAMLESS", "STUCK", "STUCK"]),
        ("0.1.44", "STUCK", ["STUCK", "STUCK", "STUCK"]),
        ("0.1.38", "FAILED", ["HANG", "HANG", "HANG"]),
    ];
    // Each release in a project of its own, side by side (a bridge's table
    // waits on its scenarios' pauses more than on the CPU).
    std::thread::scope(|s| {
        for (version, overall, each) in before {
            let sb = &sb;
            s.spawn(move || stuck_then_seamless(sb, version, overall, each));
        }
    });
}

/// `verify` of mcp-remote `version` in a project of its own: `overall` with
/// the verdicts `each` before apply, SEAMLESS after.
fn stuck_then_seamless(sb: &Sandbox, version: &str, overall: &str, each: [&str; 3]) {
    let dir = project(sb, version, &format!("p-{version}"));
    let path = dir.to_str().unwrap();
    let (o, v) = verify_answers(sb, &["--path", path]);
    assert_eq!(code(&o), 1, "{version}: {v:#}");
    let install = &v["installs"][0];
    assert_eq!(install["target"], "mcp-remote", "{v:#}");
    assert_eq!(install["overall"], overall, "{version}: {v:#}");
    let found: Vec<String> = verdicts(install).into_iter().map(|(_, v, _)| v).collect();
    assert_eq!(found, each, "{version}: {v:#}");

    let o = sb.run(&["apply", "--path", path]);
    assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
    let (o, v) = verify_answers(sb, &["--path", path]);
    assert_eq!(code(&o), 0, "{version}: {v:#}");
    let install = &v["installs"][0];
    assert_eq!(install["state"], "patched", "{v:#}");
    assert_eq!(install["overall"], "SEAMLESS", "{version}: {v:#}");
    assert_eq!(
        verdicts(install),
        [
            ("expired-404".to_string(), "SEAMLESS".to_string(), 0),
            ("expired-400".to_string(), "SEAMLESS".to_string(), 0),
            ("expired-401".to_string(), "SEAMLESS".to_string(), 0),
        ],
        "{version}: {v:#}"
    );
}

#[test]
fn verify_with_no_path_covers_every_install_of_every_target() {
    let sb = Sandbox::new();
    sb.global_dsh("0.1.0-rc.8");
    let cache = sb.root().join("home/.npm");
    npx_install(&cache, "0a1b2c3d4e5f6a7b", "0.1.38");
    let o = sb.run(&["apply"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let (o, v) = verify_answers(&sb, &[]);
    assert_eq!(code(&o), 0, "{v:#}");
    let found: Vec<(String, String)> = v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["target"].as_str().unwrap().to_string(),
                i["overall"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("dsh-mcp-client".to_string(), "SEAMLESS".to_string()),
            ("mcp-remote".to_string(), "SEAMLESS".to_string()),
        ],
        "{v:#}"
    );
    assert!(verdicts(&v["installs"][1])
        .iter()
        .all(|(_, _, failed)| *failed == 0));
}

#[test]
fn npms_cache_setting_in_the_user_npmrc_and_pnpms_dlx_cache_are_searched() {
    let sb = Sandbox::new();
    std::fs::write(sb.root().join("home/.npmrc"), "cache=~/elsewhere/npm\n").unwrap();
    let npx = npx_install(&sb.root().join("home/elsewhere/npm"), "feed", "0.1.44");
    let dlx = copy_node_modules(
        "0.15.1",
        &sb.root()
            .join("xdg/pnpm/dlx/k3y/1764547200000-4242/node_modules"),
    );
    let o = sb
        .cmd(&["status", "--json"])
        .env("XDG_CACHE_HOME", sb.root().join("xdg"))
        .output()
        .unwrap();
    let v = json(&o);
    let s = sb.root().display();
    let via: Vec<(String, Value)> = v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().to_string(),
                i["found_via"].clone(),
            )
        })
        .collect();
    assert_eq!(
        via,
        [
            (
                npx.canonicalize().unwrap().display().to_string(),
                serde_json::json!([format!(
                    "npx cache ({s}/home/elsewhere/npm/_npx, cache in user config {s}/home/.npmrc)"
                )])
            ),
            (
                dlx.canonicalize().unwrap().display().to_string(),
                serde_json::json!([format!("pnpm dlx cache ({s}/xdg/pnpm/dlx)")])
            ),
        ],
        "{v:#}"
    );
}

#[test]
fn a_file_given_with_path_that_no_target_patches_is_an_error_naming_every_package() {
    let sb = Sandbox::new();
    let file = sb.root().join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    let o = sb.run(&["status", "--path", file.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: [SANDBOX]/notes.txt is not an install of @deepseek-ai/dsh-mcp-client, mcp-remote, @google/gemini-cli, @modelcontextprotocol/sdk, @modelcontextprotocol/client or @ai-sdk/mcp, a file one patches, or a folder\nhelp: pass --path the package folder (the one holding package.json) or a folder to search below\n"
    );
    // A chunk of mcp-remote given as the file: its package is found above it.
    let dir = project(&sb, "0.1.44", "p");
    let chunk = dir.join("node_modules/mcp-remote").join(chunk_of("0.1.44"));
    let o = sb.run(&["status", "--json", "--path", chunk.to_str().unwrap()]);
    assert_eq!(
        summary(&json(&o)),
        [("mcp-remote".into(), "affected".into(), "0.1.44".into())]
    );
}

/// One run of test-fixtures/mcp-remote/drive.mjs: the installed mcp-remote at
/// `pkg`, driven over stdio as a host drives it, against the real TypeScript
/// SDK stateful server (session-server.cjs) restarted twice mid-session, which
/// answers a lost session with `answer`. Its JSON summary.
fn drive_real_server(pkg: &Path, answer: &str) -> Value {
    let sdk = cache().join("mcp-servers").join(format!("ts-sdk-{TS_SDK}"));
    assert!(
        sdk.join(".done").is_file(),
        "the TypeScript MCP SDK is missing from {}: run scripts/fetch-fixtures.sh",
        sdk.display()
    );
    let node = node22_dir().join("node");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/mcp-remote/drive.mjs");
    let mut cmd = std::process::Command::new(&node);
    cmd.arg(&script)
        .args(["--package", pkg.to_str().unwrap()])
        .args(["--sdk", sdk.to_str().unwrap()])
        .args(["--answer", answer])
        .args(["--node", node.to_str().unwrap()]);
    let o = output_within_five_minutes(cmd);
    assert_eq!(code(&o), 0, "drive.mjs {answer}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("drive.mjs printed no JSON ({e}): {}", stdout(&o)))
}

#[test]
fn patched_releases_lose_no_call_to_a_real_sdk_server_restarted_mid_session() {
    let sb = Sandbox::new();
    // Unpatched 0.15.1 re-initializes on 404 only: on 400 the calls after a restart fail.
    let dir = project(&sb, "0.15.1", "unpatched");
    let run = drive_real_server(&dir.join("node_modules/mcp-remote"), "400");
    assert!(
        run["failed"].as_u64().unwrap() > 0,
        "unpatched 0.15.1 lost no call on 400: {run:#}"
    );
    for version in RELEASES {
        let dir = project(&sb, version, &format!("p-{version}"));
        let o = sb.run(&["apply", "--path", dir.to_str().unwrap()]);
        assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
        for answer in ["404", "400", "401"] {
            let run = drive_real_server(&dir.join("node_modules/mcp-remote"), answer);
            let what = format!("{version} on {answer}: {run:#}");
            assert_eq!(run["failed"], 0, "{what}");
            assert_eq!(run["hung"], 0, "{what}");
            // One new session per restart, no initialize on a live session.
            assert_eq!(
                run["sessions_after_restart"],
                serde_json::json!([1, 1]),
                "{what}"
            );
            assert_eq!(run["initialize_with_session"], 0, "{what}");
            // Errors that are not session loss reach the host once, never sent again.
            for (kind, seen) in run["not_session_loss"].as_object().unwrap() {
                assert_eq!(seen["answered"], "error", "{kind}: {what}");
                assert_eq!(seen["arrivals"], 1, "{kind}: {what}");
            }
        }
    }
}

/// The package folder of the project `p` of a test, as messages show it.
const PKG: &str = "[SANDBOX]/p/node_modules/mcp-remote";

/// The backups of mcp-remote installs (their ids, sorted).
pub(super) fn remote_backups(sb: &Sandbox) -> Vec<String> {
    let mut ids: Vec<String> =
        std::fs::read_dir(sb.dsh_home().join("backups/mcp-remote-session-loss"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
    ids.sort();
    ids
}

/// Whatever verify or apply put in a package folder and left there: every
/// name under it starting with `.mcpatch`.
pub(super) fn leftovers(pkg: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![pkg.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with(".mcpatch") {
                found.push(e.path());
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    found
}

#[test]
fn verify_backup_runs_the_saved_original_of_each_patched_release_as_the_control() {
    let sb = Sandbox::new();
    // The releases' own behaviour, as before apply: 0.15.1 recovers from 404
    // only, 0.1.44 from nothing, 0.1.38 never answers (HANG: FAILED).
    let controls = [
        ("0.15.1", "STUCK", ["SEAMLESS", "STUCK", "STUCK"]),
        ("0.1.44", "STUCK", ["STUCK", "STUCK", "STUCK"]),
        ("0.1.38", "FAILED", ["HANG", "HANG", "HANG"]),
    ];
    for (version, overall, each) in controls {
        let dir = project(&sb, version, &format!("p-{version}"));
        let pkg = dir.join("node_modules/mcp-remote").canonicalize().unwrap();
        let (original, chunk, patched) = original_of(version);
        let path = dir.to_str().unwrap();
        let earlier = remote_backups(&sb);
        let o = sb.run(&["apply", "--path", path]);
        assert_eq!(code(&o), 0, "{version}: {}{}", stdout(&o), stderr(&o));
        let mut made = remote_backups(&sb);
        made.retain(|b| !earlier.contains(b));
        let id = made.remove(0);
        let after = tree(&pkg);

        let (o, v) = verify_answers(&sb, &["--backup", "--path", path]);
        assert_eq!(code(&o), 1, "{version}: {v:#}\n{}", stderr(&o));
        let install = &v["installs"][0];
        assert_eq!(install["target"], "mcp-remote", "{v:#}");
        assert_eq!(install["error"], Value::Null, "{v:#}");
        assert_eq!(install["backup"], id.as_str(), "{v:#}");
        assert_eq!(install["sha256"], original.as_str(), "{v:#}");
        assert_eq!(install["state"], "affected", "{v:#}");
        assert_eq!(install["state_before"], "patched", "{v:#}");
        assert_eq!(install["changed"], false, "{v:#}");
        assert_eq!(
            install["file"],
            sb.dsh_home()
                .join("backups/mcp-remote-session-loss")
                .join(&id)
                .join("index.js")
                .to_str()
                .unwrap(),
            "{v:#}"
        );
        assert_eq!(install["overall"], overall, "{version}: {v:#}");
        assert_eq!(
            install["note"],
            "the saved original, run as the control: judged as any file, so STUCK here is the bug the patch fixes, reproduced"
        );
        // The release's own recovery is what ran, not the patched chunk.
        let found: Vec<String> = verdicts(install).into_iter().map(|(_, v, _)| v).collect();
        assert_eq!(found, each, "{version}: {v:#}");

        assert_eq!(
            tree(&pkg),
            after,
            "{version}: verify --backup changed the install"
        );
        assert_eq!(sha256_file(&pkg.join(&chunk)), patched, "{version}");
        assert_eq!(leftovers(&pkg), Vec::<PathBuf>::new(), "{version}");
    }

    // As a person reads it.
    let path = sb.root().join("p-0.15.1");
    let o = output_within_five_minutes(sb.command(&[
        "verify",
        "--backup",
        "--scenario",
        "expired-400",
        "--path",
        path.to_str().unwrap(),
    ]));
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = sb.normalize(&o.stdout);
    assert!(
        out.starts_with("[SANDBOX]/p-0.15.1/node_modules/mcp-remote (backup "),
        "{out}"
    );
    assert!(
        out.lines().next().unwrap().ends_with(", the control)"),
        "{out}"
    );
    assert!(
        out.ends_with(
            "note: the saved original, run as the control: judged as any file, so STUCK here is the bug the patch fixes, reproduced\nSTUCK\n"
        ),
        "{out}"
    );
}

#[test]
fn an_unknown_release_the_patch_fits_is_written_after_its_patched_copy_passes_verify() {
    let sb = Sandbox::new();
    let dir = project(&sb, "0.15.1", "p");
    let pkg = dir.join("node_modules/mcp-remote").canonicalize().unwrap();
    let chunk = pkg.join(chunk_of("0.15.1"));
    let path = dir.to_str().unwrap();
    let edited = edit_file(&chunk, |t| t + "\n// local edit\n");
    assert_eq!(
        status_json(&sb, &["--path", path])["installs"][0]["state"],
        "modified"
    );

    let o = sb.run(&["apply", "--yes", "--path", path]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let now = sha256_file(&chunk);
    assert_ne!(now, edited);
    let ids = remote_backups(&sb);
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "patched {PKG} (0.15.1)\n  sha256 now {}, file as it was (modified, not a revision mcpatch knows) saved as backup {}\n  verified first (a revision mcpatch does not know): all 15 scenario runs of the patched copy met the current patch revision's expectations (overall SEAMLESS, node {})\nrestart the MCP hosts that run mcp-remote so they load the patched bridge; check it with `mcpatch verify --path [SANDBOX]/p`\n",
            short(&now),
            ids[0],
            node22_version()
        )
    );
    // The patched copy ran as the bridge, from a copy of its folder.
    let err = sb.normalize(&o.stderr);
    assert!(
        err.starts_with(&format!("{PKG}/dist/chunk-KJCT2FXL.js is a revision mcpatch does not know: verifying the patched copy before writing it\n{PKG} (a copy to check): mcp-remote as a stdio bridge\n")),
        "{err}"
    );
    // One line per scenario as each ends (the first runs alone, the rest `--jobs` at a time).
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with('[') && l.contains("/15] "))
        .collect();
    assert_eq!(lines.len(), 15, "{err}");
    assert!(
        lines[0].starts_with("[1/15] expired-404: SEAMLESS at "),
        "{err}"
    );
    for (n, line) in lines.iter().enumerate() {
        assert!(line.starts_with(&format!("[{}/15] ", n + 1)), "{err}");
    }
    for want in [
        "] cut-mid-call: NOT-RETRIED at ",
        "] refused-once: RECOVERED at ",
        "] late-answers: SEAMLESS at ",
    ] {
        assert_eq!(
            lines.iter().filter(|l| l.contains(want)).count(),
            1,
            "{want}: {err}"
        );
    }
    assert_eq!(
        status_json(&sb, &["--path", path])["installs"][0]["state"],
        "patched"
    );
    assert_eq!(remote_backups(&sb).len(), 1);
    assert_eq!(leftovers(&pkg), Vec::<PathBuf>::new());
}

#[test]
fn an_unknown_release_whose_patched_copy_stays_stuck_is_refused_with_its_verdicts() {
    let sb = Sandbox::new();
    let dir = project(&sb, "0.15.1", "p");
    let pkg = dir.join("node_modules/mcp-remote").canonicalize().unwrap();
    let chunk = pkg.join(chunk_of("0.15.1"));
    let path = dir.to_str().unwrap();
    // Outside every hunk: the release's re-initialize always fails.
    let broken = edit_file(&chunk, |t| {
        t.replacen("if (!lastInitialize) {", "if (lastInitialize) {", 1)
    });
    let before = tree(&pkg);

    let o = sb.run(&["apply", "--yes", "--path", path]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = sb.normalize(&o.stdout);
    let head = format!(
        "refused: {PKG} (0.15.1)\n  sha256 {broken} is not a revision mcpatch knows, and its patched copy did not recover as the current patch revision must (verify: STUCK); the install is untouched\n"
    );
    assert!(out.starts_with(&head), "{out}");
    // Each failing verdict, one a line.
    assert!(
        out.contains("\n  expired-400: STUCK (expected SEAMLESS): no new initialize after the session was lost; "),
        "{out}"
    );
    assert!(
        out[head.len()..]
            .lines()
            .all(|l| l.starts_with("  ") && l.contains(" (expected ")),
        "{out}"
    );
    assert_eq!(sha256_file(&chunk), broken, "untouched");
    assert_eq!(tree(&pkg), before);
    assert_eq!(remote_backups(&sb), Vec::<String>::new());
    assert_eq!(leftovers(&pkg), Vec::<PathBuf>::new());
}

/// `verify --json --path PATH` with each of `scenarios` named.
pub(super) fn verify_named(sb: &Sandbox, path: &str, scenarios: &[&str]) -> (Output, Value) {
    let mut all = vec!["verify", "--json", "--path", path];
    for s in scenarios {
        all.extend(["--scenario", s]);
    }
    let o = output_within_five_minutes(sb.command(&all));
    let v = json(&o);
    (o, v)
}
