//! Every decision of a run, and nothing else: which instance comes next, whether it is skipped,
//! reused, awaits an approval, queues for a serialization key, starts or cannot run, and what
//! its end frees up. No I/O: the engine's loop journals and spawns what is decided here, and
//! `plan` asks the same `admit` without running anything, so prediction and execution cannot
//! disagree.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

use runbook_journal::{GateWaiting, Journal, ReusedStep};
use runbook_steps::{Approval, ApprovalRule, ErrorClass};
use serde_json::{Map, Value};

use super::attempt::{JobResult, secret_output_names};
use super::events::{Counts, RunStatus, StepStatus};
use super::redact::Redactor;
use super::{critical_path, digests, render_key};
use crate::model::Runbook;
use crate::model::vars::VarValues;
use crate::plan::{self, Decision, NOT_RUN_BEFORE, Plan, Prior, RequiredFiles, RequiredValues, Scope};

/// What every decision reads; none of it changes during a run.
#[derive(Clone, Copy)]
pub struct Facts<'a> {
    pub runbook: &'a Runbook,
    pub plan: &'a Plan,
    pub vars: &'a VarValues,
    pub required: &'a RequiredValues,
    pub required_files: &'a RequiredFiles,
    pub prior: &'a Prior,
    /// Instances (or whole steps) the operator asked to run again even if done.
    pub rerun: &'a HashSet<String>,
    pub approvals: &'a HashMap<String, Vec<Approval>>,
    /// Who started the run (none in `plan`): not counted by a gate with `self_approval = false`.
    pub started_by: Option<&'a str>,
    /// The digest of the run as planned ([`crate::session::prepare::Prepared::digest`]), which
    /// a gate's waiting names so its approval is of this plan only.
    pub plan_digest: Option<&'a str>,
    /// Digests are keyed by the journal; without one nothing can have been done before.
    pub journal: Option<&'a Journal>,
    pub run_id: &'a str,
    pub work_dir: &'a Path,
}

/// What `admit` decided for one instance.
pub enum Admission {
    /// Its `when` is false: done, with no outputs.
    Skip,
    /// Done earlier with the same inputs: its outputs are taken from there.
    Reuse(ReusedStep),
    /// A gate whose approval is not recorded yet. `reason` is why it would run.
    AwaitApproval { waiting: GateWaiting, reason: String },
    /// Its serialization key is held by a running instance: it starts when the key is free.
    QueueOnKey { key: String },
    /// Run it.
    Start(Box<Admitted>),
    /// It cannot even start; it fails like a step would, and the run stops.
    Unrunnable(Unrunnable),
}

/// An instance cleared to run, with everything its job needs that was decided here.
pub struct Admitted {
    pub inputs: Value,
    /// Its inputs carry a secret (a reference, a tainted output, a known secret value).
    pub secret: bool,
    pub digest: String,
    pub input_digests: Map<String, Value>,
    pub reason: String,
    /// A gate's approvals that count (as many as it asks for, of different people).
    pub approvals: Vec<Approval>,
    /// The journal's attempt number of its first attempt in this run.
    pub first_attempt: u32,
}

pub enum Unrunnable {
    Inputs(String),
    SerializeKey(String),
}

