//! Phase 3 (the hosted cluster): what `plan` decides from Phase 1's journaled values before
//! anything runs.

use crate::support::{Run, TestEnv};

const PHASE3: &str = "phase3-hosted-cluster";

/// A journal holding a finished Phase 1 rehearsal, and a pull secret where Phase 3 looks for it.
fn after_phase1() -> TestEnv {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--phase", "1", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    env.write("pull-secret.json", r#"{"auths":{}}"#);
    env
}

#[test]
fn plan_before_phase1_names_every_missing_value_and_its_runbook() {
    let env = TestEnv::new();
    env.write("pull-secret.json", "{}");
    // A journal that exists but holds no Phase 1 run.
    assert_eq!(env.run(&["run", "local-demo", "--workdir", "demo"]).code, 0);
    let before = env.events().len();
    let out = env.run(&["plan", PHASE3]);
    assert_eq!(out.code, 2, "{}", out.all());
    for value in ["phase1.oidc_issuer_url", "phase1.workload_identities_file", "phase1.azure_credentials_file"] {
        assert!(out.stderr.contains(&format!("`{value}`")), "{value} not named:\n{}", out.stderr);
    }
    assert!(out.stderr.contains("run `phase1-workload-identity` first"), "{}", out.stderr);
    assert_eq!(env.events().len(), before, "plan wrote to the journal");
}

/// `runbook plan ARGS` acting on the Azure Phase 1 was rehearsed against: the rehearsal's
/// sandbox, named by its CA (the sandbox itself is gone, so nothing answers at its endpoints).
fn plan_as_rehearsal(env: &TestEnv, args: &[&str]) -> Run {
    let created = env.events().into_iter().find(|(kind, ..)| kind == "run_created").expect("Phase 1 ran");
    let azure = &created.3["vars"]["azure"];
    let workdir = created.3["vars"]["workdir"].as_str().expect("the rehearsal's directory");
    let mut command = env.command(&[&["plan", PHASE3], args].concat());
    command
        .env("RUNBOOK_AZURE_CREDENTIAL", "sandbox")
        .env("RUNBOOK_CA_FILE", std::path::Path::new(workdir).join("sandbox-ca.pem"))
        .env("RUNBOOK_ARM_ENDPOINT", azure["arm_endpoint"].as_str().unwrap())
        .env("RUNBOOK_AUTHORITY_HOST", azure["authority_host"].as_str().unwrap())
        .env("RUNBOOK_GRAPH_ENDPOINT", azure["graph_endpoint"].as_str().unwrap());
    let output = command.output().expect("runbook starts");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn plan_against_another_azure_than_phase1s_names_each_value_and_where_it_was_made() {
    let env = after_phase1();
    let before = env.events().len();
    // Phase 1 was rehearsed against a sandbox: its values do not stand for this (default) Azure,
    // at plan as at run.
    let out = env.run(&["plan", PHASE3]);
    assert_eq!(out.code, 2, "{}", out.all());
    for value in ["phase1.oidc_issuer_url", "phase1.workload_identities_file", "phase1.azure_credentials_file"] {
        assert!(out.stderr.contains(&format!("`{value}`")), "{value} not named:\n{}", out.stderr);
    }
    assert!(out.stderr.contains("only in runs against another Azure"), "{}", out.stderr);
    assert!(out.stderr.contains("the built-in sandbox"), "{}", out.stderr);
    assert_eq!(env.events().len(), before, "plan wrote to the journal");
}

#[test]
fn marketplace_values_are_all_four_or_none_and_the_generation_is_checked_at_plan() {
    let env = after_phase1();
    let before = env.events().len();

    let partial =
        plan_as_rehearsal(&env, &["--var", "marketplace_publisher=azureopenshift", "--var", "marketplace_sku=aro_419"]);
    assert_eq!(partial.code, 2, "{}", partial.all());
    assert!(partial.stderr.contains("phase3-hosted-cluster.toml:"), "names the runbook's line: {}", partial.stderr);
    assert!(partial.stderr.contains("all four or none"), "{}", partial.stderr);

    let generation = plan_as_rehearsal(&env, &["--var", "image_generation=gen2"]);
    assert_eq!(generation.code, 2, "{}", generation.all());
    assert!(generation.stderr.contains("image_generation"), "{}", generation.stderr);

    for pattern in [
        vec![],
        vec!["--var", "image_generation=Gen1"],
        vec![
            "--var",
            "marketplace_publisher=azureopenshift",
            "--var",
            "marketplace_offer=aro4",
            "--var",
            "marketplace_sku=aro_419",
            "--var",
            "marketplace_version=419.6.20250523",
            "--var",
            "image_generation=Gen2",
        ],
    ] {
        let out = plan_as_rehearsal(&env, &pattern);
        assert_eq!(out.code, 0, "{pattern:?}: {}", out.all());
        // Phase 1 ran with External DNS: the External DNS form of create runs, the other is skipped.
        let create =
            out.all().lines().find(|l| l.contains("create_cluster_no_external_dns")).unwrap_or_default().to_string();
        assert!(create.contains("skip"), "{}", out.all());
    }
    assert_eq!(env.events().len(), before, "plan wrote to the journal");
}

/// In a journal shared by several clusters, Phase 3 for one cluster (`prefix`) reads Phase 1's
/// values of that cluster only: another cluster's are refused and named.
#[test]
fn phase3_for_another_cluster_refuses_phase1s_values_of_this_one() {
    let env = after_phase1();
    let before = env.events().len();
    let other = plan_as_rehearsal(&env, &["--var", "prefix=green"]);
    assert_eq!(other.code, 2, "{}", other.all());
    assert!(other.stderr.contains("`phase1.oidc_issuer_url`"), "{}", other.stderr);
    assert!(
        other.stderr.contains("only for another cluster (`rehearse` (run ")
            && other.stderr.contains("this run acts on cluster `green`"),
        "{}",
        other.stderr
    );
    let same = plan_as_rehearsal(&env, &["--var", "prefix=rehearse"]);
    assert_eq!(same.code, 0, "{}", same.all());
    let invalid = plan_as_rehearsal(&env, &["--var", "prefix=Not_A_Cluster"]);
    assert_eq!(invalid.code, 2, "an empty prefix is allowed, not any: {}", invalid.all());
    assert_eq!(env.events().len(), before, "plan wrote to the journal");
}
