//! `runbook rehearse`: every phase end to end against the built-in sandbox, with the very same
//! step code that talks to real Azure. The first thing a new user runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::cli::env::registry_for;
use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::sandbox::{SandboxOptions, azure_env, start};
use crate::cli::{Env, RerunArgs, VarArgs, run};
use runbook_steps::SettingsSource;

/// The phases a rehearsal can run, in order, with the variables that suit the sandbox.
const PHASES: &[(u8, &str)] = &[(1, "phase1-workload-identity"), (2, "phase2-management-cluster")];

fn phase_vars(phase: u8, ca_file: &Path, oidc_tool: &str) -> String {
    match phase {
        1 => format!(
            "prefix = \"rehearse\"\noidc_storage_account = \"rehearsaloidc\"\nexternal_dns = true\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nca_file = \"{}\"\noidc_tool = \"{oidc_tool}\"\n",
            ca_file.display()
        ),
        // The pull secret `phase_files` writes beside the sandbox's CA, in the rehearsal's directory.
        2 => {
            format!("external_dns = true\npull_secret = \"{}\"\n", ca_file.with_file_name("pull-secret.json").display())
        }
        _ => String::new(),
    }
}

/// Files a phase reads that a person would bring: Phase 2's pull secret (a placeholder; the
/// sandbox pulls no images).
fn phase_files(phase: u8, workdir: &Path) -> std::io::Result<()> {
    if phase == 2 {
        let path = workdir.join("pull-secret.json");
        if !path.exists() {
            std::fs::write(&path, "{\"auths\":{\"sandbox.invalid\":{\"auth\":\"cmVoZWFyc2FsOnJlaGVhcnNhbA==\"}}}\n")?;
        }
    }
    Ok(())
}

/// A sandbox, a fresh working directory and journal, and an `Env` whose Azure kinds point at
/// the sandbox. A fresh directory per rehearsal: its journal must match the fresh sandbox.
pub struct Rehearsal {
    pub sandbox: runbook_sandbox::Sandbox,
    pub workdir: PathBuf,
    pub ca_file: PathBuf,
    pub env: Env,
    /// `native` or `ccoctl` (the ccoctl stand-in, acting on the sandbox).
    pub oidc_tool: String,
}

impl Rehearsal {
    /// `journal`: where the journal goes (`--journal`); by default `journal.db` in the
    /// rehearsal's directory. Either way it must be new: a rehearsal's journal must match its
    /// fresh sandbox, and an earlier run's work in it would be taken as done.
    pub async fn start(
        env: &Env,
        base: &Path,
        journal: Option<&Path>,
        options: &SandboxOptions,
        parallelism: Option<usize>,
    ) -> CliResult<Rehearsal> {
        let workdir =
            std::path::absolute(base.join(crate::who::new_run_id())).map_err(|e| CliError::Internal(e.into()))?;
        let journal_path = match journal {
            Some(path) => std::path::absolute(path).map_err(|e| CliError::Internal(e.into()))?,
            None => workdir.join("journal.db"),
        };
        if journal_path.exists() {
            return Err(CliError::user_hint(
                format!("a rehearsal writes a new journal, and `{}` already exists", journal_path.display()),
                "each rehearsal starts a fresh sandbox, so its runs cannot share a journal with others: give --journal a new path, or leave it out to get DIR/<id>/journal.db",
            ));
        }
        let (sandbox, ca_file) = start(options, &workdir).await?;
        let mut settings = azure_env(&sandbox, &ca_file);
        crate::cli::sandbox::seed(&settings, sandbox.ca_pem()).await?;
        // The in-process management cluster, for the kube kind and kubectl in exec steps.
        let kubeconfig = crate::cli::sandbox::kubeconfig_path(&workdir);
        settings.insert("KUBECONFIG".into(), kubeconfig.display().to_string());
        let azure = SettingsSource::Fixed(settings.clone());
        let mut registry = registry_for(&azure);
        registry.register(Arc::new(runbook_steps::Kube::with_env(settings.clone())));
        registry.register(Arc::new(runbook_steps::Exec::with_env(program_env(&workdir, settings)?)));
        let env = Env { journal_path, json: env.json, mode: env.mode, registry, azure, parallelism };
        Ok(Rehearsal { sandbox, workdir, ca_file, env, oidc_tool: "native".into() })
    }

