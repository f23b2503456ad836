//! A persona signs off a manual gate; the next `resume` passes it.

use runbook_journal::{EventData, GateApproved, GateWaiting, NewEvent};
use serde_json::json;

use crate::cli::Env;
use crate::cli::exit::{CliError, CliResult, Exit};
use crate::cli::inspect::{pick_run, step_states};

/// How the name a destructive gate asks for is given.
pub enum Confirmation {
    /// By the operator: `--confirm NAME`, or typed at the prompt when there is a terminal.
    Given(Option<String>),
    /// By a rehearsal, which plays the persona and types what is asked.
    #[cfg(feature = "sandbox")]
    AsAsked,
}

/// The latest waiting of `gate` in run `run_id` (the plan it names, the name it asks for, how
/// many approvers), and who has approved that plan since it began waiting.
fn latest_waiting(
    journal: &runbook_journal::Journal,
    run_id: &str,
    gate: &str,
) -> CliResult<(GateWaiting, Vec<String>)> {
    let mut latest = GateWaiting::default();
    let mut approvers: Vec<String> = Vec::new();
    for event in journal.events_for_run(run_id)? {
        match (event.data, event.step.as_deref()) {
            (EventData::GateWaiting(waiting), Some(step)) if step == gate => {
                // A resume that waits again in the same plan keeps the approvals given.
                if waiting.plan != latest.plan {
                    approvers.clear();
                }
                latest = waiting;
            }
            (EventData::GateApproved(approved), Some(step))
                if step == gate && approved.plan == latest.plan && !approvers.contains(&approved.by) =>
            {
                approvers.push(approved.by);
            }
            _ => {}
        }
    }
    Ok((latest, approvers))
}

/// A gate that asks for several people or for someone other than the run's starter says so
/// before anything is journaled.
fn check_approver(gate: &str, waiting: &GateWaiting, approvers: &[String], user: &str) -> CliResult<()> {
    if waiting.not_by.as_deref() == Some(user) {
        return Err(CliError::user_hint(
            format!("gate `{gate}` is approved by someone other than the person who started the run ({user})"),
            "ask a colleague with access to this journal to run `runbook approve`",
        ));
    }
    if approvers.iter().any(|a| a == user) {
        let needed = waiting.approvals.unwrap_or(1);
        return Err(CliError::user_hint(
            format!(
                "{user} has already approved gate `{gate}`; it asks for {needed} different people, and {} of them have approved",
                approvers.len()
            ),
            "ask another approver to run `runbook approve`",
        ));
    }
    Ok(())
}

/// The operator confirms by the name the gate asks for, as delete dialogs do: given with
/// `--confirm`, or typed when there is a terminal. Anything else refuses, changing nothing.
fn confirm(asked: &str, gate: &str, how: Confirmation) -> CliResult<()> {
    let given = match how {
        #[cfg(feature = "sandbox")]
        Confirmation::AsAsked => return Ok(()),
        Confirmation::Given(Some(given)) => given,
        Confirmation::Given(None) if std::io::IsTerminal::is_terminal(&std::io::stdin()) => {
            eprint!("gate `{gate}` deletes what it names: type `{asked}` to approve: ");
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map_err(|e| CliError::Internal(e.into()))?;
            line.trim().to_string()
        }
        Confirmation::Given(None) => {
            return Err(CliError::user_hint(
                format!(
                    "gate `{gate}` is approved only by typing the name `{asked}`, and there is no terminal to type it"
                ),
                format!("give it with `--confirm {asked}`"),
            ));
        }
    };
    if given == asked {
        return Ok(());
    }
    Err(CliError::user_hint(
        format!("gate `{gate}` asks for the name `{asked}`, and `{given}` was given: not approved"),
        "check which cluster the run acts on (`runbook status`) and give its name",
    ))
}

pub fn approve(env: &Env, run: &str, gate: &str, comment: Option<String>, how: Confirmation) -> CliResult {
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
    let (waiting, approvers) = latest_waiting(&journal, &record.id, gate)?;
    let user = crate::who::user();
    check_approver(gate, &waiting, &approvers, &user)?;
    if let Some(asked) = &waiting.confirm {
        confirm(asked, gate, how)?;
    }
    let approval = runbook_steps::Approval {
        by: user,
        persona: std::env::var("RUNBOOK_PERSONA").ok(),
        at: crate::who::now(),
        comment,
    };
    // The plan approved is the one the gate was waiting in: a resume that plans otherwise asks again.
    let approved = GateApproved {
        by: approval.by.clone(),
        persona: approval.persona.clone(),
        at: approval.at.clone(),
        comment: approval.comment.clone(),
        plan: waiting.plan,
    };
    journal.append(&[NewEvent::new(record.id.clone(), EventData::GateApproved(approved)).with_step(gate, None)])?;
    let needed = waiting.approvals.unwrap_or(1) as usize;
    let given = approvers.len() + 1;
    let text = if given < needed {
        format!(
            "approved {gate} of run {} ({given} of {needed} approvers); it waits for {} more\n",
            record.id,
            needed - given
        )
    } else {
        format!("approved {gate} of run {}; continue with `runbook resume {}`\n", record.id, record.id)
    };
    env.print(
        &text,
        json!({ "run": record.id, "gate": gate, "approval": approval, "approvers": given, "needed": needed }),
    );
    Ok(Exit::Ok)
}
