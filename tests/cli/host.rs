//! A host that cannot start (issue 22, item 5) on the real global install of
//! `@deepseek-ai/dsh@0.1.0-rc.8` as npm installs it today (fetched by
//! scripts/fetch-fixtures.sh): status and apply say DSH cannot start, why, and
//! that it is not the patch; DSH, started headless on Node 22 against a fake
//! model API on 127.0.0.1, really dies; after the printed fix (run as printed,
//! npm offline from a cache holding the one tarball it fetches) it starts,
//! answers its one task and exits 0, and status has no note any more.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

const HOST_VERSION: &str = "0.1.0-rc.8";
const TASK: &str = "say the readiness word";
/// What the fake model answers; a started DSH headless prints it and exits 0.
const READY: &str = "MCPATCH-HOST-READY";

fn dsh_host_fixture() -> PathBuf {
    let p = cache().join("dsh-host").join(HOST_VERSION);
    assert!(
        p.join(".done").is_file(),
        "the real host @deepseek-ai/dsh@{HOST_VERSION} is missing from {}: run scripts/fetch-fixtures.sh (needs npm and the npm registry)",
        p.display()
    );
    p
}

/// A copy of the real global install in the sandbox: `<root>/prefix`. Files
/// are hard links into the fixture except those that change: the client's
/// lib/index.js and package.json, and the whole HMR plugin folder.
fn copy_host(sb: &Sandbox) -> PathBuf {
    let prefix = sb.root().join("prefix");
    let st = std::process::Command::new("cp")
        .arg("-al")
        .arg(dsh_host_fixture())
        .arg(&prefix)
        .status()
        .unwrap();
    assert!(st.success());
    let nm = prefix.join("lib/node_modules/@deepseek-ai/dsh/node_modules/@deepseek-ai");
    for f in ["dsh-mcp-client/lib/index.js", "dsh-mcp-client/package.json"] {
        let target = nm.join(f);
        let bytes = std::fs::read(&target).unwrap();
        std::fs::remove_file(&target).unwrap();
        std::fs::write(&target, bytes).unwrap();
    }
    let hmr = nm.join("cordis-plugin-hmr");
    std::fs::remove_dir_all(&hmr).unwrap();
    let st =
        std::process::Command::new("cp")
            .arg("-a")
            .arg(dsh_host_fixture().join(
                "lib/node_modules/@deepseek-ai/dsh/node_modules/@deepseek-ai/cordis-plugin-hmr",
            ))
            .arg(&hmr)
            .status()
            .unwrap();
    assert!(st.success());
    prefix
}

/// A fake DeepSeek chat-completions API on 127.0.0.1, for as long as the value
/// lives: every request is kept, every answer is one streamed message [`READY`].
struct FakeModel {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
    _runtime: tokio::runtime::Runtime,
}

