//! `access`: the API server answers, which version it is, and every permission the runbook
//! needs is granted (SelfSubjectAccessReview). All denials are reported together.

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use serde_json::{Map, json};

use super::inputs::{AccessCheck, AccessInputs};
use super::objects::Produced;
use super::session::Session;
use crate::StepError;

/// e.g. `create deployments.apps in namespace hypershift`.
pub fn describe(check: &AccessCheck) -> String {
    let mut resource = check.resource.clone();
    if let Some(sub) = &check.subresource {
        resource = format!("{resource}/{sub}");
    }
    if !check.group.is_empty() {
        resource = format!("{resource}.{}", check.group);
    }
    if let Some(name) = &check.name {
        resource = format!("{resource} {name}");
    }
    match check.namespace.as_deref().filter(|n| !n.is_empty()) {
        Some(ns) => format!("{} {resource} in namespace {ns}", check.verb),
        None => format!("{} {resource} in all namespaces", check.verb),
    }
}

pub async fn access(session: &Session<'_>, inputs: &AccessInputs) -> Result<Produced, StepError> {
    let client = &session.kube.client;
    let version = client.apiserver_version().await.map_err(|e| session.error(&e, "reading the server version"))?;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let mut results = Vec::new();
    let mut denied = Vec::new();
    for check in &inputs.checks {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(check.verb.clone()),
                    group: Some(check.group.clone()),
                    resource: Some(check.resource.clone()),
                    namespace: check.namespace.clone(),
                    name: check.name.clone(),
                    subresource: check.subresource.clone(),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let text = describe(check);
        let answer = reviews
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| session.error(&e, &format!("asking whether we may {text}")))?;
        let status = answer.status.unwrap_or_default();
        results.push(json!({ "check": text, "allowed": status.allowed, "reason": status.reason }));
        if !status.allowed {
            let why = status.reason.filter(|r| !r.is_empty()).map(|r| format!(" ({r})")).unwrap_or_default();
            denied.push(format!("{text}{why}"));
        }
    }
    let evidence = json!({
        "kubeconfig": session.kube.source,
        "version": version.git_version,
        "checks": results,
    });
    if !denied.is_empty() {
        return Err(StepError::permanent(format!("not allowed to {}", denied.join("; ")))
            .with_code("AccessDenied")
            .with_hint("grant these to the kubeconfig's identity (a Role or ClusterRole and its binding), or use a context that has them; nothing was written")
            .with_evidence(evidence));
    }
    let mut outputs = Map::new();
    outputs.insert("server_version".into(), json!(version.git_version));
    outputs.insert("major".into(), json!(version.major));
    outputs.insert("minor".into(), json!(version.minor));
    outputs.insert("checks".into(), json!(inputs.checks.len()));
    Ok(Produced { outputs, evidence })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_a_check_like_kubectl_auth_can_i() {
        let check = AccessCheck {
            verb: "create".into(),
            resource: "deployments".into(),
            group: "apps".into(),
            namespace: Some("hypershift".into()),
            name: None,
            subresource: None,
        };
        assert_eq!(describe(&check), "create deployments.apps in namespace hypershift");
    }
}
