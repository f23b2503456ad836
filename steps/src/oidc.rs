use std::collections::BTreeMap;
use std::path::Path;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::RsaPublicKey;
use rsa::traits::PublicKeyParts;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::keypair::{key_id, read_public_key};
use crate::kind::MadeObjects;
use crate::kind::{known_text, parse_inputs, schema_of};
use crate::{
    CheckContext, InputProblem, OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome,
    output_path_problem,
};

/// Writes the OIDC discovery document and the JWKS for the service-account issuer, byte for byte
/// as `ccoctl azure create-oidc-issuer` writes them, so a later `blob` step can publish them and
/// Entra ID can validate the tokens the hosted cluster signs.
pub struct Oidc;

/// Blob names under the issuer's container, where Entra ID looks for the documents.
pub(crate) const DISCOVERY_BLOB_NAME: &str = ".well-known/openid-configuration";
pub(crate) const JWKS_BLOB_NAME: &str = "openid/v1/jwks";

/// HostedCluster `spec.issuerURL` is limited to 255 characters.
const MAX_ISSUER_URL_CHARS: usize = 255;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OidcInputs {
    /// The issuer, e.g. `https://<account>.blob.core.windows.net/<container>`; no trailing slash.
    pub issuer_url: String,
    /// The PKIX PEM public key written by the `keypair` step.
    pub public_key_path: String,
    /// Where to write the discovery document (published as `.well-known/openid-configuration`).
    pub discovery_path: String,
    /// Where to write the JWKS (published as `openid/v1/jwks`).
    pub jwks_path: String,
    /// Accept an `http://` issuer. Only for local tests: Entra ID and Kubernetes require https.
    #[serde(default)]
    pub allow_http: bool,
}

#[async_trait]
impl StepKind for Oidc {
    fn name(&self) -> &'static str {
        "oidc"
    }

    /// It writes files only, but the issuer they describe is what the run published: `verify`
    /// reads its discovery document and JWKS back.
    fn made_objects(&self) -> MadeObjects {
        MadeObjects::OidcIssuer
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<OidcInputs>()
    }

    fn declared_outputs(&self, _inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        ["issuer_url", "discovery_path", "jwks_path", "kid", "discovery_blob_name", "jwks_blob_name"]
            .iter()
            .map(|n| OutputDecl { name: n.to_string(), secret: false })
            .collect()
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    /// The issuer URL's rules, and where the documents go (written as the runbook gives them:
    /// under the run's working directory).
    fn check_inputs(&self, inputs: &Value, _ctx: &CheckContext<'_>) -> Vec<InputProblem> {
        let mut problems = Vec::new();
        let allow_http = inputs.get("allow_http").and_then(Value::as_bool).unwrap_or(false);
        if let Some(url) = inputs.get("issuer_url").and_then(known_text)
            && let Err(e) = check_issuer_url(url, allow_http)
        {
            let problem = InputProblem::new("/issuer_url", e.message);
            problems.push(match e.hint {
                Some(hint) => problem.with_hint(hint),
                None => problem,
            });
        }
        for field in ["discovery_path", "jwks_path"] {
            if let Some(why) = inputs.get(field).and_then(known_text).and_then(output_path_problem) {
                problems.push(InputProblem::new(format!("/{field}"), why));
            }
        }
        problems
    }

    async fn run(&self, ctx: &StepContext, inputs: &Value) -> Result<StepOutcome, StepError> {
        let inputs: OidcInputs = parse_inputs(inputs)?;
        check_issuer_url(&inputs.issuer_url, inputs.allow_http)?;
        let public_key = read_public_key(&ctx.resolve_path(&inputs.public_key_path)?)?;
        let kid = key_id(&public_key)?;
        let discovery = discovery_document(&inputs.issuer_url);
        let jwks = jwks_document(&public_key, &kid);

        let discovery_path = ctx.resolve_path(&inputs.discovery_path)?;
        let jwks_path = ctx.resolve_path(&inputs.jwks_path)?;
        let discovery_written = write_if_changed(&discovery_path, discovery.as_bytes())?;
        let jwks_written = write_if_changed(&jwks_path, jwks.as_bytes())?;

        let mut outputs = serde_json::Map::new();
        outputs.insert("issuer_url".into(), json!(inputs.issuer_url));
        outputs.insert("discovery_path".into(), json!(discovery_path.display().to_string()));
        outputs.insert("jwks_path".into(), json!(jwks_path.display().to_string()));
        outputs.insert("kid".into(), json!(kid));
        outputs.insert("discovery_blob_name".into(), json!(DISCOVERY_BLOB_NAME));
        outputs.insert("jwks_blob_name".into(), json!(JWKS_BLOB_NAME));
        Ok(StepOutcome {
            outputs,
            evidence: json!({
                "jwks_uri": jwks_uri(&inputs.issuer_url),
                "discovery_sha256": hex::encode(Sha256::digest(discovery.as_bytes())),
                "jwks_sha256": hex::encode(Sha256::digest(jwks.as_bytes())),
                "discovery_written": discovery_written,
                "jwks_written": jwks_written,
            }),
        })
    }
}

