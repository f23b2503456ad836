//! `runbook verify` after Phase 1 against a sandbox kept up: no drift and no write request, then
//! a federated credential deleted out of band is named exactly, with a non-zero exit; then a
//! credential's subject changed and a role assignment removed show as a changed field (old and
//! new value) and a missing object.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::{SandboxProcess, TestEnv, sandbox_client, sandbox_get};

/// Write requests to Azure (ARM, Graph, Blob) and the management cluster; signing in (a POST
/// to Entra's token endpoint) changes nothing.
pub fn writes(settings: &BTreeMap<String, String>) -> Vec<Value> {
    let write = |r: &Value| {
        matches!(r["method"].as_str(), Some("PUT" | "POST" | "PATCH" | "DELETE")) && r["service"] != "entra"
    };
    let listed = sandbox_get(settings, runbook_sandbox::REQUESTS_PATH);
    listed["requests"].as_array().cloned().unwrap_or_default().into_iter().filter(write).collect()
}

/// What someone else does with their own credentials: a request over ARM, outside the runbook.
fn out_of_band(settings: &BTreeMap<String, String>, method: &str, id: &str, api_version: &str, body: Option<Value>) {
    let client = sandbox_client(settings);
    let token: Value = client
        .post(format!("{}{}/oauth2/v2.0/token", settings["RUNBOOK_AUTHORITY_HOST"], settings["AZURE_TENANT_ID"]))
        .form(&[
            ("client_id", settings["AZURE_CLIENT_ID"].as_str()),
            ("client_secret", settings["AZURE_CLIENT_SECRET"].as_str()),
            ("grant_type", "client_credentials"),
            ("scope", "https://management.azure.com/.default"),
        ])
        .send()
        .unwrap()
        .json()
        .unwrap();
    let url = format!("{}{id}?api-version={api_version}", settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/'));
    let mut request = client.request(method.parse().unwrap(), url).bearer_auth(token["access_token"].as_str().unwrap());
    if let Some(body) = body {
        request = request.json(&body);
    }
    let answered = request.send().unwrap();
    assert!(answered.status().is_success(), "{method} {id}: {}", answered.status());
}

pub fn delete_out_of_band(settings: &BTreeMap<String, String>, id: &str, api_version: &str) {
    out_of_band(settings, "DELETE", id, api_version, None);
}

/// Every drift of a `verify --output json` report, whichever run it is reported under.
pub fn all_drift(report: &Value) -> Vec<Value> {
    report["runs"].as_array().unwrap().iter().flat_map(|r| r["drift"].as_array().unwrap().clone()).collect()
}

#[test]
fn verify_finds_no_drift_without_writing_then_names_a_deleted_credential() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let settings = &sandbox.settings;
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"drift\"\noidc_storage_account = \"driftoidc\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let run = env
        .command(&["run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()])
        .envs(settings)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let verify = |env: &TestEnv| {
        let out =
            env.command(&["verify", "phase1-workload-identity", "--output", "json"]).envs(settings).output().unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
        });
        (out.status.code().unwrap(), report)
    };
    let writes_before = writes(settings).len();
    let (code, report) = verify(&env);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(writes(settings)[writes_before..], [] as [Value; 0], "verify made a write request");
    let checked = &report["runs"][0];
    assert_eq!(checked["drift"], json!([]), "{report:#}");
    assert_eq!(checked["unreadable"], json!([]), "{report:#}");
    // A resource group, 7 identities, 12 credentials, storage account, container, the issuer's
    // documents, the cluster-operations application, its service principal and 2 role assignments.
    assert_eq!(checked["objects"], 27, "{report:#}");

    let credential: Value = env.step_events("step_finished", "federated_credential[disk-csi-fed-id-node]")[0].clone();
    let id = credential["outputs"]["id"].as_str().unwrap().to_string();
    delete_out_of_band(settings, &id, "2023-01-31");
    let writes_before = writes(settings).len();
    let (code, report) = verify(&env);
    assert_eq!(code, 7, "drift exits 7: {report:#}");
    assert_eq!(writes(settings)[writes_before..], [] as [Value; 0], "verify made a write request");
    let drift = all_drift(&report);
    assert_eq!(drift.len(), 1, "exactly the deleted credential: {drift:#?}");
    assert_eq!(drift[0]["step"], "federated_credential[disk-csi-fed-id-node]");
    assert_eq!(drift[0]["object"].as_str().unwrap(), id);
    assert_eq!(drift[0]["drift"], "missing");

    // Each check is journaled on the run it checked, for audit.
    let checks = env.events().into_iter().filter(|(kind, ..)| kind == "drift_checked").collect::<Vec<_>>();
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[1].3["drift"].as_array().unwrap().len(), 1);
    let audit = env.run(&["audit", "--verify"]);
    assert_eq!(audit.code, 0, "the chain holds with the checks in it: {}", audit.all());

    // A credential's subject changed and a role assignment removed: the field with its journaled
    // and current value, and the assignment missing.
    let operator: Value = env.step_events("step_finished", "federated_credential[disk-csi-fed-id-operator]")[0].clone();
    let operator_id = operator["outputs"]["id"].as_str().unwrap().to_string();
    let issuer = env.step_events("step_finished", "oidc_documents")[0]["outputs"]["issuer_url"].clone();
    let body = json!({ "properties": { "issuer": issuer, "subject": "system:serviceaccount:elsewhere:intruder", "audiences": ["openshift"] } });
    out_of_band(settings, "PUT", &operator_id, "2023-01-31", Some(body));
    let assignment = env.step_events("step_finished", "cluster_ops_user_access_admin")[0]["outputs"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    delete_out_of_band(settings, &assignment, "2022-04-01");
    let (code, report) = verify(&env);
    assert_eq!(code, 7, "{report:#}");
    let drift = all_drift(&report);
    assert_eq!(drift.len(), 3, "{drift:#?}");
    let of =
        |object: &str| drift.iter().find(|d| d["object"] == object).unwrap_or_else(|| panic!("{object}: {drift:#?}"));
    let changed = of(&operator_id);
    assert_eq!(changed["drift"], "changed");
    assert_eq!(
        changed["fields"],
        json!([{
            "field": "/properties/subject",
            "journaled": "system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-operator",
            "now": "system:serviceaccount:elsewhere:intruder",
        }]),
        "{drift:#?}"
    );
    assert_eq!(of(&assignment)["drift"], "missing");
    assert_eq!(of(&assignment)["step"], "cluster_ops_user_access_admin");
    let text = env.command(&["verify", "phase1-workload-identity"]).envs(settings).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("/properties/subject: \"system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-operator\" → \"system:serviceaccount:elsewhere:intruder\""),
        "{text}"
    );
}
