//! Rehearsals that run the real `hypershift` and `ccoctl` (`rehearse --hypershift PATH --ccoctl
//! PATH`): every phase, Day 2 and cleanup, in the sandbox's network of its own where it answers
//! as Azure's public host names. The tools make their own requests (the Azure SDK for Go and
//! client-go name themselves in `User-Agent`), the HostedCluster becomes Available only when each
//! component's federated exchange succeeds against the identities and issuer Phase 1 made, and
//! cleanup leaves nothing the procedure made.

use serde_json::{Value, json};

use crate::real_binary;
use crate::rehearsal_checks::{assert_day2_vms, assert_every_runbook_succeeded, assert_nothing_left, run_of};
use crate::support::TestEnv;

/// `runbook rehearse` with the real tools and `extra` arguments; the final JSON object.
fn rehearse_with_real_tools(env: &TestEnv, extra: &[&str]) -> Value {
    let hypershift = real_binary::required("RUNBOOK_REAL_HYPERSHIFT", "hypershift");
    let ccoctl = real_binary::required("RUNBOOK_REAL_CCOCTL", "ccoctl");
    let mut args = vec![
        "rehearse",
        "--hypershift",
        hypershift.to_str().unwrap(),
        "--ccoctl",
        ccoctl.to_str().unwrap(),
        "--output",
        "json",
        "--dir",
        "rehearsals",
    ];
    args.extend_from_slice(extra);
    let out = env.run(&args);
    assert_eq!(out.code, 0, "{}", out.all());
    out.last_json()
}

