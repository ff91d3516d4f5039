//! Typed errors of the mcpatch core: each names the path or value involved and
//! ends with a `help:` line naming the fix.

use std::path::PathBuf;

/// Everything that can stop an mcpatch command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot {action} {path}: {source}\nhelp: {help}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
        help: &'static str,
    },

    #[error("the embedded patch registry is invalid ({what}): {detail}\nhelp: this is a bug in this mcpatch build; rebuild it from a clean checkout")]
    Registry { what: String, detail: String },

    #[error("{path} is not a dsh-mcp-client install, a lib/index.js, or a folder\nhelp: pass --path the package folder (the one holding package.json and lib/index.js) or a folder to search below")]
    NotAnInstall { path: PathBuf },

    #[error("cannot run node ({node}): {detail}\nhelp: install Node.js 22 or later, or pass --node PATH")]
    NodeUnavailable { node: String, detail: String },

    #[error("the patch does not apply to {path}: {detail}\nhelp: this file is not the revision the patch was cut against; run `mcpatch diff --path {path}` to compare, or reinstall @deepseek-ai/dsh")]
    PatchDoesNotApply { path: PathBuf, detail: String },

    #[error("the patched file fails `node --check` ({path}):\n{stderr}\nhelp: nothing was changed; report this with the output of `mcpatch status --json`")]
    SyntaxCheckFailed { path: PathBuf, stderr: String },

    #[error("the patched module does not load from {dir}:\n{stderr}\nhelp: nothing was changed; check that the install's dependencies are present (`npm ls` in that folder) and that node is 22 or later")]
    LoadCheckFailed { dir: PathBuf, stderr: String },

    #[error("{dir} is not writable: {source}\nhelp: run with sudo, or use --path on a writable copy of the install")]
    ReadOnlyInstall {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot write the backup folder {dir}: {source}\nhelp: nothing was changed; make {dir} writable or set DSH_HOME to a writable folder")]
    BackupUnwritable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("backup {id} is damaged: {detail}\nhelp: nothing was changed; pick another backup with `mcpatch backups` and `--backup ID`, or reinstall @deepseek-ai/dsh")]
    BackupDamaged { id: String, detail: String },

    #[error("no backup named {id} under {dir}\nhelp: list the backups with `mcpatch backups`")]
    BackupNotFound { id: String, dir: PathBuf },

    #[error("after writing {path} its sha256 is {found}, expected {expected}\nhelp: the original was restored; report this with the output of `mcpatch status --json`")]
    HashMismatch {
        path: PathBuf,
        expected: String,
        found: String,
    },

    #[error("cannot find the home folder for the default DSH_HOME\nhelp: set DSH_HOME to the DSH data folder (default ~/.dsh)")]
    NoHome,

    #[error("cannot start the fake MCP server on {addr}: {source}\nhelp: pick another port with --port, or free this one")]
    ServerBind {
        addr: String,
        #[source]
        source: std::io::Error,
    },

    #[error("unknown scenario {name:?}\nhelp: choose one of: {known}")]
    UnknownScenario { name: String, known: String },

    #[error("{failed} of {total} install(s) could not be {action}; each error is above\nhelp: fix them and run again; the other installs were handled, and a rerun skips what is done")]
    SomeFailed {
        failed: usize,
        total: usize,
        action: &'static str,
    },

    #[error("the verify harness failed for {path}: {detail}\nhelp: run again with --node pointing at Node.js 22 or later; if it persists, report the output")]
    Harness { path: PathBuf, detail: String },

    #[error("{url:?} is not a URL mcpatch can probe: {detail}\nhelp: pass the server's MCP endpoint as DSH's config names it, e.g. http://127.0.0.1:8000/mcp")]
    ProbeUrl { url: String, detail: String },

    #[error("--header #{index} {detail}\nhelp: write each header as 'Name: value', e.g. --header 'Authorization: Bearer TOKEN'")]
    ProbeHeader { index: usize, detail: String },

    #[error("cannot set up the probe's HTTP client: {detail}\nhelp: report this with the output of `mcpatch probe -v`")]
    ProbeClient { detail: String },

    #[error("cannot probe {url}: {detail}\nhelp: {help}")]
    ProbeUnreachable {
        url: String,
        detail: String,
        help: String,
    },

    #[error("{url} refused the probe's credentials: {detail}\nhelp: {help}")]
    ProbeAuthFailed {
        url: String,
        detail: String,
        help: String,
    },
}

impl Error {
    /// An I/O error that names its path; `help` says what to do about it.
    pub fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
        help: &'static str,
    ) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
            help,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Per-install failures of a command that goes on past them: with several
/// installs, one failing is shown as it happens and the others are still handled.
#[derive(Debug)]
pub struct Failures {
    failed: usize,
    total: usize,
    action: &'static str,
}

impl Failures {
    /// For `total` installs to be `action` ("patched", "restored").
    pub fn new(total: usize, action: &'static str) -> Self {
        Failures {
            failed: 0,
            total,
            action,
        }
    }

    /// The value, or, when there are several installs, `None` after printing
    /// and counting the error; with a single install the error itself.
    pub fn absorb<T>(&mut self, result: Result<T>) -> Result<Option<T>> {
        match result {
            Ok(value) => Ok(Some(value)),
            Err(e) if self.total > 1 => {
                eprintln!("error: {e}");
                self.failed += 1;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// A summary error if any install failed.
    pub fn finish(self) -> Result<()> {
        if self.failed == 0 {
            return Ok(());
        }
        Err(Error::SomeFailed {
            failed: self.failed,
            total: self.total,
            action: self.action,
        })
    }
}
