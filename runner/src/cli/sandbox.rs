//! The built-in sandbox for people: `runbook sandbox up` serves a local Azure on loopback and
//! prints the settings that point the product at it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runbook_sandbox::{FaultModel, Sandbox, SandboxConfig};
use serde_json::{Value, json};

use crate::cli::Env;
use crate::cli::exit::{CliError, CliResult, Exit};

/// How a sandbox should behave: latency scale and an optional seeded fault storm.
#[derive(Clone, Debug)]
pub struct SandboxOptions {
    pub latency_scale: f64,
    pub faults: bool,
    pub seed: u64,
    /// The replication window of a new identity's credentials, when not the scaled model's.
    pub identity_visible_after: Option<f64>,
    pub taken_storage_accounts: Vec<String>,
    /// Answer as Azure's public host names on 127.0.0.1:443, in this process's private network
    /// ([`crate::cli::namespace`]), entered before the runtime started.
    pub public_names: bool,
}

pub fn config(options: &SandboxOptions) -> CliResult<SandboxConfig> {
    let mut config = SandboxConfig::scaled(options.latency_scale);
    // A secret of this sandbox's own: other users of the machine can reach its ports, and must
    // neither get its tokens nor drive its control pages.
    config.client_secret = {
        use base64::Engine;
        let bytes: [u8; 24] = rand::random();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    };
    if options.public_names {
        // Port 443 on the real network would be another program's, and the names would be
        // Azure's: only in the private network, which the entry made before anything ran.
        let network = crate::cli::namespace::current().ok_or_else(|| {
            CliError::Internal(anyhow::anyhow!("--public-names without the sandbox's private network"))
        })?;
        config.public_names =
            Some(runbook_sandbox::PublicNames { port: 443, hosts_file: Some(network.hosts_file.clone()) });
    }
    // The runner's clock: a rehearsal's sandbox measures its windows and latencies on the time
    // the engine waits on and stamps the journal with (the system's outside tests).
    config.clock = runbook_clock::Clock::process();
    config.taken_storage_account_names = options.taken_storage_accounts.clone();
    if let Some(seconds) = options.identity_visible_after {
        config.parent_not_found_for = Duration::try_from_secs_f64(seconds)
            .map_err(|e| CliError::user(format!("--identity-visible-after {seconds}: {e}")))?;
    }
    if options.faults {
        config.faults = FaultModel {
            seed: options.seed,
            throttle_probability: 0.08,
            retry_after: Duration::from_millis(((1000.0 * options.latency_scale) as u64).max(50)),
            server_error_probability: 0.04,
            reset_probability: 0.02,
            slow_probability: 0.05,
            slow_by: Duration::from_millis(((2000.0 * options.latency_scale) as u64).max(20)),
            // Role assignments see the replication window even when they name the principal type.
            principal_type_ignored: true,
            ..FaultModel::none()
        };
        // The Kubernetes API draws from its own sequence (a reset there cuts a watch). An API
        // server sheds load with 429 and Retry-After (priority and fairness), which client-go
        // retries on any verb; an etcd timeout (500) or a cut connection is far rarer, and
        // client-go repeats neither on a write. So the management cluster throttles as often as
        // Azure but fails and resets a tenth as often: at Azure's rates, a real `hypershift
        // install` (some 125 writes, none repeated on a 500) would almost never get through.
        config.kube.faults = FaultModel {
            seed: options.seed.wrapping_add(1),
            server_error_probability: config.faults.server_error_probability / 10.0,
            reset_probability: config.faults.reset_probability / 10.0,
            ..config.faults.clone()
        };
    }
    Ok(config)
}

/// Where `start` writes the management cluster's kubeconfig (0600: it holds bearer tokens).
pub fn kubeconfig_path(dir: &Path) -> PathBuf {
    dir.join("kubeconfig")
}

