//! When a hand-off may replace values this journal already holds for the same checkpoint.
//!
//! A rotated secret has to travel: the exporter runs the step that minted it again and exports
//! again, and the importer takes the new file into the journal that holds the old one. So a
//! hand-off replaces the values of an earlier import when both come from the same source (the
//! same signer and the same exporter's journal, which the file names) and it is newer in that
//! journal's own order (a later chain head, which only grows: no clock the importer cannot
//! check). An older or same-age one with other values would roll them back and is refused. Any
//! other source is refused as a mix-up or a forgery would be. Values this journal made itself
//! are replaced only when the importer says so (`--replace`), and that is journaled.

use std::collections::BTreeMap;

use runbook_journal::{HandoffImported, HandoffProvenance, Replaced};

/// The values of one checkpoint that differ from what the journal holds, and who holds them.
pub struct Conflict {
    pub checkpoint: String,
    pub values: Vec<String>,
    /// The run whose values stand now.
    pub run_id: String,
}

/// Why a conflict cannot be replaced; the import is refused with it.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// The values are this journal's own, and `--replace` was not given.
    Local { keys: Vec<String>, run_id: String },
    /// They came from a hand-off of another source (signer or journal), or from a file that
    /// does not name its journal.
    OtherSource { keys: Vec<String>, run_id: String, why: String },
    /// They came from the same source, from a hand-off as new as this one or newer.
    Rollback { keys: Vec<String>, run_id: String, theirs: i64, newest: i64 },
}

/// The source of a hand-off: its signer and the exporter's journal, when the file names it.
fn source(provenance: &HandoffProvenance) -> Option<(&str, &str)> {
    Some((provenance.signer.as_str(), provenance.journal.as_deref()?))
}

/// Decides every conflict: what the import replaces, or why it is refused. `signer` is the key
/// the signature verified with; `imports` are this journal's earlier imports by run.
pub fn decide(
    conflicts: &[Conflict],
    incoming: &HandoffProvenance,
    signer: &str,
    imports: &BTreeMap<String, HandoffImported>,
    replace_local: bool,
) -> Result<Vec<Replaced>, Refusal> {
    let mut replaced = Vec::new();
    for conflict in conflicts {
        let keys: Vec<String> = conflict.values.iter().map(|v| format!("{}.{v}", conflict.checkpoint)).collect();
        let run_id = conflict.run_id.clone();
        let Some(earlier) = imports.get(&conflict.run_id) else {
            if !replace_local {
                return Err(Refusal::Local { keys, run_id });
            }
            replaced.push(Replaced {
                checkpoint: conflict.checkpoint.clone(),
                values: conflict.values.clone(),
                run_id,
                file_sha256: None,
            });
            continue;
        };
        let why = match (source(&earlier.provenance), source(incoming)) {
            _ if incoming.signer != signer => {
                Some(format!("this hand-off names signer {} but was signed by {signer}", incoming.signer))
            }
            (None, _) => Some("that hand-off does not name its journal (it was made by an older build)".to_string()),
            (_, None) => Some("this hand-off does not name its journal (it was made by an older build)".to_string()),
            (Some((before_signer, _)), Some((now_signer, _))) if before_signer != now_signer => {
                Some(format!("that hand-off was signed by {before_signer}, this one by {now_signer}"))
            }
            (Some((_, before_journal)), Some((_, now_journal))) if before_journal != now_journal => {
                Some("that hand-off was exported from another journal than this one".to_string())
            }
            _ => None,
        };
        if let Some(why) = why {
            return Err(Refusal::OtherSource { keys, run_id, why });
        }
        // The newest hand-off of this source taken so far, not only the one holding the values:
        // after a newer one, no older one comes back, whatever was imported in between.
        let newest = imports
            .values()
            .filter(|i| source(&i.provenance) == source(incoming))
            .map(|i| i.provenance.chain_head.seq)
            .max()
            .unwrap_or(earlier.provenance.chain_head.seq);
        if incoming.chain_head.seq <= newest {
            return Err(Refusal::Rollback { keys, run_id, theirs: incoming.chain_head.seq, newest });
        }
        replaced.push(Replaced {
            checkpoint: conflict.checkpoint.clone(),
            values: conflict.values.clone(),
            run_id,
            file_sha256: Some(earlier.file_sha256.clone()),
        });
    }
    Ok(replaced)
}

/// One line saying what an import replaced: "replaces handoff.secret of run R (the import of
/// file sha256 …)", or "of local run R (--replace)".
pub fn describe(replaced: &Replaced) -> String {
    let names: Vec<String> = replaced.values.iter().map(|v| format!("{}.{v}", replaced.checkpoint)).collect();
    match &replaced.file_sha256 {
        Some(sha) => {
            format!("replaces {} of run {} (the import of file sha256 {sha:.12})", names.join(", "), replaced.run_id)
        }
        None => format!("replaces {} of local run {} (--replace)", names.join(", "), replaced.run_id),
    }
}

