//! The machine's real kubectl (1.32) against `runbook sandbox up`'s Kubernetes API: every
//! command the procedure uses, with the output a real cluster prints. kubectl missing is
//! a failure, never a skip.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::support::{TestEnv, runbook_bin};

const KUBECTL: &str = "/usr/bin/kubectl";

/// `runbook sandbox up` in its own process, and kubectl pointed at its kubeconfig.
pub(crate) struct Cluster {
    child: Child,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Cluster {
    pub(crate) fn start(dir: &Path) -> Cluster {
        assert!(
            Path::new(KUBECTL).exists(),
            "kubectl 1.32 is required at {KUBECTL} for the conformance test (Debian's kubernetes-client 1.20 is too old)"
        );
        let child = Command::new(runbook_bin())
            .args(["sandbox", "up", "--latency-scale", "0.02", "--dir", dir.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sandbox starts");
        let env_file = dir.join("sandbox.env");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !env_file.exists() {
            assert!(Instant::now() < deadline, "the sandbox never wrote {}", env_file.display());
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(100));
        let settings = std::fs::read_to_string(&env_file).unwrap();
        let kubeconfig = settings
            .lines()
            .find_map(|l| l.strip_prefix("export KUBECONFIG="))
            .map(PathBuf::from)
            .expect("sandbox.env exports KUBECONFIG");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&kubeconfig).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600, "the kubeconfig holds tokens");
        Cluster { child, kubeconfig, cache: dir.join("kube-cache") }
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(KUBECTL);
        c.env("KUBECONFIG", &self.kubeconfig).env_remove("HTTPS_PROXY").arg("--cache-dir").arg(&self.cache).args(args);
        c
    }

    pub(crate) fn run(&self, args: &[&str]) -> Out {
        let o = self.command(args).output().expect("kubectl runs");
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Runs and expects success; returns stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.code, 0, "kubectl {args:?} failed:\n{}{}", out.stdout, out.stderr);
        out.stdout
    }

    fn apply(&self, env: &TestEnv, name: &str, yaml: &str, extra: &[&str]) -> Out {
        let file = env.write(name, yaml);
        let mut args = vec!["apply", "--server-side", "-f", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        self.run(&args)
    }
}

/// Column headers and the first cells of each line, whitespace-normalised.
pub(crate) fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: nodepools.hypershift.openshift.io
spec:
  group: hypershift.openshift.io
  names: {kind: NodePool, listKind: NodePoolList, plural: nodepools, singular: nodepool, shortNames: [np, nps]}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Cluster, type: string, jsonPath: .spec.clusterName}
    - {name: Desired Nodes, type: integer, jsonPath: .spec.replicas}
    - {name: Current Nodes, type: integer, jsonPath: .status.replicas}
    - {name: Message, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].message'}
    schema:
      openAPIV3Schema:
        type: object
        description: NodePool is a scalable set of worker nodes attached to a HostedCluster.
        properties:
          spec:
            type: object
            description: Spec is the desired behavior of the NodePool.
            properties:
              clusterName: {type: string, description: ClusterName is the name of the HostedCluster this NodePool belongs to.}
              replicas: {type: integer}
              pausedUntil: {type: string, description: PausedUntil pauses reconciliation of the NodePool (true or an RFC 3339 time).}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

fn nodepool(replicas: u32) -> String {
    format!(
        "apiVersion: hypershift.openshift.io/v1beta1\nkind: NodePool\nmetadata: {{name: demo, namespace: clusters}}\nspec: {{clusterName: demo, replicas: {replicas}, pausedUntil: \"true\"}}\n"
    )
}

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: operator, namespace: hypershift}
spec:
  replicas: 2
  selector: {matchLabels: {name: operator}}
  template:
    metadata: {labels: {name: operator, app: operator}}
    spec:
      containers: [{name: operator, image: quay.io/hypershift/hypershift-operator:latest}]
