//! Applications and service principals in Microsoft Graph, each made idempotent by a lookup on a
//! unique key (an application's display name, a service principal's appId) before any create.

use azure_core::http::Method;
use serde_json::{Value, json};

use super::graph_client::GraphSession;
use super::graph_errors::{Replication, from_response, unexpected_answer};
use super::pipeline::AzureResponse;
use crate::StepError;

/// An application or service principal as the step reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectoryObject {
    /// The object id (`id`): what addPassword, DELETE and role assignments name.
    pub object_id: String,
    /// The application (client) id.
    pub app_id: String,
    pub display_name: String,
    /// The object's `tags`: where the owner tag of the journal that made it is.
    pub tags: Vec<String>,
}

impl DirectoryObject {
    fn from_body(body: &Value) -> Option<DirectoryObject> {
        let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_string);
        let tags = body
            .get("tags")
            .and_then(Value::as_array)
            .map(|tags| tags.iter().filter_map(Value::as_str).map(str::to_string).collect::<Vec<_>>());
        Some(DirectoryObject {
            object_id: text("id")?,
            app_id: text("appId")?,
            display_name: text("displayName").unwrap_or_default(),
            tags: tags.unwrap_or_default(),
        })
    }
}

/// Whose application a step may take: the one tagged `tag` (made by this journal for this
/// cluster), or the one the operator adopted by its application id. None of either: any (a step
/// run outside a run, with no journal to own anything).
#[derive(Clone, Debug, Default)]
pub struct Ownership<'a> {
    pub tag: Option<&'a str>,
    pub adopt_app_id: Option<&'a str>,
}

/// The application found or made, and how: created now, or adopted by the operator.
#[derive(Clone, Debug)]
pub struct Ensured {
    pub object: DirectoryObject,
    pub created: bool,
    pub adopted: bool,
}

/// A string literal in an OData `$filter`: quotes double, so a name cannot end the literal.
pub fn odata_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn success_json(response: &AzureResponse, doing: &str, replication: Replication) -> Result<Value, StepError> {
    if !response.is_success() {
        return Err(from_response(response, doing, replication));
    }
    response.json().ok_or_else(|| unexpected_answer(response, "JSON body"))
}

fn object_of(response: &AzureResponse, body: &Value) -> Result<DirectoryObject, StepError> {
    DirectoryObject::from_body(body).ok_or_else(|| unexpected_answer(response, "`id` and `appId`"))
}

/// `GET /v1.0/{collection}?$filter=…`: every object that matches.
async fn list(
    session: &mut GraphSession<'_>,
    collection: &str,
    filter: &str,
    doing: &str,
) -> Result<Vec<DirectoryObject>, StepError> {
    let response = session.call(Method::Get, &[collection], &[("$filter", filter)], None).await?;
    let body = success_json(&response, doing, Replication::NotExpected)?;
    let items = body.get("value").and_then(Value::as_array).ok_or_else(|| unexpected_answer(&response, "`value`"))?;
    let mut found = items.iter().map(|item| object_of(&response, item)).collect::<Result<Vec<_>, _>>()?;
    // More than a page of matches is "many" for every caller; one more entry says so.
    if body.get("@odata.nextLink").is_some() && found.len() == 1 {
        found.push(found[0].clone());
    }
    Ok(found)
}

pub async fn applications_named(session: &mut GraphSession<'_>, name: &str) -> Result<Vec<DirectoryObject>, StepError> {
    let filter = format!("displayName eq {}", odata_literal(name));
    list(session, "applications", &filter, "looking up the application by name").await
}

fn ambiguous_name(name: &str, found: &[DirectoryObject]) -> StepError {
    let ids: Vec<&str> = found.iter().map(|a| a.object_id.as_str()).collect();
    StepError::permanent(format!(
        "{} applications are named `{name}`, so the step cannot tell which one is meant",
        found.len()
    ))
    .with_code("AmbiguousApplicationName")
    .with_hint(
        "delete the extra applications (Entra admin center, App registrations) or give this step another display_name",
    )
    .with_evidence(json!({ "display_name": name, "object_ids": ids }))
}

