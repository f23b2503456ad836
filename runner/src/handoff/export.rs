//! Exporting a hand-off: a runbook's checkpoint values and files, for another person, signed by
//! the exporter, secrets encrypted to the recipient, and the export journaled.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use base64::Engine;
use runbook_journal::{EventData, HandoffExported, HandoffProvenance, Journal, NewEvent};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::exit::{CliError, CliResult};
use crate::handoff::format::{self, CheckpointSet, Content, HandedFile, Handoff};
use crate::handoff::published::{Published, published};
use crate::handoff::sealing::Recipient;
use crate::handoff::signing;

pub struct ExportArgs {
    pub target: String,
    pub to: String,
    pub out: PathBuf,
    pub sign_with: PathBuf,
    pub no_secrets: bool,
    /// The cluster whose checkpoints are handed over, when the runbook names one.
    pub cluster: Option<String>,
}

/// What an export wrote.
pub struct Exported {
    pub file_sha256: String,
    pub run_id: String,
    pub checkpoints: Map<String, Value>,
    pub omitted_secrets: Vec<String>,
    pub recipient: String,
    pub signer: String,
    /// The cluster the handed-over checkpoints were published for, when their runbook names one.
    pub cluster: Option<String>,
}

/// Writes the hand-off file of `args.target` from `journal` and journals the export.
pub fn export_file(journal: &Journal, args: &ExportArgs) -> CliResult<Exported> {
    let (runbook, only) = match args.target.split_once('.') {
        Some((runbook, checkpoint)) => (runbook, Some(checkpoint)),
        None => (args.target.as_str(), None),
    };
    let found = published(journal, runbook, args.cluster.as_deref())?;
    if args.cluster.is_none() && found.clusters.len() > 1 {
        // The latest of each checkpoint could come from different clusters' runs: a hand-off
        // must be one cluster's values, so the exporter names it.
        return Err(CliError::user_hint(
            format!(
                "`{runbook}` published checkpoints for several clusters in this journal: {}",
                found.clusters.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            ),
            "name the cluster to hand over with --cluster NAME",
        ));
    }
    let mut checkpoints = found.latest;
    if let Some(only) = only {
        checkpoints.retain(|name, _| name == only);
    }
    if checkpoints.is_empty() {
        let on = args.cluster.as_ref().map(|c| format!(" for cluster `{c}`")).unwrap_or_default();
        let others = published(journal, runbook, None)?.clusters;
        let hint = match (&args.cluster, others.is_empty()) {
            (Some(_), false) => format!(
                "it has for {}; run `{runbook}` for this cluster first, or name another with --cluster",
                others.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
            ),
            _ => format!("run `{runbook}` to the end first; `runbook status` shows where it stands"),
        };
        return Err(CliError::user_hint(
            format!("no checkpoint of `{}` has succeeded{on} in this journal", args.target),
            hint,
        ));
    }
    let recipient = Recipient::parse(&args.to)
        .map_err(|e| CliError::user_hint(e, "--to takes an age1… key, an SSH public key, or a file holding one"))?;
    let key = signing::load_signing_key(&args.sign_with).map_err(|e| {
        CliError::user_hint(e, "--sign-with (or RUNBOOK_SIGNING_KEY) takes an OpenSSH private key file")
    })?;

    let mut omitted = Vec::new();
    let mut sets = BTreeMap::new();
    for (name, checkpoint) in &checkpoints {
        sets.insert(
            name.clone(),
            checkpoint_set(journal, name, checkpoint, &recipient, args.no_secrets, &mut omitted)?,
        );
    }

    let cluster = checkpoints.values().find_map(|c| c.cluster.clone());
    // The run that published the newest checkpoint names the runbook version and the person.
    let latest = checkpoints.values().map(|c| c.run_id.as_str()).max().unwrap_or_default().to_string();
    let record = journal.run(&latest)?.ok_or_else(|| CliError::Internal(anyhow::anyhow!("run {latest} vanished")))?;
    let mut runs = Map::new();
    for (name, checkpoint) in &checkpoints {
        let run = journal.run(&checkpoint.run_id)?;
        runs.insert(
            name.clone(),
            // The Azure the run acted on travels with its values, so an importer never takes work
            // done against a sandbox (or another subscription) for work done against theirs.
            // So does the cluster: the importer's runs on that cluster read these values, and runs
            // on another never do.
            json!({ "run_id": checkpoint.run_id, "who": run.as_ref().map(|r| &r.who), "created_at": run.as_ref().map(|r| &r.created_at),
                    "azure": run.as_ref().and_then(runbook_journal::RunRecord::setup).map(|s| s.azure).filter(|a| !a.is_null()),
                    "cluster": checkpoint.cluster }),
        );
    }
    let provenance = HandoffProvenance {
        who: crate::who::who(record.who["persona"].as_str()),
        exported_at: crate::who::now(),
        runbook: runbook.to_string(),
        runbook_digest: record.runbook_digest.clone(),
        runs,
        chain_head: journal.chain_head()?,
        signer: signing::fingerprint(key.public_key()),
        journal: journal.event_hash(1)?,
    };
    let handoff = Handoff {
        format: format::FORMAT.into(),
        version: format::VERSION,
        provenance: provenance.clone(),
        recipient: recipient.name(),
        checkpoints: sets,
        omitted_secrets: omitted.clone(),
    };
    let body = format::body_bytes(&handoff);
    let signature = signing::sign(&key, &body).map_err(CliError::user)?;
    let file = format::render(&body, &signature);
    write_file(&args.out, &file)?;
    let file_sha256 = hex::encode(Sha256::digest(&file));

    let listed: Map<String, Value> = handoff
        .checkpoints
        .iter()
        .map(|(name, set)| (name.clone(), json!({ "values": set.values.keys().collect::<Vec<_>>(), "files": set.files.keys().collect::<Vec<_>>() })))
        .collect();
    let exported = HandoffExported {
        file_sha256: file_sha256.clone(),
        provenance,
        recipient: handoff.recipient.clone(),
        checkpoints: listed.clone(),
        omitted_secrets: omitted.clone(),
    };
    journal.append(&[NewEvent::new(latest.clone(), EventData::HandoffExported(exported))])?;
    Ok(Exported {
        file_sha256,
        run_id: latest,
        checkpoints: listed,
        omitted_secrets: omitted,
        recipient: handoff.recipient,
        signer: signing::fingerprint(key.public_key()),
        cluster,
    })
}

