//! The sandbox's view of one HTTP exchange: a fully read request and the reply to send.

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use serde_json::Value;

/// A request with its body read and its path split and decoded.
pub(crate) struct Req {
    pub method: Method,
    /// The raw (still percent-encoded) path.
    pub path: String,
    /// Decoded non-empty path segments (so `//tenant/...` and `/tenant/...` are the same).
    pub segments: Vec<String>,
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The storage account the `Host` names (`<account>.blob.core.windows.net`), when the sandbox
    /// answers as Azure's public host names; path-style Blob requests name it in the path.
    pub host_account: Option<String>,
    /// The address the connection came from (a proxy's, for a client behind one).
    pub peer: Option<std::net::IpAddr>,
}

impl Req {
    pub(crate) fn new(method: Method, path: &str, raw_query: &str, headers: HeaderMap, body: Bytes) -> Req {
        let segments = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
            .collect();
        let query =
            form_urlencoded::parse(raw_query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        Req { method, path: path.to_string(), segments, query, headers, body, host_account: None, peer: None }
    }

    /// A query parameter by case-insensitive name.
    pub(crate) fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON; an empty body is `{}`.
    pub(crate) fn json(&self) -> Result<Value, serde_json::Error> {
        if self.body.iter().all(|b| b.is_ascii_whitespace()) {
            return Ok(Value::Object(Default::default()));
        }
        serde_json::from_slice(&self.body)
    }

    pub(crate) fn is_write(&self) -> bool {
        matches!(self.method, Method::PUT | Method::POST | Method::PATCH | Method::DELETE)
    }
}

/// What to send back.
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    /// The service error code, for the request log.
    pub error_code: Option<String>,
    /// Close the connection without answering (fault injection).
    pub reset: bool,
}

impl Reply {
    pub(crate) fn empty(status: StatusCode) -> Reply {
        Reply { status, headers: Vec::new(), body: Bytes::new(), error_code: None, reset: false }
    }

    pub(crate) fn json(status: StatusCode, value: &Value) -> Reply {
        Reply::json_with_type(status, value, "application/json; charset=utf-8")
    }

    pub(crate) fn json_with_type(status: StatusCode, value: &Value, content_type: &str) -> Reply {
        let body = serde_json::to_vec(value).unwrap_or_default();
        Reply {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: Bytes::from(body),
            error_code: None,
            reset: false,
        }
    }

    pub(crate) fn reset() -> Reply {
        Reply { reset: true, ..Reply::empty(StatusCode::OK) }
    }

    pub(crate) fn with_header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    pub(crate) fn with_error_code(mut self, code: impl Into<String>) -> Reply {
        self.error_code = Some(code.into());
        self
    }

    pub(crate) fn has_header(&self, name: &str) -> bool {
        self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
    }
}

/// `Retry-After` in whole seconds (rounded up) plus `retry-after-ms`, which azure_core
/// prefers; the millisecond header keeps scaled-down sandboxes fast.
pub(crate) fn retry_after_headers(reply: Reply, after: std::time::Duration) -> Reply {
    let secs = after.as_millis().div_ceil(1000);
    reply.with_header("retry-after", secs.to_string()).with_header("retry-after-ms", after.as_millis().to_string())
}
