//! The Kubernetes API server driven over HTTPS with a plain HTTP client: discovery,
//! CRUD with JSON and protobuf bodies, Status errors, authorization, lists and patches.

#[path = "support/kube_http.rs"]
mod kube_http;

use kube_http::{Answer, Api, pb_field};
use runbook_sandbox::kube::RESTRICTED_USER;
use serde_json::{Value, json};

/// What `kubectl create secret generic NAME --from-file=f.json` sends.
fn protobuf_secret(name: &str, namespace: &str, file: &str, content: &[u8]) -> Vec<u8> {
    let meta = [pb_field(1, name.as_bytes()), pb_field(2, b""), pb_field(3, namespace.as_bytes())].concat();
    let entry = [pb_field(1, file.as_bytes()), pb_field(2, content)].concat();
    let secret = [pb_field(1, &meta), pb_field(2, &entry), pb_field(3, b"")].concat();
    let type_meta = [pb_field(1, b"v1"), pb_field(2, b"Secret")].concat();
    [b"k8s\x00".to_vec(), pb_field(1, &type_meta), pb_field(2, &secret)].concat()
}

#[tokio::test]
async fn version_discovery_and_authentication() {
    let api = Api::start().await;
    let version = api.admin("GET", "/version?timeout=5s", None).await;
    assert_eq!((version.body["major"].as_str(), version.body["minor"].as_str()), (Some("1"), Some("32")));

    let anonymous = api.call("GET", "/api/v1/namespaces", None, "", "application/json", vec![]).await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.body["reason"], "Unauthorized");

    let agg_accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    let token = api.server.admin_token().to_string();
    let core = api.call("GET", "/api?timeout=32s", Some(&token), "", agg_accept, vec![]).await;
    assert_eq!(core.content_type, "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    let resources = core.body["items"][0]["versions"][0]["resources"].as_array().expect("core resources");
    let secrets = resources.iter().find(|r| r["resource"] == "secrets").expect("secrets discovered");
    assert_eq!(secrets["scope"], "Namespaced");
    let groups = api.call("GET", "/apis", Some(&token), "", agg_accept, vec![]).await;
    let names: Vec<&str> =
        groups.body["items"].as_array().unwrap().iter().filter_map(|g| g["metadata"]["name"].as_str()).collect();
    assert!(names.contains(&"apps") && names.contains(&"apiextensions.k8s.io"), "{names:?}");

    let legacy = api.admin("GET", "/api", None).await;
    assert_eq!(legacy.body["kind"], "APIVersions");
    let v1 = api.admin("GET", "/api/v1", None).await;
    assert!(v1.body["resources"].as_array().unwrap().iter().any(|r| r["name"] == "namespaces/status"));
    let apps = api.admin("GET", "/apis/apps/v1", None).await;
    assert!(
        apps.body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "deployments/scale" && r["kind"] == "Scale")
    );
    let unknown = api.admin("GET", "/apis/example.com/v1/widgets", None).await;
    assert_eq!((unknown.status, unknown.body["reason"].as_str()), (404, Some("NotFound")));
    api.server.shutdown().await;
}

