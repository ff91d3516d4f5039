//! The `refused-once` scenario's verdict: the server loses the session and
//! refuses the first new session (503 with its reason), then accepts new ones.
//! The call that met the loss may fail, but with the server's words; the calls
//! after it must start a new session and work (RECOVERED). A client that keeps
//! the failed new session as the answer, or forgets the lost session so its
//! next call is no longer seen as a loss, stays STUCK. Kept apart from
//! judges.rs, whose recovery judge it reuses.

use super::evidence::{Evidence, Judgement};
use super::table::REFUSED_CALL;
use crate::verify::fake_server::REFUSED_ONCE_WORDS;

/// Judge a `refused-once` run from the recovery judge's verdict `j`: the
/// refusal itself (it happened, and its words reached the caller of a call
/// that failed by it).
pub(super) fn judge(ev: &Evidence<'_>, j: Judgement) -> Judgement {
    if !matches!(j.verdict, "SEAMLESS" | "RECOVERED") {
        return j;
    }
    let refused = ev.refused_initializes();
    if refused == 0 {
        return Judgement {
            verdict: "BROKEN",
            note: "the server never refused a new session: nothing was tested".into(),
            ..j
        };
    }
    let Some(call) = ev.calls.iter().find(|c| c.name == REFUSED_CALL) else {
        return Judgement {
            verdict: "BROKEN",
            note: "the call that meets the loss was never made".into(),
            ..j
        };
    };
    let error = call.error.as_deref().unwrap_or("");
    if ev.seamless && !call.ok && !error.contains(REFUSED_ONCE_WORDS) {
        return Judgement {
            verdict: "MUTE",
            note: format!(
                "the error of call {} (the new session refused) does not carry the server's words ({REFUSED_ONCE_WORDS:?}): {error:?}",
                call.call_id
            ),
            ..j
        };
    }
    j
}
