//! `runbook rehearse`: every phase end to end against the built-in sandbox, with the very same
//! step code that talks to real Azure. The first thing a new user runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::idempotence::{Principals, SecondPass, WriteWatch, counted, write_lines};
use crate::cli::sandbox::{SandboxOptions, azure_env, start};
use crate::cli::{Env, run};
use crate::model::vars::VarInputs;
use crate::session::{self, Rerun, ResumeRequest, RunRequest};
use crate::workspace::registry_for;
use runbook_steps::SettingsSource;

/// The phases a rehearsal can run, in order: (phase, runbook). Day 2 (4) and cleanup (5) run
/// several runbooks each, in this order.
const PHASES: &[(u8, &str)] = &[
    (1, "phase1-workload-identity"),
    (2, "phase2-management-cluster"),
    (3, "phase3-hosted-cluster"),
    (4, "day2-add-nodepool"),
    (4, "day2-scale-nodepool"),
    (4, "day2-upgrade-cluster"),
    (4, "day2-delete-nodepool"),
    (5, "cleanup-hosted-cluster"),
    (5, "cleanup-shared-resources"),
];

/// A phase's number and one of its runbooks.
pub type PhaseRunbook = (u8, &'static str);

/// What a person calls each phase.
pub fn phase_name(phase: u8) -> String {
    match phase {
        4 => "Day 2".into(),
        5 => "Cleanup".into(),
        n => format!("Phase {n}"),
    }
}

/// Variables of Phases 1 and 2 that suit the sandbox. Phase 1 chooses the DNS strategy
/// (`external_dns`), which Phases 2 and 3 and cleanup read from its checkpoints (Phase 2 picks
/// the matching `hypershift install` from it, never from a value of its own).
fn phase_vars(phase: u8, rehearsal: &Rehearsal) -> String {
    let external_dns = rehearsal.external_dns;
    match phase {
        1 => format!(
            "prefix = \"rehearse\"\noidc_storage_account = \"rehearsaloidc\"\nexternal_dns = {external_dns}\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nca_file = \"{}\"\noidc_tool = \"{}\"\nidentity_tool = \"{}\"\n",
            // As Azure's public host names the sandbox is reached as real Azure is: the CA is
            // the environment's (SSL_CERT_FILE), not the runbook's.
            if rehearsal.sandbox.answers_as_public_names() {
                String::new()
            } else {
                rehearsal.ca_file.display().to_string()
            },
            rehearsal.oidc_tool,
            rehearsal.identity_tool
        ),
        // The pull secret `phase_files` writes in the directory of the person running the phase.
        2 => format!("pull_secret = \"{}\"\n", rehearsal.workdir.join("pull-secret.json").display()),
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
    /// Phase 1's `identity_tool`: native, or hypershift (`create iam azure`).
    pub identity_tool: String,
    /// Phase 3's `infra_tool`: native, or hypershift (`create infra azure`, then `--infra-json`).
    pub infra_tool: String,
    /// The procedure's DNS strategy: with External DNS (its Option 1) or without (Option 2).
    pub external_dns: bool,
    /// One thing broken on purpose (`--break`): the phases after it wait for health only as
    /// long as a healthy sandbox needs, so the symptom ends the run instead of a 30-minute wait.
    pub breakage: Option<runbook_sandbox::Breakage>,
    /// The sandbox's latency scale, for those waits.
    pub latency_scale: f64,
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
        programs: &Programs,
        parallelism: Option<usize>,
    ) -> CliResult<Rehearsal> {
        let workdir =
            std::path::absolute(base.join(crate::who::new_run_id())).map_err(|e| CliError::Internal(e.into()))?;
        let journal_path = match journal {
            // A server's URL is not a path to make absolute.
            Some(url) if runbook_journal::is_server_url(url) => url.to_path_buf(),
            Some(path) => std::path::absolute(path).map_err(|e| CliError::Internal(e.into()))?,
            None => workdir.join("journal.db"),
        };
        if journal_exists(&journal_path)? {
            return Err(CliError::user_hint(
                format!("a rehearsal writes a new journal, and `{}` already exists", journal_path.display()),
                "each rehearsal starts a fresh sandbox, so its runs cannot share a journal with others: give --journal a new path, or leave it out to get DIR/<id>/journal.db",
            ));
        }
        let (sandbox, ca_file) = start(options, &workdir).await?;
        let mut settings = azure_env(&sandbox, &ca_file);
        crate::cli::sandbox::seed(&sandbox).await?;
        // The in-process management cluster, for the kube kind and kubectl in exec steps.
        let kubeconfig = crate::cli::sandbox::kubeconfig_path(&workdir);
        settings.insert("KUBECONFIG".into(), kubeconfig.display().to_string());
        let azure = SettingsSource::Fixed(settings.clone());
        let mut registry = registry_for(&azure);
        registry.register(Arc::new(runbook_steps::Kube::with_env(settings.clone())));
        registry.register(Arc::new(runbook_steps::Exec::with_env(program_env(&workdir, programs, settings)?)));
        let env = Env {
            workspace: crate::workspace::Workspace { journal_path, registry, azure, parallelism },
            printer: env.printer,
        };
        Ok(Rehearsal {
            sandbox,
            workdir,
            ca_file,
            env,
            oidc_tool: "native".into(),
            identity_tool: "native".into(),
            infra_tool: "native".into(),
            external_dns: true,
            breakage: None,
            latency_scale: options.latency_scale,
        })
    }

    /// Runs one phase; returns the exit, a summary for `--output json`, and the run's
    /// `run_finished` data (timings, critical path).
    pub async fn run_phase(&self, number: u8, runbook: &str) -> CliResult<(Exit, Value, Value)> {
        let vars_file = self.workdir.join(format!("{runbook}.vars.toml"));
        let mut text = match later_phase_vars(runbook, &self.workdir).map_err(|e| CliError::Internal(e.into()))? {
            Some(text) => text,
            None => phase_vars(number, self),
        };
        if runbook == "phase3-hosted-cluster" {
            // Who makes the cluster's private zone, load balancer and roles.
            text.push_str(&format!("infra_tool = \"{}\"\n", self.infra_tool));
        }
        if self.breakage.is_some()
            && let Some(var) = health_wait_var(runbook)
        {
            text.push_str(&format!("{var} = \"{}s\"\n", broken_wait_secs(self.latency_scale)));
        }
        runbook_files::write(&vars_file, text.as_bytes(), runbook_files::PUBLIC, runbook_files::Existing::Replace)
            .map_err(|e| CliError::Internal(e.into()))?;
        phase_files(number, &self.workdir).map_err(|e| CliError::Internal(e.into()))?;
        let request = RunRequest {
            runbook: runbook.to_string(),
            inputs: VarInputs { file: Some(vars_file), overrides: Vec::new() },
            work_dir: Some(self.workdir.clone()),
            fresh: false,
            rerun: Rerun::default(),
        };
        let ran = run::run_request(&self.env, request, run::Doctor::Skip).await?;
        let mut exit = run::finished_exit(&self.env, &ran);
        let journal = self.env.require_journal()?;
        let record = journal.run(&ran.run_id)?;
        if exit == Exit::AwaitingApproval
            && let Some(record) = &record
        {
            exit = self.approve_and_resume(&record.id).await?;
        }
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
        let retried = record.as_ref().map(|r| retried_steps(&journal, &r.id)).transpose()?.unwrap_or(0);
        let critical_path =
            record.as_ref().map(|r| critical_path_steps(&journal, &r.id)).transpose()?.unwrap_or_default();
        let summary = json!({
            "phase": number, "runbook": runbook, "run_id": record.map(|r| r.id), "status": finished["status"],
            "duration_ms": finished["duration_ms"], "critical_path_ms": finished["critical_path_ms"],
            "critical_path": critical_path,
            "steps": finished["counts"], "retried": retried,
            // What Azure and the management cluster hold once this runbook is done, so each
            // runbook's effect can be counted.
            "resources": self.sandbox.resource_ids(), "kube": self.kube_objects(),
        });
        Ok((exit, summary, finished))
    }

    /// A rehearsal plays the persona a manual gate asks for: it approves what the gate names
    /// (recorded in the journal as any approval is), then resumes the run.
    async fn approve_and_resume(&self, run_id: &str) -> CliResult<Exit> {
        let journal = self.env.require_journal()?;
        let (states, _) = crate::cli::inspect::step_states(&journal, run_id)?;
        let waiting: Vec<String> =
            states.iter().filter(|(_, s)| s["state"] == "awaiting_approval").map(|(k, _)| k.clone()).collect();
        drop(journal);
        for gate in &waiting {
            if !self.env.printer.json {
                self.env.printer.line(format_args!("rehearsal: approving gate `{gate}` as its persona would"));
            }
            crate::cli::approve::approve(
                &self.env,
                run_id,
                gate,
                Some("approved by the rehearsal".into()),
                crate::cli::approve::Confirmation::AsAsked,
            )?;
        }
        let request = ResumeRequest { run: Some(run_id.to_string()), vars: Vec::new(), rerun: Rerun::default() };
        let resumed = session::resume(&self.env, request, std::time::Instant::now()).await?;
        let finished = resumed.run.execute(self.env.printer.reporter()).await?;
        Ok(run::finished_exit(&self.env, &finished))
    }

    /// From now on, runs go to this person's journal and directory (the hand-off's second
    /// person after Phase 1, the first one again when a second pass reruns Phase 1).
    fn act_as(&mut self, person: &Person) {
        self.env.workspace.journal_path = person.journal.clone();
        self.workdir = person.dir.clone();
    }

    /// Objects in the management cluster: kind, namespace, name.
    pub fn kube_objects(&self) -> Vec<Value> {
        kube_objects(&self.sandbox)
    }

    pub fn write_requests(&self) -> usize {
        self.sandbox.request_log().iter().filter(|r| r.is_write()).count()
    }
}

/// A breakage must come after a phase the rehearsal runs, and on the path it breaks.
fn check_breakage(breakage: runbook_sandbox::Breakage, phase: Option<u8>, external_dns: bool) -> CliResult<()> {
    let after = breakage.info().after_phase;
    if phase.is_some_and(|p| p < after) {
        return Err(CliError::user_hint(
            format!(
                "`--break {}` is applied after {}, which this rehearsal does not reach",
                breakage.name(),
                phase_name(after)
            ),
            format!("rehearse at least up to phase {after} (or leave --phase out)"),
        ));
    }
    let breaks_external_dns = matches!(
        breakage,
        runbook_sandbox::Breakage::ExternalDnsSecret | runbook_sandbox::Breakage::ExternalDnsSecretExpired
    );
    if breaks_external_dns && !external_dns {
        return Err(CliError::user_hint(
            format!("`--break {}` breaks External DNS, which --no-external-dns leaves out", breakage.name()),
            "drop --no-external-dns",
        ));
    }
    // With External DNS the API is published by Route, so no load balancer Service wants an address.
    if breakage == runbook_sandbox::Breakage::ApiLbNoAddress && external_dns {
        return Err(CliError::user_hint(
            format!(
                "`--break {}` breaks the API server's load balancer, which only the path without External DNS has",
                breakage.name()
            ),
            "add --no-external-dns",
        ));
    }
    Ok(())
}

/// The variable of a runbook that bounds its long wait for health, which a rehearsal with a
/// breakage shortens.
fn health_wait_var(runbook: &str) -> Option<&'static str> {
    match runbook {
        "phase3-hosted-cluster" => Some("available_timeout"),
        "day2-add-nodepool" => Some("ready_timeout"),
        "cleanup-hosted-cluster" => Some("timeout"),
        _ => None,
    }
}

