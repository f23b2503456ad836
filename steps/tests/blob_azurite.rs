//! The `blob` kind against real Azurite (npm `azurite`, pinned in package-lock.json), which
//! verifies SAS signatures the way Blob Storage does. Azurite serves HTTPS with a CA this test
//! generates, trusted through RUNBOOK_CA_FILE as the product trusts the sandbox's. The SAS is an
//! account SAS signed here with Azurite's well-known key, shaped like ARM's listAccountSas answer.
//!
//! Azurite comes from `npm ci` in the repository root (or `$AZURITE_BIN`); without it these
//! tests fail rather than skip, so a green run always means the uploads really happened.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use runbook_steps::{Blob, ErrorClass, Keypair, Oidc, StepContext, StepError, StepKind, StepOutcome};
use serde_json::{Value, json};
use sha2::Sha256;

const ACCOUNT: &str = "devstoreaccount1";
/// Azurite's documented development key for devstoreaccount1 (public, not a secret).
const ACCOUNT_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The signed version ARM's listAccountSas answers with today.
const SAS_VERSION: &str = "2022-11-02";

fn azurite_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("AZURITE_BIN") {
        return PathBuf::from(path);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("steps/ is inside the repository");
    let bin = root.join("node_modules/.bin/azurite-blob");
    assert!(
        bin.exists(),
        "Azurite is not installed: {} is missing. Run `npm ci` in the repository root ({}) to install the pinned \
         version from package-lock.json, or set AZURITE_BIN to an azurite-blob executable.",
        bin.display(),
        root.display()
    );
    bin
}

/// A CA and a server certificate for 127.0.0.1 signed by it, as PEM: (ca, server chain, key).
fn tls_material() -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.distinguished_name.push(DnType::CommonName, "blob_azurite test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let mut server_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    server_params.distinguished_name.push(DnType::CommonName, "127.0.0.1");
    server_params.subject_alt_names =
        vec![SanType::IpAddress([127, 0, 0, 1].into()), SanType::DnsName("localhost".try_into().unwrap())];
    let server_cert = server_params.signed_by(&server_key, &issuer).unwrap();
    (ca_cert.pem(), format!("{}{}", server_cert.pem(), ca_cert.pem()), server_key.serialize_pem())
}

/// A running Azurite Blob service on a free loopback port, stopped (by its pid) when dropped.
struct Azurite {
    child: Child,
    port: u16,
    ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Azurite {
    fn start() -> Azurite {
        let bin = azurite_bin();
        let dir = tempfile::tempdir().unwrap();
        let (ca, chain, key) = tls_material();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca).unwrap();
        std::fs::write(dir.path().join("cert.pem"), chain).unwrap();
        std::fs::write(dir.path().join("key.pem"), key).unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        // Ask the OS for a free port; the short window before Azurite binds it is retried below.
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut child = Command::new(&bin)
                .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
                .arg("--location")
                .arg(&data)
                .arg("--cert")
                .arg(dir.path().join("cert.pem"))
                .arg("--key")
                .arg(dir.path().join("key.pem"))
                .args(["--disableTelemetry", "--silent"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("cannot start {}: {e} (run `npm ci` in the repository root)", bin.display())
                });
            if wait_until_listening(&mut child) {
                return Azurite { child, port, ca_file, _dir: dir };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("Azurite did not start listening (tried five ports)");
    }

    fn container_url(&self, container: &str) -> String {
        format!("https://127.0.0.1:{}/{ACCOUNT}/{container}", self.port)
    }

    fn blob(&self) -> Blob {
        Blob::with_env([("RUNBOOK_CA_FILE", self.ca_file.display().to_string())])
    }

    /// A client for anonymous reads, trusting the test CA.
    fn http(&self) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(&std::fs::read(&self.ca_file).unwrap()).unwrap();
        reqwest::Client::builder().add_root_certificate(ca).build().unwrap()
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads Azurite's stdout until it says it listens (true) or exits / takes too long (false).
fn wait_until_listening(child: &mut Child) -> bool {
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("successfully listens") {
                let _ = tx.send(true);
            }
        }
        let _ = tx.send(false);
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap_or(false)
}

/// An account SAS for the Blob service, signed as Azure signs one (string-to-sign of service
/// version 2020-12-06 and later, with the encryption-scope line) and encoded as ARM returns it.
fn account_sas(permissions: &str) -> String {
    let expiry =
        (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1)).strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let (services, resource_types, protocol) = ("b", "sco", "https");
    let string_to_sign =
        format!("{ACCOUNT}\n{permissions}\n{services}\n{resource_types}\n\n{expiry}\n\n{protocol}\n{SAS_VERSION}\n\n");
    let mut mac = Hmac::<Sha256>::new_from_slice(&STANDARD.decode(ACCOUNT_KEY).unwrap()).unwrap();
    mac.update(string_to_sign.as_bytes());
    let signature = STANDARD.encode(mac.finalize().into_bytes());
    let mut query = reqwest::Url::parse("https://x.invalid/").unwrap();
    query
        .query_pairs_mut()
        .append_pair("sv", SAS_VERSION)
        .append_pair("ss", services)
        .append_pair("srt", resource_types)
        .append_pair("sp", permissions)
        .append_pair("se", &expiry)
        .append_pair("spr", protocol)
        .append_pair("sig", &signature);
    query.query().unwrap().to_string()
}

