//! Azure for the `arm` and `graph` step kinds: settings and credentials (azure_identity), the
//! shared HTTP pipeline (azure_core), error classification, ARM's long-running operations and
//! ensure / get / delete / post / role-assignment / wait-gone actions, and Graph's applications, service
//! principals and password credentials.

pub mod actions;
pub mod client;
pub mod compare;
pub mod credential;
pub mod ensure;
pub mod errors;
pub mod graph_client;
pub mod graph_errors;
pub mod graph_objects;
pub mod graph_password;
pub mod hints;
pub mod lro;
pub mod pipeline;
pub mod preflight;
pub mod reader;
pub mod registration;
pub mod resource_id;
pub mod role_assignment;
pub mod session;
pub mod settings;
pub mod transport;
pub mod wait_gone;
pub mod whoami;

pub use settings::{
    AzureSettings, AzureTarget, CredentialChoice, SANDBOX_CA_NAME, SettingsSource, is_loopback_url, is_sandbox_ca_file,
};
