//! Rules every run must keep, whatever its plan: an oracle that reads only the
//! server's witness log and what each caller saw, so it judges runs nobody
//! wrote a scenario for (`verify --explore`) as well as the fixed table's.

mod closing;
mod relisted;

pub use closing::closed_after_last_answer;
pub use relisted::tools_from_new_session;

use std::collections::{HashMap, HashSet};

use super::evidence::{Evidence, HarnessCall};
use super::table::NEVER_SETTLED;
use crate::verify::fake_server::{CallCount, WitnessEntry, REFUSED_WORDS};

/// How long after the server answered a session as lost a request already on
/// its way may still arrive with that session: the client learns of the loss
/// only when it reads the answer, and calls sent meanwhile are in flight.
const IN_FLIGHT_SLACK_MS: u64 = 100;
/// Past this long after a loss was answered, a request on the lost session is
/// late however busy the client's event loop was.
const LOST_LONG_AGO_MS: u64 = 2000;
/// How far past its deadline a call may end on a loaded machine.
const DEADLINE_SLACK_MS: u64 = 700;
/// How much sooner than its deadline a call may read as ended by it: a
/// timer rounds to the millisecond, and the caller starts its clock before
/// the signal's.
const OWN_SIGNAL_SLACK_MS: u64 = 10;
/// How soon a call must fail when reconnecting is disabled and it meets a loss.
const FAIL_FAST_MS: u64 = 1000;
/// How much longer than the policy's `maxDelayMs` a session must have stayed
/// healthy before this oracle counts a new outage as new (the client resets
/// its attempt counter then); the slack covers the re-list after a handshake.
const HEALTHY_SLACK_MS: u64 = 300;

/// A broken rule: the verdict it gives the run and a note naming the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule's short name, as `verify` prints it.
    pub invariant: &'static str,
    /// BROKEN, REPEATED, HANG, LATE or STUCK.
    pub verdict: &'static str,
    pub note: String,
}

impl Violation {
    pub fn new(invariant: &'static str, verdict: &'static str, note: String) -> Self {
        Violation {
            invariant,
            verdict,
            note: format!("invariant {invariant}: {note}"),
        }
    }
}

/// The client's reconnect policy, as far as the oracle needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconnect {
    /// Reconnecting is disabled: a call that meets a loss fails at once.
    Disabled,
    /// At most `max_attempts` consecutive failed attempts per outage; an
    /// outage starts anew once a session stayed healthy `max_delay_ms`.
    Policy {
        max_attempts: u32,
        max_delay_ms: u64,
    },
    /// No policy: each call that meets a loss tries one new session (the SDK
    /// clients' transports, stdio bridges). A call whose new session the
    /// server refused may fail, with the refusal's words.
    PerCall,
}

/// Whether a failed call's error carries the words of a refused new session.
fn refused(c: &HarnessCall) -> bool {
    c.error
        .as_deref()
        .is_some_and(|e| e.contains(REFUSED_WORDS))
}

/// What a generated run tells the oracle beyond the evidence: each call's
/// deadline and expected words, and which call must work at the end.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// Each call's deadline in ms, by its label.
    pub deadlines: &'a HashMap<String, u64>,
    /// Words an ordinary failure of a call must carry, by its label.
    pub words: &'a HashMap<String, &'static str>,
    /// The words of the server's session-loss answer.
    pub lost_words: &'static str,
    pub reconnect: Reconnect,
    /// The label of the last call, made once the client had its time to recover.
    pub last_call: &'a str,
    /// The client's log lines, in order.
    pub logs: &'a [String],
    /// Words of the driver's client in the log line that says a session was
    /// lost and is being replaced, if it writes one.
    pub loss_log: Option<&'a str>,
}

/// The rules every run keeps, checked for the fixed table's scenarios: nothing
/// but what the witness log proves, so a correct client never breaks them.
pub fn check_common(ev: &Evidence<'_>) -> Option<Violation> {
    if let Some(c) = ev.calls.iter().find(|c| never_settled(c)) {
        return Some(Violation::new(
            "call-ends",
            "HANG",
            format!(
                "call {} ({}) never settled: its caller was still waiting after {} ms",
                c.call_id, c.name, c.ms
            ),
        ));
    }
    if let Some(note) = repeated_call(ev) {
        return Some(Violation::new("tool-runs-once", "REPEATED", note));
    }
    if let Some(note) = success_never_run(ev) {
        return Some(Violation::new("answer-from-server", "BROKEN", note));
    }
    if let Some(v) = initialize_with_lost_session(ev.witness, ev.dropped) {
        return Some(v);
    }
    if let Some(v) = same_initialize(ev.witness) {
        return Some(v);
    }
    sent_after_loss(ev.witness)
}