/// The issuer is written into the HostedCluster (immutable), every federated credential and every
/// token's `iss`, and those are compared as exact strings; so it is checked rather than normalized.
/// Rules: OIDC Discovery §3 and Kubernetes' `NewOpenIDMetadataProvider` (https, no query, no
/// fragment); no trailing slash, since the documents live at `<issuer>/<blob name>` and ccoctl's
/// issuer is the container URL without one; HyperShift's 255-character limit.
pub(crate) fn check_issuer_url(raw: &str, allow_http: bool) -> Result<(), StepError> {
    let invalid = |why: &str| {
        StepError::permanent(format!("issuer URL `{raw}` {why}"))
            .with_code("IssuerUrlInvalid")
            .with_hint("use the blob container URL, e.g. `https://<account>.blob.core.windows.net/<container>`")
    };
    let chars = raw.chars().count();
    if chars > MAX_ISSUER_URL_CHARS {
        return Err(StepError::permanent(format!(
            "issuer URL is {chars} characters; HyperShift allows at most {MAX_ISSUER_URL_CHARS}"
        ))
        .with_code("IssuerUrlTooLong")
        .with_hint("use shorter storage account and container names"));
    }
    let parsed = reqwest::Url::parse(raw).map_err(|e| invalid(&format!("is not a URL: {e}")))?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_http => {}
        _ => {
            return Err(StepError::permanent(format!("issuer URL `{raw}` must use https"))
                .with_code("IssuerUrlNotHttps")
                .with_hint(
                    "Entra ID fetches the issuer's documents over https only, and Kubernetes refuses other schemes",
                ));
        }
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid("has no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        // Not `invalid`: that would copy the credentials into the journal.
        return Err(StepError::permanent("issuer URL must not contain user credentials (`user:password@`)")
            .with_code("IssuerUrlInvalid"));
    }
    if parsed.query().is_some() {
        return Err(invalid("must not have a query (`?…`)"));
    }
    if parsed.fragment().is_some() {
        return Err(invalid("must not have a fragment (`#…`)"));
    }
    if raw.ends_with('/') {
        return Err(invalid("must not end with `/`").with_hint(format!(
            "use `{}`: the token's `iss` must equal the issuer exactly, and `<issuer>/openid/v1/jwks` would get a double slash",
            raw.trim_end_matches('/')
        )));
    }
    // The parser's canonical form differs when the host has upper case, the port is the default,
    // or characters need escaping; any of those would make string comparisons disagree later.
    let canonical = match parsed.as_str().strip_suffix('/') {
        Some(without_root_slash) if parsed.path() == "/" => without_root_slash,
        _ => parsed.as_str(),
    };
    if canonical != raw {
        return Err(invalid("is not in canonical form").with_hint(format!("write it as `{canonical}`")));
    }
    Ok(())
}

