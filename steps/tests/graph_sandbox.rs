//! The `graph` kind against the in-process sandbox: Microsoft Graph v1.0 over HTTPS with the
//! sandbox's CA, tokens for the Graph scope from its Entra endpoint through azure_identity.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use runbook_sandbox::{FaultModel, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET, Sandbox, SandboxConfig, Service};
use runbook_steps::{ErrorClass, Graph, StepContext, StepError, StepKind, StepOutcome};
use serde_json::{Value, json};

const GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";

/// A running sandbox and a `graph` kind configured for it, as `rehearse` would configure it.
struct Rig {
    sandbox: Sandbox,
    graph: Graph,
    dir: tempfile::TempDir,
}

impl Rig {
    async fn start(config: SandboxConfig) -> Rig {
        Self::start_as(config, SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET).await
    }

    /// Signed in as `client_id`, which must be the sandbox's own principal or registered in
    /// `register` before the first step runs.
    async fn start_as(config: SandboxConfig, client_id: &str, secret: &str) -> Rig {
        let sandbox = Sandbox::start(config).await.expect("sandbox starts");
        let dir = tempfile::tempdir().unwrap();
        if client_id != SANDBOX_CLIENT_ID {
            sandbox.register_client(client_id, secret);
        }
        let graph = Graph::with_env(support::azure_env_as(&sandbox, dir.path(), client_id, secret));
        Rig { sandbox, graph, dir }
    }

    /// Runs a step as the engine would, as step `step_id` of run `run-1`.
    async fn run_step(&self, step_id: &str, inputs: Value) -> Result<StepOutcome, StepError> {
        let ctx = StepContext::new("run-1", step_id, std::env::temp_dir());
        self.graph.run(&ctx, &inputs).await
    }

    async fn run(&self, inputs: Value) -> Result<StepOutcome, StepError> {
        self.run_step("step", inputs).await
    }

    async fn application(&self, name: &str) -> StepOutcome {
        self.run(json!({"action": "application", "display_name": name})).await.expect("application")
    }

    /// Answered Graph requests with this method whose path ends with `suffix`.
    fn graph_requests(&self, method: &str, suffix: &str) -> Vec<u16> {
        self.sandbox
            .request_log()
            .iter()
            .filter(|r| r.service == Service::Graph && r.method == method && r.path.ends_with(suffix))
            .map(|r| r.status)
            .collect()
    }

    /// A plain HTTPS client trusting the sandbox CA, to look at Graph independently of the kind.
    fn http(&self) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(self.sandbox.ca_pem().as_bytes()).unwrap();
        reqwest::Client::builder().add_root_certificate(ca).build().unwrap()
    }

    async fn token(&self, client_id: &str, secret: &str) -> reqwest::Response {
        let url = format!("{}{}/oauth2/v2.0/token", self.sandbox.authority_host(), self.sandbox.tenant_id());
        self.http()
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[
                ("client_id", client_id),
                ("client_secret", secret),
                ("grant_type", "client_credentials"),
                ("scope", GRAPH_SCOPE),
            ]))
            .send()
            .await
            .unwrap()
    }

    async fn admin_token(&self) -> String {
        let body: Value = self.token(SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET).await.json().await.unwrap();
        body["access_token"].as_str().unwrap().to_string()
    }

    /// The key ids of the application's password credentials named `name`, read straight from Graph.
    async fn credentials_named(&self, object_id: &str, name: &str) -> Vec<String> {
        let url = format!("{}v1.0/applications/{object_id}", self.sandbox.graph_endpoint());
        let app: Value =
            self.http().get(url).bearer_auth(self.admin_token().await).send().await.unwrap().json().await.unwrap();
        app["passwordCredentials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["displayName"] == name)
            .map(|c| c["keyId"].as_str().unwrap().to_string())
            .collect()
    }
}

/// `application/x-www-form-urlencoded`, as azure_identity sends the token request.
fn form(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}

