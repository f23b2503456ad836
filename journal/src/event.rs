//! Every kind of journal event and its fields: the one definition writers and readers share.
//!
//! An event is stored as its kind (a column) and its fields as JSON (`data`). Reading is strict:
//! an unknown kind, an unknown field or a missing field is an error, never a silent default,
//! because a decision made from a misread event (reuse a step, skip one) acts on a subscription.
//! Optional values are written as `null` and must be present all the same.
//!
//! Versions: the kind name is the version of its fields. A change old readers could not read
//! gets a new kind name (`step_finished_v2`), and readers keep accepting the old one for the
//! journals that hold it.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::records::RunRecord;

/// The fields of an event, by kind.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(untagged)]
pub enum EventData {
    /// Written by [`crate::Journal::create_run`] alongside the runs row, which must equal it.
    RunCreated(RunRecord),
    RunStarted(RunStarted),
    StepStarted(StepStarted),
    StepFinished(StepFinished),
    StepSkipped(StepSkipped),
    StepsReused(StepsReused),
    GateWaiting(GateWaiting),
    GateApproved(GateApproved),
    RunFinished(RunFinished),
    HandoffExported(HandoffExported),
    HandoffImported(HandoffImported),
    StepQueued(StepQueued),
    CriticalPath(CriticalPath),
    DriftChecked(DriftChecked),
    Diagnosed(Diagnosed),
}

pub const RUN_CREATED: &str = "run_created";
pub const RUN_STARTED: &str = "run_started";
pub const STEP_STARTED: &str = "step_started";
pub const STEP_FINISHED: &str = "step_finished";
pub const STEP_SKIPPED: &str = "step_skipped";
pub const STEPS_REUSED: &str = "steps_reused";
pub const GATE_WAITING: &str = "gate_waiting";
pub const GATE_APPROVED: &str = "gate_approved";
pub const RUN_FINISHED: &str = "run_finished";
pub const HANDOFF_EXPORTED: &str = "handoff_exported";
pub const HANDOFF_IMPORTED: &str = "handoff_imported";
pub const STEP_QUEUED: &str = "step_queued";
pub const CRITICAL_PATH: &str = "critical_path";
pub const DRIFT_CHECKED: &str = "drift_checked";
pub const DIAGNOSED: &str = "diagnosed";

impl EventData {
    pub fn kind(&self) -> &'static str {
        match self {
            EventData::RunCreated(_) => RUN_CREATED,
            EventData::RunStarted(_) => RUN_STARTED,
            EventData::StepStarted(_) => STEP_STARTED,
            EventData::StepFinished(_) => STEP_FINISHED,
            EventData::StepSkipped(_) => STEP_SKIPPED,
            EventData::StepsReused(_) => STEPS_REUSED,
            EventData::GateWaiting(_) => GATE_WAITING,
            EventData::GateApproved(_) => GATE_APPROVED,
            EventData::RunFinished(_) => RUN_FINISHED,
            EventData::HandoffExported(_) => HANDOFF_EXPORTED,
            EventData::HandoffImported(_) => HANDOFF_IMPORTED,
            EventData::StepQueued(_) => STEP_QUEUED,
            EventData::CriticalPath(_) => CRITICAL_PATH,
            EventData::DriftChecked(_) => DRIFT_CHECKED,
            EventData::Diagnosed(_) => DIAGNOSED,
        }
    }

    /// Reads the stored `data` of an event of `kind`.
    pub fn decode(kind: &str, data: &str) -> Result<EventData, String> {
        fn parse<T: DeserializeOwned>(data: &str) -> Result<T, String> {
            serde_json::from_str(data).map_err(|e| e.to_string())
        }
        Ok(match kind {
            RUN_CREATED => EventData::RunCreated(parse(data)?),
            RUN_STARTED => EventData::RunStarted(parse(data)?),
            STEP_STARTED => EventData::StepStarted(parse(data)?),
            STEP_FINISHED => EventData::StepFinished(parse(data)?),
            STEP_SKIPPED => EventData::StepSkipped(parse(data)?),
            STEPS_REUSED => EventData::StepsReused(parse(data)?),
            GATE_WAITING => EventData::GateWaiting(parse(data)?),
            GATE_APPROVED => EventData::GateApproved(parse(data)?),
            RUN_FINISHED => EventData::RunFinished(parse(data)?),
            HANDOFF_EXPORTED => EventData::HandoffExported(parse(data)?),
            HANDOFF_IMPORTED => EventData::HandoffImported(parse(data)?),
            STEP_QUEUED => EventData::StepQueued(parse(data)?),
            CRITICAL_PATH => EventData::CriticalPath(parse(data)?),
            DRIFT_CHECKED => EventData::DriftChecked(parse(data)?),
            DIAGNOSED => EventData::Diagnosed(parse(data)?),
            other => return Err(format!("unknown event kind `{other}` (written by a newer build?)")),
        })
    }

    /// The outputs of the succeeded attempt this event holds, if it holds one a later run could
    /// reuse: what a [`ReusedStep`]'s `from_seq` points at.
    pub fn reused_outputs(&self) -> Option<&Map<String, Value>> {
        match self {
            EventData::StepFinished(f) if f.status == StepStatus::Succeeded => f.outputs.as_ref(),
            EventData::StepSkipped(s) => Some(&s.outputs),
            _ => None,
        }
    }

    pub(crate) fn encode(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// A `runbook run` or `resume` began (or went on with) a run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunStarted {
    /// `run` or `resume`.
    pub mode: String,
    pub who: Value,
    pub runbook_digest: String,
    /// Where the runbook and its values came from, to resume it later.
    pub setup: crate::RunSetup,
}

