//! The hash chain over events.
//!
//! Each event's hash is a keyed MAC over an unambiguous encoding of its fields, including the
//! previous event's hash, so altering, inserting or deleting any event breaks every hash after it
//! and cannot be repaired without the key.

use crate::keys::{ChainHasher, Keys};

/// The fields of a stored event that the hash covers. `data` is the exact stored text: hashing a
/// re-serialization could differ from what was hashed when the event was written.
pub(crate) struct ChainFields<'a> {
    pub prev: &'a str,
    pub seq: i64,
    pub ts: &'a str,
    pub run_id: &'a str,
    pub kind: &'a str,
    pub step: Option<&'a str>,
    pub attempt: Option<i64>,
    pub data: &'a str,
}

/// Version tag of the encoding below; part of the hashed bytes so a future encoding can never
/// collide with this one.
const ENCODING: &[u8] = b"runbook-journal-event-v1";

impl ChainFields<'_> {
    /// Every variable-length field is prefixed with its length, and every optional field with a
    /// presence byte, so no two different events share an encoding. The hash is fed these bytes
    /// piece by piece ([`ChainFields::hash`]); this buffer is what the pieces add up to.
    #[cfg(test)]
    fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            ENCODING.len()
                + self.prev.len()
                + self.ts.len()
                + self.run_id.len()
                + self.kind.len()
                + self.step.map_or(0, str::len)
                + self.data.len()
                + 80,
        );
        put_bytes(&mut out, ENCODING);
        put_bytes(&mut out, self.prev.as_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        put_bytes(&mut out, self.ts.as_bytes());
        put_bytes(&mut out, self.run_id.as_bytes());
        put_bytes(&mut out, self.kind.as_bytes());
        match self.step {
            None => out.push(0),
            Some(step) => {
                out.push(1);
                put_bytes(&mut out, step.as_bytes());
            }
        }
        match self.attempt {
            None => out.push(0),
            Some(attempt) => {
                out.push(1);
                out.extend_from_slice(&attempt.to_be_bytes());
            }
        }
        put_bytes(&mut out, self.data.as_bytes());
        out
    }

    /// The keyed hash of [`ChainFields::canonical_bytes`], fed in place rather than copied.
    pub(crate) fn hash(&self, keys: &Keys) -> String {
        let mut mac = keys.chain_hasher();
        let put = |mac: &mut ChainHasher, bytes: &[u8]| {
            mac.update(&(bytes.len() as u64).to_be_bytes());
            mac.update(bytes);
        };
        put(&mut mac, ENCODING);
        put(&mut mac, self.prev.as_bytes());
        mac.update(&self.seq.to_be_bytes());
        put(&mut mac, self.ts.as_bytes());
        put(&mut mac, self.run_id.as_bytes());
        put(&mut mac, self.kind.as_bytes());
        match self.step {
            None => mac.update(&[0]),
            Some(step) => {
                mac.update(&[1]);
                put(&mut mac, step.as_bytes());
            }
        }
        match self.attempt {
            None => mac.update(&[0]),
            Some(attempt) => {
                mac.update(&[1]);
                mac.update(&attempt.to_be_bytes());
            }
        }
        put(&mut mac, self.data.as_bytes());
        mac.finish()
    }
}

#[cfg(test)]
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(run_id: &'a str, kind: &'a str, step: Option<&'a str>) -> ChainFields<'a> {
        ChainFields {
            prev: "",
            seq: 1,
            ts: "2024-01-01T00:00:00.000000Z",
            run_id,
            kind,
            step,
            attempt: None,
            data: "{}",
        }
    }

    #[test]
    fn the_hash_fed_in_place_is_the_hash_of_the_canonical_bytes() {
        let keys = Keys::from_master(&[1; 32]);
        let mut examples = vec![fields("r", "step_finished", Some("s[a]")), fields("", "", None)];
        examples[0].attempt = Some(3);
        examples[0].prev = "ab";
        examples[1].data = "";
        for f in examples {
            let mut whole = keys.chain_hasher();
            whole.update(&f.canonical_bytes());
            assert_eq!(f.hash(&keys), whole.finish());
        }
    }

    #[test]
    fn shifting_bytes_between_fields_changes_the_hash() {
        let keys = Keys::from_master(&[1; 32]);
        let a = fields("ab", "c", None).hash(&keys);
        let b = fields("a", "bc", None).hash(&keys);
        assert_ne!(a, b);
        let none = fields("a", "b", None).hash(&keys);
        let empty = fields("a", "b", Some("")).hash(&keys);
        assert_ne!(none, empty);
    }
}
