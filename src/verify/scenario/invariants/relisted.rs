//! The rule `tools-from-new-session`: after a re-list the tools a host has
//! registered are the new session's definitions. The fake server names, in
//! each tool's description, the session it listed it on
//! ([`listed_session`]); the host reports what it has registered once its
//! last call worked, and every registered description must name the session
//! that call was served on, not a lost one.

use super::Violation;
use crate::verify::fake_server::{listed_session, WitnessEntry};
use crate::verify::scenario::HarnessCall;

/// Whether the tools `registered` (name, description) are the definitions of
/// the session the last call that worked was served on, when the server
/// listed its tools on that session. A description that names no session (a
/// server that does not name them) is not judged.
pub fn tools_from_new_session(
    witness: &[WitnessEntry],
    calls: &[HarnessCall],
    registered: &[(String, String)],
) -> Option<Violation> {
    let last = calls.iter().rev().find(|c| c.ok)?;
    let served_on = witness
        .iter()
        .rfind(|e| e.call_id.as_deref() == Some(last.call_id.as_str()) && e.executed == Some(true))?
        .session_sent
        .as_deref()?;
    // A session never listed (a server that loses each session once it listed
    // its tools) has no definitions to compare with.
    let listed = witness.iter().any(|e| {
        e.rpc_method.as_deref() == Some("tools/list")
            && e.status == 200
            && e.session_sent.as_deref() == Some(served_on)
    });
    if !listed {
        return None;
    }
    registered.iter().find_map(|(name, description)| {
        let listed_on = listed_session(description)?;
        (listed_on != served_on).then(|| {
            Violation::new(
                "tools-from-new-session",
                "BROKEN",
                format!(
                    "the host's tool {name} is the definition listed on session {listed_on}, though its last call ({}) was served on session {served_on}: after a re-list the registered tools must be the new session's",
                    last.call_id
                ),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_kept_from_a_lost_session_breaks_the_rule() {
        let served = WitnessEntry {
            seq: 5,
            t_ms: 10,
            answered_ms: 11,
            http_method: "POST".into(),
            rpc_method: Some("tools/call".into()),
            session_sent: Some("b".into()),
            status: 200,
            session_issued: None,
            call_id: Some("c4".into()),
            executed: Some(true),
            call_ok: Some(true),
            note: None,
            initialize: None,
        };
        let calls = [HarnessCall {
            call_id: "c4".into(),
            name: "last".into(),
            ok: true,
            error: None,
            ms: 3,
        }];
        let tool = |s: &str| {
            vec![(
                "mcp__fake__echo".to_string(),
                format!("Returns its text. (listed on session {s})"),
            )]
        };
        let listed = WitnessEntry {
            seq: 4,
            rpc_method: Some("tools/list".into()),
            call_id: None,
            executed: None,
            call_ok: None,
            ..served.clone()
        };
        let w = [listed, served.clone()];
        assert_eq!(tools_from_new_session(&w, &calls, &tool("b")), None);
        // The session is the one the last call that worked ran on, whatever
        // other call ran later.
        let other = WitnessEntry {
            seq: 6,
            session_sent: Some("a".into()),
            call_id: Some("c9".into()),
            ..served.clone()
        };
        let listed_a = WitnessEntry {
            seq: 1,
            session_sent: Some("a".into()),
            ..w[0].clone()
        };
        let w2 = [listed_a, w[0].clone(), served.clone(), other];
        assert_eq!(tools_from_new_session(&w2, &calls, &tool("b")), None);
        // A session the server never listed tools on is not judged.
        assert_eq!(tools_from_new_session(&[served], &calls, &tool("a")), None);
        assert_eq!(
            tools_from_new_session(&w, &calls, &tool("a")).map(|v| v.note),
            Some("invariant tools-from-new-session: the host's tool mcp__fake__echo is the definition listed on session a, though its last call (c4) was served on session b: after a re-list the registered tools must be the new session's".into())
        );
    }
}
