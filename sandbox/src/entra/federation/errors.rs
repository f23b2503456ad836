//! The token endpoint's answers when a federated assertion is refused, with the AADSTS codes
//! and texts Entra sends (sources in each constructor's comment; where none was found the
//! comment says so).

use http::StatusCode;

/// A refusal from the token endpoint: the OAuth `error`, the AADSTS code and its text (without
/// the trace/correlation/timestamp suffix, which is added when the reply is rendered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AadstsError {
    /// HTTP status of the reply (400 or 401).
    pub status: u16,
    /// The OAuth error, e.g. `invalid_client`.
    pub error: String,
    /// The AADSTS number, e.g. 700213.
    pub code: u32,
    /// What follows `AADSTS{code}: ` in `error_description`.
    pub text: String,
}

impl std::fmt::Display for AadstsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AADSTS{}: {}", self.code, self.text)
    }
}

impl std::error::Error for AadstsError {}

const FEDERATION_DOCS: &str =
    "https://docs.microsoft.com/en-us/azure/active-directory/develop/workload-identity-federation";

impl AadstsError {
    fn new(status: StatusCode, error: &str, code: u32, text: String) -> AadstsError {
        AadstsError { status: status.as_u16(), error: error.to_string(), code, text }
    }

    pub(crate) fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST)
    }

    /// Not three base64url parts with JSON header and claims (kubelogin issue #413).
    pub(crate) fn malformed() -> AadstsError {
        AadstsError::new(StatusCode::BAD_REQUEST, "invalid_request", 50027, "JWT token is invalid or malformed.".into())
    }

    /// The client id is no managed identity of this tenant (same answer as for an unknown app).
    pub(crate) fn unknown_client(client_id: &str, tenant: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            700016,
            format!(
                "Application with identifier '{client_id}' was not found in the directory '{tenant}'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant."
            ),
        )
    }

    /// `exp` passed or `nbf` not reached (MSAL issues #4951 and #984 quote this text).
    pub(crate) fn outside_time_range(now: i64, nbf: Option<i64>, exp: i64) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            700024,
            format!(
                "Client assertion is not within its valid time range. Current time: {}, assertion valid from {}, expiry time of assertion {}. Review the documentation at https://learn.microsoft.com/entra/identity-platform/certificate-credentials .",
                entra_time(now),
                entra_time(nbf.unwrap_or(0)),
                entra_time(exp)
            ),
        )
    }

    /// The identity has no federated credential at all (the generic text of
    /// azure-workload-identity's troubleshooting guide).
    pub(crate) fn no_record(iss: &str, sub: &str, aud: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            70021,
            format!(
                "No matching federated identity record found for presented assertion. Assertion Issuer: '{iss}'. Assertion Subject: '{sub}'. Assertion Audience: '{aud}'. {FEDERATION_DOCS}"
            ),
        )
    }

    /// No federated credential has the assertion's issuer (azure-workload-identity #1200, #1350).
    pub(crate) fn issuer_mismatch(iss: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            700211,
            format!(
                "No matching federated identity record found for presented assertion issuer '{iss}'. Please check your federated identity credential Subject, Audience and Issuer against the presented assertion. {FEDERATION_DOCS}"
            ),
        )
    }

    /// A credential has the issuer but none its subject (matching is case-sensitive;
    /// azure-workload-identity #1200, dotnet/maui #31978).
    pub(crate) fn subject_mismatch(sub: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            700213,
            format!(
                "No matching federated identity record found for presented assertion subject '{sub}'. Check your federated identity credential Subject, Audience and Issuer against the presented assertion. https://learn.microsoft.com/entra/workload-id/workload-identity-federation"
            ),
        )
    }

    /// Issuer and subject match a credential whose audiences do not hold the assertion's.
    pub(crate) fn audience_mismatch(aud: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            700212,
            format!(
                "No matching federated identity record found for presented assertion audience '{aud}'. Please check your federated identity credential Subject, Audience and Issuer against the presented assertion. {FEDERATION_DOCS}"
            ),
        )
    }

    /// The issuer's discovery document or JWKS could not be read (not public, unreachable, not
    /// JSON, or naming another issuer): azure-workload-identity's troubleshooting guide.
    pub(crate) fn issuer_unreachable() -> AadstsError {
        AadstsError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            90061,
            "Request to External OIDC endpoint failed.".into(),
        )
    }

    /// The JWKS has no key with the assertion's `kid` (azure-workload-identity #1232).
    pub(crate) fn key_not_found(kid: &str, issuer: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            7000272,
            format!(
                "The certificate with identifier {kid} used to sign the federated credential could not be found in the metadata of identity provider {issuer}. Please validate that your Identity Provider's metadata exposes the key used to sign the incoming token."
            ),
        )
    }

    /// The key named by `kid` does not verify the signature. Entra's text for client assertions
    /// signed with a registered certificate (AzureAD/passport-azure-ad #453, msgraph-sdk-php
    /// #1585); no public record of the answer for a federated assertion was found.
    pub(crate) fn invalid_signature(kid: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            700027,
            format!(
                "Client assertion contains an invalid signature. [Reason - Key was found, but use of the key to verify the signature failed., Thumbprint of key used by client: '{kid}']"
            ),
        )
    }
}