/// What every rehearsal with the real tools shows: the real programs ran, in a network with
/// loopback alone, and made their own requests to Azure's public names and the cluster.
fn assert_the_real_tools_did_the_work(result: &Value) {
    assert_eq!(result["public_names"], true, "the real tools imply --public-names");
    assert_eq!(result["network_interfaces"], json!(["lo"]), "nothing but loopback to send to");
    let described: Vec<&str> = result["programs"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(described.iter().all(|p| !p.contains("stand-in")), "{described:?}");
    let programs: Vec<&str> = result["request_programs"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    // client-go in the real hypershift, and the Azure SDK for Go (its ARM clients and sign-in).
    for expected in ["hypershift/", "azsdk-go-armresources/", "azsdk-go-armprivatedns/", "azsdk-go-azidentity/"] {
        assert!(programs.iter().any(|p| p.starts_with(expected)), "{expected} among {programs:?}");
    }
    let hosts: Vec<&str> = result["request_hosts"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for expected in ["management.azure.com", "login.microsoftonline.com", "graph.microsoft.com"] {
        assert!(hosts.contains(&expected), "{expected} among {hosts:?}");
    }
}

/// The procedure's default path: the native key pair and OIDC issuer, External DNS on.
#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
fn every_phase_with_the_real_hypershift_and_external_dns() {
    let env = TestEnv::new();
    let result = rehearse_with_real_tools(&env, &[]);
    assert_the_real_tools_did_the_work(&result);
    assert_every_runbook_succeeded(&result);
    // The real create cluster made the private zone and the egress load balancer in the
    // managed resource group; cleanup took them with the group.
    let after_phase3 = crate::rehearsal_checks::ids(&run_of(&result, "phase3-hosted-cluster")["resources"])
        .into_iter()
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>();
    for kind in ["/privatednszones/", "/virtualnetworklinks/", "/publicipaddresses/", "/loadbalancers/"] {
        assert!(after_phase3.iter().any(|id| id.contains(kind)), "{kind} after Phase 3: {after_phase3:#?}");
    }
    assert_day2_vms(&result);
    assert_nothing_left(&result);
}

/// The procedure's other paths: ccoctl makes the key pair and OIDC issuer (its blob uploads
/// signed for `<account>.blob.core.windows.net`), and no External DNS.
#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
fn every_phase_with_the_real_ccoctl_and_without_external_dns() {
    let env = TestEnv::new();
    let result = rehearse_with_real_tools(&env, &["--oidc-tool", "ccoctl", "--no-external-dns"]);
    assert_the_real_tools_did_the_work(&result);
    let programs: Vec<&str> = result["request_programs"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(programs.iter().any(|p| p.starts_with("azsdk-go-azblob/")), "ccoctl's uploads: {programs:?}");
    assert!(
        result["request_hosts"].as_array().unwrap().iter().any(|h| h == "rehearsaloidc.blob.core.windows.net"),
        "{}",
        result["request_hosts"]
    );
    assert_every_runbook_succeeded(&result);
    assert_nothing_left(&result);
}

/// Every phase run a second time with the real tools writes nothing: the runbooks' checks adopt
/// what the real create made.
#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
fn a_second_pass_with_the_real_tools_writes_nothing() {
    let env = TestEnv::new();
    let result = rehearse_with_real_tools(&env, &["--check-idempotent"]);
    assert_the_real_tools_did_the_work(&result);
    // Each runbook ran twice in a row, both times successfully; the second time wrote nothing.
    let runs = result["runs"].as_array().unwrap();
    let ran: Vec<&str> = runs.iter().map(|r| r["runbook"].as_str().unwrap()).collect();
    let twice: Vec<&str> = crate::rehearsal_checks::ALL_RUNBOOKS.iter().flat_map(|r| [*r, *r]).collect();
    assert_eq!(ran, twice);
    for run in runs {
        assert_eq!(run["status"], "succeeded", "{run}");
    }
    assert!(result["write_requests"].as_u64().unwrap() > 100, "{}", result["write_requests"]);
    assert_eq!(result["second_pass_write_requests"], 0, "{:#}", result["second_pass"]);
}

/// Under a seeded fault model (429 storms with Retry-After, 5xx, resets, slow answers) the real
/// tools' own retries and the runbooks' retries carry every phase through.
#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
fn every_phase_with_the_real_tools_under_faults() {
    let env = TestEnv::new();
    let result = rehearse_with_real_tools(&env, &["--faults", "--seed", "7"]);
    assert_the_real_tools_did_the_work(&result);
    assert_every_runbook_succeeded(&result);
    assert_nothing_left(&result);
}

/// The upstream documentation's commands: Phase 1's identities made by the real `hypershift
/// create iam azure` (8 identities, 13 credentials; the real tool does not repeat
/// `ParentResourceNotFound` for a credential written right after its new identity, and the step's
/// retry absorbs it), Phase 3's real `create infra azure` whose output the real `create cluster
/// azure --infra-json` takes, and cleanup's real `destroy iam azure`.
#[test]
#[ignore = "needs the real hypershift and ccoctl: set RUNBOOK_REAL_HYPERSHIFT / RUNBOOK_REAL_CCOCTL, see docs/src/reference/sandbox.md"]
fn every_phase_with_the_real_hypershift_create_iam_and_create_infra() {
    let env = TestEnv::new();
    let result = rehearse_with_real_tools(
        &env,
        &[
            "--identity-tool",
            "hypershift",
            "--infra-tool",
            "hypershift",
            "--no-external-dns",
            // Longer than the tool takes from an identity to its first credential, shorter than
            // the step's shortest first backoff (at least 1 s): each identity fails once at most.
            "--identity-visible-after",
            "0.9",
        ],
    );
    assert_the_real_tools_did_the_work(&result);
    let programs: Vec<&str> = result["request_programs"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(programs.iter().any(|p| p.starts_with("azsdk-go-armmsi/")), "create iam's identity clients: {programs:?}");
    assert_every_runbook_succeeded(&result);
    crate::rehearsal_checks::assert_identities_made_by_create_iam(&result);
    let attempts = crate::rehearsal_checks::attempts_of(&env, &result, "phase1-workload-identity", "hypershift_iam");
    // At most one failure per identity (8), and at least one.
    assert!((2..=9).contains(&attempts), "the real create iam azure ran {attempts} time(s)");
    crate::rehearsal_checks::assert_made_by_create_infra(&env, &result);
    assert_nothing_left(&result);
}
