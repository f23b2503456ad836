//! Who the Azure credential signs in as, for the journal's `who`: the object id, app and user from
//! the access token's claims, and the display name Microsoft Graph gives that object.

use azure_core::http::Method;
use base64::Engine;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::credential::credential;
use super::graph_client::{GraphClient, GraphSession};
use super::settings::AzureSettings;
use super::transport::transport;
use crate::StepError;

/// `{object_id, client_id, user, display_name}`; a field the token or Graph does not give is null.
/// Graph's answer is optional (a principal may not read the directory): only signing in must work.
pub async fn signed_in_principal(settings: &AzureSettings) -> Result<Value, StepError> {
    let transport = transport(settings.ca_file.as_deref(), settings.ssl_cert_file.as_deref())?;
    let token =
        credential(settings, &transport)?.get_token(&[settings.arm_scope.as_str()], None).await.map_err(|e| {
            StepError::permanent(format!("cannot sign in to Azure: {e}")).with_code("CredentialUnavailable")
        })?;
    let claims = token_claims(token.token.secret())?;
    let object_id = claims["oid"].as_str().map(str::to_string);
    let mut display_name = claims.get("name").cloned().unwrap_or(Value::Null);
    if let Some(oid) = &object_id
        && let Ok(client) = GraphClient::new(settings)
    {
        let cancel = CancellationToken::new();
        let mut session = GraphSession::new(&client, &cancel);
        let body = json!({ "ids": [oid] });
        if let Ok(answer) = session.call(Method::Post, &["directoryObjects", "getByIds"], &[], Some(&body)).await
            && let Some(name) = answer.json().and_then(|v| v["value"][0]["displayName"].as_str().map(str::to_string))
        {
            display_name = json!(name);
        }
    }
    Ok(json!({
        "object_id": object_id,
        "client_id": claims.get("appid").or_else(|| claims.get("azp")).cloned().unwrap_or(Value::Null),
        "user": claims.get("upn").or_else(|| claims.get("unique_name")).cloned().unwrap_or(Value::Null),
        "display_name": display_name,
    }))
}

/// The claims of an access token for `scope` (e.g. Graph's `roles`, `scp` and `wids`: what the
/// principal may do there), read as `signed_in_principal` reads them.
pub async fn access_claims(settings: &AzureSettings, scope: &str) -> Result<Value, StepError> {
    let transport = transport(settings.ca_file.as_deref(), settings.ssl_cert_file.as_deref())?;
    let token = credential(settings, &transport)?.get_token(&[scope], None).await.map_err(|e| {
        StepError::permanent(format!("cannot get an access token for {scope}: {e}")).with_code("CredentialUnavailable")
    })?;
    token_claims(token.token.secret())
}

/// The claims of a JWT, read without checking its signature: they only name who we are, and the
/// token came straight from the credential.
fn token_claims(token: &str) -> Result<Value, StepError> {
    let unreadable = || StepError::permanent("the Azure access token is not a JWT").with_code("CredentialUnavailable");
    let payload = token.split('.').nth(1).ok_or_else(unreadable)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| unreadable())?;
    serde_json::from_slice(&bytes).map_err(|_| unreadable())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_read_from_the_payload() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"oid":"o-1","appid":"a-1"}"#);
        let claims = token_claims(&format!("h.{payload}.s")).unwrap();
        assert_eq!(claims["oid"], "o-1");
        assert!(token_claims("not-a-jwt").is_err());
    }
}
