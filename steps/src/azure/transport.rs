//! The one HTTP client every Azure call goes through (ARM and the token endpoint alike), so an
//! extra CA such as the sandbox's is trusted everywhere or nowhere.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use azure_core::http::Transport;

use crate::StepError;

// The same limits azure_core gives its own reqwest client. Real time, not the run's clock: they
// bound a socket's wait for the network, which a simulated clock cannot hurry.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A reqwest client (the workspace's single reqwest 0.13, which azure_core implements
/// `HttpClient` for) trusting `ca_file` in addition to the system roots when one is given, and
/// the roots of `cert_file` (`SSL_CERT_FILE`) instead of the system's when that is set.
pub fn transport(ca_file: Option<&Path>, cert_file: Option<&Path>) -> Result<Transport, StepError> {
    // ARM never redirects; following one could carry the bearer token elsewhere.
    let mut builder = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none());
    let ca_files: Vec<(&Path, &str)> = ca_file.map(|path| (path, super::settings::CA_FILE_VAR)).into_iter().collect();
    builder = crate::net::trusting_roots(builder, cert_file, &ca_files)?;
    let client = builder.build().map_err(|e| StepError::permanent(format!("HTTP client: {e}")))?;
    Ok(Transport::new(Arc::new(client)))
}
