//! The judges: one run of a scenario, its evidence weighed against the
//! scenario's expectation, and a verdict (SEAMLESS, RECOVERED, STUCK, HELD,
//! ...) with a note naming the rule a failing run broke. The rules every run
//! keeps, whatever its scenario, are invariants.rs.

use std::time::Duration;

use super::evidence::{counted, Evidence, Judgement};
use super::invariants;
use super::policy::Policy;
use super::table::*;
use crate::verify::fake_server::{WitnessEntry, ORDINARY_ERROR_WORDS};

/// How much earlier than its backoff a reconnect may start (timer granularity).
const BACKOFF_TOLERANCE_MS: u64 = 10;
/// How much past its timeout a call may end before it counts as outliving it.
pub(super) const TIMEOUT_SLACK: Duration = Duration::from_millis(500);
/// How much past its signal or deadline a probe call may end (timers, a loaded machine).
const TIMELY_SLACK: Duration = Duration::from_millis(700);

/// Judge one run of `scenario` against `expect`.
pub fn judge(scenario: &Scenario, expect: Expectation, ev: &Evidence<'_>) -> Judgement {
    judge_with(scenario, expect, ev, true)
}

/// [`judge`], with a recovery asked to list the tools again on the new session
/// (`relist_tools`) or not: a stdio bridge keeps no tool list, its host lists the tools.
pub fn judge_with(
    scenario: &Scenario,
    expect: Expectation,
    ev: &Evidence<'_>,
    relist_tools: bool,
) -> Judgement {
    let initialize_count = ev
        .witness
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.status == 200)
        .count();
    let failed_calls = ev.calls.iter().filter(|c| !c.ok).count();
    let base = Judgement {
        verdict: "",
        ok: false,
        recovery_ms: None,
        trigger_ms: None,
        failed_calls,
        initialize_count,
        trigger_error: None,
        note: String::new(),
        late_only: false,
    };
    if let Some(c) = ev
        .calls
        .iter()
        .find(|c| !c.ok && c.error.as_deref() == Some(NEVER_SETTLED))
    {
        return Judgement {
            verdict: "HANG",
            note: format!(
                "call {} ({}) never settled: its caller was still waiting after {} ms",
                c.call_id, c.name, c.ms
            ),
            ..base
        };
    }
    if let Some(note) = invariants::repeated_call(ev) {
        return Judgement {
            verdict: "REPEATED",
            note,
            ..base
        };
    }
    if let Some(note) = invariants::success_never_run(ev) {
        return Judgement {
            verdict: "BROKEN",
            note,
            ..base
        };
    }
    let mut j = match scenario.expect {
        Expectation::Recover if scenario.plan == Plan::RefusedOnce => {
            match scenario.behaviour.refusal_delay {
                // The first new session's answer is waited for first.
                Some(late) => {
                    let within = ev.policy.deadline() + late;
                    let j = judge_recovery_within(ev, base, relist_tools, within);
                    super::extra::judge_unanswered_reinit(scenario, ev, j)
                }
                None => super::refused::judge(ev, judge_recovery(ev, base, relist_tools)),
            }
        }
        Expectation::Recover if scenario.plan == Plan::StreamLoss => {
            super::get_stream::judge(ev, base)
        }
        Expectation::Recover if scenario.plan == Plan::ToolsChanged => {
            super::extra::judge_tools_changed(ev, base, relist_tools, judge_recovery)
        }
        Expectation::Recover if scenario.behaviour.announce_tools_changed => {
            super::extra::judge_announced(ev, judge_recovery(ev, base, relist_tools))
        }
        Expectation::Recover | Expectation::Seamless => judge_recovery(ev, base, relist_tools),
        Expectation::Hold => judge_hold(scenario, ev, base),
        Expectation::Bounded => judge_bounded(ev, base),
        Expectation::NoRetry => judge_no_retry(ev, base),
        Expectation::Timely => judge_timely(scenario, ev, base),
        Expectation::FailFast => judge_fail_fast(scenario, ev, base),
        Expectation::Reloaded => crate::verify::scenario::reload::judge(scenario, ev, base),
        Expectation::AuthKept => super::auth::judge(ev, base),
        Expectation::Reset => super::apart::judge(ev, base),
    };
    j.ok = match expect {
        Expectation::Recover => matches!(j.verdict, "SEAMLESS" | "RECOVERED"),
        Expectation::NoRetry if ev.seamless => j.verdict == "NOT-RETRIED" && j.failed_calls <= 1,
        e => j.verdict == e.verdict(),
    };
    // The rules every run keeps, whatever the scenario was written for.
    if j.ok {
        if let Some(v) = crate::verify::scenario::invariants::check_common(ev) {
            j.verdict = v.verdict;
            j.ok = false;
            j.note = v.note;
        }
    }
    if !j.ok && expect == Expectation::NoRetry && j.verdict == "NOT-RETRIED" {
        j.note.push_str(&format!(
            "; {} call(s) besides the cut one failed after the restart",
            j.failed_calls.saturating_sub(1)
        ));
    }
    // SEAMLESS allows no failed call: name the first made (c1, c2, ...), so the note says why.
    if !j.ok && expect == Expectation::Seamless && j.verdict == "RECOVERED" {
        let failed = ev.calls.iter().filter(|c| !c.ok);
        if let Some(c) = failed.min_by_key(|c| (c.call_id.len(), c.call_id.as_str())) {
            j.note.push_str(&format!(
                "; {} call(s) failed, the first {} ({}): {}",
                j.failed_calls,
                c.call_id,
                c.name,
                c.error.as_deref().unwrap_or("no error")
            ));
        }
    }
    if j.ok && expect == Expectation::Recover && j.verdict == "RECOVERED" {
        j.note.push_str(&format!(
            "; {} call(s) failed before it recovered",
            j.failed_calls
        ));
    }
    j
}

