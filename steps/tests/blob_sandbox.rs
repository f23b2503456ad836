//! The `blob` kind against the in-process sandbox, wired the way a runbook wires it: the storage
//! account and its public container through `arm`, a SAS from an `arm` post of listAccountSas
//! (or listServiceSas), then the OIDC documents uploaded with `blob` and read anonymously over
//! HTTPS, the way Entra ID reads the issuer.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use runbook_sandbox::{SANDBOX_CLIENT_OBJECT_ID, Sandbox, SandboxConfig, Service};
use runbook_steps::{Arm, Blob, ErrorClass, Keypair, Oidc, OutputSpec, StepContext, StepError, StepKind, StepOutcome};
use serde_json::{Value, json};

const STORAGE_API: &str = "2025-06-01";
const ACCOUNT: &str = "oidcissuerblob";

fn context(dir: &Path, specs: BTreeMap<String, OutputSpec>, secrets: Vec<String>) -> StepContext {
    StepContext::new("run-1", "step", dir).with_output_specs(specs).with_secrets(secrets)
}

/// A sandbox with a storage account (public access allowed) and a public `oidc` container,
/// plus `arm` and `blob` kinds configured for it as `rehearse` would configure them.
struct Rig {
    sandbox: Sandbox,
    arm: Arm,
    /// Trusts the sandbox CA; holds no credential (SAS steps need none).
    blob: Blob,
    /// Trusts the sandbox CA and signs in to its Entra endpoint (bearer steps).
    blob_with_login: Blob,
    account_id: String,
    container_url: String,
    dir: tempfile::TempDir,
}

impl Rig {
    async fn start() -> Rig {
        let sandbox = Sandbox::start(SandboxConfig::instant()).await.expect("sandbox starts");
        let dir = tempfile::tempdir().unwrap();
        let ca = support::write_ca(&sandbox, dir.path());
        let env = sandbox.azure_env(&ca);
        let arm = Arm::with_env(env.clone());
        let blob = Blob::with_env([("RUNBOOK_CA_FILE", ca.display().to_string())]);
        let blob_with_login = Blob::with_env(env);
        let mut rig =
            Rig { sandbox, arm, blob, blob_with_login, account_id: String::new(), container_url: String::new(), dir };
        rig.provision().await;
        rig
    }

    async fn arm(&self, inputs: Value, specs: BTreeMap<String, OutputSpec>) -> StepOutcome {
        self.arm.run(&context(self.dir.path(), specs, Vec::new()), &inputs).await.expect("arm step")
    }

    /// The issuer's storage account and public container, through ARM as the runbook does it.
    async fn provision(&mut self) {
        let group = "/subscriptions/{subscription}/resourceGroups/rg-oidc";
        self.arm(
            json!({"action": "ensure", "id": group, "api_version": "2025-04-01", "body": {"location": "eastus"}}),
            BTreeMap::new(),
        )
        .await;
        let account_id = format!("{group}/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}");
        let account_body = json!({"location": "eastus", "kind": "StorageV2", "sku": {"name": "Standard_LRS"},
            "properties": {"allowBlobPublicAccess": true, "minimumTlsVersion": "TLS1_2"}});
        let specs = BTreeMap::from([("blob_endpoint".to_string(), pointer("/properties/primaryEndpoints/blob"))]);
        let account = self
            .arm(json!({"action": "ensure", "id": account_id, "api_version": STORAGE_API, "body": account_body}), specs)
            .await;
        let endpoint = account.outputs["blob_endpoint"].as_str().expect("the account reports its blob endpoint");
        assert_eq!(endpoint, self.sandbox.blob_endpoint(ACCOUNT));
        let container_id = format!("{account_id}/blobServices/default/containers/oidc");
        self.arm(
            json!({"action": "ensure", "id": container_id, "api_version": STORAGE_API,
                "body": {"properties": {"publicAccess": "Blob"}}}),
            BTreeMap::new(),
        )
        .await;
        self.account_id = account_id;
        self.container_url = format!("{}oidc", endpoint);
    }

    /// An account SAS from ARM's listAccountSas, extracted as a runbook's secret output would be.
    async fn account_sas(&self, permissions: &str) -> String {
        let expiry = (jiff_now_plus_hours(1)).to_string();
        let inputs = json!({"action": "post", "id": self.account_id, "operation": "ListAccountSas", "api_version": STORAGE_API,
            "body": {"signedServices": "b", "signedResourceTypes": "sco", "signedPermission": permissions,
                     "signedProtocol": "https", "signedExpiry": expiry, "keyToSign": "key1"}});
        let specs = BTreeMap::from([("sas".to_string(), pointer("/accountSasToken"))]);
        let declared = self.arm.declared_outputs(&inputs, &specs);
        assert!(declared.iter().find(|o| o.name == "sas").unwrap().secret, "a SAS is a secret output");
        self.arm(inputs, specs).await.outputs["sas"].as_str().expect("accountSasToken").to_string()
    }

