use std::collections::BTreeMap;
use std::path::Path;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::pkcs1::der::zeroize::Zeroizing;
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey, LineEnding};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::kind::{known_text, parse_inputs, refuse_bad_inputs, schema_of};
use crate::{
    CheckContext, ErrorClass, InputProblem, OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome,
    output_path_problem,
};

/// Generates the service-account token signing key pair exactly as `ccoctl create-key-pair` does
/// (RSA, private key PKCS#1 PEM, public key PKIX PEM), but with the private key 0600 from the start.
/// An existing pair is reused and never replaced: a new private key would invalidate every token
/// the cluster has issued and every federated credential's trust in the published JWKS.
pub struct Keypair;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeypairInputs {
    /// Where the private key (PKCS#1 PEM, mode 0600) is written or found.
    pub private_key_path: String,
    /// Where the public key (PKIX PEM) is written or found.
    pub public_key_path: String,
    /// Key size in bits. ccoctl uses 4096; 2048 exists to keep tests fast.
    #[serde(default = "default_bits")]
    #[schemars(extend("enum" = [2048, 4096]))]
    pub bits: usize,
}

fn default_bits() -> usize {
    4096
}

const ALLOWED_BITS: [usize; 2] = [2048, 4096];

#[async_trait]
impl StepKind for Keypair {
    fn name(&self) -> &'static str {
        "keypair"
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<KeypairInputs>()
    }

    fn declared_outputs(&self, _inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        // The private key's *path* is not a secret; its content never becomes an output.
        ["private_key_path", "public_key_path", "kid", "public_key_sha256"]
            .iter()
            .map(|n| OutputDecl { name: n.to_string(), secret: false })
            .collect()
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    fn check_inputs(&self, inputs: &Value, _ctx: &CheckContext<'_>) -> Vec<InputProblem> {
        check_key_paths(inputs)
    }

    async fn run(&self, ctx: &StepContext, raw: &Value) -> Result<StepOutcome, StepError> {
        refuse_bad_inputs(check_key_paths(raw))?;
        let inputs: KeypairInputs = parse_inputs(raw)?;
        if !ALLOWED_BITS.contains(&inputs.bits) {
            return Err(StepError::permanent(format!("`bits` must be 2048 or 4096, not {}", inputs.bits))
                .with_code("InvalidInputs")
                .with_hint("ccoctl generates 4096-bit keys; use 2048 only in tests"));
        }
        let private_path = ctx.output_path(&inputs.private_key_path)?;
        let public_path = ctx.output_path(&inputs.public_key_path)?;

        let (public_key, generated) = match (exists(&private_path)?, exists(&public_path)?) {
            (true, true) => (reuse_existing(&private_path, &public_path, inputs.bits)?, false),
            (true, false) => return Err(orphan_private_key(&private_path, &public_path)),
            (false, true) => return Err(orphan_public_key(&private_path, &public_path)),
            (false, false) => {
                let private_key = generate(ctx, inputs.bits).await?;
                write_pair(&private_key, &private_path, &public_path)?;
                (private_key.to_public_key(), true)
            }
        };

        let public_pem = std::fs::read(&public_path).map_err(|e| unreadable("public key", &public_path, e))?;
        let kid = key_id(&public_key)?;
        let mut outputs = serde_json::Map::new();
        outputs.insert("private_key_path".into(), json!(private_path.display().to_string()));
        outputs.insert("public_key_path".into(), json!(public_path.display().to_string()));
        outputs.insert("kid".into(), json!(kid));
        outputs.insert("public_key_sha256".into(), json!(hex::encode(Sha256::digest(&public_pem))));
        Ok(StepOutcome {
            outputs,
            evidence: json!({
                "generated": generated,
                "bits": public_key.size() * 8,
                "kid": kid,
                "private_key_mode": file_mode(&private_path),
            }),
        })
    }
}

/// Both keys are written under the run's working directory, to two different files.
fn check_key_paths(inputs: &Value) -> Vec<InputProblem> {
    let mut problems = Vec::new();
    let private = inputs.get("private_key_path").and_then(known_text);
    let public = inputs.get("public_key_path").and_then(known_text);
    for (field, path) in [("private_key_path", private), ("public_key_path", public)] {
        if let Some(why) = path.and_then(output_path_problem) {
            problems.push(InputProblem::new(format!("/{field}"), why));
        }
    }
    if private.is_some() && private == public {
        problems.push(
            InputProblem::new("/public_key_path", "the public key would overwrite the private key")
                .with_hint("give the two keys different files, e.g. signer.private and signer.public"),
        );
    }
    problems
}