fn initialize_fresh(e: &WitnessEntry) -> bool {
    e.rpc_method.as_deref() == Some("initialize") && e.status == 200 && e.session_sent.is_none()
}

pub(super) fn judge_recovery(ev: &Evidence<'_>, base: Judgement, relist_tools: bool) -> Judgement {
    judge_recovery_within(ev, base, relist_tools, ev.policy.deadline())
}

/// [`judge_recovery`], the recovery allowed `deadline` from the first
/// session-lost answer to the first call that worked on the new session.
pub(super) fn judge_recovery_within(
    ev: &Evidence<'_>,
    base: Judgement,
    relist_tools: bool,
    deadline: Duration,
) -> Judgement {
    let witness = ev.witness;
    let is_dead = |e: &WitnessEntry| {
        e.session_sent
            .as_ref()
            .is_some_and(|s| ev.dropped.contains(s))
    };
    // The server dropping sessions (invalidate, prune, restart, concurrent loss) starts the clock.
    let dropped_at = witness
        .iter()
        .position(|e| {
            e.http_method == "CONTROL"
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.contains("dropped") || n.contains("pruned"))
        })
        .unwrap_or(witness.len());
    // The first request after that which carried a dead id: the client met the loss there.
    let first_failed = witness[dropped_at..]
        .iter()
        .position(|e| is_dead(e) && e.status >= 400 && e.http_method == "POST")
        .map(|i| i + dropped_at);
    let Some(first_failed) = first_failed else {
        return Judgement {
            verdict: "STUCK",
            note: "the session was never invalidated under the client (no request carried a dropped id)".into(),
            ..base
        };
    };
    let trigger = witness[first_failed]
        .call_id
        .as_deref()
        .and_then(|id| ev.calls.iter().find(|c| c.call_id == id));
    let base = Judgement {
        trigger_ms: trigger.map(|c| c.ms),
        trigger_error: trigger.and_then(|c| c.error.clone()),
        ..base
    };
    let t_fail = witness[first_failed].t_ms;
    let dead_after_fail = witness[first_failed..]
        .iter()
        .filter(|e| is_dead(e))
        .count();
    let rejected_reinit = witness[first_failed..]
        .iter()
        .filter(|e| e.rpc_method.as_deref() == Some("initialize") && e.session_sent.is_some())
        .count();
    let stuck = |why: String| Judgement {
        verdict: "STUCK",
        note: why,
        ..base.clone()
    };
    let Some(new_init) = witness[first_failed..]
        .iter()
        .position(initialize_fresh)
        .map(|i| i + first_failed)
    else {
        return stuck(format!(
            "no new initialize after the session was lost; {dead_after_fail} request(s) kept the dead session id"
        ));
    };
    let fresh = witness[new_init].session_issued.clone().unwrap_or_default();
    let on_fresh = |e: &WitnessEntry| e.session_sent.as_deref() == Some(fresh.as_str());
    let Some(relisted) = witness[new_init..]
        .iter()
        .position(|e| {
            !relist_tools
                || (on_fresh(e) && e.rpc_method.as_deref() == Some("tools/list") && e.status == 200)
        })
        .map(|i| i + new_init)
    else {
        return stuck("a new session started but its tools were never listed again".into());
    };
    let worked = |e: &&WitnessEntry| {
        on_fresh(e) && e.rpc_method.as_deref() == Some("tools/call") && e.call_ok == Some(true)
    };
    // The log is in answer order: a call answered before the (held back) tool
    // list shows before it; the rule below names it.
    let Some(called) = witness[relisted..]
        .iter()
        .find(worked)
        .or_else(|| witness[new_init..relisted].iter().find(worked))
    else {
        return stuck(format!(
            "a new session started{}, but no tool call succeeded on it",
            if relist_tools {
                " and listed tools"
            } else {
                ""
            }
        ));
    };
    let later_inits = witness[new_init + 1..]
        .iter()
        .filter(|e| initialize_fresh(e))
        .count();
    // Requests sent with the dead id after the new session was established (a call
    // that was in flight before the loss may still be answered later: that is fine).
    let established = witness[new_init].answered_ms;
    let dead_later = witness
        .iter()
        .filter(|e| is_dead(e) && e.t_ms > established)
        .count();
    if dead_later > 0 {
        return stuck(format!(
            "{dead_later} request(s) still carried the dead session id after the new session was established"
        ));
    }
    let recovery_ms = called.answered_ms.saturating_sub(t_fail);
    if recovery_ms > deadline.as_millis() as u64 {
        return Judgement {
            late_only: true,
            ..stuck(format!(
                "recovered only after {recovery_ms} ms, past the {} ms a healthy client needs under this policy",
                deadline.as_millis()
            ))
        };
    }
    let relisted_words = if relist_tools {
        ", tools re-listed"
    } else {
        ""
    };
    let mut note = if later_inits == 0 {
        format!("one fresh initialize without the dead id{relisted_words}, calls succeeded")
    } else {
        format!(
            "fresh initialize without the dead id{relisted_words}, calls succeeded; {later_inits} more initialize(s) after it"
        )
    };
    if rejected_reinit > 0 {
        note.push_str(&format!(
            "; {rejected_reinit} initialize(s) carried a session id"
        ));
    }
    // Rules of the current revision that a recovery can break and still recover.
    let mut lapses = Vec::new();
    // No client that keeps a tool list may send a call on a new session
    // before its tools are re-listed (a bridge's host lists them itself).
    let listed_at = witness[relisted].answered_ms;
    if let Some(early) = witness[new_init..].iter().find(|e| {
        relist_tools
            && on_fresh(e)
            && e.rpc_method.as_deref() == Some("tools/call")
            && e.t_ms < listed_at
    }) {
        lapses.push(format!(
            "call {} was sent on the new session at {} ms, before its tools were re-listed ({} ms)",
            early.call_id.as_deref().unwrap_or("(no id)"),
            early.t_ms,
            listed_at
        ));
    }
    if ev.seamless {
        let reconnect_ms = witness[new_init]
            .t_ms
            .saturating_sub(witness[first_failed].answered_ms);
        let limit = FIRST_RECONNECT_LIMIT.as_millis() as u64;
        if ev.policy.initial_delay() >= 2 * FIRST_RECONNECT_LIMIT && reconnect_ms > limit {
            lapses.push(format!(
                "the first reconnect started {reconnect_ms} ms after the session-lost answer, not at once (limit {limit} ms; the policy's first backoff is {} ms)",
                ev.policy.initial_delay().as_millis()
            ));
        }
    }
    if !lapses.is_empty() {
        note = format!("{}; {note}", lapses.join("; "));
    }
    Judgement {
        verdict: if base.failed_calls == 0 && later_inits == 0 && lapses.is_empty() {
            "SEAMLESS"
        } else {
            "RECOVERED"
        },
        recovery_ms: Some(recovery_ms),
        note,
        ..base
    }
}

