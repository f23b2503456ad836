//! What every command has: the workspace it works in (journal, kinds, Azure settings) and the
//! printer it speaks through.

use std::path::PathBuf;

use runbook_steps::SettingsSource;

use crate::cli::Global;
use crate::cli::printer::Printer;
use crate::workspace::Workspace;

pub struct Env {
    pub workspace: Workspace,
    pub printer: Printer,
}

/// Commands reach the journal, the runbooks and the Azure settings through `env.…`.
impl std::ops::Deref for Env {
    type Target = Workspace;

    fn deref(&self) -> &Workspace {
        &self.workspace
    }
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

impl Env {
    pub fn new(global: &Global) -> Self {
        let journal_path = global.journal.first().cloned().unwrap_or_else(|| PathBuf::from(".runbook/journal.db"));
        Env { workspace: Workspace::new(journal_path, azure_settings(global)), printer: Printer::new(global) }
    }

    /// A command's result: JSON on stdout with --output json, else the text.
    pub fn print(&self, text: &str, json: serde_json::Value) {
        self.printer.result(text, json);
    }
}
