//! Waiting until nothing in an ARM collection matches: the VMs of a deleted node pool, which its
//! controller removes on its own schedule. Each poll reads every page (`nextLink`); a collection
//! whose resource group is gone holds nothing. A failed read ends the attempt with its code, and
//! the engine's retry policy decides on it as on any other.

use std::collections::BTreeMap;
use std::time::Duration;

use azure_core::http::Method;
use serde_json::Value;

use super::registration;
use super::session::ArmSession;
use crate::StepError;

/// The first pause between polls; it doubles up to `MAX_POLL`.
const FIRST_POLL: Duration = Duration::from_millis(500);
const MAX_POLL: Duration = Duration::from_secs(15);

/// What was seen: the matching ids at the first read (all gone by the time this returns) and
/// how many reads it took.
pub struct Gone {
    pub first_seen: Vec<String>,
    pub polls: u32,
}

/// Whether an item's tags hold every `tags` pair (an empty filter matches every item).
fn matches(item: &Value, tags: &BTreeMap<String, String>) -> bool {
    tags.iter().all(|(key, value)| item["tags"][key].as_str() == Some(value.as_str()))
}

/// The ids of the collection's items that match, over every page.
async fn matching(
    session: &mut ArmSession<'_>,
    path: &str,
    api_version: &str,
    tags: &BTreeMap<String, String>,
) -> Result<Vec<String>, StepError> {
    let mut response = session.call(Method::Get, path, api_version, None).await?;
    let mut ids = Vec::new();
    loop {
        if response.status == 404 {
            return Ok(ids);
        }
        if !response.is_success() {
            return Err(registration::failure(session, &response, "listing").await);
        }
        let page = response.json().unwrap_or(Value::Null);
        for item in page["value"].as_array().into_iter().flatten().filter(|item| matches(item, tags)) {
            ids.push(item["id"].as_str().unwrap_or_default().to_string());
        }
        match page["nextLink"].as_str().filter(|link| !link.is_empty()) {
            Some(link) => response = session.follow(link).await?,
            None => return Ok(ids),
        }
    }
}

/// Polls the collection `path` until none of its items carries every pair of `tags`; after
/// `timeout` the step fails with the ids still there.
pub async fn wait_gone(
    session: &mut ArmSession<'_>,
    path: &str,
    api_version: &str,
    tags: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<Gone, StepError> {
    let started = session.clock().now();
    let mut first_seen = None;
    let mut pause = FIRST_POLL;
    let mut polls = 0;
    loop {
        let remaining = matching(session, path, api_version, tags).await?;
        polls += 1;
        let first = first_seen.get_or_insert_with(|| remaining.clone());
        if remaining.is_empty() {
            return Ok(Gone { first_seen: std::mem::take(first), polls });
        }
        let waited = session.clock().since(started);
        if waited >= timeout {
            return Err(StepError::permanent(format!(
                "after {}, {} of them still exist in {path}: {}",
                humantime::format_duration(timeout),
                remaining.len(),
                remaining.join(", ")
            ))
            .with_code("ResourcesRemain")
            .with_hint("raise `timeout`, or look at what still holds them (the node pool's machines)"));
        }
        session.pause(pause.min(timeout.saturating_sub(waited))).await?;
        pause = (pause * 2).min(MAX_POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_item_matches_when_its_tags_hold_every_pair() {
        let tags: BTreeMap<String, String> = [("pool".to_string(), "clusters-a".to_string())].into();
        assert!(matches(&json!({ "tags": { "pool": "clusters-a", "role": "node" } }), &tags));
        assert!(!matches(&json!({ "tags": { "pool": "clusters-b" } }), &tags));
        assert!(!matches(&json!({ "name": "untagged" }), &tags));
        assert!(matches(&json!({ "name": "untagged" }), &BTreeMap::new()));
    }
}