fn signature_of(sas: &str) -> String {
    let url = reqwest::Url::parse(&format!("https://x.invalid/?{sas}")).unwrap();
    url.query_pairs().find(|(k, _)| k == "sig").map(|(_, v)| v.into_owned()).unwrap()
}

/// The same SAS with one signature byte changed.
fn tampered(sas: &str) -> String {
    let mut bytes = STANDARD.decode(signature_of(sas)).unwrap();
    bytes[0] ^= 0x01;
    let mut url = reqwest::Url::parse(&format!("https://x.invalid/?{sas}")).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let value = if k == "sig" { STANDARD.encode(&bytes) } else { v.into_owned() };
            (k.into_owned(), value)
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    url.query().unwrap().to_string()
}

fn context(dir: &Path, secrets: Vec<String>) -> StepContext {
    StepContext::new("run-1", "publish", dir).with_secrets(secrets)
}

/// The discovery document and JWKS as the product writes them (keypair, then oidc), in `dir`.
async fn oidc_documents(dir: &Path, issuer: &str) -> StepOutcome {
    let ctx = context(dir, Vec::new());
    let keys = json!({"private_key_path": "sa.key", "public_key_path": "sa.pub", "bits": 2048});
    Keypair.run(&ctx, &keys).await.expect("key pair");
    let docs = json!({
        "issuer_url": issuer, "public_key_path": "sa.pub",
        "discovery_path": "openid-configuration.json", "jwks_path": "jwks.json",
    });
    Oidc.run(&ctx, &docs).await.expect("oidc documents")
}

fn upload(container_url: &str, blob_name: &str, file: &str, sas: &str) -> Value {
    json!({"action": "upload", "container_url": container_url, "blob_name": blob_name, "file": file, "sas": sas})
}

fn assert_no_secret(sas: &str, what: &str, text: &str) {
    let signature = signature_of(sas);
    let encoded = reqwest::Url::parse(&format!("https://x.invalid/?{sas}")).unwrap();
    let raw = encoded.query().unwrap().split('&').find_map(|p| p.strip_prefix("sig=")).unwrap().to_string();
    assert!(
        !text.contains(&signature) && !text.contains(&raw) && !text.contains("sig="),
        "{what} leaks the SAS: {text}"
    );
}

#[tokio::test]
async fn publishes_the_oidc_documents_with_a_sas_and_they_read_back_anonymously() {
    let azurite = Azurite::start();
    let blob = azurite.blob();
    let work = tempfile::tempdir().unwrap();
    let container_url = azurite.container_url("oidc-issuer");
    let sas = account_sas("rwdlac");
    let ctx = context(work.path(), vec![sas.clone()]);

    let ensure =
        json!({"action": "ensure_container", "container_url": container_url, "public_access": "blob", "sas": sas});
    let created = blob.run(&ctx, &ensure).await.expect("container created");
    assert_eq!(created.outputs["created"], json!(true));
    assert_eq!(created.outputs["public_access"], json!("blob"));
    let again = blob.run(&ctx, &ensure).await.expect("existing container accepted");
    assert_eq!(again.outputs["created"], json!(false));
    assert_eq!(again.outputs["public_access"], json!("blob"));

    let docs = oidc_documents(work.path(), &container_url).await;
    let http = azurite.http();
    for (name_output, file_output) in [("discovery_blob_name", "discovery_path"), ("jwks_blob_name", "jwks_path")] {
        let name = docs.outputs[name_output].as_str().unwrap();
        let file = docs.outputs[file_output].as_str().unwrap();
        let first = blob.run(&ctx, &upload(&container_url, name, file, &sas)).await.expect("upload");
        let url = format!("{container_url}/{name}");
        assert_eq!(first.outputs["uploaded"], json!(true), "{name}");
        assert_eq!(first.outputs["url"], json!(url));
        assert!(first.outputs["etag"].is_string());
        let written = std::fs::read(file).unwrap();
        let md5 = first.outputs["content_md5"].as_str().unwrap().to_string();
        assert_eq!(STANDARD.decode(&md5).unwrap().len(), 16);
        for text in [Value::Object(first.outputs.clone()).to_string(), first.evidence.to_string()] {
            assert_no_secret(&sas, "a successful upload", &text);
        }

        // Anonymous, as Entra ID reads the issuer: the exact bytes, as JSON.
        let response = http.get(&url).send().await.expect("anonymous GET");
        assert_eq!(response.status(), 200, "{url}");
        assert_eq!(response.headers()["content-type"], "application/json");
        assert_eq!(response.bytes().await.unwrap().as_ref(), written.as_slice(), "{name}");

        // The same content again: nothing to write.
        let second = blob.run(&ctx, &upload(&container_url, name, file, &sas)).await.expect("second upload");
        assert_eq!(second.outputs["uploaded"], json!(false), "{name}");
        assert_eq!(second.outputs["etag"], first.outputs["etag"]);
        assert_eq!(second.outputs["content_md5"], json!(md5));
    }

    // Changed content is uploaded again.
    let changed = json!({"action": "upload", "container_url": container_url, "blob_name": "openid/v1/jwks",
        "content": "{\"keys\":[]}", "sas": sas});
    let replaced = blob.run(&ctx, &changed).await.expect("changed content");
    assert_eq!(replaced.outputs["uploaded"], json!(true));
    let body = http.get(format!("{container_url}/openid/v1/jwks")).send().await.unwrap().text().await.unwrap();
    assert_eq!(body, "{\"keys\":[]}");
}