/// An attempt of a step instance began. For a step unsafe to repeat it is committed before the
/// step acts, so a crash leaves it without a `step_finished`: interrupted.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StepStarted {
    /// The step's kind (`exec`, `arm`, …).
    pub kind: String,
    /// Why it runs: the decision made from earlier attempts.
    pub reason: String,
    pub digest: String,
    pub input_digests: Map<String, Value>,
    /// The resolved inputs, secrets redacted.
    pub inputs: Value,
    pub idempotent: bool,
    pub started_at: String,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Succeeded,
    Failed,
    GateFailed,
    TimedOut,
    Cancelled,
}

impl StepStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            StepStatus::Succeeded => "succeeded",
            StepStatus::Failed => "failed",
            StepStatus::GateFailed => "gate_failed",
            StepStatus::TimedOut => "timed_out",
            StepStatus::Cancelled => "cancelled",
        }
    }
}

/// An attempt ended.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StepFinished {
    pub kind: String,
    pub status: StepStatus,
    /// None when the inputs could not even be resolved.
    #[serde(deserialize_with = "present")]
    pub digest: Option<String>,
    #[serde(deserialize_with = "present")]
    pub input_digests: Option<Map<String, Value>>,
    /// On success: the outputs, secret ones as `{"$sealed": …}`.
    #[serde(deserialize_with = "present")]
    pub outputs: Option<Map<String, Value>>,
    #[serde(deserialize_with = "present")]
    pub evidence: Option<Value>,
    /// On failure: the step error (class, code, message, request ids, hint).
    #[serde(deserialize_with = "present")]
    pub error: Option<Value>,
    pub will_retry: bool,
    #[serde(deserialize_with = "present")]
    pub retry_in_ms: Option<u64>,
    pub duration_ms: u64,
}

/// An instance was not run because an earlier attempt with the same inputs succeeded.
/// Written by older builds, one per reused instance; read for the journals that hold it (newer
/// builds write [`StepsReused`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StepSkipped {
    pub kind: String,
    pub reason: String,
    /// The run whose attempt is reused.
    pub from_run: String,
    pub digest: String,
    pub input_digests: Map<String, Value>,
    pub outputs: Map<String, Value>,
}

/// Instances not run because an earlier attempt with the same inputs succeeded: one event for
/// all the reuse decisions made between two appends, so resuming a long run appends one row, not
/// one per instance. Each names the event that holds the outcome it reuses, which a reader finds
/// in the same journal (and, for a decision, in the same verified pass).
///
/// Stored grouped (`{"reused": [{"from_run", "kind", "steps": [...], "from_seqs": [...]}]}`, one
/// group per stretch of steps reused from the same run with the same kind): a resume of a long
/// runbook reuses thousands of steps, and one object per step repeating its run and kind made
/// the row several times larger, and its commit several times slower. Rows written by earlier
/// builds (`{"steps": [{"step", "kind", "from_run", "from_seq"}, ...]}`) read as before.
#[derive(Clone, Debug, PartialEq)]
pub struct StepsReused {
    pub steps: Vec<ReusedStep>,
}