impl Unrunnable {
    pub fn message(&self) -> String {
        match self {
            Unrunnable::Inputs(why) => format!("cannot resolve inputs: {why}"),
            Unrunnable::SerializeKey(why) => format!("cannot resolve serialize key: {why}"),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum State {
    Pending,
    Running,
    Done,
    Failed(StepStatus),
    Waiting,
}

/// Whether decisions are for a run, or for `plan`, which runs nothing: there an instance that
/// would start is taken as done with outputs unknown, and keys are never held.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Run,
    Predict,
}

pub struct Scheduler<'a> {
    facts: Facts<'a>,
    mode: Mode,
    dependents: Vec<Vec<usize>>,
    height: Vec<usize>,
    state: Vec<State>,
    waiting_deps: Vec<usize>,
    ready: BinaryHeap<(usize, Reverse<usize>)>,
    outputs: HashMap<usize, Map<String, Value>>,
    /// Instances `plan` takes to run: their outputs are known only at run time.
    unknown_outputs: HashSet<usize>,
    redactor: Redactor,
    /// Outputs derived from a secret, by (instance, output): secret wherever they are used.
    tainted: HashSet<(usize, String)>,
    busy_keys: HashSet<String>,
    key_queue: HashMap<String, VecDeque<usize>>,
    key_of: HashMap<usize, String>,
    /// The serialize key each instance ran under: the critical path counts what a key made wait.
    serialized_by: Vec<Option<String>>,
    /// Each step's output specs as digested, made once for all its instances.
    outputs_specs: Vec<Option<Value>>,
    /// When each instance started and how long it took (retries included), for the critical path.
    began: Vec<Option<Instant>>,
    took: Vec<Duration>,
    counts: Counts,
}

impl<'a> Scheduler<'a> {
    pub fn new(facts: Facts<'a>, mode: Mode, redactor: Redactor) -> Scheduler<'a> {
        let plan = facts.plan;
        let n = plan.instances.len();
        let dependents = plan.dependents();
        let height = heights(plan, &dependents);
        let waiting_deps: Vec<usize> = plan.instances.iter().map(|i| i.deps.len()).collect();
        let ready = (0..n).filter(|&i| waiting_deps[i] == 0).map(|i| (height[i], Reverse(i))).collect();
        Scheduler {
            facts,
            mode,
            dependents,
            height,
            state: vec![State::Pending; n],
            waiting_deps,
            ready,
            outputs: HashMap::new(),
            unknown_outputs: HashSet::new(),
            redactor,
            tainted: HashSet::new(),
            busy_keys: HashSet::new(),
            key_queue: HashMap::new(),
            key_of: HashMap::new(),
            serialized_by: vec![None; n],
            outputs_specs: vec![None; facts.runbook.steps.len()],
            began: vec![None; n],
            took: vec![Duration::ZERO; n],
            counts: Counts::default(),
        }
    }

    /// The ready instance to decide next: the one with the longest chain of dependents below
    /// it, so a run's wall time approaches the critical path.
    pub fn next_ready(&mut self) -> Option<usize> {
        self.ready.pop().map(|(_, Reverse(i))| i)
    }

    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Decides what happens to a ready instance, and records it.
    pub fn admit(&mut self, i: usize) -> Admission {
        let facts = self.facts;
        let instance = &facts.plan.instances[i];
        let def = &facts.runbook.steps[instance.step];
        if instance.skipped_by_when {
            self.counts.skipped_by_when += 1;
            self.complete(i);
            return Admission::Skip;
        }
        let Some(journal) = facts.journal.filter(|_| !instance.deps.iter().any(|d| self.unknown_outputs.contains(d)))
        else {
            let reason =
                if facts.journal.is_none() { NOT_RUN_BEFORE } else { "an earlier step runs first; decided then" };
            return self.start_unresolved(i, reason);
        };
        let scope = self.scope(i);
        let resolved = match scope.resolve_map(&def.spec.inputs) {
            Ok(mut r) => {
                crate::model::schema::coerce_scalars(&mut r.value, &def.inputs_schema, &def.inputs_schema);
                // A known secret value that arrived some other way (a required value, say)
                // makes the step as secret as a reference would.
                r.secret |= self.redactor.finds_in(&r.value);
                r
            }
            Err(why) => return self.unrunnable(i, Unrunnable::Inputs(why)),
        };
        let outputs_spec = self.outputs_specs[instance.step]
            .get_or_insert_with(|| serde_json::to_value(&def.spec.outputs).expect("serializes"));
        let (digest, mut input_digests) =
            digests(journal, &def.spec.kind, &resolved.value, instance.item.as_ref().map(|(_, v)| v), outputs_spec);
        plan::file_contents::add_file_contents(journal, &def.spec.inputs, facts.required_files, &mut input_digests);
        let reason = match plan::decide(facts.prior, facts.rerun, &instance.id, def.id(), &digest, &input_digests) {
            Decision::Run(reason) => reason,
            Decision::Reuse(done) => {
                for name in secret_output_names(def, resolved.secret, &done.outputs, &self.redactor) {
                    self.redactor.add_value(&done.outputs[&name]);
                    self.tainted.insert((i, name));
                }
                self.outputs.insert(i, done.outputs.clone());
                self.counts.reused += 1;
                self.complete(i);
                return Admission::Reuse(ReusedStep {
                    step: instance.id.clone(),
                    kind: def.spec.kind.clone(),
                    from_run: done.run_id.clone(),
                    from_seq: done.seq,
                });
            }
        };

        let mut approvals = Vec::new();
        if def.kind.awaits_approval(&resolved.value) {
            let rule = ApprovalRule::of(&resolved.value);
            let not_by = facts.started_by.filter(|_| !rule.self_approval);
            approvals = facts
                .approvals
                .get(&instance.id)
                .into_iter()
                .flatten()
                .filter(|a| Some(a.by.as_str()) != not_by)
                .cloned()
                .collect();
            if approvals.len() < rule.approvals as usize {
                self.state[i] = State::Waiting;
                self.counts.waiting += 1;
                let request = &resolved.value["approval"];
                let prompt = request["prompt"].as_str().unwrap_or("approval needed");
                let waiting = GateWaiting {
                    prompt: self.redactor.text(prompt),
                    persona: request["persona"].as_str().map(String::from),
                    plan: facts.plan_digest.map(String::from),
                    confirm: request["confirm"].as_str().filter(|c| !c.is_empty()).map(|c| self.redactor.text(c)),
                    approvals: (rule.approvals > 1).then_some(rule.approvals),
                    not_by: not_by.map(String::from),
                };
                return Admission::AwaitApproval { waiting, reason };
            }
        }

        if let (Some(key), false) = (&def.serialize, self.key_of.contains_key(&i)) {
            let key = match self.scope(i).resolve_string(&render_key(key)) {
                Ok(k) => k.value.as_str().map(String::from).unwrap_or_else(|| k.value.to_string()),
                Err(why) => return self.unrunnable(i, Unrunnable::SerializeKey(why)),
            };
            self.serialized_by[i] = Some(key.clone());
            // `plan` holds no key: nothing it admits is running.
            if self.mode == Mode::Run {
                if !self.busy_keys.insert(key.clone()) {
                    self.key_queue.entry(key.clone()).or_default().push_back(i);
                    return Admission::QueueOnKey { key };
                }
                self.key_of.insert(i, key);
            }
        }

        self.state[i] = State::Running;
        Admission::Start(Box::new(Admitted {
            inputs: resolved.value,
            secret: resolved.secret,
            digest,
            input_digests,
            reason,
            approvals,
            first_attempt: facts.prior.attempts_in_run.get(&instance.id).copied().unwrap_or(0) + 1,
        }))
    }

    /// Only `plan` decides an instance without resolving it: its inputs wait for an earlier
    /// step that runs first, or there is no journal to have done it in.
    fn start_unresolved(&mut self, i: usize, reason: &str) -> Admission {
        debug_assert!(self.mode == Mode::Predict || self.facts.journal.is_none());
        self.state[i] = State::Running;
        Admission::Start(Box::new(Admitted {
            inputs: Value::Null,
            secret: false,
            digest: String::new(),
            input_digests: Map::new(),
            reason: reason.to_string(),
            approvals: Vec::new(),
            first_attempt: 1,
        }))
    }

    fn unrunnable(&mut self, i: usize, why: Unrunnable) -> Admission {
        self.state[i] = State::Failed(StepStatus::Failed);
        self.counts.failed += 1;
        Admission::Unrunnable(why)
    }

    fn scope(&self, i: usize) -> Scope<'_> {
        let facts = &self.facts;
        Scope {
            runbook: facts.runbook,
            vars: facts.vars,
            required: facts.required,
            plan: Some(facts.plan),
            outputs: Some(&self.outputs),
            item: facts.plan.instances[i].item.as_ref(),
            tainted: Some(&self.tainted),
            run_id: facts.run_id,
            work_dir: facts.work_dir,
        }
    }

