//! The real `hypershift` and `ccoctl` (Go binaries no registry serves) against `runbook
//! sandbox up`. Ignored by default; run them with the binaries' paths in
//! `RUNBOOK_REAL_HYPERSHIFT` / `RUNBOOK_REAL_CCOCTL` and `--ignored` (the guide's reference,
//! docs/src/reference/sandbox.md: "The real `hypershift` and `ccoctl`"): the real `install` alone, every phase with the real tools (both
//! OIDC paths, both DNS strategies, a second pass, a fault seed), and the stand-in against the
//! real CLI on the same inputs.

#[allow(dead_code)]
#[path = "../e2e/support.rs"]
mod support;

mod differential;
mod hypershift_install;
mod real_binary;
mod rehearsals;

#[allow(dead_code)]
#[path = "../e2e/rehearsal_checks.rs"]
mod rehearsal_checks;
