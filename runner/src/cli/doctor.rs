//! `runbook doctor`: one line per check of what a runbook needs on this machine and account.

use std::fmt::Write;

use serde_json::json;

use crate::cli::Env;
use crate::cli::exit::{CliResult, Exit};
use crate::doctor::checks;

pub async fn doctor(env: &Env, name: &str) -> CliResult {
    let runbook = env.load_runbook(name)?;
    let checks = checks(&runbook, &env.azure).await;
    let mut text = String::new();
    for check in &checks {
        let mark = if check.ok { "ok  " } else { "FAIL" };
        writeln!(text, "{mark} {}: {}", check.what, check.found).ok();
        if let Some(hint) = &check.hint {
            writeln!(text, "     hint: {hint}").ok();
        }
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    if checks.is_empty() {
        writeln!(text, "{} needs nothing from this machine beyond the runner", runbook.name()).ok();
    } else if failed > 0 {
        writeln!(text, "{failed} of {} checks failed", checks.len()).ok();
    }
    env.print(&text, json!({ "runbook": runbook.name(), "checks": checks, "ok": failed == 0 }));
    Ok(if failed == 0 { Exit::Ok } else { Exit::UserError })
}
