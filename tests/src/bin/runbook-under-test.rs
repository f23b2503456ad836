//! The `runbook` CLI built as part of this test package, so cargo rebuilds it before the
//! end-to-end tests run (a binary of another package may be missing or stale).

fn main() {
    runbook::cli::entry::main()
}
