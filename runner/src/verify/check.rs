//! Reads back every expected object with the reader of its kind and says how it stands, then
//! looks for extras where a listing can show them.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use runbook_steps::{ArmReader, GraphReader, KubeReader, SettingsSource, StepError};
use tokio::sync::OnceCell;

use super::expected::{Check, Expected, Ledger, kube_key};
use super::{DriftKind, arm, graph, issuer, kube};

/// What could not be read: the error's code and message.
pub type ReadError = (Option<String>, String);

fn read_error(error: StepError) -> ReadError {
    (error.code.clone(), error.message.clone())
}

/// One reader per service, made on first use: a check of Kubernetes objects alone needs no
/// Azure sign-in, and the other way round.
pub struct Readers {
    settings: SettingsSource,
    work_dir: PathBuf,
    arm: OnceCell<Result<ArmReader, ReadError>>,
    graph: OnceCell<Result<GraphReader, ReadError>>,
    kube: OnceCell<Result<KubeReader, ReadError>>,
}

impl Readers {
    pub fn new(settings: SettingsSource, work_dir: PathBuf) -> Readers {
        Readers { settings, work_dir, arm: OnceCell::new(), graph: OnceCell::new(), kube: OnceCell::new() }
    }

    pub(crate) async fn arm(&self) -> Result<&ArmReader, ReadError> {
        let made = self
            .arm
            .get_or_init(|| async { self.settings.load().and_then(|s| ArmReader::new(&s)).map_err(read_error) })
            .await;
        made.as_ref().map_err(Clone::clone)
    }

    pub(crate) async fn graph(&self) -> Result<&GraphReader, ReadError> {
        let made = self
            .graph
            .get_or_init(|| async { self.settings.load().and_then(|s| GraphReader::new(&s)).map_err(read_error) })
            .await;
        made.as_ref().map_err(Clone::clone)
    }

    pub(crate) async fn kube(&self) -> Result<&KubeReader, ReadError> {
        let made = self
            .kube
            .get_or_init(|| async { KubeReader::connect(&self.settings, &self.work_dir).await.map_err(read_error) })
            .await;
        made.as_ref().map_err(Clone::clone)
    }

    /// The CA file the Azure settings trust (the sandbox's), for reading issuer documents.
    pub(crate) fn ca_file(&self) -> Option<PathBuf> {
        self.settings.var("RUNBOOK_CA_FILE").filter(|v| !v.is_empty()).map(PathBuf::from)
    }
}

/// How one object stands.
#[derive(Debug)]
pub enum Outcome {
    AsJournaled,
    Drifted(DriftKind),
    Unreadable(ReadError),
}

#[derive(Debug)]
pub struct Finding {
    /// The run to report it under: the latest checked run that made or recorded it.
    pub run: String,
    pub step: String,
    pub object: String,
    pub outcome: Outcome,
}

async fn check_one(readers: &Readers, ledger: &Ledger, expected: &Expected) -> Result<Option<DriftKind>, ReadError> {
    match &expected.check {
        Check::Arm { id, api_version, desired, compare, recorded } => {
            let reader = readers.arm().await?;
            let mut found = arm::check_resource(reader, id, api_version, desired, compare.as_deref(), recorded)
                .await
                .map_err(read_error)?;
            // A delegation also answers to the delegated zone's name servers as they are now.
            let zone = arm::delegated_zone(id).and_then(|pattern| {
                ledger.objects().iter().find(|o| arm::is_zone(&pattern, &o.key)).map(|o| o.object.clone())
            });
            if let (Some(zone_id), None | Some(DriftKind::Changed { .. })) = (zone, &found)
                && let Some(change) = arm::check_delegation(reader, id, &zone_id).await.map_err(read_error)?
            {
                match &mut found {
                    Some(DriftKind::Changed { fields }) => fields.push(change),
                    _ => found = Some(DriftKind::Changed { fields: vec![change] }),
                }
            }
            Ok(found)
        }
        Check::RoleAssignment { id, role, scope, principal } => {
            arm::check_role_assignment(readers.arm().await?, id, role, scope, principal).await.map_err(read_error)
        }
        Check::Application { object_id, app_id, display_name, password_key_ids } => {
            graph::check_application(readers.graph().await?, object_id, app_id, display_name, password_key_ids)
                .await
                .map_err(read_error)
        }
        Check::ServicePrincipal { object_id, app_id } => {
            graph::check_service_principal(readers.graph().await?, object_id, app_id).await.map_err(read_error)
        }
        Check::Issuer { issuer_url, kid, ca_files } => {
            let mut trusted = ca_files.clone();
            trusted.extend(readers.ca_file());
            let client = issuer::client(&trusted).map_err(read_error)?;
            issuer::check_issuer(&client, issuer_url, kid).await.map_err(read_error)
        }
        Check::Kube { api_version, kind, namespace, name, fields, conditions } => {
            let target = (api_version.as_str(), kind.as_str(), namespace.as_deref(), name.as_str());
            kube::check_object(readers.kube().await?, target, fields, conditions).await.map_err(read_error)
        }
    }
}

