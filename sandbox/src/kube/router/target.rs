//! A resource URL (`/api/v1/...`, `/apis/{g}/{v}/...`) resolved against the catalog, and the
//! verb its method makes.

use http::Method;

use crate::kube::KubeShared;
use crate::kube::catalog::ResourceDef;
use crate::kube::errors::KubeError;
use crate::wire::Req;

/// A resource URL, split.
pub(crate) struct Target {
    pub res: ResourceDef,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
}

/// Resolves `/api/v1/...` and `/apis/{g}/{v}/...` to a resource, namespace, name and
/// subresource.
pub(super) fn parse_target(shared: &KubeShared, segs: &[&str]) -> Result<Target, KubeError> {
    let (group, version, rest) = match segs {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(KubeError::no_route()),
    };
    let store = shared.store();
    let find = |plural: &str| store.catalog.find(group, version, plural).cloned().ok_or_else(KubeError::no_route);
    let target = match rest {
        ["namespaces", ns, plural, tail @ ..]
            if store.catalog.find(group, version, plural).is_some_and(|r| r.namespaced) =>
        {
            let res = find(plural)?;
            match tail {
                [] => Target { res, namespace: Some(ns.to_string()), name: None, sub: None },
                [name] => Target { res, namespace: Some(ns.to_string()), name: Some(name.to_string()), sub: None },
                [name, sub] => Target {
                    res,
                    namespace: Some(ns.to_string()),
                    name: Some(name.to_string()),
                    sub: Some(sub.to_string()),
                },
                _ => return Err(KubeError::no_route()),
            }
        }
        [plural] => Target { res: find(plural)?, namespace: None, name: None, sub: None },
        [plural, name] => {
            let res = find(plural)?;
            if res.namespaced {
                return Err(KubeError::no_route());
            }
            Target { res, namespace: None, name: Some(name.to_string()), sub: None }
        }
        [plural, name, sub] => {
            let res = find(plural)?;
            if res.namespaced {
                return Err(KubeError::no_route());
            }
            Target { res, namespace: None, name: Some(name.to_string()), sub: Some(sub.to_string()) }
        }
        _ => return Err(KubeError::no_route()),
    };
    if let Some(sub) = &target.sub {
        let known = sub == "status" && target.res.status_subresource
            || sub == "scale" && target.res.scale.is_some()
            || sub == "log" && target.res.log_subresource;
        if !known {
            return Err(KubeError::no_route());
        }
    }
    Ok(target)
}

pub(super) fn verb_of(method: &Method, target: &Target, req: &Req) -> Result<String, KubeError> {
    let collection = target.name.is_none();
    Ok(match (method.as_str(), collection) {
        ("GET", true) if matches!(req.query("watch"), Some("true" | "1")) => "watch",
        ("GET", true) => "list",
        ("GET", false) => "get",
        ("POST", true) => "create",
        ("PUT", false) => "update",
        ("PATCH", false) => "patch",
        ("DELETE", false) => "delete",
        ("DELETE", true) => "deletecollection",
        _ => {
            return Err(KubeError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
    }
    .to_string())
}
