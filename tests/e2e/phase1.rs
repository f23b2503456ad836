//! Phase 1 end to end against the built-in sandbox: the whole procedure, its idempotence, its
//! behaviour under injected faults, and `kill -9` at random moments followed by `resume`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{SandboxProcess, TestEnv, contains_bytes};

fn count(resources: &[Value], pattern: impl Fn(&str) -> bool) -> usize {
    resources.iter().filter(|r| pattern(r.as_str().unwrap())).count()
}

fn is_identity(id: &str) -> bool {
    id.contains("/userAssignedIdentities/") && !id.contains("/federatedIdentityCredentials/")
}

fn is_credential(id: &str) -> bool {
    id.contains("/federatedIdentityCredentials/")
}

#[test]
fn rehearsal_creates_everything_once_and_a_second_pass_writes_nothing() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--phase", "1", "--check-idempotent", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.last_json();
    assert_eq!(result["runs"][0]["runbook"], "phase1-workload-identity");
    assert_eq!(result["runs"][0]["status"], "succeeded");
    assert_eq!(result["second_pass_write_requests"], 0, "running Phase 1 again must not write");
    assert_eq!(result["concurrent_write_conflicts"], 0, "credentials are serialized per identity");
    let resources = result["resources"].as_array().unwrap();
    assert_eq!(count(resources, is_identity), 7, "{resources:#?}");
    assert_eq!(count(resources, is_credential), 12, "{resources:#?}");
    for kind in [
        "/storageAccounts/rehearsaloidc",
        "/containers/rehearsaloidc",
        "/dnszones/rehearse.example.com",
        "/NS/rehearse",
    ] {
        assert!(
            count(resources, |r| r.to_lowercase().contains(&kind.to_lowercase())) >= 1,
            "{kind} missing: {resources:#?}"
        );
    }
    assert!(count(resources, |r| r.contains("/roleAssignments/")) >= 3, "{resources:#?}");

    let workdir = PathBuf::from(result["workdir"].as_str().unwrap());
    // workload-identities.json: the 7 keys hypershift reads, each a client id.
    let identities: Value =
        serde_json::from_str(&std::fs::read_to_string(workdir.join("workload-identities.json")).unwrap()).unwrap();
    let keys: Vec<&String> = identities.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["imageRegistry", "ingress", "file", "disk", "nodePoolManagement", "cloudProvider", "network"]);
    for (_, entry) in identities.as_object().unwrap() {
        assert_eq!(entry["clientID"].as_str().unwrap().len(), 36);
    }
    // Files with secrets are 0600; the secrets they hold are nowhere in the journal or output.
    for secret_file in ["azure_mgmt.json", "azure-credentials.json", "serviceaccount-signer.private"] {
        let mode = std::fs::metadata(workdir.join(secret_file)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{secret_file}");
    }
    let mgmt: Value = serde_json::from_str(&std::fs::read_to_string(workdir.join("azure_mgmt.json")).unwrap()).unwrap();
    let secret = mgmt["aadClientSecret"].as_str().unwrap().to_string();
    assert!(secret.len() > 10);
    assert!(!out.all().contains(&secret));
    let journal = PathBuf::from(result["journal"].as_str().unwrap());
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend(std::fs::read(format!("{}-wal", journal.display())).unwrap_or_default());
    assert!(!contains_bytes(&bytes, &secret), "the External DNS secret is in the journal");
    let key = std::fs::read_to_string(workdir.join("serviceaccount-signer.private")).unwrap();
    // The PEM's early lines hold the public modulus (which the public JWKS carries too); its last
    // lines hold the private CRT values, which must never appear.
    let lines: Vec<&str> = key.lines().filter(|l| !l.starts_with("-----")).collect();
    for private_line in &lines[lines.len() - 4..lines.len() - 1] {
        assert!(!contains_bytes(&bytes, private_line), "the private key is in the journal");
    }

    // The hand-off checkpoint holds what the procedure lists, readable by the next persona.
    let issuer =
        env.run_bare(&["--journal", journal.to_str().unwrap(), "get", "phase1-workload-identity.oidc_issuer_url"]);
    assert_eq!(issuer.code, 0, "{}", issuer.all());
    assert!(issuer.stdout.trim().ends_with("/rehearsaloidc/rehearsaloidc"), "{}", issuer.stdout);
    let audit = env.run_bare(&["--journal", journal.to_str().unwrap(), "audit", "--verify"]);
    assert_eq!(audit.code, 0, "{}", audit.all());
}

