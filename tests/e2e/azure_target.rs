//! Work done against one Azure never stands for another: a step done against a sandbox, or
//! another tenant or subscription, is run again against this one, and plan says why; values
//! required from an earlier runbook must have been published against this Azure.

use std::process::Command;

use crate::support::TestEnv;

const RUNBOOK: &str = r#"
[runbook]
name = "made"
[[steps]]
id = "made"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "made"]
[[steps]]
id = "handoff"
kind = "checkpoint"
after = ["made"]
inputs.values = { zone = "example.com" }
"#;

/// `runbook ARGS` against the Azure that `azure` names (extra settings on top of the test's).
fn on(env: &TestEnv, azure: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let mut command: Command = env.command(args);
    for var in ["RUNBOOK_AZURE_CREDENTIAL", "RUNBOOK_CA_FILE", "AZURE_TENANT_ID", "AZURE_SUBSCRIPTION_ID"] {
        command.env_remove(var);
    }
    command.envs(azure.iter().copied());
    let output = command.output().expect("runbook starts");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text)
}

#[test]
fn a_step_done_against_another_subscription_runs_again_and_plan_says_why() {
    let env = TestEnv::new();
    let runbook = env.write("made.toml", RUNBOOK);
    let runbook = runbook.to_str().unwrap();
    let sub_a = [("AZURE_TENANT_ID", "tenant-1"), ("AZURE_SUBSCRIPTION_ID", "sub-a")];
    let sub_b = [("AZURE_TENANT_ID", "tenant-1"), ("AZURE_SUBSCRIPTION_ID", "sub-b")];

    let (code, out) = on(&env, &sub_a, &["run", runbook]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = on(&env, &sub_a, &["run", runbook]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(env.log("log"), ["made"], "the same subscription reuses the step");

    let (code, plan) = on(&env, &sub_b, &["plan", runbook]);
    assert_eq!(code, 0, "{plan}");
    let made = plan.lines().find(|l| l.split_whitespace().nth(1) == Some("made")).unwrap_or_else(|| panic!("{plan}"));
    assert!(made.trim_start().starts_with("run"), "{made}");
    assert!(made.contains("subscription sub-a") && made.contains("subscription sub-b"), "{made}");

    let (code, out) = on(&env, &sub_b, &["run", runbook]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(env.log("log"), ["made", "made"], "another subscription runs it again");
    let reason = env.step_events("step_started", "made").last().unwrap()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("against") && reason.contains("sub-a"), "{reason}");
}

#[test]
fn a_step_done_against_a_sandbox_is_not_reused_against_azure() {
    let env = TestEnv::new();
    let runbook = env.write("made.toml", RUNBOOK);
    let runbook = runbook.to_str().unwrap();
    let ca = env.write("sandbox-ca.pem", "a sandbox's CA");
    let sandbox = [("RUNBOOK_AZURE_CREDENTIAL", "sandbox"), ("RUNBOOK_CA_FILE", ca.to_str().unwrap())];

    let (code, out) = on(&env, &sandbox, &["run", runbook]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = on(&env, &[], &["run", runbook]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(env.log("log"), ["made", "made"], "the sandbox's work does not stand for Azure");
    let reason = env.step_events("step_started", "made").last().unwrap()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("the built-in sandbox"), "{reason}");

    // A runbook requiring the checkpoint finds it only where this run acts.
    let later = env.write(
        "later.toml",
        r#"
[runbook]
name = "later"
[requires.made]
runbook = "made"
outputs = ["zone"]
[[steps]]
id = "use"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/later", "${made.zone}"]
"#,
    );
    let other_ca = env.write("other-ca.pem", "another sandbox's CA");
    let other = [("RUNBOOK_AZURE_CREDENTIAL", "sandbox"), ("RUNBOOK_CA_FILE", other_ca.to_str().unwrap())];
    let (code, out) = on(&env, &other, &["run", later.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("`made.zone`") && out.contains("only in runs against another Azure"), "{out}");
    let (code, out) = on(&env, &[], &["run", later.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(env.log("later"), ["example.com"]);
}

/// An ed25519 key pair made by ssh-keygen in `env`'s directory: (private, public).
fn ssh_key(env: &TestEnv, name: &str) -> (String, String) {
    let private = env.path().join(name);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&private)
        .status()
        .expect("ssh-keygen must be installed (openssh-client) for the hand-off tests");
    assert!(status.success());
    let private = private.display().to_string();
    (private.clone(), format!("{private}.pub"))
}

/// A hand-off carries the Azure its values were made against: values a sandbox rehearsal
/// published, exported and imported into another person's journal, never stand for real Azure
/// there, and the import says where they were made.
#[test]
fn a_handoff_made_against_a_sandbox_carries_the_mark_into_the_importing_journal() {
    let exporter = TestEnv::new();
    let importer = TestEnv::new();
    let runbook = exporter.write("made.toml", RUNBOOK);
    // The importer has the runbook too: a hand-off's values are checked against it.
    importer.write("made.toml", RUNBOOK);
    let ca = exporter.write("sandbox-ca.pem", "a sandbox's CA");
    let sandbox = [("RUNBOOK_AZURE_CREDENTIAL", "sandbox"), ("RUNBOOK_CA_FILE", ca.to_str().unwrap())];
    let (code, out) = on(&exporter, &sandbox, &["run", runbook.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");

    let (signing, signing_pub) = ssh_key(&exporter, "exporter");
    let (identity, recipient) = ssh_key(&importer, "importer");
    let file = importer.path().join("made.handoff");
    let (code, out) = on(
        &exporter,
        &[],
        &["export", "made", "--to", &recipient, "-o", file.to_str().unwrap(), "--sign-with", &signing],
    );
    assert_eq!(code, 0, "{out}");
    let (code, imported) =
        on(&importer, &[], &["import", file.to_str().unwrap(), "--identity", &identity, "--trust", &signing_pub]);
    assert_eq!(code, 0, "{imported}");
    assert!(imported.contains("made against the built-in sandbox"), "the import says where: {imported}");

    let later = importer.write(
        "later.toml",
        r#"
[runbook]
name = "later"
[requires.made]
runbook = "made"
outputs = ["zone"]
[[steps]]
id = "use"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/later", "${made.zone}"]
"#,
    );
    let later = later.to_str().unwrap();
    // Real Azure (the default credential): refused at plan and at run, nothing runs.
    for command in ["plan", "run"] {
        let (code, out) = on(&importer, &[], &[command, later]);
        assert_eq!(code, 2, "{command}: {out}");
        assert!(
            out.contains("`made.zone`")
                && out.contains("only in runs against another Azure")
                && out.contains("sandbox"),
            "{command}: {out}"
        );
    }
    assert!(importer.log("later").is_empty(), "a step ran with a sandbox's values");
    // The same sandbox (its CA names the instance) may use them.
    let (code, out) = on(&importer, &sandbox, &["run", later]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(importer.log("later"), ["example.com"]);
}

/// A run is resumed against the Azure it was made against: resuming it against another
/// subscription is refused before anything runs (a new run does that work there).
#[test]
fn a_run_is_not_resumed_against_another_subscription() {
    let env = TestEnv::new();
    let runbook = env.write(
        "stops.toml",
        r#"
[runbook]
name = "stops"
[[steps]]
id = "made"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/log", "made"]
[[steps]]
id = "waits"
kind = "exec"
after = ["made"]
inputs.argv = ["{stepper}", "require", "{dir}/ready", "append", "{dir}/log", "waits"]
"#,
    );
    let sub_a = [("AZURE_TENANT_ID", "tenant-1"), ("AZURE_SUBSCRIPTION_ID", "sub-a")];
    let sub_b = [("AZURE_TENANT_ID", "tenant-1"), ("AZURE_SUBSCRIPTION_ID", "sub-b")];
    let (code, out) = on(&env, &sub_a, &["run", runbook.to_str().unwrap()]);
    assert_eq!(code, 3, "{out}");
    std::fs::write(env.path().join("ready"), "").unwrap();
    let events = env.events().len();

    let (code, out) = on(&env, &sub_b, &["resume"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("subscription sub-a") && out.contains("subscription sub-b"), "{out}");
    assert_eq!(env.events().len(), events, "the refused resume journaled nothing");
    assert_eq!(env.log("log"), ["made"], "nothing ran");

    let (code, out) = on(&env, &sub_a, &["resume"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(env.log("log"), ["made", "waits"]);
}
