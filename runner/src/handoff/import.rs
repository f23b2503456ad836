//! Importing a hand-off: checks a hand-off file's signature, version and recipient, decrypts
//! its secrets, and takes its values into this journal (secrets sealed) and its files into the
//! working directory (secret ones 0600), with where they came from. Every check is made before
//! anything is written: a refused file leaves the journal and the directory as they were.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use base64::Engine;
use runbook_journal::{
    EventData, HANDOFF_IMPORTED, HandoffImported, HandoffProvenance, Journal, NewEvent, NewRun, Replaced,
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::exit::{CliError, CliResult};
use crate::handoff::declared::Declared;
use crate::handoff::format::{self, Content, Handoff};
use crate::handoff::sealing::Identity;
use crate::handoff::signing;
use crate::handoff::supersede::{self, Conflict};

pub struct ImportArgs {
    pub file: PathBuf,
    pub identity: Option<PathBuf>,
    pub trust: Vec<String>,
    pub trusted_keys: Option<PathBuf>,
    pub dir: Option<PathBuf>,
    pub persona: Option<String>,
    /// Let the hand-off's values replace values this journal made itself (journaled).
    pub replace: bool,
    /// The runbook the hand-off's checkpoints belong to, when it is not bundled.
    pub runbook: Option<PathBuf>,
}

/// A file to write, decided before anything is written.
struct Planned {
    key: String,
    path: PathBuf,
    bytes: Vec<u8>,
    sha256: String,
    secret: bool,
    /// Already there with the same content.
    present: bool,
    /// Already there with other content: refused, unless the import replaces that value, when
    /// the new content goes under a name of its own.
    clash: bool,
}

fn refused(file: &Path, why: impl std::fmt::Display, hint: &str) -> CliError {
    CliError::user_hint(format!("refusing `{}`: {why}; nothing was imported", file.display()), hint)
}

/// What an import did.
pub enum Imported {
    /// The same file was imported before, as this run.
    Already { run_id: String },
    New {
        run_id: String,
        signer: String,
        files: Vec<Value>,
        /// Every value taken, as `checkpoint.name` and its value (None: secret).
        values: Vec<(String, Option<Value>)>,
        handoff: Box<Handoff>,
        /// What it replaced: an earlier import's values, or (with --replace) local ones.
        replaces: Vec<Replaced>,
    },
}

/// The Azure (one each) the exporter's runs acted on, as the signed file names them.
pub fn made_on(handoff: &Handoff) -> Vec<runbook_steps::AzureTarget> {
    let mut targets: Vec<runbook_steps::AzureTarget> = Vec::new();
    for run in handoff.provenance.runs.values() {
        if let Some(target) = run.get("azure").and_then(|a| serde_json::from_value(a.clone()).ok())
            && !targets.contains(&target)
        {
            targets.push(target);
        }
    }
    targets
}

/// Far above any hand-off (values and a few small files); a FIFO or a device is never read.
const MAX_HANDOFF_BYTES: u64 = 64 * 1024 * 1024;

/// The names the journal at `journal_path` uses in `dir` (its database, and the files named
/// after it: the key, the WAL, the lock), which a hand-off's file may never take.
fn journal_names(journal_path: &Path, dir: &Path) -> Vec<String> {
    let parent = std::path::absolute(journal_path).ok().and_then(|p| p.parent().map(Path::to_path_buf));
    match (parent, journal_path.file_name()) {
        (Some(parent), Some(name)) if parent == dir => vec![name.to_string_lossy().into_owned()],
        _ => Vec::new(),
    }
}

/// Removes a journal this import created before it failed: the database and the files named
/// after it beside it.
fn remove_new_journal(journal_path: &Path) {
    let (Some(dir), Some(name)) = (journal_path.parent(), journal_path.file_name()) else { return };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let name = name.to_string_lossy().into_owned();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file == name || file.starts_with(&format!("{name}.")) || file.starts_with(&format!("{name}-")) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Checks and takes `args.file` into the journal at `journal_path` (created if missing, and
/// only once every check passed); returns what was done and the file's SHA-256. `runbook`
/// loads the runbook a hand-off names, whose checkpoints say what it may carry.
pub fn import_file(
    journal_path: &Path,
    args: &ImportArgs,
    runbook: &dyn Fn(&str) -> CliResult<crate::model::Runbook>,
) -> CliResult<(Imported, String)> {
    let file = &args.file;
    let bytes = crate::model::read::read_bytes(file, "hand-off file", MAX_HANDOFF_BYTES)
        .map_err(|p| CliError::user_hint(format!("{}: {}", p.file, p.message), p.hint.unwrap_or_default()))?;
    let file_sha256 = hex::encode(Sha256::digest(&bytes));

    let trusted = signing::trusted_keys(&args.trust, args.trusted_keys.as_deref()).map_err(CliError::user)?;
    if trusted.is_empty() {
        return Err(refused(
            file,
            "no signer is trusted",
            "name the exporter's SSH public key with --trust KEY, or list trusted keys in a file given by --trusted-keys (RUNBOOK_TRUSTED_KEYS)",
        ));
    }
    let (body, signature) = format::split(&bytes)
        .map_err(|e| refused(file, e, "ask the exporter for the file again, as it was written"))?;
    let signer = signing::verify(body, &signature, &trusted).map_err(|e| {
        refused(
            file,
            e,
            "check with the exporter who signed it; trust their key with --trust only once you know it is theirs",
        )
    })?;
    let handoff = format::parse(body)
        .map_err(|e| refused(file, e, "import it with the build that exported it, or a newer one"))?;
    if handoff.provenance.signer != signer {
        return Err(refused(
            file,
            format!("it names its signer {} but was signed by {signer}", handoff.provenance.signer),
            "ask the exporter for the file again, as `runbook export` wrote it",
        ));
    }

    // Re-importing the same file changes nothing.
    let on_server = runbook_journal::is_server_url(journal_path);
    let journal = match journal_path.try_exists().map(|exists| exists || on_server) {
        Ok(true) => match Journal::open_existing(journal_path) {
            Ok(journal) => Some(journal),
            // A journal whose creation never finished: its leftovers were just removed.
            Err(runbook_journal::Error::NotFound(_)) => None,
            Err(e) => return Err(e.into()),
        },
        _ => None,
    };
    if let Some(journal) = &journal {
        journal.ensure_intact()?;
        if let Some(run_id) = imported_before(journal, &file_sha256)? {
            return Ok((Imported::Already { run_id }, file_sha256));
        }
    }

    let dir = std::path::absolute(args.dir.clone().unwrap_or_else(|| PathBuf::from(".")))
        .map_err(|e| CliError::Internal(e.into()))?;
    let name = &handoff.provenance.runbook;
    let declared = runbook(name).map(|r| Declared::of(&r)).map_err(|e| {
        let why = match e {
            CliError::User { message, .. } => message,
            _ => "it cannot be loaded".to_string(),
        };
        refused(
            file,
            format!("it carries values of runbook `{}`, which is not bundled and not found here ({why})", name.escape_debug()),
            "give the runbook the exporter ran with --runbook FILE (or keep it here as NAME.toml): what a hand-off may carry is checked against it",
        )
    })?;
    let problems = declared.problems(&handoff, &journal_names(journal_path, &dir));
    if !problems.is_empty() {
        return Err(refused(
            file,
            format!("it does not match runbook `{name}`: {}", problems.join("; ")),
            "a hand-off carries only the values and files its runbook's checkpoints publish; ask the exporter for the file `runbook export` wrote",
        ));
    }
    let identity = identity_for(&handoff, args, file)?;
    let (mut values, mut files) = open_contents(&handoff, identity.as_ref(), &dir, file, &declared)?;
    let replaces = match &journal {
        Some(journal) => {
            let conflicts = find_conflicts(journal, &handoff.provenance, &values, &files)?;
            supersede::decide(&conflicts, &handoff.provenance, &signer, &imports(journal)?, args.replace).map_err(
                |refusal| {
                    let (why, hint) = refusal.explain();
                    refused(file, why, &hint)
                },
            )?
        }
        None => Vec::new(),
    };
    place_clashing_files(&mut files, &mut values, &replaces, file)?;

    // Everything is checked: the journal first (made now if there is none, so no file of the
    // hand-off can take its place), then the files, then the import journaled. Anything that
    // fails takes back what this import wrote.
    let created = journal.is_none();
    let journal = match journal {
        Some(journal) => journal,
        None => crate::workspace::create_journal(journal_path)?,
    };
    let undo_journal = || {
        if created && !on_server {
            remove_new_journal(journal_path);
        }
    };
    let to_write: Vec<&Planned> = files.iter().filter(|f| !f.present).collect();
    for (n, planned) in to_write.iter().enumerate() {
        if let Err(e) = write_new(&planned.path, &planned.bytes, planned.secret) {
            for written in &to_write[..n] {
                let _ = std::fs::remove_file(&written.path);
            }
            undo_journal();
            return Err(e);
        }
    }
    let run_id = crate::who::new_run_id();
    let outcome = journal_import(
        &journal,
        &run_id,
        &handoff,
        &file_sha256,
        (&values, &files),
        replaces.clone(),
        args.persona.as_deref(),
    );
    if let Err(e) = outcome {
        for planned in files.iter().filter(|f| !f.present) {
            let _ = std::fs::remove_file(&planned.path);
        }
        drop(journal);
        undo_journal();
        return Err(e);
    }
    let written =
        files.iter().map(|f| json!({ "key": f.key, "path": f.path, "secret": f.secret, "sha256": f.sha256 })).collect();
    let mut listed = Vec::new();
    for (checkpoint, outputs) in &values {
        for (name, (value, secret)) in outputs {
            let key = format!("{checkpoint}.{name}");
            if !files.iter().any(|f| f.key == key) {
                listed.push((key, (!secret).then(|| value.clone())));
            }
        }
    }
    Ok((
        Imported::New { run_id, signer, files: written, values: listed, handoff: Box::new(handoff), replaces },
        file_sha256,
    ))
}

/// This journal's imports, by run.
fn imports(journal: &Journal) -> CliResult<BTreeMap<String, HandoffImported>> {
    let mut found = BTreeMap::new();
    journal.read_verified(|row| {
        if row.kind == HANDOFF_IMPORTED
            && let EventData::HandoffImported(imported) = row.decode()?
        {
            found.insert(row.run_id.to_string(), imported);
        }
        Ok(())
    })?;
    Ok(found)
}

/// A file whose name is taken by other content goes under a name of its own (its content's
/// digest in it) when the import replaces that value, or when an earlier import already wrote
/// the same content there. The earlier file stays what the earlier import journaled, and the
/// value's path changes, which is what makes a later runbook's step that reads it run again.
/// Otherwise it is refused.
fn place_clashing_files(
    files: &mut [Planned],
    values: &mut Values,
    replaces: &[Replaced],
    file: &Path,
) -> CliResult<()> {
    for planned in files.iter_mut().filter(|f| f.clash) {
        let (checkpoint, name) = planned.key.split_once('.').expect("a file's key is checkpoint.name");
        let replaced = replaces.iter().any(|r| r.checkpoint == checkpoint && r.values.iter().any(|v| v == name));
        let path = versioned(&planned.path, &planned.sha256);
        let present = match std::fs::read(&path) {
            Ok(existing) => Some(existing == planned.bytes),
            Err(_) => None,
        };
        match present {
            Some(true) => planned.present = true,
            None if replaced => {}
            _ => {
                return Err(refused(
                    file,
                    format!("`{}` exists with other content than `{}`", planned.path.display(), planned.key),
                    "import into another directory with --dir, or move the existing file away",
                ));
            }
        }
        planned.clash = false;
        planned.path = path;
        if let Some(entry) = values.get_mut(checkpoint).and_then(|e| e.get_mut(name)) {
            entry.0 = Value::String(planned.path.display().to_string());
        }
    }
    Ok(())
}

/// `azure_mgmt.json` with content `3f2a…` → `azure_mgmt.3f2a9c1b7d0e.json`.
fn versioned(path: &Path, sha256: &str) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{}.{}", &sha256[..12], ext.to_string_lossy()),
        None => format!("{stem}.{}", &sha256[..12]),
    };
    path.with_file_name(name)
}

fn imported_before(journal: &Journal, file_sha256: &str) -> CliResult<Option<String>> {
    let mut found = None;
    journal.read_verified(|row| {
        if row.kind == HANDOFF_IMPORTED
            && let EventData::HandoffImported(imported) = row.decode()?
            && imported.file_sha256 == file_sha256
        {
            found = Some(row.run_id.to_string());
        }
        Ok(())
    })?;
    Ok(found)
}

/// The importer's identity, when the file holds secrets; it must be the one the file was
/// encrypted to.
fn identity_for(handoff: &Handoff, args: &ImportArgs, file: &Path) -> CliResult<Option<Identity>> {
    let encrypted = handoff.checkpoints.values().any(|set| {
        set.values.values().any(|c| matches!(c, Content::Encrypted(_)))
            || set.files.values().any(|f| matches!(f.content, Content::Encrypted(_)))
    });
    let Some(path) = &args.identity else {
        if encrypted {
            return Err(refused(
                file,
                format!("it holds secrets encrypted to {}, and no --identity was given", handoff.recipient),
                "give the matching private key with --identity (an age identity file or your SSH private key)",
            ));
        }
        return Ok(None);
    };
    let identity = Identity::load(path).map_err(CliError::user)?;
    if identity.recipient != handoff.recipient {
        return Err(refused(
            file,
            format!("it was made for {}, not for {} (`{}`)", handoff.recipient, identity.recipient, path.display()),
            "ask the exporter to export again with --to your public key",
        ));
    }
    Ok(Some(identity))
}

type Values = BTreeMap<String, BTreeMap<String, (Value, bool)>>;

/// Every value (with whether it is secret) and file, decrypted and checked, by checkpoint.
fn open_contents(
    handoff: &Handoff,
    identity: Option<&Identity>,
    dir: &Path,
    file: &Path,
    declared: &Declared,
) -> CliResult<(Values, Vec<Planned>)> {
    let decrypt = |key: &str, armored: &str| -> CliResult<Vec<u8>> {
        let identity = identity.ok_or_else(|| CliError::Internal(anyhow::anyhow!("no identity for `{key}`")))?;
        identity.decrypt(armored).map_err(|e| {
            refused(file, format!("`{key}` cannot be decrypted ({e})"), "ask the exporter for the file again")
        })
    };
    let mut values = Values::new();
    let mut files = Vec::new();
    for (checkpoint, set) in &handoff.checkpoints {
        let entry = values.entry(checkpoint.clone()).or_default();
        for (name, content) in &set.values {
            let key = format!("{checkpoint}.{name}");
            match content {
                // Secret when the runbook says so, whatever the exporter marked.
                Content::Plain(value) => {
                    entry.insert(name.clone(), (value.clone(), declared.secret(checkpoint, name)));
                }
                Content::Encrypted(armored) => {
                    let value = serde_json::from_slice(&decrypt(&key, armored)?).map_err(|e| {
                        refused(
                            file,
                            format!("`{key}` is not a JSON value ({e})"),
                            "ask the exporter for the file again",
                        )
                    })?;
                    entry.insert(name.clone(), (value, true));
                }
                Content::Omitted => {}
            }
        }
        for (name, handed) in &set.files {
            let key = format!("{checkpoint}.{name}");
            let bytes = match &handed.content {
                Content::Plain(Value::String(b64)) => {
                    base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| {
                        refused(file, format!("`{key}` is not base64 ({e})"), "ask the exporter for the file again")
                    })?
                }
                Content::Plain(_) => {
                    return Err(refused(
                        file,
                        format!("`{key}` has no content"),
                        "ask the exporter for the file again",
                    ));
                }
                Content::Encrypted(armored) => decrypt(&key, armored)?,
                Content::Omitted => continue,
            };
            let sha256 = hex::encode(Sha256::digest(&bytes));
            if sha256 != handed.sha256 {
                return Err(refused(
                    file,
                    format!("`{key}` does not match its SHA-256"),
                    "ask the exporter for the file again",
                ));
            }
            let plain_name =
                Path::new(&handed.file_name).file_name().filter(|n| n.to_str() == Some(handed.file_name.as_str()));
            let Some(plain_name) = plain_name else {
                return Err(refused(
                    file,
                    format!("`{key}` names the file `{}`, which is not a plain file name", handed.file_name),
                    "ask the exporter for the file again",
                ));
            };
            let path = dir.join(plain_name);
            let (present, clash) = match std::fs::read(&path) {
                Ok(existing) => (existing == bytes, existing != bytes),
                Err(_) => (false, false),
            };
            entry.insert(name.clone(), (Value::String(path.display().to_string()), handed.secret));
            files.push(Planned { key, path, bytes, sha256, secret: handed.secret, present, clash });
        }
    }
    Ok((values, files))
}

