//! The `hypershift` stand-in against `runbook sandbox up`: the real CLI's flag errors, its
//! validations, the objects `install` and `create cluster azure` write (with their field
//! managers), the workload identities' role assignments, a refusal for a principal that may not
//! assign roles, and the fence around the sandbox. Real kubectl reads what was written.

use std::process::Command;

use serde_json::Value;

use crate::support::{
    KUBECTL, SandboxProcess, Standin, TestEnv, create_cluster_args, hypershift, kubectl, object, settings,
};

fn managers(object: &Value) -> Vec<String> {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["manager"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn flags_fail_as_the_real_cli_fails() {
    let env = TestEnv::new();
    let none: Vec<(String, String)> = Vec::new();
    let unknown = hypershift(env.path(), &none, &["install", "--foo"]);
    assert_eq!((unknown.code, unknown.stderr.as_str()), (1, "unknown flag: --foo\n"), "{}", unknown.stdout);
    let nested = hypershift(env.path(), &none, &["create", "cluster", "azure", "--name", "x", "--bogus=1"]);
    assert_eq!((nested.code, nested.stderr.as_str()), (1, "unknown flag: --bogus\n"));
    let typed = hypershift(env.path(), &none, &["create", "cluster", "azure", "--node-pool-replicas", "two"]);
    assert_eq!(
        typed.stderr,
        "invalid argument \"two\" for \"--node-pool-replicas\" flag: strconv.ParseInt: parsing \"two\": invalid syntax\n"
    );
    let missing = hypershift(env.path(), &none, &["destroy", "cluster", "azure", "--name", "x"]);
    assert_eq!(missing.stderr, "required flag(s) \"azure-creds\", \"dns-zone-rg-name\" not set\n");
    let command = hypershift(env.path(), &none, &["frobnicate"]);
    assert_eq!((command.code, command.stderr.as_str()), (1, "unknown command \"frobnicate\" for \"hypershift\"\n"));
    // Flags are checked before the fence: nothing here had any Azure or cluster settings.
}

#[test]
fn the_stand_in_refuses_anything_but_the_sandbox_before_any_request() {
    let env = TestEnv::new();
    let azure = vec![("RUNBOOK_AZURE_CREDENTIAL".to_string(), "cli".to_string())];
    let out = hypershift(env.path(), &azure, &["install", "--pull-secret", "absent.json"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("acts only on runbook's built-in sandbox") && out.stderr.contains("Nothing was sent"),
        "{}",
        out.stderr
    );

    // The sandbox's Azure, but a kubeconfig naming another API server: refused before connecting.
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let kubeconfig = env.write(
        "elsewhere.kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://192.0.2.1:6443\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n",
    );
    let mut elsewhere = settings(&sandbox);
    elsewhere.retain(|(k, _)| k != "KUBECONFIG");
    elsewhere.push(("KUBECONFIG".into(), kubeconfig.display().to_string()));
    std::fs::write(env.path().join("pull-secret.json"), "{}").unwrap();
    let out = hypershift(env.path(), &elsewhere, &["install", "--pull-secret", "pull-secret.json"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("is not a loopback address"), "{}", out.stderr);
}

#[test]
fn install_applies_the_operator_objects_with_and_without_external_dns() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let settings = settings(&sandbox);
    std::fs::write(env.path().join("pull-secret.json"), "{\"auths\":{}}\n").unwrap();

    let missing = hypershift(env.path(), &settings, &["install", "--pull-secret", "nowhere.json"]);
    assert_eq!(missing.code, 1);
    assert_eq!(missing.stderr, "failed to read pull secret file: open nowhere.json: no such file or directory\n");
    let partial_dns = hypershift(
        env.path(),
        &settings,
        &["install", "--external-dns-provider=azure", "--pull-secret", "pull-secret.json"],
    );
    assert_eq!(partial_dns.code, 1);
    assert!(
        partial_dns.stderr.contains("--external-dns-domain-filter is required with --external-dns-provider"),
        "{}",
        partial_dns.stderr
    );

    let out = hypershift(
        env.path(),
        &settings,
        &["install", "--pull-secret", "pull-secret.json", "--limit-crd-install", "Azure"],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("applied Deployment hypershift/operator"), "{}", out.stdout);
    let crd = object(&sandbox, &["get", "crd", "hostedclusters.hypershift.openshift.io"]);
    assert_eq!(crd["spec"]["names"]["shortNames"], serde_json::json!(["hc", "hcs"]));
    let operator = object(&sandbox, &["get", "deployment", "operator", "-n", "hypershift"]);
    assert!(managers(&operator).contains(&"hypershift".to_string()), "{:?}", managers(&operator));
    assert_eq!(operator["spec"]["selector"]["matchLabels"]["name"], "operator");
    let pull = object(&sandbox, &["get", "secret", "pull-secret", "-n", "hypershift"]);
    assert_eq!(pull["type"], "kubernetes.io/dockerconfigjson");
    let deployments = kubectl(&sandbox, &["get", "deployments", "-n", "hypershift", "-o", "name"]);
    assert_eq!(deployments.trim(), "deployment.apps/operator");

    std::fs::write(env.path().join("azure_mgmt.json"), "{\"tenantId\":\"t\",\"aadClientSecret\":\"s3cr3t\"}").unwrap();
    let dns = hypershift(
        env.path(),
        &settings,
        &[
            "install",
            "--external-dns-provider=azure",
            "--external-dns-credentials",
            "azure_mgmt.json",
            "--pull-secret",
            "pull-secret.json",
            "--external-dns-domain-filter",
            "demo.example.com",
            "--limit-crd-install",
            "Azure",
        ],
    );
    assert_eq!(dns.code, 0, "{}{}", dns.stdout, dns.stderr);
    let external = object(&sandbox, &["get", "deployment", "external-dns", "-n", "hypershift"]);
    let args = external["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("--domain-filter=demo.example.com") && args.contains("--provider=azure"), "{args}");
    let credentials = object(&sandbox, &["get", "secret", "external-dns-credentials", "-n", "hypershift"]);
    assert!(credentials["data"]["credentials"].is_string());
    assert!(!dns.stdout.contains("s3cr3t") && !dns.stderr.contains("s3cr3t"));
}

#[test]
fn create_cluster_azure_assigns_roles_writes_the_objects_and_refuses_an_existing_cluster() {
    let Standin { env, sandbox, settings, issuer } = Standin::installed();

    // Validation before anything is created.
    let marketplace =
        hypershift(env.path(), &settings, &create_cluster_args(&issuer, &["--marketplace-sku", "aro_419"]));
    assert_eq!(marketplace.code, 1);
    assert!(
        marketplace.stderr.starts_with("all marketplace flags (i.e. marketplace-publisher, marketplace-offer, marketplace-sku, marketplace-version) are required"),
        "{}",
        marketplace.stderr
    );
    let shadow =
        hypershift(env.path(), &settings, &create_cluster_args(&issuer, &["--external-dns-domain", "example.com"]));
    assert!(shadow.stderr.contains("conflicts with cluster domain \"demo-hc.example.com\""), "{}", shadow.stderr);
    let bad_name = hypershift(
        env.path(),
        &settings,
        &["create", "cluster", "azure", "--name", "Demo_HC", "--pull-secret", "pull-secret.json"],
    );
    assert!(bad_name.stderr.starts_with("HostedCluster name failed RFC1123 validation"), "{}", bad_name.stderr);
    let no_zone_rg = hypershift(
        env.path(),
        &settings,
        &[
            "create",
            "cluster",
            "azure",
            "--name",
            "demo-hc",
            "--pull-secret",
            "pull-secret.json",
            "--assign-service-principal-roles",
        ],
    );
    assert_eq!(
        no_zone_rg.stderr,
        "--dns-zone-rg-name is required when --assign-service-principal-roles or --assign-custom-hcp-roles is set\n"
    );
    let state = sandbox.state();
    assert!(
        !state["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap_or_default().contains("/resourceGroups/demo-hc-")),
        "validation failures created nothing"
    );

    let created = hypershift(
        env.path(),
        &settings,
        &create_cluster_args(
            &issuer,
            &["--external-dns-domain", "demo.example.com", "--generate-ssh", "--infra-id", "demo-hc-abcde"],
        ),
    );
    assert_eq!(created.code, 0, "{}{}", created.stdout, created.stderr);
    let hc = object(&sandbox, &["get", "hostedcluster", "demo-hc", "-n", "clusters"]);
    // POSTed: its fields belong to `hypershift` (the sandbox's operator adds its own later).
    assert_eq!(managers(&hc).first().map(String::as_str), Some("hypershift"), "{:?}", managers(&hc));
    assert!(!managers(&hc).contains(&"hypershift-cli".to_string()));
    assert_eq!(hc["metadata"]["labels"]["hypershift.openshift.io/auto-created-for-infra"], "demo-hc-abcde");
    assert_eq!(hc["spec"]["issuerURL"], issuer.as_str());
    assert_eq!(hc["spec"]["serviceAccountSigningKey"]["name"], "demo-hcsa-token-issuer-key");
    assert_eq!(
        hc["spec"]["services"][0]["servicePublishingStrategy"]["route"]["hostname"],
        "api-demo-hc.demo.example.com"
    );
    let identities: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path().join("workload-identities.json")).unwrap()).unwrap();
    assert_eq!(
        hc["spec"]["platform"]["azure"]["azureAuthenticationConfig"]["workloadIdentities"]["disk"]["clientID"],
        identities["disk"]["clientID"]
    );
    let pool = object(&sandbox, &["get", "nodepool", "demo-hc", "-n", "clusters"]);
    assert_eq!(managers(&pool).first().map(String::as_str), Some("hypershift-cli"), "{:?}", managers(&pool));
    assert_eq!(pool["spec"]["replicas"], 2);
    assert_eq!(pool["spec"]["platform"]["azure"]["diagnostics"]["storageAccountType"], "Managed");
    let key = object(&sandbox, &["get", "secret", "demo-hcsa-token-issuer-key", "-n", "clusters"]);
    assert!(key["data"]["key"].is_string());
    for secret in ["demo-hc-pull-secret", "demo-hc-cloud-credentials", "demo-hc-etcd-encryption-key", "demo-hc-ssh-key"]
    {
        let s = object(&sandbox, &["get", "secret", secret, "-n", "clusters"]);
        assert!(managers(&s).contains(&"hypershift-cli".to_string()), "{secret}: {:?}", managers(&s));
    }

    // Roles by GUID at the scopes of the reference: 2 capz + 3 cloud-provider + 3 file + 1 disk
    // + 3 ingress + 2 network + 1 image registry = 15, named uuidv5(infraID-component-scope).
    let resources: Vec<String> = sandbox.state()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    let in_cluster_groups = resources
        .iter()
        .filter(|r| {
            r.contains("/roleAssignments/")
                && (r.contains("/resourceGroups/demo-hc-")
                    || r.contains("/resourceGroups/os4-common/providers/Microsoft.Authorization"))
        })
        .count();
    assert!(in_cluster_groups >= 15, "{resources:#?}");

    let again = hypershift(env.path(), &settings, &create_cluster_args(&issuer, &[]));
    assert_eq!((again.code, again.stderr.as_str()), (1, "hostedcluster clusters/demo-hc already exists\n"));

    // create kubeconfig names a cluster that does not exist as the Go client does.
    let absent = hypershift(env.path(), &settings, &["create", "kubeconfig", "--name", "nope"]);
    assert_eq!(
        (absent.code, absent.stderr.as_str()),
        (
            1,
            "Error: hostedclusters.hypershift.openshift.io \"nope\" not found\nhostedclusters.hypershift.openshift.io \"nope\" not found\n"
        )
    );
}

#[test]
fn a_principal_with_contributor_only_gets_authorization_failed_on_role_assignment() {
    let Standin { env, sandbox, settings, issuer } = Standin::after_phase1();
    // Take User Access Administrator away from the cluster-operations principal.
    let assignment = env.run(&["get", "cluster_ops_user_access_admin.id"]);
    assert_eq!(assignment.code, 0, "{}", assignment.all());
    let revoke = env.write(
        "revoke.toml",
        &format!(
            "[runbook]\nname = \"revoke\"\n\n[[steps]]\nid = \"revoke\"\nkind = \"arm\"\ninputs.action = \"delete\"\ninputs.id = \"{}\"\ninputs.api_version = \"2022-04-01\"\n",
            assignment.stdout.trim()
        ),
    );
    let out =
        env.command(&["--no-progress", "run", revoke.to_str().unwrap()]).envs(&sandbox.settings).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let refused = hypershift(env.path(), &settings, &create_cluster_args(&issuer, &["--infra-id", "demo-hc-zzzzz"]));
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(
        refused.stderr.starts_with("failed to perform role assignment: failed to create role assignment:"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("AuthorizationFailed"), "{}", refused.stderr);
    // Nothing reached the management cluster.
    let clusters = kubectl(&sandbox, &["get", "secrets", "-n", "clusters", "-o", "name"]);
    assert!(clusters.trim().is_empty(), "{clusters}");
}

#[test]
fn install_create_available_kubeconfig_nodes_nodepool_then_destroy_removes_what_was_created() {
    let Standin { env, sandbox, settings, issuer } = Standin::after_phase1();
    let before: Vec<String> = sandbox.state()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    assert_eq!(
        hypershift(
            env.path(),
            &settings,
            &["install", "--pull-secret", "pull-secret.json", "--limit-crd-install", "Azure"]
        )
        .code,
        0
    );
    let created = hypershift(
        env.path(),
        &settings,
        &create_cluster_args(&issuer, &["--generate-ssh", "--infra-id", "demo-hc-e2e01"]),
    );
    assert_eq!(created.code, 0, "{}{}", created.stdout, created.stderr);

    // The sandbox's operator brings the cluster up; kubectl waits as the procedure does.
    kubectl(
        &sandbox,
        &["wait", "--for=condition=Available", "hostedcluster/demo-hc", "-n", "clusters", "--timeout=300s"],
    );
    let kubeconfig = hypershift(env.path(), &settings, &["create", "kubeconfig", "--name", "demo-hc"]);
    assert_eq!(kubeconfig.code, 0, "{}", kubeconfig.stderr);
    let hosted = env.write("hosted.kubeconfig", &kubeconfig.stdout);
    let pool = hypershift(
        env.path(),
        &settings,
        &[
            "create",
            "nodepool",
            "azure",
            "--cluster-name",
            "demo-hc",
            "--name",
            "demo-hc-workers",
            "--replicas",
            "1",
            "--nodepool-subnet-id",
            "/subscriptions/x/resourceGroups/y/providers/Microsoft.Network/virtualNetworks/z/subnets/default",
        ],
    );
    assert_eq!((pool.code, pool.stdout.as_str()), (0, "NodePool demo-hc-workers created\n"), "{}", pool.stderr);
    let again = hypershift(
        env.path(),
        &settings,
        &["create", "nodepool", "azure", "--cluster-name", "demo-hc", "--name", "demo-hc-workers"],
    );
    assert_eq!(again.stderr, "NodePool clusters/demo-hc-workers already exists\n");
    // The procedure's Day 2 flags are not those of hypershift at 3ee9615567.
    let procedure = hypershift(
        env.path(),
        &settings,
        &["create", "nodepool", "azure", "--cluster-name", "demo-hc", "--azure-instance-type", "Standard_D4s_v3"],
    );
    assert_eq!((procedure.code, procedure.stderr.as_str()), (1, "unknown flag: --azure-instance-type\n"));
    kubectl(
        &sandbox,
        &[
            "wait",
            "--for=condition=Ready",
            "nodepool/demo-hc",
            "nodepool/demo-hc-workers",
            "-n",
            "clusters",
            "--timeout=300s",
        ],
    );
    let nodes = Command::new(KUBECTL)
        .args(["get", "nodes", "--no-headers"])
        .env("KUBECONFIG", &hosted)
        .env("HOME", env.path())
        .output()
        .unwrap();
    let nodes = String::from_utf8_lossy(&nodes.stdout).into_owned();
    assert_eq!(nodes.lines().filter(|l| l.contains(" Ready ")).count(), 3, "{nodes}");

    let destroyed = hypershift(
        env.path(),
        &settings,
        &[
            "destroy",
            "cluster",
            "azure",
            "--name",
            "demo-hc",
            "--azure-creds",
            "azure-credentials.json",
            "--dns-zone-rg-name",
            "os4-common",
        ],
    );
    assert_eq!(destroyed.code, 0, "{}{}", destroyed.stdout, destroyed.stderr);
    assert!(
        kubectl(&sandbox, &["get", "hostedclusters,nodepools,secrets", "-n", "clusters", "-o", "name"])
            .trim()
            .is_empty()
    );
    // What the cluster made in Azure (resource groups, network, VMs, role assignments) is gone;
    // Phase 1's resources stay.
    let after: Vec<String> = sandbox.state()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    let left: Vec<&String> = after.iter().filter(|r| !before.contains(r)).collect();
    assert!(left.is_empty(), "left behind: {left:#?}");
    assert!(before.iter().all(|r| after.contains(r)), "Phase 1's resources must stay");
}