    /// A container-scoped service SAS from ARM's listServiceSas.
    async fn service_sas(&self, permissions: &str) -> String {
        let inputs = json!({"action": "post", "id": self.account_id, "operation": "listServiceSas", "api_version": STORAGE_API,
            "body": {"canonicalizedResource": format!("/blob/{ACCOUNT}/oidc"), "signedResource": "c",
                     "signedPermission": permissions, "signedProtocol": "https", "signedExpiry": jiff_now_plus_hours(1)}});
        let specs = BTreeMap::from([("sas".to_string(), pointer("/serviceSasToken"))]);
        self.arm(inputs, specs).await.outputs["sas"].as_str().expect("serviceSasToken").to_string()
    }

    async fn blob(&self, inputs: Value, secrets: Vec<String>) -> Result<StepOutcome, StepError> {
        self.blob.run(&context(self.dir.path(), BTreeMap::new(), secrets), &inputs).await
    }

    /// The OIDC documents as the product writes them (keypair, then oidc), issuer = the container.
    async fn oidc_documents(&self) -> StepOutcome {
        let ctx = context(self.dir.path(), BTreeMap::new(), Vec::new());
        let keys = json!({"private_key_path": "sa.key", "public_key_path": "sa.pub", "bits": 2048});
        Keypair.run(&ctx, &keys).await.expect("key pair");
        let docs = json!({"issuer_url": self.container_url, "public_key_path": "sa.pub",
            "discovery_path": "openid-configuration.json", "jwks_path": "jwks.json"});
        Oidc.run(&ctx, &docs).await.expect("oidc documents")
    }

    /// An anonymous GET over HTTPS trusting the sandbox CA: (status, bytes, content type).
    async fn anonymous_get(&self, url: &str) -> (u16, Vec<u8>, String) {
        let ca = reqwest::Certificate::from_pem(self.sandbox.ca_pem().as_bytes()).unwrap();
        let client = reqwest::Client::builder().add_root_certificate(ca).build().unwrap();
        let response = client.get(url).send().await.expect("GET");
        let status = response.status().as_u16();
        let content_type =
            response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        (status, response.bytes().await.unwrap().to_vec(), content_type)
    }

    fn blob_puts(&self) -> usize {
        self.sandbox.request_log().iter().filter(|r| r.service == Service::Blob && r.method == "PUT").count()
    }
}

fn pointer(pointer: &str) -> OutputSpec {
    OutputSpec { json_pointer: Some(pointer.into()), secret: true, ..Default::default() }
}

fn jiff_now_plus_hours(hours: i64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(hours)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn upload_file(container_url: &str, name: &str, file: &str, sas: &str) -> Value {
    json!({"action": "upload", "container_url": container_url, "blob_name": name, "file": file, "sas": sas})
}

fn signature(sas: &str) -> String {
    let url = reqwest::Url::parse(&format!("https://x.invalid/?{sas}")).unwrap();
    url.query_pairs().find(|(k, _)| k == "sig").map(|(_, v)| v.into_owned()).unwrap()
}

#[tokio::test]
async fn publishes_the_oidc_documents_with_a_sas_from_list_account_sas() {
    let rig = Rig::start().await;
    let sas = rig.account_sas("rwc").await;
    let docs = rig.oidc_documents().await;

    for (name_output, file_output) in [("discovery_blob_name", "discovery_path"), ("jwks_blob_name", "jwks_path")] {
        let name = docs.outputs[name_output].as_str().unwrap();
        let file = docs.outputs[file_output].as_str().unwrap();
        let first =
            rig.blob(upload_file(&rig.container_url, name, file, &sas), vec![sas.clone()]).await.expect("upload");
        assert_eq!(first.outputs["uploaded"], json!(true));
        assert_eq!(first.outputs["url"], json!(format!("{}/{name}", rig.container_url)));
        let written = std::fs::read(file).unwrap();
        assert_eq!(rig.sandbox.blob_contents(ACCOUNT, "oidc", name).as_deref(), Some(written.as_slice()));
        let reported = format!("{} {}", Value::Object(first.outputs.clone()), first.evidence);
        assert!(!reported.contains(&signature(&sas)) && !reported.contains("sig="), "{reported}");
    }
    let puts = rig.blob_puts();

    // The discovery document is public, byte for byte, as JSON, at <issuer>/.well-known/openid-configuration.
    let discovery_url = format!("{}/.well-known/openid-configuration", rig.container_url);
    let (status, body, content_type) = rig.anonymous_get(&discovery_url).await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "application/json");
    assert_eq!(body, std::fs::read(docs.outputs["discovery_path"].as_str().unwrap()).unwrap());
    let discovery: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(discovery["issuer"], json!(rig.container_url));

    // Resuming the step: the same content is already there, so nothing is written.
    let name = docs.outputs["jwks_blob_name"].as_str().unwrap();
    let file = docs.outputs["jwks_path"].as_str().unwrap();
    let again = rig.blob(upload_file(&rig.container_url, name, file, &sas), vec![sas.clone()]).await.unwrap();
    assert_eq!(again.outputs["uploaded"], json!(false));
    assert_eq!(rig.blob_puts(), puts, "an unchanged blob must not be written again");
}

