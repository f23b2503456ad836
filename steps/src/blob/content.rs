//! What a `blob` upload sends: the bytes (from a file or inline), their MD5 as Blob Storage
//! reports it (base64), and a content type.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use md5::{Digest, Md5};

use crate::StepError;

/// Blob names the OIDC issuer serves: they have no extension, yet Entra ID and Kubernetes read
/// them as JSON, and ccoctl uploads them as such.
const JSON_BLOB_SUFFIXES: &[&str] = &["openid-configuration", "/jwks", "keys.json"];

/// The bytes to upload and what describes them.
pub struct Payload {
    pub bytes: Vec<u8>,
    /// Base64 of the MD5 digest: the form of `Content-MD5` and of the blob's stored property.
    pub content_md5: String,
    pub md5: Vec<u8>,
    pub content_type: String,
}

impl Payload {
    pub fn new(bytes: Vec<u8>, content_type: String) -> Self {
        let md5 = Md5::digest(&bytes).to_vec();
        Payload { content_md5: STANDARD.encode(&md5), md5, bytes, content_type }
    }
}

/// Reads the file to upload (relative paths are already resolved by the caller).
pub fn read_file(path: &Path) -> Result<Vec<u8>, StepError> {
    std::fs::read(path).map_err(|e| {
        StepError::permanent(format!("cannot read `{}`: {e}", path.display()))
            .with_code("FileUnreadable")
            .with_hint("`file` is relative to the run's working directory; the step that writes it must run first")
    })
}

/// The content type from the blob name (or else the file name): JSON for `.json` and the OIDC
/// documents, a few common text types, and `application/octet-stream` otherwise.
pub fn content_type_for(blob_name: &str, file: Option<&str>) -> String {
    let lower = blob_name.to_ascii_lowercase();
    if JSON_BLOB_SUFFIXES.iter().any(|suffix| lower.ends_with(suffix)) {
        return "application/json".into();
    }
    let extension = |name: &str| {
        let last = name.rsplit('/').next().unwrap_or(name);
        last.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase())
    };
    let by_extension = |ext: &str| -> Option<&'static str> {
        Some(match ext {
            "json" | "jwks" => "application/json",
            "txt" => "text/plain; charset=utf-8",
            "html" | "htm" => "text/html; charset=utf-8",
            "yaml" | "yml" => "application/yaml",
            "pem" | "crt" => "application/x-pem-file",
            "xml" => "application/xml",
            _ => return None,
        })
    };
    extension(blob_name)
        .as_deref()
        .and_then(by_extension)
        .or_else(|| file.and_then(extension).as_deref().and_then(by_extension))
        .unwrap_or("application/octet-stream")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oidc_documents_are_json() {
        assert_eq!(content_type_for(".well-known/openid-configuration", None), "application/json");
        assert_eq!(content_type_for("openid/v1/jwks", Some("out/jwks")), "application/json");
        assert_eq!(content_type_for("docs/a.JSON", None), "application/json");
        assert_eq!(content_type_for("blob", Some("dir.d/keys.json")), "application/json");
        assert_eq!(content_type_for("notes.txt", None), "text/plain; charset=utf-8");
        assert_eq!(content_type_for("data", Some("dir.d/data")), "application/octet-stream");
    }

    #[test]
    fn md5_is_base64_as_azure_reports_it() {
        // MD5("") = d41d8cd98f00b204e9800998ecf8427e
        assert_eq!(Payload::new(Vec::new(), "x".into()).content_md5, "1B2M2Y8AsgTpgAmY7PhCfg==");
    }
}
