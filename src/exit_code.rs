//! The process exit codes of every mcpatch command, in one place.
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | nothing needs attention: no install affected, every patch or revert done, every verify scenario met its expectation |
//! | 1 | something needs attention: an install is affected or modified, an install was refused (modified without `--yes`, unsupported), or a verify scenario did not meet its expectation (STUCK, wrongful recycle) |
//! | 2 | error: bad input, I/O failure, a check that failed; nothing was changed |

use std::process::ExitCode;

pub const SUCCESS: u8 = 0;
pub const ATTENTION: u8 = 1;
pub const ERROR: u8 = 2;

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
