//! A tenant other teams share: an application this journal did not make, named as Phase 1
//! would name its own, is neither given a password nor granted a role nor deleted, unless the
//! operator adopts it by its application id (journaled with the run, and who ran it); two
//! clusters in one journal, one cleaned up, the other untouched.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::{Rehearsed, Run, SandboxProcess, TestEnv};

const GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";

fn phase1_vars(env: &TestEnv, sandbox: &SandboxProcess, prefix: &str) -> std::path::PathBuf {
    env.write(
        &format!("{prefix}.vars.toml"),
        &format!(
            "prefix = \"{prefix}\"\noidc_storage_account = \"{prefix}oidc\"\nexternal_dns = true\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    )
}

/// Every request after the first `from` that wrote to (or under) `object_id`, or named it in a body.
fn writes_to(sandbox: &SandboxProcess, from: usize, object_id: &str) -> Vec<Value> {
    sandbox
        .requests()
        .into_iter()
        .skip(from)
        .filter(|r| r["method"] != "GET" && r["path"].as_str().unwrap_or_default().contains(object_id))
        .collect()
}

#[test]
fn another_teams_application_is_left_alone_unless_adopted() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let graph = format!("{}/v1.0", sandbox.settings["RUNBOOK_GRAPH_ENDPOINT"].trim_end_matches('/'));
    // Another team's application, named exactly as Phase 1 names its own for prefix `plant`.
    let (status, planted) = sandbox.call(
        reqwest::Method::POST,
        &format!("{graph}/applications"),
        GRAPH_SCOPE,
        Some(json!({ "displayName": "plant-hc-external-dns", "signInAudience": "AzureADMyOrg" })),
    );
    assert_eq!(status, 201, "{planted}");
    let (object_id, app_id) =
        (planted["id"].as_str().unwrap().to_string(), planted["appId"].as_str().unwrap().to_string());
    let vars = phase1_vars(&env, &sandbox, "plant");
    let before = sandbox.requests().len();
    let phase1 = |extra: &[&str]| {
        let mut args = vec!["--no-progress", "run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()];
        args.extend_from_slice(extra);
        Run::from(env.command(&args).envs(&sandbox.settings).output().unwrap())
    };
    let refused = phase1(&[]);
    assert_eq!(refused.code, 3, "{}", refused.all());
    assert!(refused.stderr.contains("ApplicationNotOurs"), "{}", refused.stderr);
    assert!(refused.stderr.contains(&app_id), "the refusal names the application: {}", refused.stderr);
    assert!(writes_to(&sandbox, before, &object_id).is_empty(), "{:#?}", writes_to(&sandbox, before, &object_id));
    let (_, app) = sandbox.call(reqwest::Method::GET, &format!("{graph}/applications/{object_id}"), GRAPH_SCOPE, None);
    assert_eq!(app["passwordCredentials"], json!([]), "{app}");
    // No service principal was made for it, so no role can have been granted to it.
    let (_, principals) = sandbox.call(
        reqwest::Method::GET,
        &format!("{graph}/servicePrincipals?$filter=appId eq '{app_id}'"),
        GRAPH_SCOPE,
        None,
    );
    assert_eq!(principals["value"], json!([]), "{principals}");

    // Adopted by its application id, it is this run's to use.
    let adopt = format!("external_dns_adopt_app_id={app_id}");
    let adopted = phase1(&["--var", &adopt]);
    assert_eq!(adopted.code, 0, "{}", adopted.all());
    let (_, app) = sandbox.call(reqwest::Method::GET, &format!("{graph}/applications/{object_id}"), GRAPH_SCOPE, None);
    assert_eq!(app["passwordCredentials"].as_array().map(Vec::len), Some(1), "{app}");
    let mgmt: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path().join("azure_mgmt.json")).unwrap()).unwrap();
    assert_eq!(mgmt["aadClientId"], json!(app_id));
    // The audit says who adopted which application.
    let audit = env.run(&["audit", "--format", "json"]);
    assert_eq!(audit.code, 0, "{}", audit.all());
    assert!(audit.stdout.contains("external_dns_adopt_app_id"), "{}", audit.stdout);
    assert!(audit.stdout.contains(&app_id), "{}", audit.stdout);
    let out = env.run(&["get", "phase1-workload-identity.external_dns_app_object_id"]);
    assert_eq!(out.stdout.trim(), object_id, "{}", out.all());

    // The cluster-operations application this journal made carries its tag; a second pass
    // finds both again and writes nothing to either.
    let again_from = sandbox.requests().len();
    let again = phase1(&["--fresh", "--var", &adopt]);
    assert_eq!(again.code, 0, "{}", again.all());
    let ops = env.run(&["get", "phase1-workload-identity.cluster_ops_app_object_id"]);
    let ops_id = ops.stdout.trim().to_string();
    let (_, ops_app) = sandbox.call(reqwest::Method::GET, &format!("{graph}/applications/{ops_id}"), GRAPH_SCOPE, None);
    assert!(
        ops_app["tags"]
            .as_array()
            .is_some_and(|tags| tags.iter().any(|t| t.as_str().unwrap_or("").starts_with("runbook-owner:"))),
        "{ops_app}"
    );
    let created: Vec<Value> = sandbox
        .requests()
        .into_iter()
        .skip(again_from)
        .filter(|r| r["method"] == "POST" && r["path"].as_str().unwrap_or_default().ends_with("/applications"))
        .collect();
    assert!(created.is_empty(), "a second pass made another application: {created:#?}");
}

