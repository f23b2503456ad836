mod common;

use common::TestJournal;
use runbook_journal::Error;

#[test]
fn digest_is_stable_and_keyed() {
    let a = TestJournal::new();
    let b = TestJournal::new();
    let d1 = a.journal.digest(b"client-secret");
    assert_eq!(d1, a.journal.digest(b"client-secret"));
    assert!(d1.starts_with("hmac-sha256:"));
    assert_eq!(d1.len(), "hmac-sha256:".len() + 64);
    assert_ne!(d1, a.journal.digest(b"client-secreT"));
    assert_ne!(d1, b.journal.digest(b"client-secret"), "different key, same digest");
}

#[test]
fn sealed_values_roundtrip_without_plaintext() {
    let t = TestJournal::new();
    let secret = b"super-secret-password-123";
    let sealed = t.journal.seal(secret);
    assert!(sealed.starts_with("sealed:v1:"));
    assert!(!sealed.contains("super-secret"));
    assert_eq!(t.journal.unseal(&sealed).unwrap(), secret);
    assert_ne!(sealed, t.journal.seal(secret), "nonce must be random");
    assert_eq!(t.journal.unseal(&t.journal.seal(b"")).unwrap(), b"");
}

#[test]
fn another_journal_cannot_unseal() {
    let a = TestJournal::new();
    let b = TestJournal::new();
    let sealed = a.journal.seal(b"secret");
    assert!(matches!(b.journal.unseal(&sealed), Err(Error::Unseal(_))));
    assert!(matches!(a.journal.unseal("secret"), Err(Error::Unseal(_))));
}
