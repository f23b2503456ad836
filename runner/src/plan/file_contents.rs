//! Required values that name files. A step reading such a file names it by path, so its inputs,
//! and the digest that decides reuse, stay the same when the file is rewritten (a rotated secret
//! written again by an earlier runbook). The checkpoint that published the path vouched for the
//! file's content; that content's digest joins the step's per-input digests, and a step done
//! with other content runs again. Steps journaled without it (by an older build) are reused as
//! before.

use std::collections::BTreeSet;

use runbook_journal::Journal;
use serde_json::{Map, Value};

use crate::model::refs::{self, Reference};
use crate::model::validate::collect_strings;
use crate::plan::prior::RequiredFiles;

/// How a file's content is named among a step's per-input digests: `file of ALIAS.OUTPUT`.
const PREFIX: &str = "file of ";

/// Adds to `input_digests` a keyed digest of the content vouched for of each required file the
/// step's `inputs` refer to.
pub fn add_file_contents(
    journal: &Journal,
    inputs: &Map<String, Value>,
    files: &RequiredFiles,
    input_digests: &mut Map<String, Value>,
) {
    if files.is_empty() {
        return;
    }
    let mut strings = Vec::new();
    for value in inputs.values() {
        collect_strings(value, "", &mut strings);
    }
    let mut read = BTreeSet::new();
    for (_, text) in &strings {
        let Ok(interpolation) = refs::parse(text) else { continue };
        for reference in interpolation.references() {
            if let Reference::Required { alias, output } = reference
                && let Some(sha) = files.get(&(alias.clone(), output.clone()))
            {
                read.insert((format!("{PREFIX}{alias}.{output}"), sha));
            }
        }
    }
    for (name, sha) in read {
        input_digests.insert(name, Value::String(journal.digest(sha.as_bytes())));
    }
}

/// The required files whose content differs between a step done before and now, by the names
/// the step refers to them by ("`phase1.credentials_file`"); empty when none did, or the step
/// was journaled without their contents.
pub fn changed_file_contents(before: &Map<String, Value>, now: &Map<String, Value>) -> Vec<String> {
    now.iter()
        .filter_map(|(name, digest)| {
            let file = name.strip_prefix(PREFIX)?;
            before.get(name).is_some_and(|was| was != digest).then(|| format!("`{file}`"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_files_a_checkpoint_vouched_for_and_the_step_reads_are_digested() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(&dir.path().join("j.db")).unwrap();
        let files = RequiredFiles::from([
            (("p1".to_string(), "creds".to_string()), "aa".to_string()),
            (("p1".to_string(), "other".to_string()), "bb".to_string()),
        ]);
        let inputs = json!({"argv": ["x", "--creds", "${p1.creds}", "${p1.zone}"], "env": {"F": "${p1.creds}"}});
        let mut digests = Map::new();
        add_file_contents(&journal, inputs.as_object().unwrap(), &files, &mut digests);
        assert_eq!(digests.keys().collect::<Vec<_>>(), ["file of p1.creds"]);

        let mut rotated = Map::new();
        let files = RequiredFiles::from([(("p1".to_string(), "creds".to_string()), "cc".to_string())]);
        add_file_contents(&journal, inputs.as_object().unwrap(), &files, &mut rotated);
        assert_eq!(changed_file_contents(&digests, &rotated), ["`p1.creds`"]);
        assert!(changed_file_contents(&digests, &digests).is_empty());
        // Journaled by a build that did not record contents: nothing to compare, reused as before.
        assert!(changed_file_contents(&Map::new(), &rotated).is_empty());
    }
}
