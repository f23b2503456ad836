//! Which managed identity an assertion is for, and whether one of its federated identity
//! credentials trusts it: issuer, subject and audience compared exactly (case-sensitive), in
//! that order, so the answer names the first claim that matches no credential.

use crate::state::{Kind, State};

use super::assertion::Assertion;
use super::errors::AadstsError;

/// The identity a successful exchange signs in as.
pub(crate) struct Trusted {
    pub principal_id: String,
}

pub(crate) fn match_credential(
    state: &State,
    tenant: &str,
    client_id: &str,
    assertion: &Assertion,
) -> Result<Trusted, AadstsError> {
    let identity = state.resources.values().find(|r| {
        r.kind == Kind::Identity
            && r.body["properties"]["clientId"].as_str().is_some_and(|c| c.eq_ignore_ascii_case(client_id))
    });
    let Some(identity) = identity else {
        return Err(AadstsError::unknown_client(client_id, tenant));
    };
    let prefix = format!("{}/federatedidentitycredentials/", identity.id.to_ascii_lowercase());
    let credentials: Vec<&serde_json::Value> = state
        .resources
        .iter()
        .filter(|(key, r)| r.kind == Kind::FederatedCredential && key.starts_with(&prefix))
        .map(|(_, r)| &r.body["properties"])
        .collect();
    if credentials.is_empty() {
        return Err(AadstsError::no_record(&assertion.iss, &assertion.sub, &assertion.audience_text()));
    }
    let same_issuer: Vec<_> =
        credentials.into_iter().filter(|c| c["issuer"].as_str() == Some(assertion.iss.as_str())).collect();
    if same_issuer.is_empty() {
        return Err(AadstsError::issuer_mismatch(&assertion.iss));
    }
    let same_subject: Vec<_> =
        same_issuer.into_iter().filter(|c| c["subject"].as_str() == Some(assertion.sub.as_str())).collect();
    if same_subject.is_empty() {
        return Err(AadstsError::subject_mismatch(&assertion.sub));
    }
    let audience_matches = same_subject.iter().any(|c| {
        c["audiences"]
            .as_array()
            .is_some_and(|list| list.iter().any(|a| assertion.aud.iter().any(|x| a.as_str() == Some(x))))
    });
    if !audience_matches {
        return Err(AadstsError::audience_mismatch(&assertion.audience_text()));
    }
    let principal_id = identity.body["properties"]["principalId"].as_str().unwrap_or_default().to_string();
    Ok(Trusted { principal_id })
}