/// How a [`StepsReused`] is stored: grouped, or (by earlier builds) one object per step; one of
/// the two fields, never both.
#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredReuse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reused: Option<Vec<ReuseGroup>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    steps: Option<Vec<ReusedStep>>,
}

/// Steps reused from one run, of one kind, in the order they were decided.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReuseGroup {
    from_run: String,
    kind: String,
    steps: Vec<String>,
    from_seqs: Vec<i64>,
}

impl Serialize for StepsReused {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut groups: Vec<ReuseGroup> = Vec::new();
        for step in &self.steps {
            match groups.last_mut() {
                Some(group) if group.from_run == step.from_run && group.kind == step.kind => {
                    group.steps.push(step.step.clone());
                    group.from_seqs.push(step.from_seq);
                }
                _ => groups.push(ReuseGroup {
                    from_run: step.from_run.clone(),
                    kind: step.kind.clone(),
                    steps: vec![step.step.clone()],
                    from_seqs: vec![step.from_seq],
                }),
            }
        }
        StoredReuse { reused: Some(groups), steps: None }.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StepsReused {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let groups = match StoredReuse::deserialize(deserializer)? {
            StoredReuse { reused: Some(groups), steps: None } => groups,
            StoredReuse { reused: None, steps: Some(steps) } => return Ok(StepsReused { steps }),
            _ => return Err(serde::de::Error::custom("reused steps need one of `reused` and `steps`")),
        };
        let mut steps = Vec::new();
        for group in groups {
            if group.steps.len() != group.from_seqs.len() {
                return Err(serde::de::Error::custom(format!(
                    "a group of reused steps names {} steps and {} events they were done in",
                    group.steps.len(),
                    group.from_seqs.len()
                )));
            }
            for (step, from_seq) in group.steps.into_iter().zip(group.from_seqs) {
                steps.push(ReusedStep { step, kind: group.kind.clone(), from_run: group.from_run.clone(), from_seq });
            }
        }
        Ok(StepsReused { steps })
    }
}

/// One reused instance of a [`StepsReused`] event.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReusedStep {
    /// The instance id.
    pub step: String,
    /// The step's kind (`exec`, `arm`, …).
    pub kind: String,
    /// The run whose attempt is reused.
    pub from_run: String,
    /// The event holding that attempt's digests and outputs: a succeeded `step_finished` (or,
    /// in journals written by older builds, a `step_skipped`).
    pub from_seq: i64,
}

impl ReusedStep {
    /// Why it was not run, as said to someone reading run `run_id`.
    pub fn reason(&self, run_id: &str) -> String {
        if self.from_run == run_id {
            "done earlier in this run with the same inputs".to_string()
        } else {
            format!("done in run {} with the same inputs", self.from_run)
        }
    }
}

/// A manual gate waits for `runbook approve`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GateWaiting {
    pub prompt: String,
    #[serde(deserialize_with = "present")]
    pub persona: Option<String>,
    /// The keyed digest of the run as planned when the gate began waiting (its runbook, variables
    /// and required values): an approval is of this plan, and no other. Absent in journals of
    /// builds before approvals were bound to a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// The name the approver must type to approve (the gate's `approval.confirm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
    /// How many different people must approve, when more than one (`approval.approvals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<u32>,
    /// Who may not approve: the person who started the run, when the gate says
    /// `self_approval = false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_by: Option<String>,
}

/// A persona signed off a manual gate.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GateApproved {
    pub by: String,
    #[serde(deserialize_with = "present")]
    pub persona: Option<String>,
    pub at: String,
    #[serde(deserialize_with = "present")]
    pub comment: Option<String>,
    /// The plan approved: that of the gate's waiting (see [`GateWaiting::plan`]). A resume whose
    /// plan differs (a variable changed, the runbook edited) does not take this approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
}

/// The runner stopped working on the run (done, failed, waiting or cancelled).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunFinished {
    pub status: crate::RunStatus,
    pub counts: crate::Counts,
    pub duration_ms: u64,
    pub critical_path_ms: u64,
    pub step_time_ms: u64,
}

/// A point in a journal's hash chain: the event `seq` and its hash. A hand-off names the
/// exporter's chain head, so an audit over both journals can check the link between them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ChainHead {
    pub seq: i64,
    pub hash: String,
}

