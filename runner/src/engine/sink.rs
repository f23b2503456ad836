//! Where everything the engine says goes. What the journal keeps is appended first, and only
//! once that commit is durable are reporters told, so no person or program ever hears of a step
//! the journal could still lose. Progress that the journal does not keep (a step starting whose
//! start is committed with its end, a skip, a cancellation under way) goes to reporters alone.

use runbook_journal::{JournalWriter, NewEvent};
use tokio::sync::mpsc::UnboundedSender;

use crate::engine::events::EngineEvent;

#[derive(Clone)]
pub struct EventSink {
    writer: JournalWriter,
    reporters: UnboundedSender<EngineEvent>,
}

impl EventSink {
    pub fn new(writer: JournalWriter, reporters: UnboundedSender<EngineEvent>) -> Self {
        EventSink { writer, reporters }
    }

    /// Appends `events` in one commit, then tells reporters `then`.
    pub async fn record(
        &self,
        events: Vec<NewEvent>,
        then: impl IntoIterator<Item = EngineEvent>,
    ) -> anyhow::Result<()> {
        if !events.is_empty() {
            self.writer.append(events).await?;
        }
        then.into_iter().for_each(|event| self.progress(event));
        Ok(())
    }

    /// Tells reporters something the journal does not keep.
    pub fn progress(&self, event: EngineEvent) {
        // Reporters gone (the process is ending) must not stop the run from being journaled.
        let _ = self.reporters.send(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runbook_journal::{EventData, GateApproved, Journal, NewRun};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reporters_hear_of_an_event_only_once_the_journal_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let journal = std::sync::Arc::new(Journal::open(&dir.path().join("journal.db")).unwrap());
        journal
            .create_run(&NewRun {
                id: "r".into(),
                runbook: "demo".into(),
                runbook_digest: "d".into(),
                vars: serde_json::json!({}),
                who: serde_json::json!({}),
            })
            .unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        // The reporter looks at the journal the moment it is told, on another thread.
        let reading = journal.clone();
        let reporter = tokio::spawn(async move {
            let mut seen = Vec::new();
            while let Some(event) = rx.recv().await {
                let journaled = reading.events_for_run("r").unwrap().iter().any(|e| e.kind() == "gate_approved");
                seen.push((event, journaled));
            }
            seen
        });
        let sink = EventSink::new(journal.writer().unwrap(), tx);
        let approved = GateApproved {
            by: "ops".into(),
            persona: None,
            at: "2026-01-01T00:00:00Z".into(),
            comment: None,
            plan: None,
        };
        sink.record(
            vec![NewEvent::new("r", EventData::GateApproved(approved))],
            [EngineEvent::RunCancelling { reason: "told".into() }],
        )
        .await
        .unwrap();
        drop(sink);
        let seen = reporter.await.unwrap();
        assert_eq!(seen.len(), 1);
        assert!(matches!(&seen[0], (EngineEvent::RunCancelling { reason }, true) if reason == "told"));
    }
}