fn text(outcome: &StepOutcome, output: &str) -> String {
    outcome.outputs[output].as_str().unwrap_or_else(|| panic!("output {output} is a string")).to_string()
}

#[tokio::test]
async fn application_is_created_once_and_found_by_name_afterwards() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let first = rig.application("external-dns").await;
    assert_eq!(first.outputs["created"], json!(true));
    assert_eq!(first.outputs["display_name"], json!("external-dns"));
    let (object_id, app_id) = (text(&first, "object_id"), text(&first, "app_id"));
    assert_ne!(object_id, app_id, "object id and client id differ");
    assert!(first.evidence["requests"][0]["request_id"].is_string(), "{}", first.evidence);

    let second = rig.application("external-dns").await;
    assert_eq!(second.outputs["created"], json!(false));
    assert_eq!(text(&second, "object_id"), object_id);
    assert_eq!(text(&second, "app_id"), app_id);
    assert_eq!(second.evidence["wrote"], json!(false));
    assert_eq!(rig.graph_requests("POST", "/v1.0/applications"), vec![201], "exactly one create");
}

#[tokio::test]
async fn a_name_with_a_quote_is_escaped_not_injected() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let name = "O'Brien's dns";
    let first = rig.application(name).await;
    let second = rig.application(name).await;
    assert_eq!(second.outputs["created"], json!(false));
    assert_eq!(second.outputs["object_id"], first.outputs["object_id"]);
}

