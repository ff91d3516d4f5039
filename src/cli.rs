//! The command line: one clap enum of subcommands and their flags.

use std::path::PathBuf;

use std::ffi::OsString;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::color::ColorChoice;
use crate::verify::scenario::ScenarioName;

/// Find, patch, revert and verify installed MCP clients (DSH's dsh-mcp-client,
/// mcp-remote, gemini-cli, the MCP TypeScript SDK, @ai-sdk/mcp) so they recover
/// when an MCP server forgets the session.
#[derive(Debug, Parser)]
#[command(
    name = "mcpatch",
    version,
    about,
    long_about = None,
    after_help = "Exit codes: 0 nothing needs attention; 1 an install is affected or modified (or its host cannot start), was refused or has no backup to revert from, a verify scenario failed its expectation, or a probed server is not covered; 2 error: bad input, or an install failed (left as it was; any other installs were handled as reported, as each one's `changed` and `error` in --json say); rerun after the fix. 2 wins over 1."
)]
pub struct Cli {
    /// When to colour the output; auto colours a terminal unless NO_COLOR,
    /// CLICOLOR=0 or TERM=dumb is set, and CLICOLOR_FORCE colours a pipe too.
    #[arg(
        long,
        global = true,
        value_name = "WHEN",
        default_value = "auto",
        display_order = 900
    )]
    pub color: ColorChoice,
    /// `mcpatch --target NAME status`, as earlier releases took it: the same
    /// as the subcommand's own --target (hidden; refused by a subcommand
    /// that has no use for it).
    #[arg(long, value_name = "NAME", hide = true)]
    pub target: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find every installed copy and say, by sha256, what it is and what to do.
    #[command(after_help = crate::exit_code::STATUS_HELP)]
    Status {
        #[command(flatten)]
        paths: PathArgs,
        #[command(flatten)]
        target: TargetArg,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// Print the fix of each host found that cannot start as a shell
        /// script, to read or to pipe to `sh`.
        #[arg(long, conflicts_with = "json")]
        host_fix: bool,
    },
    /// Patch every affected install: staged, checked, backed up, replaced atomically.
    #[command(after_help = crate::exit_code::APPLY_HELP)]
    Apply {
        #[command(flatten)]
        paths: PathArgs,
        #[command(flatten)]
        target: TargetArg,
        /// Stage and check everything, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Patch modified installs without asking (a revision mcpatch does not
        /// know only after its patched copy passes verify).
        #[arg(long, short = 'y')]
        yes: bool,
        /// For unattended runs (cron, a systemd path unit): print nothing when
        /// nothing changes, one line per change, one line per refusal on stderr.
        #[arg(long, short = 'q')]
        quiet: bool,
        /// Write a revision mcpatch does not know without first verifying its
        /// patched copy with the current revision's expectations.
        #[arg(long)]
        no_verify: bool,
        /// As root: run an install's code (the load check, verify) even when
        /// another user owns it or can write it or a folder on the way to it.
        #[arg(long)]
        trust_owner: bool,
        #[command(flatten)]
        node: NodeArg,
        /// Print one JSON report instead of text: per install `changed`,
        /// `state_before`, `state_after`, `backup`, `error`.
        #[arg(long)]
        json: bool,
    },
    /// Restore each install from its newest backup (or the one named).
    #[command(after_help = crate::exit_code::REVERT_HELP)]
    Revert {
        #[command(flatten)]
        paths: PathArgs,
        #[command(flatten)]
        target: TargetArg,
        /// The backup to restore (a folder name from `mcpatch backups`).
        #[arg(long, value_name = "ID")]
        backup: Option<String>,
        /// Restore even when the current file is not the patched revision.
        #[arg(long, short = 'y')]
        yes: bool,
        /// Print one JSON report instead of text: per install `changed`,
        /// `state_before`, `state_after`, `backup`, `error`.
        #[arg(long)]
        json: bool,
    },
    /// List the backups mcpatch keeps.
    Backups {
        #[command(flatten)]
        target: TargetArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Print only the backup ids, newest first, one a line (what shell
        /// completion offers for --backup).
        #[arg(long, conflicts_with = "json")]
        ids: bool,
    },
    /// Show the patch as it would apply.
    #[command(after_help = crate::exit_code::DIFF_HELP)]
    Diff {
        #[command(flatten)]
        paths: PathArgs,
        #[command(flatten)]
        target: TargetArg,
    },
    /// Prove the installed client recovers from session loss, against a bundled fake server.
    #[command(after_help = crate::exit_code::VERIFY_HELP)]
    Verify {
        #[command(flatten)]
        paths: PathArgs,
        #[command(flatten)]
        target: TargetArg,
        /// Check a saved original instead (the newest backup, or the one named): the control.
        #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
        backup: Option<String>,
        /// Run only these scenarios (repeatable); reload and reload-5s (30 s and 40 s) run only when named, late-answers, lost-again, cut-kept, reinit-timeout and tools-changed too but for gemini-cli (and late-answers for mcp-remote).
        #[arg(long = "scenario", value_name = "NAME")]
        scenarios: Vec<ScenarioName>,
        /// Scenario runs at once (default: all of them for the DSH plugin, in one node; 4 for a bridge or an SDK client, 3 for gemini-cli, each a process of its own).
        #[arg(long, short = 'j', value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
        /// Judge every file by the current patch revision's expectations (SEAMLESS
        /// recovery, its rules), whatever its sha256: for hand-edited files and new releases.
        #[arg(long)]
        strict: bool,
        /// As root: run an install's code (the load check, verify) even when
        /// another user owns it or can write it or a folder on the way to it.
        #[arg(long)]
        trust_owner: bool,
        /// Also drive the client through N plans generated from a seed, each judged
        /// by the rules every run keeps (default: 3 for a file judged by the current
        /// revision's expectations when no --scenario is named; 0: none).
        #[arg(long, value_name = "N")]
        explore: Option<u32>,
        /// The seed of the explored plans (default 2026); a failing run prints the
        /// seed that replays it with `--explore 1`.
        #[arg(long, value_name = "S")]
        seed: Option<u64>,
        /// Run only the explored plans, not the fixed table of scenarios.
        #[arg(long, conflicts_with = "scenarios")]
        explore_only: bool,
        #[command(flatten)]
        node: NodeArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Verify a stdio MCP bridge instead (e.g. 'npx -y mcp-remote@0.15.1'), quoted as
        /// for a shell: the fake server's URL replaces {url} in an argument, else comes last.
        #[arg(long, value_name = "CMD")]
        command: Option<String>,
        /// With --command: how long the bridge may take to answer its first initialize
        /// (npx may download it first).
        #[arg(long, value_name = "SECS", default_value = "60", value_parser = crate::probe::parse_timeout, requires = "command")]
        startup_timeout: std::time::Duration,
        /// With --command: print the bridge's stderr of each scenario (to stderr).
        #[arg(long, short = 'v', requires = "command")]
        verbose: bool,
    },
    /// Keep the patch in a project across `npm install` and `npm ci`, which put the original back.
    ///
    /// postinstall: package.json's scripts.postinstall runs `mcpatch apply --quiet --path .` after
    /// each install (chained after the script there with &&); mcpatch must be on PATH wherever the
    /// project is installed. patch-package: writes the change `mcpatch apply` made to each patched
    /// copy in the project as patches/<package>+<version>.patch and adds `patch-package` to
    /// scripts.postinstall. pnpm: writes patches/<package>@<version>.patch and names it in
    /// pnpm-workspace.yaml's patchedDependencies. package.json keeps its layout; files are replaced
    /// atomically. Commit what it writes (docs/keeping-the-patch.md). `mcpatch status` notes a
    /// patched copy nothing in its project keeps (JSON: kept_by).
    Keep {
        /// How to keep it.
        #[arg(value_enum, value_name = "HOW")]
        how: crate::project::How,
        /// The project folder, the one with package.json and node_modules.
        #[arg(long, value_name = "P", default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        target: TargetArg,
    },
    /// Run the fake stateful MCP server alone, for any MCP client.
    Serve {
        /// The scenario whose server behaviour to run.
        #[arg(long, value_name = "NAME", default_value = "expired-404")]
        scenario: ScenarioName,
        /// Port on 127.0.0.1 (0: the OS picks).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// Ask an MCP server how it answers a lost session, and say whether the patch covers it.
    ///
    /// Opens a session as the client does (initialize, notifications/initialized, tools/list),
    /// sends tools/list and ping with a session id the server never issued, ends its own
    /// session with DELETE and sends tools/list with it. Never calls a tool.
    /// Exit codes: 0 covered or stateless; 1 not covered; 2 unreachable, refused credentials, or bad input.
    Probe {
        /// The server's MCP endpoint, as in the MCP client's config (e.g. http://127.0.0.1:8000/mcp).
        url: String,
        /// Judge the answers by this target's patch (default: the first target whose patch has rules for it).
        #[arg(long, value_name = "NAME")]
        target: Option<String>,
        /// A header to send with every request, e.g. 'Authorization: Bearer TOKEN'
        /// (repeatable). Values are never printed.
        #[arg(long = "header", value_name = "'Name: value'")]
        headers: Vec<String>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// Give up after this many seconds (more than 0, at most 86400), the name lookup and all requests together.
        #[arg(long, value_name = "SECS", default_value = "10", value_parser = crate::probe::parse_timeout)]
        timeout: std::time::Duration,
        /// Print every request sent and every answer (to stderr).
        #[arg(long, short = 'v')]
        verbose: bool,
    },
    /// Print shell completions.
    Completions { shell: clap_complete::Shell },
}

impl Command {
    /// Where the command searches, for commands that search for installs.
    pub fn path_args(&self) -> Option<&PathArgs> {
        match self {
            Command::Status { paths, .. }
            | Command::Apply { paths, .. }
            | Command::Revert { paths, .. }
            | Command::Diff { paths, .. }
            | Command::Verify { paths, .. } => Some(paths),
            Command::Backups { .. }
            | Command::Keep { .. }
            | Command::Serve { .. }
            | Command::Probe { .. }
            | Command::Completions { .. } => None,
        }
    }
}

#[derive(Debug, Args, Clone, Default)]
pub struct PathArgs {
    /// A file to patch, a package folder, or a folder to search below (repeatable).
    /// Without it, mcpatch looks where a host could load the package from.
    #[arg(long = "path", value_name = "P")]
    pub paths: Vec<PathBuf>,
    /// Ask `npm root -g` for npm's global folder (starts npm) instead of
    /// reading npm's configuration, for setups mcpatch cannot read.
    #[arg(long, conflicts_with = "paths")]
    pub npm: bool,
}

/// `--target`, for the subcommands that work on installs or backups.
#[derive(Debug, Args, Clone, Default)]
pub struct TargetArg {
    /// Work on this target only (a target under patches/: dsh-mcp-client,
    /// mcp-remote, gemini-cli, mcp-sdk, ai-sdk-mcp); default: every target.
    #[arg(long, value_name = "NAME", display_order = 901)]
    pub target: Option<String>,
}

impl Command {
    /// The --target given to the subcommand; `None` also for a subcommand
    /// that takes none (see [`Command::takes_target`]).
    pub fn target(&self) -> Option<&str> {
        match self {
            Command::Status { target, .. }
            | Command::Apply { target, .. }
            | Command::Revert { target, .. }
            | Command::Backups { target, .. }
            | Command::Diff { target, .. }
            | Command::Keep { target, .. }
            | Command::Verify { target, .. } => target.target.as_deref(),
            Command::Probe { target, .. } => target.as_deref(),
            Command::Serve { .. } | Command::Completions { .. } => None,
        }
    }

    /// Whether --target means anything to this subcommand.
    pub fn takes_target(&self) -> bool {
        !matches!(self, Command::Serve { .. } | Command::Completions { .. })
    }

    /// The subcommand's name, as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Status { .. } => "status",
            Command::Apply { .. } => "apply",
            Command::Revert { .. } => "revert",
            Command::Backups { .. } => "backups",
            Command::Diff { .. } => "diff",
            Command::Verify { .. } => "verify",
            Command::Keep { .. } => "keep",
            Command::Serve { .. } => "serve",
            Command::Probe { .. } => "probe",
            Command::Completions { .. } => "completions",
        }
    }
}