/// The values this journal already holds for the same runbook's checkpoints on the same cluster
/// (from a local run or an earlier import) that differ from the hand-off's: a file value differs
/// when its content does. By checkpoint, with the run holding them. Another cluster's values are
/// no conflict: they stand side by side, each read by runs on its own cluster.
fn find_conflicts(
    journal: &Journal,
    provenance: &HandoffProvenance,
    values: &Values,
    files: &[Planned],
) -> CliResult<Vec<Conflict>> {
    let cluster = crate::plan::history::exported_cluster(provenance);
    let prior = crate::plan::history::History::read(journal)
        .and_then(|history| history.prior_on(journal, &provenance.runbook, cluster.as_deref(), None, false))
        .map_err(CliError::Internal)?;
    let mut conflicts = Vec::new();
    for (checkpoint, outputs) in values {
        let Some(done) = prior.done.get(checkpoint).filter(|d| d.published) else {
            continue;
        };
        let mut differing = Vec::new();
        for (name, (value, _)) in outputs {
            let key = format!("{checkpoint}.{name}");
            let Some(existing) = done.outputs.get(name) else { continue };
            let same = match files.iter().find(|f| f.key == key) {
                Some(planned) => existing
                    .as_str()
                    .and_then(|p| std::fs::read(p).ok())
                    .is_some_and(|b| hex::encode(Sha256::digest(&b)) == planned.sha256),
                None => existing == value,
            };
            if !same {
                differing.push(name.clone());
            }
        }
        if !differing.is_empty() {
            conflicts.push(Conflict { checkpoint: checkpoint.clone(), values: differing, run_id: done.run_id.clone() });
        }
    }
    Ok(conflicts)
}

