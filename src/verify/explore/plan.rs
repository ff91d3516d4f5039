//! Generated plans for `verify --explore`: from one seed, what the server
//! answers a lost session, which reconnect policy the client runs with, how
//! long the server holds a new session back, and the steps the caller takes
//! (calls that wait or run alongside, losses, refused handshakes, pauses,
//! aborts). The same seed gives the same plan, so a failure replays.

use std::collections::HashMap;
use std::fmt;

use serde_json::{json, Value};

use crate::verify::fake_server::{
    LostSessionAnswer, ServerBehaviour, HARMLESS_SESSION_WORDS, ORDINARY_ERROR_WORDS,
};

use crate::verify::scenario::invariants::Reconnect;

/// Each call's own timeout (`toolCallTimeoutMs` and, unless a step says
/// otherwise, the caller's abort signal), as the harness sets it.
pub const CALL_TIMEOUT_MS: u64 = 3000;
/// How long the caller leaves the client, once every call has ended, before
/// the last call: a policy's first backoff and a handshake, with room.
pub const RECOVER_MS: u64 = 1500;
/// The label of the last call of every plan.
pub const LAST_CALL: &str = "last";

/// A small, fast, well-mixed generator (SplitMix64): plans need no more, and
/// the same seed must give the same plan on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// The seed of run `index` of an exploration from `seed`: run 0 is the seed
/// itself, so `--seed S --explore 1` replays the run printed with seed S.
pub fn run_seed(seed: u64, index: u32) -> u64 {
    if index == 0 {
        return seed;
    }
    // 32 bits: short enough to read and type, plenty of plans.
    Rng::new(seed ^ u64::from(index).wrapping_mul(0xd6e8_feb8_6659_fd93)).next_u64() >> 32
}

/// The client's reconnect policy in an explored run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExplorePolicy {
    /// 100 ms first backoff, 1 s at most, 5 attempts.
    Short,
    /// As short, with 2 attempts.
    Brief,
    /// `reconnect.enabled: false`.
    Disabled,
    /// No policy to set: the client tries one new session per call that
    /// meets a loss (the SDK clients, through their host).
    PerCall,
}

