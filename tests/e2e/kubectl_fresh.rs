//! Real kubectl 1.32 on a fresh sandbox cluster, looking at what a real API server fills
//! in: the objects every namespace has, the defaults of built-in kinds, rollouts and
//! rollbacks, client-side then server-side apply, and lists at a resourceVersion.

use crate::kubectl::{Cluster, words};
use crate::support::TestEnv;

const APP: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: demo, labels: {app: api}}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: api
        image: registry.example.com/api:1.0
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}}
        env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        volumeMounts: [{name: cfg, mountPath: /etc/cfg}]
      volumes: [{name: cfg, configMap: {name: api-cfg}}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: demo}
spec:
  selector: {app: api}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-cfg, namespace: demo}
data: {a: "1"}
"#;

#[test]
fn real_kubectl_sees_a_fresh_cluster_filled_in_like_a_real_one() {
    let env = TestEnv::new();
    let cluster = Cluster::start(&env.path().join("sandbox"));

    // Every namespace has the root CA ConfigMap and the default ServiceAccount.
    let seeded = cluster.ok(&["get", "configmaps,serviceaccounts", "-A", "-o", "name"]);
    assert_eq!(seeded.matches("configmap/kube-root-ca.crt").count(), 4, "{seeded}");
    assert_eq!(seeded.matches("serviceaccount/default").count(), 4, "{seeded}");
    cluster.ok(&["create", "namespace", "fresh"]);
    let mut found = String::new();
    for _ in 0..100 {
        found = cluster.ok(&["get", "configmap,serviceaccount", "-n", "fresh", "-o", "name"]);
        if found.lines().count() == 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(found, "configmap/kube-root-ca.crt\nserviceaccount/default\n");
    let ca = cluster.ok(&["get", "configmap", "kube-root-ca.crt", "-n", "fresh", "-o", "jsonpath={.data.ca\\.crt}"]);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");

    // A typed create gets the Deployment and pod template defaults.
    assert_eq!(
        cluster.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=2"]),
        "deployment.apps/web created\n"
    );
    let spec: serde_json::Value =
        serde_json::from_str(&cluster.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec}"])).unwrap();
    assert_eq!(spec["strategy"]["type"], "RollingUpdate");
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(
        (spec["revisionHistoryLimit"].as_i64(), spec["progressDeadlineSeconds"].as_i64()),
        (Some(10), Some(600))
    );
    let container = &spec["template"]["spec"]["containers"][0];
    assert_eq!(container["imagePullPolicy"], "Always", "an untagged image is pulled always");
    assert_eq!(container["terminationMessagePolicy"], "File");
    assert_eq!(spec["template"]["spec"]["schedulerName"], "default-scheduler");
    cluster.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let described = cluster.ok(&["describe", "deployment", "web"]);
    for line in [
        "StrategyType:           RollingUpdate",
        "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
        "Annotations:            deployment.kubernetes.io/revision: 1",
    ] {
        assert!(described.contains(line), "{line:?} in\n{described}");
    }
    let pod: serde_json::Value =
        serde_json::from_str(&cluster.ok(&["get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec}"]))
            .unwrap();
    assert_eq!(pod["serviceAccountName"], "default");
    assert_eq!(pod["tolerations"].as_array().map(Vec::len), Some(2));

    // A new image is revision 2; undo brings revision 1's template back as revision 3.
    assert_eq!(
        cluster.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]),
        "deployment.apps/web image updated\n"
    );
    cluster.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert_eq!(cluster.ok(&["rollout", "undo", "deployment/web"]), "deployment.apps/web rolled back\n");
    cluster.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let history = cluster.ok(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> = history.lines().skip(2).filter_map(|l| words(l).first().copied()).collect();
    assert_eq!(revisions, ["2", "3"], "{history}");
    assert_eq!(
        cluster.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"]),
        "nginx"
    );
    assert_eq!(
        cluster.ok(&["get", "rs", "-l", "app=web", "-o", "name"]).lines().count(),
        2,
        "the old ReplicaSet is reused"
    );

    // Client-side apply, again unchanged, then server-side apply of the same takes over
    // without conflicts over the fields the server defaulted.
    let app = env.write("app.yaml", APP);
    let app = app.to_str().unwrap();
    let first = cluster.run(&["apply", "-f", app]);
    assert_eq!(first.stderr, "", "no warnings");
    let first = first.stdout;
    assert_eq!(
        first,
        "namespace/demo created\ndeployment.apps/api created\nservice/api created\nconfigmap/api-cfg created\n"
    );
    let again = cluster.ok(&["apply", "-f", app]);
    assert!(again.lines().all(|l| l.ends_with(" unchanged")), "{again}");
    let ssa = cluster.run(&["apply", "--server-side", "-f", app]);
    assert_eq!(ssa.code, 0, "{}", ssa.stderr);
    assert!(ssa.stdout.lines().all(|l| l.ends_with(" serverside-applied")), "{}", ssa.stdout);
    let diff = cluster.run(&["diff", "-f", app]);
    assert_eq!(
        (diff.code, diff.stdout.as_str(), diff.stderr.as_str()),
        (0, "", ""),
        "patches are computed from the served schemas without warnings"
    );

    // explain walks the built-in kinds' schemas with their upstream descriptions.
    let explained = cluster.ok(&["explain", "deployment.spec.strategy"]);
    assert!(explained.contains("FIELD: strategy <DeploymentStrategy>"), "{explained}");
    assert!(explained.contains("rollingUpdate\t<RollingUpdateDeployment>"), "{explained}");
    let image = cluster.ok(&["explain", "pods.spec.containers.image"]);
    assert!(image.contains("Container image name."), "{image}");
    let svc: serde_json::Value =
        serde_json::from_str(&cluster.ok(&["get", "svc", "api", "-n", "demo", "-o", "jsonpath={.spec}"])).unwrap();
    assert_eq!((svc["sessionAffinity"].as_str(), svc["ipFamilyPolicy"].as_str()), (Some("None"), Some("SingleStack")));
    assert_eq!(svc["ports"][0]["protocol"], "TCP");

    // Lists at an exact resourceVersion, and the API's refusals.
    let rv = cluster.ok(&["get", "--raw", "/api/v1/namespaces/demo/configmaps"]);
    let rv: serde_json::Value = serde_json::from_str(&rv).unwrap();
    let rv = rv["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    cluster.ok(&["create", "configmap", "later", "-n", "demo"]);
    let exact = cluster.ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/demo/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact"),
    ]);
    assert!(!exact.contains("\"later\""), "{exact}");
    let refused = cluster.run(&["get", "--raw", "/api/v1/namespaces/demo/configmaps?resourceVersionMatch=Exact"]);
    assert_eq!(refused.code, 1);
    assert!(
        refused.stderr.contains("resourceVersionMatch is forbidden unless resourceVersion is provided"),
        "{}",
        refused.stderr
    );
}