/// The settings the Azure step kinds read, pointing at `sandbox` and trusting its CA.
pub fn azure_env(sandbox: &Sandbox, ca_file: &Path) -> BTreeMap<String, String> {
    sandbox.azure_env(ca_file).into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

pub async fn start(options: &SandboxOptions, dir: &Path) -> CliResult<(Sandbox, PathBuf)> {
    let sandbox = Sandbox::start(config(options)?)
        .await
        .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot start the sandbox: {e:?}")))?;
    std::fs::create_dir_all(dir).map_err(|e| CliError::user(format!("cannot create `{}`: {e}", dir.display())))?;
    let ca_file = dir.join("sandbox-ca.pem");
    runbook_files::write(
        &ca_file,
        sandbox.ca_pem().as_bytes(),
        runbook_files::PUBLIC,
        runbook_files::Existing::Replace,
    )
    .map_err(|e| CliError::Internal(e.into()))?;
    write_private(&kubeconfig_path(dir), sandbox.kubeconfig().as_bytes())?;
    Ok((sandbox, ca_file))
}

pub async fn up(env: &Env, options: SandboxOptions, dir: PathBuf, command: Vec<String>) -> CliResult {
    if !command.is_empty() && !options.public_names {
        return Err(CliError::user_hint(
            "a command after `--` runs inside the sandbox's private network, which only --public-names makes",
            "without --public-names the sandbox is on loopback ports: `source DIR/sandbox.env` in any shell instead",
        ));
    }
    // sandbox.env is sourced from anywhere: every path in it is absolute.
    let dir =
        std::path::absolute(&dir).map_err(|e| CliError::user(format!("cannot resolve `{}`: {e}", dir.display())))?;
    let (sandbox, ca_file) = start(&options, &dir).await?;
    seed(&sandbox).await?;
    let (env_file, settings) = write_env(&dir, &sandbox, &ca_file)?;
    if !command.is_empty() {
        let code = crate::cli::sandbox_command::run(&command, &settings, &kubeconfig_path(&dir)).await;
        sandbox.shutdown().await;
        return crate::cli::sandbox_command::exit_for(code?);
    }
    let stop = StopSignals::listen()?;
    let enter = match crate::cli::namespace::current() {
        Some(network) => Some(crate::cli::sandbox_command::write_enter(&dir, network, &env_file)?),
        None => None,
    };
    if env.printer.json {
        env.printer.out_line(format_args!(
            "{}",
            serde_json::json!({
                "env_file": env_file,
                "ca_file": ca_file,
                "arm_endpoint": sandbox.arm_endpoint(),
                "kubeconfig": kubeconfig_path(&dir),
                "kube_endpoint": sandbox.kube().url(),
                "azure_config_dir": settings.get("AZURE_CONFIG_DIR"),
                "public_names": sandbox.answers_as_public_names(),
                "enter": enter,
            })
        ));
    } else if let Some(enter) = &enter {
        env.printer.line(format_args!(
            "sandbox Azure is up as Azure's public host names ({}, {}, {}, <account>.blob.core.windows.net) on 127.0.0.1:443 in a network of its own (loopback only); Kubernetes API {}",
            sandbox.arm_endpoint(),
            sandbox.authority_host(),
            sandbox.graph_endpoint(),
            sandbox.kube().url()
        ));
        env.printer
            .line(format_args!("only programs inside that network reach it; enter it with:  {}", enter.join(" ")));
        env.printer.line(format_args!(
            "then:  source {}   (also written to {})",
            env_file.display(),
            dir.join("enter").display()
        ));
        env.printer.line(format_args!(
            "or run one program inside instead:  runbook sandbox up --public-names -- COMMAND ARGS..."
        ));
        env.printer.line(format_args!("Ctrl-C stops it (its state lives in memory)."));
    } else {
        env.printer.line(format_args!(
            "sandbox Azure is up on loopback: ARM {}, Graph {}; Kubernetes API {}",
            sandbox.arm_endpoint(),
            sandbox.graph_endpoint(),
            sandbox.kube().url()
        ));
        env.printer.line(format_args!("point runbook at it with:  source {}", env_file.display()));
        env.printer.line(format_args!(
            "the Azure CLI too (its own config dir, this sandbox's cloud):  az login --service-principal -u \"$AZURE_CLIENT_ID\" -p \"$AZURE_CLIENT_SECRET\" --tenant \"$AZURE_TENANT_ID\""
        ));
        env.printer
            .line(format_args!("Blob endpoints are path-style:  --blob-endpoint \"$RUNBOOK_SANDBOX_BLOB/<account>\""));
        env.printer.line(format_args!("Ctrl-C stops it (its state lives in memory)."));
    }
    stop.serve_until_stopped(sandbox).await;
    Ok(Exit::Ok)
}

/// Ctrl-C and SIGTERM (how a service manager or `kill` stops a sandbox), listened for from the
/// moment this is made. It is made before a command says the sandbox is up: a run earlier in the
/// process installed its own SIGTERM handler, so a signal arriving before a listener exists would
/// be caught and forgotten, and the sandbox would outlive the `kill` that was meant to stop it.
pub(crate) struct StopSignals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub(crate) fn listen() -> CliResult<StopSignals> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| {
            signal(kind).map_err(|e| CliError::Internal(anyhow::Error::from(e).context("listening for signals")))
        };
        Ok(StopSignals { terminate: listen(SignalKind::terminate())?, interrupt: listen(SignalKind::interrupt())? })
    }

    /// Serves until Ctrl-C or SIGTERM, then shuts the sandbox down. Every command that keeps a
    /// sandbox up (`sandbox up`, `rehearse --serve`) stops this way.
    pub(crate) async fn serve_until_stopped(mut self, sandbox: Sandbox) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
        sandbox.shutdown().await;
    }
}

