//! The fake server's state, shared by its routes: live sessions, the ids it
//! dropped on purpose, the witness log, each call id's counts, a held batch
//! of calls; and the ways sessions are lost (invalidate, prune, forget, evict).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::{oneshot, Notify};

use super::behaviour::{CallCount, ServerBehaviour, ServerLimits, WitnessEntry};
use super::WITNESS_TEXT_LIMIT;

pub(super) struct Session {
    pub(super) last_seen: Instant,
    pub(super) protocol_version: String,
    pub(super) called: bool,
}

/// Every session id the server dropped on purpose, bounded: the oldest are forgotten first.
#[derive(Default)]
pub(super) struct Remembered {
    pub(super) order: VecDeque<String>,
    pub(super) set: HashSet<String>,
}

impl Remembered {
    pub(super) fn insert(&mut self, id: String, cap: usize) {
        if cap == 0 || !self.set.insert(id.clone()) {
            return;
        }
        self.order.push_back(id);
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}

/// A batch of tool calls held until all have arrived, then split: some run (they were
/// running when the session dropped), the rest are answered as a lost session.
pub(super) struct HeldBatch {
    pub(super) size: usize,
    pub(super) run_first: usize,
    pub(super) waiting: Vec<oneshot::Sender<HeldFate>>,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum HeldFate {
    /// Ran before the session dropped; the answer goes out after a delay.
    RanBeforeLoss,
    /// Arrived on a session that is gone: rejected before running.
    Lost,
}

pub(super) struct Witness {
    pub(super) entries: VecDeque<WitnessEntry>,
    pub(super) next_seq: u64,
}

pub(super) struct Shared {
    pub(super) started: Instant,
    pub(super) behaviour: ServerBehaviour,
    pub(super) limits: ServerLimits,
    pub(super) sessions: Mutex<HashMap<String, Session>>,
    pub(super) witness: Mutex<Witness>,
    /// Session ids the server dropped on purpose (invalidate, prune, restart, forget, evict).
    pub(super) dropped: Mutex<Remembered>,
    pub(super) calls: Mutex<HashMap<String, CallCount>>,
    pub(super) held: Mutex<Option<HeldBatch>>,
    pub(super) counter: AtomicU64,
    pub(super) restart: Notify,
    /// Some session sent a tool call (wakes GETs waiting for that).
    pub(super) called: Notify,
    /// Listener generation: 1 at start, +1 after each restart once listening again.
    pub(super) generation: AtomicU64,
    /// How many times the reload cycle has forgotten every session.
    pub(super) reloads: Arc<AtomicU32>,
    /// The reload cycle, once started.
    pub(super) reload_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The secret every `/control/*` request must carry (`Authorization: Bearer
    /// TOKEN`): another local user can reach 127.0.0.1 but not this.
    pub(super) control_token: String,
    /// Initializes still to refuse with 503 (`/control/refuse`, an explored outage).
    pub(super) refuse_next: AtomicU64,
    /// The first new session after a loss was refused (`refuse_first_reinit`).
    pub(super) refused_once: AtomicBool,
}

/// Lock a mutex, carrying on with the data if a holder panicked (the data stays consistent:
/// every critical section here leaves it whole).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Cut `text` to [`WITNESS_TEXT_LIMIT`] bytes, so a client cannot make one
/// witness entry as large as its request.
pub(super) fn clip(text: &mut String) {
    if text.len() > WITNESS_TEXT_LIMIT {
        let mut end = WITNESS_TEXT_LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
        // Truncating keeps the allocation: give it back.
        text.shrink_to_fit();
    }
}

impl Shared {
    pub(super) fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Log a request refused with 403 before it reached the server's routes
    /// (a Host or Origin not on loopback, a control route without the token).
    pub(super) fn log_refused(&self, http_method: String, note: String) {
        self.log_note(http_method, 403, note);
    }

    pub(super) fn log(&self, mut entry: WitnessEntry) {
        clip(&mut entry.http_method);
        let texts = [
            &mut entry.rpc_method,
            &mut entry.session_sent,
            &mut entry.session_issued,
            &mut entry.call_id,
            &mut entry.note,
        ];
        for text in texts.into_iter().flatten() {
            clip(text);
        }
        if let Some(p) = &mut entry.initialize {
            for text in [
                &mut p.protocol_version,
                &mut p.capabilities,
                &mut p.client_info,
            ] {
                clip(text);
            }
        }
        let mut w = lock(&self.witness);
        entry.seq = w.next_seq;
        w.next_seq += 1;
        w.entries.push_back(entry);
        while w.entries.len() > self.limits.witness_entries.max(1) {
            w.entries.pop_front();
        }
    }

