//! `--generate-ssh`, as `util.GenerateSSHKeys`: an RSA 4096 key, the private half as PKCS#1
//! PEM, the public half in authorized_keys form (`ssh-rsa AAAA…`).

use base64::Engine;
use rsa::pkcs1::{EncodeRsaPrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;

/// An SSH string or mpint: a 4-byte big-endian length, then the bytes.
fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// An unsigned big integer as an SSH mpint (a leading zero when the top bit is set).
fn mpint(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.first().is_some_and(|b| b & 0x80 != 0) {
        let mut padded = vec![0u8];
        padded.extend_from_slice(bytes);
        field(out, &padded);
    } else {
        field(out, bytes);
    }
}

pub fn authorized_key(key: &rsa::RsaPublicKey) -> Vec<u8> {
    let mut blob = Vec::new();
    field(&mut blob, b"ssh-rsa");
    mpint(&mut blob, &key.e().to_bytes_be());
    mpint(&mut blob, &key.n().to_bytes_be());
    format!("ssh-rsa {}\n", base64::engine::general_purpose::STANDARD.encode(blob)).into_bytes()
}

/// (private PEM, public authorized_keys line).
pub async fn generate() -> Result<(Vec<u8>, Vec<u8>), String> {
    tokio::task::spawn_blocking(|| {
        let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 4096).map_err(|e| e.to_string())?;
        let private = key.to_pkcs1_pem(LineEnding::LF).map_err(|e| e.to_string())?;
        Ok((private.as_bytes().to_vec(), authorized_key(&key.to_public_key())))
    })
    .await
    .map_err(|e| e.to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpints_get_a_leading_zero_when_the_top_bit_is_set() {
        let mut blob = Vec::new();
        field(&mut blob, b"ssh-rsa");
        mpint(&mut blob, &[1, 0, 1]);
        mpint(&mut blob, &[0xC5]);
        assert_eq!(
            blob,
            [0, 0, 0, 7, b's', b's', b'h', b'-', b'r', b's', b'a', 0, 0, 0, 3, 1, 0, 1, 0, 0, 0, 2, 0, 0xC5]
        );
    }
}
