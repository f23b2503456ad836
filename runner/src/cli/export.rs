//! `runbook export RUNBOOK[.CHECKPOINT] --to RECIPIENT -o FILE`: the hand-off written by
//! `handoff::export`, and what it wrote shown.

use serde_json::json;

use crate::cli::Env;
use crate::cli::exit::{CliResult, Exit};
pub use crate::handoff::export::ExportArgs;

pub fn export(env: &Env, args: &ExportArgs) -> CliResult {
    let journal = env.require_intact_journal()?;
    let exported = crate::handoff::export::export_file(&journal, args)?;
    let on = exported.cluster.as_ref().map(|c| format!(" for cluster {c}")).unwrap_or_default();
    let mut text = format!(
        "exported {} checkpoint(s) of {}{on} to {} (sha256 {}), signed by {}, secrets encrypted to {}\n",
        exported.checkpoints.len(),
        args.target,
        args.out.display(),
        exported.file_sha256,
        exported.signer,
        exported.recipient
    );
    if !exported.omitted_secrets.is_empty() {
        text.push_str(&format!("left out (--no-secrets): {}\n", exported.omitted_secrets.join(", ")));
    }
    env.print(
        &text,
        json!({ "file": args.out, "sha256": exported.file_sha256, "run": exported.run_id, "checkpoints": exported.checkpoints,
                "omitted_secrets": exported.omitted_secrets, "recipient": exported.recipient, "signer": exported.signer, "cluster": exported.cluster }),
    );
    Ok(Exit::Ok)
}
