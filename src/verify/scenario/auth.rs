//! The verdict of `auth-token-401` (AUTH-KEPT): with an OAuth `authProvider`,
//! a 401 that names no session, answered to a call on a live session, is the
//! client's own auth flow's business, not session loss. Only a 401 naming the
//! session starts a new session (`auth-session-401`, judged as any recovery).
//! What the witness shows is judged here; that the auth flow really ran is
//! what the client's host reports ([`auth_flow_skipped`], host_report.rs).

use super::evidence::{Evidence, Judgement};
use crate::verify::fake_server::TOKEN_REFUSED_WORDS;

/// The label of the call the server refuses with a bad-token 401.
pub const TOKEN_REFUSED_CALL: &str = "token-refused";

/// AUTH-KEPT when the refused call failed, was sent once, no new session was
/// started, and the calls before and after it worked on the same session;
/// BROKEN for a new session or a refused call that did not fail, REPEATED for
/// a refused call sent again, STUCK when the session did not survive it.
pub fn judge(ev: &Evidence<'_>, base: Judgement) -> Judgement {
    let Some(refused) = ev.calls.iter().find(|c| c.name == TOKEN_REFUSED_CALL) else {
        return Judgement {
            verdict: "BROKEN",
            note: format!("the call {TOKEN_REFUSED_CALL} was never made"),
            ..base
        };
    };
    let base = Judgement {
        trigger_ms: Some(refused.ms),
        trigger_error: refused.error.clone(),
        ..base
    };
    if base.initialize_count > 1 {
        return Judgement {
            verdict: "BROKEN",
            note: format!(
                "a new session after a 401 \"{TOKEN_REFUSED_WORDS}\" to a call on a live session ({} initializes): a 401 that names no session is for the client's auth flow, not session loss",
                base.initialize_count
            ),
            ..base
        };
    }
    let sent = ev.counts.get(&refused.call_id).map_or(0, |c| c.sent);
    if sent > 1 {
        return Judgement {
            verdict: "REPEATED",
            note: format!(
                "call {} ({TOKEN_REFUSED_CALL}) was sent {sent} times after a 401 \"{TOKEN_REFUSED_WORDS}\"",
                refused.call_id
            ),
            ..base
        };
    }
    if refused.ok {
        return Judgement {
            verdict: "BROKEN",
            note: format!(
                "call {} ({TOKEN_REFUSED_CALL}) succeeded although the server refused its token with 401",
                refused.call_id
            ),
            ..base
        };
    }
    if let Some(c) = ev
        .calls
        .iter()
        .find(|c| !c.ok && c.name != TOKEN_REFUSED_CALL)
    {
        return Judgement {
            verdict: "STUCK",
            note: format!(
                "call {} ({}) failed after the refused token: {}",
                c.call_id,
                c.name,
                c.error.as_deref().unwrap_or("no error text")
            ),
            ..base
        };
    }
    Judgement {
        verdict: "AUTH-KEPT",
        note: "the refused call failed once, no new session; calls before and after it worked"
            .into(),
        ..base
    }
}

/// Why an `auth-token-401` run that the witness passes still fails: the
/// client's host reports that its authProvider was never asked to sign in,
/// so the 401 never reached the auth flow (a patch that takes every 401 for
/// its own). `sign_ins`: how often the host's authProvider was asked.
pub fn auth_flow_skipped(sign_ins: u64) -> Option<String> {
    (sign_ins == 0).then(|| {
        format!(
            "the 401 \"{TOKEN_REFUSED_WORDS}\" never reached the client's auth flow: its authProvider was not asked to sign in"
        )
    })
}