fn judge_hold(scenario: &Scenario, ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    if base.initialize_count > 1 {
        return verdict(
            "RECYCLED",
            format!(
                "{} initialize handshakes: a healthy session was thrown away",
                base.initialize_count
            ),
        );
    }
    let witness = ev.witness;
    let Some(session) = witness
        .iter()
        .find(|e| initialize_fresh(e))
        .and_then(|e| e.session_issued.clone())
    else {
        return verdict("BROKEN", "the client never started a session".into());
    };
    if scenario.plan == Plan::Settle {
        let listed_at = witness.iter().position(|e| {
            e.rpc_method.as_deref() == Some("tools/list")
                && e.session_sent.as_deref() == Some(session.as_str())
        });
        let get_404_after = listed_at.is_some_and(|at| {
            witness[at..]
                .iter()
                .any(|e| e.http_method == "GET" && e.status == 404)
        });
        if !get_404_after {
            return verdict(
                "BROKEN",
                "the client never met the GET 404 after it connected: nothing was tested".into(),
            );
        }
    }
    if scenario.plan == Plan::Timeout {
        let Some(slow) = ev.calls.iter().find(|c| c.name == "slow") else {
            return verdict("BROKEN", "the slow call was never made".into());
        };
        if slow.ok {
            return verdict(
                "BROKEN",
                format!(
                    "the slow call {} did not time out: nothing was tested",
                    slow.call_id
                ),
            );
        }
    }
    if scenario.plan == Plan::Ordinary {
        for (kind, words) in ORDINARY_ERROR_WORDS {
            let reached = ev
                .calls
                .iter()
                .filter(|c| c.name == format!("fail:{kind}"))
                .any(|c| !c.ok && c.error.as_deref().is_some_and(|e| e.contains(words)));
            if !reached {
                return verdict(
                    "BROKEN",
                    format!("the {kind} error did not reach the caller with the server's words ({words:?})"),
                );
            }
        }
    }
    // The last call the harness made must have run, and succeeded, on the kept session.
    let Some(last) = ev.calls.last() else {
        return verdict("BROKEN", "no call was made".into());
    };
    let worked = witness.iter().any(|e| {
        e.call_id.as_deref() == Some(last.call_id.as_str())
            && e.session_sent.as_deref() == Some(session.as_str())
            && e.call_ok == Some(true)
    });
    if !worked {
        return verdict(
            "BROKEN",
            "tools did not work again on the kept session".into(),
        );
    }
    let calls_on_session = witness
        .iter()
        .filter(|e| {
            e.rpc_method.as_deref() == Some("tools/call")
                && e.session_sent.as_deref() == Some(session.as_str())
        })
        .count();
    let note = match scenario.plan {
        Plan::Ordinary => format!(
            "each error reached the caller once; {calls_on_session} calls on one session, no new initialize"
        ),
        Plan::Settle => "the GET 404 changed nothing: same session, no new initialize".into(),
        Plan::Timeout => "the timed-out call failed once and was not sent again; same session, no new initialize".into(),
        _ => "kept working on the same session, no new initialize".into(),
    };
    verdict("HELD", note)
}

