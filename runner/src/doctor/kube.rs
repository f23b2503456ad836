//! Kubernetes for a runbook with kube steps: each cluster they talk to answers (/version), and
//! its user may do what the steps do there, asked with SelfSubjectAccessReviews through the
//! runbook's own `kube` kind (its `access` action), so the kubeconfig is found the same way a
//! run finds it.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{ApiResource, GroupVersionKind};
use runbook_steps::{KindNeed, Registry};
use serde_json::{Value, json};

use super::Check;
use super::subject::{PlannedStep, Subject, unresolved};

/// A permission one or more steps need: (verb, group, resource, namespace).
type Need = (String, String, String, Option<String>);

/// The verbs an action sends. Server-side apply is a PATCH that may create; watches list first.
fn verbs(action: &str) -> &'static [&'static str] {
    match action {
        "apply" | "secret" => &["get", "create", "patch"],
        "get" => &["get"],
        "wait" | "pods_ready" | "wait_all" => &["list", "watch"],
        "scale" | "patch" => &["get", "patch"],
        "delete" => &["get", "delete", "list", "watch"],
        _ => &[],
    }
}

/// The verbs on one resource in one namespace, as answered, and the steps that need them.
#[derive(Default)]
struct Line {
    allowed: Vec<String>,
    denied: Vec<String>,
    steps: BTreeSet<String>,
}

/// Reads first, then writes, as a person lists them.
fn verb_rank(verb: &str) -> usize {
    ["get", "list", "watch", "create", "update", "patch", "delete"]
        .iter()
        .position(|v| *v == verb)
        .unwrap_or(usize::MAX)
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::trim).filter(|s| !s.is_empty()).map(String::from)
}

/// The API group and plural resource of a kind (`HostedCluster` of
/// `hypershift.openshift.io/v1beta1` → hostedclusters), as the API server names it in RBAC.
fn resource_of(api_version: &str, kind: &str) -> (String, String) {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    (resource.group, resource.plural)
}

/// What one step needs on its cluster; None when its objects are known only at run time.
fn needs_of(step: &PlannedStep) -> Option<Vec<Need>> {
    let inputs = &step.inputs;
    let action = inputs["action"].as_str().unwrap_or_default();
    let namespace = text(&inputs["namespace"]);
    let mut needs = Vec::new();
    let mut add = |verbs: &[&str], group: &str, resource: &str, namespace: Option<String>| {
        for verb in verbs {
            needs.push((verb.to_string(), group.to_string(), resource.to_string(), namespace.clone()));
        }
    };
    match action {
        "access" => {
            for check in inputs["checks"].as_array().into_iter().flatten() {
                let resource = match text(&check["subresource"]) {
                    Some(sub) => format!("{}/{sub}", check["resource"].as_str().unwrap_or_default()),
                    None => check["resource"].as_str().unwrap_or_default().to_string(),
                };
                let group = check["group"].as_str().unwrap_or_default();
                add(&[check["verb"].as_str().unwrap_or_default()], group, &resource, text(&check["namespace"]));
            }
        }
        "secret" => add(verbs(action), "", "secrets", namespace),
        "pods_ready" => add(verbs(action), "", "pods", namespace),
        "apply" => {
            let object = inputs["object"].as_object()?;
            let (api_version, kind) = (text(&object["apiVersion"].clone())?, text(&object["kind"].clone())?);
            let (group, resource) = resource_of(&api_version, &kind);
            add(verbs(action), &group, &resource, text(&object["metadata"]["namespace"]).or(namespace));
        }
        _ => {
            let (api_version, kind) = (text(&inputs["api_version"])?, text(&inputs["kind"])?);
            let (group, mut resource) = resource_of(&api_version, &kind);
            if action == "scale" {
                resource.push_str("/scale");
            }
            add(verbs(action), &group, &resource, namespace);
        }
    }
    let known = needs.iter().all(|(verb, group, resource, namespace)| {
        ![verb, group, resource].iter().any(|t| unresolved(t)) && !namespace.as_deref().is_some_and(unresolved)
    });
    known.then_some(needs)
}

