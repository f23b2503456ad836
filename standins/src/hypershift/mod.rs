//! The `hypershift` CLI stand-in: `install`, `create cluster azure`, `create nodepool azure`,
//! `create kubeconfig`, `destroy cluster azure`, `create`/`destroy iam azure` and `create infra azure`, with the real CLI's flags, validations and
//! messages, acting on the sandbox only (its ARM and Entra, and a loopback management cluster).
//!
//! Exit status and output follow the real binary: the root command silences cobra's error and
//! usage printing and `main` prints the bare error to stderr and exits 1.

mod azure;
mod client_go_retry;
mod cluster_api;
mod crds;
mod create_cluster;
mod create_nodepool;
mod destroy_cluster;
mod dns_and_lb;
pub mod flags;
mod iam;
mod infra;
mod install;
mod kubeconfig;
mod objects;
mod roles;
mod sshkey;
pub mod tree;
mod validate;

use tree::{Command, ROOT};

/// The real CLI's messages for several validation failures (`errors.NewAggregate`).
fn aggregate(errors: Vec<String>) -> Result<(), String> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.into_iter().next().unwrap_or_default()),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// A file that cannot be read, as Go's `os.ReadFile` says it.
fn go_io_error(path: &str, error: &std::io::Error) -> String {
    let why = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_string(),
        _ => error.to_string(),
    };
    format!("open {path}: {why}")
}

/// Flags the real command accepts but this stand-in does not act on are refused, so that a
/// rehearsal never reports success for something it did not do.
fn refuse_unmodelled(flags: &flags::Parsed, modelled: &[&str], command: &str) -> Result<(), String> {
    match flags.names().find(|name| !modelled.contains(name)) {
        None => Ok(()),
        Some(name) => Err(format!(
            "--{name} is a flag of the real `hypershift {command}` that this stand-in does not model; leave it out of rehearsals"
        )),
    }
}

pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let resolved = tree::resolve(&args);
    let parsed = match flags::parse(&resolved.flags, &resolved.args) {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("{error}");
            return 1;
        }
    };
    if parsed.help {
        println!("{}", tree::usage(&resolved));
        return 0;
    }
    if let Some(sub) = &resolved.unmodelled {
        eprintln!(
            "`{} {sub}` is a command of the real hypershift that this stand-in does not model",
            resolved.path.join(" ")
        );
        return 1;
    }
    let Some(command) = resolved.node.command else {
        if std::ptr::eq(resolved.node, &ROOT) && !parsed.positional.is_empty() {
            eprintln!("unknown command \"{}\" for \"hypershift\"", parsed.positional[0]);
            return 1;
        }
        // Cobra prints the help of a command that only groups others; the root exits 1 after it.
        println!("{}", tree::usage(&resolved));
        return if std::ptr::eq(resolved.node, &ROOT) { 1 } else { 0 };
    };
    // Before anything is read, written or sent: this stand-in acts on the sandbox only.
    if let Err(refusal) = super::fence::sandbox_settings("hypershift") {
        eprintln!("{refusal}");
        return 1;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime starts");
    let result = runtime.block_on(async {
        match command {
            Command::Install => install::run(&parsed).await,
            Command::CreateClusterAzure => create_cluster::run(&parsed).await,
            Command::CreateKubeconfig => kubeconfig::run(&parsed).await,
            Command::CreateNodePoolAzure => create_nodepool::run(&parsed).await,
            Command::DestroyClusterAzure => destroy_cluster::run(&parsed).await,
            Command::CreateIamAzure => iam::create(&parsed).await,
            Command::CreateInfraAzure => infra::run(&parsed).await,
            Command::DestroyIamAzure => iam::destroy(&parsed).await,
        }
    });
    match result {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("{error}");
            1
        }
    }
}
