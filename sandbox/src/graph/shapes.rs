//! The default property sets Microsoft Graph v1.0 renders for a new application and
//! service principal (test_create_for_rbac_password.yaml): every property is present,
//! null or empty when unset, so clients that index into them see the real shape.

use serde_json::{Value, json};

/// Graph's default when the creator does not choose one (not `AzureADMyOrg`).
pub(crate) const DEFAULT_SIGN_IN_AUDIENCE: &str = "AzureADandPersonalMicrosoftAccount";

fn info() -> Value {
    json!({"logoUrl": null, "marketingUrl": null, "privacyStatementUrl": null, "supportUrl": null, "termsOfServiceUrl": null})
}

fn verified_publisher() -> Value {
    json!({"displayName": null, "verifiedPublisherId": null, "addedDateTime": null})
}

pub(crate) fn application_defaults() -> Value {
    json!({
        "deletedDateTime": null, "applicationTemplateId": null, "disabledByMicrosoftStatus": null,
        "description": null, "groupMembershipClaims": null, "identifierUris": [],
        "isDeviceOnlyAuthSupported": null, "isFallbackPublicClient": null, "notes": null,
        "serviceManagementReference": null, "signInAudience": DEFAULT_SIGN_IN_AUDIENCE, "tags": [],
        "tokenEncryptionKeyId": null, "samlMetadataUrl": null, "defaultRedirectUri": null,
        "certification": null, "optionalClaims": null, "servicePrincipalLockConfiguration": null,
        "requestSignatureVerification": null, "addIns": [],
        "api": {"acceptMappedClaims": null, "knownClientApplications": [], "requestedAccessTokenVersion": 2, "oauth2PermissionScopes": [], "preAuthorizedApplications": []},
        "appRoles": [], "info": info(), "keyCredentials": [],
        "parentalControlSettings": {"countriesBlockedForMinors": [], "legalAgeGroupRule": "Allow"},
        "passwordCredentials": [], "publicClient": {"redirectUris": []}, "requiredResourceAccess": [],
        "verifiedPublisher": verified_publisher(),
        "web": {"homePageUrl": null, "logoutUrl": null, "redirectUris": [], "implicitGrantSettings": {"enableAccessTokenIssuance": false, "enableIdTokenIssuance": false}, "redirectUriSettings": []},
        "spa": {"redirectUris": []},
    })
}

pub(crate) fn service_principal_defaults() -> Value {
    json!({
        "deletedDateTime": null, "alternativeNames": [], "appDescription": null, "applicationTemplateId": null,
        "appRoleAssignmentRequired": false, "description": null, "disabledByMicrosoftStatus": null,
        "homepage": null, "loginUrl": null, "logoutUrl": null, "notes": null, "notificationEmailAddresses": [],
        "preferredSingleSignOnMode": null, "preferredTokenSigningKeyThumbprint": null, "replyUrls": [],
        "servicePrincipalType": "Application", "tags": [], "tokenEncryptionKeyId": null,
        "samlSingleSignOnSettings": null, "addIns": [], "appRoles": [], "info": info(), "keyCredentials": [],
        "oauth2PermissionScopes": [], "passwordCredentials": [], "resourceSpecificApplicationPermissions": [],
        "verifiedPublisher": verified_publisher(),
    })
}

/// `base` with every key of `over` set on it.
pub(crate) fn overlay(mut base: Value, over: &Value) -> Value {
    if let (Some(b), Some(o)) = (base.as_object_mut(), over.as_object()) {
        for (k, v) in o {
            b.insert(k.clone(), v.clone());
        }
    }
    base
}
