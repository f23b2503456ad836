//! The `runbook` command line.

mod allocator;
mod approve;
mod audit;
#[cfg(feature = "sandbox")]
mod az_config;
mod bench;
mod catalog;
mod diagnose;
mod doctor;
pub mod entry;
mod env;
/// Exit codes and errors live beside the session that returns them; commands name them here.
pub use crate::exit;
pub(crate) mod export;
#[cfg(feature = "sandbox")]
mod idempotence;
pub(crate) mod import;
mod init;
mod inspect;
mod journal_copy;
#[cfg(feature = "sandbox")]
pub mod namespace;
mod printer;
#[cfg(feature = "sandbox")]
mod rehearse;
mod run;
#[cfg(feature = "sandbox")]
mod sandbox;
#[cfg(feature = "sandbox")]
mod sandbox_command;
mod teardown;
mod timeline;
mod verify;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use env::Env;
use exit::{CliResult, Exit};

#[derive(Parser, Debug)]
#[command(name = "runbook", version, about = "Resumable, journaled runbooks for self-managed Azure HyperShift")]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Whether the command serves the sandbox as Azure's public host names, and so must enter
    /// its private network before anything else starts (see [`namespace`]).
    #[cfg(feature = "sandbox")]
    pub fn wants_private_network(&self) -> bool {
        match &self.command {
            Command::Rehearse { sandbox, programs, .. } => sandbox.public_names || programs.any_real(),
            Command::Sandbox { what: SandboxWhat::Up { sandbox, .. } } => sandbox.public_names,
            Command::Bench { what: BenchWhat::Phase { sandbox, .. } } => sandbox.public_names,
            _ => false,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct Global {
    /// The journal (SQLite). Default: $RUNBOOK_JOURNAL, else .runbook/journal.db. `audit` takes
    /// several (one per person) and merges them
    #[arg(long, global = true, env = "RUNBOOK_JOURNAL", action = clap::ArgAction::Append)]
    pub journal: Vec<PathBuf>,
    /// Output for people (text) or machines (json)
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Print only failures and results
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Plain lines instead of progress bars
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Print full service messages (e.g. of each retried error), not just their one-line summary
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// How Azure steps sign in (overrides RUNBOOK_AZURE_CREDENTIAL)
    #[arg(long, global = true, value_enum)]
    pub azure_credential: Option<AzureCredential>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AzureCredential {
    /// The Azure CLI / developer tools login
    Cli,
    /// AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET or RUNBOOK_AZURE_CREDENTIALS_FILE
    ClientSecret,
    /// A federated token (AZURE_FEDERATED_TOKEN_FILE), as in a pod
    WorkloadIdentity,
    /// The machine's managed identity
    ManagedIdentity,
    /// The built-in sandbox's client (loopback endpoints only)
    Sandbox,
}

impl AzureCredential {
    pub fn setting(&self) -> &'static str {
        match self {
            AzureCredential::Cli => "cli",
            AzureCredential::ClientSecret => "client-secret",
            AzureCredential::WorkloadIdentity => "workload-identity",
            AzureCredential::ManagedIdentity => "managed-identity",
            AzureCredential::Sandbox => "sandbox",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Args, Debug, Clone, Default)]
pub struct VarArgs {
    /// A TOML file of variable values
    #[arg(long = "vars", value_name = "FILE")]
    pub vars_file: Option<PathBuf>,
    /// A variable value (repeatable); wins over the vars file
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct RerunArgs {
    /// Run this step (or instance, `step[key]`) again even if it is done (repeatable)
    #[arg(long, value_name = "STEP")]
    pub rerun: Vec<String>,
    /// Re-run steps that were interrupted mid-flight even when their kind is not idempotent
    #[arg(long)]
    pub rerun_interrupted: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the bundled runbooks
    List,
    /// Show a runbook: persona, variables, requirements, steps
    Show { name: String },
    /// Write a vars file to start from: every variable described, the ones to fill in first
    /// (`plan` refuses them until they have values), defaults commented out, no secret values.
    /// Never overwrites a file
    Init {
        /// A bundled runbook's name, or a runbook file
        runbook: String,
        /// Where to write it (default: RUNBOOK-NAME.vars.toml in this directory)
        path: Option<PathBuf>,
    },
    /// Draw a runbook's step graph
    Graph {
        name: String,
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
    },
    /// Validate and show what would run, what is done, what is skipped; changes nothing
    Plan {
        name: String,
        #[command(flatten)]
        vars: VarArgs,
        /// Ignore work done by earlier runs
        #[arg(long)]
        fresh: bool,
        #[command(flatten)]
        rerun: RerunArgs,
    },
    /// Execute a runbook
    Run {
        name: String,
        #[command(flatten)]
        vars: VarArgs,
        /// Directory relative paths in the runbook resolve against (default: current directory)
        #[arg(long)]
        workdir: Option<PathBuf>,
        /// Ignore work done by earlier runs
        #[arg(long)]
        fresh: bool,
        #[command(flatten)]
        rerun: RerunArgs,
        /// Do not first make the checks of `runbook doctor` (programs, hypershift flags, kube and
        /// Azure access), which otherwise stop the run before anything is written if one fails
        #[arg(long)]
        skip_doctor: bool,
    },
    /// Continue an interrupted, failed or waiting run (default: the latest)
    Resume {
        run: Option<String>,
        /// Change or re-supply a variable (secrets are never stored, so give them again)
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        #[command(flatten)]
        rerun: RerunArgs,
    },
    /// Where a run stands (default: the latest)
    Status { run: Option<String> },
    /// The outputs a run journaled (secrets are never shown)
    Outputs { run: Option<String> },
    /// One journaled value: `step.output` or `runbook.output` (a checkpoint's hand-off value)
    Get {
        key: String,
        #[arg(long)]
        run: Option<String>,
        /// For RUNBOOK.OUTPUT: the cluster whose value to print, when the runbook published it for
        /// several
        #[arg(long, value_name = "NAME")]
        cluster: Option<String>,
    },
    /// Approve a manual gate of a run
    Approve {
        run: String,
        gate: String,
        #[arg(long)]
        comment: Option<String>,
        /// The name a destructive gate asks to be typed (the cluster's), given here instead of
        /// typed at the prompt
        #[arg(long, value_name = "NAME")]
        confirm: Option<String>,
    },
    /// Hand a runbook's checkpoint values and files to another person: signed, secrets encrypted to them
    Export {
        /// RUNBOOK or RUNBOOK.CHECKPOINT (default: every checkpoint of the runbook)
        target: String,
        /// Whom secrets are encrypted to: an age key (age1…), an SSH public key, or a file holding one
        #[arg(long, value_name = "RECIPIENT")]
        to: String,
        /// The hand-off file to write
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: PathBuf,
        /// Your SSH private key, which signs the file
        #[arg(long, value_name = "KEY", env = "RUNBOOK_SIGNING_KEY")]
        sign_with: PathBuf,
        /// Leave secret values and files out (the command says which)
        #[arg(long)]
        no_secrets: bool,
        /// The cluster whose checkpoints to hand over (the runbook's `cluster_name` variable, such
        /// as Phase 1's prefix); needed when the journal holds runs for several
        #[arg(long, value_name = "NAME")]
        cluster: Option<String>,
    },
    /// Take a hand-off file into this journal and directory, after checking who signed it
    Import {
        file: PathBuf,
        /// Your private key (age identity file or SSH private key) the secrets were encrypted to
        #[arg(long, value_name = "KEY")]
        identity: Option<PathBuf>,
        /// An exporter's SSH public key (or a file holding it) to accept signatures from (repeatable)
        #[arg(long, value_name = "KEY")]
        trust: Vec<String>,
        /// A file of trusted SSH public keys, one per line
        #[arg(long, value_name = "FILE", env = "RUNBOOK_TRUSTED_KEYS")]
        trusted_keys: Option<PathBuf>,
        /// Where the files go (default: the current directory)
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The persona importing (journaled as who)
        #[arg(long)]
        persona: Option<String>,
        /// Let the hand-off's values replace values this journal made itself (the import records
        /// what it replaced). Values of an earlier hand-off from the same signer and journal are
        /// replaced by a newer one without it; an older one is always refused.
        #[arg(long)]
        replace: bool,
        /// The runbook whose checkpoints the hand-off carries, when it is not bundled (default:
        /// the bundled runbook of that name, else NAME.toml here): what it may carry is checked
        /// against it
        #[arg(long, value_name = "FILE")]
        runbook: Option<PathBuf>,
    },
    /// What ran, who ran it, when, with what result
    Audit {
        /// Only events at or after this time (RFC 3339, or a duration like "2h" meaning that long ago)
        #[arg(long)]
        since: Option<String>,
        #[arg(long, value_enum, default_value_t = AuditFormat::Table)]
        format: AuditFormat,
        /// Check each journal's hash chain (detects events altered after they were written) and the
        /// link every hand-off makes between the journals given
        #[arg(long)]
        verify: bool,
    },
    /// Runs on a time axis: attempts, retries, waits, and the critical path marked
    Timeline {
        /// Run ids (default: the latest run)
        runs: Vec<String>,
        #[arg(long, value_enum, default_value_t = TimelineFormat::Text)]
        format: TimelineFormat,
        /// Write to this file instead of standard output
        #[arg(short = 'o', long = "file", value_name = "FILE")]
        file: Option<PathBuf>,
    },
    /// Delete what one run, or every run of one cluster, made (failed, interrupted or
    /// succeeded), from the journal's record: writes the teardown runbook (every object the runs
    /// created, newest first; what they found in place is kept) and runs it, which waits for an
    /// approval that lists every object and asks for the name
    Teardown {
        /// The run whose objects are deleted
        run: Option<String>,
        /// Every run of this cluster (Phase 1's prefix) instead
        #[arg(long)]
        cluster: Option<String>,
        /// Where the teardown runbook is written (default: teardown-NAME.toml here)
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Write the runbook and stop; `runbook run FILE` runs it
        #[arg(long)]
        write_only: bool,
    },
    /// Read back what the latest run of a runbook made (GET only) and report drift per object;
    /// with `--journal A --journal B` (one per person) the journals make one history
    Verify {
        /// The runbook whose latest run is checked
        runbook: Option<String>,
        /// The latest run of every runbook in the journal(s)
        #[arg(long)]
        all: bool,
    },
    /// Why the deployment the journals made is not healthy: reads (GET only) the HostedClusters'
    /// and NodePools' conditions and finalizers, the pods, nodes and events of the management
    /// cluster, the identities' federated credentials against the cluster's issuer and service
    /// accounts, the issuer as Entra reads it, the Entra applications' client secret dates, the
    /// clusters' network security groups, and the role assignments on the clusters' resource
    /// groups with whether their principals still exist; names each cause with its evidence and
    /// fix (exit 8; 0 healthy). With `--journal A --journal B` (one per person) the journals make
    /// one history
    Diagnose,
    /// Work on journals themselves
    Journal {
        #[command(subcommand)]
        what: JournalWhat,
    },
    /// Check what a runbook needs on this machine and account: programs, hypershift flags, kube
    /// access and permissions, Azure sign-in and permissions (`run` makes the same checks first)
    Doctor {
        name: String,
        #[command(flatten)]
        vars: VarArgs,
    },
    /// Print the JSON Schema of runbook files
    Schema,
    /// Print shell completions
    Completions { shell: clap_complete::Shell },
    #[cfg(feature = "sandbox")]
    /// Run the phases end to end against the built-in sandbox (no Azure account needed)
    Rehearse {
        /// Stop after this phase (1, 2, 3; 4 is Day 2, 5 is cleanup; default: every phase)
        #[arg(long)]
        phase: Option<u8>,
        /// Rehearsals go in a new directory under this one
        #[arg(long, default_value = "rehearsals")]
        dir: PathBuf,
        /// Run every phase a second time and fail if that makes any write request
        #[arg(long)]
        check_idempotent: bool,
        /// Who creates the signing key and OIDC issuer in Phase 1: native, or ccoctl (a stand-in acting on the sandbox)
        #[arg(long, default_value = "native", value_parser = ["native", "ccoctl"])]
        oidc_tool: String,
        /// Who creates Phase 1's workload identities and federated credentials: native (the
        /// procedure's 7 and 12), or hypershift (`hypershift create iam azure`: 8 and 13)
        #[arg(long, default_value = "native", value_parser = ["native", "hypershift"])]
        identity_tool: String,
        /// Who makes Phase 3's private DNS zone, egress load balancer and identity roles: native
        /// (`create cluster azure` itself), or hypershift (`create infra azure`, then `--infra-json`)
        #[arg(long, default_value = "native", value_parser = ["native", "hypershift"])]
        infra_tool: String,
        /// Take the procedure's path without External DNS: no DNS zone, delegation or External DNS
        /// principal in Phase 1, `hypershift install` and `create cluster azure` without the
        /// External DNS flags (the API is published through the cluster's load balancer)
        #[arg(long)]
        no_external_dns: bool,
        /// Keep the sandbox up after the phases, until Ctrl-C (writes sandbox.env and the kubeconfigs)
        #[arg(long)]
        serve: bool,
        /// Break one thing on purpose, as the procedure's Troubleshooting section describes, so
        /// the later phases meet its real symptom (`runbook diagnose` then names it); stops after
        /// the phase that meets it (Phase 3, Day 2 or cleanup) unless --phase says sooner
        #[arg(long = "break", value_name = "BREAKAGE", value_parser = breakage_names())]
        breakage: Option<String>,
        #[command(flatten)]
        programs: ProgramArgs,
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
    #[cfg(feature = "sandbox")]
    /// The built-in sandbox (a local Azure on loopback)
    Sandbox {
        #[command(subcommand)]
        what: SandboxWhat,
    },
    /// Measure the engine's own overhead
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
}

#[cfg(feature = "sandbox")]
#[derive(Args, Debug, Clone)]
pub struct SandboxArgs {
    /// Multiply the latency model taken from real Azure recordings (1.0 = real time)
    #[arg(long, default_value_t = 0.02)]
    pub latency_scale: f64,
    /// Inject seeded faults: 429 storms with Retry-After, 5xx, connection resets, slow responses
    #[arg(long)]
    pub faults: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seconds a new managed identity stays invisible to the writes of its federated credentials
    /// (404 ParentResourceNotFound, Azure's replication window); default: the latency model's
    /// 3 s times --latency-scale
    #[arg(long, value_name = "SECONDS")]
    pub identity_visible_after: Option<f64>,
    /// A storage account name the sandbox treats as owned by someone else (repeatable)
    #[arg(long, hide = true)]
    pub taken_storage_account: Vec<String>,
    /// Answer as Azure's public host names (management.azure.com, login.microsoftonline.com,
    /// graph.microsoft.com, <account>.blob.core.windows.net) on 127.0.0.1:443, inside a network
    /// namespace of its own that has only loopback; needs user and network namespaces
    #[arg(long)]
    pub public_names: bool,
}

#[cfg(feature = "sandbox")]
impl SandboxArgs {
    fn options(&self) -> sandbox::SandboxOptions {
        sandbox::SandboxOptions {
            latency_scale: self.latency_scale,
            faults: self.faults,
            seed: self.seed,
            identity_visible_after: self.identity_visible_after,
            taken_storage_accounts: self.taken_storage_account.clone(),
            public_names: self.public_names,
        }
    }
}

/// The names `rehearse --break` accepts (clap lists them in `--help` and in its error).
#[cfg(feature = "sandbox")]
fn breakage_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(runbook_sandbox::BREAKAGES.iter().map(|b| b.name))
}

/// Which `hypershift` and `ccoctl` a rehearsal's runbooks run.
#[cfg(feature = "sandbox")]
#[derive(Args, Debug, Clone)]
pub struct ProgramArgs {
    /// Run this `hypershift` (the real CLI) instead of the built-in stand-in; implies
    /// --public-names, since the real CLI reaches Azure's public host names only
    #[arg(long, value_name = "PATH")]
    pub hypershift: Option<PathBuf>,
    /// Run this `ccoctl` (the real tool) instead of the built-in stand-in; implies --public-names
    #[arg(long, value_name = "PATH")]
    pub ccoctl: Option<PathBuf>,
}

#[cfg(feature = "sandbox")]
impl ProgramArgs {
    fn any_real(&self) -> bool {
        self.hypershift.is_some() || self.ccoctl.is_some()
    }

    fn programs(&self) -> CliResult<rehearse::Programs> {
        rehearse::Programs::new(self.hypershift.as_deref(), self.ccoctl.as_deref())
    }
}

#[cfg(feature = "sandbox")]
#[derive(Subcommand, Debug)]
pub enum SandboxWhat {
    /// Serve the sandbox until Ctrl-C; writes DIR/sandbox.env with the settings to `source`
    Up {
        #[arg(long, default_value = ".runbook/sandbox")]
        dir: PathBuf,
        #[command(flatten)]
        sandbox: SandboxArgs,
        /// With --public-names: run this program inside the sandbox's network (with sandbox.env's
        /// settings), then stop the sandbox and exit with the program's status
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    #[cfg(feature = "sandbox")]
    /// A phase on the sandbox under the latency model: wall time against its critical path and
    /// against the same plan run one step at a time
    Phase {
        #[arg(long, default_value_t = 1)]
        phase: u8,
        #[arg(long, default_value = "rehearsals/bench")]
        dir: PathBuf,
        #[command(flatten)]
        sandbox: SandboxArgs,
    },
    /// No-op steps as a chain and as a fan-out with a durable journal, against bare SQLite commits
    Engine {
        #[arg(long, default_value_t = 10_000)]
        steps: usize,
        /// Where the benchmark journals go (default: a temporary directory)
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum JournalWhat {
    /// Copy a journal into a new one, file or PostgreSQL server (either way), with its chain:
    /// the same events, hashes and key, so `audit --verify` holds on the copy. The source is
    /// verified first and locked while it is read; the destination must not hold a journal
    Copy {
        /// The journal to copy: a file's path or a postgres:// URL
        from: PathBuf,
        /// The new journal: a path that does not exist yet, or a postgres:// URL of a database
        /// without a journal
        to: PathBuf,
    },
    /// Wrap the bare key an earlier build left beside a file journal under this user's wrapping
    /// key (in the state directory), once the journal verifies under it: a copy of the journal's
    /// directory then cannot be rewritten so that it still verifies
    ProtectKey {
        /// The file journal, e.g. .runbook/journal.db
        journal: PathBuf,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Text,
    Mermaid,
    Dot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TimelineFormat {
    /// One self-contained page for a browser
    Html,
    /// Trace Event Format, for Perfetto or chrome://tracing
    Chrome,
    /// A compact Gantt for terminals
    Text,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuditFormat {
    Table,
    Json,
    Markdown,
}

pub async fn dispatch(cli: Cli) -> CliResult {
    let env = Env::new(&cli.global);
    if cli.global.journal.len() > 1
        && !matches!(cli.command, Command::Audit { .. } | Command::Verify { .. } | Command::Diagnose)
    {
        return Err(exit::CliError::user_hint(
            "--journal is given more than once",
            "only `audit`, `verify` and `diagnose` read several journals; every other command works on one",
        ));
    }
    match cli.command {
        Command::List => catalog::list(&env),
        Command::Show { name } => catalog::show(&env, &name),
        Command::Init { runbook, path } => init::init(&env, &runbook, path),
        Command::Graph { name, format } => catalog::graph(&env, &name, format),
        Command::Schema => catalog::schema(&env),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "runbook",
                &mut std::io::stdout(),
            );
            Ok(Exit::Ok)
        }
        Command::Plan { name, vars, fresh, rerun } => run::plan(&env, &name, &vars, fresh, &rerun).await,
        Command::Run { name, vars, workdir, fresh, rerun, skip_doctor } => {
            let doctor = if skip_doctor { run::Doctor::Skip } else { run::Doctor::First };
            run::run_with(&env, &name, &vars, workdir, fresh, &rerun, doctor).await
        }
        Command::Resume { run, vars, rerun } => run::resume(&env, run.as_deref(), &vars, &rerun).await,
        Command::Status { run } => inspect::status(&env, run.as_deref()),
        Command::Outputs { run } => inspect::outputs(&env, run.as_deref()),
        Command::Get { key, run, cluster } => inspect::get(&env, &key, run.as_deref(), cluster.as_deref()),
        Command::Approve { run, gate, comment, confirm } => {
            approve::approve(&env, &run, &gate, comment, approve::Confirmation::Given(confirm))
        }
        Command::Export { target, to, out, sign_with, no_secrets, cluster } => {
            export::export(&env, &export::ExportArgs { target, to, out, sign_with, no_secrets, cluster })
        }
        Command::Import { file, identity, trust, trusted_keys, dir, persona, replace, runbook } => import::import(
            &env,
            &import::ImportArgs { file, identity, trust, trusted_keys, dir, persona, replace, runbook },
        ),
        Command::Audit { since, format, verify } => {
            audit::audit(&env, &cli.global.journal, since.as_deref(), format, verify)
        }
        Command::Doctor { name, vars } => doctor::doctor(&env, &name, &vars).await,
        Command::Diagnose => diagnose::diagnose(&env, &cli.global.journal).await,
        Command::Journal { what: JournalWhat::Copy { from, to } } => journal_copy::copy(&env, &from, &to),
        Command::Journal { what: JournalWhat::ProtectKey { journal } } => journal_copy::protect_key(&env, &journal),
        Command::Teardown { run, cluster, out, write_only } => {
            teardown::teardown(&env, teardown::TeardownArgs { run, cluster, out, write_only }).await
        }
        Command::Verify { runbook, all } => verify::verify(&env, &cli.global.journal, runbook.as_deref(), all).await,
        Command::Timeline { runs, format, file } => timeline::timeline(&env, &cli.global.journal, &runs, format, file),
        Command::Bench { what: BenchWhat::Engine { steps, dir } } => bench::engine(&env, steps, dir).await,
        #[cfg(feature = "sandbox")]
        Command::Bench { what: BenchWhat::Phase { phase, dir, sandbox } } => {
            bench::phase(&env, phase, dir, sandbox.options()).await
        }
        #[cfg(feature = "sandbox")]
        Command::Rehearse {
            phase,
            dir,
            check_idempotent,
            oidc_tool,
            identity_tool,
            infra_tool,
            no_external_dns,
            serve,
            breakage,
            programs,
            sandbox,
        } => {
            let mut options = sandbox.options();
            // The real tools reach Azure's public host names only: they imply --public-names.
            options.public_names |= programs.any_real();
            rehearse::rehearse(
                &env,
                phase,
                dir,
                cli.global.journal.first().cloned(),
                options,
                programs.programs()?,
                check_idempotent,
                &oidc_tool,
                &identity_tool,
                &infra_tool,
                !no_external_dns,
                serve,
                breakage.as_deref().and_then(runbook_sandbox::Breakage::from_name),
            )
            .await
        }
        #[cfg(feature = "sandbox")]
        Command::Sandbox { what: SandboxWhat::Up { dir, sandbox, command } } => {
            sandbox::up(&env, sandbox.options(), dir, command).await
        }
    }
}
