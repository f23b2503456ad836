//! The procedure's rotation of External DNS's client secret, by its two people: the Azure
//! administrator runs Phase 1's `external_dns_password` again (which rewrites azure_mgmt.json)
//! and exports again; the HyperShift administrator imports the new hand-off into the journal
//! that holds the old one and runs Phase 2 again, which runs again exactly the steps that read
//! azure_mgmt.json: the secret default/azure-config-file and `hypershift install` (which
//! replaces hypershift/external-dns-credentials).

use std::path::{Path, PathBuf};

use crate::support::{Rehearsed, Run, TestEnv};

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The steps of `run` that started, in the journal at `journal`.
fn started(journal: &Path, run: &str) -> Vec<String> {
    let db = rusqlite::Connection::open_with_flags(journal, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut statement =
        db.prepare("SELECT step FROM events WHERE run_id = ?1 AND kind = 'step_started' ORDER BY seq").unwrap();
    let mut steps: Vec<String> = statement.query_map([run], |row| row.get(0)).unwrap().map(|r| r.unwrap()).collect();
    steps.sort();
    steps.dedup();
    steps
}

fn latest_run(journal: &Path, runbook: &str) -> String {
    let db = rusqlite::Connection::open_with_flags(journal, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    db.query_row("SELECT id FROM runs WHERE runbook = ?1 ORDER BY rowid DESC LIMIT 1", [runbook], |row| row.get(0))
        .unwrap()
}

#[test]
fn a_rotated_external_dns_secret_travels_by_a_new_hand_off_and_phase_2_replaces_its_secrets() {
    let env = TestEnv::new();
    let rehearsed = Rehearsed::start(&env, 2, "0");
    let admin_journal = env.journal();
    let admin_dir = rehearsed.sandbox.dir.clone();
    let personas = admin_dir.join("personas");
    let key = |persona: &str, public: bool| -> PathBuf {
        personas.join(persona).join(if public { "id_ed25519.pub" } else { "id_ed25519" })
    };
    let path = format!("{}:{}", admin_dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let admin = |args: &[&str]| -> Run {
        let out = env
            .command_on(&admin_journal, args)
            .current_dir(&admin_dir)
            .envs(&rehearsed.sandbox.settings)
            .env("PATH", &path)
            .output()
            .unwrap();
        Run::from(out)
    };
    let engineer = |args: &[&str]| -> Run { Run::from(rehearsed.command(&env, args).output().unwrap()) };
    let phase2 = |engineer: &dyn Fn(&[&str]) -> Run| {
        let pull_secret = format!("pull_secret={}", rehearsed.dir.join("pull-secret.json").display());
        let out = engineer(&[
            "--no-progress",
            "run",
            "phase2-management-cluster",
            "--var",
            "external_dns=true",
            "--var",
            &pull_secret,
        ]);
        assert_eq!(out.code, 0, "{}", out.all());
        started(&rehearsed.journal, &latest_run(&rehearsed.journal, "phase2-management-cluster"))
    };
    // Nothing changed yet: Phase 2 again runs nothing.
    assert_eq!(phase2(&engineer), Vec::<String>::new());
    let secret_before = kube_secret(&rehearsed, "hypershift", "external-dns-credentials");

    // The Azure administrator mints a new secret and exports again.
    let phase1 = latest_run(&admin_journal, "phase1-workload-identity");
    let rerun = admin(&["--no-progress", "resume", &phase1, "--rerun", "external_dns_password"]);
    assert_eq!(rerun.code, 0, "{}", rerun.all());
    let file = admin_dir.join("rotated.handoff");
    let export = admin(&[
        "export",
        "phase1-workload-identity",
        "--to",
        s(&key("hypershift-admin", true)),
        "-o",
        s(&file),
        "--sign-with",
        s(&key("azure-admin", false)),
    ]);
    assert_eq!(export.code, 0, "{}", export.all());

    // The HyperShift administrator takes it into the journal that holds the first hand-off.
    let import = engineer(&[
        "import",
        s(&file),
        "--trust",
        s(&key("azure-admin", true)),
        "--identity",
        s(&key("hypershift-admin", false)),
        "--persona",
        "hypershift-admin",
    ]);
    assert_eq!(import.code, 0, "{}", import.all());
    assert!(import.stdout.contains("replaces handoff_external_dns.azure_mgmt_file of run "), "{}", import.stdout);

    // Phase 2 runs again what reads azure_mgmt.json, and nothing else.
    assert_eq!(phase2(&engineer), ["external_dns_handoff", "external_dns_secret", "install_with_external_dns"]);
    let mgmt = std::fs::read(admin_dir.join("azure_mgmt.json")).unwrap();
    let rotated: serde_json::Value = serde_json::from_slice(&mgmt).unwrap();
    assert_eq!(kube_secret(&rehearsed, "default", "azure-config-file"), mgmt);
    let secret_after = kube_secret(&rehearsed, "hypershift", "external-dns-credentials");
    assert_ne!(secret_after, secret_before);
    assert!(
        String::from_utf8_lossy(&secret_after).contains(rotated["aadClientSecret"].as_str().unwrap()),
        "hypershift/external-dns-credentials does not hold the rotated secret"
    );

    // Both journals verify, each import linked to the administrator's journal.
    let verify = admin(&["--journal", s(&rehearsed.journal), "audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
}

/// A Secret's one data value, decoded, read with kubectl.
fn kube_secret(rehearsed: &Rehearsed, namespace: &str, name: &str) -> Vec<u8> {
    let out = rehearsed.kubectl(&["get", "secret", name, "--namespace", namespace, "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let secret: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let data = secret["data"].as_object().unwrap();
    assert_eq!(data.len(), 1, "{secret}");
    let encoded = data.values().next().unwrap().as_str().unwrap();
    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, encoded).unwrap()
}

/// The same rotation by one administrator in one journal: Phase 2 names azure_mgmt.json by the
/// same path before and after, so its inputs are unchanged; the content Phase 1's checkpoint
/// vouched for is what changed, and the steps that read the file run again.
#[test]
fn in_one_journal_a_rotated_secret_reruns_the_phase_2_steps_that_read_its_file() {
    let env = TestEnv::new();
    let rehearsed = Rehearsed::start(&env, 2, "0");
    let journal = env.journal();
    let dir = rehearsed.sandbox.dir.clone();
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let admin = |args: &[&str]| -> Run {
        let out = env
            .command_on(&journal, args)
            .current_dir(&dir)
            .envs(&rehearsed.sandbox.settings)
            .env("PATH", &path)
            .output()
            .unwrap();
        Run::from(out)
    };
    let pull_secret = format!("pull_secret={}", rehearsed.dir.join("pull-secret.json").display());
    let phase2 = || {
        let args = ["--no-progress", "run", "phase2-management-cluster", "--var", "external_dns=true", "--var"];
        let out = admin(&[&args[..], &[pull_secret.as_str()]].concat());
        assert_eq!(out.code, 0, "{}", out.all());
        (started(&journal, &latest_run(&journal, "phase2-management-cluster")), out)
    };
    phase2();
    assert_eq!(phase2().0, Vec::<String>::new(), "a second pass with nothing changed runs nothing");

    let phase1 = latest_run(&journal, "phase1-workload-identity");
    let rerun = admin(&["--no-progress", "resume", &phase1, "--rerun", "external_dns_password"]);
    assert_eq!(rerun.code, 0, "{}", rerun.all());

    let (steps, out) = phase2();
    assert_eq!(steps, ["external_dns_handoff", "external_dns_secret", "install_with_external_dns"], "{}", out.all());
    assert!(
        out.all().contains("the file `phase1_dns.azure_mgmt_file` names holds other content since run"),
        "{}",
        out.all()
    );
    let mgmt = std::fs::read(dir.join("azure_mgmt.json")).unwrap();
    assert_eq!(kube_secret(&rehearsed, "default", "azure-config-file"), mgmt);
    let rotated: serde_json::Value = serde_json::from_slice(&mgmt).unwrap();
    let credentials = kube_secret(&rehearsed, "hypershift", "external-dns-credentials");
    assert!(String::from_utf8_lossy(&credentials).contains(rotated["aadClientSecret"].as_str().unwrap()));
    assert_eq!(phase2().0, Vec::<String>::new(), "once the new content is in, nothing runs again");
}