#[test]
fn rehearsal_completes_under_injected_faults() {
    let env = TestEnv::new();
    let out =
        env.run(&["rehearse", "--phase", "1", "--faults", "--seed", "5", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.last_json();
    assert_eq!(result["runs"][0]["status"], "succeeded");
    let resources = result["resources"].as_array().unwrap();
    assert_eq!(count(resources, is_credential), 12);
    // Faults really happened and were retried.
    let journal = PathBuf::from(result["journal"].as_str().unwrap());
    let db = rusqlite::Connection::open(journal).unwrap();
    let retried: i64 = db
        .query_row(
            "SELECT count(*) FROM events WHERE kind = 'step_finished' AND json_extract(data, '$.will_retry') = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(retried > 0, "the fault model injected nothing");
}

#[test]
fn kill_9_at_ten_moments_then_resume_reaches_the_same_state_without_duplicates() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"killtest\"\noidc_storage_account = \"killtestoidc\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nexternal_dns = true\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let command = |args: &[&str]| {
        let mut command = env.command(args);
        command.envs(&sandbox.settings).stdout(Stdio::null()).stderr(Stdio::piped());
        command
    };
    // Ten kills at spread moments measured in the run's own progress (steps finished since the
    // invocation started), not in wall-clock time: on a slow or loaded machine a fixed delay can
    // land before anything is journaled, every time.
    for new_steps in [1usize, 4, 2, 6, 1, 3, 5, 2, 7, 3] {
        // Until a run is journaled there is nothing to resume: start it (again).
        let has_run = env.run(&["status"]).code == 0;
        let args: Vec<&str> = if !has_run {
            vec!["run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()]
        } else {
            vec!["resume", "--rerun-interrupted"]
        };
        let before = finished_steps(&env.journal());
        let mut child = command(&args).spawn().expect("runbook starts");
        let finished = wait_for_progress(&mut child, &env.journal(), before + new_steps);
        let _ = child.kill();
        let _ = child.wait();
        if finished && env.run(&["status", "--output", "json"]).last_json()["status"] == "succeeded" {
            break;
        }
    }
    let mut done = false;
    for _ in 0..5 {
        let output = command(&["resume", "--rerun-interrupted"]).output().unwrap();
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        if output.status.success() {
            done = true;
            break;
        }
    }
    assert!(done, "resume never completed Phase 1");
    assert_eq!(env.run(&["status", "--output", "json"]).last_json()["status"], "succeeded");

    let invocations = env.events().iter().filter(|(kind, ..)| kind == "run_started").count();
    // Early kills may land before a run is journaled; several must have hit a journaled run.
    assert!(invocations >= 3, "the kills interrupted the run several times ({invocations} invocations)");

    let state = sandbox.state();
    let resources = state["resources"].as_array().unwrap();
    assert_eq!(count(resources, is_identity), 7, "{resources:#?}");
    assert_eq!(count(resources, is_credential), 12, "no duplicate federated credential: {resources:#?}");
    for app in state["applications"].as_array().unwrap() {
        let passwords = app["passwordCredentials"].as_array().unwrap();
        assert_eq!(passwords.len(), 1, "exactly one password per service principal: {app}");
    }
    assert_eq!(state["applications"].as_array().unwrap().len(), 2, "External DNS and cluster operations");
    let verify = env.run(&["audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
}

/// `step_finished` events in the journal so far (none while it does not exist yet).
fn finished_steps(journal: &Path) -> usize {
    let Ok(db) = rusqlite::Connection::open_with_flags(journal, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return 0;
    };
    db.query_row("SELECT count(*) FROM events WHERE kind = 'step_finished'", [], |row| row.get::<_, i64>(0))
        .map(|n| n as usize)
        .unwrap_or(0)
}

/// Waits until the journal holds `target` finished steps or the child exits; true if it exited.
fn wait_for_progress(child: &mut Child, journal: &Path, target: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        if finished_steps(journal) >= target {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the run made no progress for 300 s");
}

#[test]
fn a_taken_storage_account_name_fails_before_anything_is_written() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--phase", "1", "--taken-storage-account", "rehearsaloidc", "--dir", "rehearsals"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("StorageAccountAlreadyTaken"), "{}", out.stderr);
    assert!(
        out.stderr.contains("phase1-workload-identity.toml:"),
        "the problem points into the runbook: {}",
        out.stderr
    );
    assert!(out.stderr.contains("hint:"), "{}", out.stderr);
    let rehearsal = std::fs::read_dir(env.path().join("rehearsals")).unwrap().next().unwrap().unwrap().path();
    assert!(!rehearsal.join("journal.db").exists(), "nothing was journaled");
}

#[test]
fn the_ccoctl_alternative_is_chosen_by_a_variable() {
    let env = TestEnv::new();
    let vars = env.write("v.toml", "prefix = \"demo\"\noidc_storage_account = \"demooidc123\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\n");
    let actions = |tool: &str| -> BTreeMap<String, String> {
        let out = env.run(&[
            "plan",
            "phase1-workload-identity",
            "--vars",
            vars.to_str().unwrap(),
            "--var",
            &format!("oidc_tool={tool}"),
            "--output",
            "json",
        ]);
        assert_eq!(out.code, 0, "{}", out.all());
        out.last_json()["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["step"].as_str().unwrap().to_string(), s["action"].as_str().unwrap().to_string()))
            .collect()
    };
    let native = actions("native");
    let ccoctl = actions("ccoctl");
    for (step, in_native) in [
        ("signing_key", "run"),
        ("upload_discovery", "run"),
        ("upload_jwks", "run"),
        ("ccoctl_key_pair", "skip"),
        ("ccoctl_oidc_issuer", "skip"),
    ] {
        assert_eq!(native[step], in_native, "native: {step}");
        assert_ne!(ccoctl[step], in_native, "ccoctl: {step}");
    }
    // Verification and the hand-off are the same in both modes.
    for step in [
        "oidc_documents",
        "issuer_is_public",
        "jwks_is_public",
        "federated_credential[disk-csi-fed-id-node]",
        "handoff",
    ] {
        assert_eq!(ccoctl[step], "run", "{step}");
    }
    let invalid =
        env.run(&["plan", "phase1-workload-identity", "--vars", vars.to_str().unwrap(), "--var", "oidc_tool=az"]);
    assert_eq!(invalid.code, 2, "{}", invalid.all());
}

#[test]
fn the_ccoctl_alternative_rehearses_end_to_end_with_the_stand_in() {
    let env = TestEnv::new();
    let out = env.run(&[
        "rehearse",
        "--phase",
        "1",
        "--oidc-tool",
        "ccoctl",
        "--check-idempotent",
        "--output",
        "json",
        "--dir",
        "rehearsals",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.last_json();
    assert_eq!(result["runs"][0]["status"], "succeeded");
    assert_eq!(result["second_pass_write_requests"], 0);
    let resources = result["resources"].as_array().unwrap();
    assert_eq!(count(resources, is_credential), 12);
    let workdir = PathBuf::from(result["workdir"].as_str().unwrap());
    let mode = std::fs::metadata(workdir.join("serviceaccount-signer.private")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the ccoctl-written private key is tightened");
    assert!(workdir.join("ccoctl-output/openid-configuration").exists(), "ccoctl wrote its documents");
    let journal = PathBuf::from(result["journal"].as_str().unwrap());
    let db = rusqlite::Connection::open(journal).unwrap();
    let ran: i64 = db
        .query_row(
            "SELECT count(*) FROM events WHERE kind = 'step_finished' AND step IN ('ccoctl_key_pair', 'ccoctl_oidc_issuer') AND json_extract(data, '$.status') = 'succeeded'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ran, 2, "both ccoctl commands ran");
}

/// What Phase 3's `--assign-service-principal-roles` does with azure-credentials.json: sign in as
/// the cluster-operations principal and assign a workload identity a role. Azure refuses that to
/// Contributor alone (the sandbox's role_authorization tests); Phase 1 grants enough.
#[test]
fn the_cluster_operations_principal_can_assign_the_workload_identities_roles() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"rbac\"\noidc_storage_account = \"rbacoidc\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let out = env
        .command(&["run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()])
        .envs(&sandbox.settings)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let credentials: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path().join("azure-credentials.json")).unwrap()).unwrap();
    let ca = reqwest::Certificate::from_pem(&std::fs::read(sandbox.dir.join("sandbox-ca.pem")).unwrap()).unwrap();
    let client = reqwest::blocking::Client::builder().add_root_certificate(ca).build().unwrap();
    let token: Value = client
        .post(format!(
            "{}{}/oauth2/v2.0/token",
            sandbox.settings["RUNBOOK_AUTHORITY_HOST"],
            credentials["tenantId"].as_str().unwrap()
        ))
        .form(&[
            ("client_id", credentials["clientId"].as_str().unwrap()),
            ("client_secret", credentials["clientSecret"].as_str().unwrap()),
            ("grant_type", "client_credentials"),
            ("scope", "https://management.azure.com/.default"),
        ])
        .send()
        .unwrap()
        .json()
        .unwrap();
    let token = token["access_token"].as_str().expect("the cluster-operations principal signs in").to_string();
    let subscription = format!("/subscriptions/{}", credentials["subscriptionId"].as_str().unwrap());
    let arm = |path: &str| {
        format!("{}{}{path}", sandbox.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/'), subscription)
    };
    let identity: Value = client
        .get(arm("/resourceGroups/os4-common/providers/Microsoft.ManagedIdentity/userAssignedIdentities/rbac-hc-ingress?api-version=2023-01-31"))
        .bearer_auth(&token)
        .send()
        .unwrap()
        .json()
        .unwrap();
    let principal = identity["properties"]["principalId"].as_str().expect("the ingress identity").to_string();
    // The ingress identity's role on the DNS zone's resource group, as hypershift assigns it.
    let assignment = arm(
        "/resourceGroups/os4-common/providers/Microsoft.Authorization/roleAssignments/0d4a5e32-7c1b-5c4f-9d7e-3a2b1c0d9e8f?api-version=2022-04-01",
    );
    let body = serde_json::json!({"properties": {
        "roleDefinitionId": format!("{subscription}/providers/Microsoft.Authorization/roleDefinitions/0336e1d3-7a87-462b-b6db-342b63f7802c"),
        "principalId": principal,
    }});
    // A young identity may still be replicating (PrincipalNotFound), as in Azure.
    let mut status = 0;
    for _ in 0..100 {
        let resp = client.put(&assignment).bearer_auth(&token).json(&body).send().unwrap();
        status = resp.status().as_u16();
        let answer: Value = resp.json().unwrap_or(Value::Null);
        if answer["error"]["code"] != "PrincipalNotFound" {
            assert_eq!(status, 201, "{answer:#}");
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status, 201, "the role assignment never replicated");
}

/// Phase 3 names the parent zone to hypershift with and without External DNS, so Phase 1 reads
/// it before it writes anything, on both paths: a zone that is missing (or in another resource
/// group) or private stops it at the gate (exit 4) with the zone named, and nothing is written.
#[test]
fn the_parent_dns_zone_is_checked_before_anything_is_written_on_both_dns_paths() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let arm = sandbox.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/').to_string();
    let subscription = sandbox.settings["AZURE_SUBSCRIPTION_ID"].clone();
    let (status, _) = sandbox.call(
        reqwest::Method::PUT,
        &format!("{arm}/subscriptions/{subscription}/resourceGroups/dns-parent/providers/Microsoft.Network/dnsZones/internal.example?api-version=2018-05-01"),
        "https://management.azure.com/.default",
        Some(serde_json::json!({ "location": "global", "properties": { "zoneType": "Private" } })),
    );
    assert!(status < 300, "{status}");
    let written = || -> Vec<Value> {
        sandbox
            .requests()
            .into_iter()
            .filter(|r| {
                // Questions sent as POST (a token, a name's availability, objects by id) write nothing.
                let path = r["path"].as_str().unwrap_or_default();
                let question = ["oauth2", "checkNameAvailability", "getByIds", "checkPolicyRestrictions"]
                    .iter()
                    .any(|q| path.contains(q));
                r["method"] != "GET" && !question
            })
            .collect()
    };
    let writes = || written().len();
    let ca = sandbox.dir.join("sandbox-ca.pem");
    for (external_dns, zone, rg, says) in [
        (
            false,
            "nowhere.example",
            "dns-parent",
            "parent DNS zone `nowhere.example` exists in resource group `dns-parent`",
        ),
        (
            true,
            "nowhere.example",
            "dns-parent",
            "parent DNS zone `nowhere.example` exists in resource group `dns-parent`",
        ),
        (false, "example.com", "elsewhere", "parent DNS zone `example.com` exists in resource group `elsewhere`"),
        (false, "internal.example", "dns-parent", "parent DNS zone `internal.example` is a public zone"),
    ] {
        let before = writes();
        let vars = env.write(
            "phase1.vars.toml",
            &format!(
                "prefix = \"zone\"\noidc_storage_account = \"zoneoidc\"\nexternal_dns = {external_dns}\ndns_parent_zone = \"{zone}\"\ndns_parent_rg = \"{rg}\"\nca_file = \"{}\"\n",
                ca.display()
            ),
        );
        let out = env
            .command(&["--no-progress", "run", "phase1-workload-identity", "--fresh", "--vars", vars.to_str().unwrap()])
            .envs(&sandbox.settings)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{zone} in {rg}: {stderr}");
        assert!(stderr.contains(says), "{says}\n{stderr}");
        let after: Vec<Value> = written().into_iter().skip(before).collect();
        assert!(after.is_empty(), "{zone} in {rg} (external_dns = {external_dns}): something was written: {after:#?}");
    }
}