/// The application named `name`, created (POST, tagged with the owner's tag) only when none
/// exists. One that exists is taken only when it is this journal's (it carries the tag) or the
/// operator adopted it (`adopt_app_id`, looked up by that id, whatever its name): another
/// team's application of the same name is refused, never given a password or roles.
pub async fn ensure_application(
    session: &mut GraphSession<'_>,
    name: &str,
    sign_in_audience: &str,
    owner: &Ownership<'_>,
) -> Result<Ensured, StepError> {
    if let Some(app_id) = owner.adopt_app_id {
        let filter = format!("appId eq {}", odata_literal(app_id));
        let mut found = list(session, "applications", &filter, "looking up the adopted application").await?;
        return match found.pop() {
            Some(object) => Ok(Ensured { object, created: false, adopted: true }),
            None => Err(StepError::permanent(format!("no application has the application id `{app_id}` that was given to adopt"))
                .with_code("AdoptedApplicationNotFound")
                .with_hint("give the application (client) id of an existing application, or leave the adoption empty to make a new one")
                .with_evidence(json!({ "adopt_app_id": app_id }))),
        };
    }
    let found = applications_named(session, name).await?;
    let ours = tagged(&found, owner.tag);
    match (ours.len(), found.len()) {
        (1, _) => return Ok(Ensured { object: ours[0].clone(), created: false, adopted: false }),
        (0, 0) => {}
        (0, _) => return Err(not_ours(name, &found)),
        _ => return Err(ambiguous_name(name, &found)),
    }
    let mut body = json!({ "displayName": name, "signInAudience": sign_in_audience });
    if let Some(tag) = owner.tag {
        body["tags"] = json!([tag]);
    }
    let response = session.call(Method::Post, &["applications"], &[], Some(&body)).await?;
    let created = success_json(&response, "creating the application", Replication::NotExpected)?;
    Ok(Ensured { object: object_of(&response, &created)?, created: true, adopted: false })
}

/// The applications of `found` that carry `tag` (made by this journal for this cluster); every
/// one of them when there is no tag to go by (a step run outside a run).
fn tagged<'a>(found: &'a [DirectoryObject], tag: Option<&str>) -> Vec<&'a DirectoryObject> {
    match tag {
        Some(tag) => found.iter().filter(|app| app.tags.iter().any(|t| t == tag)).collect(),
        None => found.iter().collect(),
    }
}

/// Applications of the step's name exist, and none was made by this journal for this cluster.
fn not_ours(name: &str, found: &[DirectoryObject]) -> StepError {
    let apps: Vec<Value> =
        found.iter().map(|a| json!({ "app_id": a.app_id, "object_id": a.object_id, "tags": a.tags })).collect();
    let first = &found[0];
    StepError::permanent(format!(
        "an application named `{name}` exists (application id {}, object id {}) and this journal did not make it: it is left alone",
        first.app_id, first.object_id
    ))
    .with_code("ApplicationNotOurs")
    .with_hint(
        "another team may own it: give this cluster another name for it, or, if it is yours to use (its password replaced, roles granted, deleted at cleanup), adopt it by setting the runbook's adoption variable to its application id",
    )
    .with_evidence(json!({ "display_name": name, "applications": apps }))
}

/// The service principal of application `app_id`, created only when none exists. Right after the
/// application was created Graph may not know it yet; those answers are transient.
pub async fn ensure_service_principal(
    session: &mut GraphSession<'_>,
    app_id: &str,
) -> Result<(DirectoryObject, bool), StepError> {
    let filter = format!("appId eq {}", odata_literal(app_id));
    let mut found = list(session, "servicePrincipals", &filter, "looking up the service principal").await?;
    if let Some(existing) = found.pop() {
        return Ok((existing, false));
    }
    let body = json!({ "appId": app_id });
    let response = session.call(Method::Post, &["servicePrincipals"], &[], Some(&body)).await?;
    let created = success_json(&response, "creating the service principal", Replication::Possible)?;
    Ok((object_of(&response, &created)?, true))
}

/// Which application to delete.
pub enum ApplicationRef<'a> {
    ObjectId(&'a str),
    DisplayName(&'a str),
}

/// Deletes the application (Entra keeps it in deleted items for 30 days). Returns the object id
/// deleted, or None when there was nothing to delete. By object id it is the one the journal
/// recorded; by name, only one that carries `owner_tag` (made by this journal for this cluster):
/// another team's application of the same name is refused, never deleted.
pub async fn delete_application(
    session: &mut GraphSession<'_>,
    target: ApplicationRef<'_>,
    owner_tag: Option<&str>,
) -> Result<Option<String>, StepError> {
    let object_id = match target {
        ApplicationRef::ObjectId(id) => id.to_string(),
        ApplicationRef::DisplayName(name) => {
            let found = applications_named(session, name).await?;
            let ours = tagged(&found, owner_tag);
            match (ours.len(), found.len()) {
                (0, 0) => return Ok(None),
                (1, _) => ours[0].object_id.clone(),
                (0, _) => return Err(not_ours(name, &found)),
                _ => return Err(ambiguous_name(name, &found)),
            }
        }
    };
    let response = session.call(Method::Delete, &["applications", &object_id], &[], None).await?;
    match response.status {
        404 => Ok(None),
        _ if response.is_success() => Ok(Some(object_id)),
        _ => Err(from_response(&response, "deleting the application", Replication::NotExpected)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odata_literals_double_their_quotes() {
        assert_eq!(odata_literal("external-dns"), "'external-dns'");
        assert_eq!(odata_literal("O'Brien' or 1 eq 1"), "'O''Brien'' or 1 eq 1'");
    }
}
