//! Reuse or run: the one decision, made from what earlier attempts left in the journal, that
//! both `plan` (to show it) and `run`/`resume` (to act on it) use.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::plan::file_contents::changed_file_contents;
use crate::plan::prior::{Done, Prior};

/// Why a step runs when nothing of it is in the journal: the reason most steps of a first run
/// have, which a person is told once, not on every line.
pub const NOT_RUN_BEFORE: &str = "it has not run before";

/// What to do with one step instance, and why.
#[derive(Debug)]
pub enum Decision<'a> {
    /// Done before with the same inputs: its journaled outputs stand.
    Reuse(&'a Done),
    /// Run it; the reason is shown and journaled with its start.
    Run(String),
}

/// Decides for `instance` (of step `step`) with its inputs' keyed `digest` and per-input
/// digests. `rerun` holds the instances or steps the operator asked to run again.
pub fn decide<'a>(
    prior: &'a Prior,
    rerun: &HashSet<String>,
    instance: &str,
    step: &str,
    digest: &str,
    input_digests: &Map<String, Value>,
) -> Decision<'a> {
    if rerun.contains(instance) || rerun.contains(step) {
        return Decision::Run("the operator asked to run it again (--rerun)".into());
    }
    if let Some(interrupted) = prior.interrupted.get(instance) {
        return Decision::Run(format!(
            "attempt {} in run {} was interrupted before it finished{}",
            interrupted.attempt,
            interrupted.run_id,
            changed_inputs(&interrupted.input_digests, input_digests)
        ));
    }
    if let Some(failed) = prior.failed.get(instance) {
        return Decision::Run(format!(
            "attempt {} in run {} failed: {}{}",
            failed.attempt,
            failed.run_id,
            failed.message,
            changed_inputs(&failed.input_digests, input_digests)
        ));
    }
    match prior.done.get(instance) {
        None => Decision::Run(NOT_RUN_BEFORE.into()),
        Some(done) if done.digest == digest => {
            let changed =
                || done.changed_file().map(|path| format!("`{path}` changed since run {} vouched for it", done.run_id));
            let read_changed = || match changed_file_contents(&done.input_digests, input_digests) {
                files if files.is_empty() => None,
                files => {
                    Some(format!("the file {} names holds other content since run {}", files.join(", "), done.run_id))
                }
            };
            match prior.made_elsewhere(done).or_else(changed).or_else(read_changed) {
                Some(why) => Decision::Run(why),
                None => Decision::Reuse(done),
            }
        }
        Some(done) => Decision::Run(match changed_inputs(&done.input_digests, input_digests) {
            changed if changed.is_empty() => format!("its definition changed since run {}", done.run_id),
            changed => format!("since run {}{changed}", done.run_id),
        }),
    }
}

/// "; inputs changed: argv, env" — or nothing when no input changed.
fn changed_inputs(before: &Map<String, Value>, now: &Map<String, Value>) -> String {
    if before.is_empty() {
        return String::new();
    }
    let mut changed: Vec<&str> =
        now.iter().filter(|(k, v)| before.get(*k) != Some(*v)).map(|(k, _)| k.as_str()).collect();
    changed.extend(before.keys().filter(|k| !now.contains_key(*k)).map(String::as_str));
    if changed.is_empty() { String::new() } else { format!("; inputs changed: {}", changed.join(", ")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::prior::Attempt;
    use serde_json::json;

    fn digests(argv: &str) -> Map<String, Value> {
        json!({ "argv": argv }).as_object().unwrap().clone()
    }

    fn done(digest: &str, argv: &str) -> Done {
        Done {
            run_id: "r1".into(),
            seq: 1,
            digest: digest.into(),
            input_digests: digests(argv),
            outputs: Map::new(),
            published: false,
            made_on: None,
            file_sha256: Map::new(),
            handed: Default::default(),
        }
    }

    #[test]
    fn a_checkpoint_whose_file_was_rewritten_runs_again_with_the_same_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("azure_mgmt.json");
        std::fs::write(&path, "old secret").unwrap();
        let mut checkpoint = done("d1", "x");
        checkpoint.published = true;
        checkpoint.outputs.insert("azure_mgmt_file".into(), json!(path.display().to_string()));
        use sha2::Digest;
        let old = hex::encode(sha2::Sha256::digest(b"old secret"));
        checkpoint.file_sha256.insert("azure_mgmt_file".into(), json!(old));
        let mut prior = Prior::default();
        prior.done.insert("handoff".into(), checkpoint);
        let none = HashSet::new();
        assert!(matches!(decide(&prior, &none, "handoff", "handoff", "d1", &digests("x")), Decision::Reuse(_)));
        std::fs::write(&path, "new secret").unwrap();
        match decide(&prior, &none, "handoff", "handoff", "d1", &digests("x")) {
            Decision::Run(reason) => {
                assert_eq!(reason, format!("`{}` changed since run r1 vouched for it", path.display()))
            }
            other => panic!("{other:?}"),
        }
        // Gone: left to whoever reads it, as before.
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(decide(&prior, &none, "handoff", "handoff", "d1", &digests("x")), Decision::Reuse(_)));
    }

    #[test]
    fn reuses_only_unchanged_inputs_and_says_what_changed() {
        let mut prior = Prior::default();
        prior.done.insert("a".into(), done("d1", "x"));
        let none = HashSet::new();
        assert!(matches!(decide(&prior, &none, "a", "a", "d1", &digests("x")), Decision::Reuse(_)));
        match decide(&prior, &none, "a", "a", "d2", &digests("y")) {
            Decision::Run(reason) => assert_eq!(reason, "since run r1; inputs changed: argv"),
            other => panic!("{other:?}"),
        }
        match decide(&prior, &HashSet::from(["a".to_string()]), "a", "a", "d1", &digests("x")) {
            Decision::Run(reason) => assert!(reason.contains("--rerun"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failed_or_interrupted_attempt_is_run_again_with_its_story() {
        let mut prior = Prior::default();
        let attempt = Attempt { run_id: "r1".into(), attempt: 2, message: "boom".into(), input_digests: digests("x") };
        prior.failed.insert("a".into(), attempt.clone());
        match decide(&prior, &HashSet::new(), "a", "a", "d", &digests("x")) {
            Decision::Run(reason) => assert_eq!(reason, "attempt 2 in run r1 failed: boom"),
            other => panic!("{other:?}"),
        }
        prior.interrupted.insert("a".into(), attempt);
        match decide(&prior, &HashSet::new(), "a", "a", "d", &digests("y")) {
            Decision::Run(reason) => {
                assert_eq!(reason, "attempt 2 in run r1 was interrupted before it finished; inputs changed: argv")
            }
            other => panic!("{other:?}"),
        }
    }
}
