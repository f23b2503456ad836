//! `hypershift create iam azure` and `destroy iam azure`, as `cmd/infra/azure/create_iam.go`,
//! `destroy_iam.go` and `identities.go` do them: the workload identities
//! `<name><suffix>-<infraID>` in `--resource-group-name` (made when missing), each followed at
//! once by its federated credentials `<name>-<component>-fed-id…`, then the output file that
//! `--workload-identities-file` reads; destroy deletes the credentials, then the identities, by
//! the same names, whatever the file says.
//!
//! As the real CLI, a credential is written right after its identity and only the Azure SDK's
//! own retries apply (HTTP 408, 429 and 5xx): a `ParentResourceNotFound` while the new identity
//! is not yet visible to the credentials' write path ends the command with exit 1, and the
//! runbook's step retry absorbs it (running the command again finds the identities in place).
//! Destroy first removes the role assignments named after the infra id, as `destroy cluster`
//! does, so none is left behind naming a deleted identity.

use serde_json::{Map, Value, json};

use super::azure::Azure;
use super::flags::Parsed;
use super::refuse_unmodelled;

const IDENTITY_API: &str = "2023-01-31";
const RG_API: &str = "2021-04-01";

/// One workload identity: its key in the output file, its name suffix, its credentials'
/// name suffixes and service accounts (`GetWorkloadIdentityDefinitions`; the control-plane
/// operator's is made whatever the topology, as `create iam` passes none).
struct Definition {
    key: &'static str,
    suffix: &'static str,
    credentials: &'static [(&'static str, &'static str)],
}

const CSI: &str = "system:serviceaccount:openshift-cluster-csi-drivers";
const DEFINITIONS: &[Definition] = &[
    Definition {
        key: "disk",
        suffix: "-disk",
        credentials: &[
            ("-disk-fed-id-node", "azure-disk-csi-driver-node-sa"),
            ("-disk-fed-id-operator", "azure-disk-csi-driver-operator"),
            ("-disk-fed-id-controller", "azure-disk-csi-driver-controller-sa"),
        ],
    },
    Definition {
        key: "file",
        suffix: "-file",
        credentials: &[
            ("-file-fed-id-node", "azure-file-csi-driver-node-sa"),
            ("-file-fed-id-operator", "azure-file-csi-driver-operator"),
            ("-file-fed-id-controller", "azure-file-csi-driver-controller-sa"),
        ],
    },
    Definition {
        key: "imageRegistry",
        suffix: "-image-registry",
        credentials: &[
            ("-image-registry-fed-id-registry", "system:serviceaccount:openshift-image-registry:registry"),
            (
                "-image-registry-fed-id-operator",
                "system:serviceaccount:openshift-image-registry:cluster-image-registry-operator",
            ),
        ],
    },
    Definition {
        key: "ingress",
        suffix: "-ingress",
        credentials: &[("-ingress-fed-id", "system:serviceaccount:openshift-ingress-operator:ingress-operator")],
    },
    Definition {
        key: "cloudProvider",
        suffix: "-cloud-provider",
        credentials: &[("-cloud-provider-fed-id", "system:serviceaccount:kube-system:azure-cloud-provider")],
    },
    Definition {
        key: "nodePoolManagement",
        suffix: "-node-pool-mgmt",
        credentials: &[("-node-pool-mgmt-fed-id", "system:serviceaccount:kube-system:capi-provider")],
    },
    Definition {
        key: "network",
        suffix: "-network",
        credentials: &[(
            "-network-fed-id",
            "system:serviceaccount:openshift-cloud-network-config-controller:cloud-network-config-controller",
        )],
    },
    Definition {
        key: "controlPlaneOperator",
        suffix: "-control-plane-operator",
        credentials: &[("-cpo-fed-id", "system:serviceaccount:kube-system:control-plane-operator")],
    },
];

/// The CSI drivers' service accounts are written relative to their namespace above.
fn subject(account: &str) -> String {
    if account.starts_with("system:") { account.to_string() } else { format!("{CSI}:{account}") }
}

const CREATE_MODELLED: &[&str] =
    &["name", "infra-id", "azure-creds", "location", "resource-group-name", "oidc-issuer-url", "output-file"];
const DESTROY_MODELLED: &[&str] =
    &["workload-identities-file", "azure-creds", "resource-group-name", "name", "infra-id", "dns-zone-rg-name"];