#[derive(Debug, Args, Clone, Default)]
pub struct NodeArg {
    /// The node binary to use (default: `node` on PATH).
    #[arg(long, value_name = "PATH")]
    pub node: Option<PathBuf>,
}

/// What bash runs to complete a `--backup` value: the ids of the backups
/// under `$DSH_HOME` (`mcpatch backups --ids`), never file names, even when
/// there are none (bash's fallback to file names is turned off there).
const BASH_BACKUP_IDS: &str = r#"compopt +o default +o bashdefault 2>/dev/null
                    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" backups --ids 2>/dev/null)" -- "${cur}"))"#;

/// The completion script for `shell`, as clap_complete writes it; in bash,
/// `--backup` (of revert and verify) completes with backup ids.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "mcpatch", &mut script);
    let script = String::from_utf8_lossy(&script).into_owned();
    if shell != clap_complete::Shell::Bash {
        return script;
    }
    script.replace(
        "--backup)\n                    COMPREPLY=($(compgen -f \"${cur}\"))",
        &format!("--backup)\n                    {BASH_BACKUP_IDS}"),
    )
}

/// The widest a terminal's `--help` is wrapped to (clap's own default).
const HELP_COLUMNS: usize = 100;

/// Parse the process's command line; clap's own help and errors follow
/// `--color` too (it is read before clap prints anything).
pub fn parse() -> Cli {
    let args: Vec<OsString> = std::env::args_os().collect();
    let command = match color_flag(&args) {
        Some(ColorChoice::Always) => Cli::command().color(clap::ColorChoice::Always),
        Some(ColorChoice::Never) => Cli::command().color(clap::ColorChoice::Never),
        _ => Cli::command(),
    };
    // Help is wrapped to the terminal (COLUMNS first), at most 100 columns;
    // into a pipe or a file it is not wrapped, as no output is (0: no limit).
    let columns = crate::width::stdout_columns().map_or(0, |c| c.min(HELP_COLUMNS));
    let matches = command
        .term_width(columns)
        .try_get_matches_from(args)
        .unwrap_or_else(|e| exit_with(&e));
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| exit_with(&e))
}