impl FakeModel {
    fn start() -> FakeModel {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let app = axum::Router::new().route(
            "/chat/completions",
            axum::routing::post(move |body: String| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(body);
                    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
                        serde_json::json!({
                            "id": "c1", "object": "chat.completion.chunk", "created": 0,
                            "model": "deepseek-v4-flash",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                        })
                    };
                    let stream = format!(
                        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
                        chunk(
                            serde_json::json!({"role": "assistant", "content": READY}),
                            serde_json::Value::Null
                        ),
                        chunk(serde_json::json!({}), serde_json::json!("stop"))
                    );
                    ([("content-type", "text/event-stream")], stream)
                }
            }),
        );
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move { axum::serve(listener, app).await });
        FakeModel {
            url,
            requests,
            _runtime: runtime,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// `dsh --profile headless TASK` from the copy, on Node 22, against `model`,
/// with only the environment it needs; killed (and the test failed) if it has
/// not ended within the deadline.
fn run_dsh_headless(sb: &Sandbox, prefix: &Path, model: &FakeModel) -> Output {
    let path =
        std::env::join_paths([node22_dir(), PathBuf::from("/usr/bin"), "/bin".into()]).unwrap();
    let mut child = std::process::Command::new(prefix.join("bin/dsh"))
        .args(["--profile", "headless", TASK])
        .current_dir(sb.root())
        .env_clear()
        .env("PATH", path)
        .env("HOME", sb.root().join("home"))
        .env("DSH_HOME", sb.dsh_home())
        .env("DEEPSEEK_BASE_URL", &model.url)
        .env("DEEPSEEK_API_KEY", "test-key")
        .env("DSH_TELEMETRY_DISABLED", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(240);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let o = child.wait_with_output().unwrap();
            panic!(
                "dsh --profile headless did not end within 240 s\nstdout: {}\nstderr: {}",
                stdout(&o),
                stderr(&o)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

fn host_dir() -> &'static str {
    "[SANDBOX]/prefix/lib/node_modules/@deepseek-ai/dsh"
}

/// What status and apply say of the host, in a few words.
const HEADLINE: &str = "DSH 0.1.0-rc.8 cannot start; DSH's own defect, NOT the mcpatch patch";
const SHORT_WHY: &str = "its cordis-plugin-hmr 1.0.19 has no registerConfig(); its web and headless profiles switch the `hmr` row off";

fn expected_what() -> String {
    "DSH 0.1.0-rc.8 cannot start: `dsh web` and `dsh --profile headless` die at start-up with `dsh: user patch-layer watching requires the Cordis HMR service`; this is DSH's own defect, NOT the mcpatch patch".to_string()
}

fn expected_why() -> String {
    format!(
        "its @deepseek-ai/dsh-app-boot calls registerConfig() on the Cordis HMR service, and the @deepseek-ai/cordis-plugin-hmr 1.0.19 that npm installed for its `^1.0.16` ({}/node_modules/@deepseek-ai/cordis-plugin-hmr) has no registerConfig() (1.0.16 and 1.0.17 have it); and its web and headless profiles switch the `hmr` row off, and DSH's own late start of the HMR service is not ready when the boot asks for it, unless [SANDBOX]/home/.dsh/cordis.patch.yml switches the row on",
        host_dir()
    )
}

fn expected_fix() -> String {
    format!(
        "cd {}/node_modules/@deepseek-ai && npm pack --silent @deepseek-ai/cordis-plugin-hmr@1.0.17 && rm -rf cordis-plugin-hmr && mkdir cordis-plugin-hmr && tar xzf deepseek-ai-cordis-plugin-hmr-1.0.17.tgz -C cordis-plugin-hmr --strip-components=1 && rm deepseek-ai-cordis-plugin-hmr-1.0.17.tgz && mkdir -p [SANDBOX]/home/.dsh && printf '\\n- id: hmr\\n  disabled: false\\n' >> [SANDBOX]/home/.dsh/cordis.patch.yml",
        host_dir()
    )
}

/// The JSON `host_defect` of the one install, with the sandbox path as [SANDBOX].
fn host_defect(sb: &Sandbox, prefix: &Path) -> serde_json::Value {
    let v = status_json(sb, &["--path", prefix.to_str().unwrap()]);
    let installs = v["installs"].as_array().unwrap();
    assert_eq!(installs.len(), 1, "{v:#}");
    let text = serde_json::to_string(&installs[0]["host_defect"]).unwrap();
    serde_json::from_str(&text.replace(&sb.root().display().to_string(), "[SANDBOX]")).unwrap()
}

#[test]
fn status_and_apply_say_a_fresh_dsh_0_1_0_rc_8_cannot_start_why_and_that_it_is_not_the_patch() {
    let sb = Sandbox::new();
    let prefix = copy_host(&sb);
    let client = "[SANDBOX]/prefix/lib/node_modules/@deepseek-ai/dsh/node_modules/@deepseek-ai/dsh-mcp-client";

    let o = sb.run(&["status", "--path", prefix.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        format!(
            "PATH  VERSION  STATE  NEXT STEP\n\
             {client}  0.1.0-rc.8  affected  run `mcpatch apply --path [SANDBOX]/prefix`\n\
             \x20 sha256 {} (original)\n\
             \x20 note: affected: the patch targets this revision\n\
             \x20 host: {HEADLINE}\n\
             \x20 why: {SHORT_WHY}\n\
             \x20 fix: mcpatch status --path [SANDBOX]/prefix --host-fix | sh\n\
             1 install(s): 1 affected, 0 patched, 0 outdated, 0 upstream-fixed, 0 modified, 0 unsupported\n",
            short(ORIGINAL),
        )
    );
    assert_eq!(
        host_defect(&sb, &prefix),
        serde_json::json!({
            "host": host_dir(),
            "what": expected_what(),
            "why": expected_why(),
            "fix": expected_fix(),
        })
    );

    // apply patches the client, and before its advice to restart DSH says the
    // host cannot start and that it is not the patch.
    let o = sb.run(&["apply", "--path", prefix.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = sb.normalize(&o.stdout);
    let advice = format!(
        "restart DSH so it loads the patched client; check it with `mcpatch verify --path [SANDBOX]/prefix`\n\
         but the DSH host at {} cannot start, and that is NOT the patch: fix it first\n\
         \x20 host: {HEADLINE}\n\
         \x20 why: {SHORT_WHY}\n\
         \x20 fix: mcpatch status --path [SANDBOX]/prefix --host-fix | sh\n",
        host_dir(),
    );
    assert!(out.ends_with(&advice), "{out}");
    // Patched, the install needs nothing; its host still needs the fix.
    let o = sb.run(&["status", "--path", prefix.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(
        sb.normalize(&o.stdout)
            .contains(&format!("  host: {HEADLINE}\n")),
        "{}",
        stdout(&o)
    );

    // What status says is true: DSH dies at start-up and never asks the model.
    let model = FakeModel::start();
    let o = run_dsh_headless(&sb, &prefix, &model);
    assert_eq!(
        code(&o),
        1,
        "stdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );
    assert!(
        stderr(&o)
            .contains("Error: dsh: user patch-layer watching requires the Cordis HMR service\n"),
        "{}",
        stderr(&o)
    );
    assert_eq!(model.requests(), Vec::<String>::new());
}

#[test]
fn after_the_printed_fix_dsh_starts_headless_on_node_22_answers_and_the_note_is_gone() {
    let sb = Sandbox::new();
    let prefix = copy_host(&sb);
    // The fix line status prints, run as printed (mcpatch on PATH, as a user has it).
    let o = sb.run(&["status", "--path", prefix.to_str().unwrap()]);
    let fix = stdout(&o)
        .lines()
        .find_map(|l| l.strip_prefix("    fix: "))
        .unwrap_or_else(|| panic!("no fix line: {}", stdout(&o)))
        .to_string();
    assert_eq!(
        fix,
        format!("mcpatch status --path {} --host-fix | sh", prefix.display())
    );
    // The fix as printed; its one download comes from a copy of a cache that holds it.
    let npm_cache = sb.root().join("npm-cache");
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(cache().join("dsh-host/npm-cache"))
        .arg(&npm_cache)
        .status()
        .unwrap();
    assert!(st.success());
    let mcpatch_dir = assert_cmd::cargo::cargo_bin("mcpatch")
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths([
        mcpatch_dir,
        node22_dir(),
        PathBuf::from("/usr/bin"),
        "/bin".into(),
    ])
    .unwrap();
    let o = std::process::Command::new("sh")
        .args(["-c", &fix])
        .env("PATH", path)
        .env("HOME", sb.root().join("home"))
        .env("DSH_HOME", sb.dsh_home())
        .env("MCPATCH_SYSTEM_ROOTS", "")
        .env("npm_config_cache", &npm_cache)
        .env("npm_config_offline", "true")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the fix failed: {fix}\nstdout: {}\nstderr: {}",
        stdout(&o),
        stderr(&o)
    );

    let v = status_json(&sb, &["--path", prefix.to_str().unwrap()]);
    assert_eq!(v["installs"][0].get("host_defect"), None, "{v:#}");
    let o = sb.run(&["status", "--path", prefix.to_str().unwrap()]);
    assert!(!stdout(&o).contains("host:"), "{}", stdout(&o));
    let o = sb.run(&["apply", "--path", prefix.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).ends_with(
            &format!("restart DSH so it loads the patched client; check it with `mcpatch verify --path {}`\n", prefix.display())
        ),
        "{}",
        stdout(&o)
    );
    let o = sb.run(&["status", "--path", prefix.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "patched, its host fixed: {}", stdout(&o));

    // Started: it boots every profile layer, asks the model its task, prints
    // the answer and ends by itself with 0.
    let model = FakeModel::start();
    let o = run_dsh_headless(&sb, &prefix, &model);
    assert_eq!(
        (code(&o), stdout(&o).as_str()),
        (0, format!("{READY}\n").as_str()),
        "stderr: {}",
        stderr(&o)
    );
    assert!(
        model.requests().iter().any(|body| body.contains(TASK)),
        "{:?}",
        model.requests()
    );
}
