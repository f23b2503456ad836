//! The link a hand-off makes between two journals: the importer's journal records the
//! exporter's chain head, which must be an event of the exporter's journal, and that journal
//! should record the export of the very same file.

use runbook_journal::{EventData, HANDOFF_EXPORTED, HANDOFF_IMPORTED, Journal};
use serde::Serialize;

/// One import, checked against the other journals given.
#[derive(Serialize)]
pub struct LinkCheck {
    /// The importing journal (its index among those given) and the import's run.
    pub journal: usize,
    pub run_id: String,
    pub file_sha256: String,
    /// The exporter's journal, when one of those given holds the chain head.
    pub exporter_journal: Option<usize>,
    /// Whether that journal also records exporting this file.
    pub export_recorded: bool,
    /// Why the link does not hold; None when it holds or cannot be checked.
    pub problem: Option<String>,
}

/// Checks every import found in `journals` against the others. With a single journal the
/// exporter's is not there to check against, which is not a problem in itself.
pub fn check_links(journals: &[&Journal]) -> Result<Vec<LinkCheck>, runbook_journal::Error> {
    let mut checks = Vec::new();
    for (index, journal) in journals.iter().enumerate() {
        for event in journal.events_since(None)?.into_iter().filter(|e| e.kind() == HANDOFF_IMPORTED) {
            let EventData::HandoffImported(imported) = &event.data else { continue };
            let head = &imported.provenance.chain_head;
            let mut exporter_journal = None;
            for (other, candidate) in journals.iter().enumerate() {
                if other != index && candidate.event_hash(head.seq)?.as_deref() == Some(head.hash.as_str()) {
                    exporter_journal = Some(other);
                }
            }
            let export_recorded = match exporter_journal {
                Some(other) => journals[other].events_since(None)?.iter().any(|e| {
                    e.kind() == HANDOFF_EXPORTED
                        && matches!(&e.data, EventData::HandoffExported(x) if x.file_sha256 == imported.file_sha256)
                }),
                None => false,
            };
            let problem = match exporter_journal {
                None if journals.len() > 1 => Some(format!(
                    "the exporter's chain head (event {}) is in none of the other journals given: the exporter's journal is missing here or was altered",
                    head.seq
                )),
                Some(_) if !export_recorded => {
                    Some("the exporter's journal holds the chain head but does not record exporting this file".into())
                }
                _ => None,
            };
            checks.push(LinkCheck {
                journal: index,
                run_id: event.run_id.clone(),
                file_sha256: imported.file_sha256.clone(),
                exporter_journal,
                export_recorded,
                problem,
            });
        }
    }
    Ok(checks)
}
