//! The stdio bridge driver's part in `verify --explore` (mcp-remote): the
//! explored plans run through the installed bridge as the fixed table does
//! (its manifest's command, a process and a fake server of its own for each
//! run), with mcpatch as its stdio host. A bridge takes no caller's timeout or
//! abort signal per call: its plans have none (see
//! [`stdio_host::HostPlans`]), and it is judged as a client that tries one new
//! session per call that meets a loss, each call bounded by the host's own
//! deadline.

use std::time::Duration;

use crate::error::Result;
use crate::verify::drivers::stdio_host::{self, Launch};
use crate::verify::explore::{self, Exploration};
use crate::verify::process::Environment;
use crate::verify::report::{with_exploration, Expectations, InstallResult};
use crate::verify::target::Target;
use crate::verify::VerifyOptions;

/// How many explored runs `opts` asks of a bridge install checked on
/// `target`, as for the DSH plugin and the SDK clients
/// ([`VerifyOptions::explore_runs`]).
pub(super) fn runs(target: &Target, opts: &VerifyOptions) -> u32 {
    opts.explore_runs(Expectations::of(target.is_current_patch(), opts.strict).seamless())
}

/// Run `runs` explored plans through the bridge `launch` starts.
pub(super) async fn explore(
    launch: Launch<'_>,
    environment: &Environment,
    startup: Duration,
    runs: u32,
    opts: &VerifyOptions,
    progress: bool,
) -> Result<Exploration> {
    let runner = stdio_host::HostPlans {
        launch,
        environment,
        startup,
        // mcp-remote passes its host's handshake on as it comes.
        own_handshake: false,
        // Its stdio carries no caller's timeout or abort signal.
        caller_bounds: false,
        jobs: explore::jobs(opts.jobs, runs),
        left_out: Default::default(),
    };
    let seed = opts.seed.unwrap_or(explore::DEFAULT_SEED);
    explore::explore(&runner, runs, seed, progress).await
}

/// `result` with the exploration `found` added: a failed one fails a passing
/// install; with `--explore-only` (no scenario ran) one that kept every rule
/// says EXPLORED.
pub(super) fn add(
    mut result: InstallResult,
    found: Exploration,
    explore_only: bool,
) -> InstallResult {
    result.overall = with_exploration(result.overall, found.ok, explore_only);
    result.exploration = Some(found);
    result
}
