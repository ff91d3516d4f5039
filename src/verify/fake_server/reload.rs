//! The fake server's reload cycle: once a plan starts it, the server forgets
//! every session again and again, as a server in watch mode restarted on
//! every save. The `reload` scenarios (scenario/reload.rs) set the cycle and
//! judge the run.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often, and how many times, the server forgets every session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReloadCycle {
    pub every: Duration,
    pub times: u32,
}

/// The server's note for each time it forgets every session (`reload 3/15`).
pub const NOTE_PREFIX: &str = "reload ";

/// The forgetting loop the fake server runs once the plan starts it: every
/// `cycle.every`, `forget(n)` drops every session (n counts from 1), then
/// `done` counts it; `times` times in all.
pub async fn forget_loop(
    cycle: ReloadCycle,
    done: Arc<AtomicU32>,
    forget: impl Fn(u32) + Send + 'static,
) {
    for n in 1..=cycle.times {
        tokio::time::sleep(cycle.every).await;
        forget(n);
        done.store(n, Ordering::SeqCst);
    }
}
