//! The journal as a run's decisions read it: one verified pass keeps the events any decision
//! needs (runs, step attempts, hand-offs, approvals), and every decision — what is done, what
//! earlier runbooks published, which gates are approved — is made from that one pass.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use runbook_journal::{
    ChainHead, EventData, GATE_APPROVED, HANDOFF_IMPORTED, HandoffProvenance, Journal, RUN_CREATED, RunRecord,
    STEP_FINISHED, STEP_SKIPPED, STEP_STARTED, STEPS_REUSED, StepStatus, VerifiedRow,
};
use runbook_steps::{Approval, AzureTarget, KindRole};
use serde_json::{Map, Value};

use crate::model::Runbook;
use crate::plan::prior::{Attempt, Done, HandedValues, Prior, RequiredFiles, RequiredValues, unseal_outputs};

/// The kinds of event a decision reads; the others (run started/finished, queueing, drift…)
/// are verified in the same pass but not kept.
fn kept(kind: &str) -> bool {
    matches!(
        kind,
        RUN_CREATED | STEP_STARTED | STEP_FINISHED | STEP_SKIPPED | STEPS_REUSED | HANDOFF_IMPORTED | GATE_APPROVED
    )
}

/// What one verified pass over the journal found, in seq order.
pub struct History {
    /// Every run, as its (verified) `run_created` event describes it, in creation order.
    runs: Vec<RunRecord>,
    /// The cluster each import of a hand-off was exported for, by the import's run id; imports
    /// of files that name none (older builds, runbooks without a cluster) are not here.
    imported_for: HashMap<String, String>,
    /// The kept events other than `run_created`, undecoded.
    rows: Vec<VerifiedRow>,
    /// The last event the pass verified.
    head: ChainHead,
}

/// The Azure a run acted on, as its record journaled it.
fn run_target(record: &RunRecord) -> Option<Arc<AzureTarget>> {
    serde_json::from_value(record.setup()?.azure).ok().map(Arc::new)
}

/// The cluster a hand-off's values were published for: the one every exported run names, as
/// the signed file says; None when they name none (or, from a hand-built file, several).
pub(crate) fn exported_cluster(provenance: &HandoffProvenance) -> Option<String> {
    let mut named = provenance.runs.values().filter_map(|run| run.get("cluster")?.as_str());
    let first = named.next()?;
    named.all(|other| other == first).then(|| first.to_string())
}

/// The name of `runbook`'s variable naming the cluster it acts on (`rule = "cluster_name"`).
fn cluster_variable(runbook: &Runbook) -> Option<&str> {
    runbook
        .file
        .vars
        .iter()
        .find(|(_, spec)| spec.rule == Some(crate::model::types::NamingRule::ClusterName))
        .map(|(name, _)| name.as_str())
}

/// The Azure an exported run acted on, as its hand-off names it (`azure` beside its run id).
fn exported_target(run: &Value) -> Option<Arc<AzureTarget>> {
    serde_json::from_value(run.get("azure")?.clone()).ok().map(Arc::new)
}

impl History {
    /// Reads and verifies the whole journal once. If it does not verify, the error is
    /// [`runbook_journal::Error::Tampered`] with what was found, and nothing of it is used.
    pub fn read(journal: &Journal) -> anyhow::Result<History> {
        let (rows, head) = journal.verified_rows(kept)?;
        let mut runs = Vec::new();
        let mut imported_for = HashMap::new();
        let mut others = Vec::with_capacity(rows.len());
        for row in rows {
            if row.kind == RUN_CREATED {
                if let EventData::RunCreated(record) = row.decode()? {
                    runs.push(record);
                }
                continue;
            }
            if row.kind == HANDOFF_IMPORTED
                && let EventData::HandoffImported(imported) = row.decode()?
                && let Some(cluster) = exported_cluster(&imported.provenance)
            {
                imported_for.insert(row.run_id.clone(), cluster);
            }
            others.push(row);
        }
        Ok(History { runs, imported_for, rows: others, head })
    }

