//! One scenario against a bridge: start the fake server and the bridge, open
//! the MCP session over stdio (initialize, notifications/initialized,
//! tools/list), make the plan's tool calls, cause the plan's event on the
//! server side (drop the sessions, idle, restart, ...), call again. Only
//! measures: the verdict comes from the server's witness log (see scenario.rs).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::host::{call_outcome, Host, NoAnswer};
pub use crate::verify::drivers::steps::Stop;
use crate::verify::drivers::steps::{self, Within};
use crate::verify::explore::plan::{
    ExplorePlan, Step, CALL_TIMEOUT_MS, HEALTHY_MS, LAST_CALL, RECOVER_MS,
};
use crate::verify::fake_server::late::{late_call_args, LATE_LOST_TOOL};
use crate::verify::fake_server::FakeServer;
use crate::verify::process::GroupChild;
use crate::verify::scenario::host_report::HostReport;
use crate::verify::scenario::{Expectation, HarnessCall, Scenario};

/// How long a bridge may take to answer one call before it counts as hung:
/// the DSH harness's call timeout, plus slack for a process in between.
pub const CALL_LIMIT: Duration = Duration::from_millis(5000);
/// The `_meta` key of a tools/call that carries the caller's own bounds on
/// it, `{"timeoutMs": N|null, "abortMs": N|null}`: a host script passes them to
/// its client as the call's timeout and an abort signal fired after `abortMs`.
pub const WITHIN_META: &str = "mcpatch/within";
/// How long a bridge may take to exit once its stdin is closed.
pub const EXIT_GRACE: Duration = Duration::from_secs(1);

/// What one run saw.
#[derive(Debug, Default)]
pub struct Run {
    pub calls: Vec<HarnessCall>,
    pub stop: Option<Stop>,
    /// The tools the bridge listed at the start.
    pub tools: Vec<String>,
    /// Why the plan was not run after the handshake: it needs the caller's
    /// bounds on a call, or an authProvider, and the host did not say it can.
    pub left_out: Option<&'static str>,
    /// What the host saw inside its client (`mcpatch/report`), when it
    /// declared it can tell and the plan ran to its end; Err: why a host that
    /// declared it gave no report.
    pub report: Option<Result<HostReport, String>>,
}

/// What a host declares in its initialize answer's `capabilities.experimental`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCaps {
    /// [`WITHIN_META`]: it passes a call's own bounds to its client.
    pub bounds: bool,
    /// [`REPORT_METHOD`]: it answers what it saw inside its client.
    pub report: bool,
    /// [`AUTH_CAPABILITY`]: its client was made with an authProvider, as asked.
    pub auth: bool,
    /// Its transport takes a fetch function (`{"fetchHook": false}` under
    /// [`AUTH_CAPABILITY`] says not): the only place a patch can read a 401's
    /// body before the SDK's auth flow takes it.
    pub fetch_hook: bool,
}

/// The capability by which mcpatch asks a host, in its initialize request,
/// to make its client with an OAuth authProvider, and the host says it did.
pub const AUTH_CAPABILITY: &str = "mcpatch/auth";
/// The request (and capability) by which a host reports what it saw inside
/// its client: `{answersToUnsent, examples, signIns}` (host_report.rs).
pub const REPORT_METHOD: &str = "mcpatch/report";

/// Why a scenario that needs an authProvider is not run on a host that does
/// not declare [`AUTH_CAPABILITY`] in its initialize answer.
pub const NO_AUTH_PROVIDER: &str = "its server is OAuth-protected, and this client's host cannot make the client with an authProvider (it declares no mcpatch/auth)";

/// Why a session-loss scenario behind OAuth is not run on a host whose
/// transport takes no fetch function (`{"fetchHook": false}`).
pub const NO_FETCH_HOOK: &str = "this client's transport takes no fetch function, so no patch can read a 401's body before the client's auth flow takes it: with an authProvider, a 401 naming the session goes to the auth flow, as unpatched";

/// Why a plan that needs a caller's bounds is not run on a host that does not
/// declare `capabilities.experimental["mcpatch/within"]` in its initialize answer.
pub const NO_CALLER_BOUNDS: &str = "the installed client does not hand a caller's abort signal to its transport, so no patch can end a call that waits on a new session by it (its host declares no mcpatch/within)";

