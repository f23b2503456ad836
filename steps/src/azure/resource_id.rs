//! ARM resource ids as runbooks write them: `{subscription}` filled in from the settings, the
//! resource's name, and the resource provider namespace it belongs to.

use crate::StepError;

const PLACEHOLDER: &str = "{subscription}";

/// `id` with `{subscription}` replaced; an error when it is needed but unknown, or when `id` is
/// not an absolute resource path.
pub fn resolve(id: &str, subscription_id: Option<&str>) -> Result<String, StepError> {
    let id = id.trim();
    if !id.starts_with('/') {
        return Err(StepError::permanent(format!("`{id}` is not a resource id"))
            .with_code("InvalidInputs")
            .with_hint("a full path such as /subscriptions/{subscription}/resourceGroups/NAME"));
    }
    if id.contains('?') || id.contains('#') {
        return Err(StepError::permanent(format!("`{id}` must not carry a query"))
            .with_code("InvalidInputs")
            .with_hint("give the api-version in `api_version`"));
    }
    if !id.contains(PLACEHOLDER) {
        return Ok(id.to_string());
    }
    match subscription_id {
        Some(sub) => Ok(id.replace(PLACEHOLDER, sub)),
        None => Err(StepError::permanent(format!("`{id}` names {{subscription}} but no subscription is known"))
            .with_code("SubscriptionUnknown")
            .with_hint(
                "set AZURE_SUBSCRIPTION_ID, put subscriptionId in the credentials file, or give `subscription_id`",
            )),
    }
}

/// The last path segment: the resource's name.
pub fn name_of(id: &str) -> String {
    id.trim_end_matches('/').rsplit('/').next().unwrap_or_default().to_string()
}

/// `/subscriptions/{sub}`, when `id` lies in a subscription.
pub fn subscription_of(id: &str) -> Option<String> {
    let mut segments = id.split('/').filter(|s| !s.is_empty());
    match (segments.next(), segments.next()) {
        (Some(first), Some(sub)) if first.eq_ignore_ascii_case("subscriptions") => Some(sub.to_string()),
        _ => None,
    }
}

/// The provider namespace of the innermost resource in `id` (`Microsoft.Network` for a subnet);
/// resource groups belong to `Microsoft.Resources`.
pub fn provider_namespace(id: &str) -> Option<String> {
    let segments: Vec<&str> = id.split('/').filter(|s| !s.is_empty()).collect();
    segments
        .iter()
        .rposition(|s| s.eq_ignore_ascii_case("providers"))
        .and_then(|i| segments.get(i + 1))
        .map(|ns| ns.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_placeholder_and_splits() {
        let id = resolve(
            "/subscriptions/{subscription}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s",
            Some("abc"),
        )
        .unwrap();
        assert_eq!(subscription_of(&id).as_deref(), Some("abc"));
        assert_eq!(name_of(&id), "s");
        assert_eq!(provider_namespace(&id).as_deref(), Some("Microsoft.Network"));
        assert_eq!(provider_namespace("/subscriptions/abc/resourceGroups/rg"), None);
        assert_eq!(
            resolve("/subscriptions/{subscription}", None).unwrap_err().code.as_deref(),
            Some("SubscriptionUnknown")
        );
        assert!(resolve("subscriptions/x", None).is_err());
    }
}
