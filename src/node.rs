//! Finds the node binary mcpatch runs for checks and the verify harness, and
//! reports its version and whether it has what the host needs (Node >= 22).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// A usable node binary.
#[derive(Debug, Clone)]
pub struct Node {
    pub path: PathBuf,
    /// `process.version`, e.g. `v22.23.5`.
    pub version: String,
    /// Whether `Promise.withResolvers` exists (Node >= 22, which the host requires).
    pub has_with_resolvers: bool,
}

impl Node {
    /// Run this node with `args` and collect its output.
    pub fn output<I, S>(&self, args: I) -> Result<std::process::Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        Command::new(&self.path)
            .args(args)
            .output()
            .map_err(|e| Error::NodeUnavailable {
                node: self.path.display().to_string(),
                detail: e.to_string(),
            })
    }
}

/// `--node PATH`, else `node` on PATH.
pub fn find(explicit: Option<&Path>) -> Result<Node> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => which::which("node").map_err(|e| Error::NodeUnavailable {
            node: "node".into(),
            detail: format!("not found on PATH ({e})"),
        })?,
    };
    let out = Command::new(&path)
        .args(["-p", "process.version + ' ' + typeof Promise.withResolvers"])
        .output()
        .map_err(|e| Error::NodeUnavailable {
            node: path.display().to_string(),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(Error::NodeUnavailable {
            node: path.display().to_string(),
            detail: format!(
                "exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace();
    let version = parts.next().unwrap_or("unknown").to_string();
    let has_with_resolvers = parts.next() == Some("function");
    Ok(Node {
        path,
        version,
        has_with_resolvers,
    })
}
