//! Phase 3 (the hosted cluster): what `plan` decides from Phase 1's journaled values before
//! anything runs.

use crate::support::TestEnv;

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

#[test]
fn marketplace_values_are_all_four_or_none_and_the_generation_is_checked_at_plan() {
    let env = after_phase1();
    let before = env.events().len();

    let partial =
        env.run(&["plan", PHASE3, "--var", "marketplace_publisher=azureopenshift", "--var", "marketplace_sku=aro_419"]);
    assert_eq!(partial.code, 2, "{}", partial.all());
    assert!(partial.stderr.contains("phase3-hosted-cluster.toml:"), "names the runbook's line: {}", partial.stderr);
    assert!(partial.stderr.contains("all four or none"), "{}", partial.stderr);

    let generation = env.run(&["plan", PHASE3, "--var", "image_generation=gen2"]);
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
        let mut args = vec!["plan", PHASE3];
        args.extend(pattern.iter());
        let out = env.run(&args);
        assert_eq!(out.code, 0, "{pattern:?}: {}", out.all());
        // Phase 1 ran with External DNS: the External DNS form of create runs, the other is skipped.
        let create =
            out.all().lines().find(|l| l.contains("create_cluster_no_external_dns")).unwrap_or_default().to_string();
        assert!(create.contains("skip"), "{}", out.all());
    }
    assert_eq!(env.events().len(), before, "plan wrote to the journal");
}
