//! The rule `closed-after-last-answer`: a lost session is closed only once its
//! last call has its answer. A client that closes it sooner cuts the calls
//! still in flight on it: the server sees their connections close before it
//! answered (its `unanswered` note) while their callers still waited; and a
//! DELETE that closes a session must come after every call on it was answered.

use std::collections::HashMap;

use super::{Violation, DEADLINE_SLACK_MS};
use crate::verify::fake_server::{WitnessEntry, UNANSWERED_NOTE};
use crate::verify::scenario::HarnessCall;

/// The call id of an `unanswered` note: "... call c3 ended before its answer ...".
fn unanswered_call(e: &WitnessEntry) -> Option<&str> {
    let rest = e.note.as_deref()?.strip_prefix(UNANSWERED_NOTE)?;
    rest.split_whitespace().next()
}

/// A call whose request the client cut before the server answered it, while
/// its caller still waited (it failed before its own deadline, `deadlines` by
/// label); or a DELETE of a session that arrived before a call on it was
/// answered. Only for runs where the server itself cut no connection (no
/// restart): the witness cannot tell who closed a connection.
pub fn closed_after_last_answer(
    witness: &[WitnessEntry],
    calls: &[HarnessCall],
    deadlines: &HashMap<String, u64>,
) -> Option<Violation> {
    for e in witness {
        let Some(id) = unanswered_call(e) else {
            continue;
        };
        let Some(c) = calls.iter().find(|c| c.call_id == id) else {
            continue;
        };
        let Some(&deadline) = deadlines.get(&c.name) else {
            continue;
        };
        if c.ok || c.ms + DEADLINE_SLACK_MS >= deadline {
            continue;
        }
        return Some(Violation::new(
            "closed-after-last-answer",
            "BROKEN",
            format!(
                "call {} ({}) was cut: the client closed its request before the server answered it, and the caller got \"{}\" after {} ms, before its {deadline} ms deadline; a session may be closed only once its last call has its answer",
                c.call_id,
                c.name,
                c.error.as_deref().unwrap_or("no error"),
                c.ms
            ),
        ));
    }
    witness
        .iter()
        .filter(|d| d.http_method == "DELETE")
        .find_map(|d| {
            let s = d.session_sent.as_deref()?;
            let pending = witness.iter().find(|e| {
                e.rpc_method.as_deref() == Some("tools/call")
                    && e.session_sent.as_deref() == Some(s)
                    && e.t_ms < d.t_ms
                    && e.answered_ms > d.t_ms
            })?;
            Some(Violation::new(
                "closed-after-last-answer",
                "BROKEN",
                format!(
                    "session {s} was closed (DELETE, request {}) while call {} on it still waited for its answer",
                    d.seq,
                    pending.call_id.as_deref().unwrap_or("?")
                ),
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(seq: u64, text: &str) -> WitnessEntry {
        WitnessEntry {
            seq,
            t_ms: 10,
            answered_ms: 10,
            http_method: "CONTROL".into(),
            rpc_method: None,
            session_sent: None,
            status: 0,
            session_issued: None,
            call_id: None,
            executed: None,
            call_ok: None,
            note: Some(text.into()),
            initialize: None,
        }
    }

    fn call(id: &str, name: &str, ms: u64) -> HarnessCall {
        HarnessCall {
            call_id: id.into(),
            name: name.into(),
            ok: false,
            error: Some("MCP error -32000: Connection closed".into()),
            ms,
        }
    }

    #[test]
    fn a_call_cut_before_its_deadline_breaks_the_rule_one_ended_by_its_deadline_does_not() {
        let w = vec![note(
            3,
            "unanswered: the request of call c2 ended before its answer (its connection closed)",
        )];
        let deadlines: HashMap<String, u64> = [("2:slow".to_string(), 3000)].into();
        let v = closed_after_last_answer(&w, &[call("c2", "2:slow", 400)], &deadlines)
            .expect("a violation");
        assert_eq!(
            v.note,
            "invariant closed-after-last-answer: call c2 (2:slow) was cut: the client closed its request before the server answered it, and the caller got \"MCP error -32000: Connection closed\" after 400 ms, before its 3000 ms deadline; a session may be closed only once its last call has its answer"
        );
        assert_eq!(
            closed_after_last_answer(&w, &[call("c2", "2:slow", 3000)], &deadlines),
            None
        );
    }

    #[test]
    fn a_delete_while_a_call_on_the_session_waits_breaks_the_rule() {
        let mut slow = note(1, "");
        slow.note = None;
        slow.http_method = "POST".into();
        slow.rpc_method = Some("tools/call".into());
        slow.session_sent = Some("a".into());
        slow.call_id = Some("c1".into());
        slow.t_ms = 0;
        slow.answered_ms = 500;
        let mut delete = note(2, "");
        delete.note = None;
        delete.http_method = "DELETE".into();
        delete.session_sent = Some("a".into());
        delete.t_ms = 100;
        let w = vec![slow.clone(), delete.clone()];
        assert_eq!(
            closed_after_last_answer(&w, &[], &HashMap::new()).map(|v| v.note),
            Some("invariant closed-after-last-answer: session a was closed (DELETE, request 2) while call c1 on it still waited for its answer".into())
        );
        // Within the same millisecond (the witness's clock) the order is not
        // known: a call answered as the DELETE came, or sent as it came, was
        // not cut by it.
        for (sent, answered, delete_at) in [(0, 100, 100), (100, 500, 100), (0, 500, 600)] {
            (slow.t_ms, slow.answered_ms, delete.t_ms) = (sent, answered, delete_at);
            assert_eq!(
                closed_after_last_answer(&[slow.clone(), delete.clone()], &[], &HashMap::new()),
                None,
                "call at {sent}..{answered} ms, DELETE at {delete_at} ms"
            );
        }
    }
}
