//! What the real `hypershift install` needs of the management cluster beyond the core
//! kinds: PriorityClasses (created in protobuf by its controller-runtime client), the
//! `monitoring.coreos.com` CRDs an OpenShift cluster serves from the start, and object names
//! checked per kind (its RoleBinding `hypershift:extension-apiserver-authentication-reader`).

#[path = "support/kube_http.rs"]
mod kube_http;

use kube_http::{Api, pb_field};
use serde_json::{Value, json};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

fn pb_varint_field(n: u32, value: i64) -> Vec<u8> {
    let mut out = vec![(n << 3) as u8];
    let mut v = value as u64;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// What controller-runtime's typed client sends for `client.Create(ctx, priorityClass)`.
fn protobuf_priority_class(name: &str, value: i64, policy: &str) -> Vec<u8> {
    let meta = pb_field(1, name.as_bytes());
    let class = [
        pb_field(1, &meta),
        pb_varint_field(2, value),
        pb_varint_field(3, 0),
        pb_field(4, b"This priority class should be used for hypershift control plane pods"),
        pb_field(5, policy.as_bytes()),
    ]
    .concat();
    let type_meta = [pb_field(1, b"scheduling.k8s.io/v1"), pb_field(2, b"PriorityClass")].concat();
    let unknown = [pb_field(1, &type_meta), pb_field(2, &class), pb_field(3, b""), pb_field(4, b"")].concat();
    [b"k8s\x00".as_slice(), &unknown].concat()
}

fn names_of<'a>(list: &'a Value, pointer: &str) -> Vec<&'a str> {
    list["items"].as_array().into_iter().flatten().filter_map(|i| i.pointer(pointer)?.as_str()).collect()
}

#[tokio::test]
async fn priority_classes_are_served_with_the_system_classes_and_their_rules() {
    let api = Api::start().await;
    let token = api.server.admin_token().to_string();

    // Discovery, aggregated and legacy, and the OpenAPI document kubectl apply reads.
    let groups = api.call("GET", "/apis", Some(&token), "", AGGREGATED, vec![]).await;
    let scheduling = groups.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "scheduling.k8s.io")
        .expect("scheduling.k8s.io discovered");
    let resource = &scheduling["versions"][0]["resources"][0];
    assert_eq!((resource["resource"].as_str(), resource["scope"].as_str()), (Some("priorityclasses"), Some("Cluster")));
    assert_eq!(resource["shortNames"], json!(["pc"]));
    let legacy = api.admin("GET", "/apis/scheduling.k8s.io/v1", None).await;
    assert_eq!(legacy.body["resources"][0]["name"], "priorityclasses");
    assert_eq!(legacy.body["resources"][0]["namespaced"], false);
    let versions = api.admin("GET", "/apis", None).await;
    assert!(versions.body["groups"].as_array().unwrap().iter().any(|g| g["name"] == "scheduling.k8s.io"));
    let openapi = api.admin("GET", "/openapi/v3/apis/scheduling.k8s.io/v1", None).await;
    let schema = &openapi.body["components"]["schemas"]["io.k8s.api.scheduling.v1.PriorityClass"];
    assert!(schema["properties"]["value"].is_object(), "{schema}");

    // The classes every cluster bootstraps.
    let classes = api.admin("GET", "/apis/scheduling.k8s.io/v1/priorityclasses", None).await;
    assert_eq!(names_of(&classes.body, "/metadata/name"), ["system-cluster-critical", "system-node-critical"]);
    let node_critical = api.admin("GET", "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical", None).await;
    assert_eq!(node_critical.body["value"], 2_000_001_000);
    assert_eq!(node_critical.body["preemptionPolicy"], "PreemptLowerPriority");

    // Created in protobuf as `hypershift install` does; a second create is AlreadyExists,
    // which it reports as "already exists" and goes on.
    let body = protobuf_priority_class("hypershift-control-plane", 100_000_000, "Never");
    let created = api
        .call(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            Some(&token),
            "application/vnd.kubernetes.protobuf",
            "application/json",
            body.clone(),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        (created.body["value"].as_i64(), created.body["preemptionPolicy"].as_str()),
        (Some(100_000_000), Some("Never"))
    );
    assert!(created.body.get("globalDefault").is_none(), "false is omitted as Go's JSON does");
    let again = api
        .call(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            Some(&token),
            "application/vnd.kubernetes.protobuf",
            "application/json",
            body,
        )
        .await;
    assert_eq!((again.status, again.body["reason"].as_str()), (409, Some("AlreadyExists")));
    let defaulted = api
        .admin("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", Some(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hypershift-operator"}, "value": 100_003_000})))
        .await;
    assert_eq!(defaulted.body["preemptionPolicy"], "PreemptLowerPriority");

    // The value is fixed at creation; `system-` names and values above a billion are reserved.
    let path = "/apis/scheduling.k8s.io/v1/priorityclasses/hypershift-control-plane";
    let mut changed = api.admin("GET", path, None).await.body;
    changed["value"] = json!(5);
    let refused = api.admin("PUT", path, Some(changed)).await;
    assert_eq!(refused.status, 422);
    assert_eq!(
        refused.body["message"],
        "PriorityClass.scheduling.k8s.io \"hypershift-control-plane\" is invalid: value: Forbidden: may not be changed in an update."
    );
    assert_eq!(refused.body["details"]["causes"][0]["reason"], "FieldValueForbidden");
    let reserved = api
        .admin("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", Some(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "system-mine"}, "value": 10})))
        .await;
    assert_eq!(reserved.status, 422);
    assert_eq!(
        reserved.body["message"],
        "PriorityClass.scheduling.k8s.io \"system-mine\" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
    );
    let too_high = api
        .admin("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", Some(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "mine"}, "value": 1_000_000_001})))
        .await;
    assert_eq!(too_high.status, 422, "{}", too_high.body);

    // `kubectl get pc` columns.
    let table = api
        .call(
            "GET",
            "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical",
            Some(&token),
            "",
            "application/json;as=Table;v=v1;g=meta.k8s.io",
            vec![],
        )
        .await;
    let columns: Vec<&str> =
        table.body["columnDefinitions"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(columns, ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]);
    assert_eq!(table.body["rows"][0]["cells"][1], 2_000_001_000);
    api.server.shutdown().await;
}

