//! The real `hypershift` and `ccoctl` (Go binaries no registry serves) against `runbook
//! sandbox up`. Ignored by default; run them with the binaries' paths in
//! `RUNBOOK_REAL_HYPERSHIFT` / `RUNBOOK_REAL_CCOCTL` and `--ignored` (see README, Kubernetes).

#[allow(dead_code)]
#[path = "../e2e/support.rs"]
mod support;

mod hypershift_install;
mod real_binary;
mod rehearsals;

#[path = "../e2e/rehearsal_checks.rs"]
mod rehearsal_checks;
