//! `runbook doctor`: programs on PATH with versions, hypershift's flags read from its help, kube
//! access and permissions, Azure sign-in and permissions; and `run` making the same checks first.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::{SandboxProcess, TestEnv};

/// A `hypershift` that knows `create cluster azure` with the flags in `known` only.
fn fake_hypershift(dir: &Path, known: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let flags: String = known.iter().map(|f| format!("      --{f} string   a flag\n")).collect();
    let script = format!(
        "#!/bin/sh\ncase \"$*\" in\n  version|--version) echo 'hypershift version 0.1.50-test' ;;\n  'create cluster azure --help') printf 'Flags:\\n{}  -h, --help   help\\n' ;;\n  *) echo \"unknown command $*\" >&2; exit 1 ;;\nesac\n",
        flags.replace('\n', "\\n")
    );
    let path = dir.join("hypershift");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

const RUNBOOK: &str = r#"
[runbook]
name = "needs-tools"
[[steps]]
id = "cluster"
kind = "exec"
inputs.argv = ["hypershift", "create", "cluster", "azure", "--name", "demo", "--pull-secret=ps.json", "--azure-creds", "c.json"]
[[steps]]
id = "nodes"
kind = "exec"
after = ["cluster"]
inputs.argv = ["kubectl", "get", "nodes"]
"#;

struct Report {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Report {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// `runbook doctor` with only `path` as PATH.
fn doctor(env: &TestEnv, path: &str) -> Report {
    let runbook = env.path().join("needs-tools.toml");
    let out = env.command(&["doctor", runbook.to_str().unwrap()]).env("PATH", path).output().unwrap();
    Report {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A directory holding a `kubectl` that prints a version.
fn fake_kubectl(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("kubectl");
    std::fs::write(&path, "#!/bin/sh\necho 'Client Version: v1.32.0'\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn doctor_passes_with_every_program_and_flag_and_names_what_is_missing() {
    let env = TestEnv::new();
    env.write("needs-tools.toml", RUNBOOK);
    let (good, kube) = (env.path().join("good"), env.path().join("kube"));
    fake_hypershift(&good, &["name", "pull-secret", "azure-creds"]);
    fake_kubectl(&kube);
    let path = format!("{}:{}", good.display(), kube.display());

    let ok = doctor(&env, &path);
    assert_eq!(ok.code, 0, "{}", ok.all());
    assert!(ok.stdout.contains("ok   program hypershift: hypershift version 0.1.50-test"), "{}", ok.stdout);
    assert!(ok.stdout.contains("ok   program kubectl: Client Version: v1.32.0"), "{}", ok.stdout);
    assert!(ok.stdout.contains("ok   hypershift create cluster azure flags: all 3 accepted"), "{}", ok.stdout);

    // No kubectl on PATH: the check names it.
    let without_kubectl = doctor(&env, good.to_str().unwrap());
    assert_ne!(without_kubectl.code, 0, "{}", without_kubectl.all());
    assert!(without_kubectl.stdout.contains("FAIL program kubectl: not found on PATH"), "{}", without_kubectl.stdout);
    assert!(without_kubectl.stdout.contains("hint: install `kubectl`"), "{}", without_kubectl.stdout);

    // A hypershift whose help lacks --azure-creds (renamed in a later release): named with its step.
    let old = env.path().join("old");
    fake_hypershift(&old, &["name", "pull-secret"]);
    let rejected = doctor(&env, &format!("{}:{}", old.display(), kube.display()));
    assert_ne!(rejected.code, 0, "{}", rejected.all());
    assert!(
        rejected
            .stdout
            .contains("FAIL hypershift create cluster azure flags: not accepted: --azure-creds (step cluster)"),
        "{}",
        rejected.stdout
    );
    assert!(!rejected.stdout.contains("--pull-secret (step"), "{}", rejected.stdout);
}

/// `runbook run` with only `path` as PATH.
fn run(env: &TestEnv, path: &str, extra: &[&str]) -> Report {
    let runbook = env.path().join("needs-tools.toml");
    let mut args = vec!["--no-progress", "run"];
    args.extend(extra);
    args.push(runbook.to_str().unwrap());
    let out = env.command(&args).env("PATH", path).output().unwrap();
    Report {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn run_makes_the_checks_first_unless_told_to_skip_them() {
    let env = TestEnv::new();
    env.write("needs-tools.toml", RUNBOOK);
    let (good, kube) = (env.path().join("good"), env.path().join("kube"));
    fake_hypershift(&good, &["name", "pull-secret", "azure-creds"]);
    fake_kubectl(&kube);

    // No kubectl: the run stops before its first step, naming the check and its hint, and
    // leaves no journal behind.
    let stopped = run(&env, good.to_str().unwrap(), &[]);
    assert_eq!(stopped.code, 2, "{}", stopped.all());
    assert!(stopped.stderr.contains("FAIL program kubectl: not found on PATH"), "{}", stopped.stderr);
    assert!(stopped.stderr.contains("hint: install `kubectl`"), "{}", stopped.stderr);
    assert!(stopped.stderr.contains("1 doctor check failed; nothing was run"), "{}", stopped.stderr);
    assert!(!env.journal().exists(), "a run stopped by doctor opened the journal");

    // Skipped: the run starts, and its first step meets the fake hypershift, which creates no
    // cluster (it only knows `--help`).
    let skipped = run(&env, good.to_str().unwrap(), &["--skip-doctor"]);
    assert_eq!(skipped.code, 3, "{}", skipped.all());
    assert!(!skipped.stderr.contains("doctor"), "{}", skipped.stderr);
    assert!(skipped.all().contains("cluster"), "{}", skipped.all());
    assert!(env.journal().exists());

    // Everything there: doctor says so in one line and the run goes on to the same step.
    let checked = run(&env, &format!("{}:{}", good.display(), kube.display()), &["--fresh"]);
    assert_eq!(checked.code, 3, "{}", checked.all());
    assert!(checked.stderr.contains("doctor: 3 checks passed"), "{}", checked.stderr);
}

/// Phase 1's vars file for the sandbox: cluster `prefix` with External DNS under the parent zone
/// the sandbox made.
fn phase1_vars(env: &TestEnv, sandbox: &SandboxProcess, prefix: &str) -> PathBuf {
    env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"{prefix}\"\noidc_storage_account = \"{prefix}oidc\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nexternal_dns = true\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    )
}

/// Phase 1 run on `sandbox`, a pull
/// secret, and a directory holding the hypershift stand-in; returns that directory.
fn after_phase_1(env: &TestEnv, sandbox: &SandboxProcess) -> PathBuf {
    let vars = phase1_vars(env, sandbox, "doc");
    let phase1 = env
        .command(&["--no-progress", "run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()])
        .envs(&sandbox.settings)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&phase1.stderr);
    assert!(phase1.status.success(), "{stderr}");
    std::fs::write(env.path().join("pull-secret.json"), "{\"auths\":{}}\n").unwrap();
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(crate::support::runbook_bin(), bin.join("hypershift")).unwrap();
    bin
}

/// `runbook ARGS` against `sandbox` with `path` as PATH.
fn on_sandbox(env: &TestEnv, sandbox: &SandboxProcess, path: &str, args: &[&str]) -> Report {
    let out = env.command(args).envs(&sandbox.settings).env("PATH", path).output().unwrap();
    Report {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Requests that change something: not reads, sign-ins, access reviews or directory lookups
/// (questions asked with a POST).
fn writes(sandbox: &SandboxProcess) -> usize {
    sandbox
        .requests()
        .iter()
        .filter(|r| r["method"] != "GET" && r["service"] != "entra")
        .filter(|r| {
            let path = r["path"].as_str().unwrap_or_default();
            !path.contains("selfsubject")
                && !path.ends_with("/directoryObjects/getByIds")
                && !path.ends_with("/checkPolicyRestrictions")
                && !path.ends_with("/checkNameAvailability")
        })
        .count()
}

#[test]
fn phase_2_and_3_pass_with_the_sandbox_and_the_standin_and_a_reader_is_stopped_before_any_write() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let bin = after_phase_1(&env, &sandbox);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());

    let phase2 =
        on_sandbox(&env, &sandbox, &path, &["doctor", "phase2-management-cluster", "--var", "external_dns=true"]);
    assert_eq!(phase2.code, 0, "{}", phase2.all());
    for line in [
        "ok   program hypershift: ",
        "ok   hypershift install flags: all 5 accepted",
        "ok   kube cluster KUBECONFIG: v1.32",
        "ok   kube may * * in all namespaces: steps access",
        "ok   kube may get, create, patch secrets in namespace default: steps external_dns_secret",
        "ok   kube may list, watch pods in namespace hypershift: steps external_dns_ready, operator_ready",
    ] {
        assert!(phase2.stdout.contains(line), "no `{line}` in:\n{}", phase2.stdout);
    }
    assert!(!phase2.stdout.contains("FAIL"), "{}", phase2.stdout);

    // A user who may only read: doctor names what it may not do, and `run` stops on the same
    // lines before anything is written.
    let admin = std::fs::read_to_string(&sandbox.settings["KUBECONFIG"]).unwrap();
    let reader = env.write(
        "reader.kubeconfig",
        &admin.replace("current-context: sandbox", "current-context: sandbox-sandbox-reader"),
    );
    let reader = reader.to_str().unwrap();
    let denied = {
        let out = env
            .command(&["doctor", "phase2-management-cluster", "--var", "external_dns=true"])
            .envs(&sandbox.settings)
            .env("PATH", &path)
            .env("KUBECONFIG", reader)
            .output()
            .unwrap();
        Report {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    assert_eq!(denied.code, 2, "{}", denied.all());
    let denial = "FAIL kube may * * in all namespaces: denied to the kubeconfig's user (steps access)";
    assert!(denied.stdout.contains(denial), "{}", denied.stdout);
    assert!(denied.stdout.contains("create, patch secrets in namespace default"), "{}", denied.stdout);
    assert!(denied.stdout.contains("hint: grant these to the user"), "{}", denied.stdout);
    let before = writes(&sandbox);
    let run = env
        .command(&["--no-progress", "run", "phase2-management-cluster", "--var", "external_dns=true"])
        .envs(&sandbox.settings)
        .env("PATH", &path)
        .env("KUBECONFIG", reader)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(denial) && stderr.contains("nothing was run"), "{stderr}");
    assert_eq!(writes(&sandbox), before, "a run stopped by the doctor wrote something");

    // The cluster-admin runs Phase 2, the doctor's checks first.
    let run = on_sandbox(
        &env,
        &sandbox,
        &path,
        &["--no-progress", "run", "phase2-management-cluster", "--var", "external_dns=true"],
    );
    assert_eq!(run.code, 0, "{}", run.all());
    assert!(run.stderr.contains(" checks passed"), "{}", run.stderr);

    let phase3 = on_sandbox(&env, &sandbox, &path, &["doctor", "phase3-hosted-cluster"]);
    assert_eq!(phase3.code, 0, "{}", phase3.all());
    for line in [
        "ok   hypershift create cluster azure flags: all",
        "ok   hypershift create kubeconfig flags: all 2 accepted",
        "ok   program kubectl: ",
        "ok   kube may list, watch hostedclusters.hypershift.openshift.io in namespace clusters: steps cluster_available",
        "ok   kube may list, watch deployments.apps in namespace hypershift: steps operator_ready",
        // The hosted cluster's kubeconfig is written during the run.
        "skip kube cluster ${steps.kubeconfig_file.path}: its kubeconfig is made during the run",
        "ok   Azure permissions at /subscriptions/",
    ] {
        assert!(phase3.stdout.contains(line), "no `{line}` in:\n{}", phase3.stdout);
    }

    // Without kubectl on PATH (Phase 3 asks the cluster with it before creating one).
    let no_kubectl = on_sandbox(&env, &sandbox, bin.to_str().unwrap(), &["doctor", "phase3-hosted-cluster"]);
    assert_eq!(no_kubectl.code, 2, "{}", no_kubectl.all());
    assert!(no_kubectl.stdout.contains("FAIL program kubectl: not found on PATH"), "{}", no_kubectl.stdout);

    // A hypershift whose `install` no longer knows --limit-crd-install.
    let older = env.path().join("older");
    std::fs::create_dir_all(&older).unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$*\" = 'install --help' ]; then '{real}' install --help | grep -v -- '--limit-crd-install'; exit 0; fi\nexec '{real}' \"$@\"\n",
        real = bin.join("hypershift").display()
    );
    std::fs::write(older.join("hypershift"), script).unwrap();
    std::fs::set_permissions(older.join("hypershift"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let older_path = format!("{}:{}", older.display(), std::env::var("PATH").unwrap_or_default());
    let rejected =
        on_sandbox(&env, &sandbox, &older_path, &["doctor", "phase2-management-cluster", "--var", "external_dns=true"]);
    assert_eq!(rejected.code, 2, "{}", rejected.all());
    assert!(
        rejected.stdout.contains(
            "FAIL hypershift install flags: not accepted: --limit-crd-install (step install_with_external_dns)"
        ),
        "{}",
        rejected.stdout
    );
}

/// A Graph application write and a blob upload with a bearer token.
const AZURE_WRITES: &str = r#"
[runbook]
name = "azure-writes"
[[steps]]
id = "app"
kind = "graph"
inputs.action = "application"
inputs.display_name = "doctor-app"
[[steps]]
id = "upload"
kind = "blob"
inputs.action = "upload"
inputs.auth = "bearer"
inputs.container_url = "https://127.0.0.1:9/account/container"
inputs.blob_name = "hello.txt"
inputs.content = "hello"
"#;

const BLOB_WRITE: &str = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write";

/// An application registered in the sandbox with a password and a service principal: a
/// principal that signs in but holds no Graph permission. Its (client id, secret).
fn unprivileged_principal(sandbox: &SandboxProcess) -> (String, String) {
    let graph = format!("{}/v1.0", sandbox.settings["RUNBOOK_GRAPH_ENDPOINT"].trim_end_matches('/'));
    let scope = "https://graph.microsoft.com/.default";
    let post = |path: &str, body: serde_json::Value| {
        sandbox.call(reqwest::Method::POST, &format!("{graph}/{path}"), scope, Some(body))
    };
    let (status, app) = post("applications", serde_json::json!({ "displayName": "doctor-unprivileged" }));
    assert_eq!(status, 201, "{app}");
    let (status, password) =
        post(&format!("applications/{}/addPassword", app["id"].as_str().unwrap()), serde_json::json!({}));
    assert_eq!(status, 200, "{password}");
    let app_id = app["appId"].as_str().unwrap().to_string();
    // The service principal is refused until the application has replicated.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, sp) = post("servicePrincipals", serde_json::json!({ "appId": app_id }));
        if status == 201 {
            break;
        }
        assert!(status == 400 && std::time::Instant::now() < deadline, "{status} {sp}");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    (app_id, password["secretText"].as_str().unwrap().to_string())
}

#[test]
fn graph_and_blob_permissions_are_checked_and_a_run_stops_before_writing() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let runbook = env.write("azure-writes.toml", AZURE_WRITES);
    let runbook = runbook.to_str().unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let subscription = format!("/subscriptions/{}", sandbox.settings["AZURE_SUBSCRIPTION_ID"]);

    // The sandbox's principal may write applications (its Graph token's app role), but no role
    // of it grants the blob data action: Owner's `*` is not a data action.
    let admin = on_sandbox(&env, &sandbox, &path, &["doctor", runbook]);
    assert_eq!(admin.code, 2, "{}", admin.all());
    assert!(
        admin.stdout.contains(
            "ok   Graph may write applications and service principals: app role Application.ReadWrite.OwnedBy (steps app)"
        ),
        "{}",
        admin.stdout
    );
    let blob_line = format!("FAIL Azure may {BLOB_WRITE} (data action) at {subscription}: not granted (steps upload)");
    assert!(admin.stdout.contains(&blob_line), "{}", admin.stdout);
    assert!(admin.stdout.contains("hint: blob writes with auth = \"bearer\" need a data action"), "{}", admin.stdout);

    // `run` makes the same checks first and writes nothing: no application, no request that
    // changes anything.
    let before = writes(&sandbox);
    let run = on_sandbox(&env, &sandbox, &path, &["--no-progress", "run", runbook]);
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(run.stderr.contains(&blob_line) && run.stderr.contains("nothing was run"), "{}", run.stderr);
    assert_eq!(writes(&sandbox), before, "a run stopped by doctor wrote something");
    assert!(!env.journal().exists(), "a run stopped by doctor opened the journal");

    // Storage Blob Data Contributor on the subscription grants the data action.
    let principal = runbook_sandbox::SANDBOX_CLIENT_OBJECT_ID;
    let assignment = format!(
        "{}{subscription}/providers/Microsoft.Authorization/roleAssignments/5a4db0c5-0000-4000-8000-0000000000b1?api-version=2022-04-01",
        sandbox.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/')
    );
    let body = serde_json::json!({ "properties": {
        "roleDefinitionId": format!("{subscription}/providers/Microsoft.Authorization/roleDefinitions/ba92f5b4-2d11-453d-a403-e96b0029c9fe"),
        "principalId": principal,
        "principalType": "ServicePrincipal",
    }});
    let (status, answer) =
        sandbox.call(reqwest::Method::PUT, &assignment, "https://management.azure.com/.default", Some(body));
    assert_eq!(status, 201, "{answer}");
    let granted = on_sandbox(&env, &sandbox, &path, &["doctor", runbook]);
    assert_eq!(granted.code, 0, "{}", granted.all());
    assert!(
        granted.stdout.contains(&format!("ok   Azure permissions at {subscription}: all 1 operations")),
        "{}",
        granted.stdout
    );

    // A principal without Graph permission: the Graph line names what it lacks and the steps.
    let (client_id, secret) = unprivileged_principal(&sandbox);
    let out = env
        .command(&["doctor", runbook])
        .envs(&sandbox.settings)
        .env("AZURE_CLIENT_ID", &client_id)
        .env("AZURE_CLIENT_SECRET", &secret)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("FAIL Graph may write applications and service principals: not granted: the token holds app roles none; steps app need Application.ReadWrite.OwnedBy"),
        "{stdout}"
    );
    assert!(
        stdout.contains("hint: ask an administrator to grant the principal the Graph application permission"),
        "{stdout}"
    );
    assert!(stdout.contains(&blob_line), "{stdout}");
}

/// Adds a policy assignment to the sandbox (`/.sandbox/policies`).
fn assign_policy(sandbox: &SandboxProcess, assignment: serde_json::Value) {
    let url =
        format!("{}{}", sandbox.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/'), runbook_sandbox::POLICIES_PATH);
    let answer = sandbox.client().post(url).json(&assignment).send().expect("the sandbox answers");
    assert_eq!(answer.status().as_u16(), 201, "{assignment}: {}", answer.text().unwrap_or_default());
}

/// A tenant whose policy allows one region: Phase 1 in another is refused by `doctor`, and by
/// `run` before its first write, naming the assignment and definition of each denial; in the
/// allowed region the policy check passes. A write made anyway is denied as Azure denies it.
#[test]
fn a_policy_that_would_deny_a_write_stops_phase_1_before_anything_is_written() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    for (name, definition) in
        [("allowed-regions", "allowed-locations"), ("allowed-group-regions", "allowed-locations-for-resource-groups")]
    {
        assign_policy(&sandbox, serde_json::json!({"name": name, "definition": definition, "locations": ["westus"]}));
    }
    for (name, definition) in [("cost-center", "require-tag"), ("group-cost-center", "require-tag-on-resource-groups")]
    {
        assign_policy(&sandbox, serde_json::json!({"name": name, "definition": definition, "tag": "costCenter"}));
    }
    let vars = phase1_vars(&env, &sandbox, "pol");
    let vars = vars.to_str().unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let subscription = sandbox.settings["AZURE_SUBSCRIPTION_ID"].clone();
    let group_denied = format!(
        "FAIL Azure Policy allows Microsoft.Resources/subscriptions/resourceGroups `os4-common`: denied by assignment /subscriptions/{subscription}/providers/Microsoft.Authorization/policyAssignments/allowed-group-regions (definition /providers/Microsoft.Authorization/policyDefinitions/e765b5de-1225-4ba3-bd56-1ac6695af988): location `eastus` is not one of westus (step resource_group)"
    );
    let doctor = on_sandbox(&env, &sandbox, &path, &["doctor", "phase1-workload-identity", "--vars", vars]);
    assert_eq!(doctor.code, 2, "{}", doctor.all());
    assert!(doctor.stdout.contains(&group_denied), "{}", doctor.stdout);
    assert!(
        doctor.stdout.contains("Microsoft.ManagedIdentity/userAssignedIdentities `pol-hc-")
            && doctor.stdout.contains("policyAssignments/allowed-regions (definition /providers/Microsoft.Authorization/policyDefinitions/e56962a6-4747-49cd-b67b-bf8b01975c4c)"),
        "{}",
        doctor.stdout
    );

    let before = writes(&sandbox);
    let run = on_sandbox(&env, &sandbox, &path, &["--no-progress", "run", "phase1-workload-identity", "--vars", vars]);
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(run.stderr.contains(&group_denied) && run.stderr.contains("nothing was run"), "{}", run.stderr);
    assert_eq!(writes(&sandbox), before, "a run stopped by doctor wrote something");

    assert!(
        doctor.stdout.contains("policyAssignments/group-cost-center (definition /providers/Microsoft.Authorization/policyDefinitions/96670d01-0a4d-4649-9c89-2d3abc0a5025): the tag `costCenter` is missing (step resource_group)"),
        "{}",
        doctor.stdout
    );

    // In the allowed region with the tag the policy asks for, the check passes and Phase 1 runs
    // to its end in that tenant: every group and resource it makes carries the tag.
    let compliant = ["--vars", vars, "--var", "location=westus", "--var", "tags=costCenter=42,owner=platform"];
    let allowed =
        on_sandbox(&env, &sandbox, &path, &[&["doctor", "phase1-workload-identity"][..], &compliant].concat());
    assert!(allowed.stdout.contains("ok   Azure Policy: no assignment denies the "), "{}", allowed.stdout);
    assert!(!allowed.stdout.contains("FAIL Azure Policy"), "{}", allowed.stdout);
    let ran = on_sandbox(
        &env,
        &sandbox,
        &path,
        &[&["--no-progress", "run", "phase1-workload-identity"][..], &compliant].concat(),
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
    let denied: Vec<_> =
        sandbox.requests().into_iter().filter(|r| r["error_code"] == "RequestDisallowedByPolicy").collect();
    assert!(denied.is_empty(), "{denied:?}");
    let (status, group) = sandbox.call(
        reqwest::Method::GET,
        &format!(
            "{}/subscriptions/{subscription}/resourcegroups/os4-common?api-version=2021-04-01",
            sandbox.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/')
        ),
        "https://management.azure.com/.default",
        None,
    );
    assert_eq!(status, 200, "{group}");
    assert_eq!(group["tags"]["costCenter"], "42", "{group}");

    // A write made anyway: ARM's own answer, naming the assignment.
    let url = format!(
        "{}/subscriptions/{subscription}/resourcegroups/elsewhere?api-version=2021-04-01",
        sandbox.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/')
    );
    let (status, answer) = sandbox.call(
        reqwest::Method::PUT,
        &url,
        "https://management.azure.com/.default",
        Some(serde_json::json!({"location": "eastus"})),
    );
    assert_eq!(status, 403, "{answer}");
    assert_eq!(answer["error"]["code"], "RequestDisallowedByPolicy", "{answer}");
    assert_eq!(answer["error"]["additionalInfo"][0]["type"], "PolicyViolation", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("allowed-group-regions"), "{answer}");
}

/// A tenant whose app-management policy caps password lifetimes at 90 days: Phase 1's default
/// secret lifetime (180 days) is refused by Graph with the policy named, and the same run with a
/// `secret_lifetime` inside the cap goes on to its end.
#[test]
fn a_password_lifetime_cap_is_named_and_a_shorter_secret_lifetime_passes() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    assign_policy(
        &sandbox,
        serde_json::json!({"name": "app-password-cap", "definition": "password-lifetime", "max_days": 90}),
    );
    let vars = phase1_vars(&env, &sandbox, "cap");
    let vars = vars.to_str().unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let refused =
        on_sandbox(&env, &sandbox, &path, &["--no-progress", "run", "phase1-workload-identity", "--vars", vars]);
    assert_eq!(refused.code, 3, "{}", refused.all());
    assert!(refused.all().contains("CredentialInvalidLifetimeAsPerAppPolicy"), "{}", refused.all());
    assert!(refused.all().contains("allowed as per assigned policy 'app-password-cap'"), "{}", refused.all());
    assert!(refused.all().contains("`secret_lifetime`"), "the hint names the variable: {}", refused.all());
    let passed = on_sandbox(
        &env,
        &sandbox,
        &path,
        &["--no-progress", "run", "phase1-workload-identity", "--vars", vars, "--var", "secret_lifetime=60days"],
    );
    assert_eq!(passed.code, 0, "{}", passed.all());
}

/// A person of an enterprise tenant: no role on the subscription, Contributor on one resource
/// group. `doctor` reads the permissions at the group each write targets: a runbook writing in
/// that group passes and runs; one that also writes elsewhere is stopped before any write, naming
/// the scope it lacks.
#[test]
fn permissions_are_read_at_the_group_each_write_targets() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let graph = format!("{}/v1.0", sandbox.settings["RUNBOOK_GRAPH_ENDPOINT"].trim_end_matches('/'));
    let arm = sandbox.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/').to_string();
    let subscription = format!("/subscriptions/{}", sandbox.settings["AZURE_SUBSCRIPTION_ID"]);
    let (graph_scope, arm_scope) = ("https://graph.microsoft.com/.default", "https://management.azure.com/.default");
    let (client_id, secret) = unprivileged_principal(&sandbox);
    let (status, sp) = sandbox.call(
        reqwest::Method::GET,
        &format!("{graph}/servicePrincipals(appId='{client_id}')"),
        graph_scope,
        None,
    );
    assert_eq!(status, 200, "{sp}");
    let url = format!("{arm}{}", runbook_sandbox::SCOPED_PRINCIPALS_PATH);
    let answer = sandbox.client().post(url).json(&serde_json::json!({"client_id": client_id})).send().unwrap();
    assert_eq!(answer.status().as_u16(), 201);
    // The team's group, and Contributor on it for the person (made by the tenant's owner).
    let group = format!("{subscription}/resourceGroups/team-rg");
    let (status, made) = sandbox.call(
        reqwest::Method::PUT,
        &format!("{arm}{group}?api-version=2021-04-01"),
        arm_scope,
        Some(serde_json::json!({"location": "eastus"})),
    );
    assert!(status == 201 || status == 200, "{made}");
    let (status, assigned) = sandbox.call(
        reqwest::Method::PUT,
        &format!("{arm}{group}/providers/Microsoft.Authorization/roleAssignments/7a4db0c5-0000-4000-8000-0000000000c1?api-version=2022-04-01"),
        arm_scope,
        Some(serde_json::json!({ "properties": {
            "roleDefinitionId": format!("{subscription}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"),
            "principalId": sp["id"],
            "principalType": "ServicePrincipal",
        }})),
    );
    assert_eq!(status, 201, "{assigned}");

    let identity = |name: &str, group: &str| {
        format!(
            "[[steps]]\nid = \"{name}\"\nkind = \"arm\"\ninputs.action = \"ensure\"\ninputs.id = \"/subscriptions/{{subscription}}/resourceGroups/{group}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}\"\ninputs.api_version = \"2023-01-31\"\ninputs.body = {{ location = \"eastus\" }}\n"
        )
    };
    let as_person = |args: &[&str]| {
        let out = env
            .command(args)
            .envs(&sandbox.settings)
            .env("AZURE_CLIENT_ID", &client_id)
            .env("AZURE_CLIENT_SECRET", &secret)
            .output()
            .unwrap();
        Report {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let mine = env.write("team.toml", &format!("[runbook]\nname = \"team\"\n\n{}", identity("mine", "team-rg")));
    let doctor = as_person(&["doctor", mine.to_str().unwrap()]);
    assert_eq!(doctor.code, 0, "{}", doctor.all());
    assert!(
        doctor.stdout.contains(&format!("ok   Azure permissions at {group}: all 1 operations")),
        "{}",
        doctor.stdout
    );
    let ran = as_person(&["--no-progress", "run", mine.to_str().unwrap()]);
    assert_eq!(ran.code, 0, "{}", ran.all());

    let both = env.write(
        "both.toml",
        &format!("[runbook]\nname = \"both\"\n\n{}\n{}", identity("mine", "team-rg"), identity("theirs", "other-rg")),
    );
    let before = writes(&sandbox);
    let stopped = as_person(&["--no-progress", "run", both.to_str().unwrap()]);
    assert_eq!(stopped.code, 2, "{}", stopped.all());
    assert!(
        stopped.stderr.contains(&format!(
            "FAIL Azure may Microsoft.ManagedIdentity/userAssignedIdentities/write at {subscription}: not granted (steps theirs)"
        )),
        "{}",
        stopped.stderr
    );
    assert!(stopped.stderr.contains(&format!("ok   Azure permissions at {group}")), "{}", stopped.stderr);
    assert_eq!(writes(&sandbox), before, "a run stopped by doctor wrote something");
}
