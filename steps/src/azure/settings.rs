//! Where the `arm` kind talks to and as whom: read from the environment when a step runs, never
//! when a runbook is validated, so `plan` works on a machine that has no Azure at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use azure_core::credentials::Secret;
use azure_core::http::Url;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::StepError;

pub const ARM_ENDPOINT_VAR: &str = "RUNBOOK_ARM_ENDPOINT";
pub const AUTHORITY_HOST_VAR: &str = "RUNBOOK_AUTHORITY_HOST";
pub const CREDENTIAL_VAR: &str = "RUNBOOK_AZURE_CREDENTIAL";
pub const CREDENTIALS_FILE_VAR: &str = "RUNBOOK_AZURE_CREDENTIALS_FILE";
pub const CA_FILE_VAR: &str = "RUNBOOK_CA_FILE";
pub const ARM_SCOPE_VAR: &str = "RUNBOOK_ARM_SCOPE";
pub const GRAPH_ENDPOINT_VAR: &str = "RUNBOOK_GRAPH_ENDPOINT";
pub const GRAPH_SCOPE_VAR: &str = "RUNBOOK_GRAPH_SCOPE";

const DEFAULT_ARM_ENDPOINT: &str = "https://management.azure.com/";
const DEFAULT_AUTHORITY_HOST: &str = "https://login.microsoftonline.com/";
const DEFAULT_ARM_SCOPE: &str = "https://management.azure.com/.default";
const DEFAULT_GRAPH_ENDPOINT: &str = "https://graph.microsoft.com/";
const DEFAULT_GRAPH_SCOPE: &str = "https://graph.microsoft.com/.default";

/// How the runner obtains its ARM token (`RUNBOOK_AZURE_CREDENTIAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CredentialChoice {
    /// The operator's own login: Azure CLI, then Azure Developer CLI (azure_identity's developer tools).
    Cli,
    /// A service principal's client secret (AZURE_* variables or the credentials file).
    ClientSecret,
    /// A federated token file, as on a Kubernetes pod with workload identity.
    WorkloadIdentity,
    /// The managed identity of the machine (IMDS or App Service).
    ManagedIdentity,
    /// A client secret too, but only against loopback endpoints: a rehearsal can never reach Azure.
    Sandbox,
}

impl CredentialChoice {
    fn parse(text: &str) -> Option<Self> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "cli" => Self::Cli,
            "client-secret" => Self::ClientSecret,
            "workload-identity" => Self::WorkloadIdentity,
            "managed-identity" => Self::ManagedIdentity,
            "sandbox" => Self::Sandbox,
            _ => return None,
        })
    }
}

/// A service principal with a secret. Debug never shows the secret (azure_core's `Secret`).
#[derive(Clone, Debug)]
pub struct ServicePrincipal {
    pub tenant_id: String,
    pub client_id: String,
    pub client_secret: Secret,
}

/// Everything the `arm` kind needs to reach ARM.
#[derive(Clone, Debug)]
pub struct AzureSettings {
    pub arm_endpoint: Url,
    pub authority_host: String,
    /// The token scope for ARM (`https://management.azure.com/.default`; sovereign clouds differ).
    pub arm_scope: String,
    /// Microsoft Graph, for the `graph` kind (`https://graph.microsoft.com/`; the sandbox's elsewhere).
    pub graph_endpoint: Url,
    /// The token scope for Graph (`https://graph.microsoft.com/.default`).
    pub graph_scope: String,
    pub credential: CredentialChoice,
    /// An extra CA certificate (PEM) to trust, e.g. the sandbox's. Trusted only when set.
    pub ca_file: Option<PathBuf>,
    /// `SSL_CERT_FILE`: the roots to trust instead of the system's (a TLS-inspecting proxy's
    /// bundle; the sandbox's CA when it answers as Azure's public host names).
    pub ssl_cert_file: Option<PathBuf>,
    pub subscription_id: Option<String>,
    /// Set for `client-secret` and `sandbox`.
    pub service_principal: Option<ServicePrincipal>,
    /// Tenant and client id for `workload-identity` / a user-assigned `managed-identity`.
    pub tenant_id: Option<String>,
    pub client_id: Option<String>,
    pub federated_token_file: Option<PathBuf>,
}

/// Where a kind reads its settings: the process environment, or a fixed map (tests, or an
/// embedding program that configures Azure itself).
#[derive(Clone, Debug, Default)]
pub enum SettingsSource {
    #[default]
    Process,
    Fixed(BTreeMap<String, String>),
}

impl SettingsSource {
    pub fn fixed<K: Into<String>, V: Into<String>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        SettingsSource::Fixed(vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }

