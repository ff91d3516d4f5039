//! The real gemini-cli, started headless for one scenario: `node <entry> -p
//! <prompt> --yolo -o json` in a private scratch home whose only MCP server is
//! the fake server, and whose model is mcpatch's fake Gemini API. The CLI gets
//! none of the user's settings, keys or variables (its environment is
//! cleared; system settings are pointed at empty files in the scratch folder);
//! every address it is given is on 127.0.0.1.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use crate::error::Result;
use crate::node::Node;
use crate::stage::Scratch;
use crate::verify::process::{GroupChild, StderrTail};

/// What the CLI is asked, for its own logs: the fake model drives the calls.
const PROMPT: &str = "mcpatch verify: call the tools the model asks for.";
/// The name of the fake server in the CLI's settings.
pub const SERVER_NAME: &str = "fake";
/// Bytes of the CLI's stdout kept (its JSON result, for a BROKEN note).
const STDOUT_KEPT: usize = 4096;

/// A running CLI; dropping it kills its process group.
pub struct Cli {
    child: GroupChild,
    _home: Scratch,
    /// Dropped after the CLI is killed and reaped (fields drop in order): the
    /// last CLI of an install removes the shared cache, which no CLI can then
    /// write again.
    _compile_cache: Arc<Scratch>,
    /// Becomes true once the CLI's stdout ended (it exited).
    pub ended: watch::Receiver<bool>,
    stdout: tokio::task::JoinHandle<String>,
}

impl Cli {
    /// Start the CLI at `entry` with the fake server at `server_url` (each MCP
    /// request limited to `timeout`) and the fake model at `model_url`; node
    /// keeps the CLI's compiled code in `compile_cache` (a private folder the
    /// runs of one install share: each CLI after the first starts faster;
    /// removed with the last of them).
    pub fn start(
        node: &Node,
        entry: &Path,
        server_url: &str,
        timeout: Duration,
        model_url: &str,
        compile_cache: Arc<Scratch>,
    ) -> Result<Cli> {
        let home = crate::stage::scratch_dir("mcpatch-gemini-home-")?;
        let settings = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "mcpServers": {SERVER_NAME: {
                "httpUrl": server_url,
                "timeout": timeout.as_millis() as u64,
                "trust": true,
            }},
        });
        home.write(".gemini/settings.json", settings.to_string().as_bytes())?;
        home.write("project/.keep", b"")?;
        let root = home.path();
        let mut cmd = tokio::process::Command::new(&node.path);
        cmd.arg(entry)
            .args(["-p", PROMPT, "--yolo", "-o", "json"])
            .current_dir(root.join("project"));
        // The one rule for what mcpatch starts by itself (child_env.rs), then gemini-cli's own.
        crate::verify::process::env::clear(cmd.as_std_mut(), root);
        cmd.env("USERPROFILE", root)
            .env("GEMINI_API_KEY", "mcpatch-fake-key")
            .env("GOOGLE_GEMINI_BASE_URL", model_url)
            .env(
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
                root.join("system-settings.json"),
            )
            .env(
                "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
                root.join("system-defaults.json"),
            )
            .env("GEMINI_CLI_NO_RELAUNCH", "true")
            .env("NODE_COMPILE_CACHE", compile_cache.path())
            .env("NO_COLOR", "1")
            .env("NO_BROWSER", "1")
            .env("CI", "1");
        let (child, stdin, mut stdout) =
            GroupChild::spawn_command(cmd, &node.path.display().to_string())?;
        drop(stdin);
        let (tx, ended) = watch::channel(false);
        let stdout = tokio::spawn(async move {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let room = STDOUT_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            let _ = tx.send(true);
            String::from_utf8_lossy(&kept).into_owned()
        });
        Ok(Cli {
            child,
            _home: home,
            _compile_cache: compile_cache,
            ended,
            stdout,
        })
    }

    /// The CLI's stderr (its last lines).
    pub fn stderr(&self) -> std::sync::Arc<std::sync::Mutex<StderrTail>> {
        self.child.stderr.clone()
    }

    /// Give the CLI `grace` to exit by itself, then kill its group; its stdout's start.
    pub async fn finish(self, grace: Duration) -> (Option<std::process::ExitStatus>, String) {
        let status = self.child.finish(grace).await;
        let out = tokio::time::timeout(Duration::from_secs(2), self.stdout)
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_default();
        (status, out)
    }
}
