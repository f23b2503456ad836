//! GETs that name no resource: the version, health, discovery (legacy and aggregated) and
//! OpenAPI v3 documents.

use http::StatusCode;
use serde_json::{Value, json};

use crate::kube::authz::{Attributes, KubeIdentity};
use crate::kube::errors::KubeError;
use crate::kube::http::KubeReply;
use crate::kube::{KubeShared, discovery, openapi};
use crate::wire::Req;

/// The answer for a non-resource path, or None when `segs` names a resource.
pub(super) fn answer(
    shared: &KubeShared,
    identity: &KubeIdentity,
    req: &Req,
    segs: &[&str],
    accept: &str,
) -> Option<Result<KubeReply, KubeError>> {
    let nonresource = Attributes { verb: "get".into(), path: Some(req.path.clone()), ..Attributes::default() };
    let allowed = || {
        if identity.allows(&nonresource) {
            Ok(())
        } else {
            Err(KubeError::forbidden_path(&identity.username, "get", &req.path))
        }
    };
    let found =
        |document: Option<Value>| document.map(|v| KubeReply::json(StatusCode::OK, &v)).ok_or_else(KubeError::no_route);
    let reply = match segs {
        ["healthz"] | ["readyz"] | ["livez"] => Ok(KubeReply::text(StatusCode::OK, "ok")),
        ["version"] => allowed().map(|()| KubeReply::json(StatusCode::OK, &version())),
        ["api"] | ["apis"] => allowed().map(|()| {
            let core = segs == ["api"];
            let store = shared.store();
            match discovery::aggregated_version(accept) {
                Some(v) => KubeReply::typed(
                    StatusCode::OK,
                    &discovery::aggregated(&store.catalog, core, v),
                    &discovery::aggregated_content_type(v),
                ),
                None if core => {
                    KubeReply::json(StatusCode::OK, &discovery::api_versions(shared.url.trim_start_matches("https://")))
                }
                None => KubeReply::json(StatusCode::OK, &discovery::api_group_list(&store.catalog)),
            }
        }),
        ["api", version] => {
            allowed().and_then(|()| found(discovery::resource_list(&shared.store().catalog, "", version)))
        }
        ["apis", group] => allowed().and_then(|()| found(discovery::api_group(&shared.store().catalog, group))),
        ["apis", group, version] => {
            allowed().and_then(|()| found(discovery::resource_list(&shared.store().catalog, group, version)))
        }
        ["openapi", "v3"] => {
            allowed().map(|()| KubeReply::json(StatusCode::OK, &openapi::index(&shared.store().catalog)))
        }
        ["openapi", "v3", rest @ ..] => {
            allowed().and_then(|()| found(openapi::document(&shared.store().catalog, &rest.join("/"))))
        }
        _ => return None,
    };
    Some(reply)
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "emulationMajor": "1",
        "emulationMinor": "32",
        "gitVersion": "v1.32.4",
        "gitCommit": "59526cd4867447956156ae3a602fcbac10a2c335",
        "gitTreeState": "clean",
        "buildDate": "2025-04-22T16:01:48Z",
        "goVersion": "go1.23.6",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}
