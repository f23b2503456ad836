//! Resource provider registration: namespaces configured as unregistered refuse their
//! resource types with 409 `MissingSubscriptionRegistration` until registered through
//! `POST /subscriptions/{sub}/providers/{ns}/register`, which reports `Registering`
//! for a while, then `Registered` (reference/azure-rest-facts.md §1).

use http::{Method, StatusCode};
use serde_json::json;

use super::Ctx;
use super::errors::method_not_allowed;
use crate::Shared;
use crate::wire::Reply;

/// Always registered in every subscription.
const BUILT_IN: &[&str] = &["Microsoft.Resources", "Microsoft.Authorization"];

fn starts_unregistered(shared: &Shared, ns: &str) -> bool {
    !BUILT_IN.iter().any(|b| b.eq_ignore_ascii_case(ns))
        && shared.config.unregistered_providers.iter().any(|p| p.eq_ignore_ascii_case(ns))
}

/// `Registered`, `Registering` or `NotRegistered`, now.
fn registration_state(shared: &Shared, ns: &str) -> &'static str {
    if !starts_unregistered(shared, ns) {
        return "Registered";
    }
    match shared.state().provider_registrations.get(&ns.to_ascii_lowercase()) {
        Some(done_at) if shared.now() >= *done_at => "Registered",
        Some(_) => "Registering",
        None => "NotRegistered",
    }
}

fn render(ctx: &Ctx<'_>, ns: &str) -> Reply {
    Reply::json(
        StatusCode::OK,
        &json!({
            "id": format!("/subscriptions/{}/providers/{}", ctx.sub, ns),
            "namespace": ns,
            "registrationState": registration_state(ctx.shared, ns),
            "registrationPolicy": "RegistrationRequired",
            "resourceTypes": [],
        }),
    )
}

/// `GET /subscriptions/{sub}/providers/{ns}`.
pub(crate) fn show(ctx: &Ctx<'_>, ns: &str) -> Reply {
    if ctx.req.method != Method::GET {
        return method_not_allowed(&ctx.req.method);
    }
    render(ctx, ns)
}

/// `POST /subscriptions/{sub}/providers/{ns}/register`: starts (or repeats) registration.
pub(crate) fn register(ctx: &Ctx<'_>, ns: &str) -> Reply {
    if ctx.req.method != Method::POST {
        return method_not_allowed(&ctx.req.method);
    }
    if starts_unregistered(ctx.shared, ns) {
        let done_at = ctx.shared.now() + ctx.shared.config.provider_registration;
        ctx.shared.state().provider_registrations.entry(ns.to_ascii_lowercase()).or_insert(done_at);
    }
    render(ctx, ns)
}

/// The 409 for a request to a resource type of a provider that is not registered yet;
/// `None` when the request may proceed. The provider endpoints themselves and tenant-level
/// listings (`/providers/{ns}/operations`, which need no subscription) are exempt.
pub(crate) fn require_registration(shared: &Shared, segs: &[String]) -> Option<Reply> {
    let i = segs.iter().position(|s| s.eq_ignore_ascii_case("providers")).filter(|i| *i > 0)?;
    let ns = segs.get(i + 1)?;
    let is_provider_endpoint =
        i == 2 && (segs.len() == 4 || (segs.len() == 5 && segs[4].eq_ignore_ascii_case("register")));
    if is_provider_endpoint || registration_state(shared, ns) == "Registered" {
        return None;
    }
    let message = format!(
        "The subscription is not registered to use namespace '{ns}'. See https://aka.ms/rps-not-found for how to register subscriptions."
    );
    let body = json!({"error": {
        "code": "MissingSubscriptionRegistration",
        "message": message,
        "details": [{"code": "MissingSubscriptionRegistration", "target": ns, "message": message}],
    }});
    Some(Reply::json(StatusCode::CONFLICT, &body).with_error_code("MissingSubscriptionRegistration"))
}