const CERTIFICATE_DOCS: &str = "Review the documentation at https://docs.microsoft.com/azure/active-directory/develop/active-directory-certificate-credentials .";

/// A client's own credentials refused: expired secrets and certificate assertions.
impl AadstsError {
    /// Every secret matching the one sent has passed its `endDateTime`.
    pub(crate) fn expired_secret(client_id: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            7000222,
            format!(
                "The provided client secret keys for app '{client_id}' are expired. Visit the Azure portal to create new keys for your app: https://aka.ms/NewClientSecret, or consider using certificate credentials for added security: https://aka.ms/certCreds."
            ),
        )
    }

    /// A certificate assertion whose `aud` is not this tenant's token endpoint (MSAL.NET #2746).
    pub(crate) fn assertion_audience() -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            700023,
            format!("Client assertion audience claim does not match Realm issuer. {CERTIFICATE_DOCS}"),
        )
    }

    /// The application has no certificate with the assertion's thumbprint.
    pub(crate) fn certificate_not_found(thumbprint: &str, client_id: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            700027,
            format!(
                "Client assertion contains an invalid signature. [Reason - The key was not found., Thumbprint of key used by client: '{thumbprint}', Please visit the Azure Portal, Graph Explorer or directly use MS Graph to see configured keys for app Id '{client_id}'. Review the documentation at https://docs.microsoft.com/en-us/graph/deployments if you are not using the right endpoint.]"
            ),
        )
    }

    /// The certificate is registered but outside its start and end dates.
    pub(crate) fn certificate_expired(thumbprint: &str, start: &str, end: &str) -> AadstsError {
        AadstsError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            700027,
            format!(
                "Client assertion contains an invalid signature. [Reason - The key used is expired., Thumbprint of key used by client: '{thumbprint}', Found key 'Start={start}, End={end}']"
            ),
        )
    }
}

/// The OpenID Connect scopes Entra accepts beside the resource scope of any token request.
/// MSAL (MSAL-Go behind azidentity, MSAL.NET, msal4j) adds `openid offline_access profile` to
/// every request, the client-credentials grant included; a client-credential token is for the
/// resource alone, so Entra sets them aside.
const OPENID_SCOPES: &[&str] = &["openid", "offline_access", "profile", "email"];

/// Client-credential flows take exactly one `<resource>/.default` scope, optionally beside the
/// OpenID scopes; the answer is that resource scope.
pub(crate) fn check_scope(scope: &str) -> Result<&str, AadstsError> {
    let scopes: Vec<&str> = scope.split_whitespace().collect();
    if scopes.is_empty() {
        return Err(AadstsError::new(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            70011,
            "The provided request must include a 'scope' input parameter.".into(),
        ));
    }
    let resources: Vec<&str> =
        scopes.into_iter().filter(|s| !OPENID_SCOPES.iter().any(|o| o.eq_ignore_ascii_case(s))).collect();
    match resources.as_slice() {
        [resource] if resource.ends_with("/.default") => Ok(*resource),
        [_, _, ..] if resources.iter().all(|s| s.ends_with("/.default")) => Err(AadstsError::new(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            70011,
            format!("The provided value for the input parameter 'scope' is not valid. The scope {scope} is not valid."),
        )),
        // No resource at all (`openid offline_access profile`, the text MSAL-Go quotes), or a
        // delegated permission such as `User.Read`.
        _ => Err(AadstsError::new(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            1002012,
            format!(
                "The provided value for scope {scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI)."
            ),
        )),
    }
}

/// `2024-10-02T22:05:03.6755165Z`: seconds with seven fractional digits, as Entra prints times.
fn entra_time(secs: i64) -> String {
    let t = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    t.strftime("%Y-%m-%dT%H:%M:%S.0000000Z").to_string()
}