/// The caller's side of one run, shared by calls made at once.
#[derive(Clone)]
struct Caller {
    host: Arc<Host>,
    calls: Arc<Mutex<Vec<HarnessCall>>>,
    next: Arc<AtomicU32>,
    /// The server answers a lost call of [`LATE_LOST_TOOL`] late
    /// (`late-answers`): the first batch of calls at once ends with one, so
    /// its loss reaches the client once the new session is up.
    late_tool: bool,
    /// A batch of calls at once was made already.
    batched: Arc<AtomicBool>,
}

impl steps::Caller for Caller {
    /// One tools/call with a fresh call id; Ok(worked) when an answer came.
    async fn call(&self, name: &str, args: Value, label: &str) -> Result<bool, Stop> {
        self.call_within(name, args, label, Within::default()).await
    }

    /// One tools/call bounded by `within`, which goes to the host in the
    /// call's `_meta` ([`WITHIN_META`]); only a host that reads it (the SDK
    /// targets' host scripts) is given any.
    async fn call_within(
        &self,
        name: &str,
        mut args: Value,
        label: &str,
        within: Within,
    ) -> Result<bool, Stop> {
        let call_id = format!("c{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        args["call_id"] = json!(call_id);
        let mut params = json!({"name": name, "arguments": args});
        if within != Within::default() {
            let ms = |d: Option<Duration>| d.map(|d| d.as_millis() as u64);
            params["_meta"] = json!({WITHIN_META: {
                "timeoutMs": ms(within.timeout),
                "abortMs": ms(within.abort),
            }});
        }
        let started = Instant::now();
        let answer = self.host.request("tools/call", params, CALL_LIMIT).await;
        let ms = started.elapsed().as_millis() as u64;
        let (ok, error, stop) = match answer {
            Ok(a) => match call_outcome(&a) {
                Ok(_) => (true, None, None),
                Err(e) => (false, Some(e), None),
            },
            Err(NoAnswer::Timeout) => {
                let what = format!(
                    "call {call_id} ({label}) got no answer within {} ms",
                    CALL_LIMIT.as_millis()
                );
                (false, Some(what.clone()), Some(Stop::Hang(what)))
            }
            Err(NoAnswer::Closed) => {
                let what =
                    format!("the bridge's stdout ended while call {call_id} ({label}) waited");
                (false, Some(what.clone()), Some(Stop::Closed(what)))
            }
        };
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(HarnessCall {
                call_id,
                name: label.to_string(),
                ok,
                error,
                ms,
            });
        }
        match stop {
            Some(s) => Err(s),
            None => Ok(ok),
        }
    }

    /// `n` calls at once: echo calls, the last of the first batch a call of
    /// [`LATE_LOST_TOOL`] when the server answers its loss late.
    async fn at_once(&self, n: usize, prefix: &str) -> Result<Vec<bool>, Stop> {
        let first_batch = !self.batched.swap(true, Ordering::SeqCst);
        let mut set = tokio::task::JoinSet::new();
        for i in 0..n {
            let me = self.clone();
            if self.late_tool && first_batch && i + 1 == n {
                // Sent last, so it arrives after the calls that run before the loss.
                let args = late_call_args(i);
                set.spawn(async move { me.call(LATE_LOST_TOOL, args, LATE_LOST_TOOL).await });
                continue;
            }
            let text = format!("{prefix} {i}");
            set.spawn(async move { me.echo(&text).await });
        }
        let mut oks = Vec::with_capacity(n);
        let mut stop = None;
        while let Some(r) = set.join_next().await {
            match r {
                Ok(Ok(ok)) => oks.push(ok),
                Ok(Err(s)) => stop = stop.or(Some(s)),
                Err(_) => oks.push(false),
            }
        }
        match stop {
            Some(s) => Err(s),
            None => Ok(oks),
        }
    }
}