/// Every rule, for a generated run whose deadlines and words are known.
pub fn check_all(ev: &Evidence<'_>, x: &Expected<'_>) -> Option<Violation> {
    check_common(ev)
        .or_else(|| calls_in_time(ev.calls, x))
        .or_else(|| words_carried(ev, x))
        .or_else(|| no_invented_loss(ev, x.deadlines))
        .or_else(|| one_initialize_per_loss(ev.witness, ev.dropped))
        .or_else(|| reconnect_kept(ev, x))
        .or_else(|| logs_true(ev, x))
}

/// The log says a session was lost no more often than sessions were lost:
/// a later ordinary outage is not reported as one.
fn logs_true(ev: &Evidence<'_>, x: &Expected<'_>) -> Option<Violation> {
    logs_tell_the_truth(ev.witness, ev.dropped, x.logs, x.loss_log?)
}

/// The rule `logs-tell-the-truth` on its own: the client's log lines `logs`
/// say `words` (its line that a lost session is being replaced) no more often
/// than sessions were answered as lost.
pub fn logs_tell_the_truth(
    witness: &[WitnessEntry],
    dropped: &[String],
    logs: &[String],
    words: &str,
) -> Option<Violation> {
    let dropped: HashSet<&str> = dropped.iter().map(String::as_str).collect();
    let losses: HashSet<&str> = witness
        .iter()
        .filter(|e| lost_answer(e, &dropped))
        .filter_map(|e| e.session_sent.as_deref())
        .collect();
    let said = logs.iter().filter(|l| l.contains(words)).count();
    (said > losses.len()).then(|| {
        Violation::new(
            "logs-tell-the-truth",
            "BROKEN",
            format!(
                "the log said {said} time(s) that a lost session is being replaced, for {} lost session(s)",
                losses.len()
            ),
        )
    })
}

fn never_settled(c: &HarnessCall) -> bool {
    !c.ok && c.error.as_deref() == Some(NEVER_SETTLED)
}

/// An answer telling the client the session it sent is gone.
fn lost_answer(e: &WitnessEntry, dropped: &HashSet<&str>) -> bool {
    e.http_method != "CONTROL"
        && e.session_sent
            .as_deref()
            .is_some_and(|s| dropped.contains(s))
        && e.executed != Some(true)
        && !matches!(e.status, 200 | 202)
}

/// A new initialize carries no old session id.
fn initialize_with_lost_session(witness: &[WitnessEntry], dropped: &[String]) -> Option<Violation> {
    let dropped: HashSet<&str> = dropped.iter().map(String::as_str).collect();
    witness
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize"))
        .find(|e| {
            e.session_sent
                .as_deref()
                .is_some_and(|s| dropped.contains(s))
        })
        .map(|e| {
            Violation::new(
                "fresh-initialize",
                "BROKEN",
                format!(
                    "an initialize (request {}) carried the lost session id {}",
                    e.seq,
                    e.session_sent.as_deref().unwrap_or("")
                ),
            )
        })
}

/// Every later initialize of a client carries the params of its first, the
/// first the server answered with a session: a new session after a loss is
/// the same client again (its protocolVersion, capabilities and clientInfo),
/// not a default one. An initialize whose params the witness did not record
/// is not judged.
fn same_initialize(witness: &[WitnessEntry]) -> Option<Violation> {
    let inits = || {
        witness
            .iter()
            .filter(|e| e.rpc_method.as_deref() == Some("initialize"))
            .filter_map(|e| Some((e, e.initialize.as_ref()?)))
    };
    let (first, want) = inits().find(|(e, _)| e.session_issued.is_some())?;
    inits()
        .filter(|(e, _)| e.seq > first.seq)
        .find_map(|(e, got)| {
            [
                ("protocolVersion", &want.protocol_version, &got.protocol_version),
                ("capabilities", &want.capabilities, &got.capabilities),
                ("clientInfo", &want.client_info, &got.client_info),
            ]
            .into_iter()
            .find(|(_, a, b)| a != b)
            .map(|(field, a, b)| {
                Violation::new(
                    "same-initialize",
                    "BROKEN",
                    format!(
                        "the initialize of request {} sent {field} {b}, not the {a} of the client's first (request {}): a new session must start with the first initialize's params",
                        e.seq, first.seq
                    ),
                )
            })
        })
}