#[tokio::test]
async fn objects_are_created_read_updated_and_deleted_with_real_status_errors() {
    let api = Api::start().await;
    let ns = api
        .admin(
            "POST",
            "/api/v1/namespaces?fieldManager=kubectl-create",
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "clusters"}})),
        )
        .await;
    assert_eq!(ns.status, 201);
    assert_eq!(ns.body["metadata"]["labels"]["kubernetes.io/metadata.name"], "clusters");
    assert_eq!(ns.body["status"]["phase"], "Active");

    // kubectl create secret generic: a protobuf body, answered in JSON.
    let token = api.server.admin_token().to_string();
    let body = protobuf_secret("azure-config-file", "clusters", "azure.json", b"{\"a\":1}");
    let created = api
        .call(
            "POST",
            "/api/v1/namespaces/clusters/secrets?fieldManager=kubectl-create&fieldValidation=Strict",
            Some(&token),
            "application/vnd.kubernetes.protobuf",
            "application/vnd.kubernetes.protobuf,application/json",
            body.clone(),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["kind"], "Secret");
    assert_eq!(created.body["type"], "Opaque");
    assert_eq!(created.body["data"]["azure.json"], "eyJhIjoxfQ==");
    let uid = created.body["metadata"]["uid"].as_str().expect("uid").to_string();
    assert!(created.body["metadata"]["resourceVersion"].as_str().is_some_and(|rv| rv.parse::<u64>().is_ok()));
    assert!(created.body["metadata"]["creationTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(created.body["metadata"]["managedFields"][0]["manager"], "kubectl-create");

    let again = api
        .call(
            "POST",
            "/api/v1/namespaces/clusters/secrets",
            Some(&token),
            "application/vnd.kubernetes.protobuf",
            "application/json",
            body,
        )
        .await;
    assert_eq!((again.status, again.body["reason"].as_str()), (409, Some("AlreadyExists")));
    assert_eq!(again.body["message"], "secrets \"azure-config-file\" already exists");

    let missing = api.admin("GET", "/api/v1/namespaces/clusters/secrets/nope", None).await;
    assert_eq!((missing.status, missing.body["reason"].as_str()), (404, Some("NotFound")));
    assert_eq!(missing.body["message"], "secrets \"nope\" not found");
    assert_eq!(missing.body["details"], json!({"name": "nope", "kind": "secrets"}));

    let no_ns =
        api.admin("POST", "/api/v1/namespaces/absent/configmaps", Some(json!({"metadata": {"name": "c"}}))).await;
    assert_eq!((no_ns.status, no_ns.body["message"].as_str()), (404, Some("namespaces \"absent\" not found")));
    let empty = api.admin("GET", "/api/v1/namespaces/absent/configmaps", None).await;
    assert_eq!((empty.status, empty.body["items"].clone()), (200, json!([])));

    // stringData folds into data; an update with a stale resourceVersion conflicts.
    let cm = api
        .admin(
            "POST",
            "/api/v1/namespaces/clusters/secrets",
            Some(json!({"metadata": {"name": "s2"}, "stringData": {"k": "v"}})),
        )
        .await;
    assert_eq!(cm.body["data"], json!({"k": "dg=="}));
    assert!(cm.body.get("stringData").is_none());
    let mut stale = cm.body.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let conflict = api.admin("PUT", "/api/v1/namespaces/clusters/secrets/s2", Some(stale)).await;
    assert_eq!((conflict.status, conflict.body["reason"].as_str()), (409, Some("Conflict")));
    let mut fresh = cm.body.clone();
    fresh["data"]["k"] = json!("dzI=");
    let updated = api.admin("PUT", "/api/v1/namespaces/clusters/secrets/s2", Some(fresh)).await;
    assert_eq!(updated.status, 200);
    assert_ne!(updated.body["metadata"]["resourceVersion"], cm.body["metadata"]["resourceVersion"]);

    // Deleting with a wrong uid precondition is refused; then it goes.
    let refused = api
        .admin(
            "DELETE",
            "/api/v1/namespaces/clusters/secrets/azure-config-file",
            Some(json!({"preconditions": {"uid": "other"}})),
        )
        .await;
    assert_eq!(refused.status, 409);
    let deleted = api
        .admin(
            "DELETE",
            "/api/v1/namespaces/clusters/secrets/azure-config-file",
            Some(json!({"propagationPolicy": "Background", "preconditions": {"uid": uid}})),
        )
        .await;
    assert_eq!(deleted.status, 200);
    let gone = api.admin("GET", "/api/v1/namespaces/clusters/secrets/azure-config-file", None).await;
    assert_eq!(gone.status, 404);
    api.server.shutdown().await;
}

#[tokio::test]
async fn lists_select_page_and_render_tables() {
    let api = Api::start().await;
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let made = api
            .admin(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                Some(json!({"metadata": {"name": name, "labels": {"tier": tier}}, "data": {"x": "1"}})),
            )
            .await;
        assert_eq!(made.status, 201);
    }
    let web =
        api.admin("GET", "/api/v1/namespaces/default/configmaps?labelSelector=tier+in+%28web%2Cother%29", None).await;
    let names: Vec<&str> =
        web.body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    let by_name = api.admin("GET", "/api/v1/configmaps?fieldSelector=metadata.name%3Dc", None).await;
    assert_eq!(by_name.body["items"].as_array().unwrap().len(), 1);
    let bad = api.admin("GET", "/api/v1/configmaps?fieldSelector=spec.x%3D1", None).await;
    assert_eq!((bad.status, bad.body["reason"].as_str()), (400, Some("BadRequest")));

    let first = api.admin("GET", "/api/v1/namespaces/default/configmaps?limit=2", None).await;
    assert_eq!(first.body["items"].as_array().unwrap().len(), 2);
    let token = first.body["metadata"]["continue"].as_str().expect("continue token").to_string();
    let rest = api.admin("GET", &format!("/api/v1/namespaces/default/configmaps?limit=2&continue={token}"), None).await;
    assert_eq!(rest.body["items"][0]["metadata"]["name"], "c");
    assert!(rest.body["metadata"].get("continue").is_none());

    let admin = api.server.admin_token().to_string();
    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let table = api.call("GET", "/api/v1/namespaces?limit=500", Some(&admin), "", table_accept, vec![]).await;
    assert_eq!(table.body["kind"], "Table");
    let columns: Vec<&str> =
        table.body["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(columns, ["Name", "Status", "Age"]);
    let row = &table.body["rows"][0];
    assert_eq!(row["cells"][1], "Active");
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert!(row["object"]["metadata"]["labels"].is_object());
    api.server.shutdown().await;
}

#[tokio::test]
async fn the_restricted_identity_reads_but_may_not_write_and_reviews_agree() {
    let api = Api::start().await;
    let ns = api.admin("POST", "/api/v1/namespaces", Some(json!({"metadata": {"name": "hypershift"}}))).await;
    assert_eq!(ns.status, 201);
    let reader = api.token(RESTRICTED_USER);
    let list =
        api.call("GET", "/api/v1/namespaces/hypershift/secrets", Some(&reader), "", "application/json", vec![]).await;
    assert_eq!(list.status, 200);
    let body = serde_json::to_vec(&json!({"metadata": {"name": "x"}})).unwrap();
    let denied = api
        .call(
            "POST",
            "/api/v1/namespaces/hypershift/secrets",
            Some(&reader),
            "application/json",
            "application/json",
            body,
        )
        .await;
    assert_eq!((denied.status, denied.body["reason"].as_str()), (403, Some("Forbidden")));
    assert_eq!(
        denied.body["message"],
        "secrets is forbidden: User \"sandbox-reader\" cannot create resource \"secrets\" in API group \"\" in the namespace \"hypershift\""
    );
    let elsewhere =
        api.call("GET", "/api/v1/namespaces/default/secrets", Some(&reader), "", "application/json", vec![]).await;
    assert_eq!(elsewhere.status, 403);

    let review = |verb: &str| {
        serde_json::to_vec(&json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {"namespace": "hypershift", "verb": verb, "resource": "secrets"}}})).unwrap()
    };
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews?";
    let can_create =
        api.call("POST", path, Some(&reader), "application/json", "application/json", review("create")).await;
    assert_eq!((can_create.status, can_create.body["status"]["allowed"].as_bool()), (201, Some(false)));
    let can_get = api.call("POST", path, Some(&reader), "application/json", "application/json", review("get")).await;
    assert_eq!(can_get.body["status"]["allowed"], true);
    let admin_can = api.admin("POST", path, Some(serde_json::from_slice(&review("create")).unwrap())).await;
    assert_eq!(admin_can.body["status"]["allowed"], true);

    let whoami = api
        .call(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            Some(&reader),
            "application/json",
            "application/json",
            serde_json::to_vec(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))
                .unwrap(),
        )
        .await;
    assert_eq!(whoami.body["status"]["userInfo"]["username"], RESTRICTED_USER);
    let rules = api
        .call(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            Some(&reader),
            "application/json",
            "application/json",
            serde_json::to_vec(&json!({"spec": {"namespace": "hypershift"}})).unwrap(),
        )
        .await;
    assert!(
        rules.body["status"]["resourceRules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["verbs"] == json!(["get", "list", "watch"]))
    );
    api.server.shutdown().await;
}

