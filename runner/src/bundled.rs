//! Runbooks and templates shipped inside the binary, and how a NAME on the command line is found.

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use runbook_steps::TemplateSource;

use crate::model::read::read_text;
use crate::model::{Origin, Problem};

static RUNBOOKS: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../runbooks");
static TEMPLATES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../templates");

/// Bundled runbooks as (file stem, text), sorted by name.
pub fn runbooks() -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = RUNBOOKS
        .files()
        .filter(|f| f.path().extension().is_some_and(|e| e == "toml"))
        .filter_map(|f| Some((f.path().file_stem()?.to_str()?.to_string(), f.contents_utf8()?)))
        .collect();
    out.sort();
    out
}

/// A NAME is a path when it looks like one, else a bundled runbook (by file name or `runbook.name`).
pub fn locate(name: &str) -> Result<(Origin, String), Problem> {
    if name.ends_with(".toml") || name.contains('/') {
        let path = PathBuf::from(name);
        return read_text(&path, "runbook").map(|text| (Origin::File(path.clone()), text));
    }
    for (stem, text) in runbooks() {
        let declared = toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| t.get("runbook")?.get("name")?.as_str().map(String::from));
        if stem == name || declared.as_deref() == Some(name) {
            return Ok((Origin::Bundled(stem), text.to_string()));
        }
    }
    let known: Vec<String> = runbooks().into_iter().map(|(n, _)| n).collect();
    Err(Problem::without_file(name, format!("no runbook named `{name}`; bundled: {}", known.join(", ")))
        .with_hint("`runbook list` shows the bundled runbooks; a path must end in .toml"))
}

/// The runbook named `name` (as `requires` and hand-offs name them): the bundled one, else
/// `NAME.toml` in `dir`. None for a name that is not a plain runbook name (no path is taken
/// from it) or a runbook found nowhere.
pub fn locate_named(name: &str, dir: &Path) -> Option<(Origin, String)> {
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        return None;
    }
    locate(name).ok().or_else(|| {
        let path = dir.join(format!("{name}.toml"));
        read_text(&path, "runbook").ok().map(|text| (Origin::File(path), text))
    })
}

/// Templates beside the runbook file first, then the bundled ones.
pub struct Templates {
    pub dir: Option<PathBuf>,
}

impl TemplateSource for Templates {
    fn load(&self, name: &str) -> Option<(String, String)> {
        if runbook_steps::template_name_problem(name).is_some() || Path::new(name).is_absolute() {
            return None;
        }
        if let Some(dir) = &self.dir {
            for candidate in [dir.join(name), dir.join("templates").join(name), dir.join("../templates").join(name)] {
                if candidate.is_file()
                    && let Ok(text) = read_text(&candidate, "template")
                {
                    return Some((text, candidate.display().to_string()));
                }
            }
        }
        TEMPLATES.get_file(name).and_then(|f| f.contents_utf8()).map(|t| (t.to_string(), format!("templates/{name}")))
    }
}
