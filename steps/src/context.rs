use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// A journaled approval of this gate, if an operator gave one.
    pub approval: Option<Approval>,
}

impl StepContext {
    pub fn resolve_path(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() { path.to_path_buf() } else { self.work_dir.join(path) }
    }

    /// Replaces every secret value in `text` so captured output can be journaled and shown.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in self.secrets.iter().filter(|s| !s.is_empty()) {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "<redacted>");
            }
        }
        out
    }
}