fn checkpoint_set(
    journal: &Journal,
    checkpoint: &str,
    published: &Published,
    recipient: &Recipient,
    no_secrets: bool,
    omitted: &mut Vec<String>,
) -> CliResult<CheckpointSet> {
    let mut set = CheckpointSet::default();
    let encrypt = |bytes: &[u8]| recipient.encrypt(bytes).map_err(|e| CliError::Internal(anyhow::anyhow!(e)));
    for (name, value) in &published.outputs {
        if published.is_file(name) {
            continue;
        }
        let content = match value.get("$sealed").and_then(Value::as_str) {
            None => Content::Plain(value.clone()),
            Some(_) if no_secrets => {
                omitted.push(format!("{checkpoint}.{name}"));
                Content::Omitted
            }
            Some(sealed) => Content::Encrypted(encrypt(&journal.unseal(sealed)?)?),
        };
        set.values.insert(name.clone(), content);
    }
    for (name, digest) in &published.file_sha256 {
        let path = published.outputs.get(name).and_then(Value::as_str).map(PathBuf::from).ok_or_else(|| {
            CliError::Internal(anyhow::anyhow!("checkpoint `{checkpoint}` journaled no path for file `{name}`"))
        })?;
        let (bytes, secret) = read_published_file(checkpoint, name, &path, digest.as_str().unwrap_or_default())?;
        let content = if !secret {
            Content::Plain(Value::String(base64::engine::general_purpose::STANDARD.encode(&bytes)))
        } else if no_secrets {
            omitted.push(format!("{checkpoint}.{name}"));
            Content::Omitted
        } else {
            Content::Encrypted(encrypt(&bytes)?)
        };
        let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| name.clone());
        set.files.insert(
            name.clone(),
            HandedFile { file_name, sha256: digest.as_str().unwrap_or_default().into(), secret, content },
        );
    }
    Ok(set)
}

/// The file as the checkpoint journaled it, and whether it is secret. A file changed since the
/// checkpoint is refused: the hand-off must be what the journal vouches for. Secret files are
/// the ones the product writes 0600 (readable by their owner only).
fn read_published_file(checkpoint: &str, name: &str, path: &Path, digest: &str) -> CliResult<(Vec<u8>, bool)> {
    let bytes = std::fs::read(path).map_err(|e| {
        CliError::user_hint(
            format!("hand-off file `{checkpoint}.{name}` at `{}` cannot be read: {e}", path.display()),
            "export on the machine (and from the directory) where the runbook ran",
        )
    })?;
    if hex::encode(Sha256::digest(&bytes)) != digest {
        return Err(CliError::user_hint(
            format!("`{}` changed since checkpoint `{checkpoint}` journaled it", path.display()),
            "run the runbook again so the checkpoint vouches for the file as it is now",
        ));
    }
    let mode = std::fs::metadata(path).map_err(|e| CliError::Internal(e.into()))?.permissions().mode();
    let private = mode & 0o077 == 0;
    // A tool that wrote a key or a credential readable by others (ccoctl's signing key is 0644
    // until a later step tightens it) would otherwise travel in plain text: refused instead.
    if !private && holds_a_credential(&bytes) {
        return Err(CliError::user_hint(
            format!(
                "hand-off file `{checkpoint}.{name}` at `{}` holds a private key or a client secret and is readable by others (mode {:o})",
                path.display(),
                mode & 0o777
            ),
            format!(
                "make it its owner's alone (`chmod 600 {}`), then export again: it then travels encrypted",
                path.display()
            ),
        ));
    }
    Ok((bytes, private))
}

/// Whether `bytes` look like a private key (PEM) or a credentials file naming a secret.
fn holds_a_credential(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.contains("PRIVATE KEY-----")
        || ["\"clientSecret\"", "\"aadClientSecret\"", "\"client_secret\"", "\"password\""]
            .iter()
            .any(|k| text.contains(k))
}

/// Written beside its final name and renamed, so a reader never sees half a file.
fn write_file(path: &Path, bytes: &[u8]) -> CliResult<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let fail = |e: std::io::Error| CliError::user(format!("cannot write `{}`: {e}", path.display()));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    tmp.write_all(bytes).and_then(|()| tmp.as_file().sync_all()).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
