//! The process exit codes of every mcpatch command, in one place.
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | nothing needs attention: no install affected, every patch or revert done, every verify scenario met its expectation |
//! | 1 | something needs attention: an install is affected or modified (or, for `status`, its DSH host cannot start), an install was refused (modified without `--yes`, a revision mcpatch does not know whose patched copy failed verify, unsupported), a patched install has no backup to revert from, or a verify scenario did not meet its expectation (STUCK, wrongful recycle) |
//! | 2 | error: bad input, I/O failure, a check that failed; see [`ERROR`] for what it means when several installs are handled |

use std::process::ExitCode;

pub const SUCCESS: u8 = 0;
pub const ATTENTION: u8 = 1;
/// An error. Each install that failed was left exactly as it was (nothing is
/// ever half-changed); with several installs, the others were still handled
/// and are reported as such (patched, restored, verified), so this code does
/// not mean nothing changed: rerun after the fix, it skips what is done. It
/// wins over [`ATTENTION`].
pub const ERROR: u8 = 2;

/// The exit codes of `status`, as its `--help` says them.
pub const STATUS_HELP: &str = "Exit codes: 0 nothing needs attention (no install found, or each one patched, upstream-fixed or unsupported); 1 attention: an install is affected, outdated or modified, or its DSH host cannot start; 2 error: bad input (such as a --path that holds no install), or an install found that cannot be read.";
/// The exit codes of `diff`, as its `--help` says them: 1 when there is a
/// change to show, as `diff(1)` and `git diff --exit-code` do.
pub const DIFF_HELP: &str = "Exit codes: 0 nothing to change (no install found, or each one patched, upstream-fixed or unsupported); 1 there is a change to show: an install is affected, outdated or modified (as with diff(1) and `git diff --exit-code`); 2 error: bad input, or an install found that cannot be read.";
/// The exit codes of `apply`, as its `--help` says them.
pub const APPLY_HELP: &str = "Exit codes: 0 done: each affected or outdated install patched (with --dry-run: would be), or nothing to patch; 1 attention: an install was refused (modified without --yes, a revision mcpatch does not know whose patched copy failed verify, unsupported); 2 error: bad input, or an install failed: that install was left as it was, and any others were handled as reported (with --json, each install's `changed` and `error` say which); rerun after the fix, it skips what is done. 2 wins over 1.";
/// The exit codes of `revert`, as its `--help` says them.
pub const REVERT_HELP: &str = "Exit codes: 0 done: each patched install restored, or nothing to restore; 1 attention: an install was refused (changed since it was patched, or its backup holds no known original, without --yes), or a patched install has no backup to revert from; 2 error: bad input, or an install failed: that install was left as it was, and any others were handled as reported (with --json, each install's `changed` and `error` say which); rerun after the fix, it skips what is done. 2 wins over 1.";
/// The exit codes of `verify`, as its `--help` says them.
pub const VERIFY_HELP: &str = "Exit codes: 0 every scenario met its expectation; 1 attention: a scenario did not (STUCK, RECYCLED, BROKEN, ...), or an install was skipped as unsupported; 2 error: bad input, node missing, or an install could not be checked (any others were checked as reported); verify changes no install. 2 wins over 1.";

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing needs attention.
    Clean,
    /// Something needs the user's attention (see the module table).
    Attention,
}

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Clean => ExitCode::from(SUCCESS),
            Outcome::Attention => ExitCode::from(ATTENTION),
        }
    }

    /// Attention if either needs it.
    pub fn and(self, other: Outcome) -> Outcome {
        if self == Outcome::Attention || other == Outcome::Attention {
            Outcome::Attention
        } else {
            Outcome::Clean
        }
    }
}
