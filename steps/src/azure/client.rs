//! ARM over the shared azure_core pipeline (`pipeline.rs`): resource URLs with an api-version,
//! and the same-origin rule for polling URLs.

use azure_core::http::headers::HeaderName;
use azure_core::http::{Method, Pipeline, Url};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use super::pipeline::AzureResponse as ArmResponse;
use super::pipeline::{authorized_pipeline, send_json};
use super::settings::AzureSettings;
use crate::StepError;

pub const AZURE_ASYNC_OPERATION: HeaderName = HeaderName::from_static("azure-asyncoperation");
pub const LOCATION: HeaderName = HeaderName::from_static("location");

/// A client for one ARM endpoint with one credential. Cheap to share: the token is cached by the
/// bearer policy across every step that uses it.
pub struct ArmClient {
    pipeline: Pipeline,
    endpoint: Url,
    pub subscription_id: Option<String>,
}

impl ArmClient {
    pub fn new(settings: &AzureSettings) -> Result<Self, StepError> {
        let pipeline = authorized_pipeline(settings, &settings.arm_scope)?;
        Ok(ArmClient {
            pipeline,
            endpoint: settings.arm_endpoint.clone(),
            subscription_id: settings.subscription_id.clone(),
        })
    }

    /// `{endpoint}{path}?api-version=…` for a resource path such as `/subscriptions/…`.
    pub fn url(&self, path: &str, api_version: &str) -> Result<Url, StepError> {
        let base = self.endpoint.as_str().trim_end_matches('/');
        let mut url = Url::parse(&format!("{base}/{}", path.trim_start_matches('/'))).map_err(|e| {
            StepError::permanent(format!("`{path}` does not make a valid ARM URL: {e}")).with_code("InvalidInputs")
        })?;
        url.query_pairs_mut().append_pair("api-version", api_version);
        Ok(url)
    }

    /// Whether `url` (a polling URL the service handed us) is on the ARM endpoint: the bearer token
    /// must never be sent anywhere else.
    pub fn is_same_origin(&self, url: &Url) -> bool {
        url.scheme() == self.endpoint.scheme()
            && url.host_str() == self.endpoint.host_str()
            && url.port_or_known_default() == self.endpoint.port_or_known_default()
    }

    pub async fn send(
        &self,
        cancel: &CancellationToken,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> Result<ArmResponse, StepError> {
        send_json(&self.pipeline, cancel, method, url, body, super::errors::from_transport).await
    }
}