/// What clap's `Error::exit` does (help and version to stdout with exit 0,
/// usage errors to stderr with exit 2), except that help or a version that
/// cannot be written (a full disk, /dev/full) is an error: exit 2, said on
/// stderr. A reader that went away (a closed pipe) is no error of mcpatch's.
fn exit_with(e: &clap::Error) -> ! {
    use std::io::Write;
    let written = e.print().and_then(|()| std::io::stdout().flush());
    match written {
        Err(io) if e.use_stderr() || io.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(io) => {
            let what = if e.kind() == clap::error::ErrorKind::DisplayVersion {
                "the version"
            } else {
                "the help"
            };
            crate::errln!(
                "error: cannot write {what} to standard output: {io}\nhelp: send it somewhere that can take it, e.g. `mcpatch --help | less` or `mcpatch --help > FILE` on a disk with room"
            );
            std::process::exit(i32::from(crate::exit_code::ERROR));
        }
        Ok(()) => {}
    }
    std::process::exit(e.exit_code())
}

/// The last `--color WHEN` or `--color=WHEN` before any `--`, if valid.
fn color_flag(args: &[OsString]) -> Option<ColorChoice> {
    use clap::ValueEnum;
    let mut found = None;
    let mut args = args.iter().skip(1).map(|a| a.to_str());
    while let Some(arg) = args.next() {
        let value = match arg {
            Some("--") => break,
            Some("--color") => args.next().flatten(),
            Some(a) => a.strip_prefix("--color="),
            None => None,
        };
        if let Some(choice) = value.and_then(|v| ColorChoice::from_str(v, false).ok()) {
            found = Some(choice);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_color_flag_is_found_before_clap_parses() {
        assert_eq!(color_flag(&args(&["mcpatch", "status"])), None);
        assert_eq!(
            color_flag(&args(&["mcpatch", "--color", "never", "status"])),
            Some(ColorChoice::Never)
        );
        assert_eq!(
            color_flag(&args(&["mcpatch", "status", "--color=always"])),
            Some(ColorChoice::Always)
        );
        assert_eq!(
            color_flag(&args(&["mcpatch", "probe", "--", "--color=always"])),
            None
        );
        assert_eq!(color_flag(&args(&["mcpatch", "--color", "purple"])), None);
    }
}
