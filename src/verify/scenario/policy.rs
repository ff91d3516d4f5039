//! The reconnect policies a client runs the scenarios with: which policy each
//! scenario uses, and the delays, attempts, timeouts and deadlines the judges
//! hold a run to under it.

use std::time::Duration;

use super::ScenarioName;

/// How long a healthy client may take, past its first reconnect delay, to
/// handshake, re-list its tools and answer a call, on a loaded machine.
const RECONNECT_ALLOWANCE: Duration = Duration::from_millis(2500);
/// How long, past the first reconnect delay, the harness watches for a client
/// that throws a healthy session away.
const RECYCLE_WINDOW: Duration = Duration::from_millis(600);
/// Each call's own timeout (`toolCallTimeoutMs` and the caller's abort signal).
pub const CALL_TIMEOUT: Duration = Duration::from_millis(3000);
/// The package's own `toolCallTimeoutMs` (`DEFAULT_TOOL_CALL_TIMEOUT_MS`, 60 s).
const PACKAGE_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Reconnect policy handed to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// A short policy so scenarios run fast (100 ms first backoff, 5 attempts).
    Short,
    /// The package's own default (no `reconnect` config: 500 ms first backoff, 10 attempts).
    Default,
    /// As short, but only 2 attempts, so reconnecting gives up within a call's timeout.
    Brief,
    /// A 5 s first backoff (3 attempts), so a first reconnect that waits it shows.
    Long,
    /// The package's default policy and its default call timeout (60 s), not
    /// verify's usual 3 s: the calls of `reload` must be answered at once either way.
    Package,
    /// Reconnecting disabled (`reconnect.enabled: false`): no attempt at all.
    Disabled,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Short => "short",
            Policy::Default => "default",
            Policy::Brief => "brief",
            Policy::Long => "long",
            Policy::Package => "package",
            Policy::Disabled => "disabled",
        }
    }

    /// The policy a scenario runs with (`expired-404` runs once more with the package's default).
    pub fn for_scenario(name: ScenarioName) -> Policy {
        match name {
            ScenarioName::GaveUp | ScenarioName::LossesApart => Policy::Brief,
            ScenarioName::ReconnectDisabled => Policy::Disabled,
            ScenarioName::LongBackoff => Policy::Long,
            ScenarioName::Reload | ScenarioName::Reload5s => Policy::Default,
            _ => Policy::Short,
        }
    }

    /// The first reconnect delay (the package's default is 500 ms).
    pub fn initial_delay(self) -> Duration {
        match self {
            Policy::Short | Policy::Brief | Policy::Disabled => Duration::from_millis(100),
            Policy::Default | Policy::Package => Duration::from_millis(500),
            Policy::Long => Duration::from_millis(5000),
        }
    }

    /// Reconnect attempts per outage (the package's default is 10).
    pub fn max_attempts(self) -> u32 {
        match self {
            Policy::Short => 5,
            Policy::Brief => 2,
            Policy::Long => 3,
            Policy::Default | Policy::Package => 10,
            Policy::Disabled => 0,
        }
    }

    /// The most one reconnect delay grows to (the package's default is 30 s).
    pub fn max_delay(self) -> Duration {
        match self {
            Policy::Short | Policy::Brief | Policy::Disabled => Duration::from_millis(1000),
            Policy::Default | Policy::Package | Policy::Long => Duration::from_secs(30),
        }
    }

    /// The package's delay before reconnect attempt `attempt` (1-based) of an outage.
    pub fn backoff(self, attempt: u32) -> Duration {
        let doubled = self
            .initial_delay()
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        doubled.min(self.max_delay())
    }

    /// Each call's timeout.
    pub fn call_timeout(self) -> Duration {
        match self {
            Policy::Package => PACKAGE_CALL_TIMEOUT,
            _ => CALL_TIMEOUT,
        }
    }

    /// By when a client healthy under this policy has certainly recovered: its
    /// first reconnect delay plus a generous allowance for the handshake. Past
    /// it, a client that has not recovered is STUCK.
    pub fn deadline(self) -> Duration {
        self.initial_delay() + RECONNECT_ALLOWANCE
    }

    /// How long the harness watches for a wrongful recycle of a healthy session.
    pub fn recycle_window(self) -> Duration {
        self.initial_delay() + RECYCLE_WINDOW
    }
}
