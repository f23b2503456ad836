//! Fix commands: the step that made an object, run again from the run that made it, in the
//! journal that holds that run; and the run a symptom stopped, resumed once the cause is fixed.

use crate::diagnose::Scene;

/// A step instance's step id (`federated_credential` of `federated_credential[disk]`).
pub fn step_of(instance: &str) -> &str {
    instance.split('[').next().unwrap_or(instance)
}

/// `runbook --journal J resume RUN --rerun STEP` for each distinct (run, step) of `steps`.
pub fn rerun(scene: &Scene, steps: &[(String, String)]) -> Vec<String> {
    let mut commands: Vec<String> = Vec::new();
    for (run, step) in steps {
        let Some(view) = scene.run(run) else { continue };
        let command = format!("runbook --journal {} resume {} --rerun '{}'", view.journal.display(), view.id, step);
        if !commands.contains(&command) {
            commands.push(command);
        }
    }
    commands
}

/// The runs that stopped on a failure and were not finished later, resumed: what continues the
/// procedure once the cause is gone.
pub fn resume_stopped(scene: &Scene) -> Vec<String> {
    scene
        .runs
        .iter()
        .filter(|r| r.status.as_deref() == Some("failed"))
        .filter(|r| {
            !scene.runs.iter().any(|later| {
                later.runbook == r.runbook && later.id > r.id && later.status.as_deref() == Some("succeeded")
            })
        })
        .map(|r| format!("runbook --journal {} resume {}", r.journal.display(), r.id))
        .collect()
}
