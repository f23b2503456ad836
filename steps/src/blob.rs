//! The `blob` step kind: Blob Storage data plane through the official `azure_storage_blob`
//! crate. Its job in the product is publishing the OIDC discovery document and JWKS to the
//! issuer's public container. Authorized by a SAS (typically an earlier `arm` post of
//! listAccountSas / listServiceSas) or a bearer token from the configured Azure credential.

mod client;
mod content;
mod errors;
mod operations;
mod sas;
mod target;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use azure_core::credentials::TokenCredential;
use azure_core::http::Transport;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use self::client::Authorization;
use self::content::Payload;
use self::errors::Failure;
use self::operations::PublicAccess;
use self::sas::Sas;
use self::target::{ContainerUrl, display_url};
use crate::azure::settings::CA_FILE_VAR;
use crate::azure::settings::SettingsSource;
use crate::azure::{AzureSettings, credential, transport};
use crate::kind::KindNeed;
use crate::kind::{parse_inputs, schema_of};
use crate::{OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome};

/// Upload a blob (unless the same content is there already) or ensure a container. Where the
/// extra CA and the credential come from is read from the environment when a step runs (the
/// same variables as the `arm` kind), never from the runbook.
pub struct Blob {
    env: SettingsSource,
    /// Built on first use and shared by later steps.
    transport: tokio::sync::OnceCell<Transport>,
    /// Built on the first bearer step; azure_identity caches tokens inside the credential.
    credential: tokio::sync::OnceCell<Arc<dyn TokenCredential>>,
}

impl Default for Blob {
    fn default() -> Self {
        Blob {
            env: SettingsSource::Process,
            transport: tokio::sync::OnceCell::new(),
            credential: tokio::sync::OnceCell::new(),
        }
    }
}