fn judge_bounded(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    if ev.per_call_recovery {
        return judge_bounded_per_call(ev, base);
    }
    let bound = 1 + ev.policy.max_attempts() as usize;
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    if base.initialize_count > bound {
        return verdict(
            "UNBOUNDED",
            format!(
                "{} initialize handshakes, more than the {bound} the policy allows (1 + {} attempts)",
                base.initialize_count,
                ev.policy.max_attempts()
            ),
        );
    }
    // The first reconnect of an outage may start at once; every later one must
    // wait the policy's backoff after the loss that caused it.
    let inits: Vec<&WitnessEntry> = ev.witness.iter().filter(|e| initialize_fresh(e)).collect();
    for (attempt, init) in inits.iter().enumerate().skip(2) {
        let backoff = ev.policy.backoff(attempt as u32);
        let loss = ev.witness.iter().rev().find(|e| {
            e.answered_ms <= init.t_ms
                && e.executed == Some(false)
                && matches!(e.status, 400 | 401 | 404)
        });
        if let Some(loss) = loss {
            let waited = init.t_ms.saturating_sub(loss.answered_ms);
            if waited + BACKOFF_TOLERANCE_MS < backoff.as_millis() as u64 {
                return verdict(
                    "UNBOUNDED",
                    format!(
                        "reconnect attempt {attempt} started {waited} ms after the loss; the policy's backoff is {} ms",
                        backoff.as_millis()
                    ),
                );
            }
        }
    }
    let slowest = match calls_ended_in_time(ev) {
        Ok(slowest) => slowest,
        Err(why) => return verdict("UNBOUNDED", why),
    };
    verdict(
        "BOUNDED",
        format!(
            "{}, every call ended within its timeout (slowest {slowest} ms), none sent more than twice",
            handshakes_said(base.initialize_count, bound)
        ),
    )
}