    /// For `plan`: an instance it admitted (to start, to wait for approval, or even one that
    /// cannot run) is taken as done with outputs known only at run time, so its dependents
    /// are decided in turn.
    pub fn predicted(&mut self, i: usize) {
        self.unknown_outputs.insert(i);
        self.complete(i);
    }

    pub fn began(&mut self, i: usize, at: Instant) {
        self.began[i] = Some(at);
    }

    pub fn started_at(&self, i: usize) -> Option<Instant> {
        self.began[i]
    }

    /// Records how a started instance ended. Returns whether the run must stop starting steps
    /// (a failure other than a cancellation).
    pub fn finished(&mut self, i: usize, result: JobResult, took: Duration) -> bool {
        self.took[i] = took;
        if let Some(key) = self.key_of.remove(&i) {
            match self.key_queue.get_mut(&key).and_then(VecDeque::pop_front) {
                Some(next) => {
                    // Hand the key straight to the next waiter, so no one else can take it.
                    self.key_of.insert(next, key);
                    self.ready.push((usize::MAX, Reverse(next)));
                    self.state[next] = State::Pending;
                }
                None => {
                    self.busy_keys.remove(&key);
                }
            }
        }
        match result {
            JobResult::Succeeded { outputs, secret_outputs } => {
                for name in secret_outputs {
                    self.redactor.add_value(&outputs[&name]);
                    self.tainted.insert((i, name));
                }
                self.outputs.insert(i, outputs);
                self.counts.succeeded += 1;
                self.complete(i);
                false
            }
            JobResult::Failed { status, error } => {
                self.state[i] = State::Failed(status);
                self.counts.failed += 1;
                error.class != ErrorClass::Cancelled
            }
        }
    }