/// Nothing is sent on a lost session once the client has moved on: no request
/// on it after a request on a session opened since its loss arrived (the
/// client then knew), nor long after its loss was answered; the one DELETE
/// that closes it, notifications (an aborted request's `notifications/cancelled`
/// goes where the request went) and the optional GET stream aside.
fn sent_after_loss(witness: &[WitnessEntry]) -> Option<Violation> {
    let mut lost_at: HashMap<&str, u64> = HashMap::new();
    for e in witness {
        let Some(s) = e.session_sent.as_deref() else {
            continue;
        };
        let lost = e.rpc_method.as_deref() != Some("initialize")
            && e.executed != Some(true)
            && matches!(e.status, 400 | 401 | 404)
            && e.http_method == "POST";
        if lost {
            lost_at.entry(s).or_insert(e.answered_ms);
        }
    }
    // When each session was opened, and when a request first arrived on it.
    let opened: HashMap<&str, u64> = witness
        .iter()
        .filter_map(|e| Some((e.session_issued.as_deref()?, e.answered_ms)))
        .collect();
    let mut first_use: HashMap<&str, u64> = HashMap::new();
    for e in witness
        .iter()
        .filter(|e| e.rpc_method.as_deref() != Some("initialize"))
    {
        if let Some(s) = e.session_sent.as_deref() {
            first_use.entry(s).or_insert(e.t_ms);
        }
    }
    // The client knew session `s` was lost once it used a session opened after the loss.
    let moved_on = |at: u64| {
        opened
            .iter()
            .filter(|(_, &o)| o >= at)
            .filter_map(|(s, _)| first_use.get(s).copied())
            .min()
    };
    let mut deletes: HashMap<&str, usize> = HashMap::new();
    for e in witness {
        let Some(s) = e.session_sent.as_deref() else {
            continue;
        };
        let Some(&at) = lost_at.get(s) else { continue };
        let knew = moved_on(at).map(|m| m + IN_FLIGHT_SLACK_MS);
        let late = e.t_ms > at + LOST_LONG_AGO_MS || knew.is_some_and(|k| e.t_ms > k);
        if !late || e.http_method == "GET" {
            continue;
        }
        if e.rpc_method
            .as_deref()
            .is_some_and(|m| m.starts_with("notifications/"))
        {
            continue;
        }
        if e.http_method == "DELETE" {
            let n = deletes.entry(s).or_default();
            *n += 1;
            if *n == 1 {
                continue;
            }
        }
        return Some(Violation::new(
            "nothing-on-lost-session",
            "BROKEN",
            format!(
                "{} {} was sent on session {s} {} ms after the server answered that session as lost{}",
                e.http_method,
                e.rpc_method.as_deref().unwrap_or(""),
                e.t_ms.saturating_sub(at),
                if knew.is_some_and(|k| e.t_ms > k) {
                    ", after the client had used a new session"
                } else {
                    ""
                }
            ),
        ));
    }
    None
}

/// Each call ends by its own deadline.
fn calls_in_time(calls: &[HarnessCall], x: &Expected<'_>) -> Option<Violation> {
    calls.iter().find_map(|c| {
        let deadline = *x.deadlines.get(&c.name)?;
        (c.ms > deadline + DEADLINE_SLACK_MS).then(|| {
            Violation::new(
                "call-ends",
                "LATE",
                format!(
                    "call {} ({}) ended after {} ms, past its {deadline} ms deadline",
                    c.call_id, c.name, c.ms
                ),
            )
        })
    })
}