    /// Whether the journal still ends where this pass read it: nothing was appended since (by
    /// a runner that held the run lock before this one took it, say).
    pub fn is_current(&self, journal: &Journal) -> anyhow::Result<bool> {
        Ok(journal.chain_head()? == self.head)
    }

    /// The run `id`, as its verified `run_created` event recorded it.
    pub fn run(&self, id: &str) -> Option<&RunRecord> {
        self.runs.iter().find(|r| r.id == id)
    }

    /// The most recently created run.
    pub fn latest_run(&self) -> Option<&RunRecord> {
        self.runs.last()
    }

    /// Every run, in creation order.
    pub fn runs(&self) -> &[RunRecord] {
        &self.runs
    }

    /// The cluster run `record` acted on: the one it journaled, or for the import of a hand-off,
    /// the one the hand-off was exported for (`None`: it named none).
    fn run_cluster(&self, record: &RunRecord) -> Option<String> {
        record.setup().and_then(|s| s.cluster).or_else(|| self.imported_for.get(&record.id).cloned())
    }

    /// Whether `record` stands for a run on `cluster`: any run when no cluster is asked, and a run
    /// that named none stands for every cluster.
    fn on_cluster(&self, record: &RunRecord, cluster: Option<&str>) -> bool {
        match (cluster, self.run_cluster(record)) {
            (Some(asked), Some(named)) => asked == named,
            _ => true,
        }
    }

    /// The runs of `runbook` on `cluster`, with the Azure each acted on. A run that named no
    /// cluster (a runbook without one, a build before clusters were journaled, the import of
    /// a hand-off that names none) stands for any; no `cluster` takes every run.
    fn runs_of(&self, runbook: &str, cluster: Option<&str>) -> HashMap<&str, Option<Arc<AzureTarget>>> {
        self.runs
            .iter()
            .filter(|r| r.runbook == runbook && self.on_cluster(r, cluster))
            .map(|r| (r.id.as_str(), run_target(r)))
            .collect()
    }

    /// What earlier attempts of `runbook` left: which instances are done (with which inputs and
    /// outputs), which failed last, which were interrupted mid-flight. With `only_run`, history
    /// from runs other than `current_run` is ignored (a `--fresh` run still resumes itself).
    pub fn prior(
        &self,
        journal: &Journal,
        runbook: &str,
        current_run: Option<&str>,
        only_run: bool,
    ) -> anyhow::Result<Prior> {
        self.prior_on(journal, runbook, None, current_run, only_run)
    }