    pub fn load(&self) -> Result<AzureSettings, StepError> {
        match self {
            SettingsSource::Process => AzureSettings::from_env(),
            SettingsSource::Fixed(vars) => AzureSettings::from_lookup(&|name| vars.get(name).cloned()),
        }
    }

    /// Which Azure these settings point at ([`AzureTarget`]); never fails, never connects.
    pub fn target(&self) -> AzureTarget {
        let credential = self.var(CREDENTIAL_VAR).map(|c| c.to_ascii_lowercase()).unwrap_or_else(|| "cli".into());
        // Under the sandbox credential, the CA it trusts; under any other, a trusted CA that a
        // sandbox generated (one answering as Azure's public host names, reached with a real
        // user's settings): either way the instance, never to be confused with real Azure.
        let sandbox_instance = if credential == "sandbox" {
            self.var(CA_FILE_VAR).map(|p| ca_fingerprint(&p))
        } else {
            [crate::net::SSL_CERT_FILE_VAR, CA_FILE_VAR]
                .iter()
                .filter_map(|name| self.var(name))
                .find(|path| is_sandbox_ca_file(Path::new(path)))
                .map(|p| ca_fingerprint(&p))
        };
        AzureTarget {
            arm_endpoint: self.var(ARM_ENDPOINT_VAR).unwrap_or_else(|| DEFAULT_ARM_ENDPOINT.into()),
            authority_host: self
                .var(AUTHORITY_HOST_VAR)
                .or_else(|| self.var("AZURE_AUTHORITY_HOST"))
                .unwrap_or_else(|| DEFAULT_AUTHORITY_HOST.into()),
            graph_endpoint: self.var(GRAPH_ENDPOINT_VAR).unwrap_or_else(|| DEFAULT_GRAPH_ENDPOINT.into()),
            credential,
            sandbox_instance,
            tenant: self.var("AZURE_TENANT_ID"),
            subscription: self.var("AZURE_SUBSCRIPTION_ID"),
        }
    }

    /// One setting, trimmed; None when unset or blank.
    pub fn var(&self, name: &str) -> Option<String> {
        let value = match self {
            SettingsSource::Process => std::env::var(name).ok(),
            SettingsSource::Fixed(vars) => vars.get(name).cloned(),
        };
        value.map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
    }
}

/// Which Azure the settings point at, read without any request and without failing: journaled
/// with each run so that a resume can tell whether it would act on the same Azure. The built-in
/// sandbox lives in memory for as long as the command that started it, so a run made against one
/// can only be continued against that very instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AzureTarget {
    /// `cli`, `client-secret`, `workload-identity`, `managed-identity` or `sandbox`, as set.
    pub credential: String,
    pub arm_endpoint: String,
    pub authority_host: String,
    pub graph_endpoint: String,
    /// Under the sandbox credential, `sha256:<hex>` of the CA it trusts (RUNBOOK_CA_FILE): every
    /// sandbox generates its own CA, so this names the instance (its ports may be reused).
    pub sandbox_instance: Option<String>,
    /// AZURE_TENANT_ID and AZURE_SUBSCRIPTION_ID when set (absent from runs journaled before
    /// they were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription: Option<String>,
}

impl AzureTarget {
    /// Whether this is the built-in sandbox: its own credential, or a sandbox's CA trusted
    /// (the sandbox answering as Azure's public host names).
    pub fn is_sandbox(&self) -> bool {
        self.credential == "sandbox" || self.sandbox_instance.is_some()
    }

    /// Whether work done against `other` stands for this Azure: the same sandbox instance, or
    /// for real Azure the same cloud endpoints and (where both are known) the same tenant and
    /// subscription. How one signs in does not matter.
    pub fn same_azure(&self, other: &AzureTarget) -> bool {
        if self.is_sandbox() || other.is_sandbox() {
            return self.is_sandbox() && other.is_sandbox() && self.sandbox_instance == other.sandbox_instance;
        }
        let agree = |a: &Option<String>, b: &Option<String>| match (a, b) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
            _ => true,
        };
        self.arm_endpoint == other.arm_endpoint
            && self.authority_host == other.authority_host
            && self.graph_endpoint == other.graph_endpoint
            && agree(&self.tenant, &other.tenant)
            && agree(&self.subscription, &other.subscription)
    }

    /// How it is named to a person: the credential and where ARM is, with the tenant and
    /// subscription when known.
    pub fn describe(&self) -> String {
        if self.credential == "sandbox" {
            return format!("the built-in sandbox at {}", self.arm_endpoint);
        }
        if self.is_sandbox() {
            return format!("the built-in sandbox answering as {}", self.arm_endpoint);
        }
        let mut scope = Vec::new();
        if let Some(tenant) = &self.tenant {
            scope.push(format!("tenant {tenant}"));
        }
        if let Some(subscription) = &self.subscription {
            scope.push(format!("subscription {subscription}"));
        }
        let scope = if scope.is_empty() { String::new() } else { format!(" ({})", scope.join(", ")) };
        format!("{}{scope} with the `{}` credential", self.arm_endpoint, self.credential)
    }
}