/// `create, patch secrets in namespace default`, the way `kubectl auth can-i` reads.
fn describe(verbs: &[String], group: &str, resource: &str, namespace: Option<&str>) -> String {
    let resource = if group.is_empty() || group == "*" && resource == "*" {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let place = match namespace {
        Some(ns) => format!("in namespace {ns}"),
        None => "in all namespaces".into(),
    };
    format!("{} {resource} {place}", verbs.join(", "))
}

/// The cluster a step talks to: its own kubeconfig and context, or the default (KUBECONFIG).
fn cluster_of(step: &PlannedStep) -> (Option<String>, Option<String>) {
    (text(&step.inputs["kubeconfig"]), text(&step.inputs["context"]))
}

fn cluster_name(kubeconfig: &Option<String>, context: &Option<String>) -> String {
    let file = kubeconfig.clone().unwrap_or_else(|| "KUBECONFIG".into());
    match context {
        Some(context) => format!("{file} (context {context})"),
        None => file,
    }
}

pub async fn check_kube(subject: &Subject, registry: &Registry) -> Vec<Check> {
    let mut clusters: BTreeMap<(Option<String>, Option<String>), Vec<&PlannedStep>> = BTreeMap::new();
    for step in subject.needing(registry, KindNeed::Kubernetes) {
        clusters.entry(cluster_of(step)).or_default().push(step);
    }
    let mut checks = Vec::new();
    for ((kubeconfig, context), steps) in clusters {
        // The access review goes through the kind of the cluster's first step: a kind that needs
        // Kubernetes answers its `access` action (see `KindNeed::Kubernetes`).
        let Some(kind) = steps.first().and_then(|s| registry.get(&s.kind)) else { continue };
        let ids: Vec<&str> = steps.iter().map(|s| s.id.as_str()).collect();
        let name = cluster_name(&kubeconfig, &context);
        if kubeconfig.as_deref().is_some_and(unresolved) || context.as_deref().is_some_and(unresolved) {
            checks.push(Check::skip(
                format!("kube cluster {name}"),
                format!("its kubeconfig is made during the run (steps {})", ids.join(", ")),
            ));
            continue;
        }
        checks.extend(check_cluster(subject, kind.as_ref(), &kubeconfig, &context, &steps).await);
    }
    checks
}

async fn check_cluster(
    subject: &Subject,
    kind: &dyn runbook_steps::StepKind,
    kubeconfig: &Option<String>,
    context: &Option<String>,
    steps: &[&PlannedStep],
) -> Vec<Check> {
    let name = cluster_name(kubeconfig, context);
    let mut checks = Vec::new();
    // Each permission once, with the steps that need it.
    let mut needed: BTreeMap<Need, BTreeSet<String>> = BTreeMap::new();
    for step in steps {
        match needs_of(step) {
            Some(needs) => needs.into_iter().for_each(|n| {
                needed.entry(n).or_default().insert(step.id.clone());
            }),
            None => checks.push(Check::skip(
                format!("kube permissions of step {}", step.id),
                "what it acts on is known only once the run reaches it",
            )),
        }
    }
    let needs: Vec<&Need> = needed.keys().collect();
    let review: Vec<Value> = needs
        .iter()
        .map(|(verb, group, resource, namespace)| {
            let (resource, subresource) = match resource.split_once('/') {
                Some((r, s)) => (r.to_string(), Some(s.to_string())),
                None => (resource.clone(), None),
            };
            json!({ "verb": verb, "group": group, "resource": resource, "subresource": subresource, "namespace": namespace })
        })
        .collect();
    let mut inputs = json!({ "action": "access", "checks": review });
    if let Some(k) = kubeconfig {
        inputs["kubeconfig"] = json!(k);
    }
    if let Some(c) = context {
        inputs["context"] = json!(c);
    }
    let context = runbook_steps::StepContext::new("doctor", "doctor", subject.work_dir.clone());
    let (evidence, outputs) = match kind.run(&context, &inputs).await {
        Ok(outcome) => (outcome.evidence, Some(outcome.outputs)),
        // Denials come back as an error whose evidence holds every answer.
        Err(error) if error.code.as_deref() == Some("AccessDenied") => (error.evidence, None),
        Err(error) => {
            let hint = error.hint.clone().unwrap_or_else(|| "check KUBECONFIG and that the cluster is up".into());
            checks.insert(0, Check::fail(format!("kube cluster {name}"), error.to_string(), hint));
            return checks;
        }
    };
    let version = outputs
        .as_ref()
        .and_then(|o| o.get("server_version").cloned())
        .or_else(|| evidence.get("version").cloned())
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_else(|| "version unknown".into());
    let user = evidence["kube_user"].as_str().map(|u| format!(" as {u}")).unwrap_or_default();
    checks.insert(0, Check::pass(format!("kube cluster {name}"), format!("{version}{user}")));
    let answers: Vec<bool> = evidence["checks"]
        .as_array()
        .map(|a| a.iter().map(|c| c["allowed"].as_bool().unwrap_or(false)).collect())
        .unwrap_or_default();
    // One line per resource and namespace, naming the verbs denied when any are.
    let mut lines: BTreeMap<(String, String, Option<String>), Line> = BTreeMap::new();
    for (i, need) in needs.iter().enumerate() {
        let (verb, group, resource, namespace) = need;
        let line = lines.entry((group.clone(), resource.clone(), namespace.clone())).or_default();
        if answers.get(i).copied().unwrap_or(false) { &mut line.allowed } else { &mut line.denied }.push(verb.clone());
        line.steps.extend(needed[*need].iter().cloned());
    }
    for ((group, resource, namespace), Line { mut allowed, mut denied, steps }) in lines {
        allowed.sort_by_key(|v| verb_rank(v));
        denied.sort_by_key(|v| verb_rank(v));
        let by = steps.into_iter().collect::<Vec<_>>().join(", ");
        if denied.is_empty() {
            let what = format!("kube may {}", describe(&allowed, &group, &resource, namespace.as_deref()));
            checks.push(Check::pass(what, format!("steps {by}")));
        } else {
            let what = format!("kube may {}", describe(&denied, &group, &resource, namespace.as_deref()));
            checks.push(Check::fail(
                what,
                format!("denied to the kubeconfig's user (steps {by})"),
                "grant these to the user (a Role or ClusterRole and its binding), or use a context that has them",
            ));
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(inputs: Value) -> PlannedStep {
        PlannedStep { id: "s".into(), kind: "kube".into(), inputs }
    }

    #[test]
    fn each_action_needs_the_verbs_it_sends() {
        let secret = needs_of(&step(json!({"action": "secret", "name": "x", "namespace": "default"}))).unwrap();
        let verbs: Vec<&str> = secret.iter().map(|n| n.0.as_str()).collect();
        assert_eq!(verbs, ["get", "create", "patch"]);
        assert!(secret.iter().all(|n| n.2 == "secrets" && n.3.as_deref() == Some("default")));

        let hc = json!({"action": "wait", "api_version": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
                        "namespace": "clusters", "name": "x"});
        let wait = needs_of(&step(hc)).unwrap();
        assert_eq!(
            wait[0],
            ("list".into(), "hypershift.openshift.io".into(), "hostedclusters".into(), Some("clusters".into()))
        );

        let scale =
            json!({"action": "scale", "api_version": "apps/v1", "kind": "Deployment", "namespace": "n", "name": "d"});
        assert_eq!(needs_of(&step(scale)).unwrap()[1].2, "deployments/scale");

        // A namespace made of another step's output is known only during the run.
        let later = json!({"action": "pods_ready", "namespace": "clusters-${steps.x.name}"});
        assert!(needs_of(&step(later)).is_none());
    }

    #[test]
    fn permissions_read_like_kubectl_auth_can_i() {
        let verbs = vec!["create".to_string(), "patch".to_string()];
        assert_eq!(describe(&verbs, "", "secrets", Some("default")), "create, patch secrets in namespace default");
        assert_eq!(describe(&["*".into()], "*", "*", None), "* * in all namespaces");
        assert_eq!(describe(&["get".into()], "apps", "deployments", None), "get deployments.apps in all namespaces");
    }
}
