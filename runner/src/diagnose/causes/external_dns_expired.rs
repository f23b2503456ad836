//! "DNS Resolution Issues" because External DNS's client secret has expired (AADSTS7000222):
//! the application's password credential is past its `endDateTime`. Installing the same
//! credentials again cannot help; the application needs a new secret, and the management
//! cluster the credentials file holding it. The fix runs Phase 1's step that minted the secret
//! again (it rewrites azure_mgmt.json from the new one), then replaces external-dns's
//! credentials secret from that file; when Phase 2 ran from a hand-off, it says how the new
//! file reaches that journal (a newer hand-off replaces the one imported).

use serde_json::Value;

use super::DNS;
use super::fix;
use crate::diagnose::aadsts::SignInFailure;
use crate::diagnose::scene::{OPERATOR_NAMESPACE, StepMade};
use crate::diagnose::{Cause, Evidence, Fix, Scene};

/// The secret `hypershift install --external-dns-credentials` writes, when the pod does not name
/// its own, and the key holding the file.
const DEFAULT_SECRET: &str = "external-dns-credentials";
const SECRET_KEY: &str = "credentials";

/// The secret external-dns's pod mounts its credentials from.
fn mounted_secret(pod: &Value) -> String {
    pod["spec"]["volumes"]
        .as_array()
        .and_then(|vs| vs.iter().find_map(|v| v["secret"]["secretName"].as_str().map(str::to_string)))
        .unwrap_or_else(|| DEFAULT_SECRET.to_string())
}

/// The step that minted a client secret on the application with this object id: its inputs say
/// so, whichever kind it is.
fn password_step<'a>(scene: &'a Scene, object_id: &str) -> Option<&'a StepMade> {
    scene
        .steps
        .iter()
        .rev()
        .find(|s| s.inputs["action"] == "password" && s.inputs["object_id"].as_str() == Some(object_id))
}

/// The file a step wrote from values naming the application with this client id
/// (azure_mgmt.json names it as `aadClientId`), in the run that minted its secret.
fn credentials_file<'a>(scene: &'a Scene, run: &str, app_id: &str) -> Option<&'a StepMade> {
    scene.steps.iter().rev().find(|s| {
        s.run == run
            && s.path.is_some()
            && s.inputs["values"]["aadClientId"].as_str().is_some_and(|id| id.eq_ignore_ascii_case(app_id))
    })
}

/// When Phase 2 ran from a hand-off (in another journal than the run that minted the secret),
/// how the new secret reaches that journal: until it does, Phase 2's copy of azure_mgmt.json
/// (and default/azure-config-file made from it) holds the expired one, and running Phase 2 again
/// from it would bring that back.
fn handed_on(scene: &Scene, minted_in: &std::path::Path) -> String {
    let Some(phase2) = scene.runs.iter().rev().find(|r| r.runbook == PHASE2 && r.journal != minted_in) else {
        return String::new();
    };
    format!(
        " Then hand the new file on, or Phase 2's copy (and default/azure-config-file) keeps the expired secret: export Phase 1 again (`runbook --journal {} export phase1-workload-identity --to THEIR_KEY.pub -o phase1.handoff --sign-with YOUR_KEY`); in the HyperShift administrator's journal, `runbook --journal {} import phase1.handoff --trust EXPORTER_KEY.pub --identity YOUR_KEY` (a newer hand-off from the same signer and journal replaces the one imported before) and `runbook --journal {} run phase2-management-cluster --var external_dns=true`, which runs again the steps that read azure_mgmt.json",
        minted_in.display(),
        phase2.journal.display(),
        phase2.journal.display()
    )
}

/// The runbook whose run read azure_mgmt.json from the hand-off.
const PHASE2: &str = "phase2-management-cluster";

pub fn cause(scene: &Scene, pod: &Value, failure: &SignInFailure, mut evidence: Vec<Evidence>) -> Cause {
    let app_id = failure.client_id.clone().unwrap_or_default();
    let app = scene
        .applications
        .iter()
        .find(|a| a["appId"].as_str().is_some_and(|id| !app_id.is_empty() && id.eq_ignore_ascii_case(&app_id)));
    let app_name = app
        .and_then(|a| a["displayName"].as_str())
        .map(|n| format!("{n} ({app_id})"))
        .unwrap_or_else(|| app_id.clone());
    if let Some(app) = app {
        for credential in app["passwordCredentials"].as_array().into_iter().flatten() {
            let key_id = credential["keyId"].as_str().unwrap_or_default();
            evidence.push(
                Evidence::new(
                    format!("Application {app_name}, client secret {key_id}"),
                    "passwordCredentials.endDateTime",
                    credential["endDateTime"].clone(),
                )
                .expecting(format!("later than now ({})", crate::who::now())),
            );
        }
    }

    let mut commands = Vec::new();
    let object_id = app.and_then(|a| a["id"].as_str()).unwrap_or_default();
    let minted = password_step(scene, object_id);
    if let Some(minted) = minted {
        commands.extend(fix::rerun(scene, &[(minted.run.clone(), fix::step_of(&minted.step).to_string())]));
    }
    let file = minted.and_then(|m| credentials_file(scene, &m.run, &app_id)).and_then(|s| s.path.clone());
    let secret = mounted_secret(pod);
    let text = match (&file, commands.is_empty()) {
        (Some(file), false) => {
            commands.push(format!("kubectl delete secret {secret} --namespace {OPERATOR_NAMESPACE}"));
            commands.push(format!(
                "kubectl create secret generic {secret} --namespace {OPERATOR_NAMESPACE} --from-file={SECRET_KEY}={file}"
            ));
            let minted_in = minted.and_then(|m| scene.run(&m.run)).map(|r| r.journal.clone());
            format!(
                "issue a new client secret for the External DNS application (Phase 1's step again, which also rewrites {file}), then replace the secret {OPERATOR_NAMESPACE}/{secret} from that file; external-dns signs in again by itself and writes the records.{}",
                minted_in.map(|journal| handed_on(scene, &journal)).unwrap_or_default()
            )
        }
        _ => {
            // No run of these journals minted it: the person who did issues the new secret.
            commands.push(format!("az ad app credential reset --id {app_id} --append"));
            format!(
                "issue a new client secret for the External DNS application, write it as aadClientSecret into the credentials file, and replace the secret {OPERATOR_NAMESPACE}/{secret} from that file (key {SECRET_KEY})"
            )
        }
    };
    Cause {
        id: "external-dns-secret-expired",
        title: format!(
            "External DNS's client secret for application {app_name} has expired (AADSTS7000222), so it cannot sign in and writes no DNS record"
        ),
        troubleshooting: DNS,
        evidence,
        fix: Fix { text, commands },
    }
}
