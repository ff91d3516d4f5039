//! Runs the bundled JS harness with node against one target file and one fake
//! server, and collects the JSON lines it reports.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::scenario::{HarnessCall, Plan, IDLE_FOR};
use crate::error::{Error, Result};
use crate::node::Node;

/// The harness source, bundled in the binary.
pub const HARNESS_JS: &str = include_str!("harness.mjs");

/// Reconnect policy handed to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// A short policy so scenarios run fast (100 ms first backoff).
    Short,
    /// The package's own default (no `reconnect` config: 500 ms first backoff).
    Default,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Short => "short",
            Policy::Default => "default",
        }
    }

    fn config(self) -> Value {
        match self {
            Policy::Short => json!({"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 5}),
            Policy::Default => Value::Null,
        }
    }

    /// How long the harness keeps calling after the session was lost.
    pub fn deadline(self) -> Duration {
        match self {
            Policy::Short => Duration::from_millis(4000),
            Policy::Default => Duration::from_millis(8000),
        }
    }
}

/// What one harness run reported.
#[derive(Debug, Clone, Default)]
pub struct HarnessRun {
    pub node_version: Option<String>,
    pub shim: bool,
    pub calls: Vec<HarnessCall>,
    pub tools_before: Vec<String>,
    pub tools_after: Vec<String>,
    pub logs: Vec<String>,
    pub fatal: Option<String>,
}

/// Write the harness to a temp folder and run it.
pub async fn run(
    node: &Node,
    target: &Path,
    url: &str,
    plan: Plan,
    policy: Policy,
) -> Result<HarnessRun> {
    let dir = crate::stage::scratch_dir("mcpatch-harness-")?;
    let script = dir.path().join("harness.mjs");
    std::fs::write(&script, HARNESS_JS)
        .map_err(|e| Error::io("write", &script, e, crate::stage::SCRATCH_HELP))?;
    let control_base = url.trim_end_matches("/mcp").to_string();
    let config = json!({
        "url": url,
        "controlBase": control_base,
        "serverName": "fake",
        "plan": plan.as_str(),
        "idleMs": IDLE_FOR.as_millis() as u64,
        "deadlineMs": policy.deadline().as_millis() as u64,
        "pollMs": 25,
        "settleMs": 700,
        "callTimeoutMs": 3000,
        "reconnect": policy.config(),
    });
    let mut child = tokio::process::Command::new(&node.path)
        .arg(&script)
        .arg(crate::stage::file_url(target))
        .arg(config.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Error::NodeUnavailable {
            node: node.path.display().to_string(),
            detail: e.to_string(),
        })?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stdout).lines();
    let mut out = HarnessRun::default();
    let limit = policy.deadline() + IDLE_FOR + Duration::from_secs(25);
    let collect = async {
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                out.logs.push(line);
                continue;
            };
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            let list = |k: &str| {
                v.get(k)
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            match s("event").as_deref() {
                Some("node") => {
                    out.node_version = s("version");
                    out.shim = v.get("shim").and_then(Value::as_bool).unwrap_or(false);
                }
                Some("ready") => out.tools_before = list("tools"),
                Some("tools") => out.tools_after = list("tools"),
                Some("call") => out.calls.push(HarnessCall {
                    name: s("name").unwrap_or_default(),
                    ok: v.get("ok").and_then(Value::as_bool).unwrap_or(false),
                    error: s("error"),
                }),
                Some("log") => out.logs.push(format!(
                    "{}: {}",
                    s("level").unwrap_or_default(),
                    s("msg").unwrap_or_default()
                )),
                Some("fatal") => out.fatal = s("error"),
                _ => {}
            }
        }
    };
    if tokio::time::timeout(limit, collect).await.is_err() {
        let _ = child.kill().await;
        return Err(Error::Harness {
            path: target.to_path_buf(),
            detail: format!("the harness did not finish within {} s", limit.as_secs()),
        });
    }
    let status = child.wait().await.map_err(|e| Error::Harness {
        path: target.to_path_buf(),
        detail: e.to_string(),
    })?;
    if let Some(fatal) = &out.fatal {
        return Err(Error::Harness {
            path: target.to_path_buf(),
            detail: fatal.clone(),
        });
    }
    if !status.success() {
        let mut err = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err).await;
        return Err(Error::Harness {
            path: target.to_path_buf(),
            detail: format!("node exited with {status}: {}", err.trim()),
        });
    }
    Ok(out)
}
