//! `nodepools`: a hosted cluster's NodePools moved to a release, within OpenShift's version-skew
//! rules. The pools are those whose `spec.clusterName` is the cluster (pools of several clusters
//! share a namespace), all of them or the ones named. Before anything is written, every pool is
//! checked against the release's version: a named pool is never moved backwards, and a pool
//! left where it is must stay within what the control plane supports (no newer than it, at
//! most three minor versions behind, the procedure's "N-3"). With `apply`, each named pool's
//! `spec.release.image` is merge-patched (no write when already set), then the pools are
//! watched until each reports the release's version and is Ready.

use std::collections::BTreeMap;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::{Map, Value, json};

use super::inputs::NodePoolsInputs;
use super::objects::{Produced, condition_state, parse_timeout};
use super::session::Session;
use super::target::Kinds;
use super::watch::{Progress, watch_until};
use crate::StepError;

const FIELD_MANAGER: &str = "runbook";
/// How many minor versions a NodePool may trail its control plane.
const MAX_MINOR_SKEW: u64 = 3;

/// `major.minor.patch` of an OpenShift version (`4.18.5`, `4.18.0-rc.1`: the pre-release is
/// ignored for the skew rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(u64, u64, u64);

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let core = text.trim().trim_start_matches('v').split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
        let (major, minor) = (parts.next()??, parts.next()??);
        let patch = parts.next().flatten().unwrap_or(0);
        Some(Version(major, minor, patch))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The version an OpenShift release image names in its tag (`…/ocp-release:4.18.5-multi`);
/// None for an image named by digest only.
pub fn version_of_image(image: &str) -> Option<String> {
    let last = image.rsplit('/').next().unwrap_or(image);
    if last.contains('@') {
        return None;
    }
    let tag = last.split_once(':')?.1;
    let tag = ["-multi", "-x86_64", "-aarch64", "-arm64", "-amd64", "-ppc64le", "-s390x"]
        .iter()
        .find_map(|arch| tag.strip_suffix(arch))
        .unwrap_or(tag);
    Version::parse(tag).map(|_| tag.to_string())
}

/// Why a pool at `current` may not stay there (`moved` false) or move (`moved` true) when the
/// control plane runs `target`.
fn skew_problem(pool: &str, current: Version, target: Version, moved: bool) -> Option<String> {
    if moved {
        return (current > target).then(|| {
            format!(
                "NodePool `{pool}` runs {current}, newer than {target}: a NodePool is never moved to an older release"
            )
        });
    }
    if current > target {
        return Some(format!(
            "NodePool `{pool}` runs {current}, newer than the control plane's {target}: a NodePool may not be newer than its HostedCluster"
        ));
    }
    let behind = if current.0 == target.0 { target.1.saturating_sub(current.1) } else { u64::MAX };
    (behind > MAX_MINOR_SKEW).then(|| {
        format!(
            "NodePool `{pool}` runs {current}, {} minor versions behind {target}; NodePools may trail their control plane by at most {MAX_MINOR_SKEW}",
            if behind == u64::MAX { "several".to_string() } else { behind.to_string() }
        )
    })
}

/// The version a pool runs: what it reports, else what its release image names.
fn pool_version(pool: &Value) -> Option<Version> {
    pool["status"]["version"].as_str().and_then(Version::parse).or_else(|| {
        pool["spec"]["release"]["image"].as_str().and_then(version_of_image).as_deref().and_then(Version::parse)
    })
}