pub async fn create(flags: &Parsed) -> Result<(), String> {
    refuse_unmodelled(flags, CREATE_MODELLED, "create iam azure")?;
    let name = flags.str_or("name", "");
    let infra_id = flags.str_or("infra-id", "");
    let group = flags.str_or("resource-group-name", "");
    let issuer = flags.str_or("oidc-issuer-url", "");
    let location = flags.str_or("location", "eastus");
    let output = flags.str_or("output-file", "");
    for (value, what) in [(name, "name"), (infra_id, "infra-id"), (group, "resource-group-name")] {
        if value.is_empty() {
            return Err(format!("{what} is required"));
        }
    }
    for (value, what) in [(issuer, "oidc-issuer-url"), (output, "output-file")] {
        if value.is_empty() {
            return Err(format!("{what} is required"));
        }
    }
    let azure = Azure::sign_in(flags.str_or("azure-creds", ""))?;
    let group_id = format!("{}/resourceGroups/{group}", azure.subscription());
    azure
        .ensure(&group_id, RG_API, json!({ "location": location }))
        .await
        .map_err(|e| format!("failed to create resource group {group:?}: {e}"))?;

    let mut file = Map::new();
    for definition in DEFINITIONS {
        let identity = format!("{name}{}-{infra_id}", definition.suffix);
        let id = format!("{group_id}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{identity}");
        let made = azure
            .put_as_sdk(&id, IDENTITY_API, json!({ "location": location }))
            .await
            .map_err(|e| format!("failed to create workload identities: failed to create {} managed identity: failed to create managed identity: {e}", definition.key))?;
        let client_id = made.pointer("/properties/clientId").and_then(Value::as_str).unwrap_or_default();
        if client_id.is_empty() {
            return Err(
                "failed to create workload identities: managed identity response missing required fields".into()
            );
        }
        file.insert(definition.key.into(), json!({ "clientID": client_id }));
        for (credential, account) in definition.credentials {
            let credential = format!("{name}{credential}");
            let body = json!({ "properties": {
                "issuer": issuer, "subject": subject(account), "audiences": ["openshift"],
            } });
            azure
                .put_as_sdk(&format!("{id}/federatedIdentityCredentials/{credential}"), IDENTITY_API, body)
                .await
                .map_err(|e| {
                    format!("failed to create workload identities: failed to create federated credential '{credential}': {e}")
                })?;
        }
    }
    // `json.MarshalIndent(…, "", "  ")`, no trailing newline, written with the umask's mode.
    let text = serde_json::to_string_pretty(&Value::Object(file)).expect("a map serializes");
    std::fs::write(output, text).map_err(|e| format!("cannot create output file: {e}"))?;
    eprintln!("Workload identities created and saved outputFile={output}");
    Ok(())
}

pub async fn destroy(flags: &Parsed) -> Result<(), String> {
    refuse_unmodelled(flags, DESTROY_MODELLED, "destroy iam azure")?;
    let file = flags.str_or("workload-identities-file", "");
    let text = std::fs::read_to_string(file).map_err(|e| {
        format!(
            "failed to read workload identities file: cannot read workload identities file: {}",
            super::go_io_error(file, &e)
        )
    })?;
    serde_json::from_str::<Map<String, Value>>(&text)
        .map_err(|e| format!("failed to read workload identities file: cannot parse workload identities file: {e}"))?;
    let name = flags.str_or("name", "");
    let infra_id = flags.str_or("infra-id", "");
    let group = flags.str_or("resource-group-name", "");
    let azure = Azure::sign_in(flags.str_or("azure-creds", ""))?;
    // Role assignments first, so none is left naming a deleted identity: the deterministic names
    // of `infra-id` at the group, `<name>-nsg`, `<name>-vnet` and the DNS zone's group.
    super::destroy_cluster::cleanup_role_assignments(
        &azure,
        name,
        infra_id,
        group,
        flags.str_or("dns-zone-rg-name", ""),
    )
    .await;
    let group_id = format!("{}/resourceGroups/{group}", azure.subscription());
    let mut failed = 0;
    for definition in DEFINITIONS {
        let id = format!(
            "{group_id}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}{}-{infra_id}",
            definition.suffix
        );
        for (credential, _) in definition.credentials {
            if let Err(e) =
                azure.delete(&format!("{id}/federatedIdentityCredentials/{name}{credential}"), IDENTITY_API).await
            {
                eprintln!("Failed to delete federated credential, continuing: {e}");
                failed += 1;
            }
        }
        if let Err(e) = azure.delete(&id, IDENTITY_API).await {
            eprintln!("Failed to delete managed identity, continuing with remaining identities: {e}");
            failed += 1;
        }
    }
    if failed > 0 {
        return Err(format!(
            "failed to destroy workload identities: failed to delete {failed} resources during identity cleanup"
        ));
    }
    eprintln!("Successfully destroyed IAM resources");
    Ok(())
}
