//! The Entra credential named by the settings, built with azure_identity on the shared transport,
//! its tokens shared by every credential of the same sign-in in this process.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
use azure_core::credentials::{AccessToken, TokenCredential, TokenRequestOptions};
use azure_core::http::{ClientOptions, RetryOptions, Transport};
use azure_identity::{
    ClientAssertionCredentialOptions, ClientSecretCredential, ClientSecretCredentialOptions, DeveloperToolsCredential,
    ManagedIdentityCredential, ManagedIdentityCredentialOptions, UserAssignedId, WorkloadIdentityCredential,
    WorkloadIdentityCredentialOptions,
};

use super::settings::{AzureSettings, CredentialChoice};
use crate::StepError;

/// Client options for the token endpoint: our transport, the configured authority, and no retries
/// of its own (a failed token request fails the attempt; the engine decides about another).
fn token_client_options(settings: &AzureSettings, transport: &Transport) -> ClientOptions {
    let mut cloud = CustomConfiguration::default();
    cloud.authority_host = settings.authority_host.clone();
    ClientOptions {
        transport: Some(transport.clone()),
        retry: RetryOptions::none(),
        cloud: Some(Arc::new(CloudConfiguration::from(cloud))),
        ..Default::default()
    }
}

fn credential_error(choice: CredentialChoice, error: azure_core::Error) -> StepError {
    StepError::permanent(format!("cannot set up the {choice:?} Azure credential: {error}"))
        .with_code("CredentialUnavailable")
        .with_hint("check RUNBOOK_AZURE_CREDENTIAL and the variables that credential reads (AZURE_TENANT_ID, AZURE_CLIENT_ID, ...)")
}

/// The credential the settings name. Its tokens are shared with every other credential of the
/// same sign-in in this process (see [`SharedTokens`]).
pub fn credential(settings: &AzureSettings, transport: &Transport) -> Result<Arc<dyn TokenCredential>, StepError> {
    Ok(Arc::new(SharedTokens { inner: build(settings, transport)?, sign_in: sign_in_key(settings) }))
}

/// A credential that asks the token endpoint only when no credential of the same sign-in in this
/// process holds a token for the scopes that is still good. A command's doctor checks, its
/// principal lookup and its steps' ARM, Graph and blob clients each build a credential, and each
/// new credential asked the token endpoint again (eight requests, one after another, before a
/// Phase 1's first write). The tokens are kept rather than the credentials: a credential holds
/// an HTTP client whose connections belong to the async runtime that opened them.
#[derive(Debug)]
struct SharedTokens {
    inner: Arc<dyn TokenCredential>,
    sign_in: String,
}

/// What a token is kept under: the sign-in ([`sign_in_key`]) and the scopes. The async lock lets
/// one caller ask the token endpoint while the others for the same scopes wait for its answer.
type TokenSlot = Arc<tokio::sync::Mutex<Option<AccessToken>>>;

static TOKENS: LazyLock<Mutex<HashMap<String, TokenSlot>>> = LazyLock::new(Default::default);

/// A token this close to its expiry is asked for again (azure_identity's own margin).
const REFRESH_MARGIN: azure_core::time::Duration = azure_core::time::Duration::seconds(300);

#[async_trait::async_trait]
impl TokenCredential for SharedTokens {
    async fn get_token(
        &self,
        scopes: &[&str],
        options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        let key = format!("{}\n{}", self.sign_in, scopes.join(" "));
        let slot = TOKENS.lock().unwrap_or_else(|p| p.into_inner()).entry(key).or_default().clone();
        let mut kept = slot.lock().await;
        if let Some(token) =
            kept.as_ref().filter(|t| t.expires_on > azure_core::time::OffsetDateTime::now_utc() + REFRESH_MARGIN)
        {
            return Ok(token.clone());
        }
        // A failure is not kept: the next caller asks again.
        let token = self.inner.get_token(scopes, options).await?;
        *kept = Some(token.clone());
        Ok(token)
    }
}

/// What makes two settings the same sign-in: the credential's choice and everything it reads,
/// the authority it asks, and the contents of the CA files it trusts. A sandbox has the same
/// principal, secret and tenant as any other, and may answer on a port (or as Azure's host
/// names) an earlier one of the same process used: its CA, made when it started, tells it
/// apart, so its tokens are never offered to another. The client secret enters only as a
/// digest, so the map of kept tokens never holds it.
fn sign_in_key(settings: &AzureSettings) -> String {
    use sha2::Digest;
    let principal = settings.service_principal.as_ref();
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    let contents = |p: &Option<std::path::PathBuf>| {
        p.as_ref().and_then(|p| std::fs::read(p).ok()).map(|b| hex::encode(sha2::Sha256::digest(b))).unwrap_or_default()
    };
    let fields = [
        format!("{:?}", settings.credential),
        settings.authority_host.clone(),
        principal.map(|p| p.tenant_id.clone()).unwrap_or_default(),
        principal.map(|p| p.client_id.clone()).unwrap_or_default(),
        principal.map(|p| hex::encode(sha2::Sha256::digest(p.client_secret.secret()))).unwrap_or_default(),
        settings.tenant_id.clone().unwrap_or_default(),
        settings.client_id.clone().unwrap_or_default(),
        path(&settings.federated_token_file),
        contents(&settings.ca_file),
        contents(&settings.ssl_cert_file),
    ];
    fields.join("\n")
}

fn build(settings: &AzureSettings, transport: &Transport) -> Result<Arc<dyn TokenCredential>, StepError> {
    let choice = settings.credential;
    let client_options = token_client_options(settings, transport);
    let built: azure_core::Result<Arc<dyn TokenCredential>> = match choice {
        CredentialChoice::Cli => DeveloperToolsCredential::new(None).map(|c| c as Arc<dyn TokenCredential>),
        CredentialChoice::ClientSecret | CredentialChoice::Sandbox => {
            let Some(principal) = &settings.service_principal else {
                return Err(StepError::permanent("no service principal configured").with_code("CredentialUnavailable"));
            };
            ClientSecretCredential::new(
                &principal.tenant_id,
                principal.client_id.clone(),
                principal.client_secret.clone(),
                Some(ClientSecretCredentialOptions { client_options }),
            )
            .map(|c| c as Arc<dyn TokenCredential>)
        }
        CredentialChoice::WorkloadIdentity => {
            WorkloadIdentityCredential::new(Some(WorkloadIdentityCredentialOptions {
                credential_options: ClientAssertionCredentialOptions { client_options },
                client_id: settings.client_id.clone(),
                tenant_id: settings.tenant_id.clone(),
                token_file_path: settings.federated_token_file.clone(),
            }))
            .map(|c| c as Arc<dyn TokenCredential>)
        }
        CredentialChoice::ManagedIdentity => ManagedIdentityCredential::new(Some(ManagedIdentityCredentialOptions {
            user_assigned_id: settings.client_id.clone().map(UserAssignedId::ClientId),
            client_options,
        }))
        .map(|c| c as Arc<dyn TokenCredential>),
    };
    built.map_err(|e| credential_error(choice, e))
}
