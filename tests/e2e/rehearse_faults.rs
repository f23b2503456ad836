//! The whole procedure under the sandbox's fault model (throttling, 500 "etcdserver: request
//! timed out", connection resets, slow answers, on Azure and on the management cluster), for
//! both DNS strategies: every phase, Day 2 and cleanup succeed, some steps needed more than
//! one attempt, and at the end nothing the procedure created remains, counted as for a calm
//! rehearsal (rehearse_all.rs). The seeds are fixed so a failure can be replayed: the same seed
//! and the same request order give the same faults.

use serde_json::Value;

use crate::rehearsal_checks::{assert_day2_vms, assert_every_runbook_succeeded, assert_nothing_left};
use crate::rehearse_no_external_dns::assert_no_external_dns_ever;
use crate::support::TestEnv;

/// A full rehearsal under the fault model drawn from `seed`; its JSON result.
fn rehearse_with_faults(seed: u64, extra: &[&str]) -> Value {
    let env = TestEnv::new();
    let seed = seed.to_string();
    let mut args = vec!["rehearse", "--faults", "--seed", &seed, "--output", "json", "--dir", "rehearsals"];
    args.extend_from_slice(extra);
    let out = env.run(&args);
    assert_eq!(out.code, 0, "seed {seed}: {}", out.all());
    let result = out.last_json();
    assert_every_runbook_succeeded(&result);
    let retried: u64 = result["runs"].as_array().unwrap().iter().map(|r| r["retried"].as_u64().unwrap()).sum();
    assert!(retried > 0, "seed {seed}: the fault model made no step retry: {:#?}", result["runs"]);
    assert_day2_vms(&result);
    assert_nothing_left(&result);
    result
}

#[test]
fn with_external_dns_under_faults_seed_7_the_same_end_state() {
    rehearse_with_faults(7, &[]);
}

#[test]
fn with_external_dns_under_faults_seed_1009_the_same_end_state() {
    rehearse_with_faults(1009, &[]);
}

#[test]
fn without_external_dns_under_faults_seed_7_the_same_end_state() {
    let result = rehearse_with_faults(7, &["--no-external-dns"]);
    assert_no_external_dns_ever(&result);
}

#[test]
fn without_external_dns_under_faults_seed_4242_the_same_end_state() {
    let result = rehearse_with_faults(4242, &["--no-external-dns"]);
    assert_no_external_dns_ever(&result);
}
