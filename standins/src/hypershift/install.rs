//! `hypershift install`: validates its options as the real one does, then applies the
//! operator's objects with server-side apply (field manager `hypershift`, force), CRDs first
//! (kube-api-facts §11.4). Kinds the management cluster does not serve (the sandbox has no RBAC
//! or PriorityClass API) are reported and left out rather than pretended.

use serde_json::{Value, json};

use super::cluster_api::ManagementCluster;
use super::flags::{Parsed, go_duration};
use super::{aggregate, crds, refuse_unmodelled};

const FIELD_MANAGER: &str = "hypershift";
const DEFAULT_IMAGE: &str = "quay.io/hypershift/hypershift-operator:latest";
const EXTERNAL_DNS_IMAGE: &str =
    "registry.redhat.io/edo/external-dns-rhel8@sha256:9f60c682b44497d9736a04991c0d2b3485d477f6c89a87c4a44a211a3d1f3cd4";
const VALID_PLATFORMS: &[&str] = &["aws", "azure", "ibmcloud", "kubevirt", "agent", "openstack", "gcp"];

/// The flags this stand-in acts on; any other flag of the real command is refused.
const MODELLED: &[&str] = &[
    "namespace",
    "hypershift-image",
    "image-pull-policy",
    "pull-secret",
    "limit-crd-install",
    "external-dns-provider",
    "external-dns-credentials",
    "external-dns-secret",
    "external-dns-domain-filter",
    "external-dns-txt-owner-id",
    "external-dns-image",
    "external-dns-interval",
    "private-platform",
    "development",
    "enable-conversion-webhook",
    "enable-defaulting-webhook",
    "enable-validating-webhook",
    "disable-capi-conversion-webhook",
    "wait-until-available",
    "wait-until-crds-established",
    "install-scope",
];

struct Options<'a> {
    namespace: &'a str,
    image: &'a str,
    pull_policy: &'a str,
    pull_secret: Option<&'a str>,
    dns_provider: Option<&'a str>,
    dns_credentials: Option<&'a str>,
    dns_secret: Option<&'a str>,
    dns_domain_filter: Option<&'a str>,
    dns_txt_owner: Option<&'a str>,
    dns_interval: &'a str,
    dns_image: &'a str,
    replicas: i32,
    scope: &'a str,
}

fn validate(flags: &Parsed) -> Result<(), String> {
    let mut errors = Vec::new();
    let scope = flags.str_or("install-scope", "all");
    if !["all", "crds", "resources"].contains(&scope) {
        errors.push(format!("invalid --install-scope value \"{scope}\": must be 'all', 'crds', or 'resources'"));
    }
    if scope == "crds" && flags.bool("wait-until-available") {
        errors.push("--wait-until-available has no effect with --install-scope=crds".into());
    }
    match flags.str_or("private-platform", "None") {
        "None" => {}
        "AWS" | "Azure" | "GCP" => errors.push(format!(
            "--private-platform={} is not modelled by this stand-in",
            flags.str_or("private-platform", "")
        )),
        _ => errors.push("--private-platform must be either AWS, Azure, GCP, or None".into()),
    }
    if let Some(provider) = flags.get("external-dns-provider").filter(|p| !p.is_empty()) {
        let has_creds = flags.get("external-dns-credentials").is_some_and(|c| !c.is_empty())
            || flags.get("external-dns-secret").is_some_and(|c| !c.is_empty());
        if provider != "google" && !has_creds {
            errors.push(
                "--external-dns-credentials, --external-dns-secret, or --external-dns-role-arn are required with --external-dns-provider"
                    .into(),
            );
        }
        if flags.get("external-dns-credentials").is_some_and(|c| !c.is_empty())
            && flags.get("external-dns-secret").is_some_and(|c| !c.is_empty())
        {
            errors.push(
                "only one of --external-dns-credentials or --external-dns-credentials-secret is supported".into(),
            );
        }
        if flags.get("external-dns-domain-filter").is_none_or(str::is_empty) {
            errors.push("--external-dns-domain-filter is required with --external-dns-provider".into());
        }
        if let Some(interval) = flags.get("external-dns-interval").filter(|i| !i.is_empty())
            && let Err(why) = go_duration(interval)
        {
            errors.push(format!("--external-dns-interval is not a valid duration: {why}"));
        }
        if provider != "azure" {
            errors.push(format!("--external-dns-provider={provider} is not modelled by this stand-in (only azure)"));
        }
    }
    for platform in flags.list("limit-crd-install") {
        if !VALID_PLATFORMS.contains(&platform.to_lowercase().as_str()) {
            errors.push(format!("not a valid platform type: {platform}"));
        }
    }
    let policy = flags.str_or("image-pull-policy", "IfNotPresent");
    if !["always", "never", "ifnotpresent"].contains(&policy.to_lowercase().as_str()) {
        errors.push(format!("invalid --image-pull-policy: {policy} (want Always|Never|IfNotPresent)"));
    }
    aggregate(errors)
}

