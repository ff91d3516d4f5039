//! SIGINT, SIGTERM and SIGHUP while verify runs: caught, so node, the fake
//! servers and the copies beside the install are stopped and removed before
//! mcpatch reports the interrupt.

use crate::error::{Error, Result};

/// The signal [`crate::on_signal`] records while a `catch` guard lives, once it comes.
pub(crate) async fn caught_signal() -> &'static str {
    loop {
        if let Some(signal) = crate::on_signal::caught() {
            return signal;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// SIGINT, SIGTERM and SIGHUP (the terminal closed), caught from the moment
/// they are listened to.
pub(crate) struct Interrupts {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

impl Interrupts {
    /// Start catching the signals (call inside the runtime).
    pub(crate) fn listen() -> Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let catch = |kind: SignalKind, name: &str| {
                signal(kind)
                    .map_err(|e| Error::io("catch", name, e, "check the machine's signal limits"))
            };
            Ok(Interrupts {
                int: catch(SignalKind::interrupt(), "SIGINT")?,
                term: catch(SignalKind::terminate(), "SIGTERM")?,
                hup: catch(SignalKind::hangup(), "SIGHUP")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Interrupts {})
    }

    /// The next signal caught.
    pub(crate) async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.int.recv() => "SIGINT",
                _ = self.term.recv() => "SIGTERM",
                _ = self.hup.recv() => "SIGHUP",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}