/// The key id Kubernetes puts in the tokens it signs (`keyIDFromPublicKey` in
/// pkg/serviceaccount/jwt.go, copied by ccoctl): base64url without padding of the SHA-256 of the
/// DER-encoded PKIX public key. The JWKS must carry the same kid byte for byte.
pub(crate) fn key_id(public_key: &RsaPublicKey) -> Result<String, StepError> {
    let der = public_key.to_public_key_der().map_err(|e| {
        StepError::permanent(format!("cannot DER-encode the public key: {e}")).with_code("KeyEncodingFailed")
    })?;
    Ok(URL_SAFE_NO_PAD.encode(Sha256::digest(der.as_bytes())))
}

/// Reads a PKIX ("BEGIN PUBLIC KEY") RSA public key, the format ccoctl writes and reads.
pub(crate) fn read_public_key(path: &Path) -> Result<RsaPublicKey, StepError> {
    let pem = std::fs::read_to_string(path).map_err(|e| unreadable("public key", path, e))?;
    RsaPublicKey::from_public_key_pem(&pem).map_err(|e| {
        StepError::permanent(format!("`{}` is not an RSA public key in PKIX PEM: {e}", path.display()))
            .with_code("PublicKeyInvalid")
            .with_hint("expected `-----BEGIN PUBLIC KEY-----`, as written by the `keypair` step or ccoctl")
    })
}

fn exists(path: &Path) -> Result<bool, StepError> {
    path.try_exists().map_err(|e| unreadable("key file", path, e))
}

/// Both files exist: they must be one pair, of the requested size. Nothing is written.
fn reuse_existing(private_path: &Path, public_path: &Path, bits: usize) -> Result<RsaPublicKey, StepError> {
    let private_key = read_private_key(private_path)?;
    let public_key = read_public_key(public_path)?;
    if private_key.to_public_key() != public_key {
        return Err(StepError::permanent(format!(
            "the public key `{}` does not belong to the private key `{}`",
            public_path.display(),
            private_path.display()
        ))
        .with_code("KeyPairMismatch")
        .with_hint(format!(
            "the private key is what the cluster signs with, so keep it and derive its public key: \
             `openssl rsa -in {} -pubout -out {}`; never replace a private key that is in use",
            private_path.display(),
            public_path.display()
        )));
    }
    let actual_bits = public_key.size() * 8;
    if actual_bits != bits {
        return Err(StepError::permanent(format!(
            "the existing key pair at `{}` is {actual_bits} bits, the step asks for {bits}",
            private_path.display()
        ))
        .with_code("KeyPairSizeMismatch")
        .with_hint(format!("set `bits = {actual_bits}` to reuse this pair; it is never replaced automatically")));
    }
    Ok(public_key)
}

/// Accepts PKCS#1 (what ccoctl writes) and PKCS#8 (what `openssl genpkey` writes) so an operator's
/// existing key can be reused. Errors name the file and format only, never its content.
fn read_private_key(path: &Path) -> Result<RsaPrivateKey, StepError> {
    let pem = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| unreadable("private key", path, e))?);
    let parsed = if pem.contains("-----BEGIN RSA PRIVATE KEY-----") {
        RsaPrivateKey::from_pkcs1_pem(&pem).map_err(|e| e.to_string())
    } else if pem.contains("-----BEGIN PRIVATE KEY-----") {
        RsaPrivateKey::from_pkcs8_pem(&pem).map_err(|e| e.to_string())
    } else {
        Err("no RSA private key PEM block".to_string())
    };
    parsed.map_err(|reason| {
        StepError::permanent(format!("`{}` is not a usable RSA private key: {reason}", path.display()))
            .with_code("PrivateKeyInvalid")
            .with_hint("expected `-----BEGIN RSA PRIVATE KEY-----` (PKCS#1), as written by ccoctl")
    })
}

fn orphan_private_key(private_path: &Path, public_path: &Path) -> StepError {
    StepError::permanent(format!(
        "the private key `{}` exists but the public key `{}` does not",
        private_path.display(),
        public_path.display()
    ))
    .with_code("KeyPairIncomplete")
    .with_hint(format!(
        "derive the public key from the existing private key (never generate a new one over it): \
         `openssl rsa -in {} -pubout -out {}`",
        private_path.display(),
        public_path.display()
    ))
}

