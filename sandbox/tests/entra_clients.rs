//! The sandbox's Entra against clients written elsewhere: tests/entra/clients.py drives
//! Microsoft's MSAL and azure-identity (secrets and certificates, v1 and v2.0 endpoints,
//! instance discovery) and verifies every token with PyJWT against the published JWKS. The
//! pinned clients live in .venv/entra-clients (tests/entra/install.sh, run by
//! tests/install-tools.sh); a missing install fails the test with what to run.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use runbook_sandbox::{SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, SandboxConfig};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

fn python() -> PathBuf {
    let python = repo_root().join(".venv/entra-clients/bin/python");
    assert!(
        python.is_file(),
        "the Entra clients are not installed at {}: run `bash tests/entra/install.sh` (it installs the versions pinned in tests/entra/requirements.txt)",
        python.display()
    );
    python
}

/// Every check clients.py makes, in its order: the run must report each one.
const CHECKS: &[&str] = &[
    "jwks_published_with_certificates",
    "organizations_and_common_metadata",
    "msal_secret_v1_token_verifies",
    "azure_identity_secret_token_verifies",
    "v1_endpoint_resource_token_verifies",
    "v2_token_for_a_v2_resource_verifies",
    "graph_key_credentials",
    "msal_certificate_rs256_x5t",
    "msal_certificate_ps256_x5t_s256",
    "azure_identity_certificate",
    "wrong_secret_7000215",
    "unknown_app_700016",
    "expired_secret_7000222",
    "scope_without_default_1002012",
    "two_resources_70011",
    "unknown_resource_500011",
    "unregistered_certificate_700027",
    "azure_identity_reports_aadsts",
    "instance_discovery",
    "graph_if_match_refused",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn msal_azure_identity_and_pyjwt_accept_what_the_sandbox_issues() {
    let python = python();
    let sandbox = support::start(SandboxConfig::instant()).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, sandbox.ca_pem()).unwrap();
    let mut command = Command::new(python);
    command
        .arg(repo_root().join("tests/entra/clients.py"))
        .env("ENTRA_AUTHORITY", sandbox.authority_host())
        .env("ENTRA_TENANT_ID", sandbox.tenant_id())
        .env("ENTRA_GRAPH", sandbox.graph_endpoint())
        .env("ENTRA_ADMIN_ID", SANDBOX_CLIENT_ID)
        .env("ENTRA_ADMIN_SECRET", SANDBOX_CLIENT_SECRET)
        .env("ENTRA_CA", &ca)
        // requests lets these override a session's own CA setting (MSAL's `verify`).
        .env("REQUESTS_CA_BUNDLE", &ca)
        .env("CURL_CA_BUNDLE", &ca)
        // Only the sandbox is reachable: no proxy, and MSAL's region discovery stays off.
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("MSAL_FORCE_REGION")
        .stdin(Stdio::null());
    let output = tokio::task::spawn_blocking(move || command.output()).await.unwrap().expect("python starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "clients.py failed ({}):\n{stdout}\n{stderr}", output.status);
    let reported: Vec<&str> = stdout.lines().collect();
    assert_eq!(reported, CHECKS, "clients.py reported:\n{stdout}\n{stderr}");
    sandbox.shutdown().await;
}
