//! `runbook verify` after Phase 1 against a sandbox kept up: no drift and no write request, then
//! a federated credential deleted out of band is named exactly, with a non-zero exit.

use serde_json::Value;

use crate::support::{SandboxProcess, TestEnv};

/// Write requests to Azure (ARM, Graph, Blob) and the cluster; signing in (a POST to Entra's
/// token endpoint) changes nothing.
fn writes(sandbox: &SandboxProcess) -> Vec<Value> {
    let write = |r: &Value| {
        matches!(r["method"].as_str(), Some("PUT" | "POST" | "PATCH" | "DELETE")) && r["service"] != "entra"
    };
    sandbox.requests().into_iter().filter(write).collect()
}

#[test]
fn verify_finds_no_drift_without_writing_then_names_a_deleted_credential() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"drift\"\noidc_storage_account = \"driftoidc\"\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let run = env
        .command(&["run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()])
        .envs(&sandbox.settings)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let verify = |env: &TestEnv| {
        let out = env
            .command(&["verify", "phase1-workload-identity", "--output", "json"])
            .envs(&sandbox.settings)
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
        });
        (out.status.code().unwrap(), report)
    };
    let writes_before = writes(&sandbox).len();
    let (code, report) = verify(&env);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(writes(&sandbox)[writes_before..], [] as [Value; 0], "verify made a write request");
    let checked = &report["runs"][0];
    assert_eq!(checked["drift"], serde_json::json!([]), "{report:#}");
    assert_eq!(checked["unreadable"], serde_json::json!([]), "{report:#}");
    // At least a resource group, 7 identities, 12 credentials, storage account, container, DNS
    // zone and delegation (role assignments besides, when the vars ask for them).
    assert!(checked["objects"].as_u64().unwrap() >= 24, "{report:#}");

    let credential: Value = env.step_events("step_finished", "federated_credential[disk-csi-fed-id-node]")[0].clone();
    let id = credential["outputs"]["id"].as_str().unwrap().to_string();
    sandbox.delete_out_of_band(&id, "2023-01-31");
    let writes_before = writes(&sandbox).len();
    let (code, report) = verify(&env);
    assert_eq!(code, 7, "drift exits 7: {report:#}");
    assert_eq!(writes(&sandbox)[writes_before..], [] as [Value; 0], "verify made a write request");
    let drift = report["runs"][0]["drift"].as_array().unwrap();
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
}
