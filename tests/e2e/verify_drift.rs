//! The scenario of `verify` over a whole deployment: `rehearse --serve` through Day 2 (the two
//! people's journals), then `verify --all` over both journals finds nothing and writes nothing
//! (Azure's and the management cluster's request log); a federated credential deleted over ARM
//! and a NodePool scaled with the real kubectl are then named, exactly those two, with exit 7.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::support::{TestEnv, runbook_bin, sandbox_settings};
use crate::verify::{all_drift, delete_out_of_band, writes};

const KUBECTL: &str = "/usr/bin/kubectl";

/// `runbook rehearse --serve`, stopped with Ctrl-C (SIGINT) when the test is done.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGINT) };
        let _ = self.0.wait();
    }
}

#[test]
fn verify_all_names_exactly_a_deleted_credential_and_a_scaled_node_pool() {
    assert!(std::path::Path::new(KUBECTL).exists(), "kubectl 1.32 is required at {KUBECTL} to change the NodePool");
    let env = TestEnv::new();
    let mut child = Command::new(runbook_bin())
        .args(["rehearse", "--phase", "4", "--serve", "--latency-scale", "0.05", "--output", "json", "--dir"])
        .arg(env.path().join("rehearsals"))
        .current_dir(env.path())
        .env("RUNBOOK_USER", "tester")
        .env("CI", "true")
        .env_remove("RUNBOOK_JOURNAL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("rehearse starts");
    let stdout = child.stdout.take().unwrap();
    let serving = Serving(child);
    // The rehearsal's summary (both journals), then the line saying the sandbox is being served.
    let (mut summary, mut served) = (Value::Null, Value::Null);
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("rehearse's output");
        let Ok(value) = serde_json::from_str::<Value>(&line) else { continue };
        if value.get("handoff").is_some() {
            summary = value;
        } else if value["serving"] == true {
            served = value;
            break;
        }
    }
    assert!(served["env_file"].is_string(), "the rehearsal ended without serving: {summary:#}");
    for run in summary["runs"].as_array().unwrap() {
        assert_eq!(run["status"], "succeeded", "{run}");
    }
    let settings = sandbox_settings(std::path::Path::new(served["env_file"].as_str().unwrap()));
    let first = summary["journal"].as_str().unwrap().to_string();
    let second = summary["handoff"]["to"]["journal"].as_str().unwrap().to_string();

    let verify = || {
        let out = Command::new(runbook_bin())
            .args(["--journal", &first, "--journal", &second, "verify", "--all", "--output", "json"])
            .current_dir(env.path())
            .envs(&settings)
            .env("RUNBOOK_USER", "tester")
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
        });
        (out.status.code().unwrap(), report)
    };

    let before = writes(&settings).len();
    let (code, report) = verify();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(writes(&settings)[before..], [] as [Value; 0], "verify made a write request");
    let runs = report["runs"].as_array().unwrap();
    let runbooks: Vec<&str> = runs.iter().map(|r| r["runbook"].as_str().unwrap()).collect();
    assert_eq!(
        runbooks,
        [
            "phase1-workload-identity",
            "phase2-management-cluster",
            "phase3-hosted-cluster",
            "day2-add-nodepool",
            "day2-scale-nodepool",
            "day2-upgrade-cluster",
            "day2-delete-nodepool",
        ],
        "every finished runbook of both journals"
    );
    for run in runs {
        assert_eq!(run["unreadable"], json!([]), "{run:#}");
    }
    // The node pool Day 2 added and deleted again is not expected any more.
    assert_eq!(runs[3]["deleted_later"][0]["object"], "NodePool clusters/rehearse-hc-workers", "{report:#}");
    let read: u64 = runs.iter().map(|r| r["objects"].as_u64().unwrap()).sum();
    assert!(
        read >= 35,
        "identities, credentials, issuer, DNS, principals, role assignments, cluster objects: {report:#}"
    );

    // Out of band: someone deletes a federated credential, someone scales the node pool.
    let db = rusqlite::Connection::open(&first).unwrap();
    let finished: String = db
        .query_row(
            "SELECT data FROM events WHERE kind = 'step_finished' AND step = 'federated_credential[network-fed-id]'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    drop(db);
    let finished: Value = serde_json::from_str(&finished).unwrap();
    let credential = finished["outputs"]["id"].as_str().expect("the credential's id is journaled").to_string();
    delete_out_of_band(&settings, &credential, "2023-01-31");
    let scaled = Command::new(KUBECTL)
        .args(["scale", "nodepool/rehearse-hc", "--namespace", "clusters", "--replicas", "5"])
        .env("KUBECONFIG", &settings["KUBECONFIG"])
        .output()
        .unwrap();
    assert!(scaled.status.success(), "{}", String::from_utf8_lossy(&scaled.stderr));

    let before = writes(&settings).len();
    let (code, report) = verify();
    assert_eq!(code, 7, "drift exits 7: {report:#}");
    assert_eq!(writes(&settings)[before..], [] as [Value; 0], "verify made a write request");
    let drift = all_drift(&report);
    let objects: Vec<&str> = drift.iter().map(|d| d["object"].as_str().unwrap()).collect();
    assert_eq!(objects.len(), 2, "exactly the two changes: {drift:#?}");
    let deleted = drift.iter().find(|d| d["object"] == credential.as_str()).expect("the credential");
    assert_eq!(deleted["drift"], "missing");
    assert_eq!(deleted["step"], "federated_credential[network-fed-id]");
    let pool = drift.iter().find(|d| d["object"] == "NodePool clusters/rehearse-hc").expect("the node pool");
    assert_eq!(pool["drift"], "changed");
    let replicas =
        pool["fields"].as_array().unwrap().iter().find(|f| f["field"] == "/spec/replicas").expect("spec.replicas");
    // Phase 3 made it with 2; Day 2 scaled it to 3: the latest recorded value is the journaled one.
    assert_eq!(replicas["journaled"], 3, "{pool:#}");
    assert_eq!(replicas["now"], 5, "{pool:#}");
    assert_eq!(replicas["recorded_by"], "day2-scale-nodepool scale", "{pool:#}");
    drop(serving);
}
