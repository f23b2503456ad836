//! The `runbook` CLI built as part of this test package, so cargo rebuilds it before the
//! end-to-end tests run (a binary of another package may be missing or stale).
//!
//! `RUNBOOK_TEST_CLOCK=<RFC 3339 instant>` runs it on a simulated clock that starts there:
//! journal timestamps follow it and backoff waits move it forward instead of sleeping, so a test
//! can cross UTC midnight or a long Retry-After without waiting. Only this test build reads it.

fn main() {
    if let Ok(start) = std::env::var("RUNBOOK_TEST_CLOCK") {
        let start: jiff::Timestamp =
            start.parse().unwrap_or_else(|e| panic!("RUNBOOK_TEST_CLOCK={start:?} is not an RFC 3339 instant: {e}"));
        runbook_clock::Clock::simulated(start).install_for_process().expect("nothing has read the clock yet");
    }
    runbook::cli::entry::main()
}