    /// Runs one phase; returns the exit, a summary for `--output json`, and the run's
    /// `run_finished` data (timings, critical path).
    pub async fn run_phase(&self, number: u8, runbook: &str) -> CliResult<(Exit, Value, Value)> {
        let vars_file = self.workdir.join(format!("phase{number}.vars.toml"));
        std::fs::write(&vars_file, phase_vars(number, &self.ca_file, &self.oidc_tool))
            .map_err(|e| CliError::Internal(e.into()))?;
        phase_files(number, &self.workdir).map_err(|e| CliError::Internal(e.into()))?;
        let vars = VarArgs { vars_file: Some(vars_file), vars: Vec::new() };
        let exit =
            run::run(&self.env, runbook, &vars, Some(self.workdir.clone()), false, &RerunArgs::default()).await?;
        let journal = self.env.require_journal()?;
        let record = journal.latest_run(Some(runbook))?;
        let finished = record
            .as_ref()
            .and_then(|r| journal.events_for_run(&r.id).ok())
            .and_then(|events| {
                events
                    .iter()
                    .rev()
                    .find(|e| e.kind() == runbook_journal::RUN_FINISHED)
                    .and_then(|e| serde_json::to_value(&e.data).ok())
            })
            .unwrap_or(Value::Null);
        let summary = json!({ "runbook": runbook, "run_id": record.map(|r| r.id), "status": finished["status"] });
        Ok((exit, summary, finished))
    }

    pub fn write_requests(&self) -> usize {
        self.sandbox.request_log().iter().filter(|r| r.is_write()).count()
    }
}

/// What programs run by exec steps see in a rehearsal: the sandbox's settings, and a PATH that
/// starts with the stand-ins (`ccoctl` and `hypershift` are this very binary under other names).
fn program_env(
    workdir: &Path,
    mut settings: std::collections::BTreeMap<String, String>,
) -> CliResult<std::collections::BTreeMap<String, String>> {
    let bin = workdir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| CliError::Internal(e.into()))?;
    let me = std::env::current_exe().map_err(|e| CliError::Internal(e.into()))?;
    for tool in ["ccoctl", "hypershift"] {
        std::os::unix::fs::symlink(&me, bin.join(tool)).map_err(|e| CliError::Internal(e.into()))?;
    }
    let path = std::env::var("PATH").unwrap_or_default();
    settings.insert("PATH".into(), format!("{}:{path}", bin.display()));
    Ok(settings)
}

/// The second person's side of a rehearsal: their journal and directory, and the hand-off file
/// that reached them.
pub struct SecondPerson {
    pub journal: PathBuf,
    pub dir: PathBuf,
    pub file: PathBuf,
    pub summary: Value,
}

/// Plays the hand-off between the two people of the procedure: each persona gets an SSH key
/// pair; the Azure administrator exports Phase 1's checkpoints from the rehearsal's journal,
/// signed with theirs and encrypted to the HyperShift administrator's, who imports the file
/// into a journal and directory of their own, trusting the first key only.
pub fn hand_off(rehearsal: &Rehearsal) -> CliResult<SecondPerson> {
    let first = persona_key(&rehearsal.workdir, "azure-admin")?;
    let second = persona_key(&rehearsal.workdir, "hypershift-admin")?;
    let dir = rehearsal.workdir.join("hypershift-admin");
    std::fs::create_dir_all(&dir).map_err(|e| CliError::Internal(e.into()))?;
    let file = rehearsal.workdir.join("phase1.handoff");
    let journal = rehearsal.env.require_intact_journal()?;
    let exported = crate::cli::export::export_file(
        &journal,
        &crate::cli::export::ExportArgs {
            target: PHASES[0].1.to_string(),
            to: second.1.display().to_string(),
            out: file.clone(),
            sign_with: first.0.clone(),
            no_secrets: false,
        },
    )?;
    let second_journal = dir.join("journal.db");
    let (imported, _) = crate::cli::import::import_file(
        &second_journal,
        &crate::cli::import::ImportArgs {
            file: file.clone(),
            identity: Some(second.0.clone()),
            trust: vec![first.1.display().to_string()],
            trusted_keys: None,
            dir: Some(dir.clone()),
            persona: Some("hypershift-admin".into()),
        },
    )?;
    let import_run = match imported {
        crate::cli::import::Imported::New { run_id, .. } | crate::cli::import::Imported::Already { run_id } => run_id,
    };
    let summary = json!({
        "file": file, "sha256": exported.file_sha256, "checkpoints": exported.checkpoints,
        "from": { "persona": "azure-admin", "journal": rehearsal.env.journal_path, "run": exported.run_id, "key": first.1 },
        "to": { "persona": "hypershift-admin", "journal": second_journal, "dir": dir, "run": import_run, "key": second.1 },
    });
    Ok(SecondPerson { journal: second_journal, dir, file, summary })
}

