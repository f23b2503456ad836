//! Release images and the version history HyperShift reports (`ClusterVersionStatus`): the
//! newest entry first, `Partial` while a release rolls out, `Completed` with a
//! `completionTime` once it has.

use serde_json::{Value, json};

/// The OpenShift version a release image names: `…/ocp-release:4.18.5-multi` gives `4.18.5`;
/// a digest-only reference keeps its digest.
pub(crate) fn version_of(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    if let Some((_, digest)) = last.split_once('@') {
        return digest.to_string();
    }
    let tag = last.split_once(':').map(|(_, t)| t).unwrap_or(last);
    for arch in ["-multi", "-x86_64", "-aarch64", "-arm64", "-amd64"] {
        if let Some(v) = tag.strip_suffix(arch) {
            return v.to_string();
        }
    }
    tag.to_string()
}

/// The version status for `image`: a new `Partial` entry when it is not the newest one,
/// marked `Completed` when `rolled_out`; what starts or completes is dated `now`.
pub(crate) fn status(previous: &Value, image: &str, rolled_out: bool, generation: &Value, now: &str) -> Value {
    let mut history: Vec<Value> = previous["history"].as_array().cloned().unwrap_or_default();
    if history.first().is_none_or(|h| h["image"].as_str() != Some(image)) {
        history.insert(
            0,
            json!({"state": "Partial", "version": version_of(image), "image": image, "startedTime": now, "verified": false}),
        );
    }
    if rolled_out && history[0]["state"] != "Completed" {
        history[0]["state"] = json!("Completed");
        history[0]["completionTime"] = json!(now);
    }
    json!({
        "desired": {"image": image, "version": version_of(image)},
        "history": history,
        "observedGeneration": generation,
    })
}

/// Whether the newest entry of a version status is for `image` and complete.
pub(crate) fn completed(version: &Value, image: &str) -> bool {
    version["history"][0]["image"].as_str() == Some(image) && version["history"][0]["state"] == "Completed"
}

/// `major.minor.patch` as numbers, when `version` is one.
fn numbers(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next().flatten().unwrap_or(0)))
}

/// Why a NodePool at `pool` is outside the skew its control plane at `control_plane` supports
/// (newer than it, or more than three minor versions behind); None when within it or when
/// either is not a version.
pub(crate) fn skew_problem(pool: &str, control_plane: &str) -> Option<String> {
    let (p, c) = (numbers(pool)?, numbers(control_plane)?);
    if p > c {
        return Some(format!("NodePool version {pool} is newer than the HostedCluster's {control_plane}"));
    }
    (p.0 != c.0 || c.1 - p.1 > 3).then(|| {
        format!("NodePool version {pool} is more than 3 minor versions behind the HostedCluster's {control_plane}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_newer_than_its_control_plane_or_four_minors_behind_is_outside_the_skew() {
        assert_eq!(skew_problem("4.21.0", "4.21.0"), None);
        assert_eq!(skew_problem("4.18.9", "4.21.0"), None);
        assert!(skew_problem("4.17.9", "4.21.0").unwrap().contains("more than 3 minor versions behind"));
        assert!(skew_problem("4.22.0", "4.21.0").unwrap().contains("newer than"));
        assert_eq!(skew_problem("sha256:abc", "4.21.0"), None);
    }
}