/// Who made a hand-off file, from which run, and where the exporter's journal stood.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HandoffProvenance {
    /// The exporter: OS user, host, persona, Azure principal.
    pub who: Value,
    pub exported_at: String,
    pub runbook: String,
    pub runbook_digest: String,
    /// The run that published each exported checkpoint, by checkpoint.
    pub runs: Map<String, Value>,
    /// The exporter's chain head when the file was made.
    pub chain_head: ChainHead,
    /// SHA-256 fingerprint of the SSH key that signed the file.
    pub signer: String,
    /// The exporter's journal, named by the hash of its first event: the same for every
    /// hand-off that journal makes, so a later one can be told from another journal's. With
    /// the signer and the chain head it orders the hand-offs of one source. Absent in files
    /// made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<String>,
}

/// A checkpoint's values and files were written to a hand-off file for another person.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HandoffExported {
    /// SHA-256 of the whole file as written.
    pub file_sha256: String,
    pub provenance: HandoffProvenance,
    /// Whom the secrets were encrypted to (an age or SSH public key).
    pub recipient: String,
    /// The checkpoints exported, with the names of their values and files.
    pub checkpoints: Map<String, Value>,
    /// Secret values and files left out (`--no-secrets`), as `checkpoint.name`.
    pub omitted_secrets: Vec<String>,
}

/// A hand-off file was verified and its values taken into this journal, under a run of its
/// own whose runbook is the exporter's, so `requires` finds them as it finds local ones.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HandoffImported {
    pub file_sha256: String,
    pub provenance: HandoffProvenance,
    pub recipient: String,
    /// By checkpoint: its outputs as journaled (secret ones as `{"$sealed": …}`, files as the
    /// path they were written to).
    pub checkpoints: Map<String, Value>,
    /// Files written, by `checkpoint.name`: path, SHA-256, whether secret.
    pub files: Map<String, Value>,
    pub omitted_secrets: Vec<String>,
    /// The values this import replaced: those of an earlier hand-off from the same source, or
    /// (given `--replace`) the journal's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<Replaced>,
}

/// Values of one checkpoint that an import replaced.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Replaced {
    pub checkpoint: String,
    /// The names of the values that differed.
    pub values: Vec<String>,
    /// The run that held them: the earlier import's, or a local run's.
    pub run_id: String,
    /// The earlier import's file; None when the values were this journal's own.
    pub file_sha256: Option<String>,
}

/// A ready instance waits because another one holds its serialization key: the wait ends at its
/// next `step_started`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StepQueued {
    /// The resolved key, secrets redacted.
    pub key: String,
    /// When the wait began (the event may be appended later, with the next batch).
    pub since: String,
}

/// The plan's critical path in one invocation (`run` or `resume`): the chain of step instances
/// through the dependencies whose measured durations (retries included) add up to the most.
/// Written just before `run_finished`, whose `critical_path_ms` is the same figure.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CriticalPath {
    pub duration_ms: u64,
    /// Instance ids, first to last.
    pub steps: Vec<String>,
}

/// `runbook verify` read back what a finished run made (GET only) and compared it with what the
/// run journaled: appended to the run it checked.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DriftChecked {
    pub who: Value,
    pub checked_at: String,
    /// How many objects were read back.
    pub objects: u64,
    /// One entry per drifted object: step, object id, what (`missing`, `changed`) and, for a
    /// change, the field with its journaled and current values (secrets redacted).
    pub drift: Vec<Value>,
    /// Objects that could not be read (an error code and message each).
    pub unreadable: Vec<Value>,
}

/// `runbook diagnose` read (GET only) what the journals made and what Azure and the management
/// cluster show, and named causes: appended to the latest run of each journal it read.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Diagnosed {
    pub who: Value,
    pub checked_at: String,
    pub healthy: bool,
    /// One entry per cause: its id, title, evidence and fix.
    pub causes: Vec<Value>,
    /// Unhealthy things no cause explains.
    pub symptoms: Vec<Value>,
    /// What could not be read, and why.
    pub unchecked: Vec<Value>,
}

