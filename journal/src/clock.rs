/// An instant in UTC as RFC 3339 with exactly six fractional digits. The fixed width makes the
/// stored text sort like the instant it names, so `ts >= ?` comparisons work on the index.
pub(crate) fn format_ts(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_have_fixed_width_microseconds() {
        let ts: jiff::Timestamp = "2024-03-01T10:00:00Z".parse().unwrap();
        assert_eq!(format_ts(ts), "2024-03-01T10:00:00.000000Z");
        let ts: jiff::Timestamp = "2024-03-01T10:00:00.123456789Z".parse().unwrap();
        assert_eq!(format_ts(ts), "2024-03-01T10:00:00.123456Z");
    }

    #[test]
    fn events_are_stamped_by_the_journal_s_clock_across_midnight() {
        let dir = tempfile::tempdir().unwrap();
        let clock = runbook_clock::Clock::simulated("2026-11-23T23:59:59.5Z".parse().unwrap());
        let journal = crate::Journal::open_with_clock(&dir.path().join("j.db"), clock.clone()).unwrap();
        let run = crate::NewRun {
            id: "r1".into(),
            runbook: "rb".into(),
            runbook_digest: "d".into(),
            vars: serde_json::json!({}),
            who: serde_json::json!({}),
        };
        journal.create_run(&run).unwrap();
        clock.advance(std::time::Duration::from_secs(1));
        let waiting = crate::GateWaiting { prompt: "p".into(), ..Default::default() };
        journal.append(&[crate::NewEvent::new("r1", crate::EventData::GateWaiting(waiting))]).unwrap();
        let stamps: Vec<String> = journal.events_for_run("r1").unwrap().into_iter().map(|e| e.ts).collect();
        assert_eq!(stamps.len(), 2);
        assert!(stamps[0].starts_with("2026-11-23T23:59:59."), "{stamps:?}");
        assert!(stamps[1].starts_with("2026-11-24T00:00:00."), "{stamps:?}");
        let report = journal.verify().unwrap();
        assert!(report.problems.is_empty(), "a chain that crosses midnight verifies: {:?}", report.problems);
        let since: jiff::Timestamp = "2026-11-24T00:00:00Z".parse().unwrap();
        assert_eq!(journal.events_since(Some(since)).unwrap().len(), 1, "`since` compares instants");
    }
}