/// Writes `DIR/sandbox.env`: what points runbook, kubectl (KUBECONFIG) and the Azure CLI at
/// this sandbox. Every path in it is absolute, so it can be sourced from anywhere. Returns the
/// file and the settings it exports.
pub fn write_env(dir: &Path, sandbox: &Sandbox, ca_file: &Path) -> CliResult<(PathBuf, BTreeMap<String, String>)> {
    let mut settings = azure_env(sandbox, ca_file);
    settings.extend(crate::cli::az_config::write(dir, sandbox, ca_file)?);
    let mut exports: String = settings.iter().map(|(k, v)| format!("export {k}={}\n", shell_quoted(v))).collect();
    exports.push_str(&format!("export KUBECONFIG={}\n", shell_quoted(&kubeconfig_path(dir).display().to_string())));
    // The file holds the sandbox client's secret, so it is 0600 and the terminal never shows it.
    let env_file = dir.join("sandbox.env");
    write_private(&env_file, exports.as_bytes())?;
    Ok((env_file, settings))
}

/// `value` as one shell word: as it is when it holds only characters no shell treats specially,
/// else in single quotes (a `'` closing, escaped and reopening them). A `--dir` holding `$(…)`,
/// `;` or a space then names a directory when the file is sourced, and runs nothing.
fn shell_quoted(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./:@%+=,-".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        return value.to_string();
    }
    format!("'{}'", value.replace('\'', "'\\''"))
}

/// The settings include the sandbox's client secret: written 0600 like every file holding one
/// (atomically, so a file left 0644 by something else is replaced, not reused with its mode).
fn write_private(path: &Path, bytes: &[u8]) -> CliResult<()> {
    runbook_files::write(path, bytes, runbook_files::PRIVATE, runbook_files::Existing::Replace)
        .map_err(|e| CliError::user(format!("cannot write `{}`: {e}", path.display())))
}

/// Seeds what exists before Phase 1 in a real subscription (the parent DNS zone), getting
/// through the fault model with a few tries.
pub async fn seed(sandbox: &Sandbox) -> CliResult<()> {
    let mut seeded = seed_parent_zone(sandbox).await;
    for _ in 0..20 {
        if seeded.is_ok() {
            break;
        }
        // On the run's clock, as the sandbox's faults are: a simulated one skips the pause.
        runbook_clock::Clock::process().sleep(Duration::from_millis(100)).await;
        seeded = seed_parent_zone(sandbox).await;
    }
    seeded.map_err(|e| CliError::Internal(e.context("seeding the sandbox's parent DNS zone")))
}

/// What exists before Phase 1 in a real subscription: the parent DNS zone the delegation goes into.
async fn seed_parent_zone(sandbox: &Sandbox) -> anyhow::Result<()> {
    let mut builder =
        reqwest::Client::builder().tls_certs_only([reqwest::Certificate::from_pem(sandbox.ca_pem().as_bytes())?]);
    if sandbox.answers_as_public_names() {
        // Azure's names are the sandbox's only on loopback, whatever any resolver would say.
        builder = builder.dns_resolver(std::sync::Arc::new(runbook_sandbox::public_names::LoopbackResolver));
    }
    let client = builder.build()?;
    let token: Value = client
        .post(format!("{}{}/oauth2/v2.0/token", sandbox.authority_host(), sandbox.tenant_id()))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(
            [
                ("grant_type", "client_credentials"),
                ("client_id", runbook_sandbox::SANDBOX_CLIENT_ID),
                ("client_secret", sandbox.client_secret()),
                ("scope", "https://management.azure.com/.default"),
            ]
            .iter()
            .map(|(k, v)| format!("{k}={}", form_encode(v)))
            .collect::<Vec<_>>()
            .join("&"),
        )
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let bearer = format!("Bearer {}", token["access_token"].as_str().unwrap_or_default());
    let base =
        format!("{}subscriptions/{}/resourceGroups/dns-parent", sandbox.arm_endpoint(), sandbox.subscription_id());
    for (url, body) in [
        (format!("{base}?api-version=2021-04-01"), json!({ "location": "eastus" })),
        (
            format!("{base}/providers/Microsoft.Network/dnsZones/example.com?api-version=2018-05-01"),
            json!({ "location": "global" }),
        ),
    ] {
        client.put(url).header("Authorization", &bearer).json(&body).send().await?.error_for_status()?;
    }
    Ok(())
}

fn form_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}
