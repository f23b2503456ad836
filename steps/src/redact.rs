//! Replacing secrets in text that is kept (evidence, errors) or shown: every whole occurrence,
//! and the pieces a cut leaves behind. A tail of a program's output can start inside a long
//! secret (the last 2,000 characters of a 6 KB kubeconfig are its client key), end inside one, or
//! lie wholly within one; replacing whole occurrences only would keep those pieces.

/// What a secret, or a piece of one, is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Pieces shorter than this are not taken for part of a secret: a few characters that happen to
/// begin or end a secret match ordinary text too often, and say nothing of the secret.
pub const MIN_PIECE: usize = 16;

/// `text` with every secret of `secrets`, and every piece of one at its start or end (or the
/// whole text, when it lies within a secret), replaced by [`REDACTED`]. Longer secrets should
/// come first, so that one containing another is replaced whole.
pub fn redact<S: AsRef<str>>(text: &str, secrets: &[S]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().map(AsRef::as_ref).filter(|s| !s.is_empty()) {
        if out.contains(secret) {
            out = out.replace(secret, REDACTED);
        }
    }
    for secret in secrets.iter().map(AsRef::as_ref).filter(|s| s.len() > MIN_PIECE) {
        out = redact_pieces(&out, secret);
    }
    out
}

/// Whether [`redact`] would change `text`.
pub fn finds<S: AsRef<str>>(text: &str, secrets: &[S]) -> bool {
    secrets.iter().map(AsRef::as_ref).filter(|s| !s.is_empty()).any(|s| text.contains(s))
        || secrets.iter().map(AsRef::as_ref).filter(|s| s.len() > MIN_PIECE).any(|s| redact_pieces(text, s) != text)
}

/// `text` with a piece of `secret` at its start or end replaced, or [`REDACTED`] when all of it
/// lies within the secret. A tail's leading `…` (see `capture::tail`) is kept and looked past.
fn redact_pieces(text: &str, secret: &str) -> String {
    match text.strip_prefix('…') {
        Some(rest) => format!("…{}", redact_piece_ends(rest, secret)),
        None => redact_piece_ends(text, secret),
    }
}

fn redact_piece_ends(text: &str, secret: &str) -> String {
    if text.len() < MIN_PIECE {
        return text.to_string();
    }
    let mut out = text.to_string();
    // The text starts with a piece of the secret: where its opening appears in the secret, the
    // longest run of the text that goes on matching it.
    let opening = &out[..char_boundary_at_or_after(&out, MIN_PIECE)];
    let start = secret
        .match_indices(opening)
        .map(|(at, _)| common_prefix(out.as_bytes(), &secret.as_bytes()[at..]))
        .max()
        .map(|len| char_boundary_at_or_before(&out, len));
    if let Some(len) = start.filter(|len| *len >= MIN_PIECE) {
        out = format!("{REDACTED}{}", &out[len..]);
    }
    if out.len() < MIN_PIECE + REDACTED.len() {
        return out;
    }
    // The text ends with a piece of the secret, found the same way from its ending.
    let ending = &out[char_boundary_at_or_before(&out, out.len() - MIN_PIECE)..];
    let end = secret
        .match_indices(ending)
        .map(|(at, piece)| common_suffix(out.as_bytes(), &secret.as_bytes()[..at + piece.len()]))
        .max()
        .map(|len| out.len() - char_boundary_at_or_after(&out, out.len() - len));
    if let Some(len) = end.filter(|len| *len >= MIN_PIECE) {
        out = format!("{}{REDACTED}", &out[..out.len() - len]);
    }
    out
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count()
}

fn char_boundary_at_or_after(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at.min(text.len())
}

fn char_boundary_at_or_before(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0qHj2S2nEYbmPDvAh3i\n-----END RSA PRIVATE KEY-----\n";

    #[test]
    fn whole_occurrences_go() {
        assert_eq!(redact(&format!("a {KEY} b"), &[KEY]), "a <redacted> b");
    }

    #[test]
    fn a_text_that_starts_or_ends_inside_a_secret_loses_that_piece() {
        let tail = format!("…{}", &KEY[20..]);
        assert_eq!(redact(&tail, &[KEY]), "…<redacted>");
        let head = format!("{} (cut)", &KEY[..KEY.len() - 30]);
        assert_eq!(redact(&head, &[KEY]), "<redacted> (cut)");
        let kept = format!("config:\n{}", &KEY[..60]);
        assert_eq!(redact(&kept, &[KEY]), "config:\n<redacted>");
        let both = format!("{}middle{}", &KEY[70..], &KEY[..40]);
        assert_eq!(redact(&both, &[KEY]), "<redacted>middle<redacted>");
    }

    #[test]
    fn a_text_within_a_secret_goes_whole() {
        assert_eq!(redact(&KEY[10..50], &[KEY]), REDACTED);
    }

    #[test]
    fn short_overlaps_and_unrelated_text_stay() {
        let text = format!("exit status 1: {}", &KEY[KEY.len() - 5..]);
        assert_eq!(redact(&text, &[KEY]), text);
        assert_eq!(redact("nothing secret here at all", &[KEY]), "nothing secret here at all");
        assert!(!finds("nothing secret here at all", &[KEY]));
        assert!(finds(&KEY[30..90], &[KEY]));
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let secret = "ключ-секрет-очень-длинный-и-тайный";
        let text = format!("…{}", &secret[secret.char_indices().nth(6).unwrap().0..]);
        assert_eq!(redact(&text, &[secret]), "…<redacted>");
        assert_eq!(redact("ééééééééééééééééééé", &[secret]), "ééééééééééééééééééé");
    }
}