    fn complete(&mut self, i: usize) {
        self.state[i] = State::Done;
        for &d in &self.dependents[i] {
            self.waiting_deps[d] -= 1;
            if self.waiting_deps[d] == 0 {
                self.ready.push((self.height[d], Reverse(d)));
            }
        }
    }

    /// How the run ended, from its instances' states; `interrupted` when the operator stopped it.
    pub fn outcome(&mut self, interrupted: bool) -> (RunStatus, Counts) {
        let state = &self.state;
        self.counts.not_run = state.iter().filter(|s| matches!(s, State::Pending)).count();
        let status = if state.iter().any(|s| matches!(s, State::Failed(StepStatus::Failed | StepStatus::TimedOut))) {
            RunStatus::Failed
        } else if state.iter().any(|s| matches!(s, State::Failed(StepStatus::GateFailed))) {
            RunStatus::GateFailed
        } else if interrupted || state.iter().any(|s| matches!(s, State::Failed(StepStatus::Cancelled))) {
            RunStatus::Cancelled
        } else if state.iter().any(|s| matches!(s, State::Waiting)) {
            RunStatus::AwaitingApproval
        } else {
            RunStatus::Succeeded
        };
        (status, self.counts)
    }

    /// The critical path of what ran in this invocation (a reused instance took no time here),
    /// and the time all instances were busy.
    pub fn critical_path(&self) -> (Duration, Vec<String>, Duration) {
        let plan = self.facts.plan;
        let (length, steps) = critical_path(plan, &self.dependents, &self.took, &self.serialized_by, &self.began);
        let steps =
            steps.into_iter().filter(|&i| self.began[i].is_some()).map(|i| plan.instances[i].id.clone()).collect();
        (length, steps, self.took.iter().sum())
    }
}

/// Longest chain of dependents below each instance.
fn heights(plan: &Plan, dependents: &[Vec<usize>]) -> Vec<usize> {
    let n = plan.instances.len();
    let mut remaining: Vec<usize> = dependents.iter().map(Vec::len).collect();
    let mut height = vec![0usize; n];
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| remaining[i] == 0).collect();
    while let Some(i) = queue.pop_front() {
        for &d in &plan.instances[i].deps {
            height[d] = height[d].max(height[i] + 1);
            remaining[d] -= 1;
            if remaining[d] == 0 {
                queue.push_back(d);
            }
        }
    }
    height
}