/// A failed call carries the server's words: its ordinary error's, or the
/// session-loss answer's when that is what its last send met.
pub(crate) fn words_carried(ev: &Evidence<'_>, x: &Expected<'_>) -> Option<Violation> {
    let dropped: HashSet<&str> = ev.dropped.iter().map(String::as_str).collect();
    for c in ev.calls.iter().filter(|c| !c.ok) {
        let error = c.error.as_deref().unwrap_or("");
        let deadline = x.deadlines.get(&c.name).copied().unwrap_or(u64::MAX);
        let last = ev
            .witness
            .iter()
            .rfind(|e| e.call_id.as_deref() == Some(c.call_id.as_str()));
        let ran = last.is_some_and(|e| e.executed == Some(true));
        let words = x.words.get(&c.name).filter(|_| ran);
        if words.is_none() && c.ms + DEADLINE_SLACK_MS >= deadline {
            // Its own deadline ended it: the client's words are the right ones.
            continue;
        }
        // The server answered an ordinary error: its words reach the caller,
        // however long the client kept the call.
        if let Some(words) = words {
            if !error.contains(words) {
                return Some(Violation::new(
                    "server-words",
                    "BROKEN",
                    format!(
                        "call {} ({}) failed with \"{error}\", without the server's words \"{words}\"",
                        c.call_id, c.name
                    ),
                ));
            }
            continue;
        }
        let refusal = x.reconnect == Reconnect::PerCall && refused(c);
        if last.is_some_and(|e| lost_answer(e, &dropped))
            && !error.contains(x.lost_words)
            && !refusal
        {
            return Some(Violation::new(
                "server-words",
                "BROKEN",
                format!(
                    "call {} ({}) met a lost session and failed with \"{error}\", without the server's words \"{}\"",
                    c.call_id, c.name, x.lost_words
                ),
            ));
        }
    }
    None
}

/// The harness numbers calls in the order they start: `c1`, `c2`, ...
fn call_number(id: &str) -> Option<u64> {
    id.strip_prefix('c')?.parse().ok()
}

/// A call fails without reaching the server only once the server answered an
/// earlier call as a lost session: a client that fails calls on its own after
/// an ordinary error invented a loss. A call its own deadline ended (its
/// caller's abort signal or timeout, by `deadlines`) failed by its caller's
/// hand: on a loaded machine a short signal can fire before its request
/// leaves the client.
fn no_invented_loss(ev: &Evidence<'_>, deadlines: &HashMap<String, u64>) -> Option<Violation> {
    let dropped: HashSet<&str> = ev.dropped.iter().map(String::as_str).collect();
    // Counted on arrival: a slow call still running has no witness entry yet.
    let reached: HashSet<&str> = ev
        .counts
        .iter()
        .filter(|(_, n)| n.sent > 0)
        .map(|(id, _)| id.as_str())
        .collect();
    let first_loss = ev
        .witness
        .iter()
        .filter(|e| lost_answer(e, &dropped))
        .filter_map(|e| call_number(e.call_id.as_deref()?))
        .min();
    ev.calls
        .iter()
        .filter(|c| !c.ok && !reached.contains(c.call_id.as_str()))
        .filter(|c| {
            deadlines
                .get(&c.name)
                .is_none_or(|&d| c.ms + OWN_SIGNAL_SLACK_MS < d)
        })
        .find(|c| {
            let n = call_number(&c.call_id).unwrap_or(0);
            first_loss.is_none_or(|l| n <= l)
        })
        .map(|c| {
            Violation::new(
                "no-invented-loss",
                "BROKEN",
                format!(
                    "call {} ({}) failed after {} ms without reaching the server, though no earlier call met a lost session: {}",
                    c.call_id,
                    c.name,
                    c.ms,
                    c.error.as_deref().unwrap_or("no error")
                ),
            )
        })
}

/// At most one new session per loss: a successful initialize beyond the first
/// needs a session the client saw answered as lost.
fn one_initialize_per_loss(witness: &[WitnessEntry], dropped: &[String]) -> Option<Violation> {
    let dropped: HashSet<&str> = dropped.iter().map(String::as_str).collect();
    let losses: HashSet<&str> = witness
        .iter()
        .filter(|e| lost_answer(e, &dropped))
        .filter_map(|e| e.session_sent.as_deref())
        .collect();
    let inits = witness
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 200)
        .count();
    (inits > 1 + losses.len()).then(|| {
        Violation::new(
            "one-initialize-per-loss",
            "BROKEN",
            format!(
                "{inits} sessions were opened for {} lost session(s): more than one new session per loss",
                losses.len()
            ),
        )
    })
}