/// The objects that runs in `runs` made or recorded something about, each read back, and the
/// extras found beside them.
pub async fn check_all(readers: &Readers, ledger: &Ledger, runs: &BTreeSet<String>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let known: HashSet<&str> = ledger.objects().iter().map(|o| o.key.as_str()).collect();
    for expected in ledger.objects() {
        let Some(run) = expected.runs.iter().rev().find(|r| runs.contains(*r)) else { continue };
        let outcome = match check_one(readers, ledger, expected).await {
            Ok(None) => Outcome::AsJournaled,
            Ok(Some(drift)) => Outcome::Drifted(drift),
            Err(error) => Outcome::Unreadable(error),
        };
        let present = !matches!(outcome, Outcome::Drifted(DriftKind::Missing) | Outcome::Unreadable(_));
        findings.push(Finding {
            run: run.clone(),
            step: expected.step.clone(),
            object: expected.object.clone(),
            outcome,
        });
        if present {
            findings.extend(extras(readers, expected, run, &known).await);
        }
    }
    findings
}

/// Objects beside `expected` that no run made, where a listing shows them: federated
/// credentials on an identity, NodePools of a HostedCluster.
async fn extras(readers: &Readers, expected: &Expected, run: &str, known: &HashSet<&str>) -> Vec<Finding> {
    let finding = |object: String, outcome: Outcome| Finding {
        run: run.to_string(),
        step: expected.step.clone(),
        object,
        outcome,
    };
    let listed: Result<Vec<(String, String)>, ReadError> = match &expected.check {
        Check::Arm { id, .. } if arm::is_identity(&expected.key) => match readers.arm().await {
            Ok(reader) => arm::federated_credentials(reader, id)
                .await
                .map(|ids| ids.into_iter().map(|id| (id.to_ascii_lowercase(), id)).collect())
                .map_err(read_error),
            Err(error) => Err(error),
        },
        Check::Kube { api_version, kind, namespace: Some(namespace), name, .. } if kind == "HostedCluster" => {
            match readers.kube().await {
                Ok(reader) => kube::node_pools_of(reader, api_version, namespace, name)
                    .await
                    .map(|pools| {
                        pools
                            .into_iter()
                            .map(|pool| {
                                (kube_key("NodePool", Some(namespace), &pool), format!("NodePool {namespace}/{pool}"))
                            })
                            .collect()
                    })
                    .map_err(read_error),
                Err(error) => Err(error),
            }
        }
        _ => return Vec::new(),
    };
    match listed {
        Ok(items) => items
            .into_iter()
            .filter(|(key, _)| !known.contains(key.as_str()))
            .map(|(_, object)| finding(object, Outcome::Drifted(DriftKind::Extra)))
            .collect(),
        Err(error) => vec![finding(format!("what lies beside {}", expected.object), Outcome::Unreadable(error))],
    }
}
