//! Entra's workload identity federation: a managed identity's client id plus a JWT signed by an
//! external issuer (a hosted cluster's service-account key) buys an access token when
//!
//! 1. the JWT parses and is within its time range,
//! 2. one of the identity's federated credentials has exactly its issuer, subject and an audience,
//! 3. the issuer's discovery document, fetched over HTTPS from the issuer URL, names that issuer,
//! 4. and the JWKS it points to holds the key named by `kid`, which verifies the signature.
//!
//! Every refusal is an [`AadstsError`] with the code and text Entra answers. The token endpoint
//! serves this over HTTP; in-process callers (simulated cluster components) use [`exchange`].

pub(crate) mod assertion;
mod errors;
mod issuer;
mod records;
pub(crate) mod signature;

use crate::Shared;
use crate::latency::Operation;

pub use errors::AadstsError;
pub(crate) use errors::check_scope;
pub(crate) use issuer::client as issuer_client;

/// The `client_assertion_type` of a JWT bearer client assertion.
pub(crate) const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// An access token the exchange issued.
#[derive(Debug, Clone)]
pub struct FederatedToken {
    pub access_token: String,
    /// Seconds until it expires, as `expires_in` reports.
    pub expires_in: i64,
}

/// Exchanges `assertion` for a token of `client_id` (a managed identity's client id) for `scope`
/// (`<resource>/.default`, possibly beside the OpenID scopes).
pub(crate) async fn exchange(
    shared: &Shared,
    client_id: &str,
    assertion: &str,
    scope: &str,
) -> Result<FederatedToken, AadstsError> {
    let scope = errors::check_scope(scope)?;
    let resource = crate::entra::claims::resolve(shared, &crate::entra::claims::resource_of_scope(scope))?;
    let assertion = assertion::Assertion::parse(assertion)?;
    assertion.check_time(shared.timestamp().as_second())?;
    let trusted = {
        let state = shared.state();
        records::match_credential(&state, &shared.config.tenant_id, client_id, &assertion)?
    };
    // The lock is released: the issuer is read over HTTPS, possibly from this very sandbox.
    let keys =
        issuer::fetch_keys(&shared.issuer_client, shared.endpoints.public_port.is_some(), &assertion.iss).await?;
    signature::check(&assertion, &keys.keys, &assertion.iss)?;
    shared.sleep(Operation::Token).await;
    let (access_token, expires_in) = crate::entra::claims::issue(
        shared,
        client_id,
        &trusted.principal_id,
        &resource,
        crate::entra::claims::ClientAuth::Assertion,
    );
    Ok(FederatedToken { access_token, expires_in })
}