/// The reconnect policy is kept both ways: with reconnecting disabled a call
/// that meets a loss fails at once; otherwise the last call, made once the
/// client had its time, works, unless the server refused more attempts in one
/// outage than the policy allows.
fn reconnect_kept(ev: &Evidence<'_>, x: &Expected<'_>) -> Option<Violation> {
    let dropped: HashSet<&str> = ev.dropped.iter().map(String::as_str).collect();
    match x.reconnect {
        Reconnect::Disabled => {
            let met: HashSet<&str> = ev
                .witness
                .iter()
                .filter(|e| lost_answer(e, &dropped))
                .filter_map(|e| e.call_id.as_deref())
                .collect();
            let slow = ev
                .calls
                .iter()
                .find(|c| met.contains(c.call_id.as_str()) && (c.ok || c.ms > FAIL_FAST_MS));
            slow.map(|c| {
                Violation::new(
                    "fail-at-once",
                    "BROKEN",
                    format!(
                        "with reconnect disabled, call {} ({}) met a lost session and {} after {} ms; it must fail within {FAIL_FAST_MS} ms",
                        c.call_id,
                        c.name,
                        if c.ok { "succeeded" } else { "failed" },
                        c.ms
                    ),
                )
            })
        }
        Reconnect::Policy { .. } | Reconnect::PerCall => {
            if may_give_up(ev, x) {
                return None;
            }
            repeat_after_loss(ev, x).or_else(|| last_call_works(ev, x))
        }
    }
}

/// Whether the client had a right to stop trying: its policy's attempts were
/// used up in one outage ([`gave_up_rightly`]). A client without a policy
/// tries again at every call.
fn may_give_up(ev: &Evidence<'_>, x: &Expected<'_>) -> bool {
    match x.reconnect {
        Reconnect::Policy {
            max_attempts,
            max_delay_ms,
        } => gave_up_rightly(ev.witness, ev.dropped, max_attempts, max_delay_ms),
        Reconnect::Disabled | Reconnect::PerCall => false,
    }
}

/// The last call, made once the client had its time to recover, works (or
/// ends by its own deadline; or, for a client that tries a new session per
/// call, fails on a refused new session with the server's words).
fn last_call_works(ev: &Evidence<'_>, x: &Expected<'_>) -> Option<Violation> {
    let last = ev.calls.iter().find(|c| c.name == x.last_call);
    let deadline = x.deadlines.get(x.last_call).copied().unwrap_or(u64::MAX);
    match last {
        Some(c) if c.ok => None,
        // Its own deadline ended it (a new session held back past it).
        Some(c) if c.ms + DEADLINE_SLACK_MS >= deadline => None,
        Some(c) if x.reconnect == Reconnect::PerCall && refused(c) => None,
        Some(c) => Some(Violation::new(
            "recovers",
            "STUCK",
            format!(
                "the last call ({}), made once the client had its time to recover, failed: {}",
                c.call_id,
                c.error.as_deref().unwrap_or("no error")
            ),
        )),
        None => Some(Violation::new(
            "recovers",
            "STUCK",
            "the last call was never made".into(),
        )),
    }
}

/// With reconnect on, a call whose send met a lost session is sent once more
/// (or fails by its own deadline): it does not fail at once.
fn repeat_after_loss(ev: &Evidence<'_>, x: &Expected<'_>) -> Option<Violation> {
    let dropped: HashSet<&str> = ev.dropped.iter().map(String::as_str).collect();
    if x.reconnect == Reconnect::Disabled || may_give_up(ev, x) {
        return None;
    }
    ev.calls
        .iter()
        .filter(|c| !c.ok)
        // Its one try of a new session was refused: it may fail, with the refusal's words.
        .filter(|c| !(x.reconnect == Reconnect::PerCall && refused(c)))
        .filter(|c| {
            let deadline = x.deadlines.get(&c.name).copied().unwrap_or(u64::MAX);
            c.ms + DEADLINE_SLACK_MS < deadline
        })
        .find(|c| {
            let sends: Vec<&WitnessEntry> = ev
                .witness
                .iter()
                .filter(|e| e.call_id.as_deref() == Some(c.call_id.as_str()))
                .collect();
            sends.len() == 1
                && lost_answer(sends[0], &dropped)
                && ev.counts.get(&c.call_id).is_some_and(|n| n.sent == 1)
        })
        .map(|c| {
            Violation::new(
                "repeat-after-loss",
                "STUCK",
                format!(
                    "call {} ({}) met a lost session and failed after {} ms without being sent again: {}",
                    c.call_id,
                    c.name,
                    c.ms,
                    c.error.as_deref().unwrap_or("no error")
                ),
            )
        })
}