#[tokio::test]
async fn the_monitoring_crds_of_an_openshift_cluster_exist_from_the_start() {
    let api = Api::start().await;
    let token = api.server.admin_token().to_string();
    let crds = api.admin("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", None).await;
    let names = names_of(&crds.body, "/metadata/name");
    for crd in ["servicemonitors", "podmonitors", "prometheusrules", "prometheuses", "alertmanagers"] {
        assert!(names.contains(&format!("{crd}.monitoring.coreos.com").as_str()), "{crd}: {names:?}");
    }
    let established = crds.body["items"].as_array().unwrap().iter().all(|c| {
        c["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|x| x["type"] == "Established" && x["status"] == "True"))
    });
    assert!(established, "every CRD is Established");

    let groups = api.call("GET", "/apis", Some(&token), "", AGGREGATED, vec![]).await;
    let monitoring = groups.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "monitoring.coreos.com")
        .expect("monitoring.coreos.com discovered");
    let v1 = monitoring["versions"].as_array().unwrap().iter().find(|v| v["version"] == "v1").expect("v1");
    let kinds: Vec<&str> =
        v1["resources"].as_array().unwrap().iter().filter_map(|r| r["responseKind"]["kind"].as_str()).collect();
    for kind in ["ServiceMonitor", "PodMonitor", "PrometheusRule"] {
        assert!(kinds.contains(&kind), "{kind}: {kinds:?}");
    }

    // `hypershift install` applies its ServiceMonitor server-side, as YAML.
    api.admin(
        "POST",
        "/api/v1/namespaces",
        Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hypershift"}})),
    )
    .await;
    let monitor = "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: operator\n  namespace: hypershift\nspec:\n  endpoints:\n  - port: metrics\n  selector:\n    matchLabels:\n      name: operator\n";
    let applied = api
        .call(
            "PATCH",
            "/apis/monitoring.coreos.com/v1/namespaces/hypershift/servicemonitors/operator?fieldManager=hypershift&force=true",
            Some(&token),
            "application/apply-patch+yaml",
            "application/json",
            monitor.as_bytes().to_vec(),
        )
        .await;
    assert_eq!(applied.status, 201, "{}", applied.body);
    assert_eq!(applied.body["spec"]["endpoints"][0]["port"], "metrics");
    api.server.shutdown().await;
}

