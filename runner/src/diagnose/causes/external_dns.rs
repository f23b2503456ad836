//! "DNS Resolution Issues" with External DNS: external-dns cannot sign in to Azure with its
//! credentials, so it crash-loops and writes no record. The pod's state and its Events carry
//! Entra's answer (AADSTS7000215: a wrong client secret; 7000222: an expired one).

use serde_json::Value;

use super::DNS;
use super::fix;
use crate::diagnose::scene::{OPERATOR_NAMESPACE, is_true};
use crate::diagnose::{Cause, Diagnosis, Evidence, Fix, Scene, aadsts};

const DEPLOYMENT: &str = "external-dns";
/// The client secret is not one the application has (wrong, or copied from another).
const INVALID_SECRET: u32 = 7000215;
/// The client secret has expired.
const EXPIRED_SECRET: u32 = 7000222;

fn is_external_dns(pod: &Value) -> bool {
    pod["metadata"]["namespace"] == OPERATOR_NAMESPACE
        && pod["metadata"]["name"].as_str().is_some_and(|n| n.starts_with(&format!("{DEPLOYMENT}-")))
}

pub(super) fn waiting_reason(pod: &Value) -> Option<&str> {
    pod["status"]["containerStatuses"].as_array()?.iter().find_map(|s| s["state"]["waiting"]["reason"].as_str())
}

pub fn find(scene: &Scene, diagnosis: &mut Diagnosis) {
    let pods: Vec<&Value> = scene.pods.iter().filter(|p| is_external_dns(p)).collect();
    for pod in &pods {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        if is_true(pod, "Ready") {
            diagnosis.healthy.push(format!("external-dns pod {OPERATOR_NAMESPACE}/{name} is Ready"));
            continue;
        }
        let refusal = scene
            .warnings_about("Pod", OPERATOR_NAMESPACE, name)
            .filter_map(|e| e["message"].as_str().map(|m| (m, aadsts::parse(m))))
            .filter_map(|(m, f)| f.map(|f| (m.to_string(), f)))
            .last();
        let mut evidence = vec![Evidence::new(
            format!("Pod {OPERATOR_NAMESPACE}/{name}"),
            "status.containerStatuses[0].state.waiting.reason",
            waiting_reason(pod).map(Value::from).unwrap_or(Value::Null),
        )];
        let Some((message, failure)) = refusal else {
            diagnosis.symptoms.push(crate::diagnose::Symptom {
                object: format!("Pod {OPERATOR_NAMESPACE}/{name}"),
                what: format!("not Ready ({})", waiting_reason(pod).unwrap_or("no reason given")),
            });
            continue;
        };
        evidence.push(Evidence::new(format!("Pod {OPERATOR_NAMESPACE}/{name}"), "events (Warning)", message));
        if failure.code == Some(EXPIRED_SECRET) {
            diagnosis.causes.push(super::external_dns_expired::cause(scene, pod, &failure, evidence));
            continue;
        }
        let (title, text) = match failure.code {
            Some(INVALID_SECRET) => (
                "External DNS's credentials hold a client secret Entra does not know, so it cannot sign in and writes no DNS record",
                "install External DNS's credentials again from the file Phase 1 wrote",
            ),
            _ => (
                "External DNS cannot sign in to Azure, so it writes no DNS record",
                "correct External DNS's credentials (tenant, client id, secret) and install them again",
            ),
        };
        // The step that ran `hypershift install --external-dns-provider=…`, which writes the
        // credentials secret from the file it is given.
        let steps: Vec<(String, String)> = scene
            .programs
            .iter()
            .filter(|p| {
                p.argv.iter().any(|w| w == "install") && p.argv.iter().any(|w| w.starts_with("--external-dns-provider"))
            })
            .map(|p| (p.run.clone(), fix::step_of(&p.step).to_string()))
            .collect();
        let mut commands = fix::rerun(scene, &steps);
        if commands.is_empty() {
            // No run of these journals installed it: the person who did installs it again.
            commands.push(format!("kubectl -n {OPERATOR_NAMESPACE} get deployment/{DEPLOYMENT} -o yaml  # then `hypershift install` again with correct --external-dns-credentials"));
        }
        diagnosis.causes.push(Cause {
            id: "external-dns-credentials-refused",
            title: title.into(),
            troubleshooting: DNS,
            evidence,
            fix: Fix {
                text: format!("{text}; external-dns signs in again by itself and writes the records"),
                commands,
            },
        });
    }
}
