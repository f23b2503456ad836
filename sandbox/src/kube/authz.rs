//! Who may do what: bearer tokens map to identities, identities carry RBAC-like rules.
//! Requests, SelfSubjectAccessReview and SelfSubjectRulesReview all answer from the
//! same rules.

use serde_json::{Value, json};

/// One RBAC-style rule. Empty `namespaces` means every namespace and the cluster scope.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub namespaces: Vec<String>,
    /// Non-resource URL patterns (`/healthz`, `/api/*`, `*`).
    pub non_resource_urls: Vec<String>,
}

fn list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

impl PolicyRule {
    /// Every verb on every resource everywhere, and every non-resource URL.
    pub fn cluster_admin() -> PolicyRule {
        PolicyRule {
            verbs: list(&["*"]),
            api_groups: list(&["*"]),
            resources: list(&["*"]),
            namespaces: Vec::new(),
            non_resource_urls: list(&["*"]),
        }
    }

    /// `verbs` on `resources` (plural names, `*` for all) of any group in one namespace.
    pub fn in_namespace(namespace: &str, verbs: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: list(verbs),
            api_groups: list(&["*"]),
            resources: list(resources),
            namespaces: vec![namespace.to_string()],
            non_resource_urls: Vec::new(),
        }
    }

    fn matches(&self, attrs: &Attributes) -> bool {
        let any = |set: &[String], value: &str| set.iter().any(|s| s == "*" || s == value);
        if let Some(path) = &attrs.path {
            return any(&self.verbs, &attrs.verb)
                && self.non_resource_urls.iter().any(|u| {
                    u == "*" || u == path || u.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
                });
        }
        let resource = match &attrs.subresource {
            Some(sub) if !sub.is_empty() => format!("{}/{sub}", attrs.resource),
            _ => attrs.resource.clone(),
        };
        let namespace_ok = self.namespaces.is_empty()
            || attrs.namespace.as_deref().is_some_and(|ns| !ns.is_empty() && self.namespaces.iter().any(|n| n == ns));
        any(&self.verbs, &attrs.verb)
            && any(&self.api_groups, &attrs.group)
            && (any(&self.resources, &resource) || any(&self.resources, &attrs.resource) && attrs.subresource.is_none())
            && namespace_ok
    }
}

/// A user the API server knows by bearer token.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeIdentity {
    pub token: String,
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub rules: Vec<PolicyRule>,
}

impl KubeIdentity {
    /// The cluster administrator (`system:masters`).
    pub fn admin(token: &str) -> KubeIdentity {
        KubeIdentity {
            token: token.to_string(),
            username: crate::KUBE_ADMIN_USER.into(),
            uid: uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, crate::KUBE_ADMIN_USER.as_bytes()).to_string(),
            groups: list(&["kubeadm:cluster-admins", "system:authenticated"]),
            rules: vec![PolicyRule::cluster_admin()],
        }
    }

    /// A user who may only read (get, list, watch) in one namespace.
    pub fn reader(token: &str, username: &str, namespace: &str) -> KubeIdentity {
        KubeIdentity {
            token: token.to_string(),
            username: username.to_string(),
            uid: uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, username.as_bytes()).to_string(),
            groups: list(&["system:authenticated"]),
            rules: vec![PolicyRule::in_namespace(namespace, &["get", "list", "watch"], &["*"])],
        }
    }

    pub fn allows(&self, attrs: &Attributes) -> bool {
        // What system:basic-user and system:discovery grant every authenticated user.
        let always = attrs.group == "authorization.k8s.io" && attrs.resource.starts_with("selfsubject")
            || attrs.group == "authentication.k8s.io" && attrs.resource == "selfsubjectreviews"
            || attrs.path.as_deref().is_some_and(is_discovery_path) && attrs.verb == "get";
        always || self.rules.iter().any(|r| r.matches(attrs))
    }

    /// `status.userInfo` of a SelfSubjectReview.
    pub fn user_info(&self) -> Value {
        json!({"username": self.username, "uid": self.uid, "groups": self.groups})
    }
}

fn is_discovery_path(path: &str) -> bool {
    ["/api", "/apis", "/version", "/healthz", "/readyz", "/livez", "/openapi"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

/// What is asked: a verb on a resource, or on a non-resource path.
#[derive(Debug, Clone, Default)]
pub struct Attributes {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub path: Option<String>,
}

impl Attributes {
    /// From a SelfSubjectAccessReview `spec`.
    pub fn from_review_spec(spec: &Value) -> Attributes {
        let s = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_string);
        if let Some(nr) = spec.get("nonResourceAttributes").filter(|v| v.is_object()) {
            return Attributes {
                verb: s(&nr["verb"]).unwrap_or_default(),
                path: Some(s(&nr["path"]).unwrap_or_default()),
                ..Attributes::default()
            };
        }
        let ra = &spec["resourceAttributes"];
        Attributes {
            verb: s(&ra["verb"]).unwrap_or_default(),
            group: s(&ra["group"]).unwrap_or_default(),
            resource: s(&ra["resource"]).unwrap_or_default(),
            subresource: s(&ra["subresource"]),
            namespace: s(&ra["namespace"]),
            name: s(&ra["name"]).unwrap_or_default(),
            path: None,
        }
    }
}

/// `status` of a SelfSubjectRulesReview for `namespace`.
pub fn rules_review_status(identity: &KubeIdentity, namespace: &str) -> Value {
    let mut resource_rules = vec![
        json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]}),
        json!({"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}),
    ];
    let mut non_resource_rules = vec![
        json!({"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"]}),
    ];
    for rule in &identity.rules {
        if rule.namespaces.is_empty() || rule.namespaces.iter().any(|n| n == namespace) {
            if !rule.resources.is_empty() {
                resource_rules
                    .push(json!({"verbs": rule.verbs, "apiGroups": rule.api_groups, "resources": rule.resources}));
            }
            if !rule.non_resource_urls.is_empty() {
                non_resource_rules.push(json!({"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls}));
            }
        }
    }
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false})
}