impl ExplorePolicy {
    fn config(self) -> Value {
        match self {
            ExplorePolicy::Short => {
                json!({"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 5})
            }
            ExplorePolicy::Brief => {
                json!({"initialDelayMs": 100, "maxDelayMs": 1000, "maxAttempts": 2})
            }
            ExplorePolicy::Disabled => json!({"enabled": false}),
            ExplorePolicy::PerCall => Value::Null,
        }
    }

    pub fn reconnect(self) -> Reconnect {
        match self {
            ExplorePolicy::Short => Reconnect::Policy {
                max_attempts: 5,
                max_delay_ms: 1000,
            },
            ExplorePolicy::Brief => Reconnect::Policy {
                max_attempts: 2,
                max_delay_ms: 1000,
            },
            ExplorePolicy::Disabled => Reconnect::Disabled,
            ExplorePolicy::PerCall => Reconnect::PerCall,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            ExplorePolicy::Short => "reconnect 100 ms first backoff, 5 attempts",
            ExplorePolicy::Brief => "reconnect 100 ms first backoff, 2 attempts",
            ExplorePolicy::Disabled => "reconnect disabled",
            ExplorePolicy::PerCall => "one new session per call that meets a loss",
        }
    }
}

/// What a call asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Echo,
    /// Answers after this many ms.
    Slow(u64),
    /// Fails in an ordinary way of this kind (the fake server's `fail` tool).
    Fail(&'static str),
}

/// One step of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A call; `wait`: the next step waits for its end; `signal_ms`: the caller
    /// aborts it this soon (else at its timeout).
    Call {
        tool: Tool,
        wait: bool,
        signal_ms: Option<u64>,
    },
    /// The server drops every session.
    Invalidate,
    /// The server refuses the next initializes with 503.
    Refuse(u64),
    Sleep(u64),
    /// This many outages apart: each time the server drops every session, a
    /// call meets the loss, then the new session stays healthy [`HEALTHY_MS`].
    Outages(u64),
}

/// How long a session stays healthy after each of [`Step::Outages`]: past the
/// policies' `maxDelayMs` (1 s), so each outage is a new one for the client.
pub const HEALTHY_MS: u64 = 1500;

/// The ways a lost session is answered in explored runs: those the patch
/// recognises (404 of any shape; 400/401 naming the session).
const LOST_ANSWERS: &[LostSessionAnswer] = &[
    LostSessionAnswer::NotFoundJsonRpc,
    LostSessionAnswer::BadRequestNoValidSession,
    LostSessionAnswer::NotFoundText,
    LostSessionAnswer::UnauthorizedText,
    LostSessionAnswer::NotFoundPlain,
];

/// How long the `slow` tool runs: mostly within the call's timeout, once past it.
const SLOW_MS: &[u64] = &[200, 400, 600, 800, 3500];

/// Ordinary failures a call may meet; `http400session` mentions a session harmlessly.
const FAIL_KINDS: &[&str] = &["http500", "http400", "http400session", "jsonrpc", "tool"];

/// One explored run: the server, the policy and the caller's steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplorePlan {
    pub seed: u64,
    pub policy: ExplorePolicy,
    pub lost: LostSessionAnswer,
    /// How long the server holds a new session's initialize back after a loss.
    pub reinit_delay_ms: Option<u64>,
    /// How long the server holds a new session's tool list back after a loss.
    pub relist_delay_ms: Option<u64>,
    /// Whether the client sees HTTP errors in the SDK 2.x shape (`status`, string `code`).
    pub sdk2: bool,
    /// Whether the server answers the optional GET stream 404 (no such route).
    pub get_not_found: bool,
    /// Whether the call of each of [`Step::Outages`] is one the server fails
    /// with HTTP 500 ([`OUTAGE_FAIL`]) instead of an echo: sent again on the
    /// new session, it fails there, so that session serves nothing and only
    /// its staying healthy can end the outage for the client.
    pub outage_fails: bool,
    /// Whether the server refuses the first new session after a loss with 503
    /// (once), so an ordinary outage follows a lost session.
    pub refuse_first_reinit: bool,
    pub steps: Vec<Step>,
}

/// The ordinary failure of an outage's call when [`ExplorePlan::outage_fails`].
pub const OUTAGE_FAIL: &str = "http500";

