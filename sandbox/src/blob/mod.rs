//! Blob service data plane, path-style like Azurite (`/{account}/{container}/{blob}`), or with
//! the account in the host name as Azure names it (`{account}.blob.core.windows.net/{container}/{blob}`):
//! containers, block blobs, anonymous reads of public containers, SAS or bearer for
//! everything else, XML errors with the real Blob error codes.

pub(crate) mod sas;
pub(crate) mod shared_key;

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http::{Method, StatusCode};
use md5::{Digest, Md5};

use crate::Shared;
use crate::auth::{self, STORAGE_AUDIENCES};
use crate::latency::Operation;
use crate::state::{BlobData, ContainerData, blobs_etag};
use crate::wire::{Reply, Req};

const VERSION: &str = "2026-02-06";

pub(crate) fn blob_error(status: StatusCode, code: &str, message: &str) -> Reply {
    let body = format!(
        "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>{message}\nRequestId:{}\nTime:{}</Message></Error>",
        uuid::Uuid::new_v4(),
        jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S.%7fZ")
    );
    Reply {
        status,
        headers: vec![
            ("content-type".into(), "application/xml".into()),
            ("x-ms-error-code".into(), code.into()),
            ("x-ms-version".into(), VERSION.into()),
        ],
        body: Bytes::from(body),
        error_code: Some(code.into()),
        reset: false,
    }
}

