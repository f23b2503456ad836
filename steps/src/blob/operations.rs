//! The two things a `blob` step does, each idempotent: upload a blob unless the same content is
//! already there, and create a container unless it exists.

use std::future::Future;

use azure_core::http::RequestContent;
use azure_core::http::headers::HeaderName;
use azure_storage_blob::models::{
    BlobClientGetPropertiesResultHeaders, BlobClientUploadOptions, BlobContainerClientCreateOptions,
    BlobContainerClientGetPropertiesResultHeaders, PublicAccessType,
};
use azure_storage_blob::{BlobClient, BlobContainerClient};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use tokio_util::sync::CancellationToken;

use super::content::Payload;
use super::errors::{AuthMode, Failure, from_blob_error, service_code};
use crate::{ErrorClass, StepError};

const ETAG: HeaderName = HeaderName::from_static("etag");

/// Awaits `work` unless the run is cancelled first.
async fn cancellable<T>(cancel: &CancellationToken, work: impl Future<Output = T>) -> Result<T, StepError> {
    tokio::select! {
        done = work => Ok(done),
        _ = cancel.cancelled() => Err(StepError::new(ErrorClass::Cancelled, "cancelled")),
    }
}

/// What an upload step found and did.
pub struct UploadReport {
    pub etag: Option<String>,
    pub content_md5: String,
    pub uploaded: bool,
    /// Whether the existing blob could be read to compare (a write-only SAS cannot).
    pub compared: bool,
}

/// Whether the existing blob already has our MD5 and content type: then there is nothing to do.
enum Existing {
    Same { etag: Option<String> },
    DifferentOrMissing,
    Unreadable,
}

async fn existing(
    client: &BlobClient,
    payload: &Payload,
    failure: &Failure<'_>,
    cancel: &CancellationToken,
) -> Result<Existing, StepError> {
    match cancellable(cancel, client.get_properties(None)).await? {
        Ok(properties) => {
            // The MD5 identifies the content (the length adds nothing, and a HEAD's
            // Content-Length is not reliable across servers); the type is part of what we publish.
            let same = properties.content_md5().ok().flatten().as_deref() == Some(payload.md5.as_slice())
                && properties.content_type().ok().flatten().as_deref() == Some(payload.content_type.as_str());
            if same {
                let etag = properties.etag().ok().flatten().map(|e| e.to_string());
                Ok(Existing::Same { etag })
            } else {
                Ok(Existing::DifferentOrMissing)
            }
        }
        Err(error) => match service_code(&error) {
            // No such blob (or container: the upload then reports that with its error body).
            Some((404, _)) => Ok(Existing::DifferentOrMissing),
            // A SAS without `r` may still write; then the upload is unconditional.
            Some((403, Some(code))) if code == "AuthorizationPermissionMismatch" && failure.auth == AuthMode::Sas => {
                Ok(Existing::Unreadable)
            }
            _ => Err(from_blob_error(error, &Failure { doing: "reading the properties of", ..*failure })),
        },
    }
}

pub async fn upload(
    client: &BlobClient,
    payload: &Payload,
    failure: &Failure<'_>,
    cancel: &CancellationToken,
) -> Result<UploadReport, StepError> {
    let compared = match existing(client, payload, failure, cancel).await? {
        Existing::Same { etag } => {
            return Ok(UploadReport {
                etag,
                content_md5: payload.content_md5.clone(),
                uploaded: false,
                compared: true,
            });
        }
        Existing::DifferentOrMissing => true,
        Existing::Unreadable => false,
    };
    let options = BlobClientUploadOptions {
        blob_content_type: Some(payload.content_type.clone()),
        // Stored as the blob's Content-MD5, which the next run compares against.
        blob_content_md5: Some(payload.md5.clone()),
        ..Default::default()
    };
    let content = RequestContent::from(payload.bytes.clone());
    let result =
        cancellable(cancel, client.upload(content, Some(options))).await?.map_err(|e| from_blob_error(e, failure))?;
    // Put Blob answers with the MD5 the service computed over what it received.
    if let Some(received) = &result.content_md5
        && received != &payload.md5
    {
        return Err(StepError::transient(
            format!(
                "{} {}: the service received content with MD5 {} but {} was sent",
                failure.doing,
                failure.url,
                STANDARD.encode(received),
                payload.content_md5
            ),
            None,
        )
        .with_code("Md5Mismatch"));
    }
    Ok(UploadReport {
        etag: result.etag.map(|e| e.to_string()),
        content_md5: payload.content_md5.clone(),
        uploaded: true,
        compared,
    })
}

/// Anonymous read access for a new container (`x-ms-blob-public-access`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublicAccess {
    None,
    Blob,
    Container,
}

impl PublicAccess {
    pub fn as_str(self) -> &'static str {
        match self {
            PublicAccess::None => "none",
            PublicAccess::Blob => "blob",
            PublicAccess::Container => "container",
        }
    }

    fn header(self) -> Option<PublicAccessType> {
        match self {
            PublicAccess::None => None,
            PublicAccess::Blob => Some(PublicAccessType::Blob),
            PublicAccess::Container => Some(PublicAccessType::Container),
        }
    }
}

/// What an ensure_container step found and did.
pub struct ContainerReport {
    pub created: bool,
    pub etag: Option<String>,
    /// The container's public access as observed ("none", "blob", "container"); None when a
    /// SAS without `r` could not read it.
    pub public_access: Option<String>,
}

pub async fn ensure_container(
    client: &BlobContainerClient,
    public_access: PublicAccess,
    failure: &Failure<'_>,
    cancel: &CancellationToken,
) -> Result<ContainerReport, StepError> {
    let options = BlobContainerClientCreateOptions { access: public_access.header(), ..Default::default() };
    let created = cancellable(cancel, client.create(Some(options))).await?;
    let error = match created {
        Ok(response) => {
            let etag = response.headers().get_optional_str(&ETAG).map(str::to_string);
            return Ok(ContainerReport {
                created: true,
                etag,
                public_access: Some(public_access.as_str().to_string()),
            });
        }
        Err(error) => error,
    };
    match service_code(&error) {
        Some((409, Some(code))) if code == "ContainerAlreadyExists" => {}
        _ => return Err(from_blob_error(error, failure)),
    }
    let existing = match cancellable(cancel, client.get_properties(None)).await? {
        Ok(properties) => properties,
        Err(error) => {
            return match service_code(&error) {
                Some((403, Some(code)))
                    if code == "AuthorizationPermissionMismatch" && failure.auth == AuthMode::Sas =>
                {
                    Ok(ContainerReport { created: false, etag: None, public_access: None })
                }
                _ => Err(from_blob_error(error, &Failure { doing: "reading the properties of", ..*failure })),
            };
        }
    };
    let observed = existing.access().ok().flatten().map(|a| a.to_string().to_ascii_lowercase());
    let observed = observed.unwrap_or_else(|| "none".to_string());
    if observed != public_access.as_str() {
        // Changing it on the data plane (Set Container ACL) would also drop the container's stored
        // access policies, so the step refuses rather than silently rewriting them.
        return Err(StepError::permanent(format!(
            "container {} exists with public access `{observed}`, not `{}`",
            failure.url,
            public_access.as_str()
        ))
        .with_code("ContainerPublicAccessDiffers")
        .with_hint(
            "change it through ARM: an `arm` ensure of .../blobServices/default/containers/NAME with properties.publicAccess and replace_if_different = true",
        ));
    }
    let etag = existing.etag().ok().flatten().map(|e| e.to_string());
    Ok(ContainerReport { created: false, etag, public_access: Some(observed) })
}
