//! The part of the real `hypershift` command tree the stand-in answers for, with every flag
//! those commands accept (hypershift at 3ee9615567: `cmd/install/install.go`,
//! `cmd/cluster/cluster.go` + `core/create.go` + `azure/create.go`, `cmd/nodepool/create.go` +
//! `azure/create.go`, `cmd/kubeconfig/create.go`, `cmd/cluster/azure/destroy.go`). Flags the
//! stand-in does not act on are still accepted by the parser, so an invocation fails for the
//! same reasons as with the real CLI; each command then refuses the ones it does not model.

use super::flags::{Flag, array, b, d, i, map, s, slice};

/// The commands the stand-in runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Command {
    Install,
    CreateClusterAzure,
    CreateNodePoolAzure,
    CreateKubeconfig,
    DestroyClusterAzure,
    CreateIamAzure,
    DestroyIamAzure,
    CreateInfraAzure,
}

pub struct Node {
    pub name: &'static str,
    /// Flags of this command only.
    pub local: &'static [Flag],
    /// Flags of this command inherited by its subcommands.
    pub persistent: &'static [Flag],
    pub children: &'static [Node],
    pub command: Option<Command>,
    /// Subcommands of the real CLI the stand-in does not model.
    pub unmodelled: &'static [&'static str],
}

const INSTALL_PERSISTENT: &[Flag] = &[
    s("namespace"),
    s("hypershift-image"),
    s("image-pull-policy"),
    b("development"),
    b("enable-defaulting-webhook"),
    b("enable-validating-webhook"),
    b("enable-conversion-webhook"),
    b("disable-capi-conversion-webhook"),
    b("disable-capi-migration"),
    b("exclude-etcd"),
    s("platform-monitoring"),
    b("enable-ci-debug-output"),
    s("private-platform"),
    s("aws-private-creds"),
    s("aws-private-secret"),
    s("aws-private-secret-key"),
    s("aws-private-region"),
    s("aws-private-role-arn"),
    s("azure-private-creds"),
    s("azure-private-secret"),
    s("azure-private-secret-key"),
    s("azure-pls-managed-identity-client-id"),
    s("azure-pls-subscription-id"),
    s("azure-pls-resource-group"),
    s("gcp-project"),
    s("gcp-region"),
    s("oidc-storage-provider-s3-region"),
    s("oidc-storage-provider-s3-bucket-name"),
    s("oidc-storage-provider-s3-credentials"),
    s("oidc-storage-provider-s3-secret"),
    s("oidc-storage-provider-s3-secret-key"),
    s("oidc-storage-provider-s3-role-arn"),
    s("external-dns-provider"),
    s("external-dns-credentials"),
    s("external-dns-secret"),
    s("external-dns-role-arn"),
    s("external-dns-domain-filter"),
    s("external-dns-txt-owner-id"),
    s("external-dns-image"),
    s("external-dns-google-project"),
    s("external-dns-interval"),
    s("external-dns-aws-zones-cache-duration"),
    b("enable-admin-rbac-generation"),
    s("image-refs"),
    s("additional-trust-bundle"),
    s("metrics-set"),
    b("enable-uwm-telemetry-remote-write"),
    b("enable-cvo-management-cluster-metrics-access"),
    b("rhobs-monitoring"),
    s("cvo-prometheus-url"),
    b("slos-alerts"),
    b("monitoring-dashboards"),
    d("cert-rotation-scale"),
    b("enable-dedicated-request-serving-isolation"),
    s("pull-secret"),
    s("managed-service"),
    b("enable-size-tagging"),
    b("enable-etcd-recovery"),
    b("enable-cpo-overrides"),
    b("enable-standalone-karpenter-operator"),
    s("aro-hcp-key-vault-users-client-id"),
    b("tech-preview-no-upgrade"),
    s("registry-overrides"),
    slice("limit-crd-install"),
    map("additional-operator-env-vars"),
    b("enable-audit-log-persistence"),
    s("scale-from-zero-provider"),
    s("scale-from-zero-creds"),
    s("scale-from-zero-secret"),
    s("scale-from-zero-secret-key"),
    array("hcp-egress-block-cidrs"),
    s("aws-role-credential-source"),
    s("aws-operator-roles-file"),
];

const INSTALL_LOCAL: &[Flag] = &[b("wait-until-available"), b("wait-until-crds-established"), s("install-scope")];

