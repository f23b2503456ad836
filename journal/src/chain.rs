//! The hash chain over events.
//!
//! Each event's hash is a keyed MAC over an unambiguous encoding of its fields, including the
//! previous event's hash, so altering, inserting or deleting any event breaks every hash after it
//! and cannot be repaired without the key.

use crate::keys::Keys;

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
    /// presence byte, so no two different events share an encoding.
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

    pub(crate) fn hash(&self, keys: &Keys) -> String {
        keys.chain_hash(&self.canonical_bytes())
    }
}

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
