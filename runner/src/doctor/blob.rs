//! Blob Storage for a runbook with blob steps: what each write needs. With `auth = "bearer"`,
//! Azure RBAC decides: an upload is the data action `…/containers/blobs/write`, a container is
//! the action `…/containers/write`, both checked with the ARM permissions. With a SAS, the
//! signature carries its own permissions (`sp`): checked when the SAS is known before the run,
//! noted when a step makes it during the run (that step's ARM action is checked instead).

use std::collections::BTreeMap;

use runbook_steps::{KindNeed, Registry};

use super::Check;
use super::azure::Need;
use super::subject::{PlannedStep, Subject, unresolved};

const BLOB_WRITE: &str = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write";
const CONTAINER_WRITE: &str = "Microsoft.Storage/storageAccounts/blobServices/containers/write";

/// What the blob steps need from Azure RBAC, and the lines about their SAS.
#[derive(Default)]
pub struct BlobNeeds {
    pub rbac: Vec<Need>,
    pub checks: Vec<Check>,
}

/// The RBAC operation a write needs (and whether it is a data action), and the SAS permission
/// letters that allow it.
fn write_of(step: &PlannedStep) -> Option<(&'static str, bool, &'static [char])> {
    match step.inputs["action"].as_str()? {
        "upload" => Some((BLOB_WRITE, true, &['w', 'c'])),
        "ensure_container" => Some((CONTAINER_WRITE, false, &['c', 'w'])),
        _ => None,
    }
}

/// The `sp` of a SAS query string.
fn sas_permissions(sas: &str) -> Option<String> {
    // Permission letters need no decoding.
    sas.trim_start_matches('?').split('&').find_map(|pair| pair.strip_prefix("sp=")).map(String::from)
}

pub fn blob_needs(subject: &Subject, registry: &Registry) -> BlobNeeds {
    let mut needs = BlobNeeds::default();
    // SAS made during the run, by the steps they come from: (steps using it).
    let mut made_later: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for step in subject.needing(registry, KindNeed::BlobStorage) {
        let Some((operation, data, letters)) = write_of(step) else { continue };
        let sas = step.inputs["sas"].as_str();
        let bearer = step.inputs["auth"].as_str() == Some("bearer") || sas.is_none();
        if bearer {
            needs.rbac.push(Need { operation: operation.into(), data, step: step.id.clone() });
            continue;
        }
        let sas = sas.unwrap_or_default();
        if unresolved(sas) {
            made_later.entry(sas.to_string()).or_default().push(step.id.clone());
            continue;
        }
        let what = format!("blob SAS of step {}", step.id);
        match sas_permissions(sas) {
            Some(sp) if sp.contains(letters) => needs.checks.push(Check::pass(what, format!("permissions {sp}"))),
            found => needs.checks.push(Check::fail(
                what,
                format!("permissions {} allow no write", found.as_deref().unwrap_or("missing")),
                "give a SAS signed with write (w) or create (c) permission",
            )),
        }
    }
    for (sas, steps) in made_later {
        needs.checks.push(Check::skip(
            format!("blob SAS of steps {}", steps.join(", ")),
            format!("`{sas}` is made during the run; the permission to make it is checked with the ARM writes"),
        ));
    }
    needs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn subject(steps: Vec<Value>) -> Subject {
        Subject {
            runbook: "t".into(),
            steps: steps
                .into_iter()
                .enumerate()
                .map(|(i, inputs)| PlannedStep { id: format!("s{i}"), kind: "blob".into(), inputs })
                .collect(),
            work_dir: ".".into(),
            unknown: Vec::new(),
            secrets: Vec::new(),
        }
    }

    #[test]
    fn bearer_writes_need_rbac_and_a_sas_needs_write_permission() {
        let needs = blob_needs(
            &subject(vec![
                json!({"action": "upload", "auth": "bearer"}),
                json!({"action": "ensure_container", "auth": "bearer"}),
                json!({"action": "upload", "sas": "sv=2022-11-02&sp=rcw&sig=x"}),
                json!({"action": "upload", "sas": "?sv=2022-11-02&sp=r&sig=x"}),
                json!({"action": "upload", "sas": "${steps.sas.sas}"}),
                json!({"action": "upload", "sas": "${steps.sas.sas}"}),
            ]),
            &crate::registry(),
        );
        let rbac: Vec<(&str, bool)> = needs.rbac.iter().map(|n| (n.operation.as_str(), n.data)).collect();
        assert_eq!(rbac, [(BLOB_WRITE, true), (CONTAINER_WRITE, false)]);
        let lines: Vec<(String, bool)> = needs.checks.iter().map(|c| (c.what.clone(), c.ok)).collect();
        assert_eq!(
            lines,
            [
                ("blob SAS of step s2".into(), true),
                ("blob SAS of step s3".into(), false),
                ("blob SAS of steps s4, s5".into(), true),
            ]
        );
    }
}
