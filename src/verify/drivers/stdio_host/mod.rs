//! mcpatch as the stdio host of a bridge, shared by the drivers that run a
//! program speaking MCP over stdio (an installed bridge, the SDK's host
//! script) and by `mcpatch verify --command CMD`, which verifies any stdio MCP
//! bridge (mcp-remote, mcp-proxy, supergateway, ...) against the fake server, in the MCP
//! conformance suite's convention: the server URL put in place of `{url}` or
//! appended as the last argument, `MCP_CONFORMANCE_SCENARIO` and
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` set. mcpatch is the bridge's stdio host;
//! the verdicts are the same judges' as for the DSH plugin, from the server's
//! witness log and the answers that came back over stdio.

mod drive;
mod explored;
mod host;
mod rules;

pub use explored::CommandExplore;
pub(crate) use explored::HostPlans;

use super::LeftOut;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::color;
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::verify::fake_server::{FakeServer, LostSessionAnswer, WitnessEntry, PROTOCOL_VERSIONS};
use crate::verify::process::{self as child, orphans};
use crate::verify::render::{overall_style, scenario_table, shown_verdict};
use crate::verify::scenario::Policy;
use crate::verify::scenario::{
    self, host_report, invariants, Evidence, Expectation, Judgement, Plan, Scenario, ScenarioName,
};
use crate::verify::signals::Interrupts;

/// The default of `--startup-timeout`: `npx` may download the bridge first.
pub const DEFAULT_STARTUP: Duration = Duration::from_secs(60);
/// Scenario runs of an installed bridge or an SDK host at once after the
/// first when `--jobs` is not given. Each is a node process of its own that
/// mostly waits on its fake server, so four at a time take about a quarter of
/// the time for the same CPU; a run made late by the others (a loaded 2-core
/// machine) is run again alone, and its lone verdict stands.
pub const DEFAULT_JOBS: usize = 4;
/// Test-only: panic at the named step (only `bridge-ran`), to prove that a
/// panic unwinding through a run still kills and reaps the bridge.
const PANIC_AT: &str = "MCPATCH_TEST_PANIC_AT";
/// Lines of the bridge's stderr a BROKEN note quotes.
const NOTE_STDERR_LINES: usize = 5;

/// Options of `mcpatch verify --command`.
#[derive(Debug, Clone)]
pub struct BridgeOptions {
    /// The bridge's command line, as typed (quoted as for a shell).
    pub command: String,
    pub scenarios: Vec<ScenarioName>,
    pub json: bool,
    /// How long the bridge may take to answer the first initialize.
    pub startup: Duration,
    /// Print each scenario's stderr of the bridge.
    pub verbose: bool,
    /// Where the bridge's environment comes from: mcpatch's own for the
    /// user's `--command`, cleared for an install mcpatch found.
    pub environment: child::Environment,
    /// The client speaks MCP itself (an SDK's own Client, not a proxy passing
    /// its host's messages on): every session it uses must have had its
    /// `notifications/initialized` first, new sessions of a recovery included.
    pub own_handshake: bool,
    /// The host passes a call's own timeout and abort signal on to the client
    /// (the SDK targets' host scripts read `_meta` [`drive::WITHIN_META`]), so
    /// the deadline and abort scenarios run; a bridge takes none.
    pub caller_bounds: bool,
    /// The host can make its client with an OAuth authProvider when asked
    /// (`mcpatch/auth`), so the OAuth scenarios run; a bridge cannot.
    pub auth_provider: bool,
    /// The client is known to keep a GET stream (the SDK's own client,
    /// mcp-remote), so `get-stream-loss` runs by default; for a bridge named
    /// by `--command` it runs only when named.
    pub get_stream: bool,
    /// Scenario runs at once after the first (each a bridge process of its
    /// own): `--jobs`, else [`DEFAULT_JOBS`] for an install mcpatch found; 1 for
    /// a bridge named by `--command`, whose own resources (a fixed port, a
    /// lock file) mcpatch cannot know.
    pub jobs: usize,
}

/// The argv and the variables of a bridge to start against a server's URL.
pub(crate) type Launch<'a> = &'a dyn Fn(&str) -> (Vec<OsString>, Vec<(String, OsString)>);

/// A conformance check, as the MCP conformance suite names and reports it.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub id: &'static str,
    /// SUCCESS or FAILURE.
    pub status: &'static str,
    pub description: &'static str,
    /// What failed, for a FAILURE.
    pub error_message: Option<String>,
}

/// One scenario's result.
#[derive(Debug, Clone, Serialize)]
pub struct BridgeScenario {
    pub name: ScenarioName,
    pub expected: Expectation,
    /// verdict, ok, recovery_ms, trigger_ms, failed_calls, initialize_count, trigger_error, note.
    #[serde(flatten)]
    pub judgement: Judgement,
    /// The conformance suite's session checks (the scenarios whose server answers a lost session with 404).
    pub checks: Vec<Check>,
    /// Sessions the bridge opened before the one its host's calls went through (a
    /// connection test at start-up), left out of the verdict and the checks.
    pub sessions_before_host: usize,
    /// How the bridge ended, when it ended by itself during the scenario (else null).
    pub exit: Option<String>,
    /// The bridge's stderr during this scenario (its last lines).
    pub stderr: String,
    /// Lines of stderr left out before `stderr` (0 when it is whole).
    pub stderr_lines_dropped: usize,
    /// Lines on the bridge's stdout that were not JSON-RPC messages.
    pub stdout_noise: Vec<String>,
    /// Whether the bridge got through its handshake (initialize, tools/list).
    #[serde(skip)]
    pub started: bool,
    /// Why the scenario was not run after all (the host's handshake said it
    /// cannot run it): it then goes to `left_out`, not to the results.
    #[serde(skip)]
    pub left_out: Option<&'static str>,
}

/// A scenario not run because the bridge could not start in scenario `first`.
fn not_run(s: &Scenario, first: ScenarioName) -> BridgeScenario {
    BridgeScenario {
        name: s.name,
        expected: s.expectation(true),
        judgement: Judgement {
            verdict: "BROKEN",
            ok: false,
            recovery_ms: None,
            trigger_ms: None,
            failed_calls: 0,
            initialize_count: 0,
            trigger_error: None,
            note: format!("not run: the bridge did not get through its handshake in {first}"),
            late_only: false,
        },
        checks: Vec::new(),
        sessions_before_host: 0,
        exit: None,
        stderr: String::new(),
        stderr_lines_dropped: 0,
        stdout_noise: Vec::new(),
        started: false,
        left_out: None,
    }
}

#[derive(Debug, Serialize)]
struct BridgeReport {
    /// The bridge's command, split as a shell would (before the URL is put in).
    command: Vec<String>,
    protocol_version: &'static str,
    startup_timeout_ms: u64,
    call_timeout_ms: u64,
    /// SEAMLESS, RECOVERED or HELD when every scenario met its expectation, else STUCK or FAILED.
    overall: &'static str,
    scenarios: Vec<BridgeScenario>,
    left_out: Vec<LeftOut>,
    /// The explored runs (`--explore`), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    exploration: Option<crate::verify::explore::Exploration>,
    /// What stopped the check outside any one scenario (an interrupt), else null.
    error: Option<String>,
}

/// Why a scenario does not run against a bridge, if it does not;
/// `caller_bounds`: whether its host passes a call's timeout and abort signal;
/// `auth_provider`: whether it can make its client with an authProvider.
fn left_out_why(s: &Scenario, caller_bounds: bool, auth_provider: bool) -> Option<&'static str> {
    const POLICY: &str = "its verdict measures the DSH plugin's reconnect policy (backoff and attempts per outage), which a bridge does not share";
    if s.needs_auth_provider() && !auth_provider {
        return Some(drive::NO_AUTH_PROVIDER);
    }
    if s.plan != Plan::Reload && Policy::for_scenario(s.name) != Policy::Short {
        return Some(POLICY);
    }
    match s.plan {
        Plan::Invalidate
        | Plan::Idle
        | Plan::Restart
        | Plan::Ordinary
        | Plan::Settle
        | Plan::Concurrent
        | Plan::Cut
        | Plan::Reload
        // Judged per call: at most one new session per call that meets a loss.
        // Judged on the server's witness log: the GET stream reopened on a new session.
        | Plan::StreamLoss
        | Plan::Forgetful
        | Plan::RefusedOnce
        // Only with an authProvider (above).
        | Plan::TokenRefused => None,
        p if p.needs_caller_bounds() && caller_bounds => None,
        Plan::Sdk2 => Some("it reshapes the errors of the DSH plugin's bundled SDK inside the plugin harness; a bridge's SDK errors never reach mcpatch"),
        Plan::Timeout | Plan::AbortWaiting | Plan::DeadlineWaiting | Plan::DeadlineResend => Some("its deadline or abort signal is an argument of the DSH plugin's call API (toolCallTimeoutMs, AbortSignal), which a bridge's stdio host cannot pass"),
        Plan::Relist | Plan::ToolsChanged => Some("a bridge keeps no tool list of its own: its host re-lists the tools"),
        Plan::GiveUp | Plan::LossesApart => Some(POLICY),
    }
}

/// Why `get-stream-loss` does not run by default against a bridge named by `--command`.
const UNKNOWN_GET_STREAM: &str = "a bridge named by --command may keep no GET stream (it is optional), and then has nothing to reopen; `--scenario get-stream-loss` runs it";

/// What the DSH plugin's runs have that a bridge's do not.
const DEFAULT_POLICY_LEFT_OUT: &str = "the second expired-404 run under the DSH plugin's default reconnect policy has no counterpart: a bridge has one behaviour, checked against the same deadline as every scenario";

/// Run the scenarios of `opts` (its `command` unused) on the bridge that
/// `launch` starts against a server's URL, for `verify` of an installed bridge, inside the caller's runtime (which handles signals: a
/// dropped run kills and reaps the bridge): the results and the overall
/// verdict, and the scenarios left out; `progress` prints a line per scenario on stderr.
pub(crate) async fn run_launch(
    opts: &BridgeOptions,
    launch: Launch<'_>,
    progress: bool,
) -> Result<(Vec<BridgeScenario>, &'static str, Vec<LeftOut>)> {
    let (chosen, mut left_out) = choose(opts)?;
    let mut results = Vec::new();
    run_scenarios(opts, launch, &chosen, &mut results, &mut left_out, progress).await?;
    let overall = overall(&results);
    Ok((results, overall, left_out))
}

/// The scenarios a bridge runs, and those left out with why.
fn choose(opts: &BridgeOptions) -> Result<(Vec<Scenario>, Vec<LeftOut>)> {
    let mut chosen = Vec::new();
    let mut left_out = Vec::new();
    for s in scenario::all().into_iter().filter(|s| {
        if opts.scenarios.is_empty() {
            !crate::verify::scenario::reload::by_name_only(s)
        } else {
            opts.scenarios.contains(&s.name)
        }
    }) {
        let unknown_stream =
            s.plan == Plan::StreamLoss && !opts.get_stream && opts.scenarios.is_empty();
        match left_out_why(&s, opts.caller_bounds, opts.auth_provider)
            .or(unknown_stream.then_some(UNKNOWN_GET_STREAM))
        {
            Some(why) => left_out.push(LeftOut {
                name: s.name.to_string(),
                why,
            }),
            None => chosen.push(s),
        }
    }
    if opts.scenarios.is_empty() || opts.scenarios.contains(&ScenarioName::Expired404) {
        left_out.push(LeftOut {
            name: "expired-404 (default policy)".into(),
            why: DEFAULT_POLICY_LEFT_OUT,
        });
    }
    if chosen.is_empty() {
        return Err(Error::BridgeNothingToRun {
            left_out: left_out
                .iter()
                .map(|l| format!("{}: {}", l.name, l.why))
                .collect(),
        });
    }
    Ok((chosen, left_out))
}

/// An install a bridge host checked (the bridge and sdk-client drivers): held
/// to seamless recovery whatever its file, with the host's own overall word
/// (FAILED when no scenario ran) and a note: `control_note` for a saved
/// original, the next step for an unpatched file, none otherwise.
pub(crate) fn checked_install(
    install: &crate::classify::Install,
    target: &crate::verify::target::Target,
    node_version: String,
    scenarios: Vec<crate::verify::report::ScenarioResult>,
    overall: &'static str,
    left_out: Vec<LeftOut>,
    control_note: &str,
) -> crate::verify::report::InstallResult {
    use crate::verify::report::{Expectations, InstallResult};
    let note = if target.backup.is_some() {
        Some(control_note.to_string())
    } else if target.state == crate::classify::State::Affected {
        Some("not patched: run `mcpatch apply`".to_string())
    } else {
        None
    };
    let mut result = InstallResult::checked(
        install,
        target,
        node_version,
        Expectations::of(target.is_current_patch(), true),
        scenarios,
    );
    result.overall = overall;
    result.note = note;
    result.left_out = left_out;
    result
}

/// `mcpatch verify --command`: the scenarios of `opts`, then the explored
/// runs `explore` asks for (with `--explore-only`, those alone).
pub fn run(opts: &BridgeOptions, explore: Option<&CommandExplore>) -> Result<Outcome> {
    let words = child::parse(&opts.command)?;
    let (chosen, mut left_out) = match explore {
        Some(x) if x.only => (Vec::new(), Vec::new()),
        _ => choose(opts)?,
    };
    let mut results = Vec::new();
    // The user's own command: `{url}` in its words, else the URL last.
    let launch = |url: &str| (child::with_url(&words, url), Vec::new());
    let mut exploration = None;
    let result = run_all(
        opts,
        &launch,
        &chosen,
        &mut results,
        &mut left_out,
        explore.map(|x| (x, &mut exploration)),
    );
    let overall = explored::overall(overall(&results), exploration.as_ref(), explore);
    let result = result.map(|outcome| match &exploration {
        Some(e) if !e.ok => Outcome::Attention,
        _ => outcome,
    });
    if opts.json {
        let report = BridgeReport {
            command: words,
            protocol_version: PROTOCOL_VERSIONS[0],
            startup_timeout_ms: opts.startup.as_millis() as u64,
            call_timeout_ms: drive::CALL_LIMIT.as_millis() as u64,
            overall,
            scenarios: results,
            left_out,
            exploration,
            error: result.as_ref().err().map(|e| e.to_string()),
        };
        let text = serde_json::to_string_pretty(&report).expect("report serializes");
        crate::outln!("{text}");
    } else if result.is_ok() {
        let text = render(
            &opts.command,
            &results,
            &left_out,
            exploration.as_ref(),
            overall,
        );
        crate::out!("{text}");
    }
    result
}

/// Where the explored runs asked of `--command` go, with how to run them.
type Exploring<'a> = Option<(
    &'a CommandExplore,
    &'a mut Option<crate::verify::explore::Exploration>,
)>;

fn run_all(
    opts: &BridgeOptions,
    launch: Launch<'_>,
    chosen: &[Scenario],
    results: &mut Vec<BridgeScenario>,
    left_out: &mut Vec<LeftOut>,
    exploring: Exploring<'_>,
) -> Result<Outcome> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            Error::io(
                "start",
                "the async runtime",
                e,
                "check the machine's thread limits",
            )
        })?;
    let progress = !opts.json || std::io::stderr().is_terminal();
    rt.block_on(async {
        // From here a signal is ours: the run below is dropped, which kills and reaps the bridge.
        let mut signals = Interrupts::listen()?;
        let all = async {
            let outcome = if chosen.is_empty() {
                Outcome::Clean
            } else {
                run_scenarios(opts, launch, chosen, results, left_out, progress).await?
            };
            if let Some((x, found)) = exploring {
                *found = Some(explored::explore_command(opts, launch, x, progress).await?);
            }
            Ok(outcome)
        };
        tokio::select! {
            r = all => r,
            signal = signals.next() => Err(Error::BridgeInterrupted { signal, stopped: orphans::STOPPED }),
        }
    })
}

/// Run `chosen` on the bridge `launch` starts: the first alone, then the rest
/// `opts.jobs` at a time (each run has a server and a bridge process of its
/// own), each verdict printed as it comes and every result pushed to
/// `results` in the table's order; a scenario the host turned out unable to
/// run (its handshake said so) goes to `left_out`.
async fn run_scenarios(
    opts: &BridgeOptions,
    launch: Launch<'_>,
    chosen: &[Scenario],
    results: &mut Vec<BridgeScenario>,
    left_out: &mut Vec<LeftOut>,
    progress: bool,
) -> Result<Outcome> {
    use futures_util::stream::{self, StreamExt};

    let started = Instant::now();
    let total = chosen.len();
    // A bridge that could not start once is not started again (each try may
    // wait the whole start-up limit): the scenarios left say so. The first
    // runs alone so that a bridge that cannot start is started once.
    let not_started: std::cell::Cell<Option<ScenarioName>> = std::cell::Cell::new(None);
    let mut done: Vec<Option<BridgeScenario>> = chosen.iter().map(|_| None).collect();
    let mut finished = 0;
    let mut report = |i: usize, one: BridgeScenario| {
        finished += 1;
        if progress {
            let name = chosen[i].name;
            match &one.left_out {
                Some(_) => crate::errln!("[{finished}/{total}] {name}: left out"),
                None => {
                    let shown = shown_verdict(color::stderr(), &one.judgement, one.expected);
                    crate::errln!(
                        "[{finished}/{total}] {name}: {shown} at {:.1} s",
                        started.elapsed().as_secs_f64()
                    );
                }
            }
        }
        if opts.verbose && one.left_out.is_none() {
            crate::errln!("--- stderr of the bridge ({}) ---", chosen[i].name);
            if !one.stderr.is_empty() {
                crate::errln!("{}", crate::output::clean_lines(&one.stderr));
            }
            crate::errln!("--- end ---");
        }
        done[i] = Some(one);
    };
    if let Some(first) = chosen.first() {
        report(0, run_unless(first, launch, opts, &not_started).await?);
    }
    let mut rest = stream::iter(chosen.iter().enumerate().skip(1))
        .map(|(i, s)| {
            let not_started = &not_started;
            async move {
                run_unless(s, launch, opts, not_started)
                    .await
                    .map(|one| (i, one))
            }
        })
        .buffer_unordered(opts.jobs.max(1));
    while let Some(ran) = rest.next().await {
        let (i, one) = ran?;
        report(i, one);
    }
    // A run that failed beside others only by a time limit (a late recovery,
    // a call with no answer in time: a bridge starved of the CPU looks the
    // same) is run again alone once the others are done: the lone verdict
    // stands, and its note says what the shared run saw.
    let side_by_side = opts.jobs.max(1).min(total.saturating_sub(1));
    for (i, s) in chosen.iter().enumerate().skip(1) {
        let Some(beside) = done[i].as_ref().filter(|one| {
            side_by_side > 1
                && one.left_out.is_none()
                && one.started
                && !one.judgement.ok
                && one.judgement.late_only
        }) else {
            continue;
        };
        let mut lone = run_one(s, launch, opts).await?;
        lone.judgement = scenario::again_alone(&beside.judgement, lone.judgement, side_by_side - 1);
        if progress {
            let shown = shown_verdict(color::stderr(), &lone.judgement, lone.expected);
            crate::errln!(
                "[again alone] {}: {shown} at {:.1} s",
                s.name,
                started.elapsed().as_secs_f64()
            );
        }
        done[i] = Some(lone);
    }
    for (s, one) in chosen.iter().zip(done) {
        let Some(mut one) = one else { continue };
        if let Some(why) = one.left_out.take() {
            left_out.push(LeftOut {
                name: s.name.to_string(),
                why,
            });
            continue;
        }
        results.push(one);
    }
    Ok(if results.iter().all(|r| r.judgement.ok) {
        Outcome::Clean
    } else {
        Outcome::Attention
    })
}

/// Run `s`, unless a scenario before it found that the bridge does not
/// start (`not_started`, set here when `s` finds so).
async fn run_unless(
    s: &Scenario,
    launch: Launch<'_>,
    opts: &BridgeOptions,
    not_started: &std::cell::Cell<Option<ScenarioName>>,
) -> Result<BridgeScenario> {
    let one = match not_started.get() {
        Some(first) => not_run(s, first),
        None => run_one(s, launch, opts).await?,
    };
    if !one.started && not_started.get().is_none() {
        not_started.set(Some(s.name));
    }
    Ok(one)
}

async fn run_one(s: &Scenario, launch: Launch<'_>, opts: &BridgeOptions) -> Result<BridgeScenario> {
    let (startup, environment) = (opts.startup, &opts.environment);
    let server = FakeServer::start(s.behaviour.clone(), 0).await?;
    let (argv, env) = launch(&server.url());
    let version = PROTOCOL_VERSIONS[0];
    let (bridge, stdin, stdout) =
        child::GroupChild::spawn(&argv, s.name.as_str(), version, environment, &env)?;
    let host = Arc::new(host::Host::new(
        stdin,
        stdout,
        host::relist_for(opts.own_handshake),
    ));
    let run = drive::run(s, &server, host.clone(), startup, version).await;
    // The bridge still runs here: the fault tests fail or panic at this point
    // to prove it is killed and reaped on those paths too.
    crate::kill_point::reached("bridge-ran")?;
    if std::env::var_os(PANIC_AT).is_some_and(|v| v == "bridge-ran") {
        panic!("{PANIC_AT}=bridge-ran");
    }
    let stderr = bridge.stderr.clone();
    // Was the end the bridge's own? Look before mcpatch closes its stdin.
    let ended_itself = matches!(run.stop, Some(drive::Stop::Closed(_)));
    let status = drive::finish(&host, bridge).await;
    let exit = if ended_itself {
        Some(status.map_or_else(|| "its stdout ended".to_string(), |s| s.to_string()))
    } else {
        None
    };
    let (stderr_text, dropped, tail) = match stderr.lock() {
        Ok(t) => (t.text(), t.dropped, t.last(NOTE_STDERR_LINES)),
        Err(_) => Default::default(),
    };
    let (witness, before_host) = host_scope(server.witness());
    let dropped_ids = server.dropped_sessions();
    let expected = s.expectation(true);
    let mut judgement = match &run.stop {
        None => {
            let counts = server.call_counts();
            let ev = Evidence {
                witness: &witness,
                dropped: &dropped_ids,
                counts: &counts,
                calls: &run.calls,
                policy: Policy::Short,
                seamless: true,
                // A bridge has no reconnect policy: `forgetful` allows it one new
                // session per call that meets a loss. `reload` keeps its 1 s limit
                // (the relaxed one is for a headless CLI's turn, not a bridge's call).
                per_call_recovery: s.plan == Plan::Forgetful,
            };
            // A bridge keeps no tool list of its own: its host lists the tools.
            let judged = scenario::judge_with(s, expected, &ev, false);
            let foreign = host.foreign.lock().map(|f| f.clone()).unwrap_or_default();
            rules::also(
                judged,
                s,
                &ev,
                &foreign,
                opts.caller_bounds,
                opts.own_handshake,
            )
        }
        Some(stop) => stopped(stop, &witness, &run.calls, exit.as_deref(), &tail),
    };
    if judgement.ok && opts.own_handshake {
        if let Some(note) = invariants::used_before_initialized(&witness) {
            judgement.verdict = "BROKEN";
            judgement.ok = false;
            judgement.note = note;
        }
    }
    // What the host saw inside its client: rules the witness cannot see.
    match (&run.report, judgement.ok) {
        (Some(Ok(report)), true) => {
            if let Some(v) = host_report::check(s, report) {
                judgement.verdict = v.verdict;
                judgement.ok = false;
                judgement.note = v.note;
            }
        }
        (Some(Err(why)), true) => {
            judgement.verdict = "BROKEN";
            judgement.ok = false;
            judgement.note = why.clone();
        }
        _ => {}
    }
    let checks = checks(s, &witness, &dropped_ids);
    Ok(BridgeScenario {
        name: s.name,
        expected,
        judgement,
        checks,
        sessions_before_host: before_host,
        exit,
        stderr: stderr_text,
        stderr_lines_dropped: dropped,
        stdout_noise: host.stray.lock().map(|s| s.clone()).unwrap_or_default(),
        started: !run.tools.is_empty(),
        left_out: run.left_out,
    })
}

/// The witness log from the session the host's calls went through on: a bridge
/// may open sessions of its own before it (mcp-remote tests the connection with
/// one), which are no session its host used. Returns the log without those
/// sessions, and how many there were.
pub(crate) fn host_scope(witness: Vec<WitnessEntry>) -> (Vec<WitnessEntry>, usize) {
    let host_session = witness
        .iter()
        .find(|e| e.rpc_method.as_deref() == Some("tools/call"))
        .and_then(|e| e.session_sent.clone());
    let Some(start) = host_session.and_then(|s| {
        witness
            .iter()
            .position(|e| e.session_issued.as_deref() == Some(s.as_str()))
    }) else {
        return (witness, 0);
    };
    let earlier: Vec<String> = witness[..start]
        .iter()
        .filter_map(|e| e.session_issued.clone())
        .collect();
    let scoped = witness
        .into_iter()
        .skip(start)
        .filter(|e| e.session_sent.as_ref().is_none_or(|s| !earlier.contains(s)))
        .collect();
    (scoped, earlier.len())
}

/// The verdict of a run that stopped early: HANG for a bridge that stopped
/// answering, BROKEN for one that ended or answered the handshake wrongly.
fn stopped(
    stop: &drive::Stop,
    witness: &[WitnessEntry],
    calls: &[scenario::HarnessCall],
    exit: Option<&str>,
    stderr_tail: &str,
) -> Judgement {
    let (verdict, note) = match stop {
        drive::Stop::Hang(what) => ("HANG", format!("{what}; the bridge was still running")),
        drive::Stop::Closed(what) => {
            let how = exit.map(|e| format!(" ({e})")).unwrap_or_default();
            let tail = if stderr_tail.is_empty() {
                "its stderr was empty".to_string()
            } else {
                format!(
                    "its stderr ended: {}",
                    crate::output::clean_lines(stderr_tail).replace('\n', " | ")
                )
            };
            ("BROKEN", format!("{what}{how}; {tail}"))
        }
        drive::Stop::Handshake(what) => ("BROKEN", what.clone()),
    };
    Judgement {
        verdict,
        ok: false,
        recovery_ms: None,
        trigger_ms: None,
        failed_calls: calls.iter().filter(|c| !c.ok).count(),
        initialize_count: witness
            .iter()
            .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 200)
            .count(),
        trigger_error: None,
        note,
        // A call with no answer within its limit: a time limit, which a
        // bridge starved of the CPU misses as well as a broken one.
        late_only: matches!(stop, drive::Stop::Hang(_)),
    }
}

pub const CHECK_RENEGOTIATE: &str = "client-session-renegotiate-on-404";
pub const CHECK_CONTINUES: &str = "client-session-continues-after-renegotiation";

/// Whether a scenario is one the conformance suite's session checks apply to:
/// the server loses the session under the client and answers it with 404.
fn answers_404(s: &Scenario) -> bool {
    s.expect == Expectation::Recover
        && matches!(
            s.behaviour.lost_session,
            LostSessionAnswer::NotFoundJsonRpc
                | LostSessionAnswer::NotFoundText
                | LostSessionAnswer::NotFoundPlain
        )
}

/// The conformance suite's two session checks, from the witness log: after a
/// 404 to a request carrying a dropped session id, (1) a fresh initialize
/// without a session id, (2) requests on the new session answered, and none
/// carrying the old id once the new session was set up.
fn checks(s: &Scenario, witness: &[WitnessEntry], dropped: &[String]) -> Vec<Check> {
    if !answers_404(s) {
        return Vec::new();
    }
    let dead = |e: &WitnessEntry| {
        e.session_sent
            .as_ref()
            .is_some_and(|id| dropped.contains(id))
    };
    let lost = witness.iter().position(|e| dead(e) && e.status == 404);
    let fresh = lost.and_then(|at| {
        witness[at..]
            .iter()
            .position(|e| {
                e.rpc_method.as_deref() == Some("initialize")
                    && e.session_sent.is_none()
                    && e.status == 200
            })
            .map(|i| i + at)
    });
    let check = |id, description, failure: Option<String>| Check {
        id,
        status: if failure.is_none() {
            "SUCCESS"
        } else {
            "FAILURE"
        },
        description,
        error_message: failure,
    };
    let renegotiate = match (lost, fresh) {
        (None, _) => {
            Some("the client never sent a request that met the 404 of a lost session".into())
        }
        (Some(_), None) => {
            Some("after the 404 the client never sent a new initialize without a session id".into())
        }
        _ => None,
    };
    let continues = match fresh {
        None => Some("there was no new session to continue on".into()),
        Some(at) => {
            let new_id = witness[at].session_issued.clone().unwrap_or_default();
            let established = witness[at].answered_ms;
            let old_later = witness
                .iter()
                .filter(|e| dead(e) && e.t_ms > established)
                .count();
            let answered = witness[at + 1..].iter().any(|e| {
                e.session_sent.as_deref() == Some(new_id.as_str())
                    && e.rpc_method.as_deref() != Some("initialize")
                    && (200..300).contains(&e.status)
            });
            if old_later > 0 {
                Some(format!("{old_later} request(s) still carried the old session id after the new session was set up"))
            } else if !answered {
                Some("no request on the new session was answered".into())
            } else {
                None
            }
        }
    };
    vec![
        check(
            CHECK_RENEGOTIATE,
            "on a 404 for a request carrying a session id, the client starts a new session with an initialize that carries no session id",
            renegotiate,
        ),
        check(
            CHECK_CONTINUES,
            "after renegotiating, the client continues on the new session id, not the old one",
            continues,
        ),
    ]
}

/// One word for the bridge: the weakest result that still met every expectation, or what failed.
fn overall(results: &[BridgeScenario]) -> &'static str {
    if results.is_empty() || !results.iter().all(|r| r.judgement.ok) {
        return if results.iter().any(|r| r.judgement.verdict == "STUCK") {
            "STUCK"
        } else {
            "FAILED"
        };
    }
    let verdicts: Vec<&str> = results
        .iter()
        .map(|r| scenario::overall_verdict(r.name, r.judgement.verdict))
        .collect();
    if verdicts.contains(&"RECOVERED") {
        "RECOVERED"
    } else if verdicts.contains(&"SEAMLESS") {
        "SEAMLESS"
    } else {
        "HELD"
    }
}

fn render(
    command: &str,
    results: &[BridgeScenario],
    left_out: &[LeftOut],
    exploration: Option<&crate::verify::explore::Exploration>,
    overall: &str,
) -> String {
    let paint = color::stdout();
    let columns = crate::width::stdout_columns();
    // A word wider than the room (a long path) is shortened from the middle, as status does.
    let lead = "bridge: ";
    let shown: Vec<String> = crate::output::clean(command)
        .split(' ')
        .map(|w| match columns {
            Some(c) => crate::table::shorten_middle(w, c.saturating_sub(lead.len()).max(1)),
            None => w.to_string(),
        })
        .collect();
    let mut s = crate::table::hanging(lead, &shown.join(" "), columns);
    let rows: Vec<(String, &Judgement, Expectation)> = results
        .iter()
        .map(|x| (x.name.to_string(), &x.judgement, x.expected))
        .collect();
    // --explore-only runs no scenario: no table.
    if !(rows.is_empty() && exploration.is_some()) {
        s.push_str(&scenario_table(&rows, columns, paint));
    }
    for l in left_out {
        s.push_str(&crate::table::hanging(
            "left out ",
            &format!("{}: {}", l.name, l.why),
            columns,
        ));
    }
    if let Some(e) = exploration {
        s.push_str(&crate::verify::explore::render(e, columns, paint));
    }
    s.push_str(&paint.paint(overall_style(overall), overall));
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(
        t: u64,
        rpc: &str,
        sent: Option<&str>,
        status: u16,
        issued: Option<&str>,
    ) -> WitnessEntry {
        WitnessEntry {
            seq: t,
            t_ms: t,
            answered_ms: t,
            http_method: "POST".into(),
            rpc_method: Some(rpc.into()),
            session_sent: sent.map(str::to_string),
            status,
            session_issued: issued.map(str::to_string),
            ..Default::default()
        }
    }

    fn call(t: u64, sent: &str, id: &str, status: u16) -> WitnessEntry {
        WitnessEntry {
            call_id: Some(id.into()),
            executed: Some(status == 200),
            call_ok: (status == 200).then_some(true),
            ..entry(t, "tools/call", Some(sent), status, None)
        }
    }

    fn dropped_note(t: u64) -> WitnessEntry {
        WitnessEntry {
            http_method: "CONTROL".into(),
            rpc_method: None,
            note: Some("invalidate: dropped 1 session(s)".into()),
            ..entry(t, "", None, 200, None)
        }
    }

    /// A bridge that tests the connection with session p0, serves its host on
    /// s1, loses it, starts s2 without the dead id and resends the call once
    /// (no tools/list: its host never asked).
    fn renegotiated() -> Vec<WitnessEntry> {
        vec![
            entry(0, "initialize", None, 200, Some("p0")),
            entry(1, "initialize", None, 200, Some("s1")),
            entry(2, "tools/list", Some("s1"), 200, None),
            call(3, "s1", "c1", 200),
            dropped_note(4),
            call(5, "s1", "c2", 404),
            entry(6, "initialize", None, 200, Some("s2")),
            call(7, "s2", "c2", 200),
            // The connection test's GET, reopened with its dead id.
            WitnessEntry {
                http_method: "GET".into(),
                rpc_method: None,
                ..entry(8, "", Some("p0"), 404, None)
            },
        ]
    }

    #[test]
    fn the_verdict_starts_at_the_session_the_hosts_calls_went_through() {
        let (scoped, before) = host_scope(renegotiated());
        assert_eq!(before, 1);
        assert_eq!(scoped.len(), 7);
        assert_eq!(scoped[0].session_issued.as_deref(), Some("s1"));
        assert!(scoped
            .iter()
            .all(|e| e.session_sent.as_deref() != Some("p0")));
        // No call: nothing to scope by.
        let w = vec![entry(0, "initialize", None, 200, Some("s1"))];
        assert_eq!(host_scope(w).1, 0);
    }

    #[test]
    fn a_bridge_recovers_without_relisting_tools_where_the_plugin_must_relist() {
        let s = scenario::find(ScenarioName::Expired404);
        let (witness, _) = host_scope(renegotiated());
        let dropped = vec!["s1".to_string(), "p0".to_string()];
        let counts = [
            (
                "c1".to_string(),
                crate::verify::fake_server::CallCount { sent: 1, ran: 1 },
            ),
            (
                "c2".to_string(),
                crate::verify::fake_server::CallCount { sent: 2, ran: 1 },
            ),
        ]
        .into_iter()
        .collect();
        let calls = vec![
            scenario::HarnessCall {
                call_id: "c1".into(),
                name: "echo".into(),
                ok: true,
                error: None,
                ms: 1,
            },
            scenario::HarnessCall {
                call_id: "c2".into(),
                name: "echo".into(),
                ok: true,
                error: None,
                ms: 2,
            },
        ];
        let ev = Evidence {
            witness: &witness,
            dropped: &dropped,
            counts: &counts,
            calls: &calls,
            policy: Policy::Short,
            seamless: true,
            per_call_recovery: false,
        };
        let j = scenario::judge_with(&s, Expectation::Seamless, &ev, false);
        assert_eq!((j.verdict, j.ok), ("SEAMLESS", true), "{}", j.note);
        assert_eq!(
            j.note,
            "one fresh initialize without the dead id, calls succeeded"
        );
        let j = scenario::judge(&s, Expectation::Seamless, &ev);
        assert_eq!((j.verdict, j.ok), ("STUCK", false));
        assert_eq!(
            j.note,
            "a new session started but its tools were never listed again"
        );
    }

    #[test]
    fn the_404_checks_pass_on_renegotiation_and_fail_on_each_way_of_missing_it() {
        let s = scenario::find(ScenarioName::Expired404);
        let dropped = vec!["s1".to_string()];
        let (witness, _) = host_scope(renegotiated());
        let statuses = |w: &[WitnessEntry]| {
            checks(&s, w, &dropped)
                .iter()
                .map(|c| (c.id, c.status, c.error_message.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            statuses(&witness),
            [
                (CHECK_RENEGOTIATE, "SUCCESS", None),
                (CHECK_CONTINUES, "SUCCESS", None)
            ]
        );
        // The dead id again after the new session: renegotiated, did not continue.
        let mut again = witness.clone();
        again.push(call(9, "s1", "c3", 404));
        assert_eq!(
            statuses(&again)[1],
            (CHECK_CONTINUES, "FAILURE", Some("1 request(s) still carried the old session id after the new session was set up".into()))
        );
        // No new initialize: both fail.
        let kept: Vec<WitnessEntry> = witness[..5].to_vec();
        assert_eq!(
            statuses(&kept),
            [
                (
                    CHECK_RENEGOTIATE,
                    "FAILURE",
                    Some(
                        "after the 404 the client never sent a new initialize without a session id"
                            .into()
                    )
                ),
                (
                    CHECK_CONTINUES,
                    "FAILURE",
                    Some("there was no new session to continue on".into())
                ),
            ]
        );
        // A new session nothing was answered on.
        let idle: Vec<WitnessEntry> = witness[..6].to_vec();
        assert_eq!(
            statuses(&idle)[1],
            (
                CHECK_CONTINUES,
                "FAILURE",
                Some("no request on the new session was answered".into())
            )
        );
        // Scenarios whose server does not answer 404 carry no checks.
        assert!(checks(
            &scenario::find(ScenarioName::Expired400),
            &witness,
            &dropped
        )
        .is_empty());
        assert!(checks(
            &scenario::find(ScenarioName::RestartPersisted),
            &witness,
            &dropped
        )
        .is_empty());
    }

    #[test]
    fn only_the_dsh_plugin_api_scenarios_are_left_out_for_bridges() {
        let run: Vec<ScenarioName> = scenario::all()
            .iter()
            .filter(|s| left_out_why(s, false, false).is_none())
            .map(|s| s.name)
            .collect();
        assert_eq!(
            run,
            [
                ScenarioName::Expired404,
                ScenarioName::Expired400,
                ScenarioName::Expired401,
                ScenarioName::IdleTimeout,
                ScenarioName::Restart,
                ScenarioName::RestartPersisted,
                ScenarioName::OrdinaryErrors,
                ScenarioName::Sse404,
                ScenarioName::StrictReinit,
                ScenarioName::ConcurrentLoss,
                ScenarioName::CallDuringRenewal,
                ScenarioName::Forgetful,
                ScenarioName::CutMidCall,
                ScenarioName::RefusedOnce,
                ScenarioName::Reload,
                ScenarioName::Reload5s,
                ScenarioName::GetStreamLoss,
                ScenarioName::LateAnswers,
                ScenarioName::LostAgain,
                ScenarioName::CutKept,
                ScenarioName::ReinitTimeout,
            ]
        );
    }

    #[test]
    fn get_stream_loss_runs_by_default_only_for_a_client_known_to_keep_a_get_stream() {
        let opts = |get_stream: bool, scenarios: Vec<ScenarioName>| BridgeOptions {
            command: String::new(),
            scenarios,
            json: true,
            startup: DEFAULT_STARTUP,
            verbose: false,
            environment: crate::verify::process::Environment::Inherited,
            own_handshake: false,
            caller_bounds: false,
            auth_provider: false,
            get_stream,
            jobs: 1,
        };
        let runs = |o: &BridgeOptions| {
            let (chosen, out) = choose(o).unwrap();
            (
                chosen.iter().any(|s| s.name == ScenarioName::GetStreamLoss),
                out.iter()
                    .find(|l| l.name == "get-stream-loss")
                    .map(|l| l.why),
            )
        };
        assert_eq!(runs(&opts(true, vec![])), (true, None));
        assert_eq!(
            runs(&opts(false, vec![])),
            (false, Some("a bridge named by --command may keep no GET stream (it is optional), and then has nothing to reopen; `--scenario get-stream-loss` runs it"))
        );
        assert_eq!(
            runs(&opts(false, vec![ScenarioName::GetStreamLoss])),
            (true, None)
        );
    }

    /// The scenarios a host runs with a capability and not without it, in
    /// table order; `runs(s, on)`: whether `s` runs with it on or off.
    fn added_by(runs: impl Fn(&Scenario, bool) -> bool) -> Vec<ScenarioName> {
        scenario::all()
            .iter()
            .filter(|s| runs(s, true) && !runs(s, false))
            .map(|s| s.name)
            .collect()
    }

    #[test]
    fn a_host_that_passes_the_callers_bounds_runs_the_deadline_and_abort_scenarios_too() {
        assert_eq!(
            added_by(|s, bounds| left_out_why(s, bounds, false).is_none()),
            [
                ScenarioName::SlowTimeout,
                ScenarioName::AbortWaiting,
                ScenarioName::DeadlineWaiting,
                ScenarioName::DeadlineResend,
            ]
        );
        assert_eq!(
            left_out_why(&scenario::find(ScenarioName::AbortWaiting), false, false),
            Some("its deadline or abort signal is an argument of the DSH plugin's call API (toolCallTimeoutMs, AbortSignal), which a bridge's stdio host cannot pass")
        );
    }

    #[test]
    fn a_host_that_takes_an_authprovider_runs_the_oauth_scenarios_too() {
        assert_eq!(
            added_by(|s, auth| left_out_why(s, true, auth).is_none()),
            [ScenarioName::AuthSession401, ScenarioName::AuthToken401]
        );
        assert_eq!(
            left_out_why(&scenario::find(ScenarioName::AuthToken401), true, false),
            Some("its server is OAuth-protected, and this client's host cannot make the client with an authProvider (it declares no mcpatch/auth)")
        );
    }

    #[test]
    fn a_bridge_that_ended_is_broken_with_its_stderr_on_one_line_and_escaped() {
        let j = stopped(
            &drive::Stop::Closed("the bridge's stdout ended while call c2 (echo) waited".into()),
            &[],
            &[],
            Some("exit status: 3"),
            "first\n\u{1b}]0;owned\u{7}last",
        );
        assert_eq!((j.verdict, j.ok), ("BROKEN", false));
        assert_eq!(
            j.note,
            "the bridge's stdout ended while call c2 (echo) waited (exit status: 3); its stderr ended: first | \\u{1b}]0;owned\\u{7}last"
        );
        // A bridge that ended is no time limit: never run again alone.
        assert!(!j.late_only);
        let j = stopped(
            &drive::Stop::Hang("call c2 (echo) got no answer within 5000 ms".into()),
            &[],
            &[],
            None,
            "",
        );
        assert_eq!(j.verdict, "HANG");
        assert_eq!(
            j.note,
            "call c2 (echo) got no answer within 5000 ms; the bridge was still running"
        );
        // A call with no answer in time is run again alone when it ran beside others.
        assert!(j.late_only);
    }
}
