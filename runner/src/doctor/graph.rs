//! Microsoft Graph for a runbook with graph steps: every graph action writes (finds or creates
//! an application or service principal, mints or deletes its credentials), which needs a Graph
//! permission. What the signed-in principal holds is read from the claims of its Graph access
//! token: `roles` (application permissions), `scp` (delegated scopes) and `wids` (directory
//! roles, by template id).

use runbook_steps::{KindNeed, Registry};
use serde_json::Value;

use super::Check;
use super::subject::Subject;

/// Application permissions that allow the procedure's writes (reference 1.10: the procedure
/// asks for `Application.ReadWrite.OwnedBy`).
const APPLICATION_ROLES: [&str; 3] =
    ["Application.ReadWrite.OwnedBy", "Application.ReadWrite.All", "Directory.ReadWrite.All"];

/// Delegated scopes that let a signed-in user do what they themselves may do to applications.
const DELEGATED_SCOPES: [&str; 3] =
    ["Application.ReadWrite.All", "Directory.AccessAsUser.All", "Directory.ReadWrite.All"];

/// Directory roles that may manage every application and service principal, by the template id
/// tokens list in `wids`.
const ADMIN_ROLES: [(&str, &str); 3] = [
    ("62e90394-69f5-4237-9190-012177145e10", "Global Administrator"),
    ("9b895d92-2cd3-44c7-9d02-a6ac2d5ea5c3", "Application Administrator"),
    ("158c047a-c907-4556-b7ef-446551a6b5f7", "Cloud Application Administrator"),
];

#[derive(Debug, PartialEq)]
enum Decision {
    /// What grants it.
    Granted(String),
    /// What the token holds instead.
    Denied(String),
    /// Why the token cannot tell.
    Undecided(String),
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().filter_map(Value::as_str).map(String::from).collect(),
        Value::String(text) => text.split_whitespace().map(String::from).collect(),
        _ => Vec::new(),
    }
}

fn first_in<'a>(held: &[String], wanted: &[&'a str]) -> Option<&'a str> {
    wanted.iter().copied().find(|w| held.iter().any(|h| h.eq_ignore_ascii_case(w)))
}

fn decide(claims: &Value) -> Decision {
    let admin = strings(&claims["wids"])
        .iter()
        .find_map(|w| ADMIN_ROLES.iter().find(|(id, _)| id.eq_ignore_ascii_case(w)).map(|(_, name)| *name));
    if let Some(scopes) = claims.get("scp") {
        // A user's sign-in: the scope lets the client act, the user's own rights decide.
        let scopes = strings(scopes);
        return match (first_in(&scopes, &DELEGATED_SCOPES), admin) {
            (None, _) => Decision::Denied(format!("delegated scopes {}", listed(&scopes))),
            (Some(_), Some(role)) => Decision::Granted(format!("directory role {role}")),
            (Some(scope), None) => Decision::Undecided(format!(
                "signed in as a user with scope {scope}: whether the user may register applications is a tenant setting the token does not carry"
            )),
        };
    }
    let roles = strings(&claims["roles"]);
    match (first_in(&roles, &APPLICATION_ROLES), admin) {
        (Some(role), _) => Decision::Granted(format!("app role {role}")),
        (None, Some(role)) => Decision::Granted(format!("directory role {role}")),
        (None, None) => Decision::Denied(format!("app roles {}", listed(&roles))),
    }
}

fn listed(items: &[String]) -> String {
    if items.is_empty() { "none".into() } else { items.join(", ") }
}

pub async fn check_graph(
    subject: &Subject,
    settings: &runbook_steps::AzureSettings,
    registry: &Registry,
) -> Vec<Check> {
    let steps: Vec<&str> = subject.needing(registry, KindNeed::MicrosoftGraph).map(|s| s.id.as_str()).collect();
    if steps.is_empty() {
        return Vec::new();
    }
    let what = "Graph may write applications and service principals";
    let steps = steps.join(", ");
    let claims = match runbook_steps::access_claims(settings, &settings.graph_scope).await {
        Ok(claims) => claims,
        Err(e) => {
            let hint = e.hint.clone().unwrap_or_else(|| "check the sign-in: the graph steps need a Graph token".into());
            return vec![Check::fail(what, e.to_string(), hint)];
        }
    };
    match decide(&claims) {
        Decision::Granted(by) => vec![Check::pass(what, format!("{by} (steps {steps})"))],
        Decision::Undecided(why) => vec![Check::skip(what, format!("{why} (steps {steps})"))],
        Decision::Denied(held) => vec![Check::fail(
            what,
            format!("not granted: the token holds {held}; steps {steps} need Application.ReadWrite.OwnedBy"),
            "ask an administrator to grant the principal the Graph application permission Application.ReadWrite.OwnedBy (with admin consent) or the Application Administrator role, or sign in as one that has it",
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn app_roles_directory_roles_and_user_scopes_decide() {
        let granted = |c: Value| matches!(decide(&c), Decision::Granted(_));
        assert!(granted(json!({"roles": ["Application.ReadWrite.OwnedBy"]})));
        assert!(granted(json!({"roles": ["User.Read.All"], "wids": ["9b895d92-2cd3-44c7-9d02-a6ac2d5ea5c3"]})));
        assert_eq!(decide(&json!({"roles": ["User.Read.All"]})), Decision::Denied("app roles User.Read.All".into()));
        assert_eq!(decide(&json!({})), Decision::Denied("app roles none".into()));
        // Users: the scope is needed, and only a directory role settles it.
        assert!(matches!(decide(&json!({"scp": "User.Read"})), Decision::Denied(_)));
        assert!(matches!(decide(&json!({"scp": "Directory.AccessAsUser.All User.Read"})), Decision::Undecided(_)));
        assert!(granted(json!({"scp": "Application.ReadWrite.All", "wids": ["62e90394-69f5-4237-9190-012177145e10"]})));
    }
}
