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

    #[error("--target {name} does nothing for `mcpatch {command}`: it works with no target's installs\nhelp: leave --target out (it is for status, apply, revert, backups, diff, verify and probe)")]
    TargetUnused { name: String, command: &'static str },

    #[error("unknown target {name}; mcpatch knows {known}\nhelp: pass one of those to --target, or leave --target out for all of them")]
    UnknownTarget { name: String, known: String },

    #[error("verify cannot run another file in place of {file}: the verify.command of {target}'s manifest names no file of the package that it runs\nhelp: this is a bug in this mcpatch build; rebuild it from a clean checkout")]
    BridgeNoEntry { target: &'static str, file: PathBuf },

    #[error("verify cannot drive {target} yet: mcpatch has no verify driver for it\nhelp: `mcpatch status` says whether the install is patched; pass --target to verify the other targets")]
    NoVerifyDriver { target: &'static str },

    #[error("probe has no port of the session-loss predicate of {targets}'s patch\nhelp: leave out --target: probe judges the server by the first target whose predicate it ports")]
    NoProbePredicate { targets: String },

    #[error("{path} is not an install of {packages}, a file one patches, or a folder\nhelp: pass --path the package folder (the one holding package.json) or a folder to search below")]
    NotAnInstall { path: PathBuf, packages: String },

    #[error("cannot run node ({node}): {detail}\nhelp: {help}")]
    NodeUnavailable {
        node: String,
        detail: String,
        /// Install node, or fix `--node` when it was given.
        help: &'static str,
    },

    #[error("the patch does not apply to {path}: {detail}\nhelp: nothing was changed; the patch fits the revision it was cut against, also with local edits away from its hunks, and this file is neither: {reinstall}, then run `mcpatch apply`")]
    PatchDoesNotApply {
        path: PathBuf,
        detail: String,
        /// How to get a clean copy back (the target's `texts.reinstall`).
        reinstall: &'static str,
    },

    #[error("the patch of {target} does not fit {path}: {detail}\nhelp: nothing was changed; the patch goes where each of its content anchors matches exactly once, and this file has changed there: {reinstall}, then run `mcpatch status` (a release mcpatch does not fit yet needs a newer mcpatch)")]
    AnchorsDoNotFit {
        target: &'static str,
        path: PathBuf,
        detail: String,
        reinstall: &'static str,
    },

    #[error("the patch does not apply to {path}: {detail}\nhelp: nothing was changed; backup {id} holds the original of this file: run `mcpatch revert --yes` to restore it (the edits made to the file since are dropped), then `mcpatch apply`")]
    PatchDoesNotApplyBackupHolds {
        path: PathBuf,
        detail: String,
        id: String,
    },

    #[error("the patched file fails `node --check` ({path}):\n{stderr}\nhelp: nothing was changed; report this with the output of `mcpatch status --json`")]
    SyntaxCheckFailed { path: PathBuf, stderr: String },

    #[error("the patched module does not load from {dir}:\n{stderr}\nhelp: nothing was changed; check that the install's dependencies are present (`npm ls` in that folder) and that node is 22 or later")]
    LoadCheckFailed { dir: PathBuf, stderr: String },

    #[error("{dir} is not writable: {source}\nhelp: {help}")]
    ReadOnlyInstall {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
        /// What to do, by why it failed and who mcpatch runs as.
        help: &'static str,
    },

    #[error("cannot write the backup folder {dir}: {source}\nhelp: nothing was changed; make {dir} writable or set MCPATCH_HOME to a writable folder")]
    BackupUnwritable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("backup {id} is damaged: {detail}\nhelp: nothing was changed; pick another backup with `mcpatch backups` and `--backup ID`, or reinstall the package that holds the file")]
    BackupDamaged { id: String, detail: String },

    #[error("no backup named {id} under {dir}\nhelp: list the backups with `mcpatch backups`")]
    BackupNotFound { id: String, dir: PathBuf },

    #[error("no backup of {file} under {dir}, so `verify --backup` has no saved original to run\nhelp: `mcpatch apply` saves the original when it patches the install; if it was patched with another state folder (sudo uses root's), run `MCPATCH_HOME=<that folder> mcpatch verify --backup`; `mcpatch backups` lists the backups under this one")]
    NoBackupToVerify { file: PathBuf, dir: PathBuf },

    #[error("backup {id} is of {}, which is not among the installs found\nhelp: nothing was changed; to restore it, pass the package folder of that file with --path; `mcpatch backups` lists which backup is of which file", original.display())]
    BackupOfAnotherInstall { id: String, original: PathBuf },

    #[error("after writing {path} its sha256 is {found}, expected {expected}\nhelp: {undone}; report this with the output of `mcpatch status --json`")]
    HashMismatch {
        path: PathBuf,
        expected: String,
        found: String,
        /// What was done about it: "the original was restored", or revert's own words.
        undone: &'static str,
    },

    #[error("cannot find the home folder, where mcpatch keeps its state and looks for installs\nhelp: set HOME, or set MCPATCH_HOME to the folder for mcpatch's backups")]
    NoHome,

    #[error("cannot start the fake MCP server on {addr}: {source}\nhelp: pick another port with --port, or free this one")]
    ServerBind {
        addr: String,
        #[source]
        source: std::io::Error,
    },

    #[error("interrupted by {signal}: the check stopped, node and the fake servers were stopped, and any copy of a backup it had put in the install was removed\nhelp: run `mcpatch verify` again to finish the check")]
    Interrupted { signal: &'static str },

    /// A signal caught during a step of apply that runs node (mapped by apply
    /// to [`Error::ApplyInterrupted`], which names the install).
    #[error("interrupted by {signal} during {step}: node was stopped\nhelp: run the command again to finish")]
    StepInterrupted {
        signal: &'static str,
        step: &'static str,
    },

    #[error("interrupted by {signal}: apply stopped before changing {}; node and any fake servers were stopped, and the copies and the backup made for it were removed (installs reported before it keep their changes)\nhelp: run `mcpatch status` to see each install, then `mcpatch apply` again to finish", path.display())]
    ApplyInterrupted { signal: &'static str, path: PathBuf },

    #[error("the copy mcpatch made of the install's entry folder at {} was changed under it (found {found}); nothing runs from it\nhelp: another user can write the install's folder; check who owns it (`ls -la` of it), then run mcpatch as that user", path.display())]
    MirrorReplaced { path: PathBuf, found: &'static str },

    #[error("refusing to run {what} as root: {} {why}, so that user could run anything as root through it\nhelp: {fix}", path.display())]
    UntrustedCode {
        /// What would have run: "the install's code (verify)", ...
        what: &'static str,
        path: PathBuf,
        why: String,
        fix: String,
    },

    #[error("cannot run the bridge command {command:?}: {problem}\nhelp: pass --command one command line, quoted as for a shell, e.g. --command 'npx -y mcp-remote@0.15.1'")]
    BridgeCommand { command: String, problem: String },

    #[error("cannot start the bridge {program:?}: {source}\nhelp: check that the program exists and is executable (a name is looked up on PATH; no shell runs it)")]
    BridgeSpawn {
        program: String,
        #[source]
        source: std::io::Error,
    },

    #[error("interrupted by {signal}: the check stopped; {stopped}\nhelp: run `mcpatch verify --command ...` again to finish the check")]
    BridgeInterrupted {
        signal: &'static str,
        /// What was stopped, as far as this system lets mcpatch make sure.
        stopped: &'static str,
    },

    #[error("no scenario to run against a bridge:\n{}help: leave out --scenario, or name a scenario a bridge can run", left_out.iter().map(|s| format!("  - {s}\n")).collect::<String>())]
    BridgeNothingToRun { left_out: Vec<String> },

    #[error("no scenario asked for runs against {target}:\n{}help: leave out --scenario, or name a scenario {target} can run", left_out.iter().map(|s| format!("  - {s}\n")).collect::<String>())]
    NothingToRunFor {
        target: &'static str,
        left_out: Vec<String>,
    },

    #[error("verify --explore does not drive {target}'s client: {why}\nhelp: leave out --explore and --explore-only for it (its fixed table of scenarios still runs), or pick another target with --target")]
    ExploreUnsupported {
        target: &'static str,
        why: &'static str,
    },

    #[error("--command cannot be used with {flag}\nhelp: --command checks a stdio bridge against the fake server; {flag} belongs to the check of the clients mcpatch finds installed: run one or the other")]
    BridgeConflict { flag: &'static str },

    #[error("no {packages} install to verify; looked in:\n{}help: if {hosts} is installed elsewhere, pass its folder with --path", searched.iter().map(|s| format!("  - {s}\n")).collect::<String>())]
    NothingToVerify {
        packages: String,
        hosts: String,
        searched: Vec<String>,
    },

    #[error("{failed} of {total} install(s) could not be {action}; each error is above\nhelp: each install that failed was left as it was, the others were handled as reported; fix what each error names and run again{}", rerun_note(action))]
    SomeFailed {
        failed: usize,
        total: usize,
        action: &'static str,
    },

    #[error("the verify harness failed for {path}: {detail}\nhelp: run again with --node pointing at Node.js 22 or later; if it persists, report the output")]
    Harness { path: PathBuf, detail: String },

    #[error("{path} changed while mcpatch was working on it: {what}; mcpatch left it as it is\nhelp: {help}")]
    FileChanged {
        path: PathBuf,
        what: String,
        help: &'static str,
    },

    #[error("{path} is {found}, not a regular file; mcpatch reads only regular files there\nhelp: check what is at that path: it is not a file of the package or of mcpatch")]
    NotAFile { path: PathBuf, found: &'static str },

    #[error("{path} is larger than {limit} bytes, far larger than any file mcpatch reads there\nhelp: check what is at that path: it is not a file of the package or of mcpatch")]
    TooLarge { path: PathBuf, limit: u64 },

    #[error("refusing {path}: {why}; running as root, mcpatch trusts a backups folder only when root owns it and no one else can write it\nhelp: check what is in it, then `chown -R root:root {path}` and `chmod -R go-w {path}`, or set DSH_HOME to a folder only root can write (such as DSH_HOME=/root/.dsh)")]
    UntrustedBackups { path: PathBuf, why: String },

    #[error("refusing the lock file {path}: it is {found}, not a regular file\nhelp: remove it (no mcpatch holds a lock through it); mcpatch creates a fresh one")]
    UnsafeLockFile { path: PathBuf, found: &'static str },

    #[error("{step} ({node}) did not finish within {secs} s and was stopped\nhelp: nothing was changed; the module may wait on something while it loads (import it with node to see), or allow more time with MCPATCH_NODE_TIMEOUT=SECONDS")]
    NodeTimeout {
        step: &'static str,
        node: String,
        secs: u64,
    },

    #[error("MCPATCH_NODE_TIMEOUT={value:?} is not a whole number of seconds above 0\nhelp: set it to a number of seconds such as 120, or unset it for the default of 60")]
    BadNodeTimeout { value: String },

    #[error("no {package} install under the --path given; looked in:\n{}help: pass the package folder (the one holding package.json and lib/index.js), its lib/index.js, or a folder to search below", searched.iter().map(|s| format!("  - {s}\n")).collect::<String>())]
    NoInstallFound {
        package: String,
        searched: Vec<String>,
    },

    #[error("{path} is no project folder: it holds no package.json\nhelp: pass --path the project folder (the one with package.json and node_modules)")]
    KeepNotAProject { path: PathBuf },

    #[error("cannot edit {path}: {detail}\nhelp: nothing was changed; fix the file (npm reads it too), or make the change by hand as docs/keeping-the-patch.md shows")]
    KeepPackageJson { path: PathBuf, detail: String },

    #[error("cannot edit {path}: {detail}\nhelp: nothing was changed; add the entry by hand as docs/keeping-the-patch.md shows")]
    KeepProjectFile { path: PathBuf, detail: String },

    #[error("{path} is {state}, not patched: `mcpatch keep` writes the change `mcpatch apply` made\nhelp: nothing was changed; run `mcpatch apply --path {project}` first, then this command again")]
    KeepNotPatched {
        path: PathBuf,
        state: &'static str,
        project: PathBuf,
    },

    #[error("no original of {file} to write the change from: {detail}\nhelp: nothing was changed; reinstall the package (`npm ci`), run `mcpatch apply` on the project, then this command again")]
    KeepNoOriginal { file: PathBuf, detail: String },

    #[error("{path} {what}\nhelp: nothing was changed; move it away and run again, or merge the two changes by hand")]
    KeepFileTaken { path: PathBuf, what: &'static str },

    #[error("patch-package cannot patch {path}: it is in pnpm's store (node_modules/.pnpm)\nhelp: nothing was changed; in a pnpm project run `mcpatch keep pnpm` instead")]
    KeepPnpmStore { path: PathBuf },

    #[error("no patched install in {project}/node_modules to keep\nhelp: nothing was changed; `mcpatch status --path {project}` shows what is there, `mcpatch apply --path {project}` patches it")]
    KeepNothing { project: PathBuf },

    #[error("{failed} of {total} install(s) could not be read; each error is above\nhelp: fix what each error names and run again; the other installs are reported above")]
    SomeUnreadable { failed: usize, total: usize },

    #[error("node cannot load {path}: its path is not UTF-8 (as a URL: {url})\nhelp: nothing was changed; node cannot import a module from such a path, so no host can load it: reinstall it under a folder whose name is UTF-8")]
    PathNotLoadable { path: PathBuf, url: String },

    #[error("fault injected at step {step} (MCPATCH_TEST_FAIL_AT)\nhelp: unset MCPATCH_TEST_FAIL_AT; it is for mcpatch's own tests")]
    InjectedFault { step: &'static str },
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

/// What a rerun does after some installs failed: apply and revert skip what is done.
fn rerun_note(action: &str) -> &'static str {
    if action == "verified" {
        ""
    } else {
        " (a rerun skips what is done)"
    }
}

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
            // A signal stops every install, not just this one.
            Err(e @ (Error::ApplyInterrupted { .. } | Error::StepInterrupted { .. })) => Err(e),
            Err(e) if self.total > 1 => {
                crate::errln!("error: {}", crate::output::clean_lines(&e.to_string()));
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