impl Refusal {
    /// What the refusal says, and the hint.
    pub fn explain(&self) -> (String, String) {
        match self {
            Refusal::Local { keys, run_id } => (
                format!("this journal already holds other values for {} (run {run_id})", keys.join(", ")),
                "import into a fresh journal (--journal), run the runbook again to replace the values locally, or pass --replace to take the hand-off's values over this journal's own (the import records what it replaced)".into(),
            ),
            Refusal::OtherSource { keys, run_id, why } => (
                format!(
                    "this journal already holds other values for {} (run {run_id}), imported from another source: {why}",
                    keys.join(", ")
                ),
                "a hand-off replaces only an earlier one signed by the same key and exported from the same journal; import this one into a fresh journal (--journal), or check with the exporter which file is theirs".into(),
            ),
            Refusal::Rollback { keys, run_id, theirs, newest } => (
                format!(
                    "this journal already holds other values for {} (run {run_id}) from a hand-off of the same source as new as this one or newer (their chain head {newest}, this file's {theirs}): importing it would roll the values back",
                    keys.join(", ")
                ),
                "ask the exporter for a hand-off exported after the one imported (`runbook export` again writes one)".into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use runbook_journal::ChainHead;
    use serde_json::{Map, json};

    use super::*;

    fn provenance(signer: &str, journal: Option<&str>, seq: i64) -> HandoffProvenance {
        HandoffProvenance {
            who: json!({}),
            exported_at: String::new(),
            runbook: "phase1".into(),
            runbook_digest: String::new(),
            runs: Map::new(),
            chain_head: ChainHead { seq, hash: format!("h{seq}") },
            signer: signer.into(),
            journal: journal.map(String::from),
        }
    }

    fn imported(provenance: HandoffProvenance, sha: &str) -> HandoffImported {
        HandoffImported {
            file_sha256: sha.into(),
            provenance,
            recipient: String::new(),
            checkpoints: Map::new(),
            files: Map::new(),
            omitted_secrets: Vec::new(),
            replaces: Vec::new(),
        }
    }

    fn conflict(run_id: &str) -> Vec<Conflict> {
        vec![Conflict { checkpoint: "handoff".into(), values: vec!["secret".into()], run_id: run_id.into() }]
    }

    #[test]
    fn a_newer_hand_off_of_the_same_source_replaces_and_names_the_import_it_replaces() {
        let imports = BTreeMap::from([("r1".to_string(), imported(provenance("A", Some("J"), 10), "old"))]);
        let replaced = decide(&conflict("r1"), &provenance("A", Some("J"), 20), "A", &imports, false).unwrap();
        assert_eq!(replaced.len(), 1);
        assert_eq!(replaced[0].run_id, "r1");
        assert_eq!(replaced[0].file_sha256.as_deref(), Some("old"));
    }

    #[test]
    fn an_older_or_same_age_one_is_a_rollback_even_after_an_import_in_between() {
        let imports = BTreeMap::from([
            ("r1".to_string(), imported(provenance("A", Some("J"), 10), "a")),
            ("r2".to_string(), imported(provenance("A", Some("J"), 30), "b")),
            ("r3".to_string(), imported(provenance("A", Some("J"), 15), "c")),
        ]);
        for seq in [10, 20, 30] {
            let refused = decide(&conflict("r3"), &provenance("A", Some("J"), seq), "A", &imports, true);
            assert!(matches!(refused, Err(Refusal::Rollback { newest: 30, .. })), "{seq}: {refused:?}");
        }
    }

    #[test]
    fn another_signer_or_journal_or_an_unnamed_journal_is_another_source() {
        let imports = BTreeMap::from([("r1".to_string(), imported(provenance("A", Some("J"), 10), "a"))]);
        for (incoming, signer) in [
            (provenance("B", Some("J"), 20), "B"),
            (provenance("A", Some("K"), 20), "A"),
            (provenance("A", None, 20), "A"),
            (provenance("A", Some("J"), 20), "B"),
        ] {
            let refused = decide(&conflict("r1"), &incoming, signer, &imports, true);
            assert!(matches!(refused, Err(Refusal::OtherSource { .. })), "{refused:?}");
        }
    }

    #[test]
    fn local_values_need_replace_which_is_recorded() {
        let imports = BTreeMap::new();
        let incoming = provenance("A", Some("J"), 20);
        assert!(matches!(decide(&conflict("local"), &incoming, "A", &imports, false), Err(Refusal::Local { .. })));
        let replaced = decide(&conflict("local"), &incoming, "A", &imports, true).unwrap();
        assert_eq!(replaced[0].file_sha256, None);
        assert_eq!(replaced[0].run_id, "local");
    }
}
