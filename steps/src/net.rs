//! What every kind that speaks HTTP needs alike: a client that trusts an extra CA, a transport
//! failure told with its causes, and the wait a server asked for.

use std::path::Path;
use std::time::Duration;

use crate::StepError;
use crate::capture::tail;

/// The variable Go, OpenSSL and rustls-native-certs read for the roots to trust instead of the
/// system's (e.g. a TLS-inspecting proxy's CA bundle).
pub const SSL_CERT_FILE_VAR: &str = "SSL_CERT_FILE";

/// `builder` trusting each PEM file in `ca_files` in addition to the system roots. `origin`
/// says where the path came from (e.g. "RUNBOOK_CA_FILE") so a bad one can be found.
pub fn trusting(
    builder: reqwest::ClientBuilder,
    ca_files: &[(&Path, &str)],
) -> Result<reqwest::ClientBuilder, StepError> {
    trusting_roots(builder, None, ca_files)
}

/// Like [`trusting`], with `cert_file` (`SSL_CERT_FILE`, a PEM bundle) as the roots instead of
/// the system's when given, as Go and OpenSSL take it. Read from the kind's settings rather than
/// left to the TLS library, so a kind configured with a fixed set of settings honours it too.
pub fn trusting_roots(
    mut builder: reqwest::ClientBuilder,
    cert_file: Option<&Path>,
    ca_files: &[(&Path, &str)],
) -> Result<reqwest::ClientBuilder, StepError> {
    let read = |path: &Path, origin: &str| {
        std::fs::read(path).map_err(|e| {
            StepError::permanent(format!("cannot read the CA file `{}` ({origin}): {e}", path.display()))
                .with_code("CaFileUnreadable")
        })
    };
    let not_pem = |path: &Path, origin: &str, e: reqwest::Error| {
        StepError::permanent(format!("the CA file `{}` ({origin}) is not a PEM certificate: {e}", path.display()))
            .with_code("CaFileUnreadable")
    };
    let mut extra = Vec::new();
    for (path, origin) in ca_files {
        let cert = reqwest::Certificate::from_pem(&read(path, origin)?).map_err(|e| not_pem(path, origin, e))?;
        extra.push(cert);
    }
    if let Some(path) = cert_file {
        let bundle = reqwest::Certificate::from_pem_bundle(&read(path, SSL_CERT_FILE_VAR)?)
            .map_err(|e| not_pem(path, SSL_CERT_FILE_VAR, e))?;
        if bundle.is_empty() {
            return Err(StepError::permanent(format!(
                "the CA file `{}` ({SSL_CERT_FILE_VAR}) holds no certificate",
                path.display()
            ))
            .with_code("CaFileUnreadable"));
        }
        return Ok(builder.tls_certs_only(bundle.into_iter().chain(extra)));
    }
    for cert in extra {
        builder = builder.add_root_certificate(cert);
    }
    Ok(builder)
}

/// An error and every cause under it, "outer: inner: root", skipping a cause whose text an
/// outer one already includes. reqwest's own text is only "error sending request"; the reason
/// (refused, reset, "invalid peer certificate: UnknownIssuer") is in the causes.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(current) = cause {
        let text = current.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = current.source();
    }
    tail(&parts.join(": "), 600)
}

/// How long the server asked to wait, from a response's headers (`header` looks one up by its
/// lower-case name): the millisecond headers first (ARM, Storage and the sandbox send them for
/// sub-second precision), then `Retry-After` in seconds. An HTTP-date or garbage is ignored, so
/// the engine's own backoff applies.
pub fn retry_after<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Option<Duration> {
    let number = |name: &str| header(name).and_then(|v| v.trim().parse::<u64>().ok());
    number("x-ms-retry-after-ms")
        .or_else(|| number("retry-after-ms"))
        .map(Duration::from_millis)
        .or_else(|| number("retry-after").map(Duration::from_secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(headers: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |name| headers.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    #[test]
    fn retry_after_prefers_milliseconds() {
        assert_eq!(retry_after(lookup(&[("retry-after", "3")])), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after(lookup(&[("retry-after", "3"), ("retry-after-ms", "1500")])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(lookup(&[("retry-after-ms", "1500"), ("x-ms-retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(lookup(&[("retry-after", " 2 ")])), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(lookup(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")])), None);
        assert_eq!(retry_after(lookup(&[])), None);
    }

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);
    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn error_chain_shows_the_causes_once() {
        let error = Layer(
            "error sending request",
            Some(Box::new(Layer(
                "client error (Connect)",
                Some(Box::new(Layer("invalid peer certificate: UnknownIssuer", None))),
            ))),
        );
        assert_eq!(
            error_chain(&error),
            "error sending request: client error (Connect): invalid peer certificate: UnknownIssuer"
        );
        let repeated = Layer("io error: connection reset", Some(Box::new(Layer("connection reset", None))));
        assert_eq!(error_chain(&repeated), "io error: connection reset");
    }
}
