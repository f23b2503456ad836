//! A client assertion taken apart: its header (`alg`, `kid`), its claims, and the bytes its
//! signature covers. Nothing here trusts it; `signature` checks it against the issuer's keys.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;

use super::errors::AadstsError;

#[derive(Debug, Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
    x5t: Option<String>,
    #[serde(rename = "x5t#S256")]
    x5t_s256: Option<String>,
}

/// An unverified JWT.
#[derive(Debug)]
pub(crate) struct Assertion {
    pub alg: String,
    pub kid: Option<String>,
    /// The certificate thumbprints a client certificate's assertion names its key by.
    pub x5t: Option<String>,
    pub x5t_s256: Option<String>,
    pub iss: String,
    pub sub: String,
    /// `aud` as a list, whether the token carries a string or an array.
    pub aud: Vec<String>,
    pub exp: Option<i64>,
    pub nbf: Option<i64>,
    /// `header.payload`, what the signature signs.
    pub signing_input: String,
    pub signature: Vec<u8>,
}

/// A JWT NumericDate: seconds, possibly with a fraction (MSAL Python sends `time.time()` sums).
fn numeric_date(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_f64().filter(|f| f.is_finite()).map(|f| f.floor() as i64))
}

impl Assertion {
    pub(crate) fn parse(token: &str) -> Result<Assertion, AadstsError> {
        let mut parts = token.trim().split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AadstsError::malformed());
        };
        let decode =
            |part: &str| URL_SAFE_NO_PAD.decode(part.trim_end_matches('=')).map_err(|_| AadstsError::malformed());
        let head: Header = serde_json::from_slice(&decode(header)?).map_err(|_| AadstsError::malformed())?;
        let claims: Value = serde_json::from_slice(&decode(payload)?).map_err(|_| AadstsError::malformed())?;
        let text = |name: &str| claims[name].as_str().unwrap_or_default().to_string();
        let aud = match &claims["aud"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        };
        Ok(Assertion {
            alg: head.alg,
            kid: head.kid,
            x5t: head.x5t,
            x5t_s256: head.x5t_s256,
            iss: text("iss"),
            sub: text("sub"),
            aud,
            exp: numeric_date(&claims["exp"]),
            nbf: numeric_date(&claims["nbf"]),
            signing_input: format!("{header}.{payload}"),
            signature: decode(signature)?,
        })
    }

    /// The audiences as Entra prints them in error texts.
    pub(crate) fn audience_text(&self) -> String {
        self.aud.join(",")
    }

    /// `exp` must lie ahead and `nbf`, when present, behind. A token without `exp` is refused:
    /// Kubernetes service-account tokens always carry one.
    pub(crate) fn check_time(&self, now: i64) -> Result<(), AadstsError> {
        let exp = self.exp.unwrap_or(0);
        let not_yet = self.nbf.is_some_and(|nbf| nbf > now);
        if exp <= now || not_yet {
            return Err(AadstsError::outside_time_range(now, self.nbf, exp));
        }
        Ok(())
    }
}
