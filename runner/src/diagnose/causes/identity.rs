//! "Cluster Creation Fails with Authentication Errors": a component of the hosted cluster
//! cannot exchange its service-account token for an Azure token. The HostedCluster's conditions
//! carry Entra's answer (the AADSTS code, the client id, the subject); the evidence is the
//! identity's federated credentials as they are now against the issuer the cluster really uses
//! (`spec.issuerURL`) and the subject its component presents, and the issuer's discovery document
//! as Entra fetches it (anonymously).

use serde_json::Value;

use super::AUTHENTICATION;
use super::fix;
use crate::diagnose::aadsts::{self, SignInFailure};
use crate::diagnose::scene::{Identity, qualified_name};
use crate::diagnose::{Cause, Diagnosis, Evidence, Fix, Scene};

/// AADSTS codes of a federated exchange Entra refused for the credentials it holds.
const ISSUER_MISMATCH: u32 = 700211;
const SUBJECT_MISMATCH: u32 = 700213;
const NO_RECORD: u32 = 70021;
const AUDIENCE_MISMATCH: u32 = 700212;
/// Entra could not read the issuer's discovery document or JWKS.
const ISSUER_UNREADABLE: u32 = 90061;

/// How many wrong credentials a cause shows as evidence (its title counts them all).
const SHOWN: usize = 3;

/// A HostedCluster condition that reports a failed sign-in.
struct Report<'a> {
    cluster: String,
    condition: &'a Value,
    failure: SignInFailure,
}

impl Report<'_> {
    fn evidence(&self) -> Evidence {
        Evidence::new(
            format!("HostedCluster {}", self.cluster),
            format!("status.conditions[{}]", self.condition["type"].as_str().unwrap_or("?")),
            self.condition["message"].clone(),
        )
    }
}

/// Finds the causes; adds the clusters it explained to `explained` (`HostedCluster NS/NAME`).
pub fn find(scene: &Scene, diagnosis: &mut Diagnosis, explained: &mut Vec<String>) {
    for cluster in &scene.clusters {
        let issuer = cluster["spec"]["issuerURL"].as_str().unwrap_or_default();
        let conditions = cluster["status"]["conditions"].as_array().cloned().unwrap_or_default();
        let mut seen: Vec<SignInFailure> = Vec::new();
        for condition in conditions.iter().filter(|c| c["status"] != "True" || c["type"] == "Degraded") {
            let Some(failure) = condition["message"].as_str().and_then(aadsts::parse) else { continue };
            if seen.contains(&failure) {
                continue;
            }
            seen.push(failure.clone());
            let report = Report { cluster: qualified_name(cluster), condition, failure };
            if let Some(cause) = explain(scene, &report, issuer) {
                explained.push(format!("HostedCluster {}", report.cluster));
                if !diagnosis.causes.iter().any(|c| c.id == cause.id && c.title == cause.title) {
                    diagnosis.causes.push(cause);
                }
            }
        }
    }
    if scene.azure_read {
        let credentials: usize = scene.identities.iter().map(|i| i.credentials.len()).sum();
        if credentials > 0 && diagnosis.causes.iter().all(|c| !c.id.starts_with("federated-credential")) {
            diagnosis.healthy.push(format!(
                "{} identities' {credentials} federated credentials: none contradicts what a cluster reported",
                scene.identities.len()
            ));
        }
    }
    for issuer in &scene.issuers {
        if issuer.discovery.is_ok() {
            diagnosis.healthy.push(format!("the issuer {}: its discovery document reads anonymously", issuer.url));
        }
    }
}

fn explain(scene: &Scene, report: &Report, issuer: &str) -> Option<Cause> {
    let code = report.failure.code?;
    match code {
        ISSUER_UNREADABLE => unreadable_issuer(scene, report, issuer),
        ISSUER_MISMATCH | SUBJECT_MISMATCH | NO_RECORD | AUDIENCE_MISMATCH => credentials(scene, report, issuer),
        _ => None,
    }
}

fn identity_of<'a>(scene: &'a Scene, report: &Report) -> Option<&'a Identity> {
    let client = report.failure.client_id.as_deref()?;
    scene.identities.iter().find(|i| i.client_id.as_deref() == Some(client))
}

fn field<'a>(credential: &'a Value, name: &str) -> &'a str {
    credential["properties"][name].as_str().unwrap_or_default()
}

/// The steps that made these credentials, to run again.
fn makers(scene: &Scene, credentials: &[&Value], all_instances: bool) -> Vec<(String, String)> {
    credentials
        .iter()
        .filter_map(|c| c["id"].as_str())
        .filter_map(|id| scene.maker_of(id))
        .map(|m| {
            let step = if all_instances { fix::step_of(&m.step).to_string() } else { m.step.clone() };
            (m.run.clone(), step)
        })
        .collect()
}

fn rerun_fix(scene: &Scene, text: &str, steps: &[(String, String)]) -> Fix {
    let mut commands = fix::rerun(scene, steps);
    let known = !commands.is_empty();
    commands.extend(fix::resume_stopped(scene));
    let text = if known {
        format!("{text}; HyperShift retries the sign-in by itself, then the stopped run can go on")
    } else {
        format!("{text} (no run in these journals made it: correct it where it was made)")
    };
    Fix { text, commands }
}