/// Start the bridge's MCP session: initialize (within `startup`; `auth`
/// asks for a client with an authProvider, [`AUTH_CAPABILITY`]),
/// notifications/initialized, tools/list. Returns the tools listed, and what
/// the initialize answer's `capabilities.experimental` declared ([`HostCaps`]).
pub async fn handshake(
    host: &Host,
    startup: Duration,
    protocol_version: &str,
    auth: bool,
) -> Result<(Vec<String>, HostCaps), Stop> {
    let capabilities = if auth {
        json!({"experimental": {AUTH_CAPABILITY: {}}})
    } else {
        json!({})
    };
    let init = host
        .request(
            "initialize",
            json!({
                "protocolVersion": protocol_version,
                "capabilities": capabilities,
                "clientInfo": {"name": "mcpatch-verify", "version": env!("CARGO_PKG_VERSION")},
            }),
            startup,
        )
        .await
        .map_err(|e| match e {
            NoAnswer::Timeout => Stop::Hang(format!(
                "no answer to initialize within {} s (the start-up limit, --startup-timeout)",
                startup.as_secs_f64()
            )),
            NoAnswer::Closed => {
                Stop::Closed("the bridge's stdout ended before it answered initialize".into())
            }
        })?;
    if let Some(error) = init.get("error") {
        return Err(Stop::Handshake(format!(
            "the bridge answered initialize with an error: {error}"
        )));
    }
    let declared = |name: &str| {
        init.pointer("/result/capabilities/experimental")
            .and_then(|x| x.get(name))
            .is_some()
    };
    let caps = HostCaps {
        bounds: declared(WITHIN_META),
        report: declared(REPORT_METHOD),
        auth: auth && declared(AUTH_CAPABILITY),
        fetch_hook: init
            .pointer("/result/capabilities/experimental")
            .and_then(|x| x.get(AUTH_CAPABILITY))
            .and_then(|a| a.get("fetchHook"))
            != Some(&Value::Bool(false)),
    };
    if !host.notify("notifications/initialized", json!({})).await {
        return Err(Stop::Closed(
            "the bridge closed its stdin after initialize".into(),
        ));
    }
    let list = host
        .request("tools/list", json!({}), CALL_LIMIT)
        .await
        .map_err(|e| match e {
            NoAnswer::Timeout => Stop::Hang(format!(
                "no answer to tools/list within {} ms",
                CALL_LIMIT.as_millis()
            )),
            NoAnswer::Closed => {
                Stop::Closed("the bridge's stdout ended before it answered tools/list".into())
            }
        })?;
    let tools: Vec<String> = list
        .pointer("/result/tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|x| x.get("name").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if !tools.iter().any(|t| t == "echo") {
        return Err(Stop::Handshake(format!(
            "tools/list did not list the fake server's tools (echo, add, fail, slow): {}",
            crate::verify::render::clip(&list.to_string(), 300)
        )));
    }
    Ok((tools, caps))
}

/// Run `scenario`'s plan through the bridge behind `host`.
pub async fn run(
    scenario: &Scenario,
    server: &FakeServer,
    host: Arc<Host>,
    startup: Duration,
    protocol_version: &str,
) -> Run {
    let mut run = Run::default();
    let auth = scenario.needs_auth_provider();
    let caps = match handshake(&host, startup, protocol_version, auth).await {
        Ok((tools, caps)) => {
            run.tools = tools;
            if scenario.plan.needs_caller_bounds() && !caps.bounds {
                run.left_out = Some(NO_CALLER_BOUNDS);
                return run;
            }
            if auth && !caps.auth {
                run.left_out = Some(NO_AUTH_PROVIDER);
                return run;
            }
            if scenario.expect != Expectation::AuthKept && auth && !caps.fetch_hook {
                run.left_out = Some(NO_FETCH_HOOK);
                return run;
            }
            caps
        }
        Err(stop) => {
            run.stop = Some(stop);
            return run;
        }
    };
    let plan = scenario.plan;
    let late_tool = scenario.behaviour.late_old_answers.is_some();
    make_calls(run, host, caps, late_tool, |c| async move {
        steps::plan(plan, server, &c).await
    })
    .await
}

/// Make the calls `steps` makes through a fresh caller (`late_tool`: see
/// [`Caller::late_tool`]), then record them, why the run stopped, and what
/// the host saw (when it declared a report and the run went to its end).
async fn make_calls<Steps, Made>(
    mut run: Run,
    host: Arc<Host>,
    caps: HostCaps,
    late_tool: bool,
    steps: Steps,
) -> Run
where
    Steps: FnOnce(Caller) -> Made,
    Made: std::future::Future<Output = Result<(), Stop>>,
{
    let caller = Caller {
        host: host.clone(),
        calls: Arc::default(),
        next: Arc::default(),
        late_tool,
        batched: Arc::default(),
    };
    let result = steps(caller.clone()).await;
    run.calls = caller.calls.lock().map(|c| c.clone()).unwrap_or_default();
    run.stop = result.err();
    if run.stop.is_none() && caps.report {
        run.report = Some(ask_report(&host).await);
    }
    run
}