/// Whether the client had a right to give up: some outage used up the
/// policy's attempts. Counted as the client counts: every initialize after the
/// first is an attempt, successful or not; the count starts again once a
/// session stayed healthy longer than `max_delay_ms`; the client gives up when
/// the last allowed attempt fails, or when it worked and the session was lost
/// again before it stayed healthy that long.
fn gave_up_rightly(
    witness: &[WitnessEntry],
    dropped: &[String],
    max_attempts: u32,
    max_delay_ms: u64,
) -> bool {
    let dropped: HashSet<&str> = dropped.iter().map(String::as_str).collect();
    let healthy_for = max_delay_ms + HEALTHY_SLACK_MS;
    let losses: Vec<u64> = witness
        .iter()
        .filter(|e| lost_answer(e, &dropped))
        .map(|e| e.t_ms)
        .collect();
    let mut inits = witness
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize"));
    // The first initialize is no attempt. When its session turned healthy
    // needs no keeping: the count it could reset is still 0 at the next one.
    if inits.next().is_none() {
        return false;
    }
    let mut healthy_since: Option<u64> = None;
    let mut attempts = 0u32;
    for e in inits {
        if healthy_since.is_some_and(|h| e.t_ms >= h + healthy_for) {
            attempts = 0;
        }
        attempts += 1;
        if e.status != 200 {
            healthy_since = None;
            if attempts >= max_attempts {
                return true;
            }
            continue;
        }
        healthy_since = Some(e.answered_ms);
        let lost_soon = losses
            .iter()
            .any(|&l| l >= e.answered_ms && l < e.answered_ms + healthy_for);
        if attempts >= max_attempts && lost_soon {
            return true;
        }
    }
    false
}

/// A call id the server ran twice, or that was sent again after an answer other
/// than session loss (so the tool may have run), or sent more than twice.
pub(crate) fn repeated_call(ev: &Evidence<'_>) -> Option<String> {
    let mut ids: Vec<(&String, &CallCount)> = ev.counts.iter().collect();
    ids.sort_by(|a, b| a.0.cmp(b.0));
    for (id, count) in ids {
        if count.ran > 1 {
            return Some(format!(
                "call {id} ran {} times: a tool call was sent again after it ran",
                count.ran
            ));
        }
        if count.sent > 2 {
            return Some(format!(
                "call {id} was sent {} times: more than the one repeat a lost session allows",
                count.sent
            ));
        }
        if count.sent == 2 {
            let lost_answers = ev
                .witness
                .iter()
                .filter(|e| e.call_id.as_deref() == Some(id.as_str()))
                .filter(|e| e.executed == Some(false) && matches!(e.status, 400 | 401 | 404))
                .count();
            if lost_answers == 0 {
                return Some(format!(
                    "call {id} was sent again although its first send was not answered as a lost session: the tool may have run twice"
                ));
            }
        }
    }
    None
}

/// A call the caller saw succeed that the server never ran.
pub(crate) fn success_never_run(ev: &Evidence<'_>) -> Option<String> {
    ev.calls
        .iter()
        .filter(|c| c.ok)
        .find(|c| ev.counts.get(&c.call_id).is_none_or(|n| n.ran == 0))
        .map(|c| {
            format!(
                "the caller got a success for call {} that the server never ran",
                c.call_id
            )
        })
}

/// A client that speaks MCP itself (not a proxy passing its host's messages
/// on) finishes the handshake of every session before it uses it: a tool list
/// or call the server took on a session it issued arrives only after that
/// session's `notifications/initialized`. A session whose initialize is not in
/// the witness (evicted, or opened before the host's) is not judged.
pub(crate) fn used_before_initialized(witness: &[WitnessEntry]) -> Option<String> {
    let issued: HashSet<&str> = witness
        .iter()
        .filter_map(|e| e.session_issued.as_deref())
        .collect();
    witness
        .iter()
        .filter(|e| {
            e.http_method == "POST"
                && e.status < 400
                && matches!(e.rpc_method.as_deref(), Some("tools/list" | "tools/call"))
        })
        .find_map(|e| {
            let s = e.session_sent.as_deref().filter(|s| issued.contains(s))?;
            let initialized = witness.iter().any(|n| {
                n.http_method == "POST"
                    && n.rpc_method.as_deref() == Some("notifications/initialized")
                    && n.session_sent.as_deref() == Some(s)
                    && n.t_ms <= e.t_ms
            });
            (!initialized).then(|| {
                format!(
                    "{} (request {}) used session {s} before the client sent its notifications/initialized: the handshake of that session was never finished",
                    e.rpc_method.as_deref().unwrap_or(""),
                    e.seq
                )
            })
        })
}

#[cfg(test)]
mod tests;