fn orphan_public_key(private_path: &Path, public_path: &Path) -> StepError {
    StepError::permanent(format!(
        "the public key `{}` exists but the private key `{}` does not",
        public_path.display(),
        private_path.display()
    ))
    .with_code("KeyPairIncomplete")
    .with_hint(
        "restore the private key that belongs to it (tokens and published JWKS depend on it); \
         only if that key was never used, remove the public key to generate a new pair",
    )
}

/// RSA generation takes seconds (far more in debug builds), so it runs on the blocking pool and a
/// cancelled run stops waiting for it; nothing has been written at that point.
async fn generate(ctx: &StepContext, bits: usize) -> Result<RsaPrivateKey, StepError> {
    let task = tokio::task::spawn_blocking(move || RsaPrivateKey::new(&mut rsa::rand_core::OsRng, bits));
    let generated = tokio::select! {
        _ = ctx.cancel.cancelled() => {
            return Err(StepError::new(ErrorClass::Cancelled, "key generation cancelled; nothing was written"));
        }
        joined = task => joined,
    };
    generated
        .map_err(|e| StepError::permanent(format!("key generation task failed: {e}")))?
        .map_err(|e| StepError::permanent(format!("RSA key generation failed: {e}")).with_code("KeyGenerationFailed"))
}

/// Private key first: if the run dies in between, the private key survives alone and the next run
/// says how to derive its public key, rather than leaving a public key nobody can sign for.
fn write_pair(private_key: &RsaPrivateKey, private_path: &Path, public_path: &Path) -> Result<(), StepError> {
    let private_pem = private_key.to_pkcs1_pem(LineEnding::LF).map_err(|e| {
        StepError::permanent(format!("cannot PEM-encode the private key: {e}")).with_code("KeyEncodingFailed")
    })?;
    let public_pem = private_key.to_public_key().to_public_key_pem(LineEnding::LF).map_err(|e| {
        StepError::permanent(format!("cannot PEM-encode the public key: {e}")).with_code("KeyEncodingFailed")
    })?;
    write_new_file(private_path, private_pem.as_bytes(), 0o600).map_err(|e| not_written(private_path, e))?;
    write_new_file(public_path, public_pem.as_bytes(), 0o644).map_err(|e| not_written(public_path, e))
}

/// Written atomically, but never over an existing file: a rename would silently replace a
/// private key another process just wrote.
fn write_new_file(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    runbook_files::write(path, bytes, mode, runbook_files::Existing::Keep)
}

fn file_mode(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).ok().map(|m| format!("{:04o}", m.permissions().mode() & 0o7777))
}

fn unreadable(what: &str, path: &Path, e: std::io::Error) -> StepError {
    StepError::permanent(format!("cannot read {what} `{}`: {e}", path.display())).with_code("KeyFileUnreadable")
}