/// `jwks_uri` as ccoctl and the hosted kube-apiserver (`service-account-jwks-uri`) form it.
pub(crate) fn jwks_uri(issuer_url: &str) -> String {
    format!("{issuer_url}/{JWKS_BLOB_NAME}")
}

/// ccoctl's `openidConfigurationTemplate` (pkg/cmd/provisioning/azure/create_oidc_issuer.go),
/// whitespace included and without a final newline. Five fields: unlike ccoctl's AWS template, the
/// Azure one has no `claims_supported`.
pub(crate) fn discovery_document(issuer_url: &str) -> String {
    // ccoctl substitutes with %s; JSON-escaping is a no-op for a checked issuer but keeps the
    // document valid JSON whatever string arrives here.
    let issuer = json_string_body(issuer_url);
    let jwks_uri = json_string_body(&jwks_uri(issuer_url));
    format!(
        "{{\n\
         \t\t\"issuer\": \"{issuer}\",\n\
         \t\t\"jwks_uri\": \"{jwks_uri}\",\n\
         \t\t\"response_types_supported\": [\n\
         \t\t  \"id_token\"\n\
         \t\t],\n\
         \t\t\"subject_types_supported\": [\n\
         \t\t  \"public\"\n\
         \t\t],\n\
         \t\t\"id_token_signing_alg_values_supported\": [\n\
         \t\t  \"RS256\"\n\
         \t\t]\n\
         \t  }}"
    )
}

fn json_string_body(raw: &str) -> String {
    let quoted = serde_json::to_string(raw).expect("strings serialize");
    quoted[1..quoted.len() - 1].to_string()
}

/// One key of the set, fields in go-jose's order (use, kty, kid, alg, n, e).
#[derive(Serialize)]
struct JsonWebKey<'a> {
    #[serde(rename = "use")]
    key_use: &'a str,
    kty: &'a str,
    kid: &'a str,
    alg: &'a str,
    n: String,
    e: String,
}

#[derive(Serialize)]
struct JsonWebKeySet<'a> {
    keys: [JsonWebKey<'a>; 1],
}