/// Whether every call of a bounded run ended within its timeout, and all
/// [`FORGETFUL_CALLS`] of them did: the slowest call's ms, or why not.
fn calls_ended_in_time(ev: &Evidence<'_>) -> Result<u64, String> {
    let limit = ev.policy.call_timeout() + TIMEOUT_SLACK;
    if let Some(c) = ev.calls.iter().find(|c| c.ms > limit.as_millis() as u64) {
        return Err(format!(
            "call {} took {} ms, past its {} ms timeout",
            c.call_id,
            c.ms,
            ev.policy.call_timeout().as_millis()
        ));
    }
    if ev.calls.len() < FORGETFUL_CALLS {
        return Err(format!(
            "only {} of {FORGETFUL_CALLS} calls ended",
            ev.calls.len()
        ));
    }
    Ok(ev.calls.iter().map(|c| c.ms).max().unwrap_or(0))
}

/// [`judge_bounded`] for a client that recovers once per call that meets a
/// lost session (no policy to wait): at most one new session per call, and
/// every call ends within its timeout (no call sent more than twice is
/// checked before, for every client).
fn judge_bounded_per_call(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let bound = 1 + ev.calls.len();
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    if base.initialize_count > bound {
        return verdict(
            "UNBOUNDED",
            format!(
                "{} initialize handshakes for {} calls, more than one new session per call (bound {bound})",
                base.initialize_count,
                ev.calls.len()
            ),
        );
    }
    let slowest = match calls_ended_in_time(ev) {
        Ok(slowest) => slowest,
        Err(why) => return verdict("UNBOUNDED", why),
    };
    // A client that never tried a new session loops neither: bounded, and said so.
    let tried = if base.initialize_count <= 1 {
        ", no new session tried"
    } else {
        ""
    };
    verdict(
        "BOUNDED",
        format!(
            "{} for {}{tried} (bound {bound}: at most one new session per call), every call ended within its timeout (slowest {slowest} ms), none sent more than twice",
            counted(base.initialize_count, "handshake"),
            counted(ev.calls.len(), "call")
        ),
    )
}

/// How many handshakes a bounded run made, and what that says of its
/// reconnects: only from the second reconnect on is there a backoff to wait.
fn handshakes_said(count: usize, bound: usize) -> String {
    match count {
        0 => format!("no handshake (bound {bound})"),
        1 => format!("1 handshake (bound {bound}): no reconnect"),
        2 => format!("2 handshakes (bound {bound}): 1 reconnect"),
        n => format!(
            "{n} handshakes (bound {bound}): {} reconnects, each after the first with the policy's backoff",
            n - 1
        ),
    }
}

/// Whether a call worked on a session started after witness entry `after`.
fn worked_on_new_session(ev: &Evidence<'_>, after: usize) -> bool {
    let fresh: Vec<&str> = ev.witness[after..]
        .iter()
        .filter(|e| initialize_fresh(e))
        .filter_map(|e| e.session_issued.as_deref())
        .collect();
    ev.witness[after..].iter().any(|e| {
        e.rpc_method.as_deref() == Some("tools/call")
            && e.call_ok == Some(true)
            && e.session_sent
                .as_deref()
                .is_some_and(|s| fresh.contains(&s))
    })
}