#[tokio::test]
async fn a_tampered_sas_is_refused_permanently_without_being_shown() {
    let rig = Rig::start().await;
    let sas = rig.account_sas("rwc").await;
    // Claim a permission that was never signed: the signature no longer matches the request.
    let tampered = sas.replace("sp=rwc", "sp=rwcd");
    assert_ne!(tampered, sas, "the SAS carries sp=rwc");
    let inputs = json!({"action": "upload", "container_url": rig.container_url, "blob_name": "openid/v1/jwks",
        "content": "{\"keys\":[]}", "sas": tampered});
    let error = rig.blob(inputs, Vec::new()).await.expect_err("tampered SAS");
    assert_eq!(error.class, ErrorClass::Permanent, "{error}");
    assert_eq!(error.code.as_deref(), Some("AuthenticationFailed"), "{error}");
    assert!(error.hint.as_deref().unwrap_or_default().contains("listAccountSas"));
    assert_eq!(error.evidence["status"], json!(403));
    let shown = format!("{error} {}", serde_json::to_string(&error).unwrap());
    assert!(!shown.contains(&signature(&sas)) && !shown.contains("sig="), "{shown}");
    assert!(rig.sandbox.blob_contents(ACCOUNT, "oidc", "openid/v1/jwks").is_none());
}

#[tokio::test]
async fn a_service_sas_for_the_container_uploads_too() {
    let rig = Rig::start().await;
    let sas = rig.service_sas("rcw").await;
    let inputs = json!({"action": "upload", "container_url": rig.container_url, "blob_name": "openid/v1/jwks",
        "content": "{\"keys\":[]}", "sas": format!("?{sas}")});
    let outcome = rig.blob(inputs.clone(), vec![sas.clone()]).await.expect("upload with a service SAS");
    assert_eq!(outcome.outputs["uploaded"], json!(true));
    assert_eq!(outcome.evidence["compared_existing"], json!(true));
    let again = rig.blob(inputs, vec![sas]).await.unwrap();
    assert_eq!(again.outputs["uploaded"], json!(false));
}

#[tokio::test]
async fn bearer_auth_uploads_with_a_storage_token_from_the_configured_credential() {
    let rig = Rig::start().await;
    let inputs = json!({"action": "upload", "container_url": rig.container_url, "blob_name": ".well-known/openid-configuration",
        "content": "{\"issuer\":\"x\"}", "auth": "bearer"});
    let ctx = context(rig.dir.path(), BTreeMap::new(), Vec::new());

    // As in Azure, a token alone is not enough: the caller needs a data role on the account.
    let refused = rig.blob_with_login.run(&ctx, &inputs).await.expect_err("no data role yet");
    assert_eq!(refused.code.as_deref(), Some("AuthorizationPermissionMismatch"));
    let scope = rig.account_id.replace("{subscription}", rig.sandbox.subscription_id());
    let data_contributor = "ba92f5b4-2d11-453d-a403-e96b0029c9fe";
    rig.arm(
        json!({"action": "assign_role", "scope": scope, "role_definition_id": data_contributor, "principal_id": SANDBOX_CLIENT_OBJECT_ID}),
        BTreeMap::new(),
    )
    .await;

    let outcome = rig.blob_with_login.run(&ctx, &inputs).await.expect("bearer upload");
    assert_eq!(outcome.outputs["uploaded"], json!(true));
    assert_eq!(outcome.evidence["auth"], json!("bearer"));
    assert_eq!(
        rig.sandbox.blob_contents(ACCOUNT, "oidc", ".well-known/openid-configuration").as_deref(),
        Some(b"{\"issuer\":\"x\"}".as_slice())
    );
    let tokens = rig.sandbox.request_log().iter().filter(|r| r.service == Service::Entra).count();
    assert!(tokens >= 1, "the token came from the sandbox's Entra endpoint");

    // ensure_container on the data plane with the same token: the container exists already
    // (created through ARM) with the same public access.
    let ensure = json!({"action": "ensure_container", "container_url": rig.container_url, "public_access": "blob", "auth": "bearer"});
    let existing = rig.blob_with_login.run(&ctx, &ensure).await.expect("existing container");
    assert_eq!(existing.outputs["created"], json!(false));
    let differs = json!({"action": "ensure_container", "container_url": rig.container_url, "auth": "bearer"});
    let error = rig.blob_with_login.run(&ctx, &differs).await.expect_err("public access differs");
    assert_eq!(error.code.as_deref(), Some("ContainerPublicAccessDiffers"));
}