"#;

#[test]
fn real_kubectl_accepts_the_sandbox_kubernetes_api() {
    let env = TestEnv::new();
    let cluster = Cluster::start(&env.path().join("sandbox"));

    // Cluster and discovery.
    let info = cluster.ok(&["cluster-info"]);
    assert!(info.contains("Kubernetes control plane is running at https://127.0.0.1:"), "{info}");
    let versions = cluster.ok(&["api-versions"]);
    for gv in ["v1", "apps/v1", "apiextensions.k8s.io/v1", "authorization.k8s.io/v1"] {
        assert!(versions.lines().any(|l| l == gv), "{gv} in {versions}");
    }
    let resources = cluster.ok(&["api-resources"]);
    assert_eq!(words(resources.lines().next().unwrap()), ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]);
    assert!(resources.lines().any(|l| words(l) == ["namespaces", "ns", "v1", "false", "Namespace"]), "{resources}");
    assert!(resources.lines().any(|l| words(l) == ["deployments", "deploy", "apps/v1", "true", "Deployment"]));

    // Namespaces and a secret from a file (kubectl sends protobuf bodies for both).
    assert_eq!(cluster.ok(&["create", "namespace", "clusters"]), "namespace/clusters created\n");
    assert_eq!(cluster.ok(&["create", "namespace", "hypershift"]), "namespace/hypershift created\n");
    let exists = cluster.run(&["create", "namespace", "clusters"]);
    assert_eq!(exists.code, 1);
    assert!(
        exists.stderr.contains("Error from server (AlreadyExists): namespaces \"clusters\" already exists"),
        "{}",
        exists.stderr
    );
    let file = env.write("azure_mgmt.json", "{\"tenantId\": \"t\", \"subscriptionId\": \"s\"}\n");
    let created = cluster.ok(&[
        "create",
        "secret",
        "generic",
        "azure-config-file",
        "--namespace",
        "clusters",
        "--from-file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(created, "secret/azure-config-file created\n");
    let data = cluster.ok(&[
        "get",
        "secret",
        "azure-config-file",
        "-n",
        "clusters",
        "-o",
        "jsonpath={.data.azure_mgmt\\.json}",
    ]);
    let decoded = base64::engine::general_purpose::STANDARD.decode(data.trim()).unwrap();
    assert_eq!(decoded, std::fs::read(&file).unwrap());

    // get in its forms.
    let table = cluster.ok(&["get", "secrets", "-n", "clusters"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(words(lines[0]), ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(&words(lines[1])[..3], ["azure-config-file", "Opaque", "1"]);
    let all = cluster.ok(&["get", "secrets", "-A"]);
    assert_eq!(words(all.lines().next().unwrap()), ["NAMESPACE", "NAME", "TYPE", "DATA", "AGE"]);
    assert!(all.lines().any(|l| words(l).starts_with(&["clusters", "azure-config-file", "Opaque", "1"])), "{all}");
    let nodes = cluster.ok(&["get", "nodes", "-o", "wide"]);
    assert_eq!(
        &words(nodes.lines().next().unwrap())[..7],
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP"]
    );
    assert!(nodes.lines().nth(1).is_some_and(|l| words(l)[1] == "Ready"), "{nodes}");
    let yaml = cluster.ok(&["get", "secret", "azure-config-file", "-n", "clusters", "-o", "yaml"]);
    assert!(
        yaml.contains("kind: Secret\n") && yaml.contains("type: Opaque\n") && !yaml.contains("managedFields"),
        "{yaml}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&cluster.ok(&["get", "namespace", "clusters", "-o", "json"])).unwrap();
    assert_eq!(json["metadata"]["labels"]["kubernetes.io/metadata.name"], "clusters");
    assert_eq!(json["status"]["phase"], "Active");

    // label, annotate, selectors, --show-labels, describe.
    assert_eq!(
        cluster.ok(&["label", "secret", "azure-config-file", "-n", "clusters", "env=test"]),
        "secret/azure-config-file labeled\n"
    );
    assert_eq!(
        cluster.ok(&["label", "secret", "azure-config-file", "-n", "clusters", "env=test"]),
        "secret/azure-config-file not labeled\n"
    );
    assert_eq!(
        cluster.ok(&["annotate", "secret", "azure-config-file", "-n", "clusters", "owner=platform"]),
        "secret/azure-config-file annotated\n"
    );
    let labelled = cluster.ok(&["get", "secrets", "-n", "clusters", "--show-labels"]);
    assert_eq!(words(labelled.lines().next().unwrap()), ["NAME", "TYPE", "DATA", "AGE", "LABELS"]);
    assert!(labelled.lines().nth(1).is_some_and(|l| l.ends_with("env=test")), "{labelled}");
    let selected = cluster.ok(&["get", "secrets", "-n", "clusters", "-l", "env=test", "-o", "name"]);
    assert_eq!(selected, "secret/azure-config-file\n");
    let none = cluster.run(&["get", "secrets", "-n", "clusters", "-l", "env=prod"]);
    assert_eq!((none.code, none.stderr.as_str()), (0, "No resources found in clusters namespace.\n"));
    let described = cluster.ok(&["describe", "secret", "azure-config-file", "-n", "clusters"]);
    for expected in [
        "Name:         azure-config-file",
        "Namespace:    clusters",
        "Labels:       env=test",
        "Type:  Opaque",
        "azure_mgmt.json:",
    ] {
        assert!(described.contains(expected), "{expected:?} in\n{described}");
    }

    // Server-side apply of a CRD and a custom resource: create, no-op, conflict, force.
    let crd = cluster.apply(&env, "crd.yaml", CRD, &[]);
    assert_eq!(
        crd.stdout,
        "customresourcedefinition.apiextensions.k8s.io/nodepools.hypershift.openshift.io serverside-applied\n",
        "{}",
        crd.stderr
    );
    let first = cluster.apply(&env, "np.yaml", &nodepool(2), &[]);
    assert_eq!(first.stdout, "nodepool.hypershift.openshift.io/demo serverside-applied\n", "{}", first.stderr);
    let rv = cluster.ok(&["get", "np", "demo", "-n", "clusters", "-o", "jsonpath={.metadata.resourceVersion}"]);
    let again = cluster.apply(&env, "np.yaml", &nodepool(2), &[]);
    assert_eq!(again.code, 0);
    assert_eq!(
        cluster.ok(&["get", "np", "demo", "-n", "clusters", "-o", "jsonpath={.metadata.resourceVersion}"]),
        rv,
        "a no-op apply writes nothing"
    );
    // Client-side apply of an unchanged object prints "unchanged".
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: clusters}\ndata: {a: \"1\"}\n";
    let cm_file = env.write("cm.yaml", cm);
    assert_eq!(cluster.ok(&["apply", "-f", cm_file.to_str().unwrap()]), "configmap/settings created\n");
    assert_eq!(cluster.ok(&["apply", "-f", cm_file.to_str().unwrap()]), "configmap/settings unchanged\n");

    assert_eq!(
        cluster.ok(&["scale", "nodepool", "demo", "-n", "clusters", "--replicas=3"]),
        "nodepool.hypershift.openshift.io/demo scaled\n"
    );
    assert_eq!(cluster.ok(&["get", "np", "demo", "-n", "clusters", "-o", "jsonpath={.spec.replicas}"]), "3");
    let conflict = cluster.apply(&env, "np5.yaml", &nodepool(5), &[]);
    assert_eq!(conflict.code, 1);
    assert!(
        conflict.stderr.contains("Apply failed with 1 conflict: conflict with \"kubectl\"")
            && conflict.stderr.contains(".spec.replicas"),
        "{}",
        conflict.stderr
    );
    let forced = cluster.apply(&env, "np5.yaml", &nodepool(5), &["--force-conflicts"]);
    assert_eq!(forced.stdout, "nodepool.hypershift.openshift.io/demo serverside-applied\n", "{}", forced.stderr);
    let np = cluster.ok(&["get", "np", "-n", "clusters"]);
    assert_eq!(
        words(np.lines().next().unwrap()),
        ["NAME", "CLUSTER", "DESIRED", "NODES", "CURRENT", "NODES", "MESSAGE"]
    );
    // The pool is paused (`spec.pausedUntil`), so the sandbox's HyperShift operator leaves its
    // status to this test: the status columns are empty.
    assert_eq!(words(np.lines().nth(1).unwrap()), ["demo", "demo", "5"]);

    // patch: merge works, strategic merge on a custom resource is refused like a real server.
    assert_eq!(
        cluster.ok(&[
            "patch",
            "np",
            "demo",
            "-n",
            "clusters",
            "--type=merge",
            "-p",
            r#"{"spec":{"clusterName":"other"}}"#
        ]),
        "nodepool.hypershift.openshift.io/demo patched\n"
    );
    assert_eq!(
        cluster.ok(&[
            "patch",
            "np",
            "demo",
            "-n",
            "clusters",
            "--type=merge",
            "-p",
            r#"{"spec":{"clusterName":"other"}}"#
        ]),
        "nodepool.hypershift.openshift.io/demo patched (no change)\n"
    );
    let smp = cluster.run(&["patch", "np", "demo", "-n", "clusters", "-p", r#"{"spec":{"clusterName":"x"}}"#]);
    assert!(
        smp.stderr.contains(
            "application/strategic-merge-patch+json is not supported by hypershift.openshift.io/v1beta1, Kind=NodePool"
        ),
        "{}",
        smp.stderr
    );
    let explain = cluster.ok(&["explain", "nodepool.spec"]);
    assert!(explain.contains("KIND:       NodePool") && explain.contains("clusterName\t<string>"), "{explain}");

    // wait for a condition that a status patch sets later; get -w sees the change.
    let mut watcher = cluster
        .command(&["get", "np", "-n", "clusters", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let waiter = cluster
        .command(&["wait", "--for=condition=Ready", "np/demo", "-n", "clusters", "--timeout=120s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut watch_lines = BufReader::new(watcher.stdout.take().unwrap()).lines();
    let header = watch_lines.next().unwrap().unwrap();
    assert_eq!(words(&header)[..2], ["EVENT", "NAME"]);
    assert_eq!(words(&watch_lines.next().unwrap().unwrap())[..2], ["ADDED", "demo"]);
    let status = r#"{"status":{"replicas":5,"conditions":[{"type":"Ready","status":"True","reason":"AsExpected","message":"all nodes ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#;
    cluster.ok(&["patch", "np", "demo", "-n", "clusters", "--subresource=status", "--type=merge", "-p", status]);
    let modified = watch_lines.next().unwrap().unwrap();
    assert_eq!(words(&modified)[..2], ["MODIFIED", "demo"], "{modified}");
    assert!(modified.contains("all nodes ready"), "{modified}");
    let _ = watcher.kill();
    let _ = watcher.wait();
    let waited = waiter.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&waited.stdout),
        "nodepool.hypershift.openshift.io/demo condition met\n",
        "{}",
        String::from_utf8_lossy(&waited.stderr)
    );

    // A Deployment rolls out Running, Ready pods.
    let dep = cluster.apply(&env, "deploy.yaml", DEPLOYMENT, &[]);
    assert_eq!(dep.stdout, "deployment.apps/operator serverside-applied\n", "{}", dep.stderr);
    assert_eq!(
        cluster.ok(&["wait", "--for=condition=Available", "deployment/operator", "-n", "hypershift", "--timeout=120s"]),
        "deployment.apps/operator condition met\n"
    );
    let pods = cluster.ok(&["get", "pods", "-n", "hypershift", "-o", "wide"]);
    assert_eq!(&words(pods.lines().next().unwrap())[..7], ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]);
    let rows: Vec<Vec<&str>> = pods.lines().skip(1).map(words).collect();
    assert_eq!(rows.len(), 2, "{pods}");
    assert!(rows.iter().all(|r| r[0].starts_with("operator-") && r[1] == "1/1" && r[2] == "Running"), "{pods}");
    let deploy = cluster.ok(&["get", "deployment", "operator", "-n", "hypershift"]);
    assert_eq!(words(deploy.lines().nth(1).unwrap())[..4], ["operator", "2/2", "2", "2"]);

    // delete waits until the object is gone.
    assert_eq!(
        cluster.ok(&["delete", "secret", "azure-config-file", "-n", "clusters"]),
        "secret \"azure-config-file\" deleted\n"
    );
    let missing = cluster.run(&["delete", "secret/azure-config-file", "--namespace", "clusters"]);
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("Error from server (NotFound): secrets \"azure-config-file\" not found"),
        "{}",
        missing.stderr
    );
    assert_eq!(cluster.ok(&["delete", "namespace", "clusters", "--wait"]), "namespace \"clusters\" deleted\n");
    assert_eq!(cluster.run(&["get", "namespace", "clusters"]).code, 1);

    // Who may do what.
    assert_eq!(cluster.ok(&["auth", "can-i", "*", "*", "--all-namespaces"]), "yes\n");
    let restricted = "sandbox-sandbox-reader";
    let denied = cluster.run(&["--context", restricted, "auth", "can-i", "create", "secrets", "-n", "hypershift"]);
    assert_eq!((denied.code, denied.stdout.as_str()), (1, "no\n"));
    assert_eq!(cluster.ok(&["--context", restricted, "auth", "can-i", "list", "pods", "-n", "hypershift"]), "yes\n");
    let forbidden = cluster.run(&[
        "--context",
        restricted,
        "create",
        "secret",
        "generic",
        "x",
        "-n",
        "hypershift",
        "--from-literal=a=b",
    ]);
    assert!(forbidden.stderr.contains("secrets is forbidden: User \"sandbox-reader\" cannot create resource \"secrets\" in API group \"\" in the namespace \"hypershift\""), "{}", forbidden.stderr);
    let whoami = cluster.ok(&["auth", "whoami"]);
    assert_eq!(words(whoami.lines().next().unwrap()), ["ATTRIBUTE", "VALUE"]);
    assert!(whoami.lines().any(|l| words(l) == ["Username", "kubernetes-admin"]), "{whoami}");
}

/// What a user looking around a cluster types beyond the procedure: typed `create`
/// commands (protobuf bodies), logs, RBAC, label and annotation removal, diff, json patch,
/// watches from a stale resourceVersion, and the API's error wording.
#[test]
fn real_kubectl_looks_around_like_on_a_real_cluster() {
    let env = TestEnv::new();
    let cluster = Cluster::start(&env.path().join("sandbox"));

    // Typed creates send protobuf: Deployment, Service, Pod, RBAC.
    assert_eq!(
        cluster.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=80"]),
        "deployment.apps/web created\n"
    );
    assert_eq!(
        cluster.ok(&["create", "deployment", "idle", "--image=nginx", "--replicas=0"]),
        "deployment.apps/idle created\n"
    );
    assert_eq!(
        cluster.ok(&["get", "deploy", "idle", "-o", "jsonpath={.spec.replicas}"]),
        "0",
        "a zero count survives protobuf"
    );
    assert_eq!(
        cluster.ok(&["expose", "deployment", "web", "--port=8080", "--target-port=80"]),
        "service/web exposed\n"
    );
    assert_eq!(cluster.ok(&["get", "svc", "web", "-o", "jsonpath={.spec.ports[0].targetPort}"]), "80");
    assert_eq!(cluster.ok(&["create", "service", "clusterip", "named", "--tcp=5678:http"]), "service/named created\n");
    assert_eq!(cluster.ok(&["get", "svc", "named", "-o", "jsonpath={.spec.ports[0].targetPort}"]), "http");
    assert_eq!(
        cluster.ok(&["wait", "--for=condition=Available", "deployment/web", "--timeout=120s"]),
        "deployment.apps/web condition met\n"
    );
    assert_eq!(cluster.ok(&["rollout", "status", "deployment/web"]), "deployment \"web\" successfully rolled out\n");

    // A bare pod is scheduled onto the node and has a log; the kubelet's errors otherwise.
    assert_eq!(cluster.ok(&["run", "lone", "--image=busybox"]), "pod/lone created\n");
    cluster.ok(&["wait", "--for=condition=Ready", "pod/lone", "--timeout=120s"]);
    let wide = cluster.ok(&["get", "pod", "lone", "-o", "wide"]);
    assert_eq!(words(wide.lines().nth(1).unwrap())[6], "sandbox-node-1", "{wide}");
    let log = cluster.ok(&["logs", "lone"]);
    assert!(log.ends_with("container lone of pod lone started\n"), "{log}");
    let tail = cluster.ok(&["logs", "lone", "--tail=1", "--timestamps"]);
    assert_eq!(tail.lines().count(), 1, "{tail}");
    assert!(tail.split_whitespace().next().unwrap().parse::<jiff::Timestamp>().is_ok(), "{tail}");
    let previous = cluster.run(&["logs", "lone", "--previous"]);
    assert_eq!(previous.code, 1);
    assert_eq!(
        previous.stderr,
        "Error from server (BadRequest): previous terminated container \"lone\" in pod \"lone\" not found\n"
    );
    assert!(cluster.ok(&["logs", "deployment/web"]).contains("container nginx of pod web-"));

    // RBAC is served, with the bootstrap roles and the binding table.
    let roles = cluster.ok(&["get", "clusterroles"]);
    assert!(roles.lines().any(|l| words(l).first() == Some(&"cluster-admin")), "{roles}");
    assert_eq!(
        cluster.ok(&[
            "create",
            "clusterrolebinding",
            "alice",
            "--clusterrole=view",
            "--user=alice",
            "--serviceaccount=default:robot"
        ]),
        "clusterrolebinding.rbac.authorization.k8s.io/alice created\n"
    );
    let binding = cluster.ok(&["get", "clusterrolebinding", "alice", "-o", "wide"]);
    assert_eq!(words(binding.lines().next().unwrap()), ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]);
    let row = words(binding.lines().nth(1).unwrap());
    assert_eq!((row[0], row[1], row[3], row[4]), ("alice", "ClusterRole/view", "alice", "default/robot"), "{binding}");
    assert_eq!(
        cluster.ok(&["create", "role", "reader", "--verb=get,list", "--resource=secrets"]),
        "role.rbac.authorization.k8s.io/reader created\n"
    );

    // Removing the last label or annotation leaves no empty map behind, as Go's ObjectMeta.
    cluster.ok(&["label", "deploy", "web", "tier=front"]);
    let refused = cluster.run(&["label", "deploy", "web", "tier=back"]);
    assert_eq!(refused.code, 1);
    assert!(
        refused.stderr.contains("'tier' already has a value (front), and --overwrite is false"),
        "{}",
        refused.stderr
    );
    assert_eq!(cluster.ok(&["label", "deploy", "web", "tier=back", "--overwrite"]), "deployment.apps/web labeled\n");
    assert_eq!(cluster.ok(&["label", "deploy", "web", "tier-"]), "deployment.apps/web unlabeled\n");
    assert_eq!(cluster.ok(&["annotate", "service", "web", "note=a"]), "service/web annotated\n");
    assert_eq!(cluster.ok(&["annotate", "service", "web", "note-"]), "service/web annotated\n");
    let meta: serde_json::Value =
        serde_json::from_str(&cluster.ok(&["get", "service", "web", "-o", "jsonpath={.metadata}"])).unwrap();
    assert!(meta.get("annotations").is_none(), "{meta}");
    let meta: serde_json::Value =
        serde_json::from_str(&cluster.ok(&["get", "deploy", "web", "-o", "jsonpath={.metadata}"])).unwrap();
    assert_eq!(meta["labels"], serde_json::json!({"app": "web"}));
    let cm = env.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {k: v}\n",
    );
    cluster.ok(&["create", "-f", cm.to_str().unwrap()]);
    let changed = env.write(
        "cm2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {k: w}\n",
    );
    let diff = cluster.run(&["diff", "-f", changed.to_str().unwrap()]);
    assert_eq!(diff.code, 1, "diff exits 1 when there are differences: {}", diff.stderr);
    let changes: Vec<&str> = diff
        .stdout
        .lines()
        .filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---"))
        .collect();
    assert_eq!(
        changes.iter().filter(|l| !l.contains("generation") && !l.contains("resourceVersion")).count(),
        2,
        "{}",
        diff.stdout
    );
    assert!(changes.contains(&"-  k: v") && changes.contains(&"+  k: w"), "{}", diff.stdout);

    // Patches of all three kinds, and server-side dry runs that change nothing.
    assert_eq!(
        cluster.ok(&[
            "patch",
            "deploy",
            "web",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/replicas","value":3}]"#
        ]),
        "deployment.apps/web patched\n"
    );
    assert_eq!(
        cluster.ok(&["patch", "deploy", "web", "-p", r#"{"spec":{"replicas":1}}"#]),
        "deployment.apps/web patched\n"
    );
    assert_eq!(cluster.ok(&["scale", "deploy", "web", "--replicas=2"]), "deployment.apps/web scaled\n");
    assert_eq!(
        cluster.ok(&["create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server"]),
        "configmap/dry created (server dry run)\n"
    );
    assert_eq!(cluster.run(&["get", "configmap", "dry"]).code, 1);

    // Errors in the API server's words.
    let invalid = cluster.run(&["create", "configmap", "Bad_Name"]);
    assert!(invalid.stderr.contains("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"), "{}", invalid.stderr);
    let stale = env.write(
        "stale.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default, resourceVersion: \"1\"}\ndata: {k: z}\n",
    );
    let conflict = cluster.run(&["replace", "-f", stale.to_str().unwrap()]);
    assert_eq!(conflict.code, 1);
    assert!(conflict.stderr.contains("Error from server (Conflict): error when replacing") && conflict.stderr.contains("Operation cannot be fulfilled on configmaps \"settings\": the object has been modified; please apply your changes to the latest version and try again"), "{}", conflict.stderr);

    // A watch from a resourceVersion older than the history ends with 410 Expired in-stream.
    let expired = cluster.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds=5",
    ]);
    let event: serde_json::Value = serde_json::from_str(expired.lines().next().unwrap()).unwrap();
    assert_eq!(
        (event["type"].as_str(), event["object"]["code"].as_i64(), event["object"]["reason"].as_str()),
        (Some("ERROR"), Some(410), Some("Expired")),
        "{expired}"
    );

    // delete with a cascade that leaves the ReplicaSet behind, then by label.
    assert_eq!(cluster.ok(&["delete", "deploy", "web", "--cascade=orphan"]), "deployment.apps \"web\" deleted\n");
    let orphans = cluster.ok(&["get", "rs", "-l", "app=web", "-o", "name"]);
    assert_eq!(orphans.lines().count(), 1, "{orphans}");
    assert!(cluster.ok(&["delete", "rs", "-l", "app=web"]).starts_with("replicaset.apps \"web-"));
}