    pub(super) fn note(&self, note: String) {
        self.log_note("CONTROL".into(), 0, note);
    }

    /// A witness entry that is only a note: no request, no session, no call.
    pub(super) fn log_note(&self, http_method: String, status: u16, note: String) {
        let now = self.now_ms();
        self.log(WitnessEntry {
            seq: 0,
            t_ms: now,
            answered_ms: now,
            http_method,
            rpc_method: None,
            session_sent: None,
            status,
            session_issued: None,
            call_id: None,
            executed: None,
            call_ok: None,
            note: Some(note),
            initialize: None,
        });
    }

    pub(super) fn new_session_id(&self) -> String {
        use std::hash::{BuildHasher, Hasher};
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(n);
        h.write_u128(self.started.elapsed().as_nanos());
        format!("{:016x}{:08x}", h.finish(), n)
    }

    pub(super) fn remember_dropped(&self, ids: impl IntoIterator<Item = String>) {
        let mut d = lock(&self.dropped);
        for id in ids {
            d.insert(id, self.limits.remembered_ids);
        }
    }

    /// Drop every live session, remembering their ids. The note goes in the
    /// witness while the sessions are still locked, so no request can be
    /// answered as lost before the loss is written (nothing locks the
    /// sessions while holding the witness).
    pub(super) fn invalidate_all(&self, why: &str) {
        let mut sessions = lock(&self.sessions);
        let ids: Vec<String> = sessions.drain().map(|(id, _)| id).collect();
        self.note(format!("{why}: dropped {} session(s)", ids.len()));
        drop(sessions);
        self.remember_dropped(ids);
    }

    /// Drop one session, remembering its id, its note written as in [`Self::invalidate_all`].
    pub(super) fn drop_session(&self, id: &str, why: &str) {
        let mut sessions = lock(&self.sessions);
        if sessions.remove(id).is_some() {
            self.note(format!("{why}: dropped 1 session(s)"));
            drop(sessions);
            self.remember_dropped([id.to_string()]);
        }
    }

    pub(super) fn count_call(&self, call_id: Option<&str>, ran: bool) {
        let Some(id) = call_id else { return };
        let mut calls = lock(&self.calls);
        if !calls.contains_key(id) && calls.len() >= self.limits.remembered_ids {
            return;
        }
        let c = calls.entry(id.to_string()).or_default();
        if ran {
            c.ran += 1;
        } else {
            c.sent += 1;
        }
    }
}

pub(super) fn arm(shared: &Shared, size: usize, run_first: usize) {
    let size = size.clamp(1, 64);
    *lock(&shared.held) = Some(HeldBatch {
        size,
        run_first: run_first.min(size),
        waiting: Vec::new(),
    });
    shared.note(format!(
        "armed: the next {size} tool call(s) are held; {} run, then the session is lost under the rest",
        run_first.min(size)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::fake_server::WITNESS_TEXT_LIMIT;

    #[test]
    fn the_armed_refusal_says_the_words_callers_must_get_to_see() {
        use crate::verify::fake_server::{answers::REFUSED_TEXT, REFUSED_WORDS};
        assert!(REFUSED_TEXT.ends_with(REFUSED_WORDS), "{REFUSED_TEXT}");
    }

    #[test]
    fn clipped_text_keeps_whole_characters_and_gives_back_its_memory() {
        let mut fits = "x".repeat(WITNESS_TEXT_LIMIT);
        clip(&mut fits);
        assert_eq!(fits, "x".repeat(WITNESS_TEXT_LIMIT));
        // Two-byte characters: the limit falls on a boundary, one byte more does not.
        let mut long = "é".repeat(10_000);
        clip(&mut long);
        assert_eq!(long, format!("{}…", "é".repeat(WITNESS_TEXT_LIMIT / 2)));
        assert!(
            long.capacity() < 2 * WITNESS_TEXT_LIMIT,
            "{}",
            long.capacity()
        );
        let mut odd = format!("x{}", "é".repeat(10_000));
        clip(&mut odd);
        assert_eq!(odd, format!("x{}…", "é".repeat(WITNESS_TEXT_LIMIT / 2 - 1)));
    }

    #[test]
    fn remembered_ids_forget_the_oldest_past_the_cap() {
        let mut r = Remembered::default();
        for i in 0..5 {
            r.insert(i.to_string(), 3);
        }
        assert_eq!(r.order, ["2", "3", "4"]);
        assert!(!r.set.contains("0"));
    }
}