fn credentials(scene: &Scene, report: &Report, issuer: &str) -> Option<Cause> {
    let identity = identity_of(scene, report)?;
    let name = identity.id.rsplit('/').next().unwrap_or_default();
    let all: Vec<&Value> = identity.credentials.iter().collect();
    let same_issuer: Vec<&Value> = all.iter().copied().filter(|c| field(c, "issuer") == issuer).collect();
    let mut evidence = vec![report.evidence()];
    if same_issuer.is_empty() && !all.is_empty() {
        let trailing_slash =
            all.iter().any(|c| field(c, "issuer").trim_end_matches('/') == issuer.trim_end_matches('/'));
        // Every identity's credentials that name the issuer the same wrong way: the same mistake
        // is usually made everywhere the value was used.
        let everywhere: Vec<&Value> = scene
            .identities
            .iter()
            .flat_map(|i| &i.credentials)
            .filter(|c| field(c, "issuer") != issuer)
            .filter(|c| !trailing_slash || field(c, "issuer").trim_end_matches('/') == issuer.trim_end_matches('/'))
            .collect();
        let (id, title) = if trailing_slash {
            (
                "federated-credential-issuer-trailing-slash",
                format!(
                    "{} federated credentials (identity {name} among them) name the issuer with a different trailing slash than the cluster's tokens (issuers are compared exactly)",
                    everywhere.len()
                ),
            )
        } else {
            (
                "federated-credential-issuer",
                format!(
                    "{} federated credentials (identity {name} among them) trust another issuer than the cluster's",
                    everywhere.len()
                ),
            )
        };
        // The failing identity's credentials first, then the others, a few of them shown.
        let (mine, others): (Vec<&Value>, Vec<&Value>) = everywhere.iter().partition(|c| all.contains(c));
        let shown: Vec<&Value> = mine.into_iter().chain(others).collect();
        for credential in shown.iter().take(SHOWN) {
            evidence.push(
                Evidence::new(
                    credential["id"].as_str().unwrap_or_default(),
                    "properties.issuer",
                    field(credential, "issuer"),
                )
                .expecting(issuer),
            );
        }
        let steps = makers(scene, &everywhere, true);
        return Some(Cause {
            id,
            title,
            troubleshooting: AUTHENTICATION,
            evidence,
            fix: rerun_fix(scene, "write the credentials again with the cluster's issuer exactly", &steps),
        });
    }
    let subject = report.failure.subject.as_deref()?;
    if same_issuer.iter().any(|c| field(c, "subject") == subject) {
        return None;
    }
    let cased: Vec<&Value> =
        same_issuer.iter().copied().filter(|c| field(c, "subject").eq_ignore_ascii_case(subject)).collect();
    if let Some(credential) = cased.first() {
        evidence.push(
            Evidence::new(
                credential["id"].as_str().unwrap_or_default(),
                "properties.subject",
                field(credential, "subject"),
            )
            .expecting(subject),
        );
        let steps = makers(scene, &cased, false);
        return Some(Cause {
            id: "federated-credential-subject-case",
            title: format!(
                "a federated credential of identity {name} names the service account in another case than the cluster's (subjects are case-sensitive)"
            ),
            troubleshooting: AUTHENTICATION,
            evidence,
            fix: rerun_fix(scene, "write the credential again with the service account's exact name", &steps),
        });
    }
    evidence.push(
        Evidence::new(
            identity.id.clone(),
            "federated credentials (subjects)",
            Value::from(same_issuer.iter().map(|c| Value::from(field(c, "subject"))).collect::<Vec<_>>()),
        )
        .expecting(subject),
    );
    let steps = makers(scene, &all, true);
    Some(Cause {
        id: "federated-credential-missing",
        title: format!("identity {name} has no federated credential for the service account {subject}"),
        troubleshooting: AUTHENTICATION,
        evidence,
        fix: rerun_fix(scene, "create the missing credential (the runbook's federated credentials step)", &steps),
    })
}

fn unreadable_issuer(scene: &Scene, report: &Report, issuer: &str) -> Option<Cause> {
    let read = scene.issuers.iter().find(|i| i.url.trim_end_matches('/') == issuer.trim_end_matches('/'))?;
    let Err(answer) = &read.discovery else { return None };
    let mut evidence = vec![
        report.evidence(),
        Evidence::new(
            format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/')),
            "anonymous GET",
            answer.clone(),
        ),
    ];
    let private: Vec<_> = scene
        .containers
        .iter()
        .filter(|c| c.body["properties"]["publicAccess"].as_str().is_none_or(|a| a.eq_ignore_ascii_case("none")))
        .collect();
    if let Some(container) = private.first() {
        evidence.push(
            Evidence::new(
                container.id.clone(),
                "properties.publicAccess",
                container.body["properties"]["publicAccess"].clone(),
            )
            .expecting("Blob"),
        );
        let steps: Vec<(String, String)> =
            scene.maker_of(&container.id).map(|m| (m.run.clone(), m.step.clone())).into_iter().collect();
        return Some(Cause {
            id: "oidc-container-private",
            title: "the OIDC issuer's storage container is not public, so Entra cannot read the discovery document"
                .into(),
            troubleshooting: AUTHENTICATION,
            evidence,
            fix: rerun_fix(scene, "make the container's blobs public again (anonymous read)", &steps),
        });
    }
    let steps: Vec<(String, String)> = scene
        .makers
        .iter()
        .filter(|m| m.key.starts_with("issuer:"))
        .map(|m| (m.run.clone(), fix::step_of(&m.step).to_string()))
        .collect();
    Some(Cause {
        id: "oidc-issuer-unreadable",
        title: "Entra cannot read the OIDC issuer's discovery document".into(),
        troubleshooting: AUTHENTICATION,
        evidence,
        fix: rerun_fix(scene, "publish the issuer's documents again", &steps),
    })
}
