//! One scenario against a bridge: start the fake server and the bridge, open
//! the MCP session over stdio (initialize, notifications/initialized,
//! tools/list), make the plan's tool calls, cause the plan's event on the
//! server side (drop the sessions, idle, restart, ...), call again. Only
//! measures: the verdict comes from the server's witness log (see scenario.rs).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::child::Bridge;
use super::host::{call_outcome, Host, NoAnswer};
use crate::verify::harness::Policy;
use crate::verify::scenario::{
    HarnessCall, Plan, Scenario, CONCURRENT_CALLS, CONCURRENT_LATE_CALLS,
    CONCURRENT_RAN_BEFORE_LOSS, IDLE_FOR,
};
use crate::verify::server::{FakeServer, RAN_BEFORE_LOSS_DELAY};

/// How long a bridge may take to answer one call before it counts as hung:
/// the DSH harness's call timeout, plus slack for a process in between.
pub const CALL_LIMIT: Duration = Duration::from_millis(5000);
/// How long the driver waits for a server-side event it caused (a restart listening again).
const EVENT_LIMIT: Duration = Duration::from_secs(10);
/// Pause between calls while waiting for a bridge to recover.
const POLL: Duration = Duration::from_millis(25);
/// How long a bridge may take to exit once its stdin is closed.
pub const EXIT_GRACE: Duration = Duration::from_secs(1);

/// Why a run stopped before its plan ended.
#[derive(Debug, Clone)]
pub enum Stop {
    /// A request got no answer within its limit; the bridge still runs.
    Hang(String),
    /// The bridge's stdout ended (it exited, or closed it).
    Closed(String),
    /// The bridge answered the handshake wrongly.
    Handshake(String),
}

/// What one run saw.
#[derive(Debug, Default)]
pub struct Run {
    pub calls: Vec<HarnessCall>,
    pub stop: Option<Stop>,
    /// The tools the bridge listed at the start.
    pub tools: Vec<String>,
}

/// The caller's side of one run, shared by calls made at once.
#[derive(Clone)]
struct Caller {
    host: Arc<Host>,
    calls: Arc<Mutex<Vec<HarnessCall>>>,
    next: Arc<AtomicU32>,
}

