//! The libraries built on the MCP TypeScript SDK, as users run them: a copy of
//! a real npm project (test-fixtures/mcp-sdk/fetch.sh) drives its client
//! (`@langchain/mcp-adapters`, `@mastra/mcp`, `@openai/agents`, or the plain
//! SDK `Client` of an older release) against the real TypeScript SDK server,
//! restarted mid-session as a new process on the same port and answering the
//! lost session with 404, 400 or 401 (test-fixtures/mcp-sdk/prove.mjs). Before
//! `mcpatch apply` every call after a restart fails (STUCK); after it every
//! call is answered, with exactly one new session per restart, and the
//! server's ordinary failures still reach the caller once (SEAMLESS). No
//! change to the library's own code.

use serde_json::Value;

use super::*;

/// Copy a fetched project into the sandbox (hard links: `apply` replaces a
/// file by renaming a new one over it, so the cache keeps its bytes).
pub(super) fn project_copy(sb: &Sandbox, name: &str) -> PathBuf {
    let src = cache().join("mcp-sdk/projects").join(name);
    assert!(
        src.join(".done").is_file(),
        "the real npm project {name} is missing from {}: run test-fixtures/mcp-sdk/fetch.sh (needs npm and the npm registry)",
        src.display()
    );
    let dest = sb.root().join(name);
    let st = std::process::Command::new("cp")
        .arg("-al")
        .arg(&src)
        .arg(&dest)
        .status()
        .unwrap();
    assert!(st.success(), "cp -al {} {}", src.display(), dest.display());
    dest.canonicalize().unwrap()
}

/// One run of prove.mjs: the client `kind` of `project` across two server
/// restarts answering `answer`; its JSON verdict.
fn prove(project: &Path, kind: &str, answer: &str) -> Value {
    let node = node22_dir().join("node");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/mcp-sdk/prove.mjs");
    let mut cmd = std::process::Command::new(&node);
    cmd.arg(&script)
        .arg("--node")
        .arg(&node)
        .args(["--kind", kind, "--answer", answer, "--project"])
        .arg(project)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let o = output_within(
        cmd,
        std::time::Duration::from_secs(120),
        &format!("prove.mjs --kind {kind} --answer {answer}"),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "prove.mjs --kind {kind} --answer {answer} could not run: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "prove.mjs printed no JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// prove.mjs on each of `answers` side by side (each run waits on its server's
/// restarts, not on the CPU); the verdicts in the order of `answers`.
fn prove_each(project: &Path, kind: &str, answers: &[&str]) -> Vec<Value> {
    std::thread::scope(|s| {
        let runs: Vec<_> = answers
            .iter()
            .map(|answer| s.spawn(move || prove(project, kind, answer)))
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// What a run showed, in one line a failure can print whole.
fn summary(v: &Value) -> String {
    format!(
        "{} after_restart={} new_sessions={} sent_twice={}",
        v["verdict"].as_str().unwrap_or("?"),
        v["after_restart"],
        v["new_sessions"],
        v["sent_twice"]
    )
}

/// The client `kind` of the project `name`: STUCK on each of `answers` as
/// installed, then `mcpatch apply --path` the project, then SEAMLESS on each
/// (every call after both restarts answered, one new session per restart,
/// nothing sent twice).
fn stuck_before_apply_and_seamless_after(name: &str, kind: &str, answers: &[&str]) {
    let sb = Sandbox::new();
    let project = project_copy(&sb, name);
    let p = project.to_str().unwrap();
    for (answer, v) in answers.iter().zip(prove_each(&project, kind, answers)) {
        assert_eq!(
            v["verdict"],
            "STUCK",
            "{kind} of {name}, unpatched, on {answer}: {}\n{v:#}",
            summary(&v)
        );
    }
    let o = sb.run(&["apply", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    for (answer, v) in answers.iter().zip(prove_each(&project, kind, answers)) {
        assert_eq!(
            (
                v["verdict"].as_str(),
                &v["new_sessions"],
                &v["sent_twice"],
                v["after_restart"]["failed"].as_u64()
            ),
            (
                Some("SEAMLESS"),
                &serde_json::json!([1, 1]),
                &Value::Bool(false),
                Some(0)
            ),
            "{kind} of {name}, after mcpatch apply, on {answer}: {}\n{v:#}",
            summary(&v)
        );
    }
}

/// [`stuck_before_apply_and_seamless_after`] for each (project, kind,
/// answers), each in a sandbox of its own, side by side.
fn side_by_side(runs: &[(&str, &str, &[&str])]) {
    std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .iter()
            .map(|&(name, kind, answers)| {
                s.spawn(move || stuck_before_apply_and_seamless_after(name, kind, answers))
            })
            .collect();
        for h in handles {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });
}

const ALL: &[&str] = &["404", "400", "401"];

#[test]
fn langchain_mcp_adapters_is_stuck_before_apply_and_seamless_after_on_404_400_and_401() {
    stuck_before_apply_and_seamless_after("langchain-1.1.4", "langchain", ALL);
}

#[test]
fn langchain_mcp_adapters_with_its_reconnect_option_is_stuck_before_apply_and_seamless_after() {
    stuck_before_apply_and_seamless_after("langchain-1.1.4", "langchain-reconnect", &["404"]);
}

#[test]
fn mastra_mcp_on_client_2_0_0_is_stuck_before_apply_and_seamless_after_on_404_400_and_401() {
    stuck_before_apply_and_seamless_after("mastra-2.0.0", "mastra", ALL);
}

#[test]
fn openai_agents_on_client_2_4_0_is_stuck_before_apply_and_seamless_after_on_404_400_and_401() {
    stuck_before_apply_and_seamless_after("openai-agents-0.20.0", "openai", ALL);
}

#[test]
fn the_plain_sdk_client_of_1_32_2_esm_and_cjs_is_stuck_before_apply_and_seamless_after() {
    side_by_side(&[
        ("sdk-1.32.2", "sdk1-esm", ALL),
        ("sdk-1.32.2", "sdk1-cjs", ALL),
    ]);
}

#[test]
fn older_sdk_releases_1_10_1_17_and_1_24_are_stuck_before_apply_and_seamless_after() {
    side_by_side(&[
        ("sdk-1.10.0", "sdk1-cjs", &["400"]),
        ("sdk-1.17.0", "sdk1-esm", &["401"]),
        ("sdk-1.24.0", "sdk1-cjs", &["404"]),
    ]);
}

#[test]
fn the_plain_client_2_x_is_stuck_before_apply_and_seamless_after() {
    side_by_side(&[
        ("client-2.4.0", "client2-cjs", &["401"]),
        ("client-2.0.0", "client2-esm", &["400"]),
    ]);
}
