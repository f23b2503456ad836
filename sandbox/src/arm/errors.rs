//! ARM error bodies. Most resource providers wrap errors as `{"error":{"code","message"}}`;
//! Azure DNS answers some with the un-wrapped `{"code","message"}` (test_dns_delegation.yaml).

use http::StatusCode;
use serde_json::json;

use crate::wire::Reply;

pub(crate) fn arm_error(status: StatusCode, code: &str, message: &str) -> Reply {
    Reply::json(status, &json!({"error": {"code": code, "message": message}})).with_error_code(code)
}

/// The un-wrapped shape Azure DNS uses for record-set errors.
pub(crate) fn unwrapped_error(status: StatusCode, code: &str, message: &str) -> Reply {
    Reply::json(status, &json!({"code": code, "message": message})).with_error_code(code)
}

pub(crate) fn resource_not_found(full_type: &str, name: &str, rg: &str) -> Reply {
    arm_error(
        StatusCode::NOT_FOUND,
        "ResourceNotFound",
        &format!(
            "The Resource '{full_type}/{name}' under resource group '{rg}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix"
        ),
    )
}

pub(crate) fn resource_group_not_found(rg: &str) -> Reply {
    arm_error(StatusCode::NOT_FOUND, "ResourceGroupNotFound", &format!("Resource group '{rg}' could not be found."))
}

pub(crate) fn parent_not_found(action: &str, child_type: &str, parent_id: &str) -> Reply {
    arm_error(
        StatusCode::NOT_FOUND,
        "ParentResourceNotFound",
        &format!(
            "Failed to perform '{action}' on resource(s) of type '{child_type}', because the parent resource '{parent_id}' could not be found."
        ),
    )
}

pub(crate) fn invalid_content(err: &serde_json::Error) -> Reply {
    arm_error(
        StatusCode::BAD_REQUEST,
        "InvalidRequestContent",
        &format!("The request content was invalid and could not be deserialized: '{err}'."),
    )
}

pub(crate) fn location_required() -> Reply {
    arm_error(StatusCode::BAD_REQUEST, "LocationRequired", "The location property is required for this definition.")
}

pub(crate) fn method_not_allowed(method: &http::Method) -> Reply {
    arm_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        &format!("The requested resource does not support http method '{method}'."),
    )
}