impl Blob {
    /// A `blob` kind that reads its settings from `vars` instead of the process environment.
    pub fn with_env<K: Into<String>, V: Into<String>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        Blob { env: SettingsSource::fixed(vars), ..Blob::default() }
    }

    fn var(&self, name: &str) -> Option<String> {
        self.env.var(name)
    }

    async fn transport(&self) -> Result<Transport, StepError> {
        self.transport
            .get_or_try_init(|| async {
                transport::transport(
                    self.var(CA_FILE_VAR).map(std::path::PathBuf::from).as_deref(),
                    self.var(crate::net::SSL_CERT_FILE_VAR).map(std::path::PathBuf::from).as_deref(),
                )
            })
            .await
            .cloned()
    }

    /// The Entra credential the `arm` kind would use. Only a bearer step needs the full Azure
    /// settings, so a SAS step works on a machine with no Azure login at all.
    async fn credential(&self, transport: &Transport) -> Result<Arc<dyn TokenCredential>, StepError> {
        self.credential
            .get_or_try_init(|| async {
                let settings = AzureSettings::from_lookup(&|name| self.var(name))?;
                credential::credential(&settings, transport)
            })
            .await
            .cloned()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BlobAction {
    /// Upload `file` or `content` as a block blob, unless the blob already has the same MD5
    /// and content type.
    Upload,
    /// Create the container unless it exists. For real Azure the issuer's public container is
    /// normally created through ARM (blobServices/default/containers with publicAccess); this is
    /// for Azurite and for accounts where only the data plane is reachable.
    EnsureContainer,
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BlobAuth {
    /// A shared access signature given in `sas`.
    Sas,
    /// A token for https://storage.azure.com/.default from the configured Azure credential; the
    /// principal needs Storage Blob Data Contributor on the account or container.
    Bearer,
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BlobPublicAccess {
    /// Anonymous reads of blobs (what the OIDC issuer needs).
    Blob,
    /// Anonymous reads of blobs and listing of the container.
    Container,
    None,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlobInputs {
    pub action: BlobAction,
    /// The container, e.g. https://acct.blob.core.windows.net/oidc, or path-style
    /// https://127.0.0.1:PORT/acct/oidc for the sandbox or Azurite. No query: the SAS goes in `sas`.
    pub container_url: String,
    /// upload: the blob's name, e.g. `.well-known/openid-configuration` or `openid/v1/jwks`.
    pub blob_name: Option<String>,
    /// upload: the file to upload, relative to the run's working directory.
    pub file: Option<String>,
    /// upload: the content to upload, instead of `file`.
    pub content: Option<String>,
    /// upload: the blob's Content-Type (default from the name: application/json for `.json` and
    /// the OIDC documents, application/octet-stream when unknown).
    pub content_type: Option<String>,
    /// A SAS token (the query string, with or without `?`): a secret, typically the
    /// `accountSasToken` of an earlier `arm` post of listAccountSas.
    pub sas: Option<String>,
    /// How requests are authorized (default: `sas` when `sas` is given).
    pub auth: Option<BlobAuth>,
    /// ensure_container: anonymous read access of a new container (default none).
    pub public_access: Option<BlobPublicAccess>,
}

fn invalid(message: impl Into<String>) -> StepError {
    StepError::invalid_inputs(message)
}

impl BlobInputs {
    fn action_name(&self) -> &'static str {
        match self.action {
            BlobAction::Upload => "upload",
            BlobAction::EnsureContainer => "ensure_container",
        }
    }

    /// Inputs that mean nothing for the action are refused rather than silently ignored.
    fn check_applicable(&self) -> Result<(), StepError> {
        let action = self.action_name();
        let upload_only = [
            ("blob_name", self.blob_name.is_some()),
            ("file", self.file.is_some()),
            ("content", self.content.is_some()),
            ("content_type", self.content_type.is_some()),
        ];
        match self.action {
            BlobAction::Upload => {
                if self.public_access.is_some() {
                    return Err(invalid("`public_access` does not apply to action `upload`"));
                }
                if self.blob_name.as_deref().is_none_or(|n| n.trim().is_empty()) {
                    return Err(invalid("`upload` needs `blob_name`"));
                }
                if self.file.is_some() == self.content.is_some() {
                    return Err(invalid("`upload` needs exactly one of `file` and `content`"));
                }
            }
            BlobAction::EnsureContainer => {
                if let Some((name, _)) = upload_only.iter().find(|(_, given)| *given) {
                    return Err(invalid(format!("`{name}` does not apply to action `{action}`")));
                }
            }
        }
        Ok(())
    }

    fn auth_mode(&self) -> Result<BlobAuth, StepError> {
        match (self.auth, self.sas.is_some()) {
            (Some(BlobAuth::Bearer), true) => Err(invalid("`sas` does not apply with auth = \"bearer\"")),
            (Some(BlobAuth::Sas), false) => Err(invalid("auth = \"sas\" needs `sas`")),
            (Some(mode), _) => Ok(mode),
            (None, true) => Ok(BlobAuth::Sas),
            (None, false) => Err(invalid("the step needs `sas` (a SAS token) or auth = \"bearer\"").with_hint(
                "get a SAS from an `arm` post of listAccountSas on the storage account, or use auth = \"bearer\" with the Storage Blob Data Contributor role",
            )),
        }
    }

    fn public_access(&self) -> PublicAccess {
        match self.public_access {
            None | Some(BlobPublicAccess::None) => PublicAccess::None,
            Some(BlobPublicAccess::Blob) => PublicAccess::Blob,
            Some(BlobPublicAccess::Container) => PublicAccess::Container,
        }
    }
}

const UPLOAD_OUTPUTS: &[&str] = &["url", "etag", "uploaded", "content_md5"];
const CONTAINER_OUTPUTS: &[&str] = &["url", "etag", "created", "public_access"];

#[async_trait]
impl StepKind for Blob {
    fn default_attempts(&self) -> u32 {
        6
    }

    fn name(&self) -> &'static str {
        "blob"
    }

    // Its blobs are not among what `verify` expects (made_objects stays Nothing): an issuer's
    // documents are checked through the `oidc` step that wrote them.
    fn needs(&self) -> &'static [KindNeed] {
        &[KindNeed::BlobStorage]
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<BlobInputs>()
    }

    fn declared_outputs(&self, inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        let names: Vec<&str> = match inputs.get("action").and_then(Value::as_str) {
            Some("upload") => UPLOAD_OUTPUTS.to_vec(),
            Some("ensure_container") => CONTAINER_OUTPUTS.to_vec(),
            // Not known before the step runs: every output either action may produce.
            _ => {
                let mut all = UPLOAD_OUTPUTS.to_vec();
                all.extend(CONTAINER_OUTPUTS.iter().filter(|n| !UPLOAD_OUTPUTS.contains(n)));
                all
            }
        };
        // None of them is secret: URLs are reported without the SAS.
        names.into_iter().map(|n| OutputDecl { name: n.to_string(), secret: false }).collect()
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    async fn run(&self, ctx: &StepContext, inputs: &Value) -> Result<StepOutcome, StepError> {
        let inputs: BlobInputs = parse_inputs(inputs)?;
        inputs.check_applicable()?;
        let container = ContainerUrl::parse(&inputs.container_url)?;
        let auth_mode = inputs.auth_mode()?;
        let transport = self.transport().await?;
        let auth = match auth_mode {
            BlobAuth::Sas => Authorization::Sas(Sas::parse(inputs.sas.as_deref().unwrap_or_default())?),
            BlobAuth::Bearer => Authorization::Bearer(self.credential(&transport).await?),
        };
        // The runner's own secrets too: a SAS that came in another form is still scrubbed.
        let scrub = |text: &str| ctx.redact(&auth.scrub(text));
        let result = match inputs.action {
            BlobAction::Upload => upload(ctx, &inputs, &container, &auth, &transport, &scrub).await,
            BlobAction::EnsureContainer => ensure_container(ctx, &inputs, &container, &auth, &transport, &scrub).await,
        };
        result.map_err(|mut error| {
            error.message = scrub(&error.message);
            attach(&mut error.evidence, "action", json!(inputs.action_name()));
            attach(&mut error.evidence, "auth", json!(auth.mode().as_str()));
            error
        })
    }
}

fn attach(evidence: &mut Value, key: &str, value: Value) {
    if !evidence.is_object() {
        *evidence = json!({});
    }
    if let Value::Object(map) = evidence {
        map.entry(key.to_string()).or_insert(value);
    }
}

async fn upload(
    ctx: &StepContext,
    inputs: &BlobInputs,
    container: &ContainerUrl,
    auth: &Authorization,
    transport: &Transport,
    scrub: &(dyn Fn(&str) -> String + Sync),
) -> Result<StepOutcome, StepError> {
    let blob_name = inputs.blob_name.as_deref().unwrap_or_default();
    let blob_url = container.blob_url(blob_name)?;
    let bytes = match (&inputs.file, &inputs.content) {
        (Some(file), _) => content::read_file(&ctx.resolve_path(file)?)?,
        (None, Some(text)) => text.clone().into_bytes(),
        (None, None) => Vec::new(),
    };
    let content_type =
        inputs.content_type.clone().unwrap_or_else(|| content::content_type_for(blob_name, inputs.file.as_deref()));
    let payload = Payload::new(bytes, content_type);
    let shown_url = display_url(&blob_url);
    let failure = Failure { doing: "uploading", url: &shown_url, auth: auth.mode(), scrub };
    let client = client::blob_client(&blob_url, auth, transport)?;
    let report = operations::upload(&client, &payload, &failure, &ctx.cancel).await?;

    let mut outputs = Map::new();
    outputs.insert("url".into(), json!(shown_url));
    outputs.insert("etag".into(), json!(report.etag));
    outputs.insert("uploaded".into(), json!(report.uploaded));
    outputs.insert("content_md5".into(), json!(report.content_md5));
    let evidence = json!({
        "action": "upload",
        "auth": auth.mode().as_str(),
        "url": shown_url,
        "bytes": payload.bytes.len(),
        "content_type": payload.content_type,
        "content_md5": report.content_md5,
        "etag": report.etag,
        "uploaded": report.uploaded,
        "compared_existing": report.compared,
    });
    Ok(StepOutcome { outputs, evidence })
}

async fn ensure_container(
    ctx: &StepContext,
    inputs: &BlobInputs,
    container: &ContainerUrl,
    auth: &Authorization,
    transport: &Transport,
    scrub: &(dyn Fn(&str) -> String + Sync),
) -> Result<StepOutcome, StepError> {
    let shown_url = display_url(container.url());
    let failure = Failure { doing: "creating container", url: &shown_url, auth: auth.mode(), scrub };
    let client = client::container_client(container.url(), auth, transport)?;
    let report = operations::ensure_container(&client, inputs.public_access(), &failure, &ctx.cancel).await?;

    let mut outputs = Map::new();
    outputs.insert("url".into(), json!(shown_url));
    outputs.insert("etag".into(), json!(report.etag));
    outputs.insert("created".into(), json!(report.created));
    outputs.insert("public_access".into(), json!(report.public_access));
    let evidence = json!({
        "action": "ensure_container",
        "auth": auth.mode().as_str(),
        "url": shown_url,
        "created": report.created,
        "public_access": report.public_access,
        "etag": report.etag,
    });
    Ok(StepOutcome { outputs, evidence })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(value: Value) -> BlobInputs {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn upload_needs_a_name_and_one_source() {
        let base =
            json!({"action": "upload", "container_url": "https://a.blob.core.windows.net/c", "sas": "sv=1&sig=x"});
        let mut missing_name = base.clone();
        missing_name["content"] = json!("{}");
        assert!(inputs(missing_name).check_applicable().is_err());
        let mut both = base.clone();
        both["blob_name"] = json!("x.json");
        both["content"] = json!("{}");
        both["file"] = json!("x.json");
        assert!(inputs(both).check_applicable().is_err());
        let mut ok = base;
        ok["blob_name"] = json!("x.json");
        ok["content"] = json!("{}");
        assert!(inputs(ok).check_applicable().is_ok());
    }

    #[test]
    fn auth_is_a_sas_or_bearer_never_both() {
        let url = "https://a.blob.core.windows.net/c";
        let of = |extra: Value| {
            let mut v = json!({"action": "ensure_container", "container_url": url});
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            inputs(v).auth_mode()
        };
        assert_eq!(of(json!({"sas": "sv=1&sig=x"})).unwrap(), BlobAuth::Sas);
        assert_eq!(of(json!({"auth": "bearer"})).unwrap(), BlobAuth::Bearer);
        assert!(of(json!({})).is_err());
        assert!(of(json!({"auth": "bearer", "sas": "sv=1&sig=x"})).is_err());
        assert!(of(json!({"auth": "sas"})).is_err());
    }

    #[test]
    fn declared_outputs_follow_the_action() {
        let names = |action: &str| -> Vec<String> {
            Blob::default()
                .declared_outputs(&json!({"action": action}), &BTreeMap::new())
                .into_iter()
                .inspect(|o| assert!(!o.secret))
                .map(|o| o.name)
                .collect()
        };
        assert_eq!(names("upload"), ["url", "etag", "uploaded", "content_md5"]);
        assert_eq!(names("ensure_container"), ["url", "etag", "created", "public_access"]);
        assert_eq!(names("{{ steps.x.action }}").len(), 6);
    }
}
