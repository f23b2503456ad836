//! The VCR.py cassettes of the Azure CLI scenario tests, as recorded (see the fixtures'
//! README): one request and one response per interaction, headers as lists of values.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Cassette {
    pub interactions: Vec<Interaction>,
}

#[derive(Debug, Deserialize)]
pub struct Interaction {
    pub request: RecordedRequest,
    pub response: RecordedResponse,
}

#[derive(Debug, Deserialize)]
pub struct RecordedRequest {
    pub method: String,
    pub uri: String,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
pub struct RecordedResponse {
    pub status: Status,
    #[serde(default)]
    pub headers: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub body: Body,
}

#[derive(Debug, Deserialize)]
pub struct Status {
    pub code: u16,
}

#[derive(Debug, Default, Deserialize)]
pub struct Body {
    #[serde(default)]
    pub string: String,
}

impl RecordedResponse {
    /// A header by case-insensitive name (first value).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).and_then(|(_, v)| v.first()).map(String::as_str)
    }
}

/// The recordings vendored into this crate (with the Azure CLI's licence beside them);
/// a missing directory is a test failure, never a skip.
pub fn fixtures_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/azure-cli-recordings"));
    assert!(dir.is_dir(), "the Azure CLI recordings are missing: expected them in {}", dir.display());
    dir
}

pub fn load(file: &str) -> Cassette {
    let path = fixtures_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{} is not a valid cassette: {e}", path.display()))
}