/// `create cluster`'s persistent flags (core options plus the developer ones).
const CLUSTER_PERSISTENT: &[Flag] = &[
    s("kubeconfig"),
    s("namespace"),
    s("name"),
    s("base-domain"),
    s("base-domain-prefix"),
    s("external-dns-domain"),
    s("network-type"),
    s("release-image"),
    s("pull-secret"),
    s("control-plane-availability-policy"),
    b("render"),
    s("render-into"),
    b("render-sensitive"),
    s("ssh-key"),
    s("additional-trust-bundle"),
    s("image-content-sources"),
    i("node-pool-replicas"),
    d("node-drain-timeout"),
    d("node-volume-detach-timeout"),
    array("annotations"),
    array("labels"),
    b("fips"),
    b("auto-repair"),
    s("infra-availability-policy"),
    b("generate-ssh"),
    s("etcd-storage-class"),
    s("etcd-storage-size"),
    s("infra-id"),
    array("service-cidr"),
    array("cluster-cidr"),
    array("machine-cidr"),
    b("default-dual"),
    map("node-selector"),
    map("pods-labels"),
    array("toleration"),
    b("wait"),
    d("timeout"),
    s("node-upgrade-type"),
    s("olm-catalog-placement"),
    b("olm-disable-default-sources"),
    s("arch"),
    s("pausedUntil"),
    s("release-stream"),
    s("feature-set"),
    slice("disable-cluster-capabilities"),
    slice("enable-cluster-capabilities"),
    s("kas-dns-name"),
    b("disable-multi-network"),
    i("ovn-kubernetes-mtu"),
    b("version-check"),
    b("allocate-node-cidrs"),
    s("control-plane-operator-image"),
    s("infra-json"),
];

/// The Azure NodePool flags, bound on both `create cluster azure` and `create nodepool azure`.
const AZURE_NODEPOOL: &[Flag] = &[
    s("instance-type"),
    i("root-disk-size"),
    s("availability-zone"),
    s("diagnostics-storage-account-type"),
    s("diagnostics-storage-account-uri"),
    s("disk-encryption-set-id"),
    b("enable-ephemeral-disk"),
    s("disk-storage-account-type"),
    s("nodepool-subnet-id"),
    s("image-generation"),
    s("marketplace-publisher"),
    s("marketplace-offer"),
    s("marketplace-sku"),
    s("marketplace-version"),
    s("encryption-at-host"),
];

/// `create cluster azure`'s own flags (it binds the Azure NodePool flags too).
const CLUSTER_AZURE: &[Flag] = &[
    s("kms-credentials-secret-name"),
    s("managed-identities-file"),
    s("data-plane-identities-file"),
    b("assign-custom-hcp-roles"),
    s("workload-identities-file"),
    s("oauth-publishing-strategy"),
    b("assign-service-principal-roles"),
    s("azure-creds"),
    s("location"),
    s("encryption-key-id"),
    slice("availability-zones"),
    s("resource-group-name"),
    s("vnet-id"),
    s("network-security-group-id"),
    map("resource-group-tags").short('t'),
    s("subnet-id"),
    s("oidc-issuer-url"),
    s("sa-token-issuer-private-key-path"),
    s("dns-zone-rg-name"),
    s("endpoint-access"),
    s("endpoint-access-private-nat-subnet-id"),
    slice("endpoint-access-private-additional-allowed-subscriptions"),
];

const NODEPOOL_PERSISTENT: &[Flag] = &[
    s("name"),
    s("namespace"),
    i("replicas"),
    s("cluster-name"),
    s("release-image"),
    s("node-upgrade-type"),
    s("arch"),
    b("render"),
    b("auto-repair"),
    i("node-count"),
];

const KUBECONFIG: &[Flag] = &[s("namespace"), s("name"), b("port-forward")];

const DESTROY_CLUSTER_PERSISTENT: &[Flag] = &[
    s("kubeconfig"),
    s("namespace"),
    s("name").required(),
    d("cluster-grace-period"),
    s("infra-id"),
    b("destroy-cloud-resources"),
    b("force"),
];

const DESTROY_CLUSTER_AZURE: &[Flag] = &[
    s("azure-creds").required(),
    s("location"),
    s("resource-group-name"),
    b("preserve-resource-group"),
    s("dns-zone-rg-name").required(),
];

const fn leaf(name: &'static str, local: &'static [Flag], command: Command) -> Node {
    Node { name, local, persistent: &[], children: &[], command: Some(command), unmodelled: &[] }
}

