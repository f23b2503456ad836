//! A shared access signature handed to a `blob` step (typically an earlier `arm` post of
//! listAccountSas or listServiceSas). It is a secret: it is only ever joined to the URL handed
//! to the Blob client, and `scrub` removes it from any text the step reports.

use azure_core::http::Url;

use crate::StepError;

const REDACTED: &str = "<redacted>";

/// A SAS token (the query string without `?`). Debug never shows it.
#[derive(Clone)]
pub struct Sas {
    query: String,
    /// Every spelling of the signature that could end up in a message: as given, decoded and
    /// re-encoded (the Blob client re-serializes the query before sending it).
    signature_forms: Vec<String>,
}

impl std::fmt::Debug for Sas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sas(<redacted>)")
    }
}

fn invalid_sas(why: &str) -> StepError {
    StepError::permanent(format!("`sas` {why}")).with_code("InvalidInputs").with_hint(
        "pass the token ARM returns: `accountSasToken` of listAccountSas or `serviceSasToken` of listServiceSas",
    )
}

impl Sas {
    pub fn parse(raw: &str) -> Result<Self, StepError> {
        let trimmed = raw.trim().trim_start_matches('?');
        if trimmed.is_empty() {
            return Err(invalid_sas("is empty"));
        }
        if trimmed.chars().any(char::is_whitespace) {
            return Err(invalid_sas("contains whitespace"));
        }
        if trimmed.contains("://") {
            return Err(invalid_sas("looks like a URL; give only the token (the part after `?`)"));
        }
        // The Blob client decodes and re-encodes the query, where a raw `+` would turn into a
        // space; a signature is base64 and times never hold spaces, so `+` can only mean itself.
        let query = trimmed.replace('+', "%2B");
        let mut probe = Url::parse("https://sas.invalid/").expect("a fixed URL parses");
        probe.set_query(Some(&query));
        let pairs: Vec<(String, String)> = probe.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let value = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let Some(signature) = value("sig").filter(|s| !s.is_empty()) else {
            return Err(invalid_sas("has no signature (`sig=`)"));
        };
        if value("sv").is_none() {
            return Err(invalid_sas("has no signed version (`sv=`)"));
        }
        let raw_signature = query.split('&').find_map(|pair| pair.strip_prefix("sig=")).unwrap_or_default().to_string();
        let mut reencoded = Url::parse("https://sas.invalid/").expect("a fixed URL parses");
        reencoded.query_pairs_mut().append_pair("sig", &signature);
        let reencoded = reencoded.query().unwrap_or_default().trim_start_matches("sig=").to_string();
        let mut signature_forms = vec![raw_signature, signature, reencoded];
        signature_forms.retain(|s| !s.is_empty());
        signature_forms.sort();
        signature_forms.dedup();
        Ok(Sas { query, signature_forms })
    }

    /// `url` (which has no query of its own) authorized by this SAS, for the Blob client only.
    pub fn authorize(&self, url: &Url) -> Url {
        let mut authorized = url.clone();
        authorized.set_query(Some(&self.query));
        authorized
    }

    /// `text` without the token or its signature in any spelling.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.replace(&self.query, REDACTED);
        for form in &self.signature_forms {
            out = out.replace(form.as_str(), REDACTED);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "sv=2022-11-02&ss=b&srt=sco&sp=rwc&se=2030-01-01T00%3A00%3A00Z&sig=ab%2Bcd%2Fef%3D";

    #[test]
    fn joins_the_url_and_hides_in_debug() {
        let sas = Sas::parse(&format!("?{TOKEN}")).unwrap();
        let url = Url::parse("https://acct.blob.core.windows.net/oidc/jwks").unwrap();
        assert_eq!(sas.authorize(&url).query(), Some(TOKEN));
        assert_eq!(format!("{sas:?}"), "Sas(<redacted>)");
    }

    #[test]
    fn scrubs_every_spelling_of_the_signature() {
        let sas = Sas::parse(TOKEN).unwrap();
        let text = format!("url https://a/b?{TOKEN} then ab+cd/ef= and ab%2Bcd%2Fef%3D");
        let scrubbed = sas.scrub(&text);
        assert!(!scrubbed.contains("ab+cd/ef="), "{scrubbed}");
        assert!(!scrubbed.contains("ab%2Bcd%2Fef%3D"), "{scrubbed}");
        assert!(!scrubbed.contains("sig=ab"), "{scrubbed}");
    }

    #[test]
    fn a_raw_plus_stays_a_plus() {
        let sas = Sas::parse("sv=2022-11-02&sig=ab+cd").unwrap();
        let url = sas.authorize(&Url::parse("https://a.invalid/c").unwrap());
        let sig: Vec<String> = url.query_pairs().filter(|(k, _)| k == "sig").map(|(_, v)| v.into_owned()).collect();
        assert_eq!(sig, vec!["ab+cd".to_string()]);
    }

    #[test]
    fn refuses_what_is_not_a_sas_without_echoing_it() {
        for bad in ["", "sv=2022-11-02", "sig=x", "https://a/b?sv=1&sig=TOPSECRET", "sv=1&sig=TOP SECRET"] {
            let err = Sas::parse(bad).unwrap_err();
            assert!(!err.message.contains("TOP"), "{err}");
        }
    }
}