    /// [`History::prior`] of the runs of `runbook` on `cluster` (see [`History::runs_of`]): a
    /// run on one cluster neither reuses nor stumbles on what runs on another did or left
    /// interrupted (one may be running at this very moment).
    pub fn prior_on(
        &self,
        journal: &Journal,
        runbook: &str,
        cluster: Option<&str>,
        current_run: Option<&str>,
        only_run: bool,
    ) -> anyhow::Result<Prior> {
        let runs = self.runs_of(runbook, cluster);
        // The rows of these runs, with the Azure each run acted on. Found once per row; most
        // rows follow one of the same run, so the last run found is tried first.
        let mut last: Option<(&str, &Option<Arc<AzureTarget>>)> = None;
        let ours: Vec<(usize, &Option<Arc<AzureTarget>>)> = (self.rows.iter().enumerate())
            .filter_map(|(index, row)| {
                let made_on = match last {
                    Some((run, made_on)) if run == row.run_id => made_on,
                    _ => runs.get_key_value(row.run_id.as_str()).map(|(run, made_on)| {
                        last = Some((run, made_on));
                        made_on
                    })?,
                };
                Some((index, made_on))
            })
            .collect();
        let mut prior = Prior::default();
        // Each instance's outcome is one entry: as many as there are ends, at most. Made room
        // for at once, rather than moving every outcome each time the map grows.
        let ends =
            ours.iter().filter(|&&(index, _)| matches!(self.rows[index].kind.as_str(), STEP_FINISHED | STEP_SKIPPED));
        prior.done.reserve(ends.count());
        // Attempts started and not (yet) seen to end, by run, instance and attempt: their rows,
        // decoded only for those that never end (most end, and most in the very next event).
        let mut pending: HashMap<(&str, &str, u32), &VerifiedRow> = HashMap::new();
        for (index, made_on) in ours {
            let row = &self.rows[index];
            // A hand-off imported from another person's journal publishes its checkpoints here
            // as if they had run locally; nothing else of that runbook's history comes along.
            if row.kind == HANDOFF_IMPORTED {
                if only_run {
                    continue;
                }
                if let EventData::HandoffImported(imported) = row.decode()? {
                    for (checkpoint, outputs) in &imported.checkpoints {
                        let done = Done {
                            run_id: row.run_id.clone(),
                            seq: row.seq,
                            digest: String::new(),
                            input_digests: Map::new(),
                            outputs: unseal_outputs(journal, outputs.as_object()),
                            published: true,
                            // Done where the exporter's run acted, not where it was imported.
                            made_on: imported
                                .provenance
                                .runs
                                .get(checkpoint)
                                .and_then(exported_target)
                                .or_else(|| made_on.clone()),
                            // Never run here: nothing of this runbook runs in the importing journal.
                            file_sha256: Map::new(),
                            handed: outputs
                                .as_object()
                                .into_iter()
                                .flat_map(|o| o.keys())
                                .filter(|name| !imported.files.contains_key(&format!("{checkpoint}.{name}")))
                                .cloned()
                                .collect(),
                        };
                        prior.failed.remove(checkpoint);
                        prior.done.insert(checkpoint.clone(), done);
                    }
                }
                continue;
            }
            if row.kind == STEPS_REUSED {
                if only_run && Some(row.run_id.as_str()) != current_run {
                    continue;
                }
                if let EventData::StepsReused(reused) = row.decode()? {
                    for step in reused.steps {
                        // A reuse names the outcome it was decided from, which is the latest
                        // success of that instance at that point of the history.
                        let done = prior.done.get_mut(&step.step).filter(|d| d.seq == step.from_seq).ok_or_else(
                            || runbook_journal::Error::Unreadable {
                                path: journal.path().to_path_buf(),
                                seq: row.seq,
                                kind: row.kind.clone(),
                                message: format!(
                                    "step `{}` reuses event {}, which is not the latest success of that step before it",
                                    step.step, step.from_seq
                                ),
                            },
                        )?;
                        done.made_on = made_on.clone();
                        prior.failed.remove(&step.step);
                        if Some(row.run_id.as_str()) == current_run {
                            prior.attempts_in_run.entry(step.step).or_default();
                        }
                    }
                }
                continue;
            }
            if !matches!(row.kind.as_str(), STEP_STARTED | STEP_FINISHED | STEP_SKIPPED)
                || (only_run && Some(row.run_id.as_str()) != current_run)
            {
                continue;
            }
            let Some(instance) = row.step.as_deref() else { continue };
            let attempt = u32::try_from(row.attempt.unwrap_or(0)).unwrap_or(0);
            if Some(row.run_id.as_str()) == current_run {
                // The instance's name is copied only the first time it is seen.
                match prior.attempts_in_run.get_mut(instance) {
                    Some(slot) => *slot = (*slot).max(attempt),
                    None => {
                        prior.attempts_in_run.insert(instance.to_string(), attempt);
                    }
                }
            }
            if row.kind == STEP_STARTED {
                prior.interrupted.remove(instance);
                // An attempt journaled together with its end (an instant step's) is followed by
                // that end: it is never pending, and its start need not be read.
                let ends_next = self.rows.get(index + 1).is_some_and(|next| {
                    next.kind == STEP_FINISHED
                        && next.run_id == row.run_id
                        && next.step == row.step
                        && next.attempt == row.attempt
                });
                if !ends_next {
                    pending.insert((row.run_id.as_str(), instance, attempt), row);
                }
                continue;
            }
            match row.decode()? {
                EventData::StepFinished(finished) => {
                    pending.remove(&(row.run_id.as_str(), instance, attempt));
                    let input_digests = finished.input_digests.unwrap_or_default();
                    if finished.status == StepStatus::Succeeded {
                        prior.failed.remove(instance);
                        let done = Done {
                            run_id: row.run_id.clone(),
                            seq: row.seq,
                            digest: finished.digest.unwrap_or_default(),
                            input_digests,
                            outputs: unseal_outputs(journal, finished.outputs.as_ref()),
                            published: KindRole::publishes(&finished.kind),
                            made_on: made_on.clone(),
                            file_sha256: finished
                                .evidence
                                .as_ref()
                                .and_then(|e| e.get("file_sha256"))
                                .and_then(Value::as_object)
                                .cloned()
                                .unwrap_or_default(),
                            handed: Default::default(),
                        };
                        match prior.done.get_mut(instance) {
                            Some(slot) => *slot = done,
                            None => {
                                prior.done.insert(instance.to_string(), done);
                            }
                        }
                    } else {
                        let message = finished
                            .error
                            .as_ref()
                            .and_then(|e| e["message"].as_str())
                            .unwrap_or(finished.status.as_str())
                            .to_string();
                        prior.done.remove(instance);
                        let failed = Attempt { run_id: row.run_id.clone(), attempt, message, input_digests };
                        prior.failed.insert(instance.to_string(), failed);
                    }
                }
                EventData::StepSkipped(skipped) => {
                    prior.failed.remove(instance);
                    // A reuse vouches for what the outcome it reused vouched for.
                    let file_sha256 = prior.done.get(instance).map(|d| d.file_sha256.clone()).unwrap_or_default();
                    let done = Done {
                        run_id: skipped.from_run,
                        seq: row.seq,
                        digest: skipped.digest,
                        input_digests: skipped.input_digests,
                        outputs: unseal_outputs(journal, Some(&skipped.outputs)),
                        published: KindRole::publishes(&skipped.kind),
                        made_on: made_on.clone(),
                        file_sha256,
                        handed: Default::default(),
                    };
                    prior.done.insert(instance.to_string(), done);
                }
                _ => {}
            }
        }
        for ((_, instance, attempt), row) in pending {
            let EventData::StepStarted(started) = row.decode()? else { continue };
            let attempt = Attempt {
                run_id: row.run_id.clone(),
                attempt,
                message: String::new(),
                input_digests: started.input_digests,
            };
            if prior.done.get(instance).is_none_or(|done| done.run_id != attempt.run_id) {
                let newer = prior
                    .interrupted
                    .get(instance)
                    .is_some_and(|a| a.attempt > attempt.attempt && a.run_id == attempt.run_id);
                if !newer {
                    prior.interrupted.insert(instance.to_string(), attempt);
                }
            }
        }
        Ok(prior)
    }