/// Written beside its final name, synced, then linked to that name only if nothing holds it
/// yet: an interrupted import never leaves half a file under the name, and never replaces one.
fn write_new(path: &Path, bytes: &[u8], secret: bool) -> CliResult<()> {
    let fail = |e: std::io::Error| CliError::user(format!("cannot write `{}`: {e}", path.display()));
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // Created 0600; a file that is not secret is opened up once its content is whole.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    tmp.write_all(bytes).and_then(|()| tmp.as_file().sync_all()).map_err(fail)?;
    if !secret {
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(fail)?;
    }
    tmp.persist_noclobber(path).map_err(|e| fail(e.error))?;
    Ok(())
}

fn journal_import(
    journal: &Journal,
    run_id: &str,
    handoff: &Handoff,
    file_sha256: &str,
    (values, files): (&Values, &[Planned]),
    replaces: Vec<Replaced>,
    persona: Option<&str>,
) -> CliResult<()> {
    let checkpoints: Map<String, Value> = values
        .iter()
        .map(|(checkpoint, outputs)| {
            let journaled: Map<String, Value> = outputs
                .iter()
                .map(|(name, (value, secret))| {
                    let is_file = files.iter().any(|f| f.key == format!("{checkpoint}.{name}"));
                    let stored = if *secret && !is_file {
                        json!({ "$sealed": journal.seal(&serde_json::to_vec(value).expect("values serialize")) })
                    } else {
                        value.clone()
                    };
                    (name.clone(), stored)
                })
                .collect();
            (checkpoint.clone(), Value::Object(journaled))
        })
        .collect();
    let file_rows: Map<String, Value> = files
        .iter()
        .map(|f| (f.key.clone(), json!({ "path": f.path, "sha256": f.sha256, "secret": f.secret })))
        .collect();
    journal.create_run(&NewRun {
        id: run_id.to_string(),
        runbook: handoff.provenance.runbook.clone(),
        runbook_digest: handoff.provenance.runbook_digest.clone(),
        // Marks the run as an import: there is nothing of it to resume.
        vars: json!({ "handoff": { "file_sha256": file_sha256 } }),
        who: crate::who::who(persona),
    })?;
    let imported = HandoffImported {
        file_sha256: file_sha256.to_string(),
        provenance: handoff.provenance.clone(),
        recipient: handoff.recipient.clone(),
        checkpoints,
        files: file_rows,
        omitted_secrets: handoff.omitted_secrets.clone(),
        replaces,
    };
    journal.append(&[NewEvent::new(run_id, EventData::HandoffImported(imported))])?;
    Ok(())
}
