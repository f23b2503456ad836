//! Microsoft Graph v1.0 over the shared pipeline (`pipeline.rs`), with a token for the Graph
//! scope, and one step attempt's conversation with it: every exchange is recorded (method, path,
//! status, Graph's request id) so the journal ties the attempt to Entra's logs. Bodies and query
//! strings are never recorded: bodies can hold a secret, filters hold names.

use azure_core::http::headers::HeaderName;
use azure_core::http::{Method, Pipeline, Url};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::errors::transport_failure;
use super::pipeline::{AzureResponse, authorized_pipeline, send_json};
use super::settings::AzureSettings;
use crate::StepError;

const GRAPH_VERSION: &str = "v1.0";
const REQUEST_ID: HeaderName = HeaderName::from_static("request-id");
const CLIENT_REQUEST_ID: HeaderName = HeaderName::from_static("client-request-id");

/// Graph's own request id header (ARM's is `x-ms-request-id`).
pub fn graph_request_id(response: &AzureResponse) -> Option<&str> {
    response.header(&REQUEST_ID).or_else(|| response.request_id())
}

pub fn graph_client_request_id(response: &AzureResponse) -> Option<&str> {
    response.header(&CLIENT_REQUEST_ID)
}

/// A client for one Graph endpoint with one credential; the bearer policy caches the token.
pub struct GraphClient {
    pipeline: Pipeline,
    endpoint: Url,
}

impl GraphClient {
    pub fn new(settings: &AzureSettings) -> Result<Self, StepError> {
        settings.require_loopback_graph()?;
        let pipeline = authorized_pipeline(settings, &settings.graph_scope)?;
        Ok(GraphClient { pipeline, endpoint: settings.graph_endpoint.clone() })
    }

    /// `{endpoint}v1.0/{segments…}?{query}`. Segments are percent-encoded one by one, so an id
    /// from a runbook cannot add path segments or a query of its own.
    pub fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Url, StepError> {
        let mut url = self.endpoint.clone();
        url.path_segments_mut()
            .map_err(|()| {
                StepError::permanent(format!("the Graph endpoint `{}` cannot take a path", self.endpoint))
                    .with_code("AzureSettingsInvalid")
            })?
            .pop_if_empty()
            .push(GRAPH_VERSION)
            .extend(segments);
        url.set_query(None);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }
}

/// One attempt's exchanges with Graph.
pub struct GraphSession<'a> {
    client: &'a GraphClient,
    cancel: &'a CancellationToken,
    trace: Vec<Value>,
    /// Whether any POST, PATCH or DELETE was sent.
    pub wrote: bool,
}

impl<'a> GraphSession<'a> {
    pub fn new(client: &'a GraphClient, cancel: &'a CancellationToken) -> Self {
        GraphSession { client, cancel, trace: Vec::new(), wrote: false }
    }

    pub async fn call(
        &mut self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<AzureResponse, StepError> {
        let url = self.client.url(segments, query)?;
        if method != Method::Get && method != Method::Head {
            self.wrote = true;
        }
        let result = send_json(&self.client.pipeline, self.cancel, method, url, body, |error, method, path| {
            transport_failure("Microsoft Graph", error, method, path)
        })
        .await;
        let path = format!("/{GRAPH_VERSION}/{}", segments.join("/"));
        self.trace.push(match &result {
            Ok(r) => json!({
                "method": method.to_string(), "path": r.path, "status": r.status,
                "request_id": graph_request_id(r), "client_request_id": graph_client_request_id(r),
            }),
            Err(e) => json!({ "method": method.to_string(), "path": path, "error": e.code }),
        });
        result
    }

    /// The exchanges so far, for evidence (a Graph step makes a handful, so all are kept).
    pub fn requests(&self) -> Value {
        json!(self.trace)
    }
}
