//! The Entra credential named by the settings, built with azure_identity on the shared transport.

use std::sync::Arc;

use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
use azure_core::credentials::TokenCredential;
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

pub fn credential(settings: &AzureSettings, transport: &Transport) -> Result<Arc<dyn TokenCredential>, StepError> {
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