fn judge_timely(scenario: &Scenario, ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let (bound, what, most_sends) = match scenario.plan {
        Plan::AbortWaiting => (ABORT_AFTER, "abort signal", 1),
        Plan::DeadlineWaiting => (DEADLINE_CALL_TIMEOUT, "toolCallTimeoutMs", 1),
        _ => (DEADLINE_RESEND_CALL_TIMEOUT, "toolCallTimeoutMs", 2),
    };
    let Some(probe) = ev.calls.iter().find(|c| c.name == "probe") else {
        return verdict("BROKEN", "the probe call was never made".into());
    };
    let Some(lost_at) = ev.witness.iter().position(|e| {
        e.call_id.as_deref() == Some(probe.call_id.as_str())
            && e.executed == Some(false)
            && matches!(e.status, 400 | 401 | 404)
    }) else {
        return verdict(
            "BROKEN",
            format!(
                "call {} never met the lost session: nothing was tested",
                probe.call_id
            ),
        );
    };
    let base = Judgement {
        trigger_ms: Some(probe.ms),
        trigger_error: probe.error.clone(),
        ..base.clone()
    };
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let bound_ms = bound.as_millis() as u64;
    let late = |note: String| Judgement {
        late_only: true,
        ..verdict("LATE", note)
    };
    if probe.ms > (bound + TIMELY_SLACK).as_millis() as u64 {
        return late(format!(
            "call {} ended after {} ms, past its {what} of {bound_ms} ms",
            probe.call_id, probe.ms
        ));
    }
    if probe.ok {
        return verdict(
            "BROKEN",
            format!(
                "call {} succeeded within its {what}: the server never held it back, nothing was tested",
                probe.call_id
            ),
        );
    }
    let sent = ev.counts.get(&probe.call_id).map_or(0, |c| c.sent);
    if scenario.plan == Plan::DeadlineResend && ev.seamless && sent < 2 {
        // A client that never got a call through a new session is stuck,
        // whether or not it got as far as the repeat.
        if !worked_on_new_session(ev, lost_at) {
            return verdict(
                "STUCK",
                "no call worked on a new session after the session was lost".into(),
            );
        }
        return verdict(
            "BROKEN",
            format!(
                "call {} was not sent again on the new session: the repeat's deadline was not tested",
                probe.call_id
            ),
        );
    }
    if sent > most_sends {
        return verdict(
            "REPEATED",
            format!(
                "call {} was sent {sent} times; once its {what} has passed it must not be sent again",
                probe.call_id
            ),
        );
    }
    if scenario.plan == Plan::DeadlineResend {
        if let Some(note) = repeat_outlived_deadline(ev, &probe.call_id, lost_at, bound, what) {
            return late(note);
        }
    }
    if !worked_on_new_session(ev, lost_at) {
        return verdict(
            "STUCK",
            "no call worked on a new session after the session was lost".into(),
        );
    }
    verdict(
        "TIMELY",
        format!(
            "call {} ended after {} ms, within its {what} ({bound_ms} ms), sent {sent} time(s); calls worked again on a new session",
            probe.call_id, probe.ms
        ),
    )
}

/// A repeat whose caller's deadline has passed is let go: the client closes
/// its request (the server then never answers it) or tells the server with
/// `notifications/cancelled`. The server answering the repeat of `call_id`
/// past the deadline (`bound` after the call first reached the server, plus
/// slack) to a client that sent no `notifications/cancelled` means the repeat
/// was sent without the caller's signal and kept waiting.
fn repeat_outlived_deadline(
    ev: &Evidence<'_>,
    call_id: &str,
    lost_at: usize,
    bound: Duration,
    what: &str,
) -> Option<String> {
    let first = ev.witness[lost_at].t_ms;
    let deadline = first + (bound + TIMELY_SLACK).as_millis() as u64;
    let repeat = ev.witness[lost_at..].iter().find(|e| {
        e.call_id.as_deref() == Some(call_id)
            && e.executed == Some(true)
            && e.answered_ms > deadline
    })?;
    let cancelled = ev.witness[lost_at..]
        .iter()
        .any(|e| e.rpc_method.as_deref() == Some("notifications/cancelled"));
    (!cancelled).then(|| {
        format!(
            "the server answered the repeat of call {call_id} {} ms after the call first reached it, past its {what} of {} ms: the client kept the repeat's request open and sent no notifications/cancelled",
            repeat.answered_ms - first,
            bound.as_millis()
        )
    })
}

