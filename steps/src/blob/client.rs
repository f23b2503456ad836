//! Blob clients of the official `azure_storage_blob` crate, authorized one of two ways: a SAS
//! joined to the URL the client is built with, or the configured Entra credential, which the
//! crate turns into a bearer-token policy for https://storage.azure.com/.default. Requests go
//! through the shared transport (extra CA from RUNBOOK_CA_FILE) with the crate's retries off:
//! the engine owns retries.

use std::sync::Arc;

use azure_core::credentials::TokenCredential;
use azure_core::http::{ClientOptions, RetryOptions, Transport, Url};
use azure_storage_blob::{BlobClient, BlobClientOptions, BlobContainerClient, BlobContainerClientOptions};

use super::errors::AuthMode;
use super::sas::Sas;
use crate::StepError;

/// How the step's requests are authorized.
#[derive(Clone)]
pub enum Authorization {
    Sas(Sas),
    Bearer(Arc<dyn TokenCredential>),
}

impl Authorization {
    pub fn mode(&self) -> AuthMode {
        match self {
            Authorization::Sas(_) => AuthMode::Sas,
            Authorization::Bearer(_) => AuthMode::Bearer,
        }
    }

    /// Removes the SAS, in every spelling, from text about to be reported.
    pub fn scrub(&self, text: &str) -> String {
        match self {
            Authorization::Sas(sas) => sas.scrub(text),
            Authorization::Bearer(_) => text.to_string(),
        }
    }

    /// The URL the client is built with, and the credential it is given.
    fn split(&self, url: &Url) -> (Url, Option<Arc<dyn TokenCredential>>) {
        match self {
            Authorization::Sas(sas) => (sas.authorize(url), None),
            Authorization::Bearer(credential) => (url.clone(), Some(credential.clone())),
        }
    }
}

fn client_options(transport: &Transport) -> ClientOptions {
    ClientOptions { transport: Some(transport.clone()), retry: RetryOptions::none(), ..Default::default() }
}

fn construction_error(error: azure_core::Error, auth: &Authorization) -> StepError {
    StepError::permanent(auth.scrub(&format!("cannot build the Blob client: {error}"))).with_code("InvalidInputs")
}

pub fn container_client(
    url: &Url,
    auth: &Authorization,
    transport: &Transport,
) -> Result<BlobContainerClient, StepError> {
    let (url, credential) = auth.split(url);
    let options = BlobContainerClientOptions { client_options: client_options(transport), ..Default::default() };
    BlobContainerClient::new(url, credential, Some(options)).map_err(|e| construction_error(e, auth))
}

pub fn blob_client(url: &Url, auth: &Authorization, transport: &Transport) -> Result<BlobClient, StepError> {
    let (url, credential) = auth.split(url);
    let options = BlobClientOptions { client_options: client_options(transport), ..Default::default() };
    BlobClient::new(url, credential, Some(options)).map_err(|e| construction_error(e, auth))
}
