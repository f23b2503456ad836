//! ARM over azure_core's HTTP pipeline: the bearer-token policy (which refuses non-TLS endpoints)
//! on our transport, with azure_core's retry turned off because the engine owns retries.

use std::sync::Arc;
use std::time::Duration;

use azure_core::Bytes;
use azure_core::credentials::TokenCredential;
use azure_core::http::headers::{HeaderName, Headers};
use azure_core::http::policies::Policy;
use azure_core::http::policies::auth::BearerTokenAuthorizationPolicy;
use azure_core::http::{ClientOptions, Context, Method, Pipeline, PipelineSendOptions, Request, RetryOptions, Url};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::credential::credential;
use super::settings::AzureSettings;
use super::transport::transport;
use crate::{ErrorClass, StepError};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-request-id");
const CORRELATION_ID: HeaderName = HeaderName::from_static("x-ms-correlation-request-id");
const RETRY_AFTER: HeaderName = HeaderName::from_static("retry-after");
const RETRY_AFTER_MS: HeaderName = HeaderName::from_static("retry-after-ms");
const X_MS_RETRY_AFTER_MS: HeaderName = HeaderName::from_static("x-ms-retry-after-ms");
pub const AZURE_ASYNC_OPERATION: HeaderName = HeaderName::from_static("azure-asyncoperation");
pub const LOCATION: HeaderName = HeaderName::from_static("location");

/// A client for one ARM endpoint with one credential. Cheap to share: the token is cached by the
/// bearer policy across every step that uses it.
pub struct ArmClient {
    pipeline: Pipeline,
    endpoint: Url,
    pub subscription_id: Option<String>,
}

/// One ARM answer, body fully read.
pub struct ArmResponse {
    pub method: Method,
    /// The URL path without its query, for messages and evidence.
    pub path: String,
    pub status: u16,
    pub headers: Headers,
    pub body: Bytes,
}

impl ArmResponse {
    pub fn header(&self, name: &HeaderName) -> Option<&str> {
        self.headers.get_optional_str(name)
    }

    pub fn request_id(&self) -> Option<&str> {
        self.header(&REQUEST_ID)
    }

    pub fn correlation_id(&self) -> Option<&str> {
        self.header(&CORRELATION_ID)
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON; None when empty or not JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The server's wish for how long to wait: the millisecond headers first (ARM and the sandbox
    /// send them for sub-second precision), then `Retry-After` in seconds.
    pub fn retry_after(&self) -> Option<Duration> {
        let millis = [&X_MS_RETRY_AFTER_MS, &RETRY_AFTER_MS]
            .into_iter()
            .find_map(|name| self.header(name).and_then(|v| v.trim().parse::<u64>().ok()));
        millis
            .map(Duration::from_millis)
            .or_else(|| self.header(&RETRY_AFTER).and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs))
    }
}

impl ArmClient {
    pub fn new(settings: &AzureSettings) -> Result<Self, StepError> {
        let transport = transport(settings.ca_file.as_deref())?;
        let credential: Arc<dyn TokenCredential> = credential(settings, &transport)?;
        let bearer: Arc<dyn Policy> =
            Arc::new(BearerTokenAuthorizationPolicy::new(credential, [settings.arm_scope.clone()]));
        let options = ClientOptions { transport: Some(transport), retry: RetryOptions::none(), ..Default::default() };
        let pipeline = Pipeline::new(
            option_env!("CARGO_PKG_NAME"),
            option_env!("CARGO_PKG_VERSION"),
            options,
            Vec::new(),
            vec![bearer],
            None,
        );
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
        let path = url.path().to_string();
        let mut request = Request::new(url, method);
        request.insert_header("accept", "application/json");
        if let Some(body) = body {
            request.insert_header("content-type", "application/json");
            request.set_body(serde_json::to_vec(body).unwrap_or_default());
        }
        let context = Context::new();
        let options = Some(PipelineSendOptions { skip_checks: true, ..Default::default() });
        let sent = tokio::select! {
            sent = self.pipeline.send(&context, &mut request, options) => sent,
            _ = cancel.cancelled() => return Err(StepError::new(ErrorClass::Cancelled, "cancelled")),
        };
        match sent {
            Ok(raw) => {
                let (status, headers, body) = raw.deconstruct();
                let body = Bytes::copy_from_slice(&body);
                Ok(ArmResponse { method, path, status: u16::from(status), headers, body })
            }
            Err(error) => Err(super::errors::from_transport(&error, method, &path)),
        }
    }
}
