//! The `http` kind against the sandbox's HTTPS: it trusts `RUNBOOK_CA_FILE` like the Azure kinds
//! (so a runbook run after `sandbox up` can check the sandbox's issuer), and a TLS failure names
//! its cause instead of a bare "error sending request".

mod support;

use std::path::Path;

use runbook_sandbox::{Sandbox, SandboxConfig};
use runbook_steps::{Http, StepContext, StepKind};
use serde_json::json;

fn context(dir: &Path) -> StepContext {
    StepContext::new("run-1", "check", dir)
}

#[tokio::test]
async fn trusts_runbook_ca_file_and_names_an_unknown_issuer() {
    let sandbox = Sandbox::start(SandboxConfig::instant()).await.expect("sandbox starts");
    let dir = tempfile::tempdir().unwrap();
    let ca = support::write_ca(&sandbox, dir.path());
    // Any answer will do: the check is that TLS to the sandbox is trusted.
    let inputs = json!({
        "url": format!("{}subscriptions?api-version=2022-12-01", sandbox.arm_endpoint()),
        "expect_status": [200, 401, 403, 404],
    });

    let trusting = Http::with_env([("RUNBOOK_CA_FILE", ca.display().to_string())]);
    let outcome = trusting.run(&context(dir.path()), &inputs).await;
    assert!(outcome.is_ok(), "RUNBOOK_CA_FILE is trusted: {:?}", outcome.err());

    let untrusting = Http::with_env([("RUNBOOK_CA_FILE", "")]);
    let error = untrusting.run(&context(dir.path()), &inputs).await.expect_err("the sandbox CA is not trusted");
    assert_eq!(error.code.as_deref(), Some("ConnectionFailed"));
    assert!(
        error.message.contains("UnknownIssuer"),
        "the message names the cause, not only `error sending request`: {}",
        error.message
    );

    let missing = Http::with_env([("RUNBOOK_CA_FILE", dir.path().join("nope.pem").display().to_string())]);
    let error = missing.run(&context(dir.path()), &inputs).await.expect_err("an unreadable CA file is an error");
    assert_eq!(error.code.as_deref(), Some("CaFileUnreadable"));
    assert!(error.message.contains("RUNBOOK_CA_FILE"), "{}", error.message);
    sandbox.shutdown().await;
}