async fn create_named(api: &Api, collection: &str, api_version: &str, kind: &str, name: &str) -> kube_http::Answer {
    let mut body = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if kind == "RoleBinding" {
        body["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extension-apiserver-authentication-reader"});
    }
    api.admin("POST", collection, Some(body)).await
}

#[tokio::test]
async fn names_are_checked_by_each_kinds_rule_with_the_real_invalid_status() {
    let api = Api::start().await;
    let token = api.server.admin_token().to_string();
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings";
    let rbac = "rbac.authorization.k8s.io/v1";

    // RBAC names are path segments: a colon is fine, created or applied.
    let colon =
        create_named(&api, bindings, rbac, "RoleBinding", "hypershift:extension-apiserver-authentication-reader").await;
    assert_eq!(colon.status, 201, "{}", colon.body);
    let binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: hypershift:other\n  namespace: kube-system\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\n";
    let applied = api
        .call(
            "PATCH",
            &format!("{bindings}/hypershift:other?fieldManager=hypershift&force=true"),
            Some(&token),
            "application/apply-patch+yaml",
            "application/json",
            binding.as_bytes().to_vec(),
        )
        .await;
    assert_eq!(applied.status, 201, "{}", applied.body);
    let role =
        create_named(&api, "/apis/rbac.authorization.k8s.io/v1/clusterroles", rbac, "ClusterRole", "System:Upper_Case")
            .await;
    assert_eq!(role.status, 201, "{}", role.body);
    let percent = create_named(&api, bindings, rbac, "RoleBinding", "a%b").await;
    assert_eq!(percent.status, 422);
    assert_eq!(percent.body["reason"], "Invalid");
    assert_eq!(
        percent.body["message"],
        "RoleBinding.rbac.authorization.k8s.io \"a%b\" is invalid: metadata.name: Invalid value: \"a%b\": may not contain '%'"
    );
    assert_eq!(
        percent.body["details"],
        json!({"name": "a%b", "group": "rbac.authorization.k8s.io", "kind": "RoleBinding",
               "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value: \"a%b\": may not contain '%'", "field": "metadata.name"}]})
    );
    let dots = create_named(&api, bindings, rbac, "RoleBinding", "..").await;
    assert_eq!(
        dots.body["message"],
        "RoleBinding.rbac.authorization.k8s.io \"..\" is invalid: metadata.name: Invalid value: \"..\": may not be '..'"
    );

    // Most kinds are DNS-1123 subdomains.
    let secret = create_named(&api, "/api/v1/namespaces/default/secrets", "v1", "Secret", "hypershift:x").await;
    assert_eq!(secret.status, 422);
    assert_eq!(
        secret.body["message"],
        "Secret \"hypershift:x\" is invalid: metadata.name: Invalid value: \"hypershift:x\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    let dotted = create_named(&api, "/api/v1/namespaces/default/configmaps", "v1", "ConfigMap", "feature.gate").await;
    assert_eq!(dotted.status, 201);
    let class =
        create_named(&api, "/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass", "Hi")
            .await;
    assert_eq!(class.status, 422);

    // Namespaces are DNS-1123 labels: no dots, at most 63 characters.
    let namespace = create_named(&api, "/api/v1/namespaces", "v1", "Namespace", "a.b").await;
    assert_eq!(
        namespace.body["message"],
        "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    );
    let long = "n".repeat(64);
    let too_long = create_named(&api, "/api/v1/namespaces", "v1", "Namespace", &long).await;
    assert_eq!(
        too_long.body["message"],
        format!(
            "Namespace \"{long}\" is invalid: metadata.name: Invalid value: \"{long}\": must be no more than 63 characters"
        )
    );

    // Services are DNS-1035 labels (Kubernetes 1.32): a leading digit is refused.
    let service = api
        .admin("POST", "/api/v1/namespaces/default/services", Some(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1abc"}, "spec": {"ports": [{"port": 80}]}})))
        .await;
    assert_eq!(service.status, 422);
    assert!(
        service.body["message"]
            .as_str()
            .unwrap()
            .contains("a DNS-1035 label must consist of lower case alphanumeric characters"),
        "{}",
        service.body
    );

    // No name at all is a required value.
    let nameless = api
        .admin(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})),
        )
        .await;
    assert_eq!(
        nameless.body["message"],
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(nameless.body["details"]["causes"][0]["reason"], "FieldValueRequired");
    api.server.shutdown().await;
}