/// Runs `args` with the rehearsal's sandbox and stand-ins, on its HyperShift administrator's
/// journal, in `dir`.
fn run_in(env: &TestEnv, rehearsed: &Rehearsed, dir: &std::path::Path, args: &[&str]) -> Run {
    let mut full = vec!["--no-progress"];
    full.extend_from_slice(args);
    Run::from(rehearsed.command_in(env, &rehearsed.journal, dir, &full).output().unwrap())
}

/// The Azure resources of cluster `prefix` in the sandbox: ids that name it.
fn resources_of(rehearsed: &Rehearsed, prefix: &str) -> BTreeSet<String> {
    let state = rehearsed.sandbox.state();
    let needles = [format!("/{prefix}-hc"), format!("/{prefix}oidc"), format!("-{prefix}-hc"), format!("{prefix}-hc-")];
    state["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_ascii_lowercase)
        .filter(|id| needles.iter().any(|n| id.contains(n.as_str())))
        .collect()
}

/// Two clusters in one journal on one sandbox: cleaning up `green` leaves every one of `blue`'s
/// resources and applications, and `blue` stays Available; a shared cleanup that names no
/// cluster is refused, naming them.
#[test]
fn cleaning_up_green_leaves_blue_whole_and_a_shared_cleanup_must_name_its_cluster() {
    let env = TestEnv::new();
    let rehearsed = Rehearsed::start(&env, 2, "0");
    let ca = rehearsed.sandbox.dir.join("sandbox-ca.pem");
    for cluster in ["blue", "green"] {
        let dir = env.path().join(cluster);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pull-secret.json"), "{\"auths\":{}}\n").unwrap();
        let vars = dir.join("phase1.vars.toml");
        std::fs::write(
            &vars,
            format!(
                "prefix = \"{cluster}\"\noidc_storage_account = \"{cluster}oidc\"\nexternal_dns = false\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nca_file = \"{}\"\n",
                ca.display()
            ),
        )
        .unwrap();
        let phase1 =
            run_in(&env, &rehearsed, &dir, &["run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()]);
        assert_eq!(phase1.code, 0, "{cluster}: {}", phase1.all());
        let phase3 =
            run_in(&env, &rehearsed, &dir, &["run", "phase3-hosted-cluster", "--var", &format!("prefix={cluster}")]);
        assert_eq!(phase3.code, 0, "{cluster}: {}", phase3.all());
    }
    // Day 2 acts on any named pool of the named cluster, and on no other cluster's.
    let blue = env.path().join("blue");
    let replicas = |pool: &str| -> String {
        let out = rehearsed.kubectl(&[
            "get",
            &format!("nodepool/{pool}"),
            "--namespace",
            "clusters",
            "--output",
            "jsonpath={.spec.replicas}",
        ]);
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let (blue_first, green_first) = (replicas("blue-hc"), replicas("green-hc"));
    let added =
        run_in(&env, &rehearsed, &blue, &["run", "day2-add-nodepool", "--var", "prefix=blue", "--var", "node_count=1"]);
    assert_eq!(added.code, 0, "{}", added.all());
    let scaled = run_in(
        &env,
        &rehearsed,
        &blue,
        &[
            "run",
            "day2-scale-nodepool",
            "--var",
            "prefix=blue",
            "--var",
            "nodepool=blue-hc-workers",
            "--var",
            "replicas=2",
        ],
    );
    assert_eq!(scaled.code, 0, "{}", scaled.all());
    assert_eq!(replicas("blue-hc-workers"), "2");
    assert_eq!(replicas("blue-hc"), blue_first, "the cluster's first pool was not the one named");

    // An upgrade moves the control plane, then the pools; a pool left behind beyond OpenShift's
    // skew, or another cluster's pool, is refused before anything is written.
    let field = |kind: &str, name: &str, path: &str| -> String {
        let out = rehearsed.kubectl(&[
            "get",
            &format!("{kind}/{name}"),
            "--namespace",
            "clusters",
            "--output",
            &format!("jsonpath={{{path}}}"),
        ]);
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let image = |version: &str| format!("release_image=quay.io/openshift-release-dev/ocp-release:{version}-x86_64");
    let blue_image = field("hostedcluster", "blue-hc", ".spec.release.image");
    let far = image("4.25.0");
    let skewed = run_in(
        &env,
        &rehearsed,
        &blue,
        &[
            "run",
            "day2-upgrade-cluster",
            "--var",
            "prefix=blue",
            "--var",
            &far,
            "--var",
            "nodepools=[\"blue-hc-workers\"]",
        ],
    );
    assert_eq!(skewed.code, 3, "{}", skewed.all());
    assert!(skewed.stderr.contains("UnsupportedVersionSkew"), "{}", skewed.stderr);
    assert!(
        skewed.stderr.contains("NodePool `blue-hc` runs 4.21.0, 4 minor versions behind 4.25.0"),
        "{}",
        skewed.stderr
    );
    assert_eq!(field("hostedcluster", "blue-hc", ".spec.release.image"), blue_image, "nothing was written");
    let near = image("4.22.3");
    let others = run_in(
        &env,
        &rehearsed,
        &blue,
        &["run", "day2-upgrade-cluster", "--var", "prefix=blue", "--var", &near, "--var", "nodepools=[\"green-hc\"]"],
    );
    assert_eq!(others.code, 3, "{}", others.all());
    assert!(others.stderr.contains("NodePool `green-hc` belongs to cluster `green-hc`"), "{}", others.stderr);
    let upgraded =
        run_in(&env, &rehearsed, &blue, &["run", "day2-upgrade-cluster", "--var", "prefix=blue", "--var", &near]);
    assert_eq!(upgraded.code, 0, "{}", upgraded.all());
    for pool in ["blue-hc", "blue-hc-workers"] {
        assert_eq!(field("nodepool", pool, ".status.version"), "4.22.3", "{pool}");
    }
    assert_eq!(field("nodepool", "green-hc", ".status.version"), "4.21.0", "green's pool is not blue's to move");
    assert!(field("hostedcluster", "blue-hc", ".spec.release.image").contains("4.22.3"));
    for runbook in ["day2-scale-nodepool", "day2-delete-nodepool"] {
        let mut args = vec!["run", runbook, "--var", "prefix=blue", "--var", "nodepool=green-hc"];
        if runbook == "day2-scale-nodepool" {
            args.extend(["--var", "replicas=5"]);
        }
        let other = run_in(&env, &rehearsed, &blue, &args);
        assert_eq!(other.code, 4, "{runbook}: {}", other.all());
        assert!(other.stderr.contains("NodePool `green-hc` belongs to cluster `blue-hc`"), "{}", other.stderr);
        assert_eq!(replicas("green-hc"), green_first, "{runbook} touched green's pool");
    }
    let deleted = run_in(
        &env,
        &rehearsed,
        &blue,
        &["run", "day2-delete-nodepool", "--var", "prefix=blue", "--var", "nodepool=blue-hc-workers"],
    );
    assert_eq!(deleted.code, 0, "{}", deleted.all());
    assert_eq!(replicas("blue-hc-workers"), "");

    let blue_before = resources_of(&rehearsed, "blue");
    assert!(blue_before.len() > 20, "{blue_before:#?}");
    assert!(!resources_of(&rehearsed, "green").is_empty());
    let apps = |state: &Value, prefix: &str| -> Vec<String> {
        state["applications"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["displayName"].as_str())
            .filter(|name| name.starts_with(&format!("{prefix}-hc-")))
            .map(str::to_string)
            .collect()
    };
    let blue_apps = apps(&rehearsed.sandbox.state(), "blue");
    assert_eq!(blue_apps, ["blue-hc-cluster-operations"]);

    // Named nowhere, the shared cleanup cannot tell whose resources to delete.
    let green = env.path().join("green");
    let unnamed = run_in(&env, &rehearsed, &green, &["plan", "cleanup-shared-resources"]);
    assert_eq!(unnamed.code, 2, "{}", unnamed.all());
    assert!(
        unnamed.stderr.contains("several clusters")
            && unnamed.stderr.contains("`blue`")
            && unnamed.stderr.contains("`green`"),
        "{}",
        unnamed.stderr
    );
    let unnamed = run_in(&env, &rehearsed, &green, &["plan", "cleanup-hosted-cluster"]);
    assert_eq!(unnamed.code, 2, "{}", unnamed.all());

    // Destroying a hosted cluster is confirmed by its name; blue's is not green's.
    let hosted = run_in(&env, &rehearsed, &green, &["run", "cleanup-hosted-cluster", "--var", "prefix=green"]);
    assert_eq!(hosted.code, 5, "{}", hosted.all());
    let run_id = rehearsed.runs_of("cleanup-hosted-cluster").pop().unwrap();
    let wrong = run_in(&env, &rehearsed, &green, &["approve", &run_id, "approve", "--confirm", "blue-hc"]);
    assert_eq!(wrong.code, 2, "{}", wrong.all());
    let approved = run_in(&env, &rehearsed, &green, &["approve", &run_id, "approve", "--confirm", "green-hc"]);
    assert_eq!(approved.code, 0, "{}", approved.all());
    let hosted = run_in(&env, &rehearsed, &green, &["resume"]);
    assert_eq!(hosted.code, 0, "{}", hosted.all());
    // Asked to delete the persistent resource group too, which blue's identities share.
    let shared = run_in(
        &env,
        &rehearsed,
        &green,
        &[
            "run",
            "cleanup-shared-resources",
            "--var",
            "prefix=green",
            "--var",
            "delete_persistent_rg=true",
            "--var",
            "persistent_rg_wait=3s",
        ],
    );
    assert_eq!(shared.code, 5, "waits for its approval: {}", shared.all());
    let approve_line = shared.all().lines().find(|l| l.contains("runbook approve ")).map(str::to_string).unwrap();
    let command: Vec<&str> = approve_line.split("runbook ").nth(1).unwrap().split_whitespace().collect();
    assert_eq!(command.last(), Some(&"green-hc"), "the approval asks for the cluster's name: {approve_line}");
    // Approving with another cluster's name, or with none and no terminal to type it, changes nothing.
    let (run_id, gate) = (command[1], command[2]);
    for wrong in [vec!["approve", run_id, gate, "--confirm", "blue-hc"], vec!["approve", run_id, gate]] {
        let refused = run_in(&env, &rehearsed, &green, &wrong);
        assert_eq!(refused.code, 2, "{}", refused.all());
        assert!(refused.stderr.contains("green-hc"), "{}", refused.stderr);
    }
    let still = run_in(&env, &rehearsed, &green, &["resume"]);
    assert_eq!(still.code, 5, "still waiting: {}", still.all());
    // Approved, then a variable changed: the approval was of the other plan, so the gate asks again.
    let approved = run_in(&env, &rehearsed, &green, &command);
    assert_eq!(approved.code, 0, "{}", approved.all());
    // (`delete_persistent_rg = true` would be the change that matters most, and would delete
    // blue's identities with the group they share: another variable stands for it here.)
    let changed = run_in(&env, &rehearsed, &green, &["resume", "--var", "hypershift=./hypershift"]);
    assert_eq!(changed.code, 5, "{}", changed.all());
    assert!(changed.stderr.contains("asks again"), "{}", changed.stderr);
    let approved = run_in(&env, &rehearsed, &green, &command);
    assert_eq!(approved.code, 0, "{}", approved.all());
    let resumed = run_in(&env, &rehearsed, &green, &["resume", "--var", "hypershift=./hypershift"]);
    // Green's resources go; the group is kept, naming what is still in it: blue's.
    assert_eq!(resumed.code, 3, "{}", resumed.all());
    assert!(resumed.stderr.contains("persistent_rg_empty"), "{}", resumed.stderr);
    assert!(resumed.stderr.to_ascii_lowercase().contains("blue-hc-"), "{}", resumed.stderr);

    assert!(resources_of(&rehearsed, "green").is_empty(), "{:#?}", resources_of(&rehearsed, "green"));
    assert_eq!(apps(&rehearsed.sandbox.state(), "green"), Vec::<String>::new());
    assert_eq!(resources_of(&rehearsed, "blue"), blue_before, "blue lost or gained resources");
    assert_eq!(apps(&rehearsed.sandbox.state(), "blue"), blue_apps);
    let available = rehearsed.kubectl(&[
        "get",
        "hostedcluster/blue-hc",
        "--namespace",
        "clusters",
        "--output",
        "jsonpath={.status.conditions[?(@.type==\"Available\")].status}",
    ]);
    assert_eq!(String::from_utf8_lossy(&available.stdout), "True", "{}", String::from_utf8_lossy(&available.stderr));
    let gone = rehearsed.kubectl(&["get", "hostedcluster/green-hc", "--namespace", "clusters"]);
    assert!(!gone.status.success(), "green's HostedCluster is still there");
}

/// An organisation that brings its own principal (`cluster_ops_sp = false`) hands its
/// azure-credentials.json over through Phase 1, and Phase 3 makes the cluster with it; without
/// one, Phase 1 refuses at plan.
#[test]
fn a_principal_brought_by_the_organisation_takes_phase_3_through() {
    let env = TestEnv::new();
    let rehearsed = Rehearsed::start(&env, 2, "0");
    let dir = env.path().join("own");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pull-secret.json"), "{\"auths\":{}}\n").unwrap();
    let settings = &rehearsed.sandbox.settings;
    let credentials = dir.join("org-credentials.json");
    std::fs::write(
        &credentials,
        json!({
            "subscriptionId": settings["AZURE_SUBSCRIPTION_ID"],
            "tenantId": settings["AZURE_TENANT_ID"],
            "clientId": settings["AZURE_CLIENT_ID"],
            "clientSecret": settings["AZURE_CLIENT_SECRET"],
        })
        .to_string(),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600)).unwrap();
    let vars = dir.join("phase1.vars.toml");
    std::fs::write(
        &vars,
        format!(
            "prefix = \"own\"\noidc_storage_account = \"ownoidc\"\nexternal_dns = false\ncluster_ops_sp = false\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nca_file = \"{}\"\n",
            rehearsed.sandbox.dir.join("sandbox-ca.pem").display()
        ),
    )
    .unwrap();
    let refused =
        run_in(&env, &rehearsed, &dir, &["plan", "phase1-workload-identity", "--vars", vars.to_str().unwrap()]);
    assert_ne!(refused.code, 0, "{}", refused.all());
    assert!(refused.all().contains("own_azure_credentials"), "{}", refused.all());

    let own = format!("own_azure_credentials={}", credentials.display());
    let phase1 = run_in(
        &env,
        &rehearsed,
        &dir,
        &["run", "phase1-workload-identity", "--vars", vars.to_str().unwrap(), "--var", &own],
    );
    assert_eq!(phase1.code, 0, "{}", phase1.all());
    let apps: Vec<String> = rehearsed.sandbox.state()["applications"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["displayName"].as_str().map(str::to_string))
        .filter(|name| name.starts_with("own-hc"))
        .collect();
    assert!(apps.is_empty(), "no principal is made when one is brought: {apps:?}");
    let phase3 = run_in(&env, &rehearsed, &dir, &["run", "phase3-hosted-cluster", "--var", "prefix=own"]);
    assert_eq!(phase3.code, 0, "{}", phase3.all());
}