pub async fn nodepools(session: &mut Session<'_>, inputs: &NodePoolsInputs) -> Result<Produced, StepError> {
    let timeout = parse_timeout(inputs.timeout.as_ref())?;
    let version_text = match inputs.release_version.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        Some(v) => v.to_string(),
        None => version_of_image(&inputs.release_image).ok_or_else(|| {
            StepError::invalid_inputs(format!(
                "the release image `{}` names no version in its tag (an image named by digest)",
                inputs.release_image
            ))
            .with_hint("give the release's version as `release_version` (`oc adm release info IMAGE` prints it)")
        })?,
    };
    let target = Version::parse(&version_text)
        .ok_or_else(|| StepError::invalid_inputs(format!("`{version_text}` is not an OpenShift version (x.y.z)")))?;
    let (resource, _) = Kinds::default().lookup(session, "hypershift.openshift.io/v1beta1", "NodePool").await?;
    let api: Api<DynamicObject> = Api::namespaced_with(session.kube.client.clone(), &inputs.namespace, &resource);
    let listed = api
        .list(&Default::default())
        .await
        .map_err(|e| session.error(&e, &format!("listing NodePools in {}", inputs.namespace)))?;
    let all: BTreeMap<String, Value> =
        listed.items.iter().filter_map(|o| Some((o.metadata.name.clone()?, serde_json::to_value(o).ok()?))).collect();
    let of_cluster: BTreeMap<&String, &Value> =
        all.iter().filter(|(_, p)| p["spec"]["clusterName"].as_str() == Some(inputs.cluster_name.as_str())).collect();
    let names: Vec<String> = if inputs.names.is_empty() {
        of_cluster.keys().map(|n| n.to_string()).collect()
    } else {
        for name in &inputs.names {
            match all.get(name) {
                None => {
                    return Err(StepError::permanent(format!(
                        "NodePool `{name}` is not in {}; cluster `{}` has: {}",
                        inputs.namespace,
                        inputs.cluster_name,
                        of_cluster.keys().map(|n| n.as_str()).collect::<Vec<_>>().join(", ")
                    ))
                    .with_code("NotFound"));
                }
                Some(pool) if !of_cluster.contains_key(name) => {
                    return Err(StepError::permanent(format!(
                        "NodePool `{name}` belongs to cluster `{}`, not `{}`",
                        pool["spec"]["clusterName"].as_str().unwrap_or("?"),
                        inputs.cluster_name
                    ))
                    .with_code("NodePoolNotOfCluster"));
                }
                Some(_) => {}
            }
        }
        inputs.names.clone()
    };
    let mut versions = Map::new();
    let mut problems = Vec::new();
    for (name, pool) in &of_cluster {
        let moved = names.contains(name);
        match pool_version(pool) {
            Some(current) => {
                versions.insert(name.to_string(), json!(current.to_string()));
                problems.extend(skew_problem(name, current, target, moved));
            }
            None if moved => {}
            None => problems.push(format!("NodePool `{name}` reports no version, so its skew cannot be checked")),
        }
    }
    if !problems.is_empty() {
        return Err(StepError::permanent(problems.join("; "))
            .with_code("UnsupportedVersionSkew")
            .with_hint("name every NodePool that must move with the control plane in `nodepools` (empty: all of them)")
            .with_evidence(json!({ "target": target.to_string(), "versions": versions, "moving": names })));
    }
    let mut changed = Vec::new();
    if inputs.apply {
        let patch = json!({ "spec": { "release": { "image": inputs.release_image } } });
        for name in &names {
            if all[name]["spec"]["release"]["image"].as_str() == Some(inputs.release_image.as_str()) {
                continue;
            }
            let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() };
            let what = format!("NodePool {}/{name}", inputs.namespace);
            api.patch(name, &params, &Patch::Merge(&patch))
                .await
                .map_err(|e| session.error(&e, &format!("patching {what}")))?;
            session.wrote(format!("patch {what}"));
            changed.push(name.clone());
        }
        let wanted = names.clone();
        let what = format!("NodePools {} of cluster {}", wanted.join(", "), inputs.cluster_name);
        watch_until(session, api, watcher::Config::default(), timeout, &what, |objects| {
            let behind: Vec<String> = wanted
                .iter()
                .filter_map(|name| {
                    let Some(pool) = objects.values().find(|o| o.metadata.name.as_deref() == Some(name)) else {
                        return Some(format!("{name}: gone"));
                    };
                    let body = serde_json::to_value(pool).unwrap_or(Value::Null);
                    let reported = body["status"]["version"].as_str().and_then(Version::parse);
                    if reported != Some(target) {
                        return Some(format!(
                            "{name}: at {}",
                            reported.map(|v| v.to_string()).unwrap_or_else(|| "no version yet".into())
                        ));
                    }
                    condition_state(&body, "Ready", "True").err().map(|why| format!("{name}: {why}"))
                })
                .collect();
            if behind.is_empty() { Progress::Done(()) } else { Progress::Waiting(behind.join("; ")) }
        })
        .await?;
    }
    let mut outputs = Map::new();
    outputs.insert("names".into(), json!(names));
    outputs.insert("target_version".into(), json!(target.to_string()));
    outputs.insert("versions".into(), Value::Object(versions.clone()));
    outputs.insert("changed".into(), json!(changed));
    let evidence = json!({ "target": target.to_string(), "versions": versions, "moving": names, "changed": changed });
    Ok(Produced { outputs, evidence })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_tags_and_the_skew_rules_are_openshifts() {
        assert_eq!(
            version_of_image("quay.io/openshift-release-dev/ocp-release:4.18.5-multi").as_deref(),
            Some("4.18.5")
        );
        assert_eq!(version_of_image("quay.io/x/ocp-release@sha256:abc"), None);
        let v = |s| Version::parse(s).unwrap();
        assert!(skew_problem("p", v("4.15.2"), v("4.18.5"), false).is_none(), "three behind is supported");
        assert!(skew_problem("p", v("4.14.9"), v("4.18.5"), false).unwrap().contains("4 minor versions behind"));
        assert!(skew_problem("p", v("4.19.0"), v("4.18.5"), false).unwrap().contains("newer than the control plane"));
        assert!(skew_problem("p", v("4.18.6"), v("4.18.5"), true).unwrap().contains("never moved to an older"));
        assert!(skew_problem("p", v("4.17.1"), v("4.18.5"), true).is_none());
    }
}