/// The subject common name of every CA the built-in sandbox generates.
pub const SANDBOX_CA_NAME: &str = "runbook sandbox CA";

/// Whether the PEM file at `path` holds a CA the built-in sandbox generated: its DER carries
/// [`SANDBOX_CA_NAME`] (the subject). Unreadable or not PEM: no.
pub fn is_sandbox_ca_file(path: &Path) -> bool {
    use base64::Engine;
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    text.split("-----BEGIN CERTIFICATE-----").skip(1).filter_map(|rest| rest.split("-----END").next()).any(|body| {
        let b64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .is_ok_and(|der| der.windows(SANDBOX_CA_NAME.len()).any(|w| w == SANDBOX_CA_NAME.as_bytes()))
    })
}

/// `sha256:<hex>` of a CA file's bytes, or why it could not be read.
fn ca_fingerprint(path: &str) -> String {
    match std::fs::read(path) {
        Ok(bytes) => format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes))),
        Err(e) => format!("unreadable CA file `{path}`: {}", e.kind()),
    }
}

/// The documented `azure-credentials.json` (as `hypershift --azure-creds` reads it).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CredentialsFile {
    subscription_id: Option<String>,
    tenant_id: String,
    client_id: String,
    client_secret: String,
}

fn settings_error(message: impl Into<String>, hint: impl Into<String>) -> StepError {
    StepError::permanent(message).with_code("AzureSettingsInvalid").with_hint(hint)
}

impl AzureSettings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, StepError> {
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (the environment, or a fixed map in tests).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, StepError> {
        let var = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let arm_endpoint = https_endpoint(&var, ARM_ENDPOINT_VAR, DEFAULT_ARM_ENDPOINT)?;
        let graph_endpoint = https_endpoint(&var, GRAPH_ENDPOINT_VAR, DEFAULT_GRAPH_ENDPOINT)?;
        let authority_host = var(AUTHORITY_HOST_VAR)
            .or_else(|| var("AZURE_AUTHORITY_HOST"))
            .unwrap_or_else(|| DEFAULT_AUTHORITY_HOST.to_string());
        let credential = match var(CREDENTIAL_VAR) {
            None => CredentialChoice::Cli,
            Some(text) => CredentialChoice::parse(&text).ok_or_else(|| {
                settings_error(
                    format!("{CREDENTIAL_VAR} `{text}` is not a known credential"),
                    "one of: cli, client-secret, workload-identity, managed-identity, sandbox",
                )
            })?,
        };
        let file = match var(CREDENTIALS_FILE_VAR) {
            Some(path) => Some(read_credentials_file(&path)?),
            None => None,
        };
        let subscription_id =
            var("AZURE_SUBSCRIPTION_ID").or_else(|| file.as_ref().and_then(|f| f.subscription_id.clone()));
        let service_principal = match credential {
            CredentialChoice::ClientSecret | CredentialChoice::Sandbox => Some(service_principal(&var, file)?),
            _ => None,
        };
        let settings = AzureSettings {
            arm_endpoint,
            authority_host,
            arm_scope: var(ARM_SCOPE_VAR).unwrap_or_else(|| DEFAULT_ARM_SCOPE.to_string()),
            graph_endpoint,
            graph_scope: var(GRAPH_SCOPE_VAR).unwrap_or_else(|| DEFAULT_GRAPH_SCOPE.to_string()),
            credential,
            ca_file: var(CA_FILE_VAR).map(PathBuf::from),
            ssl_cert_file: var(crate::net::SSL_CERT_FILE_VAR).map(PathBuf::from),
            subscription_id,
            service_principal,
            tenant_id: var("AZURE_TENANT_ID"),
            client_id: var("AZURE_CLIENT_ID"),
            federated_token_file: var("AZURE_FEDERATED_TOKEN_FILE").map(PathBuf::from),
        };
        if credential == CredentialChoice::Sandbox {
            settings.require_loopback()?;
        }
        Ok(settings)
    }

