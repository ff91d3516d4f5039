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
//! caller's words, and the deadlines are the plan's, not known here. A 401
//! naming the lost session is a loss, taken before any sign-in: no request
//! on the OAuth sign-in path (discovery, registration) may follow it (a
//! client that recovers only because that path failed recovers by accident).

use std::collections::HashMap;

use crate::verify::fake_server::unrouted::{is_sign_in_path, unrouted_path};
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
        .or_else(|| session_401_not_sign_in(ev.witness, ev.dropped))
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

/// After the server answered a request on a lost session with 401 (its body
/// naming the session), the client made no request on the OAuth sign-in
/// path: it took the 401 for the loss it is, not for a demand to sign in.
fn session_401_not_sign_in(witness: &[WitnessEntry], dropped: &[String]) -> Option<Violation> {
    let at = witness.iter().position(|e| {
        e.status == 401
            && e.http_method != "CONTROL"
            && e.session_sent.as_ref().is_some_and(|s| dropped.contains(s))
    })?;
    let signing_in: Vec<&str> = witness[at..]
        .iter()
        .filter_map(|e| {
            unrouted_path(e)
                .filter(|p| is_sign_in_path(p))
                .map(|_| e.http_method.as_str())
        })
        .collect();
    let first = signing_in.first()?;
    let lost = &witness[at];
    let more = match signing_in.len() - 1 {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(Violation::new(
        "session-401-not-sign-in",
        "BROKEN",
        format!(
            "the server answered {} on a lost session with 401 naming the session (request {}), and the client then went to the OAuth sign-in path: {first}{more}; a 401 naming the session is a loss, taken before any sign-in",
            lost.rpc_method.as_deref().unwrap_or(&lost.http_method),
            lost.seq
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
            ..Default::default()
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
    fn a_sign_in_request_after_a_401_naming_the_lost_session_breaks_the_rule() {
        let unrouted = |seq: u64, path: &str| WitnessEntry {
            http_method: format!("GET {path}"),
            rpc_method: None,
            status: 404,
            note: Some(crate::verify::fake_server::unrouted::UNROUTED_NOTE.into()),
            ..entry(seq, "", None, None)
        };
        let lost = WitnessEntry {
            status: 401,
            ..entry(3, "tools/call", Some("a"), None)
        };
        let dropped = vec!["a".to_string()];
        // A request to another path before the loss (a favicon, a probe) is not judged.
        let mut w = vec![
            entry(0, "initialize", None, Some("a")),
            unrouted(1, "/.well-known/oauth-authorization-server"),
            lost,
            unrouted(4, "/favicon.ico"),
            entry(5, "initialize", None, Some("b")),
        ];
        assert_eq!(session_401_not_sign_in(&w, &dropped), None);
        w.push(unrouted(6, "/.well-known/oauth-protected-resource/mcp"));
        w.push(WitnessEntry {
            http_method: "POST /register".into(),
            ..unrouted(7, "")
        });
        let v = session_401_not_sign_in(&w, &dropped).unwrap();
        assert_eq!(
            (v.invariant, v.verdict, v.note.as_str()),
            (
                "session-401-not-sign-in",
                "BROKEN",
                "invariant session-401-not-sign-in: the server answered tools/call on a lost session with 401 naming the session (request 3), and the client then went to the OAuth sign-in path: GET /.well-known/oauth-protected-resource/mcp and 1 more; a 401 naming the session is a loss, taken before any sign-in"
            )
        );
        // A 401 to a live session (a bad token) is the client's own auth flow's.
        assert_eq!(session_401_not_sign_in(&w, &[]), None);
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