    /// Values `runbook` requires from earlier runbooks: the latest checkpoint outputs journaled
    /// by each against the Azure this run acts on (`target`), and by runs on the same cluster
    /// when this run names one (`cluster`). Every missing one is reported, with the runbook to
    /// run first.
    pub fn required(
        &self,
        journal: &Journal,
        runbook: &Runbook,
        target: &AzureTarget,
        cluster: Option<&str>,
    ) -> anyhow::Result<Result<(RequiredValues, RequiredFiles, HandedValues), Vec<String>>> {
        let mut values = RequiredValues::new();
        let mut files = RequiredFiles::new();
        let mut handed = HandedValues::new();
        let mut missing = Vec::new();
        for (alias, requirement) in &runbook.file.requires {
            let prior = self.prior_on(journal, &requirement.runbook, cluster, None, false)?.acting_on(target.clone());
            let mut checkpoints: Vec<&Done> = prior.done.values().filter(|d| d.published).collect();
            checkpoints.sort_by(|a, b| a.run_id.cmp(&b.run_id));
            let (here, elsewhere): (Vec<&Done>, Vec<&Done>) =
                checkpoints.into_iter().partition(|d| prior.made_elsewhere(d).is_none());
            for output in &requirement.outputs {
                // A runbook that can name its cluster but was left to take the latest would take
                // whichever cluster ran last: with several, the run must name its own. (One that
                // cannot, such as the shared resources' cleanup, reads values all clusters share.)
                if let (None, Some(variable)) = (cluster, cluster_variable(runbook)) {
                    let several = self.publishers(&requirement.runbook, output);
                    if several.len() > 1 {
                        missing.push(format!(
                            "`{alias}.{output}`: runbook `{}` published it for several clusters ({}), and this run names none; set `{variable}` to the cluster it acts on",
                            requirement.runbook,
                            several.iter().map(|(c, _)| format!("`{c}`")).collect::<Vec<_>>().join(", "),
                        ));
                        continue;
                    }
                }
                match here.iter().rev().find_map(|d| Some((d, d.outputs.get(output)?))) {
                    Some((done, value)) => {
                        if let Some(sha) = done.file_sha256.get(output).and_then(Value::as_str) {
                            files.insert((alias.clone(), output.clone()), sha.to_string());
                        }
                        if done.handed.contains(output) {
                            handed.insert((alias.clone(), output.clone()));
                        }
                        values.insert((alias.clone(), output.clone()), value.clone());
                    }
                    None if let Some(others) = self.other_clusters(&requirement.runbook, cluster, output) => {
                        missing.push(format!(
                            "`{alias}.{output}`: runbook `{}` published it only for another cluster ({others}), and this run acts on cluster `{}`; run `{}` for this cluster first (or import its hand-off for it)",
                            requirement.runbook,
                            cluster.unwrap_or_default(),
                            requirement.runbook
                        ))
                    }
                    None => match elsewhere.iter().rev().find(|d| d.outputs.contains_key(output)) {
                        Some(other) => missing.push(format!(
                            "`{alias}.{output}`: runbook `{}` published it only in runs against another Azure ({}); run `{}` against this one first",
                            requirement.runbook,
                            prior.made_elsewhere(other).unwrap_or_default(),
                            requirement.runbook
                        )),
                        None => missing.push(format!(
                            "`{alias}.{output}`: no checkpoint of runbook `{}` in this journal has published it; run `{}` first (or import its hand-off)",
                            requirement.runbook, requirement.runbook
                        )),
                    },
                }
            }
            for output in &requirement.optional {
                // Optional values too come only from work done against this run's Azure.
                let found = here.iter().rev().find_map(|d| Some((d, d.outputs.get(output)?)));
                if let Some(sha) = found.and_then(|(done, _)| done.file_sha256.get(output)).and_then(Value::as_str) {
                    files.insert((alias.clone(), output.clone()), sha.to_string());
                }
                if found.is_some_and(|(done, _)| done.handed.contains(output)) {
                    handed.insert((alias.clone(), output.clone()));
                }
                values.insert((alias.clone(), output.clone()), found.map_or(Value::Null, |(_, v)| v.clone()));
            }
        }
        Ok(if missing.is_empty() { Ok((values, files, handed)) } else { Err(missing) })
    }

