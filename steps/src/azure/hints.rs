//! What an operator can do about an ARM error code: one plain sentence per code we know.

use azure_core::http::Method;

fn is_role_assignment(path: &str) -> bool {
    path.to_ascii_lowercase().contains("/providers/microsoft.authorization/roleassignments/")
}

/// A hint for `code`, given the request that failed (method and path say which permission is missing).
pub fn hint_for(code: &str, method: Method, path: &str) -> Option<String> {
    let hint = match code {
        "AuthorizationFailed" | "LinkedAuthorizationFailed" if is_role_assignment(path) => {
            "creating role assignments needs Owner or User Access Administrator (Microsoft.Authorization/roleAssignments/write) on the scope; ask for that role, then resume".to_string()
        }
        "AuthorizationFailed" | "LinkedAuthorizationFailed" => {
            let need = if method == Method::Get { "Reader" } else { "Contributor" };
            format!(
                "the signed-in principal lacks permission for this request: it needs at least {need} on the subscription or resource group; if access was granted moments ago, wait a few minutes and resume"
            )
        }
        "StorageAccountAlreadyTaken" => "storage account names are global across Azure and this one belongs to someone else (or was deleted recently elsewhere): choose another name".into(),
        "StorageAccountAlreadyExists" => "a storage account of this name exists in another resource group of this subscription: use that group or another name".into(),
        "AccountNameInvalid" => "storage account names are 3-24 characters, lowercase letters and digits only".into(),
        "InvalidResourceName" | "InvalidResourceGroup" | "ResourceGroupNameInvalid" | "InvalidResourceNamespace" => {
            "the name breaks the naming rules of this resource type (see https://aka.ms/ResourceNameRules): fix it in the runbook or its variables".into()
        }
        "InvalidApiVersionParameter" | "NoRegisteredProviderFound" | "InvalidResourceType" => {
            "check `api_version` and the resource type in `id` (see the api-version table in the reference)".into()
        }
        "ResourceGroupNotFound" => "create the resource group first: an `arm` ensure step that this step references or lists in `after`".into(),
        "ParentResourceNotFound" => "a parent created moments ago can take seconds to become visible: give the step `retry` so it waits that out; if it persists, create the parent first".into(),
        "PrincipalNotFound" => "a new identity takes up to minutes to replicate in Entra: give the step `retry` (several attempts with back-off). If it persists, check principal_id (the identity's principalId, not its clientId)".into(),
        "ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity" => {
            "federated credentials of one identity must be written one at a time: give these steps the same `serialize` key".into()
        }
        "AnotherOperationInProgress" => "another change to this network resource is running: give the step `retry`, or order the steps that change it".into(),
        "ResourceGroupBeingDeleted" => "the resource group is still being deleted: the step succeeds once the deletion has finished (give it `retry` to wait)".into(),
        "MissingSubscriptionRegistration" => "the resource provider was not registered for the subscription; registration has been started, so another attempt (`retry`) succeeds once it completes".into(),
        "SubscriptionNotFound" => "check AZURE_SUBSCRIPTION_ID (or the credentials file) and that the principal can see that subscription".into(),
        "InvalidAuthenticationTokenTenant" => "the credential's tenant does not own this subscription: check AZURE_TENANT_ID or `az account show`".into(),
        "InvalidAuthenticationToken" | "InvalidAuthenticationTokenAudience" | "AuthenticationFailed" | "AuthenticationFailedInvalidHeader" => {
            "the access token was refused: check RUNBOOK_AZURE_CREDENTIAL, RUNBOOK_ARM_ENDPOINT and RUNBOOK_ARM_SCOPE".into()
        }
        "RoleAssignmentUpdateNotPermitted" => "an assignment with this name exists for another principal, e.g. the identity was recreated with a new principal id: delete the old assignment, then resume".into(),
        "RoleDefinitionDoesNotExist" | "InvalidRoleDefinitionId" => "check role_definition_id: the GUID of a role, e.g. Contributor b24988ac-6180-42a0-ab88-20f7382dd24c".into(),
        "PublicAccessNotPermitted" => "the storage account disallows public access: set properties.allowBlobPublicAccess = true on the account".into(),
        "InvalidRequestContent" | "InvalidRequestFormat" | "LocationRequired" | "MissingRequiredProperty" | "InvalidParameter" | "BadRequest" => {
            "the request body was refused: check `body` against the resource type's REST reference".into()
        }
        "InUseSubnetCannotBeDeleted" => "a PUT without every subnet would delete one that is in use: manage subnets with their own `ensure` steps".into(),
        "ResourceNotFound" | "NotFound" => "the resource does not exist: check `id`, or set ok_if_missing = true when that is acceptable".into(),
        _ => return None,
    };
    Some(hint)
}
