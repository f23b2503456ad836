//! The sandbox as Azure's public host names: ARM at `management.azure.com`, Entra at
//! `login.microsoftonline.com`, Graph at `graph.microsoft.com` and each storage account at
//! `<account>.blob.core.windows.net`, all on one loopback listener.
//!
//! Tools such as the real `hypershift` and `ccoctl` have no endpoint settings: they reach these
//! names on 443. Answering as them only makes sense where the names resolve to this machine and
//! nothing else is reachable (a network namespace with loopback alone, set up by the runner);
//! this module knows the names, routes a request by its `Host`, and keeps a hosts file naming
//! every storage account as it is created (a hosts file has no wildcards).

use std::fs::File;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use crate::Service;

/// Azure Resource Manager of the public cloud.
pub const ARM_HOST: &str = "management.azure.com";
/// Entra ID (the authority host) of the public cloud.
pub const ENTRA_HOST: &str = "login.microsoftonline.com";
/// Microsoft Graph.
pub const GRAPH_HOST: &str = "graph.microsoft.com";
/// A storage account's Blob service is `<account>` followed by this.
pub const BLOB_HOST_SUFFIX: &str = ".blob.core.windows.net";

/// The fixed names, each served by one service.
pub const FIXED_HOSTS: [(&str, Service); 3] =
    [(ARM_HOST, Service::Arm), (ENTRA_HOST, Service::Entra), (GRAPH_HOST, Service::Graph)];

/// The names the server certificate carries (one wildcard covers every account).
pub fn certificate_names() -> Vec<String> {
    let mut names: Vec<String> = FIXED_HOSTS.iter().map(|(h, _)| h.to_string()).collect();
    names.push(format!("*{BLOB_HOST_SUFFIX}"));
    names
}

/// How a sandbox answers as the public names.
#[derive(Debug, Clone)]
pub struct PublicNames {
    /// The loopback port of the one listener: 443 as the real services (inside a network
    /// namespace of its own, where binding it needs no privilege beyond that namespace's), or
    /// 0 for an ephemeral one (tests that resolve the names themselves; the port then appears
    /// in every advertised URL).
    pub port: u16,
    /// The hosts file the sandbox appends `127.0.0.1 <account>.blob.core.windows.net` to when a
    /// storage account is created: an open handle to a private file (the one bind-mounted over
    /// `/etc/hosts` inside the namespace), so the machine's own can never be written.
    pub hosts_file: Option<Arc<File>>,
}

/// Where a request with this `Host` goes, and for Blob the account it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    pub service: Service,
    pub account: Option<String>,
}

/// The service (and storage account) a `Host` header names; `None` for any other host.
/// The port, if any, is ignored: the listener is the same.
pub(crate) fn route(host: &str) -> Option<Route> {
    let name = strip_port(host).trim_end_matches('.').to_ascii_lowercase();
    if let Some((_, service)) = FIXED_HOSTS.iter().find(|(h, _)| *h == name) {
        return Some(Route { service: *service, account: None });
    }
    let account = name.strip_suffix(BLOB_HOST_SUFFIX)?;
    let valid =
        (3..=24).contains(&account.len()) && account.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
    valid.then(|| Route { service: Service::Blob, account: Some(account.to_string()) })
}