#[tokio::test]
async fn patches_keep_no_ops_free_and_refuse_strategic_merge_on_custom_resources() {
    let api = Api::start().await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    assert_eq!(
        api.admin("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", Some(crd)).await.status,
        201
    );
    let w = api.admin("POST", "/apis/example.com/v1/namespaces/default/widgets", Some(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"ignored": true}}))).await;
    assert_eq!(w.status, 201, "{:?}", w.body);
    assert_eq!(w.body["metadata"]["generation"], 1);
    assert!(w.body.get("status").is_none(), "status is the status subresource's");
    let rv = w.body["metadata"]["resourceVersion"].clone();

    let admin = api.server.admin_token().to_string();
    let patch = |ct: &'static str, body: Value| {
        let admin = admin.clone();
        let api = &api;
        async move {
            api.call(
                "PATCH",
                "/apis/example.com/v1/namespaces/default/widgets/w?fieldManager=kubectl-patch",
                Some(&admin),
                ct,
                "application/json",
                serde_json::to_vec(&body).unwrap(),
            )
            .await
        }
    };
    let same = patch("application/merge-patch+json", json!({"spec": {"size": 1}})).await;
    assert_eq!(same.body["metadata"]["resourceVersion"], rv, "a no-op keeps the resourceVersion");
    let labelled = patch("application/merge-patch+json", json!({"metadata": {"labels": {"env": "test"}}})).await;
    assert_eq!(labelled.body["metadata"]["generation"], 1, "metadata changes leave generation");
    let bigger =
        patch("application/json-patch+json", json!([{"op": "replace", "path": "/spec/size", "value": 2}])).await;
    assert_eq!(bigger.body["metadata"]["generation"], 2);
    let smp = patch("application/strategic-merge-patch+json", json!({"spec": {"size": 3}})).await;
    assert_eq!((smp.status, smp.body["reason"].as_str()), (415, Some("UnsupportedMediaType")));

    let status = api
        .call(
            "PATCH",
            "/apis/example.com/v1/namespaces/default/widgets/w/status",
            Some(&admin),
            "application/merge-patch+json",
            "application/json",
            serde_json::to_vec(&json!({"status": {"ready": true}})).unwrap(),
        )
        .await;
    assert_eq!(status.body["status"]["ready"], true);
    assert_eq!(status.body["metadata"]["generation"], 2, "status writes leave generation");
    api.server.shutdown().await;
}