/// How long a rehearsal with a breakage waits for a cluster to become healthy: the procedure's
/// 30 minutes at the sandbox's latency scale (a healthy sandbox needs a fraction), and never
/// under 10 s.
fn broken_wait_secs(latency_scale: f64) -> u64 {
    ((1800.0 * latency_scale).ceil() as u64).max(10)
}

/// `--check-idempotent`: runs a runbook that has just finished again, as the same person, with
/// the world as it left it, and records the write requests that made (see `idempotence`).
async fn run_again(
    rehearsal: &Rehearsal,
    number: u8,
    runbook: &str,
    runs: &mut Vec<Value>,
    pass: &mut SecondPass,
    quiet: bool,
) -> CliResult<Exit> {
    let mut watch = WriteWatch::new(&rehearsal.sandbox, Principals::of_sandbox());
    let (exit, summary, _) = rehearsal.run_phase(number, runbook).await?;
    let writes = watch.since(&rehearsal.sandbox);
    if !quiet {
        let background = if writes.background.is_empty() {
            String::new()
        } else {
            format!(" ({} more by the simulated controllers' own principals, not counted)", writes.background.len())
        };
        rehearsal.env.printer.line(format_args!(
            "{runbook} again: {} write requests by the runner and the programs it runs{background}",
            writes.ours.len()
        ));
        if !writes.ours.is_empty() {
            rehearsal.env.printer.line(format_args!("{}", write_lines(&writes.ours)));
        }
    }
    pass.record(number, &phase_name(number), runbook, &summary["run_id"], writes);
    runs.push(summary);
    Ok(exit)
}

