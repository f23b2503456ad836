//! The sandbox's own certificate authority and loopback server certificates.
//!
//! azure_core refuses bearer tokens over plain HTTP and azure_identity refuses a plain-HTTP
//! authority, so the sandbox must speak TLS; clients trust the CA explicitly. Leaves are
//! `CA:FALSE` with EKU serverAuth: rustls-webpki (kube-rs) refuses a CA certificate used as
//! a server certificate.

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

/// A certificate authority that issues loopback server certificates. One authority can
/// serve several listeners (the Azure services and every Kubernetes API server), so a
/// client trusting one PEM reaches all of them.
pub struct CertificateAuthority {
    issuer: Issuer<'static, KeyPair>,
    ca_der: CertificateDer<'static>,
    ca_pem: String,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority").finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// A fresh CA with its own key.
    pub fn generate(common_name: &str) -> Result<CertificateAuthority, Error> {
        let ca_key = KeyPair::generate().map_err(cert_error)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
        ca_params.distinguished_name.push(DnType::CommonName, common_name);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(cert_error)?;
        Ok(CertificateAuthority {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().clone(),
            issuer: Issuer::new(ca_params, ca_key),
        })
    }

    /// The CA certificate clients must trust.
    pub fn pem(&self) -> &str {
        &self.ca_pem
    }

    /// A rustls server config with a fresh leaf for `127.0.0.1` / `localhost`, offering
    /// the given ALPN protocols.
    pub(crate) fn server_config(&self, alpn: &[&[u8]]) -> Result<Arc<rustls::ServerConfig>, Error> {
        self.server_config_for(&[], alpn)
    }

    /// Like [`server_config`](Self::server_config), with `names` (DNS names, wildcards allowed)
    /// among the leaf's subject alternative names beside the loopback ones.
    pub(crate) fn server_config_for(
        &self,
        names: &[String],
        alpn: &[&[u8]],
    ) -> Result<Arc<rustls::ServerConfig>, Error> {
        let server_key = KeyPair::generate().map_err(cert_error)?;
        let mut server_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
        server_params.distinguished_name.push(DnType::CommonName, names.first().map_or("127.0.0.1", String::as_str));
        server_params.is_ca = IsCa::ExplicitNoCa;
        server_params.subject_alt_names = vec![
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::DnsName("localhost".try_into().map_err(cert_error)?),
        ];
        for name in names {
            server_params.subject_alt_names.push(SanType::DnsName(name.clone().try_into().map_err(cert_error)?));
        }
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        server_params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        let server_cert = server_params.signed_by(&server_key, &self.issuer).map_err(cert_error)?;

        let chain: Vec<CertificateDer<'static>> = vec![server_cert.der().clone(), self.ca_der.clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
        // An explicit provider, so nothing depends on a process-wide default being installed.
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| Error::Tls(e.to_string()))?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Arc::new(config))
    }
}

/// A server config for the Azure services (HTTP/2 or HTTP/1.1) signed by `ca`, naming `names`
/// too (Azure's public host names when the sandbox answers as them).
pub(crate) fn azure_services(ca: &CertificateAuthority, names: &[String]) -> Result<TlsMaterial, Error> {
    let server_config = ca.server_config_for(names, &[b"h2", b"http/1.1"])?;
    Ok(TlsMaterial { ca_pem: ca.pem().to_string(), server_config })
}