    /// The clusters other than `cluster` on which runs of `runbook` published `output`, named
    /// with a run of each (`` `a` (run r1) ``); None when there are none, or no cluster is asked.
    fn other_clusters(&self, runbook: &str, cluster: Option<&str>, output: &str) -> Option<String> {
        let cluster = cluster?;
        let named: Vec<String> = self
            .publishers(runbook, output)
            .into_iter()
            .filter(|(other, _)| other != cluster)
            .map(|(other, run)| format!("`{other}` (run {run})"))
            .collect();
        (!named.is_empty()).then(|| named.join(", "))
    }

    /// The clusters on which runs of `runbook` (imports of its hand-offs included) published
    /// `output`, each with the first run that did, in journal order; runs naming no cluster are
    /// left out.
    fn publishers(&self, runbook: &str, output: &str) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = Vec::new();
        for row in
            self.rows.iter().filter(|r| matches!(r.kind.as_str(), STEP_FINISHED | STEP_SKIPPED | HANDOFF_IMPORTED))
        {
            let Some(record) = self.run(&row.run_id).filter(|r| r.runbook == runbook) else { continue };
            let Some(cluster) = self.run_cluster(record) else { continue };
            if found.iter().any(|(c, _)| *c == cluster) {
                continue;
            }
            let published = match row.decode() {
                Ok(EventData::StepFinished(f)) => {
                    f.status == StepStatus::Succeeded
                        && KindRole::publishes(&f.kind)
                        && f.outputs.is_some_and(|o| o.contains_key(output))
                }
                Ok(EventData::StepSkipped(s)) => KindRole::publishes(&s.kind) && s.outputs.contains_key(output),
                Ok(EventData::HandoffImported(i)) => {
                    i.checkpoints.values().any(|c| c.as_object().is_some_and(|o| o.contains_key(output)))
                }
                _ => false,
            };
            if published {
                found.push((cluster, record.id.clone()));
            }
        }
        found
    }

    /// The values required from earlier runbooks that were sealed where they were journaled: a
    /// run must redact them wherever they appear, as it does its own secret variables. Every
    /// sealed value any checkpoint of those runbooks published is included, not only the latest.
    pub fn required_secrets(&self, journal: &Journal, runbook: &Runbook) -> anyhow::Result<Vec<Value>> {
        let mut secrets = Vec::new();
        for requirement in runbook.file.requires.values() {
            let runs: HashSet<&str> =
                self.runs.iter().filter(|r| r.runbook == requirement.runbook).map(|r| r.id.as_str()).collect();
            for row in &self.rows {
                if !matches!(row.kind.as_str(), STEP_FINISHED | STEP_SKIPPED | HANDOFF_IMPORTED)
                    || !runs.contains(row.run_id.as_str())
                {
                    continue;
                }
                let published: Vec<Map<String, Value>> = match row.decode()? {
                    EventData::StepFinished(f) if KindRole::publishes(&f.kind) => f.outputs.into_iter().collect(),
                    EventData::StepSkipped(s) if KindRole::publishes(&s.kind) => vec![s.outputs],
                    EventData::HandoffImported(i) => {
                        i.checkpoints.values().filter_map(|v| v.as_object().cloned()).collect()
                    }
                    _ => Vec::new(),
                };
                for outputs in &published {
                    let sealed =
                        requirement.outputs.iter().filter_map(|name| outputs.get(name)?.get("$sealed")?.as_str());
                    for sealed in sealed {
                        if let Ok(value) = serde_json::from_slice(&journal.unseal(sealed)?) {
                            secrets.push(value);
                        }
                    }
                }
            }
        }
        Ok(secrets)
    }

    /// The gate approvals given in run `run_id` for the plan `plan` (see `Prepared::digest`), by
    /// instance, and those given for another plan (a variable changed since, the runbook
    /// edited): a gate of the second kind asks again.
    pub fn approvals(&self, run_id: &str, plan: &str) -> anyhow::Result<Approvals> {
        let mut out = Approvals::default();
        for row in self.rows.iter().filter(|r| r.kind == GATE_APPROVED && r.run_id == run_id) {
            if let (Some(step), EventData::GateApproved(approved)) = (&row.step, row.decode()?) {
                let approval =
                    Approval { by: approved.by, persona: approved.persona, at: approved.at, comment: approved.comment };
                // An approval journaled before approvals named their plan is taken as before.
                if approved.plan.as_deref().is_none_or(|approved| approved == plan) {
                    out.stale.remove(step);
                    let given = out.current.entry(step.clone()).or_default();
                    // One person counts once, however often they approve.
                    if !given.iter().any(|a| a.by == approval.by) {
                        given.push(approval);
                    }
                } else if !out.current.contains_key(step) {
                    out.stale.insert(step.clone(), approval);
                }
            }
        }
        Ok(out)
    }
}