/// The `hypershift` and `ccoctl` a rehearsal's runbooks run: the real programs when given
/// (`--hypershift`, `--ccoctl`), else the stand-ins built into this binary.
#[derive(Debug, Clone, Default)]
pub struct Programs {
    hypershift: Option<PathBuf>,
    ccoctl: Option<PathBuf>,
}

impl Programs {
    /// Each given path must be an executable file; it is kept absolute, since the runbooks run
    /// programs in their own working directories.
    pub fn new(hypershift: Option<&Path>, ccoctl: Option<&Path>) -> CliResult<Programs> {
        let check = |flag: &str, path: Option<&Path>| -> CliResult<Option<PathBuf>> {
            let Some(path) = path else { return Ok(None) };
            let executable = std::fs::metadata(path)
                .map(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0)
                .unwrap_or(false);
            if !executable {
                return Err(CliError::user_hint(
                    format!("{flag} `{}` is not an executable file", path.display()),
                    "give the path of the real program, e.g. where `bash tools/real-clis/unpack.sh DIR` put it",
                ));
            }
            Ok(Some(std::path::absolute(path).map_err(|e| CliError::Internal(e.into()))?))
        };
        Ok(Programs { hypershift: check("--hypershift", hypershift)?, ccoctl: check("--ccoctl", ccoctl)? })
    }

