//! Every request the sandbox answered, for tests and benchmarks to count and inspect.

use std::fmt;
use std::time::Duration;

/// Which of the sandbox's services a request went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    Arm,
    Entra,
    Graph,
    Blob,
    /// The management cluster's Kubernetes API.
    Kube,
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Service::Arm => "arm",
            Service::Entra => "entra",
            Service::Graph => "graph",
            Service::Blob => "blob",
            Service::Kube => "kube",
        })
    }
}

/// One answered (or deliberately dropped) request. Bodies are never kept, so secrets
/// (client secrets, `secretText`, SAS signatures in bodies) never land here; the query
/// string is kept with any `sig=` value redacted.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    pub method: String,
    pub service: Service,
    pub path: String,
    pub query: String,
    /// The `Host` the client named (`:authority` in HTTP/2), when the service is told by it:
    /// Azure's public host names ([`crate::public_names`]).
    pub host: Option<String>,
    /// The address the connection came from: a proxy's, for a client behind one.
    pub peer: Option<std::net::IpAddr>,
    /// HTTP status; 0 when the connection was reset by fault injection.
    pub status: u16,
    /// The Azure error code (Kubernetes: the Status reason) of the response, if it was an error.
    pub error_code: Option<String>,
    /// The client id of the bearer token (Kubernetes: the username), when one was presented and valid.
    pub client_id: Option<String>,
    pub request_id: String,
    /// The client's `User-Agent`: which program made the request (the Azure SDK for Go and
    /// client-go name themselves and the program), so a rehearsal can show whose requests these were.
    pub user_agent: Option<String>,
    pub timestamp: jiff::Timestamp,
    pub duration: Duration,
}

impl LoggedRequest {
    /// PUT, POST, PATCH or DELETE.
    pub fn is_write(&self) -> bool {
        matches!(self.method.as_str(), "PUT" | "POST" | "PATCH" | "DELETE")
    }

    /// The entry as `GET /.sandbox/requests` lists it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "method": self.method,
            "service": self.service.to_string(),
            "path": self.path,
            "query": self.query,
            "host": self.host,
            "peer": self.peer.map(|ip| ip.to_string()),
            "status": self.status,
            "error_code": self.error_code,
            "client_id": self.client_id,
            "request_id": self.request_id,
            "user_agent": self.user_agent,
            "timestamp": self.timestamp.to_string(),
            "duration_ms": self.duration.as_secs_f64() * 1000.0,
        })
    }
}

/// Drops the value of `sig` so a logged SAS cannot be replayed.
pub(crate) fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| {
            let lower = pair.to_ascii_lowercase();
            if lower.starts_with("sig=") { "sig=REDACTED".to_string() } else { pair.to_string() }
        })
        .collect::<Vec<_>>()
        .join("&")
}
