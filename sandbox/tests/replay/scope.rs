//! Which recorded interactions the sandbox can be held to, and how far.

use super::cassette::Interaction;
use super::target::{Service, Target};

pub enum Check {
    /// Status code and the key body fields.
    Full,
    /// Only the status code; the body is about things the sandbox cannot know.
    StatusOnly(&'static str),
}

pub fn check_for(interaction: &Interaction, target: &Target) -> Check {
    if target.service != Service::Arm {
        return Check::Full;
    }
    let segs = target.segments();
    let method = interaction.request.method.to_ascii_uppercase();
    if segs.first().is_some_and(|s| s == "providers") {
        return Check::StatusOnly("tenant-level operations catalogue: Microsoft's own content");
    }
    // GET /subscriptions/{sub}/providers/{ns}/{type}: everything of that type in the
    // recording's subscription, including other people's resources.
    let subscription_wide_list = method == "GET"
        && segs.len() == 5
        && segs[0] == "subscriptions"
        && segs[2] == "providers"
        && segs[4] != "roleassignments";
    if subscription_wide_list {
        return Check::StatusOnly("subscription-wide list: holds unrelated resources of the recording subscription");
    }
    Check::Full
}

/// Recorded resource groups the scenario expects to exist already (created by the test
/// framework before recording started), with the PUT body that recreates them (location
/// and tags as a recorded GET shows them).
pub fn preexisting_resource_groups(interactions: &[Interaction]) -> Vec<(String, serde_json::Value)> {
    let mut groups: Vec<(String, serde_json::Value)> = Vec::new();
    let mut decided: Vec<String> = Vec::new();
    let default_location = interactions
        .iter()
        .filter_map(|i| i.request.body.as_deref())
        .filter_map(|b| serde_json::from_str::<serde_json::Value>(b).ok())
        .find_map(|v| v["location"].as_str().map(str::to_string))
        .unwrap_or_else(|| "westus".to_string());
    for interaction in interactions {
        let target = Target::parse(&interaction.request.uri);
        if target.service != Service::Arm {
            continue;
        }
        let raw: Vec<&str> = target.path().split('/').filter(|s| !s.is_empty()).collect();
        if raw.len() < 4 || !raw[2].eq_ignore_ascii_case("resourcegroups") {
            continue;
        }
        let rg = raw[3].to_string();
        if decided.iter().any(|d| d.eq_ignore_ascii_case(&rg)) {
            continue;
        }
        let status = interaction.response.status.code;
        let method = interaction.request.method.to_ascii_uppercase();
        if raw.len() == 4 {
            decided.push(rg.clone());
            let created_by_scenario = method == "PUT" || status == 404;
            if !created_by_scenario {
                let body: serde_json::Value =
                    serde_json::from_str(&interaction.response.body.string).unwrap_or_default();
                let location = body["location"].as_str().map(str::to_string).unwrap_or(default_location.clone());
                let tags = body.get("tags").cloned().unwrap_or_else(|| serde_json::json!({}));
                groups.push((rg, serde_json::json!({"location": location, "tags": tags})));
            }
        } else {
            decided.push(rg.clone());
            groups.push((rg, serde_json::json!({"location": default_location})));
        }
    }
    groups
}