fn http_date(t: jiff::Timestamp) -> String {
    t.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

enum Access {
    Anonymous,
    Authorized { permissions: Option<String> },
}

fn authorize(shared: &Shared, req: &Req, account: &str, container: &str, blob: Option<&str>) -> Result<Access, Reply> {
    if let Some(header) = req.header("authorization") {
        if crate::blob::shared_key::parse(header).is_some() {
            let keys = shared.state().storage_account(account).map(|a| a.keys.clone()).unwrap_or_default();
            return crate::blob::shared_key::verify(req, header, account, &keys)
                .map(|()| Access::Authorized { permissions: None })
                .map_err(|detail| blob_error(StatusCode::FORBIDDEN, "AuthenticationFailed", &format!("Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.\n{detail}")));
        }
        let Some(token) = auth::bearer(Some(header)) else {
            return Err(blob_error(
                StatusCode::FORBIDDEN,
                "AuthenticationFailed",
                "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
            ));
        };
        let claims = auth::verify(&shared.token_key, token, shared.timestamp().as_second())
            .map_err(|_| blob_error(StatusCode::UNAUTHORIZED, "InvalidAuthenticationInfo", "Server failed to authenticate the request. Please refer to the information in the www-authenticate header."))?;
        if !STORAGE_AUDIENCES.contains(&claims.aud.as_str()) {
            return Err(blob_error(
                StatusCode::UNAUTHORIZED,
                "InvalidAuthenticationInfo",
                "Audience validation failed. Audience did not match.",
            ));
        }
        return authorize_bearer(shared, req, account, blob.is_some(), &claims.oid);
    }
    if req.query("sig").is_some() {
        let keys = shared.state().storage_account(account).map(|a| a.keys.clone()).unwrap_or_default();
        return crate::blob::sas::verify(&req.query, account, &keys, container, blob, shared.timestamp())
            .map(|g| Access::Authorized { permissions: Some(g.permissions) })
            .map_err(|detail| blob_error(StatusCode::FORBIDDEN, "AuthenticationFailed", &format!("Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.\n{detail}")));
    }
    Ok(Access::Anonymous)
}

/// A bearer token carries no permissions of its own: Azure RBAC decides, from the roles
/// assigned to the caller at the account or above. Blob reads and writes are data actions
/// (Storage Blob Data Reader/Contributor/Owner grant them; Owner and Contributor do not);
/// container writes are control actions.
fn authorize_bearer(
    shared: &Shared,
    req: &Req,
    account: &str,
    is_blob: bool,
    principal: &str,
) -> Result<Access, Reply> {
    let (suffix, data) = match (is_blob || req.query("comp") == Some("list"), &req.method) {
        (true, &Method::PUT) => ("blobs/write", true),
        (true, &Method::DELETE) => ("blobs/delete", true),
        (true, _) => ("blobs/read", true),
        (false, &Method::PUT) => ("write", false),
        (false, &Method::DELETE) => ("delete", false),
        (false, _) => ("read", false),
    };
    let operation = crate::arm::container_permission(suffix);
    let state = shared.state();
    let account_id = state.storage_account(account).map(|a| a.id.clone()).unwrap_or_default();
    if crate::arm::grants(&state, principal, &account_id, &operation, data) {
        Ok(Access::Authorized { permissions: None })
    } else {
        Err(blob_error(
            StatusCode::FORBIDDEN,
            "AuthorizationPermissionMismatch",
            "This request is not authorized to perform this operation using this permission.",
        ))
    }
}

fn needs(access: &Access, perm: char) -> Result<(), Reply> {
    match access {
        Access::Authorized { permissions: Some(p) } if !p.contains(perm) => Err(blob_error(
            StatusCode::FORBIDDEN,
            "AuthorizationPermissionMismatch",
            "This request is not authorized to perform this operation using this permission.",
        )),
        Access::Anonymous => {
            Err(blob_error(StatusCode::NOT_FOUND, "ResourceNotFound", "The specified resource does not exist."))
        }
        _ => Ok(()),
    }
}

pub(crate) async fn handle(shared: &Arc<Shared>, req: Req) -> Reply {
    // The account comes from the host when the request named one; a SharedKey signature still
    // covers `/{account}{path}` (see shared_key), which is the same resource either way.
    let segs: Vec<String> = req.host_account.iter().cloned().chain(req.segments.iter().cloned()).collect();
    let Some(account) = segs.first().map(|a| a.to_ascii_lowercase()) else {
        return blob_error(
            StatusCode::BAD_REQUEST,
            "InvalidUri",
            "The requested URI does not represent any resource on the server.",
        );
    };
    let allow_public = match shared.state().storage_account(&account) {
        Some(a) => a.body["properties"]["allowBlobPublicAccess"] == serde_json::json!(true),
        None => return blob_error(StatusCode::NOT_FOUND, "ResourceNotFound", "The specified resource does not exist."),
    };
    let Some(container) = segs.get(1).cloned() else {
        return blob_error(
            StatusCode::BAD_REQUEST,
            "InvalidUri",
            "Account-level operations are not modelled by the sandbox.",
        );
    };
    let blob_name = (segs.len() > 2).then(|| segs[2..].join("/"));
    let access = match authorize(shared, &req, &account, &container, blob_name.as_deref()) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let key = (account.clone(), container.clone());
    let is_container_op = req.query("restype") == Some("container");
    let reply = match (blob_name, is_container_op) {
        (None, true) | (None, false) => container_op(shared, &req, &access, &key, allow_public).await,
        (Some(name), _) => blob_op(shared, &req, &access, &key, &name, allow_public).await,
    };
    reply.with_header("x-ms-version", VERSION)
}

async fn container_op(
    shared: &Shared,
    req: &Req,
    access: &Access,
    key: &(String, String),
    allow_public: bool,
) -> Reply {
    match req.method {
        Method::PUT => {
            if let Err(r) = needs(access, 'c').or_else(|_| needs(access, 'w')) {
                return r;
            }
            let public = req.header("x-ms-blob-public-access").map(|v| v.to_ascii_lowercase());
            if let Some(p) = &public {
                if p != "container" && p != "blob" {
                    return blob_error(
                        StatusCode::BAD_REQUEST,
                        "InvalidHeaderValue",
                        "The value for one of the HTTP headers is not in the correct format.",
                    );
                }
                if !allow_public {
                    return blob_error(
                        StatusCode::CONFLICT,
                        "PublicAccessNotPermitted",
                        "Public access is not permitted on this storage account.",
                    );
                }
            }
            if !crate::arm::valid_container_name(&key.1) {
                return blob_error(
                    StatusCode::BAD_REQUEST,
                    "InvalidResourceName",
                    "The specifed resource name contains invalid characters.",
                );
            }
            shared.sleep(Operation::BlobWrite).await;
            let mut state = shared.state();
            if state.containers.contains_key(key) {
                return blob_error(
                    StatusCode::CONFLICT,
                    "ContainerAlreadyExists",
                    "The specified container already exists.",
                );
            }
            let data = ContainerData {
                public_access: public,
                etag: blobs_etag(),
                last_modified: shared.timestamp(),
                blobs: Default::default(),
            };
            let reply = Reply::empty(StatusCode::CREATED)
                .with_header("etag", data.etag.clone())
                .with_header("last-modified", http_date(data.last_modified));
            state.containers.insert(key.clone(), data);
            reply
        }
        Method::GET | Method::HEAD if req.query("comp") == Some("list") => {
            let state = shared.state();
            let Some(data) = state.containers.get(key) else {
                return blob_error(
                    StatusCode::NOT_FOUND,
                    "ContainerNotFound",
                    "The specified container does not exist.",
                );
            };
            if matches!(access, Access::Anonymous)
                && !(allow_public && data.public_access.as_deref() == Some("container"))
            {
                return blob_error(StatusCode::NOT_FOUND, "ResourceNotFound", "The specified resource does not exist.");
            }
            let mut xml = format!(
                "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"{}\" ContainerName=\"{}\"><Blobs>",
                shared.endpoints.blob_for(&key.0),
                key.1
            );
            for (name, b) in &data.blobs {
                xml.push_str(&format!("<Blob><Name>{name}</Name><Properties><Last-Modified>{}</Last-Modified><Etag>{}</Etag><Content-Length>{}</Content-Length><Content-Type>{}</Content-Type><Content-MD5>{}</Content-MD5><BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState></Properties></Blob>", http_date(b.last_modified), b.etag.trim_matches('"'), b.content.len(), b.content_type, b.content_md5));
            }
            xml.push_str("</Blobs><NextMarker /></EnumerationResults>");
            Reply {
                status: StatusCode::OK,
                headers: vec![("content-type".into(), "application/xml".into())],
                body: Bytes::from(xml),
                error_code: None,
                reset: false,
            }
        }
        Method::GET | Method::HEAD => {
            if let Err(r) = needs(access, 'r') {
                return r;
            }
            let state = shared.state();
            match state.containers.get(key) {
                Some(data) => {
                    let mut r = Reply::empty(StatusCode::OK)
                        .with_header("etag", data.etag.clone())
                        .with_header("last-modified", http_date(data.last_modified))
                        .with_header("x-ms-lease-status", "unlocked")
                        .with_header("x-ms-lease-state", "available");
                    if let Some(p) = &data.public_access {
                        r = r.with_header("x-ms-blob-public-access", p.clone());
                    }
                    r
                }
                None => {
                    blob_error(StatusCode::NOT_FOUND, "ContainerNotFound", "The specified container does not exist.")
                }
            }
        }
        Method::DELETE => {
            if let Err(r) = needs(access, 'd') {
                return r;
            }
            match shared.state().containers.remove(key) {
                Some(_) => Reply::empty(StatusCode::ACCEPTED),
                None => {
                    blob_error(StatusCode::NOT_FOUND, "ContainerNotFound", "The specified container does not exist.")
                }
            }
        }
        _ => blob_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "UnsupportedHttpVerb",
            "The resource doesn't support specified Http Verb.",
        ),
    }
}

