//! End-to-end tests: they drive the real `runbook` binary against temporary journals.

mod approval;
mod audit_verify;
mod az_cli;
mod azure_flags;
mod concurrency;
mod doctor;
mod handoff;
mod hypershift_standin;
mod interrupt;
mod invalid_inputs;
mod journal_trust;
mod kube_resume;
mod kubectl;
mod phase1;
mod phase2;
mod phase3;
mod rehearsal_safety;
mod rehearse_all;
mod resume;
mod retries;
mod schema;
mod secrets;
mod standin_fence;
mod support;
mod timeline;
mod verify;