/// A command that only groups others and has no flags of its own (`create iam`).
const fn group(name: &'static str, unmodelled: &'static [&'static str], children: &'static [Node]) -> Node {
    Node { name, local: &[], persistent: &[], children, command: None, unmodelled }
}

/// `cmd/infra/azure/create_iam.go`.
const CREATE_IAM_AZURE: &[Flag] = &[
    s("name").required(),
    s("infra-id").required(),
    s("azure-creds").required(),
    s("location"),
    s("resource-group-name").required(),
    s("oidc-issuer-url").required(),
    s("output-file").required(),
    s("cloud"),
    b("enable-kms"),
];

/// `cmd/infra/azure/create.go`.
const CREATE_INFRA_AZURE: &[Flag] = &[
    s("infra-id").required(),
    s("azure-creds").required(),
    s("location"),
    s("cloud"),
    s("base-domain"),
    s("name").required(),
    s("resource-group-name"),
    s("output-file"),
    s("network-security-group-id"),
    s("subnet-id"),
    s("vnet-id"),
    map("resource-group-tags").short('t'),
    s("managed-identities-file"),
    s("data-plane-identities-file"),
    s("workload-identities-file"),
    b("assign-identity-roles"),
    s("dns-zone-rg-name"),
    b("assign-custom-hcp-roles"),
    slice("disable-cluster-capabilities"),
];

/// `cmd/infra/azure/destroy_iam.go`.
const DESTROY_IAM_AZURE: &[Flag] = &[
    s("workload-identities-file").required(),
    s("azure-creds").required(),
    s("resource-group-name").required(),
    s("cloud"),
    s("name").required(),
    s("infra-id").required(),
    s("dns-zone-rg-name").required(),
];

pub static ROOT: Node = Node {
    name: "hypershift",
    local: &[],
    persistent: &[],
    command: None,
    unmodelled: &["dump", "fix", "console-logs", "version", "completion", "help"],
    children: &[
        Node {
            name: "install",
            local: INSTALL_LOCAL,
            persistent: INSTALL_PERSISTENT,
            children: &[],
            command: Some(Command::Install),
            unmodelled: &["render", "helm"],
        },
        Node {
            name: "create",
            local: &[],
            persistent: &[],
            command: None,
            unmodelled: &["backup", "restore", "schedule", "operator-roles", "bastion"],
            children: &[
                group(
                    "infra",
                    &["aws", "gcp", "kubevirt", "powervs", "openstack"],
                    &[leaf("azure", CREATE_INFRA_AZURE, Command::CreateInfraAzure)],
                ),
                group("iam", &["aws", "gcp"], &[leaf("azure", CREATE_IAM_AZURE, Command::CreateIamAzure)]),
                Node {
                    name: "cluster",
                    local: &[],
                    persistent: CLUSTER_PERSISTENT,
                    command: None,
                    unmodelled: &["aws", "none", "agent", "kubevirt", "powervs", "openstack", "gcp"],
                    children: &[Node {
                        name: "azure",
                        local: CLUSTER_AZURE,
                        persistent: AZURE_NODEPOOL,
                        children: &[],
                        command: Some(Command::CreateClusterAzure),
                        unmodelled: &[],
                    }],
                },
                Node {
                    name: "nodepool",
                    local: &[],
                    persistent: NODEPOOL_PERSISTENT,
                    command: None,
                    unmodelled: &["kubevirt", "aws", "agent", "powervs", "openstack"],
                    children: &[leaf("azure", AZURE_NODEPOOL, Command::CreateNodePoolAzure)],
                },
                leaf("kubeconfig", KUBECONFIG, Command::CreateKubeconfig),
            ],
        },
        Node {
            name: "destroy",
            local: &[],
            persistent: &[],
            command: None,
            unmodelled: &["infra", "bastion", "operator-roles"],
            children: &[
                Node {
                    name: "cluster",
                    local: &[],
                    persistent: DESTROY_CLUSTER_PERSISTENT,
                    command: None,
                    unmodelled: &["aws", "none", "agent", "kubevirt", "powervs", "openstack", "gcp"],
                    children: &[leaf("azure", DESTROY_CLUSTER_AZURE, Command::DestroyClusterAzure)],
                },
                group("iam", &["aws", "gcp"], &[leaf("azure", DESTROY_IAM_AZURE, Command::DestroyIamAzure)]),
            ],
        },
    ],
};

/// Where an argument list leads: the command path, the flags in force there and the
/// arguments left for the flag parser.
pub struct Resolved {
    pub path: Vec<&'static str>,
    pub node: &'static Node,
    pub flags: Vec<Flag>,
    pub args: Vec<String>,
    /// A subcommand of the real CLI the stand-in does not model, if one was named.
    pub unmodelled: Option<String>,
}

/// Walks the tree as cobra's traversal does: a non-flag argument names a subcommand while
/// one matches; the value of a flag that takes one is skipped over.
pub fn resolve(args: &[String]) -> Resolved {
    let mut node = &ROOT;
    let mut path = vec![ROOT.name];
    let mut inherited: Vec<Flag> = Vec::new();
    let mut rest = Vec::new();
    let mut unmodelled = None;
    let mut descending = true;
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        index += 1;
        if arg == "--" {
            rest.extend(args[index - 1..].iter().cloned());
            break;
        }
        if descending && !arg.starts_with('-') {
            if let Some(child) = node.children.iter().find(|c| c.name == arg) {
                inherited.extend_from_slice(node.persistent);
                node = child;
                path.push(child.name);
                continue;
            }
            if node.unmodelled.contains(&arg.as_str()) {
                unmodelled = Some(arg.clone());
            }
            descending = false;
        }
        if arg.starts_with('-') {
            let here: Vec<Flag> = inherited.iter().chain(node.persistent).chain(node.local).copied().collect();
            if super::flags::takes_separate_value(&here, arg) && index < args.len() {
                rest.push(arg.clone());
                rest.push(args[index].clone());
                index += 1;
                continue;
            }
        }
        rest.push(arg.clone());
    }
    let flags = inherited.iter().chain(node.persistent).chain(node.local).copied().collect();
    Resolved { path, node, flags, args: rest, unmodelled }
}