impl ExplorePlan {
    /// The plan seed `seed` gives.
    pub fn generate(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let policy = match rng.below(10) {
            0..=4 => ExplorePolicy::Short,
            5..=7 => ExplorePolicy::Brief,
            _ => ExplorePolicy::Disabled,
        };
        let lost = rng.pick(LOST_ANSWERS);
        // Now and then longer than a call's timeout, so calls wait past their deadline.
        let reinit_delay_ms =
            (rng.below(4) == 0).then(|| rng.pick(&[200, 300, 400, 500, 600, 4000]));
        let relist_delay_ms = (rng.below(4) == 0).then(|| 200 + 100 * rng.below(4));
        let sdk2 = rng.below(5) == 0;
        let get_not_found = rng.below(5) == 0;
        // Drawn apart from the steps, so the steps of a seed stay what they were.
        let mut apart = Rng::new(seed ^ 0x6f75_7461_6765_2121);
        let outage_fails = apart.below(2) == 0;
        let refuse_first_reinit = apart.below(4) == 0;
        let count = 2 + rng.below(8);
        let mut steps = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let call = |tool, wait, signal_ms| Step::Call {
                tool,
                wait,
                signal_ms,
            };
            let step = match rng.below(100) {
                0..=24 => call(Tool::Echo, true, None),
                25..=33 => call(Tool::Echo, false, None),
                // Now and then slower than the call's own timeout.
                34..=42 => call(Tool::Slow(rng.pick(SLOW_MS)), false, None),
                43..=60 => call(Tool::Fail(rng.pick(FAIL_KINDS)), true, None),
                61..=75 => Step::Invalidate,
                76..=87 => Step::Sleep(rng.pick(&[50, 200, 500, 1500])),
                88..=89 if policy != ExplorePolicy::Disabled => Step::Refuse(1),
                88..=89 => Step::Invalidate,
                // Past the 2-attempt policy's budget, now and then past the 5-attempt one's.
                90..=95 => Step::Outages(3 + rng.below(4)),
                _ => call(Tool::Echo, true, Some(rng.pick(&[100, 300, 800]))),
            };
            steps.push(step);
        }
        ExplorePlan {
            seed,
            policy,
            lost,
            reinit_delay_ms,
            relist_delay_ms,
            sdk2,
            get_not_found,
            outage_fails,
            refuse_first_reinit,
            steps,
        }
    }

    /// The fake server this plan runs against.
    pub fn behaviour(&self) -> ServerBehaviour {
        ServerBehaviour {
            lost_session: self.lost,
            reinit_delay: self.reinit_delay_ms.map(std::time::Duration::from_millis),
            relist_delay: self.relist_delay_ms.map(std::time::Duration::from_millis),
            get_not_found: self.get_not_found,
            refuse_first_reinit: self.refuse_first_reinit,
            ..ServerBehaviour::default()
        }
    }

    /// The plan for a client that takes no reconnect policy and no HTTP
    /// error shape from the caller (the SDK clients, through their host):
    /// the same steps and server, judged [`ExplorePolicy::PerCall`].
    pub fn per_call(self) -> Self {
        ExplorePlan {
            policy: ExplorePolicy::PerCall,
            sdk2: false,
            // Their host makes each outage's call an echo.
            outage_fails: false,
            // Their rules excuse only the refusals of `Step::Refuse`, by its words.
            refuse_first_reinit: false,
            ..self
        }
    }

    /// The label of step `i`'s call of `tool`, as the run reports it.
    pub fn label(i: usize, tool: Tool) -> String {
        match tool {
            Tool::Echo => format!("{}:echo", i + 1),
            Tool::Slow(_) => format!("{}:slow", i + 1),
            Tool::Fail(kind) => format!("{}:fail:{kind}", i + 1),
        }
    }

    /// The tool and arguments of step `i`'s call of `tool`.
    pub fn call_of(i: usize, tool: Tool) -> (&'static str, Value) {
        match tool {
            Tool::Echo => ("echo", json!({"text": format!("step {}", i + 1)})),
            Tool::Slow(ms) => ("slow", json!({"text": "slow", "ms": ms})),
            Tool::Fail(kind) => ("fail", json!({"kind": kind})),
        }
    }

    /// The fields of the harness's run that replace a scenario's.
    pub fn harness_fields(&self) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| match *s {
                Step::Call {
                    tool,
                    wait,
                    signal_ms,
                } => {
                    let (name, args) = Self::call_of(i, tool);
                    json!({"op": "call", "tool": name, "args": args, "label": Self::label(i, tool),
                           "wait": wait, "signalMs": signal_ms})
                }
                Step::Invalidate => json!({"op": "invalidate"}),
                Step::Outages(n) => {
                    let (tool, args) = if self.outage_fails {
                        ("fail", json!({"kind": OUTAGE_FAIL}))
                    } else {
                        ("echo", json!({}))
                    };
                    json!({"op": "outages", "n": n, "healthyMs": HEALTHY_MS,
                           "label": format!("{}:outage", i + 1), "tool": tool, "args": args})
                }
                Step::Refuse(n) => json!({"op": "refuse", "n": n}),
                Step::Sleep(ms) => json!({"op": "sleep", "ms": ms}),
            })
            .collect();
        let reconnect = self.policy.config();
        json!({
            "plan": "explore",
            "steps": steps,
            "reconnect": reconnect,
            "recoverMs": RECOVER_MS,
            "knobs": {"sdk2": self.sdk2},
        })
    }

    /// Each call's deadline, by its label.
    pub fn deadlines(&self) -> HashMap<String, u64> {
        let mut out: HashMap<String, u64> = self
            .steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match *s {
                Step::Call {
                    tool, signal_ms, ..
                } => Some((
                    Self::label(i, tool),
                    signal_ms.unwrap_or(CALL_TIMEOUT_MS).min(CALL_TIMEOUT_MS),
                )),
                _ => None,
            })
            .collect();
        for (i, s) in self.steps.iter().enumerate() {
            if let Step::Outages(n) = *s {
                for k in 1..=n {
                    out.insert(format!("{}:outage{k}", i + 1), CALL_TIMEOUT_MS);
                }
            }
        }
        out.insert(LAST_CALL.to_string(), CALL_TIMEOUT_MS);
        out
    }

    /// The words each ordinary failure must carry, by the call's label.
    pub fn words(&self) -> HashMap<String, &'static str> {
        let outage_words = ORDINARY_ERROR_WORDS
            .iter()
            .find(|(k, _)| *k == OUTAGE_FAIL)
            .map(|(_, w)| *w)
            .filter(|_| self.outage_fails);
        let outages = self.steps.iter().enumerate().flat_map(|(i, s)| {
            let n = match *s {
                Step::Outages(n) => n,
                _ => 0,
            };
            (1..=n).filter_map(move |k| Some((format!("{}:outage{k}", i + 1), outage_words?)))
        });
        let calls = self.steps.iter().enumerate().filter_map(|(i, s)| match *s {
            Step::Call {
                tool: tool @ Tool::Fail(kind),
                ..
            } => {
                let words = if kind == "http400session" {
                    HARMLESS_SESSION_WORDS
                } else {
                    ORDINARY_ERROR_WORDS.iter().find(|(k, _)| *k == kind)?.1
                };
                Some((Self::label(i, tool), words))
            }
            _ => None,
        });
        calls.chain(outages).collect()
    }

    /// Smaller plans that may fail the same way: each with one step fewer,
    /// then with the server's hold-backs gone.
    pub fn smaller(&self) -> Vec<ExplorePlan> {
        let mut out = Vec::new();
        for i in 0..self.steps.len() {
            let mut p = self.clone();
            p.steps.remove(i);
            out.push(p);
        }
        if self.reinit_delay_ms.is_some() {
            out.push(ExplorePlan {
                reinit_delay_ms: None,
                ..self.clone()
            });
        }
        if self.relist_delay_ms.is_some() {
            out.push(ExplorePlan {
                relist_delay_ms: None,
                ..self.clone()
            });
        }
        if self.sdk2 {
            out.push(ExplorePlan {
                sdk2: false,
                ..self.clone()
            });
        }
        if self.get_not_found {
            out.push(ExplorePlan {
                get_not_found: false,
                ..self.clone()
            });
        }
        if self.refuse_first_reinit {
            out.push(ExplorePlan {
                refuse_first_reinit: false,
                ..self.clone()
            });
        }
        out
    }
}

