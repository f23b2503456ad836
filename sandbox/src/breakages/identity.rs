//! Breakages of the workload identities' trust: what makes every component's federated token
//! exchange fail at cluster creation, as the Troubleshooting section's first entry and users'
//! reports (AADSTS700211, 700213, an issuer Entra cannot read) describe.

use crate::Shared;
use crate::state::Kind;

/// The service account whose credential gets the wrong case: the disk CSI driver's node plugin,
/// the first component that signs in.
const SERVICE_ACCOUNT: &str = "azure-disk-csi-driver-node-sa";

/// A typo in case: `Azure-disk-csi-driver-node-sa` for `azure-disk-csi-driver-node-sa`.
pub(super) fn subject_case(shared: &Shared) -> Result<String, String> {
    let mut state = shared.state();
    let suffix = format!(":{SERVICE_ACCOUNT}");
    let credential = state
        .resources
        .values_mut()
        .find(|r| {
            r.kind == Kind::FederatedCredential
                && r.body["properties"]["subject"].as_str().is_some_and(|s| s.ends_with(&suffix))
        })
        .ok_or_else(|| format!("no federated credential trusts the service account {SERVICE_ACCOUNT} yet"))?;
    let subject = credential.body["properties"]["subject"].as_str().unwrap_or_default().to_string();
    let (namespace_part, name) = subject.rsplit_once(':').unwrap_or_default();
    let mut wrong = name.to_string();
    wrong[..1].make_ascii_uppercase();
    let wrong = format!("{namespace_part}:{wrong}");
    credential.body["properties"]["subject"] = wrong.clone().into();
    credential.etag = uuid::Uuid::new_v4().to_string();
    Ok(format!("federated credential {}: subject `{subject}` → `{wrong}`", credential.name()))
}

/// The issuer written with a trailing slash on every credential, as when the variable that held
/// it did.
pub(super) fn issuer_trailing_slash(shared: &Shared) -> Result<String, String> {
    let mut state = shared.state();
    let mut changed = 0;
    let mut issuer = String::new();
    for credential in state.resources.values_mut().filter(|r| r.kind == Kind::FederatedCredential) {
        let Some(now) = credential.body["properties"]["issuer"].as_str().map(str::to_string) else { continue };
        if now.ends_with('/') {
            continue;
        }
        issuer = format!("{now}/");
        credential.body["properties"]["issuer"] = issuer.clone().into();
        credential.etag = uuid::Uuid::new_v4().to_string();
        changed += 1;
    }
    if changed == 0 {
        return Err("no federated credential exists yet".into());
    }
    Ok(format!("{changed} federated credentials: issuer → `{issuer}`"))
}

/// The container holding the issuer's discovery document made private (anonymous reads answer
/// 404), as a storage policy or a hand-made container does.
pub(super) fn private_issuer_container(shared: &Shared) -> Result<String, String> {
    let mut state = shared.state();
    let (account, container) = state
        .containers
        .iter_mut()
        .find(|(_, c)| c.blobs.contains_key(".well-known/openid-configuration"))
        .map(|(key, data)| {
            data.public_access = None;
            data.etag = crate::state::blobs_etag();
            key.clone()
        })
        .ok_or("no container holds an issuer's discovery document yet")?;
    Ok(format!("storage account {account}, container {container}: public access → none"))
}