fn options(flags: &Parsed) -> Options<'_> {
    // ApplyDefaults: development → 0 replicas; any webhook (the conversion webhook is on by default) → 2; else 1.
    let webhooks = flags.bool("enable-defaulting-webhook")
        || flags.bool("enable-validating-webhook")
        || flags.get("enable-conversion-webhook").is_none_or(|v| v == "true")
        || !flags.bool("disable-capi-conversion-webhook");
    let replicas = if flags.bool("development") {
        0
    } else if webhooks {
        2
    } else {
        1
    };
    let non_empty = |name: &str| flags.get(name).filter(|v| !v.is_empty());
    Options {
        namespace: flags.str_or("namespace", "hypershift"),
        image: flags.str_or("hypershift-image", DEFAULT_IMAGE),
        pull_policy: flags.str_or("image-pull-policy", "IfNotPresent"),
        pull_secret: non_empty("pull-secret"),
        dns_provider: non_empty("external-dns-provider"),
        dns_credentials: non_empty("external-dns-credentials"),
        dns_secret: non_empty("external-dns-secret"),
        dns_domain_filter: non_empty("external-dns-domain-filter"),
        dns_txt_owner: non_empty("external-dns-txt-owner-id"),
        dns_interval: flags.get("external-dns-interval").filter(|v| !v.is_empty()).unwrap_or("1m"),
        dns_image: flags.str_or("external-dns-image", EXTERNAL_DNS_IMAGE),
        replicas,
        scope: flags.str_or("install-scope", "all"),
    }
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn operator_objects(o: &Options<'_>, pull_secret: Option<&[u8]>) -> Vec<Value> {
    let ns = o.namespace;
    let mut objects = vec![
        json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": ns, "labels": { "hypershift.openshift.io/component": "operator" } } }),
        json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": { "name": "operator", "namespace": ns } }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": { "name": "hypershift-operator" },
                "rules": [{ "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] }] }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": { "name": "hypershift-operator" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "hypershift-operator" },
                "subjects": [{ "kind": "ServiceAccount", "name": "operator", "namespace": ns }] }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": { "name": "hypershift-operator", "namespace": ns },
                "rules": [{ "apiGroups": [""], "resources": ["configmaps", "events"], "verbs": ["*"] }] }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": { "name": "hypershift-operator", "namespace": ns },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "hypershift-operator" },
                "subjects": [{ "kind": "ServiceAccount", "name": "operator", "namespace": ns }] }),
    ];
    if let Some(bytes) = pull_secret {
        objects.push(json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "pull-secret", "namespace": ns },
                             "type": "kubernetes.io/dockerconfigjson", "data": { ".dockerconfigjson": base64(bytes) } }));
    }
    objects.push(json!({ "apiVersion": "v1", "kind": "Service", "metadata": { "name": "operator", "namespace": ns, "labels": { "name": "operator" } },
                         "spec": { "selector": { "name": "operator" }, "ports": [{ "name": "metrics", "port": 9393, "targetPort": "metrics", "protocol": "TCP" }] } }));
    objects.push(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "operator", "namespace": ns },
        "spec": {
            "replicas": o.replicas,
            "selector": { "matchLabels": { "name": "operator" } },
            "template": {
                "metadata": { "labels": { "name": "operator", "hypershift.openshift.io/operator-component": "operator", "app": "operator" } },
                "spec": {
                    "serviceAccountName": "operator",
                    "containers": [{
                        "name": "operator", "image": o.image, "imagePullPolicy": o.pull_policy,
                        "command": ["/usr/bin/hypershift-operator"],
                        "args": ["run", format!("--namespace=$(MY_NAMESPACE)"), "--pod-name=$(MY_NAME)", "--metrics-addr=:9000", "--enable-ci-debug-output=false", "--private-platform=None"],
                        "ports": [{ "name": "metrics", "containerPort": 9000, "protocol": "TCP" }],
                    }],
                },
            },
        },
    }));
    objects
}