fn not_written(path: &Path, e: std::io::Error) -> StepError {
    let error = StepError::permanent(format!("cannot write `{}`: {e}", path.display())).with_code("WriteFailed");
    if e.kind() == std::io::ErrorKind::AlreadyExists {
        error.with_hint("another process created the file meanwhile; it was left untouched, re-run to reuse it")
    } else {
        error
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A context whose working directory is `dir`, for the unit tests of this and the oidc kind.
    pub(crate) fn context_in(dir: &Path) -> StepContext {
        StepContext::new("run", "step", dir)
    }

    fn small_pair_inputs() -> Value {
        json!({ "private_key_path": "keys/signer.private", "public_key_path": "keys/signer.public", "bits": 2048 })
    }

    /// One 2048-bit key shared by the tests that exercise reuse and refusal: generation takes
    /// seconds in a debug build, so only the tests about generation itself generate.
    fn fixture_key() -> &'static RsaPrivateKey {
        static KEY: std::sync::OnceLock<RsaPrivateKey> = std::sync::OnceLock::new();
        KEY.get_or_init(|| RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap())
    }

    /// Writes the fixture pair where `small_pair_inputs` expects it; `private_pem` picks the format.
    fn place_fixture_pair(dir: &Path, private_pem: &str) {
        std::fs::create_dir_all(dir.join("keys")).unwrap();
        std::fs::write(dir.join("keys/signer.private"), private_pem).unwrap();
        let public_pem = fixture_key().to_public_key().to_public_key_pem(LineEnding::LF).unwrap();
        std::fs::write(dir.join("keys/signer.public"), public_pem).unwrap();
    }

    fn fixture_pkcs1_pem() -> String {
        fixture_key().to_pkcs1_pem(LineEnding::LF).unwrap().to_string()
    }

    #[tokio::test]
    async fn generates_pkcs1_private_and_pkix_public_keys() {
        let dir = tempfile::tempdir().unwrap();
        let outcome = Keypair.run(&context_in(dir.path()), &small_pair_inputs()).await.unwrap();

        let private_path = dir.path().join("keys/signer.private");
        let private_pem = std::fs::read_to_string(&private_path).unwrap();
        assert!(private_pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        assert!(private_pem.ends_with("-----END RSA PRIVATE KEY-----\n"));
        assert_eq!(std::fs::metadata(&private_path).unwrap().permissions().mode() & 0o777, 0o600);
        let public_pem = std::fs::read_to_string(dir.path().join("keys/signer.public")).unwrap();
        assert!(public_pem.starts_with("-----BEGIN PUBLIC KEY-----\n"));

        let public_key = RsaPublicKey::from_public_key_pem(&public_pem).unwrap();
        assert_eq!(public_key.size() * 8, 2048);
        assert_eq!(public_key.e(), &rsa::BigUint::from(65537u32));
        assert_eq!(RsaPrivateKey::from_pkcs1_pem(&private_pem).unwrap().to_public_key(), public_key);
        assert_eq!(outcome.outputs["kid"], json!(key_id(&public_key).unwrap()));
        assert_eq!(outcome.outputs["public_key_sha256"], json!(hex::encode(Sha256::digest(public_pem.as_bytes()))));
        assert_eq!(outcome.evidence["generated"], json!(true));

        // The private key never leaves its file: not in outputs, not in evidence.
        let body_line = private_pem.lines().nth(1).unwrap();
        let shown = format!("{} {}", Value::Object(outcome.outputs), outcome.evidence);
        assert!(!shown.contains(body_line) && !shown.contains("PRIVATE KEY-----"));
    }

    #[tokio::test]
    async fn second_run_reuses_the_generated_pair_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context_in(dir.path());
        let first = Keypair.run(&ctx, &small_pair_inputs()).await.unwrap();
        let private_before = std::fs::read(dir.path().join("keys/signer.private")).unwrap();
        let second = Keypair.run(&ctx, &small_pair_inputs()).await.unwrap();
        assert_eq!(std::fs::read(dir.path().join("keys/signer.private")).unwrap(), private_before);
        assert_eq!(first.outputs, second.outputs);
        assert_eq!(second.evidence["generated"], json!(false));
    }

    #[tokio::test]
    async fn reuses_an_existing_pkcs8_private_key() {
        let dir = tempfile::tempdir().unwrap();
        let pkcs8 = rsa::pkcs8::EncodePrivateKey::to_pkcs8_pem(fixture_key(), LineEnding::LF).unwrap();
        place_fixture_pair(dir.path(), &pkcs8);
        let outcome = Keypair.run(&context_in(dir.path()), &small_pair_inputs()).await.unwrap();
        assert_eq!(outcome.outputs["kid"], json!(key_id(&fixture_key().to_public_key()).unwrap()));
        assert_eq!(std::fs::read_to_string(dir.path().join("keys/signer.private")).unwrap(), pkcs8.as_str());
    }

    #[tokio::test]
    async fn refuses_a_lone_private_key_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        place_fixture_pair(dir.path(), &fixture_pkcs1_pem());
        std::fs::remove_file(dir.path().join("keys/signer.public")).unwrap();
        let err = Keypair.run(&context_in(dir.path()), &small_pair_inputs()).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("KeyPairIncomplete"));
        assert!(err.hint.unwrap().contains("-pubout"));
        let private_after = std::fs::read_to_string(dir.path().join("keys/signer.private")).unwrap();
        assert_eq!(private_after, fixture_pkcs1_pem());
        assert!(!dir.path().join("keys/signer.public").exists());
    }

    #[tokio::test]
    async fn refuses_a_lone_public_key() {
        let dir = tempfile::tempdir().unwrap();
        place_fixture_pair(dir.path(), &fixture_pkcs1_pem());
        std::fs::remove_file(dir.path().join("keys/signer.private")).unwrap();
        let err = Keypair.run(&context_in(dir.path()), &small_pair_inputs()).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("KeyPairIncomplete"));
        assert!(!dir.path().join("keys/signer.private").exists());
    }

    #[tokio::test]
    async fn refuses_a_public_key_of_another_pair() {
        let dir = tempfile::tempdir().unwrap();
        place_fixture_pair(dir.path(), &fixture_pkcs1_pem());
        std::fs::write(dir.path().join("keys/signer.public"), KNOWN_PUBLIC_KEY).unwrap();
        let err = Keypair.run(&context_in(dir.path()), &small_pair_inputs()).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("KeyPairMismatch"));
        let shown = serde_json::to_string(&err).unwrap();
        assert!(!shown.contains(fixture_pkcs1_pem().lines().nth(1).unwrap()) && !shown.contains("PRIVATE KEY-----"));
    }

    #[tokio::test]
    async fn refuses_to_reuse_a_pair_of_another_size() {
        let dir = tempfile::tempdir().unwrap();
        place_fixture_pair(dir.path(), &fixture_pkcs1_pem());
        let mut inputs = small_pair_inputs();
        inputs["bits"] = json!(4096);
        let err = Keypair.run(&context_in(dir.path()), &inputs).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("KeyPairSizeMismatch"));
    }

    #[tokio::test]
    async fn refuses_a_private_key_file_that_is_not_a_key() {
        let dir = tempfile::tempdir().unwrap();
        place_fixture_pair(dir.path(), "not a key\n");
        let err = Keypair.run(&context_in(dir.path()), &small_pair_inputs()).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("PrivateKeyInvalid"));
    }

    #[tokio::test]
    async fn rejects_sizes_other_than_2048_and_4096() {
        let dir = tempfile::tempdir().unwrap();
        let mut inputs = small_pair_inputs();
        inputs["bits"] = json!(1024);
        let err = Keypair.run(&context_in(dir.path()), &inputs).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("InvalidInputs"));
        assert!(!dir.path().join("keys").exists());
    }

    #[test]
    fn defaults_to_4096_bits_like_ccoctl() {
        let inputs: KeypairInputs =
            serde_json::from_value(json!({ "private_key_path": "a", "public_key_path": "b" })).unwrap();
        assert_eq!(inputs.bits, 4096);
        let schema = Keypair.inputs_schema();
        assert_eq!(schema["properties"]["bits"]["enum"], json!([2048, 4096]));
    }

    #[test]
    fn write_new_file_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        write_new_file(&path, b"first", 0o600).unwrap();
        let err = write_new_file(&path, b"second", 0o600).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temp file left behind");
    }

    /// Golden kid computed by OpenSSL, independently of this crate:
    /// `openssl pkey -pubin -in k.pub -outform DER | openssl dgst -sha256 -binary | basenc --base64url`
    /// (padding removed).
    #[test]
    fn kid_matches_openssl_for_a_known_key() {
        let key = RsaPublicKey::from_public_key_pem(KNOWN_PUBLIC_KEY).unwrap();
        assert_eq!(key_id(&key).unwrap(), KNOWN_KID);
    }

    pub(crate) const KNOWN_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----\n\
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAstPFw5jyz4IG8LG/gCgs\n\
fyQa/yZ7DFnEbJdhcV4qNbFTQBDcLnsnU80LrqdTlCemuwjyLlpa02GbDr8F3tuz\n\
KDSag0spQbzxcuwwRnTeibUCgmTwVpNXN1fO/ScaWVvIe5eS0ArdGWAWvlGKb8HX\n\
3y2fwyx+WEGtjO/FjG2n3I95DiVS4EZAU4JA2L3FQCvLUbdbYEWT7QJOEGaaOwgf\n\
SboAwJ1rHS3YB2XiHewYD8jW4uDkFWWGqraqFhBwkLAZQDg8Ut0llX9efoUi5Ols\n\
HpYlwFCbQlAPjwLzgtYSDfzZkJNc8b3U7CnlJNXcjLKM7KxTHGHv6zQg+QiSpxcT\n\
PQIDAQAB\n\
-----END PUBLIC KEY-----\n";
    pub(crate) const KNOWN_KID: &str = "f45-hOvJXEXSBO7NWtmrqAA_Egze2CpX4HMD08Rek5o";
}
