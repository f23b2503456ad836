//! Blob containers and their blobs.

use bytes::Bytes;

pub(crate) struct ContainerData {
    /// `None` (private), `Some("blob")` or `Some("container")` (data-plane spelling).
    pub public_access: Option<String>,
    pub etag: String,
    pub last_modified: jiff::Timestamp,
    pub blobs: std::collections::BTreeMap<String, BlobData>,
}

pub(crate) struct BlobData {
    pub content: Bytes,
    pub content_type: String,
    pub content_md5: String,
    pub etag: String,
    pub last_modified: jiff::Timestamp,
    pub created: jiff::Timestamp,
}

/// An ETag in the Blob service's `0x8D…` style.
pub(crate) fn new_etag() -> String {
    // Real time: an ETag must change with every write, and a simulated clock may stand still
    // between writes; nothing reads a time from it.
    let nanos = jiff::Timestamp::now().as_nanosecond() as u128;
    format!("\"0x{:X}\"", nanos / 100 + 0x8D0_0000_0000_0000)
}