#[cfg(test)]
mod tests {
    //! A kind this build does not ship, added the way any kind is: its own type and one
    //! `register` line. The loader, `plan` and the scheduler learn everything they need from it.

    use std::collections::BTreeMap;
    use std::sync::Arc;

    use async_trait::async_trait;
    use runbook_steps::{KindRole, OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome};
    use serde_json::{Value, json};

    use super::*;
    use crate::model::load::{Origin, load};
    use crate::model::vars::{self, VarInputs};

    /// Waits for a person's sign-off when its inputs carry a `ticket`; otherwise acts at once.
    struct SignOff;

    #[async_trait]
    impl StepKind for SignOff {
        fn name(&self) -> &'static str {
            "sign_off"
        }
        fn role(&self) -> KindRole {
            KindRole::Gate
        }
        fn awaits_approval(&self, inputs: &Value) -> bool {
            inputs.get("ticket").is_some()
        }
        fn inputs_schema(&self) -> Value {
            json!({
                "type": "object",
                "properties": { "ticket": { "type": "string" }, "note": { "type": "string" } },
                "additionalProperties": false
            })
        }
        fn declared_outputs(&self, _inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
            Vec::new()
        }
        async fn run(&self, _ctx: &StepContext, _inputs: &Value) -> Result<StepOutcome, StepError> {
            Ok(StepOutcome::default())
        }
    }

    const RUNBOOK: &str = r#"
[runbook]
name = "sign-offs"

[[steps]]
id = "noted"
kind = "sign_off"
inputs.note = "no ticket: acts at once"

[[steps]]
id = "ticketed"
kind = "sign_off"
after = ["noted"]
inputs.ticket = "CHG-1"
"#;

    #[test]
    fn a_kind_added_with_one_registration_line_is_loaded_planned_and_awaits_its_approval() {
        let mut registry = crate::registry();
        registry.register(Arc::new(SignOff));
        let runbook = load(Origin::File("sign-offs.toml".into()), RUNBOOK.into(), &registry).expect("loads");
        assert_eq!(runbook.steps[1].kind.role(), KindRole::Gate);
        let bad = RUNBOOK.replace("inputs.ticket", "inputs.tikcet");
        assert!(load(Origin::File("bad.toml".into()), bad, &registry).is_err(), "its schema is checked");

        let values = vars::resolve(&runbook, &VarInputs { file: None, overrides: Vec::new() }).expect("no vars");
        let required = RequiredValues::new();
        let dir = tempfile::tempdir().expect("temp dir");
        let journal = Journal::open(&dir.path().join("j.db")).expect("journal");
        let scope = Scope::before_run(&runbook, &values, &required, "r", dir.path());
        let plan = plan::expand(&runbook, &scope).expect("plan");
        let (prior, rerun, approvals) = (Prior::default(), HashSet::new(), HashMap::new());
        let facts = Facts {
            runbook: &runbook,
            plan: &plan,
            vars: &values,
            required: &required,
            required_files: &RequiredFiles::new(),
            prior: &prior,
            rerun: &rerun,
            approvals: &approvals,
            started_by: None,
            plan_digest: None,
            journal: Some(&journal),
            run_id: "r",
            work_dir: dir.path(),
        };
        let mut scheduler = Scheduler::new(facts, Mode::Run, Redactor::new(Vec::new()));

        let first = scheduler.next_ready().expect("the first step is ready");
        assert!(matches!(scheduler.admit(first), Admission::Start(_)), "no ticket: it starts");
        let done = JobResult::Succeeded { outputs: Map::new(), secret_outputs: Vec::new() };
        assert!(!scheduler.finished(first, done, Duration::ZERO));
        let second = scheduler.next_ready().expect("its dependent is ready");
        match scheduler.admit(second) {
            Admission::AwaitApproval { reason, .. } => assert_eq!(reason, NOT_RUN_BEFORE),
            _ => panic!("a ticket awaits its approval, as the kind says"),
        }
        assert_eq!(scheduler.outcome(false).0, RunStatus::AwaitingApproval);
    }
}
