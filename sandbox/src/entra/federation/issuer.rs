//! Reading an issuer's OpenID metadata the way Entra does: anonymous HTTPS GETs of
//! `{issuer}/.well-known/openid-configuration`, then of the `jwks_uri` it names.
//!
//! The sandbox reaches only itself: the client trusts the sandbox CA alone and the URLs must be
//! loopback HTTPS, so an issuer elsewhere is "unreachable" without any request leaving the host.

use std::time::Duration;

use serde_json::Value;

use super::errors::AadstsError;

/// Attempts per document: Entra's own fetch survives a passing 5xx or a dropped connection.
const ATTEMPTS: u32 = 3;

/// The keys an issuer publishes.
pub(crate) struct IssuerKeys {
    pub keys: Vec<Value>,
}

/// A client for issuer documents that trusts only the sandbox's CA. Answering as Azure's public
/// host names (`public_names`), issuers are `https://<account>.blob.core.windows.net/...`: those
/// names resolve to loopback in this client itself, so no DNS query leaves the machine even
/// where the system resolver would ask a real server.
pub(crate) fn client(ca_pem: &str, public_names: bool) -> Result<reqwest::Client, String> {
    let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes()).map_err(|e| e.to_string())?;
    let mut builder = reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none());
    if public_names {
        builder = builder.dns_resolver(std::sync::Arc::new(crate::public_names::LoopbackResolver));
    }
    builder.build().map_err(|e| e.to_string())
}

/// HTTPS to this machine: a loopback address, or one of the public host names the sandbox
/// answers as (which its client resolves to loopback; elsewhere nothing is sent).
fn is_loopback_https(client_public_names: bool, url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
        || (client_public_names && crate::public_names::is_public_name(host));
    url.scheme() == "https" && loopback
}

async fn get_json(client: &reqwest::Client, public_names: bool, url: &str) -> Result<Value, AadstsError> {
    let url = reqwest::Url::parse(url).map_err(|_| AadstsError::issuer_unreachable())?;
    if !is_loopback_https(public_names, &url) {
        return Err(AadstsError::issuer_unreachable());
    }
    for attempt in 1..=ATTEMPTS {
        let transient = match client.get(url.clone()).send().await {
            Ok(resp) if resp.status().is_success() => {
                return resp.json::<Value>().await.map_err(|_| AadstsError::issuer_unreachable());
            }
            // 404 (private container, missing blob) or 409 (public access disabled) will not change.
            Ok(resp) => resp.status().is_server_error() || resp.status().as_u16() == 429,
            Err(_) => true,
        };
        if !transient || attempt == ATTEMPTS {
            break;
        }
        // Real time: a retry of a network read, not a window of the modelled service.
        tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
    }
    Err(AadstsError::issuer_unreachable())
}

/// The JWKS of `issuer`, after checking that its discovery document names the same issuer.
pub(crate) async fn fetch_keys(
    client: &reqwest::Client,
    public_names: bool,
    issuer: &str,
) -> Result<IssuerKeys, AadstsError> {
    let discovery_url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
    let discovery = get_json(client, public_names, &discovery_url).await?;
    if discovery["issuer"].as_str() != Some(issuer) {
        return Err(AadstsError::issuer_unreachable());
    }
    let Some(jwks_uri) = discovery["jwks_uri"].as_str() else {
        return Err(AadstsError::issuer_unreachable());
    };
    let jwks = get_json(client, public_names, jwks_uri).await?;
    let Some(keys) = jwks["keys"].as_array() else {
        return Err(AadstsError::issuer_unreachable());
    };
    Ok(IssuerKeys { keys: keys.clone() })
}
