use crate::support::TestEnv;

/// `--azure-credential` reaches the Azure kinds when a step runs: the sandbox credential refuses
/// the real ARM endpoint (the default), so nothing can leave the machine by mistake.
#[test]
fn the_credential_flag_is_used_and_the_sandbox_credential_never_reaches_real_azure() {
    let env = TestEnv::new();
    let runbook = env.write(
        "arm.toml",
        r#"
[runbook]
name = "arm-flag"
[[steps]]
id = "read"
kind = "arm"
retry = { attempts = 1 }
inputs.action = "get"
inputs.id = "/subscriptions/{subscription}/resourceGroups/example"
inputs.api_version = "2021-04-01"
inputs.subscription_id = "00000000-0000-0000-0000-000000000000"
"#,
    );
    // The step's own guard is under test: doctor, which refuses these settings first, is skipped.
    let mut command =
        env.command(&["--azure-credential", "sandbox", "run", "--skip-doctor", runbook.to_str().unwrap()]);
    for name in ["RUNBOOK_ARM_ENDPOINT", "RUNBOOK_AUTHORITY_HOST", "RUNBOOK_AZURE_CREDENTIAL"] {
        command.env_remove(name);
    }
    command
        .env("AZURE_TENANT_ID", "54826b22-38d6-4fb2-bad9-b7b93a3e9c5a")
        .env("AZURE_CLIENT_ID", "5a4db0c5-0000-4000-8000-000000000001")
        .env("AZURE_CLIENT_SECRET", "not-a-real-secret");
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("loopback"), "{stderr}");
}