impl Caller {
    /// One tools/call with a fresh call id; Ok(worked) when an answer came.
    async fn call(&self, name: &str, mut args: Value, label: &str) -> Result<bool, Stop> {
        let call_id = format!("c{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        args["call_id"] = json!(call_id);
        let started = Instant::now();
        let answer = self
            .host
            .request(
                "tools/call",
                json!({"name": name, "arguments": args}),
                CALL_LIMIT,
            )
            .await;
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

    async fn echo(&self, text: &str) -> Result<bool, Stop> {
        self.call("echo", json!({"text": text}), "echo").await
    }

    /// Call until a call works or the recovery deadline passes.
    async fn until_recovered(&self) -> Result<(), Stop> {
        let deadline = Instant::now() + Policy::Short.deadline();
        while Instant::now() < deadline {
            if self.echo("after").await? {
                return Ok(());
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    }

    /// `n` calls at once.
    async fn at_once(&self, n: usize, prefix: &str) -> Result<Vec<bool>, Stop> {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..n {
            let me = self.clone();
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

/// Start the bridge's MCP session: initialize (within `startup`),
/// notifications/initialized, tools/list. Returns the tools listed.
pub async fn handshake(
    host: &Host,
    startup: Duration,
    protocol_version: &str,
) -> Result<Vec<String>, Stop> {
    let init = host
        .request(
            "initialize",
            json!({
                "protocolVersion": protocol_version,
                "capabilities": {},
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
            crate::verify::bridge::clip(&list.to_string(), 300)
        )));
    }
    Ok(tools)
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
    match handshake(&host, startup, protocol_version).await {
        Ok(tools) => run.tools = tools,
        Err(stop) => {
            run.stop = Some(stop);
            return run;
        }
    }
    let caller = Caller {
        host,
        calls: Arc::default(),
        next: Arc::default(),
    };
    let result = plan(scenario.plan, server, &caller).await;
    run.calls = caller.calls.lock().map(|c| c.clone()).unwrap_or_default();
    run.stop = result.err();
    run
}

async fn plan(plan: Plan, server: &FakeServer, c: &Caller) -> Result<(), Stop> {
    match plan {
        Plan::Invalidate => {
            c.echo("before").await?;
            server.invalidate();
            c.until_recovered().await
        }
        Plan::Idle => {
            c.echo("before").await?;
            tokio::time::sleep(IDLE_FOR).await;
            c.until_recovered().await
        }
        Plan::Restart => {
            c.echo("before").await?;
            let generation = server.generation();
            server.restart();
            listening(server, generation + 1).await;
            c.until_recovered().await
        }
        Plan::Concurrent => {
            c.echo("before").await?;
            server.hold_calls(CONCURRENT_CALLS, CONCURRENT_RAN_BEFORE_LOSS);
            let batch = c.at_once(CONCURRENT_CALLS, "at once");
            // More calls once the calls that ran before the loss have had their
            // answers, while the new session is still starting.
            let late = async {
                witnessed(server, |n| n.starts_with("concurrent loss")).await;
                tokio::time::sleep(RAN_BEFORE_LOSS_DELAY + Duration::from_millis(50)).await;
                c.at_once(CONCURRENT_LATE_CALLS, "late").await
            };
            let (batch, late) = tokio::join!(batch, late);
            let oks: Vec<bool> = batch?.into_iter().chain(late?).collect();
            if !oks.iter().all(|ok| *ok) {
                c.until_recovered().await?;
            }
            Ok(())
        }
        Plan::Cut => {
            c.echo("before").await?;
            let generation = server.generation();
            c.call("slow", json!({"text": "cut", "ms": 5000}), "slow")
                .await?;
            listening(server, generation + 1).await;
            c.until_recovered().await
        }
        Plan::Ordinary => {
            c.echo("before").await?;
            for kind in ["http500", "http400", "jsonrpc", "tool"] {
                c.call("fail", json!({"kind": kind}), &format!("fail:{kind}"))
                    .await?;
            }
            tokio::time::sleep(Policy::Short.recycle_window()).await;
            c.call("add", json!({"a": 2, "b": 3}), "add").await?;
            c.echo("after").await.map(|_| ())
        }
        Plan::Settle => {
            c.echo("before").await?;
            let get_404 = |server: &FakeServer| {
                server
                    .witness()
                    .iter()
                    .any(|e| e.http_method == "GET" && e.status == 404)
            };
            let until = Instant::now() + Duration::from_secs(5);
            while !get_404(server) && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Policy::Short.recycle_window()).await;
            c.echo("after").await.map(|_| ())
        }
        // Left out for bridges (see `left_out_why`): never run here.
        _ => Ok(()),
    }
}

/// Wait until the server listens again as generation `g`, bounded.
async fn listening(server: &FakeServer, g: u64) {
    let until = Instant::now() + EVENT_LIMIT;
    while server.generation() < g && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Wait until the witness log has a server note `matches` accepts, bounded.
async fn witnessed(server: &FakeServer, matches: impl Fn(&str) -> bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if server
            .witness()
            .iter()
            .any(|e| e.note.as_deref().is_some_and(&matches))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// End a run: close the bridge's stdin, give it [`EXIT_GRACE`] to exit, kill its group.
pub async fn finish(host: &Host, bridge: Bridge) -> Option<std::process::ExitStatus> {
    // Bounded: a bridge that stopped reading could hold the pipe full.
    let _ = tokio::time::timeout(EXIT_GRACE, host.close()).await;
    bridge.finish(EXIT_GRACE).await
}