    /// The real program for `tool`, if one was given.
    fn real(&self, tool: &str) -> Option<&Path> {
        match tool {
            "hypershift" => self.hypershift.as_deref(),
            "ccoctl" => self.ccoctl.as_deref(),
            _ => None,
        }
    }

    /// What each tool is, for the rehearsal's first lines: `hypershift: /path (real)`.
    pub fn describe(&self) -> Vec<String> {
        ["hypershift", "ccoctl"]
            .iter()
            .map(|tool| match self.real(tool) {
                Some(path) => format!("{tool}: {}", path.display()),
                None => format!("{tool}: the built-in stand-in"),
            })
            .collect()
    }
}

/// What programs run by exec steps see in a rehearsal: the sandbox's settings, and a PATH that
/// starts with `ccoctl` and `hypershift`: the real programs when given, else the stand-ins
/// (this very binary under other names).
fn program_env(
    workdir: &Path,
    programs: &Programs,
    mut settings: std::collections::BTreeMap<String, String>,
) -> CliResult<std::collections::BTreeMap<String, String>> {
    let bin = workdir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| CliError::Internal(e.into()))?;
    let me = std::env::current_exe().map_err(|e| CliError::Internal(e.into()))?;
    for tool in ["ccoctl", "hypershift"] {
        let target = programs.real(tool).unwrap_or(&me);
        std::os::unix::fs::symlink(target, bin.join(tool)).map_err(|e| CliError::Internal(e.into()))?;
    }
    let path = std::env::var("PATH").unwrap_or_default();
    settings.insert("PATH".into(), format!("{}:{path}", bin.display()));
    // Go reads SSL_CERT_FILE (already among the settings when the sandbox answers as Azure's
    // public names); Python's requests (az) and curl read their own variables.
    if let Some(ca) = settings.get("SSL_CERT_FILE").cloned() {
        settings.insert("REQUESTS_CA_BUNDLE".into(), ca.clone());
        settings.insert("CURL_CA_BUNDLE".into(), ca);
    }
    Ok(settings)
}

