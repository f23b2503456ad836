//! The azure_core HTTP pipeline every Azure client here shares (ARM and Graph alike): our
//! transport (with the optional extra CA), the configured credential behind the bearer-token
//! policy (which refuses non-TLS endpoints), and no retries of its own because the engine owns
//! retries. Also the one place a JSON request is sent and its answer read in full.

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

/// A pipeline that signs every request with a token for `scope` from the configured credential.
pub fn authorized_pipeline(settings: &AzureSettings, scope: &str) -> Result<Pipeline, StepError> {
    let transport = transport(settings.ca_file.as_deref(), settings.ssl_cert_file.as_deref())?;
    let credential: Arc<dyn TokenCredential> = credential(settings, &transport)?;
    let bearer: Arc<dyn Policy> = Arc::new(BearerTokenAuthorizationPolicy::new(credential, [scope.to_string()]));
    let options = ClientOptions { transport: Some(transport), retry: RetryOptions::none(), ..Default::default() };
    Ok(Pipeline::new(
        option_env!("CARGO_PKG_NAME"),
        option_env!("CARGO_PKG_VERSION"),
        options,
        Vec::new(),
        vec![bearer],
        None,
    ))
}

/// One Azure answer, body fully read.
pub struct AzureResponse {
    pub method: Method,
    /// The URL path without its query, for messages and evidence.
    pub path: String,
    pub status: u16,
    pub headers: Headers,
    pub body: Bytes,
}

impl AzureResponse {
    pub fn header(&self, name: &HeaderName) -> Option<&str> {
        self.headers.get_optional_str(name)
    }

    /// ARM's request id (Graph names its own `request-id`; see `graph_client`).
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

    /// The server's wish for how long to wait (see `net::retry_after`).
    pub fn retry_after(&self) -> Option<Duration> {
        crate::net::retry_after(|name| self.header(&HeaderName::from(name.to_string())))
    }
}

/// Sends `body` (if any) as JSON and reads the whole answer. A request that got no HTTP answer
/// (or no token) becomes a `StepError` through `no_answer`, which knows which service it was.
pub async fn send_json(
    pipeline: &Pipeline,
    cancel: &CancellationToken,
    method: Method,
    url: Url,
    body: Option<&Value>,
    no_answer: impl FnOnce(&azure_core::Error, Method, &str) -> StepError,
) -> Result<AzureResponse, StepError> {
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
        sent = pipeline.send(&context, &mut request, options) => sent,
        _ = cancel.cancelled() => return Err(StepError::new(ErrorClass::Cancelled, "cancelled")),
    };
    match sent {
        Ok(raw) => {
            let (status, headers, body) = raw.deconstruct();
            let body = Bytes::copy_from_slice(&body);
            Ok(AzureResponse { method, path, status: u16::from(status), headers, body })
        }
        Err(error) => Err(no_answer(&error, method, &path)),
    }
}
