//! Freeing large values off the path a person waits on.

/// Drops `value` on a thread of its own. A long runbook's history, plan and earlier outcomes
/// are tens of thousands of small allocations, and freeing them took milliseconds at the end of
/// each resume. Should no thread start, `value` is dropped here.
pub fn in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new().name("runbook-free".into()).spawn(move || drop(value));
}