/// Where one person's runs go: their journal and working directory.
#[derive(Clone)]
struct Person {
    journal: PathBuf,
    dir: PathBuf,
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
///
/// The second person's journal is beside their directory, or, when the first person's journal is
/// on a server, a database of its own on the same server (`<database>_hypershift_admin`, made if
/// missing): a second person, a second journal, as the procedure splits the work.
pub fn hand_off(rehearsal: &Rehearsal) -> CliResult<SecondPerson> {
    let first = persona_key(&rehearsal.workdir, "azure-admin")?;
    let second = persona_key(&rehearsal.workdir, "hypershift-admin")?;
    let dir = rehearsal.workdir.join("hypershift-admin");
    std::fs::create_dir_all(&dir).map_err(|e| CliError::Internal(e.into()))?;
    let file = rehearsal.workdir.join("phase1.handoff");
    let journal = rehearsal.env.require_intact_journal()?;
    let exported = crate::handoff::export::export_file(
        &journal,
        &crate::handoff::export::ExportArgs {
            target: PHASES[0].1.to_string(),
            to: second.1.display().to_string(),
            out: file.clone(),
            sign_with: first.0.clone(),
            no_secrets: false,
            cluster: None,
        },
    )?;
    let second_journal = second_journal(&rehearsal.env.journal_path, &dir)?;
    let (imported, _) = crate::handoff::import::import_file(
        &second_journal,
        &crate::handoff::import::ImportArgs {
            file: file.clone(),
            identity: Some(second.0.clone()),
            trust: vec![first.1.display().to_string()],
            trusted_keys: None,
            dir: Some(dir.clone()),
            persona: Some("hypershift-admin".into()),
            replace: false,
            runbook: None,
        },
        &|name| rehearsal.env.load_runbook(name),
    )?;
    let import_run = match imported {
        crate::handoff::import::Imported::New { run_id, .. } | crate::handoff::import::Imported::Already { run_id } => {
            run_id
        }
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

/// The runbooks to rehearse, in order: every phase up to and including `phase` (default: all).
/// A phase whose runbook is not in this build cannot be rehearsed: asked for, that is an error;
/// by default the rehearsal stops before it, and the second value says which runbook is missing.
pub fn phases(phase: Option<u8>) -> CliResult<(Vec<PhaseRunbook>, Option<&'static str>)> {
    let last = PHASES.iter().map(|(p, _)| *p).max().unwrap_or(1);
    let want = phase.unwrap_or(last);
    if !PHASES.iter().any(|(p, _)| *p == want) {
        let known: Vec<String> =
            PHASES.iter().map(|(p, _)| p.to_string()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        return Err(CliError::user_hint(
            format!("there is no phase {want} to rehearse"),
            format!("phases: {} (4 is Day 2, 5 is cleanup)", known.join(", ")),
        ));
    }
    let bundled: std::collections::BTreeSet<String> = crate::bundled::runbooks().into_iter().map(|(n, _)| n).collect();
    let chosen: Vec<(u8, &str)> = PHASES.iter().copied().filter(|(p, _)| *p <= want).collect();
    match chosen.iter().find(|(_, runbook)| !bundled.contains(*runbook)) {
        None => Ok((chosen, None)),
        Some(&(missing_phase, runbook)) if phase.is_some() => Err(CliError::user_hint(
            format!("{} cannot be rehearsed yet: runbook `{runbook}` is not in this build", phase_name(missing_phase)),
            if missing_phase > 1 {
                format!("rehearse up to phase {} with --phase {}", missing_phase - 1, missing_phase - 1)
            } else {
                "`runbook list` shows the bundled runbooks".to_string()
            },
        )),
        Some(&(missing_phase, runbook)) => {
            Ok((chosen.into_iter().filter(|(p, _)| *p < missing_phase).collect(), Some(runbook)))
        }
    }
}

/// Variables of the phases after Phase 2 that suit the sandbox (None: another phase's), and the
/// files a person would bring to them (a placeholder pull secret: the sandbox pulls no images).
fn later_phase_vars(runbook: &str, workdir: &Path) -> std::io::Result<Option<String>> {
    let pull_secret = workdir.join("pull-secret.json");
    Ok(Some(match runbook {
        "phase3-hosted-cluster" => {
            if !pull_secret.exists() {
                std::fs::write(
                    &pull_secret,
                    "{\"auths\":{\"sandbox.invalid\":{\"auth\":\"cmVoZWFyc2FsOnJlaGVhcnNhbA==\"}}}\n",
                )?;
            }
            format!("pull_secret = \"{}\"\n", pull_secret.display())
        }
        "day2-add-nodepool" => "node_count = 2\n".to_string(),
        // The cluster's first pool, named like the cluster; the delete takes the one Day 2 added.
        "day2-scale-nodepool" => "nodepool = \"rehearse-hc\"\nreplicas = 3\n".to_string(),
        "day2-upgrade-cluster" => {
            "release_image = \"quay.io/openshift-release-dev/ocp-release:4.21.1-x86_64\"\n".to_string()
        }
        "day2-delete-nodepool" => "nodepool = \"rehearse-hc-workers\"\n".to_string(),
        "cleanup-hosted-cluster" => String::new(),
        // A rehearsal removes everything it made, the persistent resource group included.
        "cleanup-shared-resources" => "delete_persistent_rg = true\n".to_string(),
        _ => return Ok(None),
    }))
}

/// How many steps of a run needed more than one attempt.
fn retried_steps(journal: &runbook_journal::Journal, run_id: &str) -> CliResult<usize> {
    let retried: std::collections::BTreeSet<String> = journal
        .events_for_run(run_id)?
        .into_iter()
        .filter(|e| e.kind() == runbook_journal::STEP_STARTED && e.attempt.is_some_and(|a| a > 1))
        .filter_map(|e| e.step)
        .collect();
    Ok(retried.len())
}

/// The kinds of management-cluster objects the procedure creates or reads; `kube` in the
/// rehearsal's summary lists the objects of these kinds present at the end.
const KUBE_KINDS: &[&str] = &[
    "namespaces",
    "secrets",
    "configmaps",
    "serviceaccounts",
    "services",
    "deployments.apps",
    "pods",
    "hostedclusters.hypershift.openshift.io",
    "nodepools.hypershift.openshift.io",
];

fn kube_objects(sandbox: &runbook_sandbox::Sandbox) -> Vec<Value> {
    let handle = sandbox.kube().handle();
    let mut objects = Vec::new();
    for resource in KUBE_KINDS {
        let Some(def) = handle.resource_def(resource) else { continue };
        for item in handle.list(resource, None, None).unwrap_or_default() {
            objects.push(json!({
                "kind": def.kind,
                "namespace": item["metadata"]["namespace"],
                "name": item["metadata"]["name"],
            }));
        }
    }
    objects
}

/// What exists after a phase, for the person reading the summary.
fn what_exists(rehearsal: &Rehearsal) -> String {
    let handle = rehearsal.sandbox.kube().handle();
    let names = |resource: &str| -> Vec<String> {
        handle
            .list(resource, None, None)
            .unwrap_or_default()
            .iter()
            .filter_map(|o| o["metadata"]["name"].as_str().map(String::from))
            .collect()
    };
    let clusters = names("hostedclusters.hypershift.openshift.io");
    let pools = names("nodepools.hypershift.openshift.io");
    let mut files: Vec<String> = std::fs::read_dir(&rehearsal.workdir)
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| !n.ends_with(".vars.toml") && !n.starts_with("journal.db") && n != "sandbox-ca.pem")
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let list = |items: &[String]| if items.is_empty() { "none".to_string() } else { items.join(", ") };
    format!(
        "{} Azure resources; hosted clusters: {}; node pools: {}; files: {}",
        rehearsal.sandbox.resource_ids().len(),
        list(&clusters),
        list(&pools),
        list(&files)
    )
}

/// One line per phase: its time, steps run, reused and retried, and whether it succeeded.
fn phase_line(number: u8, runs: &[Value]) -> String {
    let of_phase: Vec<&Value> = runs.iter().filter(|r| r["phase"] == number).collect();
    let sum = |f: &dyn Fn(&Value) -> u64| of_phase.iter().map(|r| f(r)).sum::<u64>();
    let ms = sum(&|r| r["duration_ms"].as_u64().unwrap_or(0));
    let run = sum(&|r| r["steps"]["succeeded"].as_u64().unwrap_or(0));
    let reused = sum(&|r| r["steps"]["reused"].as_u64().unwrap_or(0));
    let retried = sum(&|r| r["retried"].as_u64().unwrap_or(0));
    let ok = of_phase.iter().all(|r| r["status"] == "succeeded");
    let runbooks: Vec<&str> = of_phase.iter().filter_map(|r| r["runbook"].as_str()).collect();
    let mut line = format!(
        "{} {} in {:.1} s: {run} steps run, {retried} retried, {reused} already done ({})",
        phase_name(number),
        if ok { "succeeded" } else { "stopped" },
        ms as f64 / 1000.0,
        runbooks.join(", ")
    );
    for run in &of_phase {
        let steps: Vec<&str> =
            run["critical_path"].as_array().map(|s| s.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        if !steps.is_empty() {
            line.push_str(&format!(
                "\n    critical path of {} ({:.1} s): {}",
                run["runbook"].as_str().unwrap_or("?"),
                run["critical_path_ms"].as_u64().unwrap_or(0) as f64 / 1000.0,
                steps.join(" → ")
            ));
        }
    }
    line
}

/// The steps of the run's last critical path (a run resumed after an approval has one per
/// invocation; the last is the one `run_finished` reports).
fn critical_path_steps(journal: &runbook_journal::Journal, run_id: &str) -> CliResult<Vec<String>> {
    let events = journal.events_for_run(run_id)?;
    Ok(events
        .iter()
        .rev()
        .find_map(|e| match &e.data {
            runbook_journal::EventData::CriticalPath(path) => Some(path.steps.clone()),
            _ => None,
        })
        .unwrap_or_default())
}

/// `--serve`: the sandbox stays up after the phases, with `sandbox.env` and the kubeconfigs
/// written, until Ctrl-C.
async fn serve(rehearsal: Rehearsal, env: &Env) -> CliResult<()> {
    let (env_file, _) = crate::cli::sandbox::write_env(&rehearsal.workdir, &rehearsal.sandbox, &rehearsal.ca_file)?;
    let mut kubeconfigs = vec![crate::cli::sandbox::kubeconfig_path(&rehearsal.workdir)];
    if let Ok(dir) = std::fs::read_dir(&rehearsal.workdir) {
        kubeconfigs.extend(
            dir.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with("-kubeconfig"))),
        );
    }
    let shown: Vec<String> = kubeconfigs.iter().map(|p| p.display().to_string()).collect();
    let stop = crate::cli::sandbox::StopSignals::listen()?;
    if env.printer.json {
        env.printer
            .out_line(format_args!("{}", json!({ "serving": true, "env_file": env_file, "kubeconfigs": shown })));
    } else {
        env.printer.line(format_args!(
            "the sandbox stays up until Ctrl-C or SIGTERM: `source {}` points runbook, kubectl and az at it; kubeconfigs: {}",
            env_file.display(),
            shown.join(", ")
        ));
    }
    stop.serve_until_stopped(rehearsal.sandbox).await;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub async fn rehearse(
    env: &Env,
    phase: Option<u8>,
    base: PathBuf,
    journal: Option<PathBuf>,
    options: SandboxOptions,
    programs: Programs,
    check_idempotent: bool,
    oidc_tool: &str,
    identity_tool: &str,
    infra_tool: &str,
    external_dns: bool,
    serve_after: bool,
    breakage: Option<runbook_sandbox::Breakage>,
) -> CliResult {
    // A rehearsal with a breakage stops after the phase that meets its symptom (Phase 3 for
    // most: a broken cluster has no Day 2) unless told to stop sooner.
    let phase = phase.or(breakage.map(|b| b.info().stops_after));
    if let Some(breakage) = breakage {
        check_breakage(breakage, phase, external_dns)?;
    }
    let (phases, missing) = phases(phase)?;
    let mut rehearsal = Rehearsal::start(env, &base, journal.as_deref(), &options, &programs, None).await?;
    rehearsal.oidc_tool = oidc_tool.to_string();
    rehearsal.identity_tool = identity_tool.to_string();
    rehearsal.infra_tool = infra_tool.to_string();
    rehearsal.external_dns = external_dns;
    rehearsal.breakage = breakage;
    // In a private network (--public-names) only loopback exists: say so, from the kernel's list.
    let interfaces = options
        .public_names
        .then(runbook_sandbox::public_names::interfaces)
        .transpose()
        .map_err(|e| CliError::Internal(e.into()))?;
    if !env.printer.json {
        env.printer.line(format_args!("rehearsing against the built-in sandbox in {}", rehearsal.workdir.display()));
        env.printer.line(format_args!("programs: {}", programs.describe().join("; ")));
        if let Some(interfaces) = &interfaces {
            env.printer.line(format_args!(
                "the sandbox answers as Azure's public host names ({}, {}, {}, <account>.blob.core.windows.net) on 127.0.0.1:443, in a network of its own: interfaces {}",
                runbook_sandbox::public_names::ARM_HOST,
                runbook_sandbox::public_names::ENTRA_HOST,
                runbook_sandbox::public_names::GRAPH_HOST,
                interfaces.join(", ")
            ));
        }
    }
    let mut runs = Vec::new();
    let mut exit = Exit::Ok;
    let mut summary_lines = Vec::new();
    // Phase 1 is the Azure administrator's; its results go to the HyperShift administrator,
    // who runs every later phase in a journal and directory of their own, as the procedure
    // splits the work.
    let first = Person { journal: rehearsal.env.journal_path.clone(), dir: rehearsal.workdir.clone() };
    let mut second: Option<SecondPerson> = None;
    // Per phase, what running its runbooks again wrote (`--check-idempotent`): each runbook
    // runs again as soon as it has finished, with the world as it left it.
    let mut second_pass = SecondPass::default();
    for (index, &(number, runbook)) in phases.iter().enumerate() {
        if number > 1 && second.is_none() && phases.first().is_some_and(|(p, _)| *p == 1) {
            let handed = hand_off(&rehearsal)?;
            rehearsal.act_as(&Person { journal: handed.journal.clone(), dir: handed.dir.clone() });
            if !env.printer.json {
                env.printer.line(format_args!(
                    "hand-off: Phase 1's results exported by azure-admin to {}, imported by hypershift-admin into {}",
                    handed.file.display(),
                    handed.journal.display()
                ));
            }
            second = Some(handed);
        }
        if !env.printer.json && phases.iter().position(|(p, _)| *p == number) == Some(index) {
            env.printer.line(format_args!("== {} ==", phase_name(number)));
        }
        let (phase_exit, summary, _) = rehearsal.run_phase(number, runbook).await?;
        runs.push(summary);
        exit = phase_exit;
        let phase_done = phases.get(index + 1).is_none_or(|(next, _)| *next != number);
        if phase_done || exit != Exit::Ok {
            let line = format!("{}\n    now: {}", phase_line(number, &runs), what_exists(&rehearsal));
            if !env.printer.json {
                env.printer.line(format_args!("{line}"));
            }
            summary_lines.push(line);
        }
        if exit != Exit::Ok {
            break;
        }
        if phase_done && let Some(breakage) = breakage.filter(|b| b.info().after_phase == number) {
            let what = rehearsal.sandbox.apply_breakage(breakage).map_err(|e| {
                CliError::Internal(anyhow::anyhow!(
                    "cannot break `{}` after {}: {e}",
                    breakage.name(),
                    phase_name(number)
                ))
            })?;
            let line = format!("broke `{}` after {}: {what}", breakage.name(), phase_name(number));
            if !env.printer.json {
                env.printer.line(format_args!("{line}"));
            }
            summary_lines.push(line);
        }
        if check_idempotent {
            exit = run_again(&rehearsal, number, runbook, &mut runs, &mut second_pass, env.printer.json).await?;
            if exit != Exit::Ok {
                break;
            }
        }
    }
    if let (Some(runbook), Exit::Ok) = (missing, exit) {
        let line = format!("stopped before runbook `{runbook}`: it is not in this build yet");
        if !env.printer.json {
            env.printer.line(format_args!("{line}"));
        }
        summary_lines.push(line);
    }
    let second_pass_writes = if check_idempotent {
        let writes = second_pass.total();
        if writes > 0 && exit == Exit::Ok {
            env.printer.line(format_args!(
                "error: running finished runbooks again made {writes} write requests; it should make none"
            ));
            exit = Exit::StepFailed;
        } else if !env.printer.json {
            env.printer.line(format_args!(
                "every finished runbook ran again without a write; counted: {}",
                counted(&Principals::of_sandbox())
            ));
        }
        json!(writes)
    } else {
        Value::Null
    };
    // A rehearsal of Phase 1 alone still hands its results over, so the hand-off is rehearsed.
    if second.is_none() && exit == Exit::Ok && phases.first().is_some_and(|(p, _)| *p == 1) {
        rehearsal.act_as(&first);
        second = Some(hand_off(&rehearsal)?);
    }
    rehearsal.act_as(&first);
    let resources = rehearsal.sandbox.resource_ids();
    let kube = rehearsal.kube_objects();
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
    // The host names the requests named (answering as Azure's public names; else none).
    let request_hosts: std::collections::BTreeSet<String> =
        rehearsal.sandbox.request_log().iter().filter_map(|r| r.host.clone()).collect();
    // Which programs made the requests, by the first word of their User-Agent (the Azure SDK
    // for Go, client-go and the product's own clients each name themselves).
    let request_programs: std::collections::BTreeSet<String> = rehearsal
        .sandbox
        .request_log()
        .iter()
        .filter_map(|r| r.user_agent.as_deref()?.split_whitespace().next().map(str::to_string))
        .collect();
    let journal = rehearsal.env.journal_path.clone();
    if env.printer.json {
        env.printer.out_line(format_args!(
            "{}",
            json!({ "public_names": options.public_names, "programs": programs.describe(), "network_interfaces": interfaces, "request_hosts": request_hosts, "request_programs": request_programs,
                    "runs": runs, "resources": resources, "kube": kube, "write_requests": writes, "second_pass_write_requests": second_pass_writes,
                    "second_pass": check_idempotent.then(|| second_pass.to_json()),
                    "second_pass_counted": check_idempotent.then(|| counted(&Principals::of_sandbox())),
                    "concurrent_write_conflicts": concurrent_write_conflicts, "summary": summary_lines,
                    "workdir": rehearsal.workdir, "journal": journal,
                    "handoff": second.as_ref().map(|s| &s.summary) })
        ));
    } else {
        env.printer.line(format_args!(
            "rehearsal {}: {} resources in the sandbox, {} objects in its management cluster, {writes} write requests\n  files: {}\n  journal: {}; look around with\n  runbook --journal {} status",
            if exit == Exit::Ok { "succeeded" } else { "stopped" },
            resources.len(),
            kube.len(),
            rehearsal.workdir.display(),
            journal.display(),
            journal.display()
        ));
        if let (Some(breakage), Some(second)) = (breakage, &second) {
            env.printer.line(format_args!(
                "broken on purpose: `{}` ({}); what is wrong and how to fix it:\n  runbook --journal {} --journal {} diagnose",
                breakage.name(),
                breakage.info().reproduces,
                journal.display(),
                second.journal.display()
            ));
        }
        if let Some(second) = &second {
            env.printer.line(format_args!(
                "azure-admin's journal: {}\nhand-off file: {}\nhypershift-admin's journal: {} (files in {})\nthe whole story:\n  runbook --journal {} --journal {} audit --format markdown",
                journal.display(),
                second.file.display(),
                second.journal.display(),
                second.dir.display(),
                journal.display(),
                second.journal.display()
            ));
        }
    }
    if serve_after {
        serve(rehearsal, env).await?;
    } else {
        rehearsal.sandbox.shutdown().await;
    }
    Ok(exit)
}

/// Whether a journal is already at `journal` (a file, or a server's database holding one).
fn journal_exists(journal: &Path) -> CliResult<bool> {
    if !runbook_journal::is_server_url(journal) {
        return Ok(journal.exists());
    }
    match runbook_journal::Journal::open_existing(journal) {
        Ok(_) => Ok(true),
        Err(runbook_journal::Error::NotFound(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn second_journal(first: &Path, dir: &Path) -> CliResult<PathBuf> {
    if !runbook_journal::is_server_url(first) {
        return Ok(dir.join("journal.db"));
    }
    use runbook_journal::server_admin;
    let database = format!("{}_hypershift_admin", server_admin::database_of(first)?);
    if !server_admin::database_exists(first, &database)? {
        server_admin::create_database(first, &database)?;
    }
    let url = server_admin::with_database(first, &database);
    if journal_exists(&url)? {
        return Err(CliError::user_hint(
            format!("the second person's journal `{}` already exists", url.display()),
            "each rehearsal starts a fresh sandbox: drop that database, or give --journal another database",
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_line_names_each_runs_critical_path() {
        let runs = vec![
            json!({ "phase": 1, "runbook": "phase1-azure-foundation", "status": "succeeded", "duration_ms": 4200,
                    "critical_path_ms": 3900, "critical_path": ["rg", "identity", "checkpoint"],
                    "steps": { "succeeded": 3, "reused": 0 }, "retried": 0 }),
            json!({ "phase": 2, "runbook": "other", "critical_path": ["x"] }),
        ];
        let line = phase_line(1, &runs);
        assert!(
            line.contains("\n    critical path of phase1-azure-foundation (3.9 s): rg → identity → checkpoint"),
            "{line}"
        );
        assert!(!line.contains("of other"), "{line}");
    }
}
