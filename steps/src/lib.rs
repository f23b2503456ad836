//! Step kinds: each kind declares its inputs (as a JSON Schema), the outputs it produces, whether a
//! re-run after an interruption is safe, and how it executes. The runner resolves every reference
//! before a step runs, so a kind only ever sees concrete JSON values.

// StepError is deliberately rich (code, hint, evidence); it is returned once per attempt, so
// its size costs nothing that matters.
#![allow(clippy::result_large_err)]

mod arm;
mod azure;
mod blob;
mod capture;
mod checkpoint;
mod context;
mod error;
mod exec;
mod gate;
mod graph;
mod http;
mod keypair;
mod kind;
mod kube;
mod net;
mod oidc;
mod output_spec;
pub mod proxy;
pub mod redact;
mod template;

pub use arm::{Arm, ArmAction, ArmInputs, PrincipalType};
pub use azure::compare::Difference;
pub use azure::reader::{ArmReader, GraphReader, drift};
pub use azure::role_assignment::API_VERSION as ROLE_ASSIGNMENT_API_VERSION;
pub use azure::whoami::{access_claims, signed_in_principal};

/// Codes a preflight returns for problems that make the step certain to fail: they stop `plan`
/// and `run` before anything is written (other preflight errors are only reported).
pub const PREFLIGHT_DECISIVE_CODES: &[&str] =
    &[azure::preflight::STORAGE_NAME_TAKEN, azure::preflight::STORAGE_NAME_INVALID, gate::PREFLIGHT_GATE_FAILED];
pub use azure::{
    AzureSettings, AzureTarget, CredentialChoice, SANDBOX_CA_NAME, SettingsSource, is_loopback_url, is_sandbox_ca_file,
};
pub use blob::{Blob, BlobAction, BlobAuth, BlobInputs, BlobPublicAccess};
pub use checkpoint::Checkpoint;
pub use context::{NoTemplates, StepContext, TemplateSource, output_path_problem, template_name_problem};
pub use error::{ErrorClass, StepError};
pub use exec::{Exec, flag_arguments};
pub use gate::{Approval, ApprovalRule, Gate};
pub use graph::{Graph, GraphAction, GraphInputs};
pub use http::Http;
pub use keypair::Keypair;
pub use kind::{
    CheckContext, InputProblem, KindNeed, KindRole, MadeObjects, OutputDecl, Registry, StepKind, StepOutcome,
    known_text,
};
pub use kube::{Kube, KubeInputs, KubeReader, kube_process_config};
pub use net::{error_chain, trusting};
pub use oidc::Oidc;
pub use output_spec::{OutputSource, OutputSpec, json_pointer_problem};
pub use template::Template;
