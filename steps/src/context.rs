use std::path::{Path, PathBuf};
use std::sync::Arc;

use runbook_clock::Clock;
use tokio_util::sync::CancellationToken;

use crate::gate::Approval;

/// Where templates named by a step come from (the runbook's directory, then the bundled set).
pub trait TemplateSource: Send + Sync {
    /// The template text and a display name for errors, or None when no such template exists.
    fn load(&self, name: &str) -> Option<(String, String)>;
}

/// Everything a step may know about the run it belongs to. Built by the runner per attempt.
#[derive(Clone)]
pub struct StepContext {
    pub run_id: String,
    pub step_id: String,
    pub attempt: u32,
    /// Relative paths in inputs resolve against this directory (the run's working directory).
    pub work_dir: PathBuf,
    pub templates: Arc<dyn TemplateSource>,
    pub cancel: CancellationToken,
    /// True when any resolved input carries a secret: files a step writes are then 0600.
    pub handles_secrets: bool,
    /// Secret values to scrub from anything a step captures (stdout, stderr, bodies).
    pub secrets: Arc<Vec<String>>,
    /// The declared outputs of this step, for kinds that extract them (exec, http).
    pub output_specs: Arc<std::collections::BTreeMap<String, crate::OutputSpec>>,
    /// The journaled approvals of this gate (of different people, as many as it asks for).
    pub approvals: Vec<Approval>,
    /// The run's clock: every wait, deadline and timestamp of a step reads it, so a run on a
    /// simulated clock waits out a long Retry-After or a deadline without sleeping.
    pub clock: Clock,
    /// What marks a tenant-wide object (an Entra application) as made by this journal for this
    /// cluster: a tag keyed by the journal's key, so no other journal (another team's, or
    /// another cluster's) can produce it. A step finds an existing object of its name and takes
    /// it only when it carries this tag or the operator adopted it by name. None outside a run.
    pub owner: Option<String>,
    /// Values this step's inputs take from a hand-off (another person's word, by `alias.output`)
    /// that could lead a path out of the run's working directory (`/…`, `~…`, `..`): a path the
    /// step reads that holds one and leaves the directory is refused ([`StepContext::resolve_path`]).
    pub handed: Arc<Vec<(String, String)>>,
}

/// No templates at all: for steps run outside a runbook (the stand-ins' inner steps, tests).
pub struct NoTemplates;

impl TemplateSource for NoTemplates {
    fn load(&self, _name: &str) -> Option<(String, String)> {
        None
    }
}

impl StepContext {
    /// A first attempt in `work_dir` with no templates, secrets, declared outputs or approval,
    /// on the process's clock; the `with_*` methods add what a caller has.
    pub fn new(run_id: impl Into<String>, step_id: impl Into<String>, work_dir: impl Into<PathBuf>) -> Self {
        StepContext {
            run_id: run_id.into(),
            step_id: step_id.into(),
            attempt: 1,
            work_dir: work_dir.into(),
            templates: Arc::new(NoTemplates),
            cancel: CancellationToken::new(),
            handles_secrets: false,
            secrets: Arc::new(Vec::new()),
            output_specs: Arc::new(std::collections::BTreeMap::new()),
            approvals: Vec::new(),
            clock: Clock::process(),
            owner: None,
            handed: Arc::default(),
        }
    }

