//! `GET /subscriptions/{sub}/resourceGroups/{rg}/resources`: ARM's generic listing of the
//! tracked resources in a group, as `hypershift destroy infra azure --preserve-resource-group`
//! reads it to pick the cluster's resources (by name) and delete them by id. Tracked resources
//! are those with a location, so a private zone's virtual network links are listed (named
//! `<zone>/<link>`), while record sets, federated credentials and role assignments are not.

use http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use super::errors::{method_not_allowed, resource_group_not_found};
use super::{Ctx, rg_key};
use crate::state::Kind;
use crate::wire::Reply;

fn is_tracked(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::ResourceGroup
            | Kind::FederatedCredential
            | Kind::RecordSet
            | Kind::PrivateDnsRecordSet
            | Kind::RoleAssignment
    )
}

/// The name ARM lists a resource under: its type's name segments joined, `zone/link` for a
/// child resource.
fn generic_name(id: &str) -> String {
    let Some((_, after)) = id.rsplit_once("/providers/") else { return String::new() };
    after.split('/').skip(2).step_by(2).collect::<Vec<_>>().join("/")
}

pub(crate) fn list(ctx: &Ctx<'_>, rg: &str) -> Reply {
    if ctx.req.method != Method::GET {
        return method_not_allowed(&ctx.req.method);
    }
    let key = rg_key(&ctx.sub, rg);
    let state = ctx.shared.state();
    if !state.resources.contains_key(&key) {
        return resource_group_not_found(rg);
    }
    let prefix = format!("{key}/");
    let value: Vec<Value> = state
        .resources
        .iter()
        .filter(|(k, r)| k.starts_with(&prefix) && is_tracked(r.kind))
        .map(|(_, r)| {
            let mut item = Map::new();
            item.insert("id".into(), json!(r.id));
            item.insert("name".into(), json!(generic_name(&r.id)));
            for field in ["type", "sku", "kind", "location", "tags", "managedBy"] {
                if let Some(v) = r.body.get(field).filter(|v| !v.is_null()) {
                    item.insert(field.into(), v.clone());
                }
            }
            Value::Object(item)
        })
        .collect();
    Reply::json(StatusCode::OK, &json!({ "value": value }))
}

#[cfg(test)]
mod tests {
    use super::generic_name;

    #[test]
    fn child_resources_are_named_by_their_path() {
        let link = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateDnsZones/hc1.example.com/virtualNetworkLinks/hc1-abc12";
        assert_eq!(generic_name(link), "hc1.example.com/hc1-abc12");
        let ip = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/abc12";
        assert_eq!(generic_name(ip), "abc12");
    }
}