/// Polls `path` until `done` holds for its body (controllers work in the background).
async fn eventually(api: &Api, path: &str, done: impl Fn(&Answer) -> bool) -> Answer {
    for _ in 0..200 {
        let answer = api.admin("GET", path, None).await;
        if done(&answer) {
            return answer;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("{path} never reached the expected state");
}

#[tokio::test]
async fn built_in_kinds_get_the_real_servers_defaults() {
    let api = Api::start().await;
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}});
    let created = api.admin("POST", "/apis/apps/v1/namespaces/default/deployments", Some(deployment)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let spec = &created.body["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(
        (spec["revisionHistoryLimit"].as_i64(), spec["progressDeadlineSeconds"].as_i64()),
        (Some(10), Some(600))
    );
    let pod_spec = &spec["template"]["spec"];
    for (field, value) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("securityContext", json!({})),
        ("terminationGracePeriodSeconds", json!(30)),
    ] {
        assert_eq!(pod_spec[field], value, "{field}");
    }
    let container = &pod_spec["containers"][0];
    assert_eq!(container["imagePullPolicy"], "IfNotPresent");
    assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(container["terminationMessagePolicy"], "File");
    assert_eq!(container["resources"], json!({}));
    assert_eq!(container["ports"][0]["protocol"], "TCP");
    assert!(container.get("env").is_none(), "no field is invented as null: {container}");

    // The controller's ReplicaSet and pods carry the same; pods also what admission adds.
    let rolled = eventually(&api, "/apis/apps/v1/namespaces/default/deployments/web", |a| {
        a.body["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    })
    .await;
    assert_eq!(rolled.body["metadata"]["generation"], 1, "an annotation is not a spec change");
    let pods = eventually(&api, "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb", |a| {
        a.body["items"].as_array().is_some_and(|i| !i.is_empty())
    })
    .await;
    let pod = &pods.body["items"][0]["spec"];
    assert_eq!(
        (pod["serviceAccountName"].as_str(), pod["enableServiceLinks"].as_bool()),
        (Some("default"), Some(true))
    );
    assert_eq!(pod["priority"], 0);
    assert!(pod["volumes"][0]["name"].as_str().unwrap().starts_with("kube-api-access-"), "{pod}");

    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    let svc = api.admin("POST", "/api/v1/namespaces/default/services", Some(service)).await.body;
    assert_eq!(svc["spec"]["sessionAffinity"], "None");
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(svc["spec"]["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));
    assert_eq!(svc["spec"]["clusterIPs"][0], svc["spec"]["clusterIP"]);
    let node_port = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
        "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    let np = api.admin("POST", "/api/v1/namespaces/default/services", Some(node_port)).await.body;
    let port = np["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&port), "{np}");
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");

    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a": "b"}});
    let secret = api.admin("POST", "/api/v1/namespaces/default/secrets", Some(secret)).await.body;
    assert_eq!((secret["type"].as_str(), secret["data"]["a"].as_str()), (Some("Opaque"), Some("Yg==")));
}

#[tokio::test]
async fn every_namespace_has_the_root_ca_and_a_default_service_account() {
    let api = Api::start().await;
    let seeded = api.admin("GET", "/api/v1/configmaps", None).await.body;
    let namespaces: Vec<&str> = seeded["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["metadata"]["name"] == "kube-root-ca.crt")
        .map(|c| c["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(namespaces, ["default", "kube-node-lease", "kube-public", "kube-system"]);
    let ca = &seeded["items"][0];
    assert_eq!(ca["data"]["ca.crt"], api.server.ca_pem());
    assert!(
        ca["metadata"]["annotations"]["kubernetes.io/description"]
            .as_str()
            .unwrap()
            .starts_with("Contains a CA bundle")
    );

    api.admin("POST", "/api/v1/namespaces", Some(json!({"metadata": {"name": "fresh"}}))).await;
    eventually(&api, "/api/v1/namespaces/fresh/serviceaccounts/default", |a| a.status == 200).await;
    eventually(&api, "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt", |a| a.status == 200).await;
    // Deleted or edited, the controllers put them back.
    let token = api.server.admin_token().to_string();
    let edit = serde_json::to_vec(&json!({"data": {"ca.crt": "not a CA"}})).unwrap();
    let path = "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt";
    let edited = api.call("PATCH", path, Some(&token), "application/merge-patch+json", "application/json", edit).await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    eventually(&api, path, |a| a.body["data"]["ca.crt"] == api.server.ca_pem()).await;
    api.admin("DELETE", path, None).await;
    let back = eventually(&api, path, |a| a.status == 200).await;
    assert_eq!(back.body["data"]["ca.crt"], api.server.ca_pem());
    api.admin("DELETE", "/api/v1/namespaces/fresh/serviceaccounts/default", None).await;
    eventually(&api, "/api/v1/namespaces/fresh/serviceaccounts/default", |a| a.status == 200).await;
    // A terminating namespace is emptied for good.
    api.admin("DELETE", "/api/v1/namespaces/fresh", None).await;
    eventually(&api, "/api/v1/namespaces/fresh", |a| a.status == 404).await;
    let left = api.admin("GET", "/api/v1/namespaces/fresh/configmaps", None).await.body;
    assert_eq!(left["items"], json!([]));
}

#[tokio::test]
async fn lists_read_at_an_exact_or_newer_resource_version() {
    let api = Api::start().await;
    let before = api.admin("GET", "/api/v1/namespaces/default/configmaps", None).await.body;
    let rv = before["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let cm = json!({"metadata": {"name": "later"}, "data": {"k": "1"}});
    api.admin("POST", "/api/v1/namespaces/default/configmaps", Some(cm)).await;
    let names = |body: &Value| -> Vec<String> {
        body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
    };
    let exact = api
        .admin(
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact"),
            None,
        )
        .await;
    assert_eq!(exact.status, 200, "{}", exact.body);
    assert_eq!(exact.body["metadata"]["resourceVersion"], rv.as_str());
    assert_eq!(names(&exact.body), names(&before));
    let newer = api
        .admin(
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?resourceVersion={rv}&resourceVersionMatch=NotOlderThan"),
            None,
        )
        .await
        .body;
    assert!(names(&newer).contains(&"later".to_string()), "{newer}");

    for (query, code, reason, message) in [
        (
            "resourceVersionMatch=Exact".to_string(),
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact".to_string(),
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            "resourceVersion=1&resourceVersionMatch=Latest".to_string(),
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"Latest\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        ),
        (
            "resourceVersion=5&resourceVersionMatch=Exact".to_string(),
            410,
            "Expired",
            "too old resource version: 5 (1000)",
        ),
        (
            "resourceVersion=99999999&resourceVersionMatch=NotOlderThan".to_string(),
            504,
            "Timeout",
            "Too large resource version: 99999999, current: ",
        ),
    ] {
        let answer = api.admin("GET", &format!("/api/v1/namespaces/default/configmaps?{query}"), None).await;
        assert_eq!(answer.status, code, "{query}: {}", answer.body);
        assert_eq!(answer.body["reason"], reason, "{query}");
        assert!(answer.body["message"].as_str().unwrap().starts_with(message), "{query}: {}", answer.body);
    }
}
