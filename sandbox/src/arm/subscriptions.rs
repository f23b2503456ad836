//! The ARM endpoints that come before any resource: the anonymous cloud metadata
//! (`GET /metadata/endpoints`, how `az cloud register --endpoint-resource-manager` discovers a
//! cloud), and the caller's subscriptions and tenants (`GET /subscriptions`, `GET /tenants`,
//! what `az login` lists).

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::errors::method_not_allowed;
use crate::Shared;
use crate::wire::{Reply, Req};

/// `GET /metadata/endpoints?api-version=…`: answered without authentication, as ARM does.
pub(crate) fn metadata_endpoints(shared: &Shared, req: &Req) -> Option<Reply> {
    let segs: Vec<&str> = req.segments.iter().map(String::as_str).collect();
    if !matches!(segs.as_slice(), [m, e] if m.eq_ignore_ascii_case("metadata") && e.eq_ignore_ascii_case("endpoints")) {
        return None;
    }
    if req.method != Method::GET {
        return Some(method_not_allowed(&req.method));
    }
    let endpoints = &shared.endpoints;
    // The token audiences are Azure's own: ARM accepts tokens for them and az asks for
    // them. Graph's resource is the sandbox's Graph URL, so its tokens name it.
    Some(Reply::json(
        StatusCode::OK,
        &json!({
            "name": crate::AZURE_CLI_CLOUD,
            "portal": endpoints.arm,
            "authentication": {
                "loginEndpoint": format!("{}/", endpoints.entra),
                "audiences": ["https://management.core.windows.net/", "https://management.azure.com/"],
                "tenant": "common",
                "identityProvider": "AAD",
            },
            "resourceManager": format!("{}/", endpoints.arm),
            "microsoftGraphResourceId": format!("{}/", endpoints.graph),
            "suffixes": {
                "storage": "core.windows.net",
                "keyVaultDns": "vault.azure.net",
                "acrLoginServer": "azurecr.io",
            },
        }),
    ))
}

/// The one subscription, as `GET /subscriptions/{id}` and the list show it.
pub(crate) fn render(shared: &Shared) -> Value {
    let sub = &shared.config.subscription_id;
    json!({
        "id": format!("/subscriptions/{sub}"),
        "authorizationSource": "RoleBased",
        "managedByTenants": [],
        "subscriptionId": sub,
        "tenantId": shared.config.tenant_id,
        "displayName": "runbook sandbox",
        "state": "Enabled",
        "subscriptionPolicies": {"locationPlacementId": "Public_2014-09-01", "quotaId": "Sandbox", "spendingLimit": "Off"},
    })
}

/// `GET /subscriptions` and `GET /tenants`; `None` for every other path.
pub(crate) fn tenant_level(shared: &Shared, req: &Req, segs: &[String]) -> Option<Reply> {
    let [only] = segs else { return None };
    let value = if only.eq_ignore_ascii_case("subscriptions") {
        render(shared)
    } else if only.eq_ignore_ascii_case("tenants") {
        let tenant = &shared.config.tenant_id;
        json!({
            "id": format!("/tenants/{tenant}"),
            "tenantId": tenant,
            "tenantCategory": "Home",
            "countryCode": "US",
            "displayName": "runbook sandbox",
            "domains": ["sandbox.onmicrosoft.com"],
            "defaultDomain": "sandbox.onmicrosoft.com",
            "tenantType": "AAD",
        })
    } else {
        return None;
    };
    if req.method != Method::GET {
        return Some(method_not_allowed(&req.method));
    }
    Some(Reply::json(StatusCode::OK, &json!({ "value": [value] })))
}