/// A run's approvals: of the plan it runs now (each gate's, by different people, in the order
/// given), and of another plan (they no longer count).
#[derive(Debug, Default)]
pub struct Approvals {
    pub current: HashMap<String, Vec<Approval>>,
    pub stale: std::collections::BTreeMap<String, Approval>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use runbook_journal::{NewEvent, NewRun, ReusedStep, StepFinished, StepSkipped, StepsReused};
    use serde_json::json;

    fn new_run(journal: &Journal, id: &str) {
        let run =
            NewRun { id: id.into(), runbook: "rb".into(), runbook_digest: "d".into(), vars: json!({}), who: json!({}) };
        journal.create_run(&run).unwrap();
    }

    fn outputs(value: i64) -> Map<String, Value> {
        json!({ "n": value }).as_object().unwrap().clone()
    }

    fn succeeded(step: &str, run: &str, value: i64) -> NewEvent {
        let finished = StepFinished {
            kind: "exec".into(),
            status: StepStatus::Succeeded,
            digest: Some(format!("digest-{step}")),
            input_digests: Some(Map::new()),
            outputs: Some(outputs(value)),
            evidence: None,
            error: None,
            will_retry: false,
            retry_in_ms: None,
            duration_ms: 1,
        };
        NewEvent::new(run, EventData::StepFinished(finished)).with_step(step, Some(1))
    }

