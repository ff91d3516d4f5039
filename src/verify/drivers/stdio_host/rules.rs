//! Rules a stdio host checks on every scenario run beyond its scenario's own
//! judge, found missing by mcp-remote's patch catalogue
//! (test-fixtures/patch-mutants/mcp-remote): the host never gets an answer to
//! an id it did not send (a bridge's own new initialize answered to the host);
//! a new session the bridge started itself is used only after its
//! `notifications/initialized` (the host's first session is the host's
//! handshake, passed on as it comes); and a call whose last send met a lost
//! session fails with the server's words for the loss (a repeat that met the
//! loss again, reported as a bare sentence), or a refused new session's. The
//! last is left to the scenarios' own judges for a host that passes its
//! caller's deadline and abort signal on: a call its caller ended has the
//! caller's words, and the deadlines are the plan's, not known here.

use std::collections::HashMap;

use crate::verify::fake_server::{WitnessEntry, REFUSED_ONCE_WORDS};
use crate::verify::scenario::invariants::{self, Expected, Reconnect, Violation};
use crate::verify::scenario::{Evidence, Judgement, Scenario};

/// `judged`, unless it passed and a rule here is broken: then the broken
/// rule's verdict. `caller_bounds`: the host passes each call's deadline and
/// abort signal on (the loss-words rule is then left out). `own_handshake`:
/// the client does every handshake itself, and the caller checks all of them
/// (the renewed-handshake rule is then left out).
pub(super) fn also(
    mut judged: Judgement,
    s: &Scenario,
    ev: &Evidence<'_>,
    foreign: &[String],
    caller_bounds: bool,
    own_handshake: bool,
) -> Judgement {
    if !judged.ok {
        return judged;
    }
    if let Some(v) = foreign_answer(foreign)
        .or_else(|| {
            (!own_handshake)
                .then(|| renewed_handshake(ev.witness))
                .flatten()
        })
        .or_else(|| (!caller_bounds).then(|| loss_words(s, ev)).flatten())
    {
        judged.verdict = v.verdict;
        judged.ok = false;
        judged.note = v.note;
    }
    judged
}

/// The host got an answer to an id it never sent.
fn foreign_answer(foreign: &[String]) -> Option<Violation> {
    let first = foreign.first()?;
    Some(Violation::new(
        "answers-to-host-ids",
        "BROKEN",
        format!(
            "{} answer(s) to ids the host never sent reached the host, the first: {first}",
            foreign.len()
        ),
    ))
}

/// Every session but the first the witness saw issued (the host's own
/// handshake) was started by the bridge, which must finish its handshake
/// before it uses it.
fn renewed_handshake(witness: &[WitnessEntry]) -> Option<Violation> {
    let first = witness.iter().find_map(|e| e.session_issued.as_deref())?;
    let renewed: Vec<WitnessEntry> = witness
        .iter()
        .filter(|e| {
            e.session_issued.as_deref() != Some(first) && e.session_sent.as_deref() != Some(first)
        })
        .cloned()
        .collect();
    invariants::used_before_initialized(&renewed)
        .map(|note| Violation::new("new-session-handshake", "BROKEN", note))
}

/// A failed call whose last send met a lost session carries the words of the
/// server's loss answer (or of a refused new session); a bridge has no call
/// deadline of its own and no ordinary words to check here (its scenarios do).
fn loss_words(s: &Scenario, ev: &Evidence<'_>) -> Option<Violation> {
    let none = HashMap::new();
    let words = HashMap::new();
    // A call that met `refused-once`'s refusal carries its words instead.
    let calls: Vec<_> = ev
        .calls
        .iter()
        .filter(|c| {
            !c.error
                .as_deref()
                .is_some_and(|e| e.contains(REFUSED_ONCE_WORDS))
        })
        .cloned()
        .collect();
    invariants::words_carried(
        &Evidence {
            calls: &calls,
            ..*ev
        },
        &Expected {
            deadlines: &none,
            words: &words,
            lost_words: s.behaviour.lost_session.words(),
            reconnect: Reconnect::PerCall,
            last_call: "",
            logs: &[],
            loss_log: None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, rpc: &str, sent: Option<&str>, issued: Option<&str>) -> WitnessEntry {
        WitnessEntry {
            seq,
            t_ms: seq * 10,
            answered_ms: seq * 10 + 1,
            http_method: "POST".into(),
            rpc_method: Some(rpc.into()),
            session_sent: sent.map(str::to_string),
            status: if rpc == "notifications/initialized" {
                202
            } else {
                200
            },
            session_issued: issued.map(str::to_string),
            call_id: None,
            executed: None,
            call_ok: None,
            note: None,
            initialize: None,
        }
    }

    #[test]
    fn a_new_session_the_bridge_started_must_be_initialized_before_use_but_the_hosts_first_is_its_own(
    ) {
        // The host's first session used before its notifications/initialized
        // arrived (an old bridge forwards it without waiting): not judged.
        let mut w = vec![
            entry(0, "initialize", None, Some("a")),
            entry(1, "tools/list", Some("a"), None),
            entry(2, "notifications/initialized", Some("a"), None),
            entry(3, "initialize", None, Some("b")),
            entry(4, "notifications/initialized", Some("b"), None),
            entry(5, "tools/call", Some("b"), None),
        ];
        assert_eq!(renewed_handshake(&w), None);
        // The bridge's own new session used without its notifications/initialized.
        w.remove(4);
        let v = renewed_handshake(&w).unwrap();
        assert_eq!(
            (v.invariant, v.verdict, v.note.as_str()),
            (
                "new-session-handshake",
                "BROKEN",
                "invariant new-session-handshake: tools/call (request 5) used session b before the client sent its notifications/initialized: the handshake of that session was never finished"
            )
        );
    }

    #[test]
    fn an_answer_to_an_id_the_host_never_sent_breaks_the_rule() {
        assert_eq!(foreign_answer(&[]), None);
        let v = foreign_answer(&[
            r#"an answer to no request of mcpatch: {"id":"mcpatch-reinit-1","jsonrpc":"2.0","result":{}}"#.into(),
        ])
        .unwrap();
        assert_eq!(v.verdict, "BROKEN");
        assert_eq!(
            v.note,
            r#"invariant answers-to-host-ids: 1 answer(s) to ids the host never sent reached the host, the first: an answer to no request of mcpatch: {"id":"mcpatch-reinit-1","jsonrpc":"2.0","result":{}}"#
        );
    }
}
