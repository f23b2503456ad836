//! A persona signs off a manual gate; the next `resume` passes it.

use runbook_journal::{EventData, GateApproved, NewEvent};
use serde_json::json;

use crate::cli::Env;
use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::inspect::{pick_run, step_states};

pub fn approve(env: &Env, run: &str, gate: &str, comment: Option<String>) -> CliResult {
    let journal = env.require_intact_journal()?;
    let record = pick_run(&journal, Some(run))?;
    // The key of the run approved: a run on another cluster may go on meanwhile.
    let key = crate::session::run_key::run_key(&record);
    let _lock = journal.lock(&crate::who::holder(&record.id, &format!("approve {gate}")), &key)?;
    let (states, _) = step_states(&journal, &record.id)?;
    match states.get(gate).and_then(|s| s["state"].as_str()) {
        Some("awaiting_approval") => {}
        Some("approved") => {
            return Err(CliError::user(format!("gate `{gate}` of run {} is already approved", record.id)));
        }
        Some(other) => {
            return Err(CliError::user(format!(
                "step `{gate}` of run {} is {other}, not waiting for approval",
                record.id
            )));
        }
        None => {
            let waiting: Vec<&String> =
                states.iter().filter(|(_, s)| s["state"] == "awaiting_approval").map(|(k, _)| k).collect();
            return Err(CliError::user_hint(
                format!("run {} has no gate `{gate}` waiting for approval", record.id),
                if waiting.is_empty() {
                    "`runbook status` shows the run's steps".to_string()
                } else {
                    format!("waiting: {}", waiting.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "))
                },
            ));
        }
    }
    let approval = runbook_steps::Approval {
        by: crate::who::user(),
        persona: std::env::var("RUNBOOK_PERSONA").ok(),
        at: crate::who::now(),
        comment,
    };
    let approved = GateApproved {
        by: approval.by.clone(),
        persona: approval.persona.clone(),
        at: approval.at.clone(),
        comment: approval.comment.clone(),
    };
    journal.append(&[NewEvent::new(record.id.clone(), EventData::GateApproved(approved)).with_step(gate, None)])?;
    env.print(
        &format!("approved {gate} of run {}; continue with `runbook resume {}`\n", record.id, record.id),
        json!({ "run": record.id, "gate": gate, "approval": approval }),
    );
    Ok(Exit::Ok)
}
