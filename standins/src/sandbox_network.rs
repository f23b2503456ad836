//! Whether this process runs inside the network of a sandbox that answers as Azure's public host
//! names (`rehearse --public-names`, `sandbox up --public-names`): the one place a stand-in may
//! act with a real user's settings. Checked in an order that sends nothing anywhere: first that
//! the network namespace has no interface but loopback (then nothing can leave the machine,
//! whatever a name resolves to), then that `SSL_CERT_FILE` is a CA the sandbox generated, and
//! only then that Azure's names resolve to loopback (from the private hosts file).

use std::net::ToSocketAddrs;
use std::path::Path;

use runbook_sandbox::public_names::{ARM_HOST, ENTRA_HOST, GRAPH_HOST};

/// `Ok` inside a sandbox's network; else why not.
pub fn check() -> Result<(), String> {
    let interfaces =
        runbook_sandbox::public_names::interfaces().map_err(|e| format!("cannot read /proc/net/dev: {e}"))?;
    if interfaces != ["lo"] {
        return Err(format!("the network has interfaces other than loopback: {}", interfaces.join(", ")));
    }
    let cert_file = std::env::var("SSL_CERT_FILE").map_err(|_| "SSL_CERT_FILE is not set".to_string())?;
    if !runbook_steps::is_sandbox_ca_file(Path::new(&cert_file)) {
        return Err(format!("SSL_CERT_FILE `{cert_file}` is not a CA of runbook's sandbox"));
    }
    for host in [ARM_HOST, ENTRA_HOST, GRAPH_HOST] {
        let addrs: Vec<_> =
            (host, 443).to_socket_addrs().map_err(|e| format!("{host} does not resolve: {e}"))?.collect();
        if addrs.is_empty() || addrs.iter().any(|a| !a.ip().is_loopback()) {
            return Err(format!("{host} does not resolve to loopback"));
        }
    }
    Ok(())
}
