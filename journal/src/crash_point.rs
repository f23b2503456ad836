//! Test hook: stops the process at the Nth file operation of a journal's creation, as a
//! `kill -9` arriving at that moment would, so the tests can show that every such moment leaves
//! either no journal or a whole one.
//!
//! Set `RUNBOOK_JOURNAL_CRASH_AT=N` (1-based) in a process's environment; nothing happens when it
//! is unset. `std::process::abort` runs no destructors and flushes nothing, like SIGKILL.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable naming the operation to stop at.
pub(crate) const VARIABLE: &str = "RUNBOOK_JOURNAL_CRASH_AT";

static REACHED: AtomicUsize = AtomicUsize::new(0);

/// Marks one more file operation of a creation as done; aborts if it is the one named.
pub(crate) fn reached() {
    let count = REACHED.fetch_add(1, Ordering::SeqCst) + 1;
    if std::env::var(VARIABLE).ok().and_then(|n| n.parse::<usize>().ok()) == Some(count) {
        std::process::abort();
    }
}
