//! What the process's environment offers mcpatch (PATH, the homes, npm's
//! configuration variables, the working folder): read once, passed down, and
//! set explicitly by tests and sandboxes. Every step reads it; it reads none.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// What the environment offers the search; tests and sandboxes set it explicitly.
#[derive(Debug, Clone)]
pub struct Environment {
    pub path_var: Option<OsString>,
    pub home: Option<PathBuf>,
    pub dsh_home: Option<PathBuf>,
    /// `MCPATCH_HOME`: where mcpatch keeps its state (backups), whatever else is set.
    pub mcpatch_home: Option<PathBuf>,
    /// `XDG_STATE_HOME`, for mcpatch's state when no other home applies.
    pub xdg_state_home: Option<PathBuf>,
    pub pnpm_home: Option<PathBuf>,
    /// Replaces the list of usual global roots when set (`MCPATCH_SYSTEM_ROOTS`).
    pub system_roots: Option<Vec<PathBuf>>,
    /// The folder the fixed system roots (`/usr/lib/node_modules`, ...) are
    /// under: `MCPATCH_SYSROOT`, default `/`.
    pub sysroot: PathBuf,
    /// The whole environment in order, for npm's configuration (`npm_config_*`, `${VAR}`).
    pub vars: Vec<(OsString, OsString)>,
    /// The working folder, for relative values in npm's configuration.
    pub cwd: PathBuf,
    /// Ask `npm root -g` itself instead of reading npm's configuration (`--npm`).
    pub ask_npm: bool,
}

impl Environment {
    pub fn from_process() -> Self {
        Self::from_vars(
            std::env::vars_os().collect(),
            std::env::current_dir().unwrap_or_default(),
        )
    }

    /// The environment these variables describe (the first of a name counts, as with getenv).
    pub fn from_vars(vars: Vec<(OsString, OsString)>, cwd: PathBuf) -> Self {
        let get = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        Environment {
            path_var: get("PATH"),
            home: get("HOME").map(PathBuf::from),
            dsh_home: get("DSH_HOME")
                .filter(|v| !v.to_string_lossy().trim().is_empty())
                .map(PathBuf::from),
            mcpatch_home: get("MCPATCH_HOME")
                .filter(|v| !v.to_string_lossy().trim().is_empty())
                .map(PathBuf::from),
            xdg_state_home: get("XDG_STATE_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute()),
            pnpm_home: get("PNPM_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            system_roots: get("MCPATCH_SYSTEM_ROOTS").map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            }),
            sysroot: get("MCPATCH_SYSROOT")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/")),
            vars,
            cwd,
            ask_npm: false,
        }
    }

    /// `$DSH_HOME`, or `~/.dsh`, resolved as DSH resolves it: a blank value
    /// is unset, and a leading `~` means the home folder.
    pub fn dsh_home(&self) -> Result<PathBuf> {
        match (&self.dsh_home, &self.home) {
            (Some(d), home) => {
                let text = d.to_string_lossy();
                match (text.as_ref(), home) {
                    ("~", Some(h)) => Ok(h.clone()),
                    (t, Some(h)) if t.starts_with("~/") => Ok(h.join(&t[2..])),
                    _ => Ok(std::path::absolute(d).unwrap_or_else(|_| d.clone())),
                }
            }
            (None, Some(h)) => Ok(h.join(".dsh")),
            (None, None) => Err(Error::NoHome),
        }
    }

    /// Where mcpatch keeps its state (`backups/` below it), by the first rule
    /// that applies (docs/first-use.md):
    /// 1. `$MCPATCH_HOME`;
    /// 2. `$DSH_HOME`, as every earlier release did;
    /// 3. `~/.dsh`, when it already holds mcpatch's `backups/` (kept where they are);
    /// 4. `$XDG_STATE_HOME/mcpatch`, default `~/.local/state/mcpatch`: a
    ///    neutral home for users of any target, DSH or not.
    pub fn state_home(&self) -> Result<PathBuf> {
        if let Some(m) = &self.mcpatch_home {
            return Ok(std::path::absolute(m).unwrap_or_else(|_| m.clone()));
        }
        if self.dsh_home.is_some() {
            return self.dsh_home();
        }
        let home = self.home.as_ref().ok_or(Error::NoHome)?;
        let dsh = home.join(".dsh");
        if std::fs::symlink_metadata(dsh.join("backups")).is_ok() {
            return Ok(dsh);
        }
        Ok(match &self.xdg_state_home {
            Some(x) => x.join("mcpatch"),
            None => home.join(".local/state/mcpatch"),
        })
    }

    /// A program on PATH, as a shell would find it; else why not, in words
    /// that follow its name ("not found", "PATH is not set").
    pub(crate) fn which(&self, name: &str) -> std::result::Result<PathBuf, &'static str> {
        let path_var = self.path_var.as_ref().ok_or("PATH is not set")?;
        which::which_in(name, Some(path_var), &self.cwd).map_err(|_| "not found")
    }
}
