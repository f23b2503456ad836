//! What every command needs: where the journal is, how to print, how to find runbooks.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use runbook_journal::Journal;
use runbook_steps::{Registry, SettingsSource};

use crate::cli::exit::{CliError, CliResult};
use crate::cli::{Global, OutputFormat};
use crate::model::{Runbook, load};
use crate::report::{DisplayMode, display_mode};

pub struct Env {
    pub journal_path: PathBuf,
    pub json: bool,
    pub mode: DisplayMode,
    /// `--verbose`: full messages behind one-line notices.
    pub verbose: bool,
    pub registry: Registry,
    /// The settings the registry's Azure kinds read; journaled with each run as its target.
    pub azure: SettingsSource,
    /// Overrides every runbook's parallelism (the benchmark runs plans one step at a time).
    pub parallelism: Option<usize>,
}

/// Where the Azure kinds read their settings: the environment, with `--azure-credential` in
/// place of its RUNBOOK_AZURE_CREDENTIAL when given.
fn azure_settings(global: &Global) -> SettingsSource {
    match global.azure_credential {
        None => SettingsSource::Process,
        Some(choice) => {
            let mut settings: std::collections::BTreeMap<String, String> = std::env::vars().collect();
            settings.insert("RUNBOOK_AZURE_CREDENTIAL".into(), choice.setting().into());
            SettingsSource::Fixed(settings)
        }
    }
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
pub(crate) fn create_journal(path: &std::path::Path) -> CliResult<Journal> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| CliError::user(format!("cannot create `{}`: {e}", dir.display())))?;
    }
    Ok(Journal::open(path)?)
}

impl Env {
    pub fn new(global: &Global) -> Self {
        let json = global.output == OutputFormat::Json;
        let azure = azure_settings(global);
        let is_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
        Env {
            journal_path: global.journal.first().cloned().unwrap_or_else(|| PathBuf::from(".runbook/journal.db")),
            json,
            mode: display_mode(std::io::stderr().is_terminal(), is_ci, global.quiet, global.no_progress, json),
            verbose: global.verbose,
            registry: registry_for(&azure),
            azure,
            parallelism: None,
        }
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
        if !self.journal_path.exists() {
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

    /// Prints a command's result: JSON on stdout with --output json, else the text.
    pub fn print(&self, text: &str, json: serde_json::Value) {
        if self.json {
            println!("{}", serde_json::to_string(&json).expect("serializes"));
        } else {
            print!("{text}");
        }
    }
}