fn strip_port(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether `host` (no port) is one the sandbox answers for in this mode.
pub fn is_public_name(host: &str) -> bool {
    route(host).is_some()
}

/// `https://{host}` with `:{port}` unless it is HTTPS's own.
pub(crate) fn base_url(host: &str, port: u16) -> String {
    if port == 443 { format!("https://{host}") } else { format!("https://{host}:{port}") }
}

/// The lines of a hosts file that make the fixed names this machine's.
pub fn hosts_file_lines() -> String {
    let mut text = String::from("127.0.0.1 localhost\n::1 localhost\n");
    for (host, _) in FIXED_HOSTS {
        text.push_str(&format!("127.0.0.1 {host}\n"));
    }
    text
}

/// Appends a storage account's Blob host to the private hosts file, once per account.
pub(crate) struct HostsFile {
    file: Option<Arc<File>>,
    written: Mutex<Vec<String>>,
}

impl HostsFile {
    pub(crate) fn new(file: Option<Arc<File>>) -> HostsFile {
        HostsFile { file, written: Mutex::new(Vec::new()) }
    }

    /// Makes `<account>.blob.core.windows.net` resolve to loopback from now on. Written in place
    /// at the end (never replaced), so the bind mount keeps showing the same file.
    pub(crate) fn add_account(&self, account: &str) {
        let Some(file) = &self.file else { return };
        let account = account.to_ascii_lowercase();
        let mut written = self.written.lock().expect("hosts lock");
        if written.contains(&account) {
            return;
        }
        let line = format!("127.0.0.1 {account}{BLOB_HOST_SUFFIX}\n");
        let mut handle: &File = file;
        let appended =
            std::io::Seek::seek(&mut handle, std::io::SeekFrom::End(0)).and_then(|_| handle.write_all(line.as_bytes()));
        if appended.is_ok() {
            written.push(account);
        }
    }
}

/// The storage account a successful ARM write created, if `path` names one
/// (`.../providers/Microsoft.Storage/storageAccounts/{name}`).
pub(crate) fn created_storage_account(method: &http::Method, path: &str, status: u16) -> Option<String> {
    if *method != http::Method::PUT || !(200..300).contains(&status) {
        return None;
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [.., provider, kind, name]
            if provider.eq_ignore_ascii_case("Microsoft.Storage") && kind.eq_ignore_ascii_case("storageAccounts") =>
        {
            Some(name.to_ascii_lowercase())
        }
        _ => None,
    }
}

/// Entra's instance discovery metadata for the public cloud: the aliases of each cloud's
/// authority, as `login.microsoftonline.com/common/discovery/instance` lists them.
pub(crate) fn cloud_aliases() -> serde_json::Value {
    serde_json::json!([
        {"preferred_network": "login.microsoftonline.com", "preferred_cache": "login.windows.net",
         "aliases": ["login.microsoftonline.com", "login.windows.net", "login.microsoft.com", "sts.windows.net"]},
        {"preferred_network": "login.partner.microsoftonline.cn", "preferred_cache": "login.partner.microsoftonline.cn",
         "aliases": ["login.partner.microsoftonline.cn", "login.chinacloudapi.cn"]},
        {"preferred_network": "login.microsoftonline.de", "preferred_cache": "login.microsoftonline.de",
         "aliases": ["login.microsoftonline.de"]},
        {"preferred_network": "login.microsoftonline.us", "preferred_cache": "login.microsoftonline.us",
         "aliases": ["login.microsoftonline.us", "login.usgovcloudapi.net"]},
        {"preferred_network": "login-us.microsoftonline.com", "preferred_cache": "login-us.microsoftonline.com",
         "aliases": ["login-us.microsoftonline.com"]}
    ])
}

/// A resolver that answers every name with 127.0.0.1, for the sandbox's own clients (and tests)
/// that reach the public names outside a namespace: no DNS query ever leaves the machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoopbackResolver;

impl reqwest::dns::Resolve for LoopbackResolver {
    fn resolve(&self, _name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        // The port is the URL's: reqwest replaces the resolved address's.
        let addrs: reqwest::dns::Addrs = Box::new(std::iter::once(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0)));
        Box::pin(std::future::ready(Ok(addrs)))
    }
}

/// The interfaces this process's network namespace has, from `/proc/net/dev`: only `lo` means
/// nothing sent from here can leave the machine.
pub fn interfaces() -> std::io::Result<Vec<String>> {
    let text = std::fs::read_to_string("/proc/net/dev")?;
    Ok(text.lines().skip(2).filter_map(|l| l.split_once(':')).map(|(name, _)| name.trim().to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_route_to_their_service() {
        assert_eq!(route("management.azure.com").unwrap().service, Service::Arm);
        assert_eq!(route("LOGIN.microsoftonline.com:443").unwrap().service, Service::Entra);
        assert_eq!(route("graph.microsoft.com:8443").unwrap().service, Service::Graph);
        let blob = route("oidcissuer.blob.core.windows.net").unwrap();
        assert_eq!((blob.service, blob.account.as_deref()), (Service::Blob, Some("oidcissuer")));
        assert!(route("example.com").is_none());
        assert!(route("Bad_Name.blob.core.windows.net").is_none());
        assert!(route("blob.core.windows.net").is_none());
    }

    #[test]
    fn a_storage_account_put_is_recognised() {
        let path = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/OidcIssuer";
        assert_eq!(created_storage_account(&http::Method::PUT, path, 202).as_deref(), Some("oidcissuer"));
        assert_eq!(created_storage_account(&http::Method::PUT, path, 409), None);
        assert_eq!(created_storage_account(&http::Method::GET, path, 200), None);
        assert_eq!(created_storage_account(&http::Method::PUT, &format!("{path}/blobServices/default"), 200), None);
    }
}
