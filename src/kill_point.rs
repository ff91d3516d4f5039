//! A test-only hook that kills the process with SIGKILL at a named step of
//! apply or revert (`MCPATCH_TEST_KILL_AT=<step>`), so the fault-injection
//! tests can prove every step leaves the install original or patched.

/// Die here, uncleanly, if the tests asked for it.
pub fn reached(step: &str) {
    if std::env::var_os("MCPATCH_TEST_KILL_AT").is_some_and(|v| v == step) {
        #[cfg(unix)]
        // SAFETY: kill(2) on our own pid with a constant signal has no memory effects.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        std::process::abort();
    }
}
