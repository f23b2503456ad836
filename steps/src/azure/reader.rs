//! Reading ARM resources (and Graph objects) back, GET only: what `verify` uses to compare what a run made with what
//! is there now, through the same client, credential and error handling as the `arm` kind.

use azure_core::http::Method;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::actions;
use super::client::ArmClient;
use super::compare::{Difference, differences};
use super::graph_client::{GraphClient, GraphSession};
use super::graph_errors::{Replication, from_response, unexpected_answer};
use super::session::ArmSession;
use super::settings::AzureSettings;
use crate::StepError;

pub struct ArmReader {
    client: ArmClient,
    cancel: CancellationToken,
}

impl ArmReader {
    pub fn new(settings: &AzureSettings) -> Result<Self, StepError> {
        Ok(ArmReader { client: ArmClient::new(settings)?, cancel: CancellationToken::new() })
    }

    /// The resource at `path`, or None when ARM answers 404. Never sends anything but GET.
    pub async fn get(&self, path: &str, api_version: &str) -> Result<Option<Value>, StepError> {
        let mut session = ArmSession::new(&self.client, &self.cancel, runbook_clock::Clock::process());
        let found = actions::get(&mut session, path, api_version, true).await;
        debug_assert!(!session.wrote, "a read wrote");
        found
    }

    /// The answer to a question ARM takes as a POST and that changes nothing (e.g.
    /// `Microsoft.PolicyInsights/checkPolicyRestrictions`); an error answer is an error.
    pub async fn ask(&self, path: &str, api_version: &str, body: &Value) -> Result<Value, StepError> {
        let mut session = ArmSession::new(&self.client, &self.cancel, runbook_clock::Clock::process());
        let response = session.call(Method::Post, path, api_version, Some(body)).await?;
        if !response.is_success() {
            return Err(super::registration::failure(&mut session, &response, "asking").await);
        }
        Ok(response.json().unwrap_or(Value::Null))
    }
}

/// Where `existing` differs from `desired` (or, with `compare`, at those pointers), compared the
/// way the `arm` kind's `ensure` compares.
pub fn drift(desired: &Value, existing: &Value, compare: Option<&[String]>) -> Result<Vec<Difference>, StepError> {
    differences(desired, existing, compare)
}

/// Reading Microsoft Graph objects back, GET only: applications and service principals by
/// object id, through the same client, credential and error handling as the `graph` kind.
pub struct GraphReader {
    client: GraphClient,
    cancel: CancellationToken,
}

impl GraphReader {
    pub fn new(settings: &AzureSettings) -> Result<Self, StepError> {
        Ok(GraphReader { client: GraphClient::new(settings)?, cancel: CancellationToken::new() })
    }

    /// `GET /v1.0/{collection}/{id}` (collection: `applications`, `servicePrincipals`), or None
    /// when Graph answers 404.
    pub async fn get(&self, collection: &str, id: &str) -> Result<Option<Value>, StepError> {
        let mut session = GraphSession::new(&self.client, &self.cancel);
        let response = session.call(Method::Get, &[collection, id], &[], None).await?;
        debug_assert!(!session.wrote, "a read wrote");
        if response.status == 404 {
            return Ok(None);
        }
        if !response.is_success() {
            return Err(from_response(&response, &format!("reading {collection}/{id}"), Replication::NotExpected));
        }
        response.json().map(Some).ok_or_else(|| unexpected_answer(&response, "JSON body"))
    }
}