fn external_dns_objects(o: &Options<'_>, credentials: Option<&[u8]>) -> Vec<Value> {
    let ns = o.namespace;
    let secret_name = o.dns_secret.unwrap_or("external-dns-credentials");
    let txt_owner = o.dns_txt_owner.map(str::to_string).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let mut objects = vec![
        json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": { "name": "external-dns", "namespace": ns } }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": { "name": "external-dns" },
                "rules": [{ "apiGroups": [""], "resources": ["endpoints", "services", "nodes", "pods"], "verbs": ["get", "list", "watch"] },
                          { "apiGroups": ["route.openshift.io"], "resources": ["routes"], "verbs": ["get", "list", "watch"] }] }),
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": { "name": "external-dns" },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "external-dns" },
                "subjects": [{ "kind": "ServiceAccount", "name": "external-dns", "namespace": ns }] }),
    ];
    if let Some(bytes) = credentials {
        objects.push(json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "external-dns-credentials", "namespace": ns },
                             "type": "Opaque", "data": { "credentials": base64(bytes) } }));
    }
    let provider = o.dns_provider.unwrap_or("azure");
    objects.push(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "external-dns", "namespace": ns },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { "name": "external-dns" } },
            "template": {
                "metadata": { "labels": { "name": "external-dns", "app": "external-dns", "hypershift.openshift.io/operator-component": "external-dns" } },
                "spec": {
                    "serviceAccountName": "external-dns",
                    "containers": [{
                        "name": "external-dns", "image": o.dns_image, "imagePullPolicy": "IfNotPresent",
                        "command": ["/external-dns"],
                        "args": ["--source=service", "--source=openshift-route",
                                 format!("--domain-filter={}", o.dns_domain_filter.unwrap_or_default()),
                                 format!("--provider={provider}"), "--registry=txt", "--txt-suffix=-external-dns",
                                 format!("--txt-owner-id={txt_owner}"),
                                 "--label-filter=hypershift.openshift.io/route-visibility!=private",
                                 format!("--interval={}", o.dns_interval), "--txt-cache-interval=1h",
                                 "--azure-config-file=/etc/provider/credentials"],
                        "env": [{ "name": "AZURE_SDK_MAX_RETRIES", "value": "5" }],
                        "ports": [{ "name": "metrics", "containerPort": 7979 }],
                        "volumeMounts": [{ "name": "credentials", "mountPath": "/etc/provider" }],
                    }],
                    "volumes": [{ "name": "credentials", "secret": { "secretName": secret_name } }],
                },
            },
        },
    }));
    objects
}

fn describe(object: &Value) -> String {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    format!("{} {}/{}", text("/kind"), text("/metadata/namespace"), text("/metadata/name"))
}