    /// The sandbox credential exists so that a rehearsal cannot touch a real subscription.
    fn require_loopback(&self) -> Result<(), StepError> {
        let authority = Url::parse(&self.authority_host).ok();
        for (what, url) in [(ARM_ENDPOINT_VAR, Some(&self.arm_endpoint)), (AUTHORITY_HOST_VAR, authority.as_ref())] {
            if !is_loopback(url) {
                return Err(settings_error(
                    format!("{CREDENTIAL_VAR}=sandbox but {what} is not a loopback address"),
                    "point RUNBOOK_ARM_ENDPOINT and RUNBOOK_AUTHORITY_HOST at the sandbox, or choose another credential",
                ));
            }
        }
        Ok(())
    }

    /// Checked by the `graph` kind only, so an `arm`-only rehearsal need not configure Graph:
    /// under the sandbox credential Graph must be on loopback too.
    pub fn require_loopback_graph(&self) -> Result<(), StepError> {
        if self.credential == CredentialChoice::Sandbox && !is_loopback(Some(&self.graph_endpoint)) {
            return Err(settings_error(
                format!("{CREDENTIAL_VAR}=sandbox but {GRAPH_ENDPOINT_VAR} is not a loopback address"),
                "point RUNBOOK_GRAPH_ENDPOINT at the sandbox's Graph endpoint, or choose another credential",
            ));
        }
        Ok(())
    }
}

/// Whether the URL `text` names this machine (`localhost`, 127.0.0.0/8, ::1): the only place
/// the sandbox credential, and the stand-ins, may send anything.
pub fn is_loopback_url(text: &str) -> bool {
    is_loopback(Url::parse(text).ok().as_ref())
}

fn is_loopback(url: Option<&Url>) -> bool {
    url.and_then(|u| u.host_str()).is_some_and(|h| {
        h == "localhost" || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()) || h == "[::1]"
    })
}

/// An endpoint setting: `default` when unset, and always HTTPS (the bearer policy refuses
/// anything else, and so do the real services).
fn https_endpoint(var: &dyn Fn(&str) -> Option<String>, name: &str, default: &str) -> Result<Url, StepError> {
    let text = var(name).unwrap_or_else(|| default.to_string());
    let url = Url::parse(&text)
        .map_err(|e| settings_error(format!("{name} `{text}` is not a URL: {e}"), format!("e.g. {default}")))?;
    if url.scheme() != "https" {
        return Err(settings_error(
            format!("{name} `{text}` is not HTTPS"),
            "Azure is only reached over TLS; for the sandbox also set RUNBOOK_CA_FILE to its CA",
        ));
    }
    Ok(url)
}

fn read_credentials_file(path: &str) -> Result<CredentialsFile, StepError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        settings_error(
            format!("cannot read {CREDENTIALS_FILE_VAR} `{path}`: {e}"),
            "check the path and its permissions",
        )
    })?;
    // serde's error names the field and position, never the value, so no secret leaks here.
    serde_json::from_str(&text).map_err(|e| {
        settings_error(
            format!("{CREDENTIALS_FILE_VAR} `{path}` is not a valid credentials file: {e}"),
            "expected JSON with subscriptionId, tenantId, clientId and clientSecret",
        )
    })
}