/// `hypershift … --help`: the command's flags, as cobra lists them (names and types).
pub fn usage(resolved: &Resolved) -> String {
    let mut text = format!("Usage:\n  {}", resolved.path.join(" "));
    if resolved.node.children.is_empty() {
        text.push_str(" [flags]\n");
    } else {
        text.push_str(" [command]\n\nAvailable Commands:\n");
        for child in resolved.node.children {
            text.push_str(&format!("  {}\n", child.name));
        }
    }
    if !resolved.flags.is_empty() {
        text.push_str("\nFlags:\n");
        let mut flags = resolved.flags.clone();
        flags.sort_by_key(|f| f.name);
        for flag in flags {
            let short = flag.shorthand.map(|c| format!("-{c}, ")).unwrap_or_else(|| "    ".into());
            text.push_str(&format!("  {short}--{}\n", flag.name));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_of_a_parent_may_come_before_the_subcommand() {
        let r = resolve(&args(&["create", "cluster", "--name", "azure", "azure", "--pull-secret", "p"]));
        assert_eq!(r.path, ["hypershift", "create", "cluster", "azure"]);
        assert_eq!(r.node.command, Some(Command::CreateClusterAzure));
        assert_eq!(r.args, ["--name", "azure", "--pull-secret", "p"]);
        assert!(r.flags.iter().any(|f| f.name == "marketplace-sku"));
        assert!(r.flags.iter().any(|f| f.name == "release-image"));
    }

    #[test]
    fn unmodelled_subcommands_are_named() {
        let r = resolve(&args(&["create", "infra", "aws"]));
        assert_eq!(r.unmodelled.as_deref(), Some("aws"));
        assert_eq!(r.node.command, None);
        let r = resolve(&args(&["create", "iam", "aws"]));
        assert_eq!(r.unmodelled.as_deref(), Some("aws"));
    }

    #[test]
    fn iam_azure_is_modelled_both_ways() {
        let r = resolve(&args(&["create", "iam", "azure", "--infra-id", "x"]));
        assert_eq!(r.node.command, Some(Command::CreateIamAzure));
        assert!(r.flags.iter().any(|f| f.name == "oidc-issuer-url"));
        let r = resolve(&args(&["destroy", "iam", "azure"]));
        assert_eq!(r.node.command, Some(Command::DestroyIamAzure));
        assert!(r.flags.iter().any(|f| f.name == "workload-identities-file"));
    }

    #[test]
    fn nodepool_azure_inherits_the_nodepool_flags() {
        let r = resolve(&args(&["create", "nodepool", "azure", "--replicas", "3"]));
        assert_eq!(r.node.command, Some(Command::CreateNodePoolAzure));
        assert!(r.flags.iter().any(|f| f.name == "replicas"));
        assert!(r.flags.iter().any(|f| f.name == "image-generation"));
    }
}