fn judge_fail_fast(scenario: &Scenario, ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let (Some(waiting), Some(after)) = (
        ev.calls.iter().find(|c| c.name == "waiting"),
        ev.calls.iter().find(|c| c.name == "after"),
    ) else {
        return verdict(
            "BROKEN",
            "the waiting call or the call after it was never made".into(),
        );
    };
    // With reconnect disabled (`reconnect-disabled`) reconnecting stops at the
    // loss itself: no new session is tried, and the waiting call fails at once.
    let disabled = ev.policy == Policy::Disabled;
    let refused = ev.refused_initializes();
    if disabled {
        let met = ev.witness.iter().any(|e| {
            e.call_id.as_deref() == Some(waiting.call_id.as_str())
                && e.executed == Some(false)
                && matches!(e.status, 400 | 401 | 404)
        });
        if !met {
            return verdict(
                "BROKEN",
                format!(
                    "call {} never met the lost session: nothing was tested",
                    waiting.name
                ),
            );
        }
    } else if refused == 0 {
        return verdict(
            "BROKEN",
            "the client never tried a new session: nothing was tested".into(),
        );
    }
    let (stopped, waiting_limit, why, at_once) = if disabled {
        (
            "reconnect is disabled",
            FAIL_FAST_LIMIT,
            "reconnect is disabled",
            "with reconnect disabled",
        )
    } else {
        (
            "the server refused every new session",
            GIVE_UP_WAIT_LIMIT,
            "gave up",
            "once reconnecting has stopped",
        )
    };
    if let Some(c) = [waiting, after].into_iter().find(|c| c.ok) {
        return verdict(
            "BROKEN",
            format!("call {} succeeded although {stopped}", c.name),
        );
    }
    for (c, limit) in [(waiting, waiting_limit), (after, FAIL_FAST_LIMIT)] {
        if c.ms > limit.as_millis() as u64 {
            return Judgement {
                late_only: true,
                ..verdict(
                    "LATE",
                    format!(
                        "call {} failed only after {} ms: {at_once} it must fail at once (limit {} ms, its timeout {} ms)",
                        c.name,
                        c.ms,
                        limit.as_millis(),
                        GIVE_UP_CALL_TIMEOUT.as_millis()
                    ),
                )
            };
        }
    }
    let words = scenario.behaviour.lost_session.words();
    // The call that met the loss gets the server's answer; the call made after
    // reconnecting stopped also says why.
    if ev.seamless {
        for (c, why) in [(waiting, None), (after, Some(why))] {
            let error = c.error.as_deref().unwrap_or("");
            let said = error.contains(words) && why.is_none_or(|w| error.contains(w));
            if !said {
                return verdict(
                    "MUTE",
                    match why {
                        None => format!(
                            "the error of call {} does not carry the server's words ({words:?}): {error:?}",
                            c.name
                        ),
                        Some(w) => format!(
                            "the error of call {} does not carry the server's words ({words:?}) and why reconnecting stopped ({w:?}): {error:?}",
                            c.name
                        ),
                    },
                );
            }
        }
    }
    let how = if disabled {
        "with reconnect disabled".to_string()
    } else {
        format!("once reconnecting stopped ({refused} refused initialize(s))")
    };
    verdict(
        "FAILED-FAST",
        format!(
            "{how}, the waiting call failed after {} ms and the next after {} ms{}",
            waiting.ms,
            after.ms,
            if ev.seamless {
                ", with the server's words"
            } else {
                ""
            }
        ),
    )
}

fn judge_no_retry(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let verdict = |verdict: &'static str, note: String| Judgement {
        verdict,
        note,
        ..base.clone()
    };
    let Some(cut) = ev.calls.iter().find(|c| c.name == "slow") else {
        return verdict("BROKEN", "the slow call was never made".into());
    };
    let count = ev.counts.get(&cut.call_id).copied().unwrap_or_default();
    if count.sent != 1 {
        return verdict(
            if count.sent > 1 { "REPEATED" } else { "BROKEN" },
            format!(
                "the call cut while its tool ran was sent {} time(s); it must be sent once and never again",
                count.sent
            ),
        );
    }
    if cut.ok {
        return verdict(
            "BROKEN",
            "the caller got a success for a call the server never answered".into(),
        );
    }
    let base = Judgement {
        trigger_ms: Some(cut.ms),
        trigger_error: cut.error.clone(),
        ..base.clone()
    };
    // After the server is back, the client must work again on a fresh session.
    let cut_at = ev
        .witness
        .iter()
        .position(|e| e.note.as_deref().is_some_and(|n| n.starts_with("restart:")))
        .unwrap_or(ev.witness.len());
    let recovered = ev.witness[cut_at..].iter().any(|e| {
        e.rpc_method.as_deref() == Some("tools/call")
            && e.call_ok == Some(true)
            && !e
                .session_sent
                .as_ref()
                .is_some_and(|s| ev.dropped.contains(s))
    });
    if !recovered {
        return Judgement {
            verdict: "STUCK",
            note: "the cut call was not sent again, but no call worked after the server came back"
                .into(),
            ..base
        };
    }
    Judgement {
        verdict: "NOT-RETRIED",
        note: format!(
            "the cut call failed once and was not sent again (its tool ran {} time(s)); calls worked again after the restart",
            count.ran
        ),
        ..base
    }
}
