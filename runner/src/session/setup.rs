//! The setup a run journals (`RunSetup`): built from what the operator gave, and checked on
//! resume against the Azure it would act on now.

use std::path::{Path, PathBuf};

use runbook_journal::{Journal, RunRecord, RunSetup, RunbookOrigin};
use runbook_steps::AzureTarget;

use crate::exit::{CliError, CliResult};
use crate::model::Origin;
use crate::model::vars::VarInputs;
use crate::session::prepare::Prepared;

pub(crate) fn run_setup(
    target: &AzureTarget,
    prepared: &Prepared,
    journal: &Journal,
    inputs: &VarInputs,
    work_dir: &Path,
    fresh: bool,
) -> RunSetup {
    let overrides = inputs
        .overrides
        .iter()
        .map(|(name, value)| (name.clone(), (!prepared.vars.secret.contains(name)).then(|| value.clone())))
        .collect();
    RunSetup {
        values: prepared.vars.redacted(|b| journal.digest(b)),
        file: inputs.file.as_ref().map(|p| absolute(p).display().to_string()),
        overrides,
        origin: Some(match &prepared.runbook.origin {
            Origin::Bundled(name) => RunbookOrigin::Bundled(name.clone()),
            Origin::File(path) => RunbookOrigin::File(absolute(path).display().to_string()),
        }),
        workdir: work_dir.display().to_string(),
        fresh,
        azure: serde_json::to_value(target).unwrap_or_default(),
        runbook_changed_from: None,
        cluster: crate::session::run_key::cluster_named(&prepared.runbook, &prepared.vars),
    }
}

/// A run made against the built-in sandbox can only go on against that same sandbox instance,
/// a run made against Azure never against a sandbox, nor against another tenant, subscription or
/// cloud: checked before anything is sent, so a resume never falls back to another credential
/// (the default one reaches real Azure).
/// `now` is the Azure this process's settings point at.
pub(crate) fn check_same_azure(now: &AzureTarget, record: &RunRecord, setup: &RunSetup) -> CliResult<()> {
    let Ok(made_on) = serde_json::from_value::<AzureTarget>(setup.azure.clone()) else {
        return Ok(());
    };
    let elsewhere = format!(
        "run {} was made against {}, and this resume would act on {}",
        record.id,
        made_on.describe(),
        now.describe()
    );
    if made_on.is_sandbox() && *now != made_on {
        return Err(CliError::user_hint(
            format!(
                "{elsewhere}; a sandbox lives only as long as the command that started it, so its runs cannot be continued anywhere else"
            ),
            "start a new rehearsal (`runbook rehearse`); for a sandbox from `runbook sandbox up`, resume with its sandbox.env sourced while it is still up",
        ));
    }
    if !made_on.is_sandbox() && now.is_sandbox() {
        return Err(CliError::user_hint(
            elsewhere,
            "resume it with the Azure settings it was made with; rehearse in a journal of its own",
        ));
    }
    // Another tenant, subscription or cloud: the run's finished steps did their work elsewhere.
    if !made_on.same_azure(now) {
        return Err(CliError::user_hint(
            elsewhere,
            "resume it with the Azure settings it was made with, or start a new run (`runbook run`) against this one",
        ));
    }
    Ok(())
}

pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
