//! The verify scenarios: the table (what the fake server does, how the client
//! is driven, what a healed client must show), the reconnect policies they run
//! with, and the judges that turn a run's evidence — the server's witness log
//! and per-call counts, the caller's view of each call — into a verdict.

mod apart;
pub mod auth;
pub mod evidence;
pub mod extra;
pub mod get_stream;
pub mod host_report;
pub mod invariants;
pub mod judges;
pub mod policy;
mod refused;
pub mod reload;
pub mod table;

pub use evidence::{again_alone, Evidence, HarnessCall, Judgement};
pub use judges::{judge, judge_with};
pub use policy::Policy;
pub use table::*;

#[cfg(test)]
mod tests;
