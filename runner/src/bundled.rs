//! Runbooks and templates shipped inside the binary, and how a NAME on the command line is found.

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use runbook_steps::TemplateSource;

use crate::model::Origin;

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
pub fn locate(name: &str) -> Result<(Origin, String), String> {
    if name.ends_with(".toml") || name.contains('/') {
        let path = PathBuf::from(name);
        return std::fs::read_to_string(&path)
            .map(|text| (Origin::File(path.clone()), text))
            .map_err(|e| format!("cannot read runbook `{name}`: {e}"));
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
    Err(format!("no runbook named `{name}`; bundled: {}", known.join(", ")))
}

/// Templates beside the runbook file first, then the bundled ones.
pub struct Templates {
    pub dir: Option<PathBuf>,
}

impl TemplateSource for Templates {
    fn load(&self, name: &str) -> Option<(String, String)> {
        if Path::new(name).components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return None;
        }
        if let Some(dir) = &self.dir {
            for candidate in [dir.join(name), dir.join("templates").join(name), dir.join("../templates").join(name)] {
                if let Ok(text) = std::fs::read_to_string(&candidate) {
                    return Some((text, candidate.display().to_string()));
                }
            }
        }
        TEMPLATES.get_file(name).and_then(|f| f.contents_utf8()).map(|t| (t.to_string(), format!("templates/{name}")))
    }
}
