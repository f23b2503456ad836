//! The sandbox's own certificate authority and loopback server certificate.
//!
//! azure_core refuses bearer tokens over plain HTTP and azure_identity refuses a plain-HTTP
//! authority, so the sandbox must speak TLS; clients trust the CA explicitly.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::Error;

pub(crate) struct TlsMaterial {
    pub ca_pem: String,
    pub server_config: Arc<rustls::ServerConfig>,
}

fn cert_error(e: rcgen::Error) -> Error {
    Error::Certificate(e.to_string())
}

/// A fresh CA and a server certificate for `127.0.0.1` / `localhost` signed by it.
pub(crate) fn generate() -> Result<TlsMaterial, Error> {
    let ca_key = KeyPair::generate().map_err(cert_error)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
    ca_params.distinguished_name.push(DnType::CommonName, "runbook sandbox CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages =
        vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(cert_error)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let server_key = KeyPair::generate().map_err(cert_error)?;
    let mut server_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
    server_params.distinguished_name.push(DnType::CommonName, "127.0.0.1");
    server_params.subject_alt_names = vec![
        SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        SanType::DnsName("localhost".try_into().map_err(cert_error)?),
    ];
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    server_params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    let server_cert = server_params.signed_by(&server_key, &issuer).map_err(cert_error)?;

    let chain: Vec<CertificateDer<'static>> = vec![server_cert.der().clone(), ca_cert.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    // An explicit provider, so nothing depends on a process-wide default being installed.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| Error::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsMaterial { ca_pem: ca_cert.pem(), server_config: Arc::new(config) })
}
