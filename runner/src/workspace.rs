//! Where a command works: its journal, the step kinds it knows, the Azure settings they read.
//! Sessions and commands share it; how results are printed is the command line's business
//! (`cli/printer.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use runbook_journal::Journal;
use runbook_steps::{Registry, SettingsSource};

use crate::exit::{CliError, CliResult};
use crate::model::{Runbook, load};

#[derive(Clone)]
pub struct Workspace {
    pub journal_path: PathBuf,
    pub registry: Registry,
    /// The settings the registry's Azure kinds read; journaled with each run as its target.
    pub azure: SettingsSource,
    /// Overrides every runbook's parallelism (the benchmark runs plans one step at a time).
    pub parallelism: Option<usize>,
}

/// The step kinds, their Azure kinds (and the `http` kind, for the CA they trust) reading `azure`.
pub(crate) fn registry_for(azure: &SettingsSource) -> Registry {
    let mut registry = crate::registry();
    if let SettingsSource::Fixed(settings) = azure {
        registry.register(Arc::new(runbook_steps::Arm::with_env(settings.clone())));
        registry.register(Arc::new(runbook_steps::Graph::with_env(settings.clone())));
        registry.register(Arc::new(runbook_steps::Blob::with_env(settings.clone())));
        // The OIDC issuer checks trust what Azure's kinds trust (SSL_CERT_FILE, RUNBOOK_CA_FILE).
        registry.register(Arc::new(runbook_steps::Http::with_env(settings.clone())));
    }
    registry
}

/// Opens the journal at `path` for writing, creating it (and its directory) when missing.
pub(crate) fn create_journal(path: &Path) -> CliResult<Journal> {
    if runbook_journal::is_server_url(path) {
        return Ok(Journal::open(path)?);
    }
    // A directory made for the journal is 0700: it holds the journal, its key and its locks.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| CliError::user(format!("cannot create `{}`: {e}", dir.display())))?;
    }
    Ok(Journal::open(path)?)
}

impl Workspace {
    /// The journal at `journal_path`, the kinds of this build reading `azure`.
    pub fn new(journal_path: PathBuf, azure: SettingsSource) -> Self {
        Workspace { journal_path, registry: registry_for(&azure), azure, parallelism: None }
    }

    /// The same kinds and settings on another journal (rehearsals and benchmarks keep their own).
    pub fn with_journal(&self, journal_path: PathBuf) -> Self {
        Workspace { journal_path, ..self.clone() }
    }

    /// Finds and validates a runbook; every problem is reported at once.
    pub fn load_runbook(&self, name: &str) -> CliResult<Runbook> {
        let (origin, text) = crate::bundled::locate(name).map_err(|problem| CliError::Problems(vec![problem]))?;
        load::load(origin, text, &self.registry).map_err(CliError::Problems)
    }

    /// Opens the journal for writing, creating it (and its directory) when missing.
    pub fn open_journal(&self) -> CliResult<Arc<Journal>> {
        Ok(Arc::new(create_journal(&self.journal_path)?))
    }

    /// Opens an existing journal without creating anything; None when there is none yet.
    pub fn existing_journal(&self) -> CliResult<Option<Arc<Journal>>> {
        if !runbook_journal::is_server_url(&self.journal_path) && !self.journal_path.exists() {
            return Ok(None);
        }
        match Journal::open_existing(&self.journal_path) {
            Ok(journal) => Ok(Some(Arc::new(journal))),
            // A journal whose creation never finished: its leftovers were just removed.
            Err(runbook_journal::Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub fn require_journal(&self) -> CliResult<Arc<Journal>> {
        self.existing_journal()?.ok_or_else(|| {
            CliError::user_hint(
                format!("no journal at `{}`", self.journal_path.display()),
                "run a runbook first, or point --journal / RUNBOOK_JOURNAL at an existing journal",
            )
        })
    }

    /// An existing journal that passed verification, for commands that decide or show something
    /// from what it holds: an altered journal is refused (exit 6) before anything is read.
    pub fn require_intact_journal(&self) -> CliResult<Arc<Journal>> {
        let journal = self.require_journal()?;
        journal.ensure_intact()?;
        Ok(journal)
    }
}