/// A persona's SSH key pair (private 0600, and `.pub`), made once per rehearsal.
fn persona_key(workdir: &Path, persona: &str) -> CliResult<(PathBuf, PathBuf)> {
    let dir = workdir.join("personas").join(persona);
    std::fs::create_dir_all(&dir).map_err(|e| CliError::Internal(e.into()))?;
    let private = dir.join("id_ed25519");
    let public = dir.join("id_ed25519.pub");
    let mut rng = ssh_key::rand_core::OsRng;
    let mut key = ssh_key::PrivateKey::random(&mut rng, ssh_key::Algorithm::Ed25519)
        .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot make a key for {persona}: {e}")))?;
    key.set_comment(format!("{persona}@rehearsal"));
    key.write_openssh_file(&private, ssh_key::LineEnding::LF)
        .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot write `{}`: {e}", private.display())))?;
    let line = key.public_key().to_openssh().map_err(|e| CliError::Internal(anyhow::anyhow!("{e}")))?;
    std::fs::write(&public, format!("{line}\n")).map_err(|e| CliError::Internal(e.into()))?;
    Ok((private, public))
}

pub fn phases(phase: Option<u8>) -> CliResult<Vec<(u8, &'static str)>> {
    let phases: Vec<(u8, &str)> = PHASES.iter().copied().filter(|(p, _)| phase.is_none_or(|want| want == *p)).collect();
    if phases.is_empty() {
        let known: Vec<String> = PHASES.iter().map(|(p, _)| p.to_string()).collect();
        return Err(CliError::user_hint(
            format!("phase {} cannot be rehearsed yet", phase.unwrap_or(0)),
            format!("rehearsable phases: {}", known.join(", ")),
        ));
    }
    Ok(phases)
}

pub async fn rehearse(
    env: &Env,
    phase: Option<u8>,
    base: PathBuf,
    journal: Option<PathBuf>,
    options: SandboxOptions,
    check_idempotent: bool,
    oidc_tool: &str,
) -> CliResult {
    let phases = phases(phase)?;
    let mut rehearsal = Rehearsal::start(env, &base, journal.as_deref(), &options, None).await?;
    rehearsal.oidc_tool = oidc_tool.to_string();
    if !env.json {
        eprintln!("rehearsing against the built-in sandbox in {}", rehearsal.workdir.display());
    }
    let mut runs = Vec::new();
    let mut exit = Exit::Ok;
    for &(number, runbook) in &phases {
        let (phase_exit, summary, _) = rehearsal.run_phase(number, runbook).await?;
        runs.push(summary);
        exit = phase_exit;
        if exit != Exit::Ok {
            break;
        }
    }
    // Running everything again must change nothing in Azure: count the writes it makes.
    let mut second_pass_writes = Value::Null;
    if check_idempotent && exit == Exit::Ok {
        let before = rehearsal.write_requests();
        for &(number, runbook) in &phases {
            let (phase_exit, summary, _) = rehearsal.run_phase(number, runbook).await?;
            runs.push(summary);
            exit = phase_exit;
        }
        let writes = rehearsal.write_requests() - before;
        second_pass_writes = json!(writes);
        if writes > 0 && exit == Exit::Ok {
            eprintln!("error: running the phases again made {writes} write requests; it should make none");
            exit = Exit::StepFailed;
        }
    }
    // Phase 1's results go to the second person, as the procedure hands them over.
    let second = match phases.first() {
        Some((1, _)) if exit == Exit::Ok => Some(hand_off(&rehearsal)?),
        _ => None,
    };
    let resources = rehearsal.sandbox.resource_ids();
    let writes = rehearsal.write_requests();
    // Serializing writes per identity must mean Azure never had to refuse one as concurrent.
    let concurrent_write_conflicts = rehearsal
        .sandbox
        .request_log()
        .iter()
        .filter(|r| {
            r.error_code.as_deref() == Some("ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity")
        })
        .count();
    let journal = rehearsal.env.journal_path.clone();
    if env.json {
        println!(
            "{}",
            json!({ "runs": runs, "resources": resources, "write_requests": writes, "second_pass_write_requests": second_pass_writes,
                    "concurrent_write_conflicts": concurrent_write_conflicts,
                    "workdir": rehearsal.workdir, "journal": journal,
                    "handoff": second.as_ref().map(|s| &s.summary) })
        );
    } else {
        eprintln!(
            "rehearsal {}: {} resources in the sandbox, {writes} write requests; look around with\n  runbook --journal {} status",
            if exit == Exit::Ok { "succeeded" } else { "stopped" },
            resources.len(),
            journal.display()
        );
        if let Some(second) = &second {
            eprintln!(
                "azure-admin's journal: {}\nhand-off file: {}\nhypershift-admin's journal: {} (files in {})\nthe whole story:\n  runbook --journal {} --journal {} audit --format markdown",
                journal.display(),
                second.file.display(),
                second.journal.display(),
                second.dir.display(),
                journal.display(),
                second.journal.display()
            );
        }
    }
    rehearsal.sandbox.shutdown().await;
    Ok(exit)
}
