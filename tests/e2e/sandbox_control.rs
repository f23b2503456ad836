//! A served sandbox is its starter's: its principal's secret is made when it starts (never the
//! build's constant), and its control pages answer only a caller holding that secret, so another
//! user of the machine, who can reach its ports but not read the 0600 `sandbox.env`, can neither
//! get its tokens nor read or change its state.

use crate::support::{SandboxProcess, TestEnv};

#[test]
fn a_served_sandbox_has_a_secret_of_its_own_and_its_control_pages_need_it() {
    let env = TestEnv::new();
    let first = SandboxProcess::start(&env.path().join("one"));
    let second = SandboxProcess::start(&env.path().join("two"));
    let secret = first.settings["AZURE_CLIENT_SECRET"].clone();
    assert_ne!(secret, runbook_sandbox::SANDBOX_CLIENT_SECRET);
    assert_ne!(secret, second.settings["AZURE_CLIENT_SECRET"], "each sandbox makes its own");

    let ca = reqwest::Certificate::from_pem(&std::fs::read(first.dir.join("sandbox-ca.pem")).unwrap()).unwrap();
    let stranger = reqwest::blocking::Client::builder().add_root_certificate(ca).build().unwrap();
    let arm = first.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/').to_string();
    for (method, path) in [("GET", "/.sandbox/state"), ("GET", "/.sandbox/requests"), ("POST", "/.sandbox/faults")] {
        let request = stranger.request(method.parse().unwrap(), format!("{arm}{path}"));
        let answer = request.body(r#"{"method": "GET", "path": "/*", "fault": "reset"}"#).send().unwrap();
        assert_eq!(answer.status().as_u16(), 401, "{method} {path}");
    }
    assert_eq!(first.fault_rules()["azure"], serde_json::json!([]), "no rule was added");
    let wrong = stranger
        .get(format!("{arm}/.sandbox/state"))
        .header("x-runbook-sandbox-secret", runbook_sandbox::SANDBOX_CLIENT_SECRET)
        .send()
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    assert_eq!(stranger.get(format!("{arm}/.sandbox/ready")).send().unwrap().status().as_u16(), 200);

    // The build's constant gets no token; the sandbox's own secret does.
    let token = |secret: &str| {
        let authority = first.settings["RUNBOOK_AUTHORITY_HOST"].trim_end_matches('/');
        let url = format!("{authority}/{}/oauth2/v2.0/token", first.settings["AZURE_TENANT_ID"]);
        stranger
            .post(url)
            .form(&[
                ("grant_type", "client_credentials"),
                ("client_id", first.settings["AZURE_CLIENT_ID"].as_str()),
                ("client_secret", secret),
                ("scope", "https://management.azure.com/.default"),
            ])
            .send()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(token(runbook_sandbox::SANDBOX_CLIENT_SECRET), 401);
    assert_eq!(token(&secret), 200);
    assert!(first.state()["resources"].is_array(), "with the secret, the state is read");
}
