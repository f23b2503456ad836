//! The Entra directory: service principals that can get tokens, Graph applications.

use std::time::Instant;

pub(crate) struct Client {
    pub secret: String,
    pub object_id: String,
    pub created: Instant,
}

#[derive(Clone)]
pub(crate) struct PasswordCredential {
    pub key_id: String,
    pub display_name: Option<String>,
    pub hint: String,
    /// Kept only so the token endpoint can check it; never rendered again after addPassword.
    pub secret: String,
    pub start: String,
    pub end: String,
}

#[derive(Clone)]
pub(crate) struct Application {
    pub id: String,
    pub app_id: String,
    pub display_name: String,
    pub created: Instant,
    pub created_at: jiff::Timestamp,
    pub passwords: Vec<PasswordCredential>,
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Its federated identity credentials, as Graph renders them.
    pub federated_credentials: Vec<serde_json::Value>,
}

pub(crate) struct ServicePrincipal {
    pub id: String,
    pub app_id: String,
    pub display_name: String,
    pub account_enabled: bool,
    /// Copied from its application.
    pub sign_in_audience: String,
    /// Secrets added to the service principal itself (`az ad sp credential reset`).
    pub passwords: Vec<PasswordCredential>,
    /// Certificates on the service principal itself (`az ad sp credential reset --create-cert`),
    /// as Graph stores them (a JSON array of keyCredential).
    pub key_credentials: serde_json::Value,
    pub created: Instant,
    pub created_at: jiff::Timestamp,
}
