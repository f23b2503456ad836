//! The upstream documentation's commands in place of the procedure's: Phase 1's
//! `identity_tool = "hypershift"` runs `hypershift create iam azure` (8 identities and 13
//! credentials) and cleanup's `destroy iam azure` takes them; Phase 3's `infra_tool =
//! "hypershift"` runs `hypershift create infra azure` and gives its output to `create cluster
//! azure --infra-json`. The iam tool writes each credential right after its identity and does not
//! repeat Azure's `ParentResourceNotFound` while the identity is new: the step's retry absorbs it.

use crate::rehearsal_checks::{
    assert_every_runbook_succeeded, assert_identities_made_by_create_iam, assert_made_by_create_infra,
    assert_nothing_left, attempts_of,
};
use crate::support::TestEnv;

#[test]
fn with_hypershift_create_iam_and_create_infra_every_phase_then_nothing_remains() {
    let env = TestEnv::new();
    let out = env.run(&[
        "rehearse",
        "--identity-tool",
        "hypershift",
        "--infra-tool",
        "hypershift",
        // A window far longer than the tool takes from an identity to its first credential, and
        // shorter than the step's shortest first backoff (2 s with jitter: at least 1 s): each
        // identity then fails one attempt at most.
        "--identity-visible-after",
        "0.9",
        "--output",
        "json",
        "--dir",
        "rehearsals",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    assert_every_runbook_succeeded(&result);
    assert_identities_made_by_create_iam(&result);
    // The sandbox's replication window ended the tool's attempts once per identity; the step's
    // retry carried it through, one identity further each time.
    let attempts = attempts_of(&env, &result, "phase1-workload-identity", "hypershift_iam");
    // At most one failure per identity (8), and at least one: an identity's first credential
    // comes well within the window, unless the machine stalls the tool for that long.
    assert!((2..=9).contains(&attempts), "create iam azure ran {attempts} time(s)");
    assert_made_by_create_infra(&env, &result);
    assert_nothing_left(&result);
}

#[test]
fn create_iam_without_the_cluster_operations_principal_is_refused_at_plan() {
    let env = TestEnv::new();
    let vars = env.write(
        "vars.toml",
        "prefix = \"demo\"\noidc_storage_account = \"demooidc\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nidentity_tool = \"hypershift\"\ncluster_ops_sp = false\n",
    );
    let out = env.run(&["plan", "phase1-workload-identity", "--vars", vars.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(out.all().contains("needs cluster_ops_sp = true"), "{}", out.all());
}