    fn reused(run: &str, steps: &[(&str, &str, i64)]) -> NewEvent {
        let steps = steps
            .iter()
            .map(|(step, from_run, from_seq)| ReusedStep {
                step: step.to_string(),
                kind: "exec".into(),
                from_run: from_run.to_string(),
                from_seq: *from_seq,
            })
            .collect();
        NewEvent::new(run, EventData::StepsReused(StepsReused { steps }))
    }

    #[test]
    fn a_reuse_stands_for_the_success_it_names_also_one_an_older_build_journaled() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(&dir.path().join("j.db")).unwrap();
        new_run(&journal, "r1");
        let seqs = journal.append(&[succeeded("a", "r1", 1)]).unwrap();
        new_run(&journal, "r2");
        // What an older build journaled for a reuse: a self-contained `step_skipped`.
        let legacy = StepSkipped {
            kind: "exec".into(),
            reason: "done in run r1 with the same inputs".into(),
            from_run: "r1".into(),
            digest: "digest-b".into(),
            input_digests: Map::new(),
            outputs: outputs(2),
        };
        let skipped = journal
            .append(&[
                reused("r2", &[("a", "r1", seqs[0])]),
                NewEvent::new("r2", EventData::StepSkipped(legacy)).with_step("b", None),
            ])
            .unwrap();
        new_run(&journal, "r3");
        journal.append(&[reused("r3", &[("a", "r1", seqs[0]), ("b", "r1", skipped[1])])]).unwrap();

        let prior = History::read(&journal).unwrap().prior(&journal, "rb", Some("r3"), false).unwrap();
        let a = &prior.done["a"];
        assert_eq!((a.run_id.as_str(), a.seq, &a.outputs), ("r1", seqs[0], &outputs(1)));
        let b = &prior.done["b"];
        assert_eq!(
            (b.run_id.as_str(), b.seq, b.digest.as_str(), &b.outputs),
            ("r1", skipped[1], "digest-b", &outputs(2))
        );
    }

    #[test]
    fn a_reuse_of_anything_but_the_latest_success_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(&dir.path().join("j.db")).unwrap();
        new_run(&journal, "r1");
        let seqs = journal.append(&[succeeded("a", "r1", 1), succeeded("a", "r1", 2)]).unwrap();
        new_run(&journal, "r2");
        journal.append(&[reused("r2", &[("a", "r1", seqs[0])])]).unwrap();
        let err = History::read(&journal).unwrap().prior(&journal, "rb", Some("r2"), false).unwrap_err();
        assert!(err.to_string().contains("not the latest success"), "{err}");
    }
}