fn lost_said(lost: LostSessionAnswer) -> &'static str {
    match lost {
        LostSessionAnswer::NotFoundJsonRpc => "404 JSON-RPC \"Session not found\"",
        LostSessionAnswer::BadRequestNoValidSession => {
            "400 \"Bad Request: No valid session ID provided\""
        }
        LostSessionAnswer::NotFoundText => "404 \"Not Found: Session not found\"",
        LostSessionAnswer::NotFoundPlain => "404 \"Not Found\"",
        LostSessionAnswer::UnauthorizedText => "401 \"Unauthorized: Session not found\"",
        LostSessionAnswer::ForbiddenSessionExpired => "403 \"Forbidden: session expired\"",
        LostSessionAnswer::InternalErrorSessionExpired => {
            "500 \"Internal Server Error: session expired\""
        }
    }
}

impl fmt::Display for ExplorePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.policy.describe())?;
        writeln!(f, "server answers a lost session {}", lost_said(self.lost))?;
        if self.sdk2 {
            writeln!(f, "the client sees HTTP errors in the SDK 2.x shape")?;
        }
        if self.get_not_found {
            writeln!(f, "server answers the GET stream 404")?;
        }
        if let Some(ms) = self.reinit_delay_ms {
            writeln!(f, "server holds a new session's initialize {ms} ms")?;
        }
        if let Some(ms) = self.relist_delay_ms {
            writeln!(f, "server holds a new session's tools/list {ms} ms")?;
        }
        if self.refuse_first_reinit {
            writeln!(
                f,
                "server refuses the first new session after a loss with 503, once"
            )?;
        }
        for (i, s) in self.steps.iter().enumerate() {
            let n = i + 1;
            match *s {
                Step::Call {
                    tool,
                    wait,
                    signal_ms,
                } => {
                    let what = match tool {
                        Tool::Echo => "echo".to_string(),
                        Tool::Slow(ms) => format!("slow ({ms} ms)"),
                        Tool::Fail(kind) => format!("fail ({kind})"),
                    };
                    let how = if wait { "waits for it" } else { "goes on" };
                    match signal_ms {
                        Some(ms) => writeln!(f, "{n}. call {what}, aborted after {ms} ms, {how}")?,
                        None => writeln!(f, "{n}. call {what}, {how}")?,
                    }
                }
                Step::Invalidate => writeln!(f, "{n}. server drops every session")?,
                Step::Refuse(k) => writeln!(f, "{n}. server refuses the next {k} initialize(s) with 503")?,
                Step::Sleep(ms) => writeln!(f, "{n}. pause {ms} ms")?,
                Step::Outages(k) => writeln!(
                    f,
                    "{n}. {k} times: server drops every session, call {} and wait for it, pause {HEALTHY_MS} ms",
                    if self.outage_fails {
                        format!("fail ({OUTAGE_FAIL})")
                    } else {
                        "echo".to_string()
                    }
                )?,
            }
        }
        write!(
            f,
            "then: every call ends, pause {RECOVER_MS} ms, call echo (the last call)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_plan_and_runs_get_seeds_of_their_own() {
        assert_eq!(ExplorePlan::generate(7), ExplorePlan::generate(7));
        assert_eq!(run_seed(7, 0), 7);
        let seeds: std::collections::HashSet<u64> = (0..50).map(|i| run_seed(7, i)).collect();
        assert_eq!(seeds.len(), 50);
        let plans: std::collections::HashSet<String> = (0..50)
            .map(|i| ExplorePlan::generate(run_seed(7, i)).to_string())
            .collect();
        assert!(plans.len() > 40, "{plans:?}");
    }

    #[test]
    fn smaller_plans_drop_one_step_each_then_the_hold_backs() {
        let plan = ExplorePlan {
            seed: 1,
            policy: ExplorePolicy::Short,
            lost: LostSessionAnswer::NotFoundJsonRpc,
            reinit_delay_ms: Some(300),
            relist_delay_ms: None,
            sdk2: false,
            get_not_found: false,
            outage_fails: false,
            refuse_first_reinit: false,
            steps: vec![Step::Invalidate, Step::Sleep(50)],
        };
        let smaller = plan.smaller();
        assert_eq!(smaller.len(), 3);
        assert_eq!(smaller[0].steps, vec![Step::Sleep(50)]);
        assert_eq!(smaller[1].steps, vec![Step::Invalidate]);
        assert_eq!(smaller[2].reinit_delay_ms, None);
    }
}
