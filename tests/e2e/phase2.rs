//! Phase 2 on the sandbox after Phase 1: the access gate, the External DNS secret, `hypershift
//! install` (the stand-in) and the operator pods Ready; a second pass writes nothing (Azure and
//! Kubernetes); a user without cluster-admin is stopped before any write; `plan` before Phase 1
//! names what is missing and from which runbook.

use std::path::PathBuf;

use crate::support::{SandboxProcess, TestEnv};

#[test]
fn rehearsal_runs_phase_2_after_phase_1_and_a_second_pass_writes_nothing() {
    let env = TestEnv::new();
    let out = env.run(&["rehearse", "--phase", "2", "--check-idempotent", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.last_json();
    let runs = result["runs"].as_array().unwrap();
    let phase2: Vec<_> = runs.iter().filter(|r| r["runbook"] == "phase2-management-cluster").collect();
    assert_eq!(phase2.len(), 2, "{runs:#?}");
    assert!(phase2.iter().all(|r| r["status"] == "succeeded"), "{runs:#?}");
    assert_eq!(
        result["second_pass_write_requests"], 0,
        "running Phase 1 and 2 again must not write (ARM or Kubernetes)"
    );

    // Phase 2 is the HyperShift administrator's, in the journal Phase 1 was handed over to.
    let journal = PathBuf::from(result["handoff"]["to"]["journal"].as_str().unwrap());
    let get = |key: &str| {
        let out = env.run_bare(&["--journal", journal.to_str().unwrap(), "get", key]);
        assert_eq!(out.code, 0, "{}", out.all());
        out.stdout.trim().to_string()
    };
    assert_eq!(get("phase2-management-cluster.operator_namespace"), "hypershift");
    assert_eq!(get("phase2-management-cluster.external_dns"), "true");
    assert_eq!(get("phase2-management-cluster.operator_pods"), "2");
    // The External DNS client secret went into the cluster, never into the journal.
    let workdir = PathBuf::from(result["workdir"].as_str().unwrap());
    let mgmt: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(workdir.join("azure_mgmt.json")).unwrap()).unwrap();
    let secret = mgmt["aadClientSecret"].as_str().unwrap();
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend(std::fs::read(format!("{}-wal", journal.display())).unwrap_or_default());
    assert!(!crate::support::contains_bytes(&bytes, secret));
}

#[test]
fn plan_before_phase_1_names_the_missing_values_and_their_runbook() {
    let env = TestEnv::new();
    std::fs::write(env.path().join("pull-secret.json"), "{}").unwrap();
    let out = env.run(&["plan", "phase2-management-cluster"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("`phase1.prefix` from `phase1-workload-identity`"), "{}", out.stderr);
    assert!(!env.journal().exists(), "plan created a journal");

    // With a journal that has other runs but no Phase 1.
    assert_eq!(env.run(&["run", "local-demo"]).code, 0);
    let out = env.run(&["plan", "phase2-management-cluster"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains("`phase1.prefix`") && out.stderr.contains("run `phase1-workload-identity` first"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_user_without_cluster_admin_is_stopped_before_anything_is_written() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"demo\"\noidc_storage_account = \"demooidc\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nexternal_dns = true\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let phase1 = env
        .command(&["--no-progress", "run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()])
        .envs(&sandbox.settings)
        .output()
        .unwrap();
    assert!(phase1.status.success(), "{}", String::from_utf8_lossy(&phase1.stderr));
    std::fs::write(env.path().join("pull-secret.json"), "{\"auths\":{}}\n").unwrap();
    // The sandbox's kubeconfig also holds a read-only user; make it the current one.
    let admin = std::fs::read_to_string(&sandbox.settings["KUBECONFIG"]).unwrap();
    let reader = env.write(
        "reader.kubeconfig",
        &admin.replace("current-context: sandbox", "current-context: sandbox-sandbox-reader"),
    );
    // An access review is a question, not a write.
    let writes = || {
        let requests = sandbox.requests();
        requests
            .iter()
            .filter(|r| r["method"] != "GET" && !r["path"].as_str().unwrap_or_default().contains("accessreviews"))
            .count()
    };
    let writes_before = writes();
    // The runbook's own `access` step is under test (doctor.rs tests doctor stopping this user).
    let denied = env
        .command(&["--no-progress", "run", "--skip-doctor", "phase2-management-cluster", "--var", "external_dns=true"])
        .envs(&sandbox.settings)
        .env("KUBECONFIG", &reader)
        .output()
        .unwrap();
    assert_eq!(denied.status.code(), Some(3), "{}", String::from_utf8_lossy(&denied.stderr));
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(stderr.contains("access"), "{stderr}");
    let writes_after = writes();
    assert_eq!(writes_before, writes_after, "a denied user wrote something");

    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(crate::support::runbook_bin(), bin.join("hypershift")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let admitted =
        env.command(&["--no-progress", "resume"]).envs(&sandbox.settings).env("PATH", path).output().unwrap();
    assert!(admitted.status.success(), "{}", String::from_utf8_lossy(&admitted.stderr));
}

#[test]
fn without_external_dns_phase_2_installs_the_operator_alone() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"plain\"\noidc_storage_account = \"plainoidc\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nexternal_dns = false\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let phase1 = env
        .command(&["--no-progress", "run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()])
        .envs(&sandbox.settings)
        .output()
        .unwrap();
    assert!(phase1.status.success(), "{}", String::from_utf8_lossy(&phase1.stderr));
    std::fs::write(env.path().join("pull-secret.json"), "{\"auths\":{}}\n").unwrap();
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(crate::support::runbook_bin(), bin.join("hypershift")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());

    // The DNS strategy is Phase 1's: asking Phase 2 for External DNS when Phase 1 made none is
    // refused before anything runs, naming both values and where each came from.
    let writes = || sandbox.requests().iter().filter(|r| r["method"] != "GET").count();
    let writes_before = writes();
    let mismatch = env
        .command(&["--no-progress", "run", "phase2-management-cluster", "--var", "external_dns=true"])
        .envs(&sandbox.settings)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(mismatch.status.code(), Some(2), "{}", String::from_utf8_lossy(&mismatch.stderr));
    let stderr = String::from_utf8_lossy(&mismatch.stderr);
    assert!(
        stderr.contains("`external_dns` = true (from --var external_dns)")
            && stderr.contains("`phase1.external_dns` = false")
            && stderr.contains("phase1-workload-identity"),
        "{stderr}"
    );
    // Given in a vars file, the refusal points at its line and column.
    let phase2_vars = env.write("phase2.vars.toml", "pull_secret = \"pull-secret.json\"\nexternal_dns = true\n");
    let planned = crate::support::Run::from(
        env.command(&["plan", "phase2-management-cluster", "--vars", phase2_vars.to_str().unwrap()])
            .envs(&sandbox.settings)
            .output()
            .unwrap(),
    );
    assert_eq!(planned.code, 2, "{}", planned.all());
    assert!(planned.stderr.contains("phase2.vars.toml:2:16"), "{}", planned.stderr);
    assert!(planned.stderr.contains("(from the vars file)"), "{}", planned.stderr);
    assert_eq!(writes(), writes_before, "a refused plan or run wrote to Azure or Kubernetes");

    let run = env
        .command(&["--no-progress", "run", "phase2-management-cluster", "--fresh"])
        .envs(&sandbox.settings)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let out = env.run(&["get", "phase2-management-cluster.external_dns"]);
    assert_eq!(out.stdout.trim(), "false");
    let kubectl = std::process::Command::new("/usr/bin/kubectl")
        .args(["get", "deployments", "-n", "hypershift", "-o", "name"])
        .env("KUBECONFIG", &sandbox.settings["KUBECONFIG"])
        .env("HOME", env.path())
        .output()
        .expect("kubectl 1.32 is required at /usr/bin/kubectl");
    assert_eq!(String::from_utf8_lossy(&kubectl.stdout).trim(), "deployment.apps/operator");
}
