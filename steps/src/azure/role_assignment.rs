//! Role assignments named deterministically, so a re-run finds the one it made: the name is
//! UUIDv5(URL namespace, "scope|role-guid|principal-id", all lower-case). Another tool can compute
//! the same name from the same three values.

use azure_core::http::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::errors::ArmError;
use super::resource_id::subscription_of;
use super::session::ArmSession;
use super::{errors, registration};
use crate::StepError;

pub const API_VERSION: &str = "2022-04-01";
const ROLE_DEFINITIONS: &str = "/providers/Microsoft.Authorization/roleDefinitions/";

/// One principal holding one role at one scope.
pub struct RoleAssignment {
    /// A subscription, resource group or resource id, without a trailing slash.
    pub scope: String,
    /// The full role definition id.
    pub role_definition_id: String,
    pub principal_id: String,
    /// Sent so ARM skips the directory lookup that fails while a new principal replicates.
    pub principal_type: String,
}

impl RoleAssignment {
    /// `role` is a role GUID or a full role definition id; a GUID is placed in the scope's
    /// subscription (or `subscription_id` when the scope has none).
    pub fn new(
        scope: &str,
        role: &str,
        principal_id: &str,
        principal_type: &str,
        subscription_id: Option<&str>,
    ) -> Result<Self, StepError> {
        let scope = scope.trim().trim_end_matches('/').to_string();
        if !scope.starts_with('/') {
            return Err(
                StepError::permanent(format!("scope `{scope}` is not a resource id")).with_code("InvalidInputs")
            );
        }
        let role = role.trim();
        let role_definition_id = if role.starts_with('/') {
            role.to_string()
        } else if Uuid::parse_str(role).is_ok() {
            match subscription_of(&scope).or_else(|| subscription_id.map(str::to_string)) {
                Some(sub) => format!("/subscriptions/{sub}{ROLE_DEFINITIONS}{role}"),
                None => format!("{ROLE_DEFINITIONS}{role}"),
            }
        } else {
            return Err(StepError::permanent(format!("role_definition_id `{role}` is neither a GUID nor an id"))
                .with_code("InvalidInputs")
                .with_hint("e.g. b24988ac-6180-42a0-ab88-20f7382dd24c (Contributor)"));
        };
        if Uuid::parse_str(principal_id.trim()).is_err() {
            return Err(StepError::permanent(format!("principal_id `{principal_id}` is not a GUID"))
                .with_code("InvalidInputs")
                .with_hint("use the principal (object) id, e.g. an identity's properties.principalId"));
        }
        Ok(RoleAssignment {
            scope,
            role_definition_id,
            principal_id: principal_id.trim().to_string(),
            principal_type: principal_type.to_string(),
        })
    }

    fn role_guid(&self) -> &str {
        self.role_definition_id.rsplit('/').next().unwrap_or_default()
    }

    pub fn name(&self) -> String {
        let key = format!("{}|{}|{}", self.scope, self.role_guid(), self.principal_id).to_ascii_lowercase();
        Uuid::new_v5(&Uuid::NAMESPACE_URL, key.as_bytes()).to_string()
    }

    pub fn path(&self) -> String {
        format!("{}/providers/Microsoft.Authorization/roleAssignments/{}", self.scope, self.name())
    }

    fn body(&self) -> Value {
        json!({"properties": {
            "roleDefinitionId": self.role_definition_id,
            "principalId": self.principal_id,
            "principalType": self.principal_type,
        }})
    }

    /// Whether an assignment body (as ARM lists it) is this one, whatever its name.
    fn matches(&self, candidate: &Value) -> bool {
        let prop = |k: &str| candidate.pointer(&format!("/properties/{k}")).and_then(Value::as_str).unwrap_or_default();
        prop("principalId").eq_ignore_ascii_case(&self.principal_id)
            && prop("scope").trim_end_matches('/').eq_ignore_ascii_case(&self.scope)
            && prop("roleDefinitionId").rsplit('/').next().unwrap_or_default().eq_ignore_ascii_case(self.role_guid())
    }
}

/// Makes sure the assignment exists. Returns its body and whether this call created it.
/// `RoleAssignmentExists` (the same grant under another name, e.g. made by `az`) is success.
pub async fn assign(session: &mut ArmSession<'_>, assignment: &RoleAssignment) -> Result<(Value, bool), StepError> {
    let path = assignment.path();
    let current = session.call(Method::Get, &path, API_VERSION, None).await?;
    if current.is_success() {
        return Ok((current.json().unwrap_or(Value::Null), false));
    }
    if current.status != 404 {
        return Err(registration::failure(session, &current, "reading").await);
    }
    let response = session.call(Method::Put, &path, API_VERSION, Some(&assignment.body())).await?;
    if response.is_success() {
        return Ok((response.json().unwrap_or(Value::Null), true));
    }
    let code = ArmError::parse(&response.body).code;
    if code.as_deref().is_some_and(|c| c.eq_ignore_ascii_case("RoleAssignmentExists")) {
        return Ok((existing(session, assignment).await.unwrap_or(Value::Null), false));
    }
    Err(errors::from_response(&response, "assigning a role at"))
}

/// The assignment that already grants this role, found by listing the principal's assignments.
async fn existing(session: &mut ArmSession<'_>, assignment: &RoleAssignment) -> Option<Value> {
    let list = format!(
        "{}/providers/Microsoft.Authorization/roleAssignments?$filter=principalId eq '{}'",
        assignment.scope, assignment.principal_id
    );
    let response = session.call(Method::Get, &list, API_VERSION, None).await.ok()?;
    let doc = response.json()?;
    doc.get("value")?.as_array()?.iter().find(|a| assignment.matches(a)).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCOPE: &str = "/subscriptions/s1/resourceGroups/rg";
    const PRINCIPAL: &str = "5a4db0c5-0000-4000-8000-0000000000aa";

    #[test]
    fn name_is_deterministic_and_case_blind() {
        let role = "b24988ac-6180-42a0-ab88-20f7382dd24c";
        let a = RoleAssignment::new(SCOPE, role, PRINCIPAL, "ServicePrincipal", None).unwrap();
        let b =
            RoleAssignment::new(&format!("{}/", SCOPE.to_uppercase()), &role.to_uppercase(), PRINCIPAL, "User", None)
                .unwrap();
        assert_eq!(a.name(), b.name());
        assert_eq!(a.role_definition_id, format!("/subscriptions/s1{ROLE_DEFINITIONS}{role}"));
        let other =
            RoleAssignment::new(SCOPE, "acdd72a7-3385-48ef-bd42-f606fba81ae7", PRINCIPAL, "User", None).unwrap();
        assert_ne!(a.name(), other.name());
    }

    #[test]
    fn rejects_a_client_id_shaped_mistake() {
        assert!(RoleAssignment::new(SCOPE, "Contributor", PRINCIPAL, "User", None).is_err());
        assert!(
            RoleAssignment::new(SCOPE, "b24988ac-6180-42a0-ab88-20f7382dd24c", "not-a-guid", "User", None).is_err()
        );
    }
}