/// An optional value that must still be written (as `null`): with `deserialize_with`, serde
/// reports a missing field instead of quietly taking `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(deserializer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn finished() -> StepFinished {
        StepFinished {
            kind: "exec".into(),
            status: StepStatus::Succeeded,
            digest: Some("d".into()),
            input_digests: Some(Map::new()),
            outputs: Some(Map::new()),
            evidence: None,
            error: None,
            will_retry: false,
            retry_in_ms: None,
            duration_ms: 3,
        }
    }

    #[test]
    fn every_kind_reads_back_what_was_written() {
        let data = EventData::StepFinished(finished());
        let text = data.encode().unwrap();
        assert_eq!(EventData::decode(data.kind(), &text).unwrap(), data);
    }

    #[test]
    fn reused_steps_read_back_and_say_where_they_were_done() {
        let step = ReusedStep { step: "a".into(), kind: "exec".into(), from_run: "r1".into(), from_seq: 7 };
        let data = EventData::StepsReused(StepsReused { steps: vec![step.clone()] });
        let text = data.encode().unwrap();
        assert_eq!(EventData::decode(STEPS_REUSED, &text).unwrap(), data);
        assert_eq!(step.reason("r1"), "done earlier in this run with the same inputs");
        assert_eq!(step.reason("r2"), "done in run r1 with the same inputs");
        let err =
            EventData::decode(STEPS_REUSED, r#"{"steps":[{"step":"a","kind":"exec","from_run":"r1"}]}"#).unwrap_err();
        assert!(err.contains("missing field `from_seq`"), "{err}");
    }

    #[test]
    fn reused_steps_are_stored_grouped_in_their_order_and_earlier_lists_still_read() {
        let reused = |step: &str, kind: &str, from_run: &str, from_seq| ReusedStep {
            step: step.into(),
            kind: kind.into(),
            from_run: from_run.into(),
            from_seq,
        };
        let steps = vec![
            reused("a", "exec", "r1", 3),
            reused("b", "exec", "r1", 5),
            reused("c", "arm", "r1", 9),
            reused("d", "exec", "r1", 11),
            reused("e", "exec", "r2", 20),
        ];
        let data = EventData::StepsReused(StepsReused { steps: steps.clone() });
        let text = data.encode().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"reused": [
                {"from_run": "r1", "kind": "exec", "steps": ["a", "b"], "from_seqs": [3, 5]},
                {"from_run": "r1", "kind": "arm", "steps": ["c"], "from_seqs": [9]},
                {"from_run": "r1", "kind": "exec", "steps": ["d"], "from_seqs": [11]},
                {"from_run": "r2", "kind": "exec", "steps": ["e"], "from_seqs": [20]},
            ]})
        );
        assert_eq!(EventData::decode(STEPS_REUSED, &text).unwrap(), data);

        // As builds before the grouping wrote it.
        let listed = json!({"steps": [
            {"step": "a", "kind": "exec", "from_run": "r1", "from_seq": 3},
            {"step": "c", "kind": "arm", "from_run": "r1", "from_seq": 9},
        ]});
        let EventData::StepsReused(read) = EventData::decode(STEPS_REUSED, &listed.to_string()).unwrap() else {
            panic!("not steps_reused")
        };
        assert_eq!(read.steps, [steps[0].clone(), steps[2].clone()]);

        for bad in [
            json!({"reused": [{"from_run": "r1", "kind": "exec", "steps": ["a", "b"], "from_seqs": [3]}]}),
            json!({"reused": [], "steps": []}),
            json!({}),
            json!({"reused": [{"from_run": "r1", "kind": "exec", "steps": ["a"], "from_seqs": [3], "extra": 1}]}),
        ] {
            assert!(EventData::decode(STEPS_REUSED, &bad.to_string()).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_and_missing_fields_and_kinds_are_errors() {
        let mut value = serde_json::to_value(finished()).unwrap();
        value["extra"] = json!(1);
        let err = EventData::decode(STEP_FINISHED, &value.to_string()).unwrap_err();
        assert!(err.contains("unknown field `extra`"), "{err}");

        let mut value = serde_json::to_value(finished()).unwrap();
        value.as_object_mut().unwrap().remove("error");
        let err = EventData::decode(STEP_FINISHED, &value.to_string()).unwrap_err();
        assert!(err.contains("missing field `error`"), "{err}");

        let err = EventData::decode("step_exploded", "{}").unwrap_err();
        assert!(err.contains("unknown event kind `step_exploded`"), "{err}");
    }
}