#[tokio::test]
async fn a_tampered_sas_is_refused_permanently_with_the_azure_code_and_never_shown() {
    let azurite = Azurite::start();
    let blob = azurite.blob();
    let work = tempfile::tempdir().unwrap();
    let container_url = azurite.container_url("oidc");
    let good = account_sas("rwdlac");
    let ensure =
        json!({"action": "ensure_container", "container_url": container_url, "public_access": "blob", "sas": good});
    blob.run(&context(work.path(), vec![good.clone()]), &ensure).await.expect("container");

    let bad = tampered(&good);
    // The runner's secret list is left empty here: the kind must scrub the SAS on its own.
    let ctx = context(work.path(), Vec::new());
    let inputs = json!({"action": "upload", "container_url": container_url, "blob_name": ".well-known/openid-configuration",
        "content": "{}", "sas": bad});
    let error: StepError = blob.run(&ctx, &inputs).await.expect_err("a tampered SAS must be refused");
    assert_eq!(error.class, ErrorClass::Permanent, "{error}");
    // Azure answers 403 AuthenticationFailed; Azurite 3.37 answers 403 AuthorizationFailure.
    let code = error.code.as_deref().unwrap_or_default();
    assert!(["AuthenticationFailed", "AuthorizationFailure"].contains(&code), "{error}");
    assert!(error.hint.as_deref().unwrap_or_default().contains("listAccountSas"), "{:?}", error.hint);
    assert_eq!(error.evidence["status"], json!(403));
    assert_eq!(error.evidence["action"], json!("upload"));
    assert_no_secret(&bad, "the error", &serde_json::to_string(&error).unwrap());
    assert_no_secret(&bad, "the error's Display", &error.to_string());
}

#[tokio::test]
async fn a_write_only_sas_uploads_without_the_comparison_it_cannot_make() {
    let azurite = Azurite::start();
    let blob = azurite.blob();
    let work = tempfile::tempdir().unwrap();
    let container_url = azurite.container_url("writeonly");
    let admin = account_sas("rwdlac");
    let ensure = json!({"action": "ensure_container", "container_url": container_url, "sas": admin});
    let created = blob.run(&context(work.path(), Vec::new()), &ensure).await.expect("container");
    assert_eq!(created.outputs["public_access"], json!("none"));

    let write_only = account_sas("cw");
    let inputs = json!({"action": "upload", "container_url": container_url, "blob_name": "a.json", "content": "{}", "sas": write_only});
    let ctx = context(work.path(), Vec::new());
    let outcome = blob.run(&ctx, &inputs).await.expect("a SAS without `r` can still write");
    assert_eq!(outcome.outputs["uploaded"], json!(true));
    assert_eq!(outcome.evidence["compared_existing"], json!(false));

    // A SAS without `w` cannot, and the hint says which permission is missing.
    let read_only = account_sas("r");
    let mut refused = inputs.clone();
    refused["sas"] = json!(read_only);
    refused["content"] = json!("{\"changed\":true}");
    let error = blob.run(&ctx, &refused).await.expect_err("read-only SAS");
    assert_eq!(error.code.as_deref(), Some("AuthorizationPermissionMismatch"), "{error}");
    assert_eq!(error.class, ErrorClass::Permanent);
    assert!(error.hint.unwrap().contains("signedPermission"));
}
