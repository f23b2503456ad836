//! Where a `blob` step writes: the container URL it was given, checked, and the blob URLs built
//! from it. A SAS never lives in these URLs except in the copy handed to the Blob client, so
//! every URL reported (outputs, evidence, errors) is query-free by construction.

use azure_core::http::Url;

use crate::StepError;

fn invalid(message: impl Into<String>) -> StepError {
    StepError::permanent(message).with_code("InvalidInputs")
}

/// `url` as it may be shown: scheme, host, port and path, never the query (a SAS) or fragment.
pub fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// A text the operator typed that failed to parse, shown without anything after `?` or `#`.
fn display_raw(raw: &str) -> &str {
    raw.split(['?', '#']).next().unwrap_or_default()
}

fn is_loopback(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    host.eq_ignore_ascii_case("localhost")
        || host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A blob container: `https://acct.blob.core.windows.net/oidc`, or path-style
/// `https://127.0.0.1:PORT/acct/oidc` (sandbox, Azurite). Kept without a trailing slash.
#[derive(Clone, Debug)]
pub struct ContainerUrl {
    url: Url,
}

impl ContainerUrl {
    pub fn parse(raw: &str) -> Result<Self, StepError> {
        let shown = display_raw(raw.trim());
        let url = Url::parse(raw.trim()).map_err(|e| invalid(format!("container_url `{shown}` is not a URL: {e}")))?;
        if url.query().is_some() || url.fragment().is_some() {
            // The query is most likely a SAS: never echo it, and keep it out of the URL we report.
            return Err(invalid(format!("container_url `{shown}` has a query or fragment"))
                .with_hint("give the SAS in `sas`, and the container URL without `?...`"));
        }
        match url.scheme() {
            "https" => {}
            // Azurite's default endpoint is plain HTTP on loopback; anywhere else a SAS or a token
            // would cross the network in the clear.
            "http" if is_loopback(&url) => {}
            _ => {
                return Err(invalid(format!("container_url `{shown}` must be https"))
                    .with_hint("Blob Storage is reached over TLS; plain http is accepted only on loopback (Azurite)"));
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(format!("container_url `{shown}` must not carry credentials")));
        }
        let segments: Vec<String> =
            url.path_segments().map(|s| s.filter(|p| !p.is_empty()).map(str::to_string).collect()).unwrap_or_default();
        if segments.is_empty() {
            return Err(invalid(format!("container_url `{shown}` names no container"))
                .with_hint("e.g. https://<account>.blob.core.windows.net/<container>"));
        }
        let mut url = url;
        url.set_path(&format!("/{}", segments.join("/")));
        Ok(ContainerUrl { url })
    }

    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The blob's URL. Each `/`-separated part of the name is percent-encoded on its own, so
    /// `openid/v1/jwks` stays a path (virtual directories) rather than one `%2F`-encoded segment.
    pub fn blob_url(&self, blob_name: &str) -> Result<Url, StepError> {
        check_blob_name(blob_name)?;
        let mut url = self.url.clone();
        url.path_segments_mut()
            .map_err(|_| invalid("container_url cannot carry a blob path"))?
            .extend(blob_name.split('/'));
        Ok(url)
    }
}

/// Blob names are 1-1024 characters; empty, `.` and `..` parts would be rewritten by URL
/// normalization and land somewhere other than named.
fn check_blob_name(name: &str) -> Result<(), StepError> {
    if name.is_empty() || name.chars().count() > 1024 {
        return Err(invalid("`blob_name` must be 1 to 1024 characters"));
    }
    if name.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
        return Err(invalid(format!("`blob_name` `{name}` has an empty, `.` or `..` part"))
            .with_hint("e.g. `.well-known/openid-configuration` or `openid/v1/jwks`, without a leading slash"));
    }
    if name.chars().any(|c| c.is_control() || c == '\\') {
        return Err(invalid(format!("`blob_name` `{}` has a control character or backslash", name.escape_debug())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_blob_urls_part_by_part() {
        let container = ContainerUrl::parse("https://acct.blob.core.windows.net/oidc/").unwrap();
        assert_eq!(container.url().as_str(), "https://acct.blob.core.windows.net/oidc");
        let jwks = container.blob_url("openid/v1/jwks").unwrap();
        assert_eq!(jwks.as_str(), "https://acct.blob.core.windows.net/oidc/openid/v1/jwks");
        let discovery = container.blob_url(".well-known/openid-configuration").unwrap();
        assert_eq!(discovery.as_str(), "https://acct.blob.core.windows.net/oidc/.well-known/openid-configuration");
        let odd = container.blob_url("a b/c%d#e").unwrap();
        assert_eq!(odd.path(), "/oidc/a%20b/c%25d%23e");
    }

    #[test]
    fn path_style_endpoints_keep_the_account() {
        let container = ContainerUrl::parse("http://127.0.0.1:10000/devstoreaccount1/oidc").unwrap();
        assert_eq!(container.blob_url("x.json").unwrap().path(), "/devstoreaccount1/oidc/x.json");
    }

    #[test]
    fn refuses_a_sas_in_the_url_without_echoing_it() {
        let err = ContainerUrl::parse("https://acct.blob.core.windows.net/oidc?sv=2022&sig=SECRETSIG").unwrap_err();
        assert!(!err.message.contains("SECRETSIG"), "{err}");
        assert!(err.hint.unwrap().contains("`sas`"));
    }

    #[test]
    fn refuses_plain_http_off_loopback_and_bad_names() {
        assert!(ContainerUrl::parse("http://acct.blob.core.windows.net/oidc").is_err());
        assert!(ContainerUrl::parse("http://localhost:10000/devstoreaccount1/oidc").is_ok());
        assert!(ContainerUrl::parse("https://acct.blob.core.windows.net/").is_err());
        let container = ContainerUrl::parse("https://acct.blob.core.windows.net/oidc").unwrap();
        for bad in ["", "/jwks", "a//b", "a/../b", "./a", "a\\b"] {
            assert!(container.blob_url(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn display_drops_the_query() {
        let url = Url::parse("https://acct.blob.core.windows.net/oidc/jwks?sv=1&sig=abc").unwrap();
        assert_eq!(display_url(&url), "https://acct.blob.core.windows.net/oidc/jwks");
    }
}