#[tokio::test]
async fn two_applications_with_the_name_fail_permanently() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let token = rig.admin_token().await;
    for _ in 0..2 {
        let url = format!("{}v1.0/applications", rig.sandbox.graph_endpoint());
        let resp = rig.http().post(url).bearer_auth(&token).json(&json!({"displayName": "twin"})).send().await.unwrap();
        assert_eq!(resp.status(), 201);
    }
    let err = rig.run(json!({"action": "application", "display_name": "twin"})).await.unwrap_err();
    assert_eq!(err.class, ErrorClass::Permanent);
    assert_eq!(err.code.as_deref(), Some("AmbiguousApplicationName"));
    assert!(err.message.contains("2 applications are named `twin`"), "{err}");
    assert_eq!(err.evidence["object_ids"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn service_principal_waits_out_application_replication() {
    let mut config = SandboxConfig::instant();
    // A window no test would sleep through: the sandbox clock is moved past it instead.
    config.application_replication_delay = Duration::from_secs(1800);
    let rig = Rig::start(config).await;
    let app = rig.application("external-dns").await;
    let app_id = text(&app, "app_id");
    let inputs = json!({"action": "service_principal", "app_id": app_id});

    let early = rig.run(inputs.clone()).await.unwrap_err();
    assert!(early.is_transient(), "replication delay must be retried: {early:?}");
    assert_eq!(early.code.as_deref(), Some("NoBackingApplicationObject"));
    assert!(early.evidence["request_id"].is_string(), "{}", early.evidence);

    rig.sandbox.clock().advance(Duration::from_secs(1800));
    let sp = rig.run(inputs.clone()).await.expect("after replication");
    assert_eq!(sp.outputs["created"], json!(true));
    assert_eq!(text(&sp, "app_id"), app_id);
    let principal_id = text(&sp, "object_id");
    assert_ne!(principal_id, text(&app, "object_id"), "the principal id is the service principal's own");

    let again = rig.run(inputs).await.unwrap();
    assert_eq!(again.outputs["created"], json!(false));
    assert_eq!(text(&again, "object_id"), principal_id);
    assert_eq!(rig.graph_requests("POST", "/v1.0/servicePrincipals"), vec![400, 201], "no second create");
}

#[tokio::test]
async fn password_secret_is_a_declared_secret_output_and_nowhere_else() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let app = rig.application("external-dns").await;
    let object_id = text(&app, "object_id");
    let inputs = json!({"action": "password", "object_id": object_id, "valid_for": "30days"});

    let declared = rig.graph.declared_outputs(&inputs, &BTreeMap::new());
    let secret_outputs: Vec<&str> = declared.iter().filter(|d| d.secret).map(|d| d.name.as_str()).collect();
    assert_eq!(secret_outputs, vec!["secret"]);
    assert!(!rig.graph.idempotent(&json!({ "action": "password" })), "the engine must ask before re-running a mint");
    assert!(rig.graph.idempotent(&json!({ "action": "application" })), "applications are found again by name");

    let minted = rig.run_step("dns-secret", inputs).await.unwrap();
    let secret = text(&minted, "secret");
    assert!(secret.len() >= 16, "a real secret");
    assert!(!minted.evidence.to_string().contains(&secret), "the secret is not evidence");
    assert_eq!(minted.evidence["credential_display_name"], json!("runbook:run-1/dns-secret"));
    assert_eq!(minted.evidence["replaced_orphaned_key_id"], Value::Null);
    assert!(text(&minted, "end_date_time").ends_with('Z'));
    assert_eq!(rig.credentials_named(&object_id, "runbook:run-1/dns-secret").await, vec![text(&minted, "key_id")]);

    // The secret is the application's real client secret: once it has a service principal
    // (as in a real tenant) it signs in.
    rig.run(json!({"action": "service_principal", "app_id": text(&app, "app_id")})).await.unwrap();
    let resp = rig.token(&text(&app, "app_id"), &secret).await;
    assert_eq!(resp.status(), 200);
}

/// A mint whose outputs were lost (killed after Graph answered, before the journal recorded it),
/// then the same step again: the orphan is revoked and exactly one credential of that name stays.
async fn mint_then_lose_outputs_then_rerun(rig: &Rig) -> (String, String, Result<StepOutcome, StepError>) {
    let app = rig.application("external-dns").await;
    let object_id = text(&app, "object_id");
    let inputs = json!({"action": "password", "object_id": object_id});
    let lost = rig.run_step("dns-secret", inputs.clone()).await.unwrap();
    let orphan = text(&lost, "key_id");
    drop(lost);
    let rerun = rig.run_step("dns-secret", inputs).await;
    (object_id, orphan, rerun)
}

#[tokio::test]
async fn rerun_after_an_interrupted_mint_replaces_the_orphan() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let (object_id, orphan, rerun) = mint_then_lose_outputs_then_rerun(&rig).await;
    let rerun = rerun.expect("the re-run mints a fresh secret");
    assert_eq!(rerun.evidence["replaced_orphaned_key_id"], json!(orphan));
    let key_id = text(&rerun, "key_id");
    assert_ne!(key_id, orphan);
    assert_eq!(rig.credentials_named(&object_id, "runbook:run-1/dns-secret").await, vec![key_id]);
    assert_eq!(rig.graph_requests("POST", "/addPassword").len(), 2);
}

/// Holds with or without removePassword in the sandbox: a re-run never leaves two credentials of
/// the step's name. Today the sandbox refuses removePassword, so the kind must fail without minting.
#[tokio::test]
async fn rerun_after_an_interrupted_mint_never_leaves_a_second_secret() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let (object_id, orphan, rerun) = mint_then_lose_outputs_then_rerun(&rig).await;
    let remaining = rig.credentials_named(&object_id, "runbook:run-1/dns-secret").await;
    assert_eq!(remaining.len(), 1, "exactly one credential of the step's name: {remaining:?}");
    assert_eq!(rig.graph_requests("POST", "/removePassword").len(), 1, "the orphan's removal was attempted");
    match rerun {
        Ok(outcome) => {
            assert_eq!(outcome.evidence["replaced_orphaned_key_id"], json!(orphan));
            assert_eq!(remaining, vec![text(&outcome, "key_id")]);
        }
        Err(error) => {
            assert_eq!(error.class, ErrorClass::Permanent, "{error:?}");
            assert_eq!(remaining, vec![orphan], "nothing new was minted");
            assert_eq!(rig.graph_requests("POST", "/addPassword").len(), 1);
        }
    }
}