/// What the host saw inside its client ([`REPORT_METHOD`]), asked once a
/// run's calls are done; Err: why a host that declared it gave no report.
async fn ask_report(host: &Host) -> Result<HostReport, String> {
    match host.request(REPORT_METHOD, json!({}), CALL_LIMIT).await {
        Ok(answer) => match answer.get("result") {
            Some(result) => Ok(HostReport::of(result)),
            None => Err(format!(
                "the host declared {REPORT_METHOD} but answered it with {}",
                crate::verify::render::clip(&answer.to_string(), 200)
            )),
        },
        Err(e) => Err(format!(
            "the host declared {REPORT_METHOD} but did not answer it ({e:?})"
        )),
    }
}

/// Run an explored plan's steps (`verify --explore`) through the client
/// behind `host`. `bounded`: each call is bounded by the caller's timeout and
/// abort signal, and the run is left out on a host that does not pass them
/// on; else (a stdio bridge, which takes none) the calls carry no bounds and
/// only the host's own [`CALL_LIMIT`] ends them.
pub async fn run_explored(
    plan: &ExplorePlan,
    server: &FakeServer,
    host: Arc<Host>,
    startup: Duration,
    protocol_version: &str,
    bounded: bool,
) -> Run {
    let mut run = Run::default();
    let caps = match handshake(&host, startup, protocol_version, false).await {
        Ok((tools, caps)) => {
            run.tools = tools;
            if bounded && !caps.bounds {
                run.left_out = Some(NO_CALLER_BOUNDS);
                return run;
            }
            caps
        }
        Err(stop) => {
            run.stop = Some(stop);
            return run;
        }
    };
    make_calls(run, host, caps, false, |c| async move {
        explored_steps(plan, server, &c, bounded).await
    })
    .await
}

/// The steps in order, as the plugin harness runs them: a call that does not
/// wait runs alongside the steps after it; once every call has ended and the
/// client has had its time to recover, the last call. `bounded`: each call
/// carries the caller's timeout and abort signal.
async fn explored_steps(
    plan: &ExplorePlan,
    server: &FakeServer,
    c: &Caller,
    bounded: bool,
) -> Result<(), Stop> {
    use steps::Caller as _;
    let within = |signal_ms: Option<u64>| {
        if bounded {
            Within {
                timeout: Some(Duration::from_millis(CALL_TIMEOUT_MS)),
                abort: signal_ms.map(Duration::from_millis),
            }
        } else {
            Within::default()
        }
    };
    let mut running = tokio::task::JoinSet::new();
    for (i, step) in plan.steps.iter().enumerate() {
        match *step {
            Step::Call {
                tool,
                wait,
                signal_ms,
            } => {
                let (name, args) = ExplorePlan::call_of(i, tool);
                let label = ExplorePlan::label(i, tool);
                if wait {
                    c.call_within(name, args, &label, within(signal_ms)).await?;
                } else {
                    let me = c.clone();
                    let bounds = within(signal_ms);
                    running.spawn(async move { me.call_within(name, args, &label, bounds).await });
                }
            }
            Step::Invalidate => server.invalidate(),
            Step::Refuse(n) => server.refuse_next(n),
            Step::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            Step::Outages(n) => {
                for k in 1..=n {
                    server.invalidate();
                    let text = json!({"text": format!("outage {k}")});
                    let label = format!("{}:outage{k}", i + 1);
                    c.call_within("echo", text, &label, within(None)).await?;
                    tokio::time::sleep(Duration::from_millis(HEALTHY_MS)).await;
                }
            }
        }
    }
    let mut stop = None;
    while let Some(r) = running.join_next().await {
        if let Ok(Err(s)) = r {
            stop = stop.or(Some(s));
        }
    }
    if let Some(s) = stop {
        return Err(s);
    }
    tokio::time::sleep(Duration::from_millis(RECOVER_MS)).await;
    c.call_within("echo", json!({"text": "last"}), LAST_CALL, within(None))
        .await?;
    Ok(())
}

/// End a run: close the bridge's stdin, give it [`EXIT_GRACE`] to exit, kill its group.
pub async fn finish(host: &Host, bridge: GroupChild) -> Option<std::process::ExitStatus> {
    // Bounded: a bridge that stopped reading could hold the pipe full.
    let _ = tokio::time::timeout(EXIT_GRACE, host.close()).await;
    bridge.finish(EXIT_GRACE).await
}