fn service_principal(
    var: &dyn Fn(&str) -> Option<String>,
    file: Option<CredentialsFile>,
) -> Result<ServicePrincipal, StepError> {
    if let Some(file) = file {
        return Ok(ServicePrincipal {
            tenant_id: file.tenant_id,
            client_id: file.client_id,
            client_secret: Secret::new(file.client_secret),
        });
    }
    match (var("AZURE_TENANT_ID"), var("AZURE_CLIENT_ID"), var("AZURE_CLIENT_SECRET")) {
        (Some(tenant_id), Some(client_id), Some(secret)) => {
            Ok(ServicePrincipal { tenant_id, client_id, client_secret: Secret::new(secret) })
        }
        _ => Err(settings_error(
            "a client-secret credential needs a tenant, a client id and a secret",
            format!("set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or {CREDENTIALS_FILE_VAR}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn defaults_to_public_cloud_and_cli() {
        let settings = AzureSettings::from_lookup(&lookup(&[])).unwrap();
        assert_eq!(settings.arm_endpoint.as_str(), DEFAULT_ARM_ENDPOINT);
        assert_eq!(settings.authority_host, DEFAULT_AUTHORITY_HOST);
        assert_eq!(settings.credential, CredentialChoice::Cli);
        assert!(settings.ca_file.is_none());
    }

    #[test]
    fn graph_endpoint_and_scope_default_to_public_graph() {
        let settings = AzureSettings::from_lookup(&lookup(&[])).unwrap();
        assert_eq!(settings.graph_endpoint.as_str(), DEFAULT_GRAPH_ENDPOINT);
        assert_eq!(settings.graph_scope, DEFAULT_GRAPH_SCOPE);
        let overridden = AzureSettings::from_lookup(&lookup(&[
            (GRAPH_ENDPOINT_VAR, "https://graph.microsoft.us/"),
            (GRAPH_SCOPE_VAR, "https://graph.microsoft.us/.default"),
        ]))
        .unwrap();
        assert_eq!(overridden.graph_endpoint.host_str(), Some("graph.microsoft.us"));
        assert_eq!(overridden.graph_scope, "https://graph.microsoft.us/.default");
        let plain = AzureSettings::from_lookup(&lookup(&[(GRAPH_ENDPOINT_VAR, "http://127.0.0.1:1/")])).unwrap_err();
        assert!(plain.message.contains("not HTTPS"), "{plain}");
    }

    #[test]
    fn sandbox_graph_must_be_loopback_too() {
        let sandbox = [
            (CREDENTIAL_VAR, "sandbox"),
            (ARM_ENDPOINT_VAR, "https://127.0.0.1:1/"),
            (AUTHORITY_HOST_VAR, "https://127.0.0.1:2/"),
            ("AZURE_TENANT_ID", "t"),
            ("AZURE_CLIENT_ID", "c"),
            ("AZURE_CLIENT_SECRET", "x"),
        ];
        // The ARM kind does not need Graph configured...
        let settings = AzureSettings::from_lookup(&lookup(&sandbox)).unwrap();
        // ...but the Graph kind refuses to send a sandbox token to the real Graph.
        assert!(settings.require_loopback_graph().unwrap_err().message.contains(GRAPH_ENDPOINT_VAR));
        let mut with_graph = sandbox.to_vec();
        with_graph.push((GRAPH_ENDPOINT_VAR, "https://127.0.0.1:3/"));
        assert!(AzureSettings::from_lookup(&lookup(&with_graph)).unwrap().require_loopback_graph().is_ok());
    }

    #[test]
    fn client_secret_needs_all_three_values() {
        let err = AzureSettings::from_lookup(&lookup(&[(CREDENTIAL_VAR, "client-secret")])).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("AzureSettingsInvalid"));
        let ok = AzureSettings::from_lookup(&lookup(&[
            (CREDENTIAL_VAR, "client-secret"),
            ("AZURE_TENANT_ID", "t"),
            ("AZURE_CLIENT_ID", "c"),
            ("AZURE_CLIENT_SECRET", "very-secret"),
        ]))
        .unwrap();
        assert!(!format!("{ok:?}").contains("very-secret"));
    }

    #[test]
    fn credentials_file_supplies_principal_and_subscription() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("azure-credentials.json");
        std::fs::write(&path, r#"{"subscriptionId":"s","tenantId":"t","clientId":"c","clientSecret":"x"}"#).unwrap();
        let settings = AzureSettings::from_lookup(&lookup(&[
            (CREDENTIAL_VAR, "client-secret"),
            (CREDENTIALS_FILE_VAR, path.to_str().unwrap()),
        ]))
        .unwrap();
        assert_eq!(settings.subscription_id.as_deref(), Some("s"));
        assert_eq!(settings.service_principal.unwrap().client_id, "c");
    }

    #[test]
    fn a_sandbox_target_names_its_instance_by_its_ca() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "first sandbox").unwrap();
        let source = SettingsSource::fixed([
            (CREDENTIAL_VAR, "sandbox"),
            (ARM_ENDPOINT_VAR, "https://127.0.0.1:1/"),
            (CA_FILE_VAR, ca.to_str().unwrap()),
        ]);
        let first = source.target();
        assert!(first.is_sandbox());
        assert!(first.sandbox_instance.as_deref().unwrap().starts_with("sha256:"));
        std::fs::write(&ca, "second sandbox, same ports").unwrap();
        assert_ne!(source.target(), first);
        let default = SettingsSource::fixed(Vec::<(String, String)>::new()).target();
        assert_eq!((default.credential.as_str(), default.arm_endpoint.as_str()), ("cli", DEFAULT_ARM_ENDPOINT));
        assert_eq!(default.sandbox_instance, None);
    }

    #[test]
    fn sandbox_refuses_real_azure() {
        let err = AzureSettings::from_lookup(&lookup(&[
            (CREDENTIAL_VAR, "sandbox"),
            ("AZURE_TENANT_ID", "t"),
            ("AZURE_CLIENT_ID", "c"),
            ("AZURE_CLIENT_SECRET", "x"),
        ]))
        .unwrap_err();
        assert!(err.message.contains("loopback"), "{err}");
    }
}
