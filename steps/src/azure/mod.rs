//! Azure Resource Manager for the `arm` step kind: settings and credentials (azure_identity),
//! the HTTP pipeline (azure_core), error classification, long-running operations, and the
//! ensure / get / delete / post / role-assignment actions.

pub mod actions;
pub mod client;
pub mod compare;
pub mod credential;
pub mod ensure;
pub mod errors;
pub mod hints;
pub mod lro;
pub mod registration;
pub mod resource_id;
pub mod role_assignment;
pub mod session;
pub mod settings;
pub mod transport;

pub use settings::{AzureSettings, CredentialChoice};
