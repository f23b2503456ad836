//! A kube-rs `Config` from a kubeconfig, as kube-rs's own loader builds it, except for the proxy:
//! that is decided here from the cluster's `proxy-url`, else the environment (`proxy.rs`), so the
//! Kubernetes client goes through the same proxy as kubectl and the Azure clients, and a host in
//! `NO_PROXY` is reached directly.

use base64::Engine;
use kube::Config;
use kube::config::{AuthInfo, Cluster, ExecAuthCluster, Kubeconfig};

use crate::azure::settings::SettingsSource;

/// The client configuration for `context` (else the kubeconfig's current context).
pub fn from_kubeconfig(kubeconfig: Kubeconfig, context: Option<&str>, env: &SettingsSource) -> Result<Config, String> {
    let name = context
        .map(str::to_string)
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or("no context: the kubeconfig sets no current-context and the step names none")?;
    let context = kubeconfig
        .contexts
        .iter()
        .find(|named| named.name == name)
        .and_then(|named| named.context.clone())
        .ok_or_else(|| format!("context `{name}` is not in the kubeconfig"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|named| named.name == context.cluster)
        .and_then(|named| named.cluster.clone())
        .ok_or_else(|| format!("cluster `{}` of context `{name}` is not in the kubeconfig", context.cluster))?;
    // As kubectl: a context without a user (or naming a missing one) connects without credentials.
    let mut auth_info = context
        .user
        .as_ref()
        .and_then(|user| kubeconfig.auth_infos.iter().find(|named| &named.name == user))
        .and_then(|named| named.auth_info.clone())
        .unwrap_or_else(AuthInfo::default);
    if let Some(exec) = auth_info.exec.as_mut()
        && exec.provide_cluster_info
    {
        exec.cluster = Some(ExecAuthCluster::try_from(&cluster).map_err(|e| e.to_string())?);
    }

    let server = cluster.server.as_deref().ok_or_else(|| format!("cluster `{}` has no server", context.cluster))?;
    let cluster_url: http::Uri = server.parse().map_err(|e| format!("server `{server}`: {e}"))?;
    let mut config = Config::new(cluster_url.clone());
    config.default_namespace = context.namespace.clone().unwrap_or_else(|| "default".to_string());
    config.accept_invalid_certs = cluster.insecure_skip_tls_verify.unwrap_or(false);
    config.disable_compression = cluster.disable_compression.unwrap_or(false);
    config.tls_server_name = cluster.tls_server_name.clone();
    config.root_cert = certificate_authority(&cluster)?;
    config.auth_info = auth_info;
    config.proxy_url = match cluster.proxy_url.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
        Some(url) => Some(url.parse().map_err(|e| format!("proxy-url `{url}`: {e}"))?),
        None => crate::proxy::for_url(env, &cluster_url),
    };
    Ok(config)
}

/// The cluster's CA certificates (DER), from `certificate-authority-data` or the file
/// `certificate-authority` names.
fn certificate_authority(cluster: &Cluster) -> Result<Option<Vec<Vec<u8>>>, String> {
    let pem = match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| format!("certificate-authority-data is not base64: {e}"))?,
        (None, Some(file)) => std::fs::read(file).map_err(|e| format!("certificate-authority `{file}`: {e}"))?,
        (None, None) => return Ok(None),
    };
    use rustls_pki_types::pem::PemObject;
    let certs = rustls_pki_types::CertificateDer::pem_slice_iter(&pem)
        .map(|cert| cert.map(|der| der.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("certificate authority: {e}"))?;
    if certs.is_empty() {
        return Err("the certificate authority holds no PEM certificate".to_string());
    }
    Ok(Some(certs))
}