#[tokio::test]
async fn a_forbidden_principal_gets_a_permanent_error_with_code_request_id_and_permission() {
    let forbidden = "0d0d0d0d-0000-4000-8000-00000000f0bd";
    let config = SandboxConfig { forbidden_principals: vec![forbidden.to_string()], ..SandboxConfig::instant() };
    let rig = Rig::start_as(config, forbidden, "forbidden-secret").await;
    let err = rig.run(json!({"action": "application", "display_name": "external-dns"})).await.unwrap_err();
    assert_eq!(err.class, ErrorClass::Permanent);
    assert_eq!(err.code.as_deref(), Some("Authorization_RequestDenied"));
    assert_eq!(err.evidence["status"], json!(403));
    assert!(err.evidence["request_id"].as_str().is_some_and(|id| !id.is_empty()), "{}", err.evidence);
    assert!(err.evidence["requests"].as_array().is_some_and(|r| r.len() == 2), "lookup, then the refused create");
    let hint = err.hint.expect("a hint");
    assert!(hint.contains("Application.ReadWrite.OwnedBy") && hint.contains("Application.ReadWrite.All"), "{hint}");
}

#[tokio::test]
async fn throttling_is_transient_with_the_servers_wait() {
    let faults = FaultModel { throttle_probability: 1.0, retry_after: Duration::from_secs(2), ..FaultModel::none() };
    let rig = Rig::start(SandboxConfig { faults, ..SandboxConfig::instant() }).await;
    let err = rig.run(json!({"action": "application", "display_name": "external-dns"})).await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
}

#[tokio::test]
async fn delete_is_fine_when_the_application_is_missing() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let by_name = rig.run(json!({"action": "delete_application", "display_name": "never-made"})).await.unwrap();
    assert_eq!(by_name.outputs["deleted"], json!(false));
    let unknown = "00000000-0000-4000-8000-00000000dead";
    let by_id = rig.run(json!({"action": "delete_application", "object_id": unknown})).await.unwrap();
    assert_eq!(by_id.outputs["deleted"], json!(false));

    let app = rig.application("short-lived").await;
    let object_id = text(&app, "object_id");
    let deleted = rig.run(json!({"action": "delete_application", "display_name": "short-lived"})).await.unwrap();
    assert_eq!(deleted.outputs["deleted"], json!(true));
    assert_eq!(text(&deleted, "object_id"), object_id);
    let again = rig.run(json!({"action": "delete_application", "object_id": object_id})).await.unwrap();
    assert_eq!(again.outputs["deleted"], json!(false));
}

#[tokio::test]
async fn a_sandbox_credential_never_reaches_the_real_graph() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    // Every setting of the sandbox but its Graph endpoint.
    let env = support::azure_env(&rig.sandbox, rig.dir.path());
    let graph = Graph::with_env(env.into_iter().filter(|(name, _)| *name != "RUNBOOK_GRAPH_ENDPOINT"));
    let ctx_rig = Rig { graph, ..rig };
    let err = ctx_rig.run(json!({"action": "application", "display_name": "x"})).await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("AzureSettingsInvalid"));
    assert!(err.message.contains("RUNBOOK_GRAPH_ENDPOINT"), "{err}");
}

/// A password's end date counts from the run's clock, not the machine's.
#[tokio::test]
async fn a_password_ends_valid_for_after_the_runs_clock() {
    let rig = Rig::start(SandboxConfig::instant()).await;
    let app = rig.application("dated").await;
    let clock = runbook_clock::Clock::simulated("2030-12-31T23:00:00Z".parse().unwrap());
    let ctx = StepContext::new("run-1", "step", std::env::temp_dir()).with_clock(clock);
    let inputs = json!({"action": "password", "object_id": text(&app, "object_id"), "valid_for": "30days"});
    let minted = rig.graph.run(&ctx, &inputs).await.expect("password");
    assert_eq!(text(&minted, "end_date_time"), "2031-01-30T23:00:00Z");
}