    /// The tag that marks what this run's journal made for its cluster (see [`StepContext::owner`]).
    pub fn with_owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// The clock the step waits on and stamps with (the engine passes its own).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    pub fn with_templates(mut self, templates: Arc<dyn TemplateSource>) -> Self {
        self.templates = templates;
        self
    }

    /// Secrets to scrub; a step given any also writes its files 0600.
    pub fn with_secrets(mut self, secrets: Vec<String>) -> Self {
        self.handles_secrets = !secrets.is_empty();
        self.secrets = Arc::new(secrets);
        self
    }

    pub fn with_output_specs(mut self, specs: std::collections::BTreeMap<String, crate::OutputSpec>) -> Self {
        self.output_specs = Arc::new(specs);
        self
    }

    /// Where a path a step reads is: relative to the run's working directory, or absolute as the
    /// runbook wrote it. A path that leaves the working directory because of a value a hand-off
    /// brought is refused: a signer vouches for values, and a value is not a licence to read any
    /// file of the importer's (a file travels in the hand-off as a file).
    pub fn resolve_path(&self, path: &str) -> Result<PathBuf, crate::StepError> {
        let parsed = Path::new(path);
        let leaves = parsed.is_absolute()
            || path.starts_with('~')
            || parsed.components().any(|c| matches!(c, std::path::Component::ParentDir));
        if leaves && let Some((name, _)) = self.handed.iter().find(|(_, value)| path.contains(value.as_str())) {
            return Err(crate::StepError::invalid_inputs(format!(
                "the path `{path}` leaves the run's working directory through `{name}`, a value a hand-off brought"
            ))
            .with_code("HandedPathOutside")
            .with_hint(format!(
                "a hand-off carries files as files: the runbook that publishes `{name}` should publish the file (`files`), or the operator gives the path as a variable"
            )));
        }
        Ok(if parsed.is_absolute() { parsed.to_path_buf() } else { self.work_dir.join(parsed) })
    }

    /// Where a step writes a file: relative to the run's working directory and inside it (see
    /// [`output_path_problem`]), so a runbook cannot write over files elsewhere on the machine.
    pub fn output_path(&self, path: &str) -> Result<PathBuf, crate::StepError> {
        match output_path_problem(path) {
            None => Ok(self.work_dir.join(path)),
            Some(why) => Err(crate::StepError::invalid_inputs(why)
                .with_hint("write files under the run's working directory (`runbook run --workdir DIR`)")),
        }
    }

    /// Replaces every secret value in `text` so captured output can be journaled and shown.
    pub fn redact(&self, text: &str) -> String {
        crate::redact::redact(text, &self.secrets)
    }

    /// What of a captured stream (`from`: stdout, stderr or a body) is kept as evidence: its last
    /// `max` characters, cut after the secrets are replaced in the whole stream (so no cut leaves
    /// a piece of one). Nothing at all is kept when a secret output of this step is read from it
    /// whole (its value is all of the stream, as a kubeconfig on stdout is), or when the step
    /// failed before its secret outputs were extracted (so the runner cannot know what to
    /// replace); one extracted by a JSON pointer or a regex is replaced by the runner.
    pub fn kept(&self, from: crate::OutputSource, text: &str, max: usize, extracted: bool) -> String {
        let reads = |spec: &crate::OutputSpec| match (spec.from, from) {
            (crate::OutputSource::Stderr, crate::OutputSource::Stderr) => true,
            (crate::OutputSource::Stderr, _) | (_, crate::OutputSource::Stderr) => false,
            _ => true,
        };
        let whole = |spec: &crate::OutputSpec| spec.json_pointer.is_none() && spec.regex.is_none();
        let hidden =
            self.output_specs.iter().find(|(_, spec)| spec.secret && reads(spec) && (!extracted || whole(spec)));
        match hidden {
            Some((name, _)) => format!("<not kept: the secret output `{name}` is read from it>"),
            None => crate::capture::tail(&self.redact(text), max),
        }
    }
}

/// Why a path a step writes to is refused, or None: it must be relative (to the run's working
/// directory), must not climb out of it with `..`, and must name a file.
pub fn output_path_problem(path: &str) -> Option<String> {
    let parsed = Path::new(path);
    if path.trim().is_empty() {
        Some("the output path is empty".into())
    } else if path.contains('\0') {
        Some(format!("the output path `{}` holds a NUL byte", path.escape_debug()))
    } else if parsed.is_absolute() {
        Some(format!("the output path `{path}` is absolute; files are written under the run's working directory"))
    } else if parsed.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        Some(format!("the output path `{path}` leaves the run's working directory with `..`"))
    } else if path.ends_with('/') || parsed.file_name().is_none() {
        Some(format!("the output path `{path}` names a directory, not a file"))
    } else {
        None
    }
}

/// Why a template name is refused, or None: templates are named, not given as paths, and found
/// beside the runbook or among the bundled ones.
pub fn template_name_problem(name: &str) -> Option<String> {
    let parsed = Path::new(name);
    if name.trim().is_empty() {
        Some("the template name is empty".into())
    } else if parsed.is_absolute() || parsed.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        Some(format!(
            "template `{name}` is a path outside the runbook's directory; templates are named, e.g. \"summary.json\""
        ))
    } else {
        None
    }
}