async fn blob_op(
    shared: &Shared,
    req: &Req,
    access: &Access,
    key: &(String, String),
    name: &str,
    allow_public: bool,
) -> Reply {
    match req.method {
        Method::PUT => {
            if let Err(r) = needs(access, 'w').or_else(|_| needs(access, 'c')) {
                return r;
            }
            match req.header("x-ms-blob-type") {
                Some(t) if t.eq_ignore_ascii_case("BlockBlob") => {}
                Some(_) => {
                    return blob_error(
                        StatusCode::BAD_REQUEST,
                        "InvalidHeaderValue",
                        "Only BlockBlob is modelled by the sandbox.",
                    );
                }
                None => {
                    return blob_error(
                        StatusCode::BAD_REQUEST,
                        "MissingRequiredHeader",
                        "An HTTP header that's mandatory for this request is not specified.",
                    );
                }
            }
            let md5 = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&req.body));
            if let Some(sent) = req.header("content-md5")
                && sent != md5
            {
                return blob_error(
                    StatusCode::BAD_REQUEST,
                    "Md5Mismatch",
                    "The MD5 value specified in the request did not match with the MD5 value calculated by the server.",
                );
            }
            shared.sleep(Operation::BlobWrite).await;
            let mut state = shared.state();
            let Some(container) = state.containers.get_mut(key) else {
                return blob_error(
                    StatusCode::NOT_FOUND,
                    "ContainerNotFound",
                    "The specified container does not exist.",
                );
            };
            let now = shared.timestamp();
            let created = container.blobs.get(name).map(|b| b.created).unwrap_or(now);
            let blob = BlobData {
                content: req.body.clone(),
                content_type: req
                    .header("x-ms-blob-content-type")
                    .or(req.header("content-type"))
                    .unwrap_or("application/octet-stream")
                    .to_string(),
                content_md5: md5.clone(),
                etag: blobs_etag(),
                last_modified: now,
                created,
            };
            let reply = Reply::empty(StatusCode::CREATED)
                .with_header("etag", blob.etag.clone())
                .with_header("last-modified", http_date(now))
                .with_header("content-md5", md5)
                .with_header("x-ms-request-server-encrypted", "true");
            container.blobs.insert(name.to_string(), blob);
            reply
        }
        Method::GET | Method::HEAD => {
            let state = shared.state();
            let Some(container) = state.containers.get(key) else {
                return match access {
                    Access::Anonymous => {
                        blob_error(StatusCode::NOT_FOUND, "ResourceNotFound", "The specified resource does not exist.")
                    }
                    _ => blob_error(
                        StatusCode::NOT_FOUND,
                        "ContainerNotFound",
                        "The specified container does not exist.",
                    ),
                };
            };
            if matches!(access, Access::Anonymous) {
                if container.public_access.is_some() && !allow_public {
                    return blob_error(
                        StatusCode::CONFLICT,
                        "PublicAccessNotPermitted",
                        "Public access is not permitted on this storage account.",
                    );
                }
                if container.public_access.is_none() {
                    return blob_error(
                        StatusCode::NOT_FOUND,
                        "ResourceNotFound",
                        "The specified resource does not exist.",
                    );
                }
            } else if let Err(r) = needs(access, 'r') {
                return r;
            }
            let Some(b) = container.blobs.get(name) else {
                return blob_error(StatusCode::NOT_FOUND, "BlobNotFound", "The specified blob does not exist.");
            };
            let body = if req.method == Method::HEAD { Bytes::new() } else { b.content.clone() };
            Reply {
                status: StatusCode::OK,
                headers: vec![
                    ("content-type".into(), b.content_type.clone()),
                    ("etag".into(), b.etag.clone()),
                    ("last-modified".into(), http_date(b.last_modified)),
                    ("content-md5".into(), b.content_md5.clone()),
                    ("x-ms-blob-type".into(), "BlockBlob".into()),
                    ("x-ms-creation-time".into(), http_date(b.created)),
                    ("x-ms-lease-status".into(), "unlocked".into()),
                    ("x-ms-lease-state".into(), "available".into()),
                    ("x-ms-server-encrypted".into(), "true".into()),
                    ("accept-ranges".into(), "bytes".into()),
                ],
                body,
                error_code: None,
                reset: false,
            }
        }
        Method::DELETE => {
            if let Err(r) = needs(access, 'd') {
                return r;
            }
            let mut state = shared.state();
            match state.containers.get_mut(key).and_then(|c| c.blobs.remove(name)) {
                Some(_) => Reply::empty(StatusCode::ACCEPTED).with_header("x-ms-delete-type-permanent", "true"),
                None => blob_error(StatusCode::NOT_FOUND, "BlobNotFound", "The specified blob does not exist."),
            }
        }
        _ => blob_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "UnsupportedHttpVerb",
            "The resource doesn't support specified Http Verb.",
        ),
    }
}