pub async fn run(flags: &Parsed) -> Result<(), String> {
    refuse_unmodelled(flags, MODELLED, "install")?;
    validate(flags)?;
    let o = options(flags);
    let pull_secret = match o.pull_secret {
        Some(path) => Some(
            std::fs::read(path)
                .map_err(|e| format!("failed to read pull secret file: {}", super::go_io_error(path, &e)))?,
        ),
        None => None,
    };
    let dns_credentials = match (o.dns_provider, o.dns_credentials) {
        (Some(_), Some(path)) => Some(std::fs::read(path).map_err(|e| super::go_io_error(path, &e))?),
        _ => None,
    };
    let cluster = ManagementCluster::connect(None).await?;
    let mut objects = operator_objects(&o, pull_secret.as_deref());
    if o.dns_provider.is_some() {
        objects.extend(external_dns_objects(&o, dns_credentials.as_deref()));
    }
    if !flags.list("limit-crd-install").iter().all(|p| p.eq_ignore_ascii_case("azure")) {
        println!("note: of the Cluster API provider CRDs this stand-in installs Azure's only");
    }
    if o.scope != "resources" {
        for crd in crds::all() {
            cluster.apply(&crd, FIELD_MANAGER).await?;
            println!("applied {}", describe(&crd));
        }
    }
    if o.scope != "crds" {
        let mut errors = Vec::new();
        for object in &objects {
            match cluster.apply(object, FIELD_MANAGER).await {
                Ok(()) => println!("applied {}", describe(object)),
                Err(e) if e.starts_with("no matches for kind") => {
                    println!("skipped {}: {e} (not served by this management cluster)", describe(object))
                }
                Err(e) => {
                    errors.push(e);
                    println!("applied {}", describe(object));
                }
            }
        }
        aggregate(errors)?;
        if flags.bool("wait-until-available") {
            wait_until_available(&cluster, o.namespace, o.replicas).await?;
        }
    }
    Ok(())
}

/// As the real `--wait-until-available`: the operator Deployment rolled out and available.
async fn wait_until_available(cluster: &ManagementCluster, namespace: &str, replicas: i32) -> Result<(), String> {
    let clock = runbook_clock::Clock::process();
    let deadline = clock.now() + std::time::Duration::from_secs(600);
    loop {
        let deployment = cluster.get("apps/v1", "Deployment", "deployments", namespace, "operator").await?;
        let status = deployment.as_ref().map(|d| d["status"].clone()).unwrap_or_default();
        let count = |k: &str| status[k].as_i64().unwrap_or(0);
        if count("updatedReplicas") == i64::from(replicas) && count("availableReplicas") >= i64::from(replicas) {
            println!("HyperShift operator deployment is available");
            return Ok(());
        }
        if clock.now() > deadline {
            return Err("timed out waiting for the HyperShift operator deployment to be available".into());
        }
        clock.sleep(std::time::Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hypershift::flags::parse;
    use crate::hypershift::tree::resolve;

    fn parsed(args: &[&str]) -> Parsed {
        let args: Vec<String> = std::iter::once("install").chain(args.iter().copied()).map(str::to_string).collect();
        let resolved = resolve(&args);
        parse(&resolved.flags, &resolved.args).unwrap()
    }

    #[test]
    fn external_dns_needs_credentials_and_a_domain_filter() {
        let error = validate(&parsed(&["--external-dns-provider=azure"])).unwrap_err();
        assert_eq!(
            error,
            "[--external-dns-credentials, --external-dns-secret, or --external-dns-role-arn are required with --external-dns-provider, --external-dns-domain-filter is required with --external-dns-provider]"
        );
        assert!(
            validate(&parsed(&[
                "--external-dns-provider=azure",
                "--external-dns-credentials",
                "f",
                "--external-dns-domain-filter",
                "x.example.com"
            ]))
            .is_ok()
        );
        assert_eq!(
            validate(&parsed(&["--limit-crd-install", "Azure,Mars"])).unwrap_err(),
            "not a valid platform type: Mars"
        );
    }

    #[test]
    fn the_operator_runs_two_replicas_unless_told_otherwise() {
        assert_eq!(options(&parsed(&[])).replicas, 2);
        assert_eq!(options(&parsed(&["--development"])).replicas, 0);
    }
}