/// The JWKS as ccoctl's `BuildJsonWebKeySet` writes it: go-jose key, `json.MarshalIndent` with four
/// spaces (serde_json's pretty printer with that indent produces the same bytes), no final newline.
/// n and e are unpadded base64url of their big-endian bytes without leading zeros (e = "AQAB").
pub(crate) fn jwks_document(public_key: &RsaPublicKey, kid: &str) -> String {
    let set = JsonWebKeySet {
        keys: [JsonWebKey {
            key_use: "sig",
            kty: "RSA",
            kid,
            alg: "RS256",
            n: URL_SAFE_NO_PAD.encode(public_key.n().to_bytes_be()),
            e: URL_SAFE_NO_PAD.encode(public_key.e().to_bytes_be()),
        }],
    };
    let mut out = Vec::new();
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b"    "));
    set.serialize(&mut serializer).expect("a key set serializes");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Public documents, so 0644 like ccoctl. Unchanged files are left alone (same bytes, same mtime).
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool, StepError> {
    if std::fs::read(path).is_ok_and(|existing| existing == bytes) {
        return Ok(false);
    }
    runbook_files::write(path, bytes, runbook_files::PUBLIC, runbook_files::Existing::Replace).map_err(|e| {
        StepError::permanent(format!("cannot write `{}`: {e}", path.display())).with_code("WriteFailed")
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use rsa::pkcs8::DecodePublicKey;

    use super::*;
    use crate::keypair::tests::{KNOWN_KID, KNOWN_PUBLIC_KEY, context_in};

    const ISSUER: &str = "https://example.blob.core.windows.net/example";

    /// ccoctl's output for ISSUER, typed from its template (tabs and two-space indents as in Go).
    const CCOCTL_DISCOVERY: &str = "{\n\t\t\"issuer\": \"https://example.blob.core.windows.net/example\",\n\t\t\"jwks_uri\": \"https://example.blob.core.windows.net/example/openid/v1/jwks\",\n\t\t\"response_types_supported\": [\n\t\t  \"id_token\"\n\t\t],\n\t\t\"subject_types_supported\": [\n\t\t  \"public\"\n\t\t],\n\t\t\"id_token_signing_alg_values_supported\": [\n\t\t  \"RS256\"\n\t\t]\n\t  }";

    /// The JWKS for KNOWN_PUBLIC_KEY; n computed independently (Python `cryptography`), layout as
    /// Go's `json.MarshalIndent(set, "", "    ")`.
    const EXPECTED_JWKS: &str = r#"{
    "keys": [
        {
            "use": "sig",
            "kty": "RSA",
            "kid": "f45-hOvJXEXSBO7NWtmrqAA_Egze2CpX4HMD08Rek5o",
            "alg": "RS256",
            "n": "stPFw5jyz4IG8LG_gCgsfyQa_yZ7DFnEbJdhcV4qNbFTQBDcLnsnU80LrqdTlCemuwjyLlpa02GbDr8F3tuzKDSag0spQbzxcuwwRnTeibUCgmTwVpNXN1fO_ScaWVvIe5eS0ArdGWAWvlGKb8HX3y2fwyx-WEGtjO_FjG2n3I95DiVS4EZAU4JA2L3FQCvLUbdbYEWT7QJOEGaaOwgfSboAwJ1rHS3YB2XiHewYD8jW4uDkFWWGqraqFhBwkLAZQDg8Ut0llX9efoUi5OlsHpYlwFCbQlAPjwLzgtYSDfzZkJNc8b3U7CnlJNXcjLKM7KxTHGHv6zQg-QiSpxcTPQ",
            "e": "AQAB"
        }
    ]
}"#;

    #[test]
    fn discovery_document_matches_ccoctl_byte_for_byte() {
        assert_eq!(discovery_document(ISSUER), CCOCTL_DISCOVERY);
        let parsed: serde_json::Map<String, Value> = serde_json::from_str(CCOCTL_DISCOVERY).unwrap();
        let fields: Vec<&str> = parsed.keys().map(String::as_str).collect();
        assert_eq!(
            fields,
            [
                "issuer",
                "jwks_uri",
                "response_types_supported",
                "subject_types_supported",
                "id_token_signing_alg_values_supported"
            ]
        );
    }

    #[test]
    fn jwks_matches_ccoctl_layout_for_a_known_key() {
        let key = RsaPublicKey::from_public_key_pem(KNOWN_PUBLIC_KEY).unwrap();
        assert_eq!(jwks_document(&key, KNOWN_KID), EXPECTED_JWKS);
    }

    fn inputs(issuer: &str) -> Value {
        json!({
            "issuer_url": issuer,
            "public_key_path": "signer.public",
            "discovery_path": "oidc/openid-configuration",
            "jwks_path": "oidc/jwks",
        })
    }

    #[tokio::test]
    async fn writes_both_documents_and_names_their_blobs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("signer.public"), KNOWN_PUBLIC_KEY).unwrap();
        let ctx = context_in(dir.path());
        let outcome = Oidc.run(&ctx, &inputs(ISSUER)).await.unwrap();

        let discovery = std::fs::read_to_string(dir.path().join("oidc/openid-configuration")).unwrap();
        assert_eq!(discovery, CCOCTL_DISCOVERY);
        assert_eq!(std::fs::read_to_string(dir.path().join("oidc/jwks")).unwrap(), EXPECTED_JWKS);
        assert_eq!(outcome.outputs["issuer_url"], json!(ISSUER));
        assert_eq!(outcome.outputs["kid"], json!(KNOWN_KID));
        assert_eq!(outcome.outputs["discovery_blob_name"], json!(".well-known/openid-configuration"));
        assert_eq!(outcome.outputs["jwks_blob_name"], json!("openid/v1/jwks"));
        let declared: Vec<String> =
            Oidc.declared_outputs(&Value::Null, &BTreeMap::new()).into_iter().map(|d| d.name).collect();
        assert_eq!(declared, outcome.outputs.keys().cloned().collect::<Vec<_>>());

        let again = Oidc.run(&ctx, &inputs(ISSUER)).await.unwrap();
        assert_eq!(again.outputs, outcome.outputs);
        assert_eq!(again.evidence["discovery_written"], json!(false));
        assert_eq!(again.evidence["jwks_written"], json!(false));
    }

    #[tokio::test]
    async fn refuses_a_private_key_as_public_key_without_showing_it() {
        let dir = tempfile::tempdir().unwrap();
        let private_pem =
            "-----BEGIN RSA PRIVATE KEY-----\nTUlJRXBBSUJBQUtDQVFFQXNlY3JldA==\n-----END RSA PRIVATE KEY-----\n";
        std::fs::write(dir.path().join("signer.public"), private_pem).unwrap();
        let err = Oidc.run(&context_in(dir.path()), &inputs(ISSUER)).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("PublicKeyInvalid"));
        assert!(!serde_json::to_string(&err).unwrap().contains("TUlJRXBBSUJBQUtDQVFFQXNlY3JldA"));
        assert!(!dir.path().join("oidc").exists());
    }

    #[tokio::test]
    async fn refuses_http_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("signer.public"), KNOWN_PUBLIC_KEY).unwrap();
        let ctx = context_in(dir.path());
        let err = Oidc.run(&ctx, &inputs("http://127.0.0.1:8080/oidc")).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("IssuerUrlNotHttps"));
        let mut allowed = inputs("http://127.0.0.1:8080/oidc");
        allowed["allow_http"] = json!(true);
        Oidc.run(&ctx, &allowed).await.unwrap();
    }

    fn issuer_error(raw: &str) -> String {
        check_issuer_url(raw, false).unwrap_err().code.unwrap()
    }

    #[test]
    fn issuer_url_rules() {
        check_issuer_url(ISSUER, false).unwrap();
        check_issuer_url("https://issuer.example.com", false).unwrap();
        check_issuer_url("https://issuer.example.com:8443/a/b", false).unwrap();
        assert_eq!(issuer_error("http://issuer.example.com"), "IssuerUrlNotHttps");
        assert_eq!(issuer_error("ftp://issuer.example.com"), "IssuerUrlNotHttps");
        assert_eq!(issuer_error("issuer.example.com/x"), "IssuerUrlInvalid");
        assert_eq!(issuer_error("https://example.blob.core.windows.net/example/"), "IssuerUrlInvalid");
        assert_eq!(issuer_error("https://issuer.example.com/"), "IssuerUrlInvalid");
        assert_eq!(issuer_error("https://issuer.example.com/x?a=b"), "IssuerUrlInvalid");
        assert_eq!(issuer_error("https://issuer.example.com/x#frag"), "IssuerUrlInvalid");
        let with_credentials = check_issuer_url("https://user:s3cret@issuer.example.com/x", false).unwrap_err();
        assert_eq!(with_credentials.code.as_deref(), Some("IssuerUrlInvalid"));
        assert!(!serde_json::to_string(&with_credentials).unwrap().contains("s3cret"));
        assert_eq!(issuer_error("https://Issuer.Example.com/x"), "IssuerUrlInvalid");
        assert_eq!(issuer_error("https://issuer.example.com:443/x"), "IssuerUrlInvalid");
        assert_eq!(issuer_error("https://issuer.example.com/a b"), "IssuerUrlInvalid");
        let hint = check_issuer_url("https://issuer.example.com/x/", false).unwrap_err().hint.unwrap();
        assert!(hint.contains("`https://issuer.example.com/x`"), "{hint}");
    }

    #[test]
    fn issuer_url_is_at_most_255_characters() {
        let base = "https://issuer.example.com/";
        let longest = format!("{base}{}", "a".repeat(255 - base.len()));
        check_issuer_url(&longest, false).unwrap();
        assert_eq!(issuer_error(&format!("{longest}a")), "IssuerUrlTooLong");
    }
}
