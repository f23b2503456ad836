//! Where a recorded request goes on the sandbox: the recorded host picks the service
//! (ARM, Graph or a storage account's Blob endpoint), the path and query are kept.

use runbook_sandbox::Sandbox;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    Arm,
    Graph,
    Blob,
}

/// A recorded URI split into the parts the replay needs.
#[derive(Debug, Clone)]
pub struct Target {
    pub service: Service,
    /// The storage account, for Blob requests (`{account}.blob.core.windows.net`).
    pub account: Option<String>,
    /// Path and query as recorded (still percent-encoded), starting with `/`.
    pub path_and_query: String,
}

impl Target {
    pub fn parse(uri: &str) -> Target {
        let rest = uri.strip_prefix("https://").unwrap_or_else(|| panic!("recorded URI is not https: {uri}"));
        let (host, path_and_query) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        let host = host.trim_end_matches(":443");
        let (service, account) = if host.eq_ignore_ascii_case("management.azure.com") {
            (Service::Arm, None)
        } else if host.eq_ignore_ascii_case("graph.microsoft.com") {
            (Service::Graph, None)
        } else if let Some(account) = host.strip_suffix(".blob.core.windows.net") {
            (Service::Blob, Some(account.to_string()))
        } else {
            panic!("recorded host {host} is not one the sandbox serves");
        };
        Target { service, account, path_and_query }
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.path_and_query.split('?').next().unwrap_or_default()
    }

    /// The absolute URL of this request on the sandbox.
    pub fn url(&self, sandbox: &Sandbox) -> String {
        let relative = self.path_and_query.trim_start_matches('/');
        match self.service {
            Service::Arm => format!("{}{relative}", sandbox.arm_endpoint()),
            Service::Graph => format!("{}{relative}", sandbox.graph_endpoint()),
            Service::Blob => {
                format!("{}{relative}", sandbox.blob_endpoint(self.account.as_deref().unwrap_or_default()))
            }
        }
    }

    /// Lower-cased path segments.
    pub fn segments(&self) -> Vec<String> {
        self.path().split('/').filter(|s| !s.is_empty()).map(str::to_ascii_lowercase).collect()
    }
}

/// The recorded URL of a polling header reduced to a lookup key: host-independent,
/// lower-cased path without the query (`:443` and `api-version` vary between headers).
pub fn poll_key(url: &str) -> String {
    let without_scheme = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let path = match without_scheme.find('/') {
        Some(i) => &without_scheme[i..],
        None => "/",
    };
    path.split('?').next().unwrap_or_default().to_ascii_lowercase()
}
