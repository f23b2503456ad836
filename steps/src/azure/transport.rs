//! The one HTTP client every Azure call goes through (ARM and the token endpoint alike), so an
//! extra CA such as the sandbox's is trusted everywhere or nowhere.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use azure_core::http::Transport;

use crate::StepError;

// The same limits azure_core gives its own reqwest client.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A reqwest client (the workspace's single reqwest 0.13, which azure_core implements
/// `HttpClient` for) trusting `ca_file` in addition to the system roots when one is given.
pub fn transport(ca_file: Option<&Path>) -> Result<Transport, StepError> {
    // ARM never redirects; following one could carry the bearer token elsewhere.
    let mut builder = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none());
    if let Some(path) = ca_file {
        let pem = std::fs::read(path).map_err(|e| {
            StepError::permanent(format!("cannot read RUNBOOK_CA_FILE `{}`: {e}", path.display()))
                .with_code("CaFileUnreadable")
        })?;
        let cert = reqwest::Certificate::from_pem(&pem).map_err(|e| {
            StepError::permanent(format!("RUNBOOK_CA_FILE `{}` is not a PEM certificate: {e}", path.display()))
                .with_code("CaFileUnreadable")
        })?;
        builder = builder.add_root_certificate(cert);
    }
    let client = builder.build().map_err(|e| StepError::permanent(format!("HTTP client: {e}")))?;
    Ok(Transport::new(Arc::new(client)))
}
