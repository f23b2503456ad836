//! What a hand-off may carry, as the runbook its provenance names declares it: its checkpoint
//! steps, each value (plain, or a file) and whether it is secret. A signer is trusted to vouch
//! for values, not to decide what they are: a value the runbook publishes as a file must arrive
//! as a file entry (never as a path into the importer's machine), nothing the runbook does not
//! publish is taken, and a value is secret when either side says so. File names are checked
//! here too: a plain name the runbook allows, never a dotfile, an option-looking or control-
//! character name, nor the name of the importer's journal.

use std::collections::BTreeMap;
use std::path::Path;

use crate::handoff::format::Handoff;
use crate::model::Runbook;

/// One value a checkpoint publishes.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// Published from `files`: a file whose content travels in the hand-off.
    pub file: bool,
    /// For a file whose path the runbook writes literally, the name it has.
    pub file_name: Option<String>,
    /// Secret as the runbook says it.
    pub secret: bool,
}

/// Every checkpoint of a runbook and what it publishes.
#[derive(Debug, Default)]
pub struct Declared {
    pub runbook: String,
    pub checkpoints: BTreeMap<String, BTreeMap<String, Published>>,
}

impl Declared {
    pub fn of(runbook: &Runbook) -> Declared {
        let secrets = crate::model::secrets::checkpoint_secrets(&runbook.file, &runbook.steps);
        let mut checkpoints = BTreeMap::new();
        for def in runbook.steps.iter().filter(|d| d.spec.kind == "checkpoint") {
            let mut published = BTreeMap::new();
            let inputs = &def.spec.inputs;
            for name in inputs.get("values").and_then(|v| v.as_object()).into_iter().flat_map(|m| m.keys()) {
                let secret = secrets.get(def.id()).and_then(|s| s.get(name)).copied().unwrap_or(false);
                published.insert(name.clone(), Published { file: false, file_name: None, secret });
            }
            for (name, path) in inputs.get("files").and_then(|v| v.as_object()).into_iter().flatten() {
                let literal = path.as_str().filter(|p| !p.contains("${"));
                let file_name =
                    literal.and_then(|p| Path::new(p).file_name()).map(|n| n.to_string_lossy().into_owned());
                published.insert(name.clone(), Published { file: true, file_name, secret: false });
            }
            checkpoints.insert(def.id().to_string(), published);
        }
        Declared { runbook: runbook.name().to_string(), checkpoints }
    }

    /// Every way `handoff` departs from the declaration, one line each (none: it conforms).
    /// `journal_names`: the file names the importer's journal uses in the import directory.
    pub fn problems(&self, handoff: &Handoff, journal_names: &[String]) -> Vec<String> {
        let mut problems = Vec::new();
        for (checkpoint, set) in &handoff.checkpoints {
            let Some(published) = self.published_by(checkpoint) else {
                problems.push(format!("`{checkpoint}` is not a checkpoint of runbook `{}`", self.runbook));
                continue;
            };
            for name in set.values.keys() {
                match published.get(name) {
                    None => problems.push(format!("`{checkpoint}.{name}` is not published by `{}`", self.runbook)),
                    Some(p) if p.file => problems.push(format!(
                        "`{checkpoint}.{name}` is a file in `{}`, and arrived as a plain value (a path)",
                        self.runbook
                    )),
                    Some(_) => {}
                }
            }
            for (name, handed) in &set.files {
                let key = format!("{checkpoint}.{name}");
                match published.get(name) {
                    None => problems.push(format!("`{key}` is not published by `{}`", self.runbook)),
                    Some(p) if !p.file => {
                        problems.push(format!("`{key}` is a value in `{}`, and arrived as a file", self.runbook))
                    }
                    Some(p) => {
                        if let Some(why) = bad_file_name(&handed.file_name, journal_names) {
                            problems.push(format!("`{key}` names its file {}: {why}", escaped(&handed.file_name)));
                        } else if let Some(expected) = &p.file_name
                            && expected != &handed.file_name
                        {
                            problems.push(format!(
                                "`{key}` names its file {}, and `{}` writes it as {}",
                                escaped(&handed.file_name),
                                self.runbook,
                                escaped(expected)
                            ));
                        }
                    }
                }
            }
        }
        problems
    }

    /// Whether the runbook says `checkpoint.name` is secret.
    pub fn secret(&self, checkpoint: &str, name: &str) -> bool {
        self.published_by(checkpoint).and_then(|p| p.get(name)).is_some_and(|p| p.secret)
    }

    /// What checkpoint `checkpoint` publishes: a step's, or one instance's of a step with
    /// `for_each` (`handoff[blue]`).
    fn published_by(&self, checkpoint: &str) -> Option<&BTreeMap<String, Published>> {
        let step = checkpoint.split_once('[').filter(|(_, rest)| rest.ends_with(']')).map_or(checkpoint, |(s, _)| s);
        self.checkpoints.get(step)
    }
}

/// A name shown as typed, with anything a terminal would act on escaped.
pub fn escaped(name: &str) -> String {
    format!("`{}`", name.escape_debug())
}

/// Why `name` may not be written in the import directory, if it may not.
fn bad_file_name(name: &str, journal_names: &[String]) -> Option<&'static str> {
    if name.is_empty() || Path::new(name).file_name().and_then(|n| n.to_str()) != Some(name) {
        return Some("not a plain file name");
    }
    if name.starts_with('.') {
        return Some("a hidden file (a dotfile)");
    }
    if name.starts_with('-') {
        return Some("it starts with `-`, as an option would");
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '@')) {
        return Some("only letters, digits and . _ - + @ are taken");
    }
    if journal_names
        .iter()
        .any(|j| name == j || name.starts_with(&format!("{j}-")) || name.starts_with(&format!("{j}.")))
    {
        return Some("the importer's journal has that name");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_terminal_or_a_shell_would_act_on_are_refused() {
        let journal = vec!["journal.db".to_string()];
        assert_eq!(bad_file_name("azure_mgmt.json", &journal), None);
        assert!(bad_file_name(".bash_profile", &journal).is_some());
        assert!(bad_file_name("-rf", &journal).is_some());
        assert!(bad_file_name("a\nb", &journal).is_some());
        assert!(bad_file_name("a\u{1b}[31m", &journal).is_some());
        assert!(bad_file_name("../x", &journal).is_some());
        assert!(bad_file_name("journal.db", &journal).is_some());
        assert!(bad_file_name("journal.db-wal", &journal).is_some());
        assert!(bad_file_name("journal.db.key", &journal).is_some());
        assert_eq!(escaped("a\u{1b}b\n"), "`a\\u{1b}b\\n`");
    }

    #[test]
    fn an_instance_of_a_fanned_out_checkpoint_publishes_what_its_step_does() {
        let published = Published { file: false, file_name: None, secret: true };
        let declared = Declared {
            runbook: "r".into(),
            checkpoints: BTreeMap::from([("handoff".to_string(), BTreeMap::from([("token".to_string(), published)]))]),
        };
        assert!(declared.secret("handoff[blue]", "token"));
        assert!(declared.secret("handoff", "token"));
        assert!(!declared.secret("handoff[blue", "token"));
        assert!(!declared.secret("other", "token"));
    }
}
