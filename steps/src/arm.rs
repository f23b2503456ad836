use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::azure::client::ArmClient;
use crate::azure::ensure::{Desired, ensure};
use crate::azure::role_assignment::{self, RoleAssignment};
use crate::azure::session::ArmSession;
use crate::azure::settings::SettingsSource;
use crate::azure::{AzureSettings, actions, resource_id, wait_gone};
use crate::kind::{KindNeed, MadeObjects};
use crate::kind::{parse_inputs, required, schema_of};
use crate::{OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome};

/// Azure Resource Manager REST: ensure a resource exists (GET, then PUT only when missing), read,
/// delete, POST an action such as listKeys, grant a role, or wait until a collection holds none
/// of some resources. Where ARM is and who signs in come
/// from the environment when the step runs (see `azure::settings`), not from the runbook.
pub struct Arm {
    env: SettingsSource,
    /// Built on first use and shared by later steps, so the token is fetched once per run.
    client: tokio::sync::OnceCell<Arc<ArmClient>>,
}

impl Default for Arm {
    fn default() -> Self {
        Arm { env: SettingsSource::Process, client: tokio::sync::OnceCell::new() }
    }
}

impl Arm {
    /// An `arm` kind that reads its settings from `vars` instead of the process environment
    /// (tests, or an embedding program that configures Azure itself).
    pub fn with_env<K: Into<String>, V: Into<String>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        Arm { env: SettingsSource::fixed(vars), client: tokio::sync::OnceCell::new() }
    }

    fn settings(&self) -> Result<AzureSettings, StepError> {
        self.env.load()
    }

    async fn client(&self) -> Result<Arc<ArmClient>, StepError> {
        self.client
            .get_or_try_init(|| async { self.settings().and_then(|s| ArmClient::new(&s)).map(Arc::new) })
            .await
            .cloned()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArmAction {
    /// GET, then PUT `body` only when the resource is missing (or differs and replace_if_different).
    Ensure,
    Get,
    /// DELETE and wait until it is gone.
    Delete,
    /// POST an action, e.g. listKeys or listAccountSas; the response is secret unless `secret = false`.
    Post,
    /// A role assignment with a deterministic name (UUIDv5 of scope, role and principal).
    AssignRole,
    /// Poll the collection `id` (e.g. RG/providers/Microsoft.Compute/virtualMachines) until none
    /// of its items carries every pair of `tags`; fails with code ResourcesRemain after `timeout`.
    WaitGone,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub enum PrincipalType {
    #[default]
    ServicePrincipal,
    User,
    Group,
    ForeignGroup,
    Device,
}

impl PrincipalType {
    fn as_str(self) -> &'static str {
        match self {
            PrincipalType::ServicePrincipal => "ServicePrincipal",
            PrincipalType::User => "User",
            PrincipalType::Group => "Group",
            PrincipalType::ForeignGroup => "ForeignGroup",
            PrincipalType::Device => "Device",
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArmInputs {
    pub action: ArmAction,
    /// The resource path, e.g. /subscriptions/{subscription}/resourceGroups/NAME; `{subscription}`
    /// is filled in from the settings. Not for assign_role.
    pub id: Option<String>,
    /// The resource provider's api-version (required except for assign_role, which uses 2022-04-01).
    pub api_version: Option<String>,
    /// The resource to ensure, or the body of a post.
    pub body: Option<Value>,
    /// ensure: JSON pointers into `body` that must match the existing resource (default: every field of `body`).
    pub compare: Option<Vec<String>>,
    /// ensure: PUT over an existing resource that differs. Off by default: NSG and VNet PUTs replace
    /// rules and subnets wholesale.
    #[serde(default)]
    pub replace_if_different: bool,
    /// get/delete: a missing resource is not an error (default: false for get, true for delete).
    pub ok_if_missing: Option<bool>,
    /// post: an action appended to `id`, e.g. "listKeys" (or put it at the end of `id` yourself).
    pub operation: Option<String>,
    /// post: whether the response holds secrets (keys, SAS); default true.
    pub secret: Option<bool>,
    /// The subscription for `{subscription}` and role GUIDs, instead of AZURE_SUBSCRIPTION_ID.
    pub subscription_id: Option<String>,
    /// assign_role: where the role applies (a subscription, resource group or resource id).
    pub scope: Option<String>,
    /// assign_role: a role GUID (e.g. Contributor b24988ac-6180-42a0-ab88-20f7382dd24c) or a full role definition id.
    pub role_definition_id: Option<String>,
    /// assign_role: the principal (object) id, e.g. an identity's properties.principalId.
    pub principal_id: Option<String>,
    /// assign_role: sent so a just-created principal need not be looked up (default ServicePrincipal).
    pub principal_type: Option<PrincipalType>,
    /// wait_gone: only items whose tags hold every one of these pairs count (default: every item).
    pub tags: Option<BTreeMap<String, String>>,
    /// wait_gone: how long to wait, e.g. "30m" (default 30m).
    pub timeout: Option<String>,
}

fn invalid(message: impl Into<String>) -> StepError {
    StepError::invalid_inputs(message)
}

impl ArmInputs {
    /// Inputs that mean nothing for the action are refused rather than silently ignored.
    fn check_applicable(&self) -> Result<(), StepError> {
        let action = self.action_name();
        let given: [(&str, bool, &[ArmAction]); 12] = [
            (
                "id",
                self.id.is_some(),
                &[ArmAction::Ensure, ArmAction::Get, ArmAction::Delete, ArmAction::Post, ArmAction::WaitGone],
            ),
            ("body", self.body.is_some(), &[ArmAction::Ensure, ArmAction::Post]),
            ("compare", self.compare.is_some(), &[ArmAction::Ensure]),
            ("replace_if_different", self.replace_if_different, &[ArmAction::Ensure]),
            ("ok_if_missing", self.ok_if_missing.is_some(), &[ArmAction::Get, ArmAction::Delete]),
            ("operation", self.operation.is_some(), &[ArmAction::Post]),
            ("secret", self.secret.is_some(), &[ArmAction::Post]),
            ("scope", self.scope.is_some(), &[ArmAction::AssignRole]),
            ("role_definition_id", self.role_definition_id.is_some(), &[ArmAction::AssignRole]),
            ("principal_id", self.principal_id.is_some() || self.principal_type.is_some(), &[ArmAction::AssignRole]),
            ("tags", self.tags.is_some(), &[ArmAction::WaitGone]),
            ("timeout", self.timeout.is_some(), &[ArmAction::WaitGone]),
        ];
        for (name, present, allowed) in given {
            if present && !allowed.contains(&self.action) {
                return Err(invalid(format!("`{name}` does not apply to action `{action}`")));
            }
        }
        if self.action == ArmAction::AssignRole && self.api_version.is_some() {
            return Err(invalid(format!("assign_role always uses api-version {}", role_assignment::API_VERSION)));
        }
        Ok(())
    }

    fn action_name(&self) -> &'static str {
        match self.action {
            ArmAction::Ensure => "ensure",
            ArmAction::Get => "get",
            ArmAction::Delete => "delete",
            ArmAction::Post => "post",
            ArmAction::AssignRole => "assign_role",
            ArmAction::WaitGone => "wait_gone",
        }
    }

    fn timeout(&self) -> Result<std::time::Duration, StepError> {
        let text = self.timeout.as_deref().unwrap_or(DEFAULT_WAIT_TIMEOUT);
        humantime::parse_duration(text).map_err(|e| invalid(format!("`timeout` `{text}` is not a duration: {e}")))
    }
}

/// How long `wait_gone` waits when the step does not say.
const DEFAULT_WAIT_TIMEOUT: &str = "30m";

/// Whether a step's response body holds secrets: every `post` unless it says `secret = false`
/// (listKeys, listAccountSas), decided from the unresolved inputs so `plan` knows it too.
fn response_is_secret(inputs: &Value) -> bool {
    let action = inputs.get("action").and_then(Value::as_str);
    let is_post = match action {
        Some(a) => a == "post" || serde_json::from_value::<ArmAction>(json!(a)).is_err(),
        None => false,
    };
    is_post && inputs.get("secret").and_then(Value::as_bool) != Some(false)
}

/// What an action produced, before it becomes outputs.
struct Produced {
    id: String,
    body: Value,
    created: bool,
    exists: bool,
}

#[async_trait]
impl StepKind for Arm {
    fn name(&self) -> &'static str {
        "arm"
    }

    fn needs(&self) -> &'static [KindNeed] {
        &[KindNeed::AzureResourceManager]
    }

    fn made_objects(&self) -> MadeObjects {
        MadeObjects::ArmResources
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<ArmInputs>()
    }

    fn default_attempts(&self) -> u32 {
        6
    }

    fn accepts_output_specs(&self) -> bool {
        true
    }

    fn declared_outputs(&self, inputs: &Value, specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        let secret = response_is_secret(inputs);
        let mut outputs: Vec<OutputDecl> = ["id", "name", "created", "exists"]
            .iter()
            .map(|n| OutputDecl { name: n.to_string(), secret: false })
            .collect();
        outputs.push(OutputDecl { name: "body".into(), secret });
        outputs
            .extend(specs.iter().map(|(name, spec)| OutputDecl { name: name.clone(), secret: spec.secret || secret }));
        outputs
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    async fn preflight(&self, inputs: &Value) -> Result<(), StepError> {
        let inputs: ArmInputs = parse_inputs(inputs)?;
        if inputs.action != ArmAction::Ensure {
            return Ok(());
        }
        let Some(id) = inputs.id.as_ref().filter(|id| crate::azure::preflight::applies_to(id)) else { return Ok(()) };
        let client = self.client().await?;
        let subscription = inputs.subscription_id.clone().or_else(|| client.subscription_id.clone());
        let id = resource_id::resolve(id, subscription.as_deref())?;
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut session = ArmSession::new(&client, &cancel, runbook_clock::Clock::process());
        crate::azure::preflight::storage_account_name(&mut session, &id).await
    }

    async fn run(&self, ctx: &StepContext, inputs: &Value) -> Result<StepOutcome, StepError> {
        let inputs: ArmInputs = parse_inputs(inputs)?;
        inputs.check_applicable()?;
        let client = self.client().await?;
        let subscription = inputs.subscription_id.clone().or_else(|| client.subscription_id.clone());
        let mut session = ArmSession::new(&client, &ctx.cancel, ctx.clock.clone());
        let produced = match perform(&mut session, &inputs, subscription.as_deref()).await {
            Ok(produced) => produced,
            Err(mut error) => {
                attach(&mut error.evidence, "action", json!(inputs.action_name()));
                attach(&mut error.evidence, "requests", session.requests());
                return Err(error);
            }
        };
        let evidence = json!({
            "action": inputs.action_name(),
            "id": produced.id,
            "created": produced.created,
            "exists": produced.exists,
            "wrote": session.wrote,
            "requests": session.requests(),
        });
        let outputs = outputs(ctx, produced).map_err(|e| e.with_evidence(evidence.clone()))?;
        Ok(StepOutcome { outputs, evidence })
    }
}

fn attach(evidence: &mut Value, key: &str, value: Value) {
    if !evidence.is_object() {
        *evidence = json!({});
    }
    if let Value::Object(map) = evidence {
        map.entry(key.to_string()).or_insert(value);
    }
}

async fn perform(
    session: &mut ArmSession<'_>,
    inputs: &ArmInputs,
    subscription: Option<&str>,
) -> Result<Produced, StepError> {
    let action = inputs.action_name();
    // Every action but assign_role names its resource by id and api-version.
    let target = || -> Result<(String, &str), StepError> {
        let id = resource_id::resolve(required(&inputs.id, "id", action)?, subscription)?;
        Ok((id, required(&inputs.api_version, "api_version", action)?))
    };
    match inputs.action {
        ArmAction::AssignRole => {
            let assignment = RoleAssignment::new(
                required(&inputs.scope, "scope", action)?,
                required(&inputs.role_definition_id, "role_definition_id", action)?,
                required(&inputs.principal_id, "principal_id", action)?,
                inputs.principal_type.unwrap_or_default().as_str(),
                subscription,
            )?;
            let (body, created) = role_assignment::assign(session, &assignment).await?;
            Ok(Produced { id: assignment.path(), body, created, exists: true })
        }
        ArmAction::Ensure => {
            let (id, api_version) = target()?;
            let body = inputs
                .body
                .as_ref()
                .filter(|b| b.is_object())
                .ok_or_else(|| invalid("`ensure` needs `body`, a JSON object (the resource as it should be)"))?;
            let desired = Desired {
                path: &id,
                api_version,
                body,
                compare: inputs.compare.as_deref(),
                replace_if_different: inputs.replace_if_different,
            };
            let ensured = ensure(session, &desired).await?;
            Ok(Produced { id, body: ensured.body, created: ensured.created, exists: true })
        }
        ArmAction::Get => {
            let (id, api_version) = target()?;
            let body = actions::get(session, &id, api_version, inputs.ok_if_missing.unwrap_or(false)).await?;
            Ok(Produced { id, exists: body.is_some(), body: body.unwrap_or(Value::Null), created: false })
        }
        ArmAction::Delete => {
            let (id, api_version) = target()?;
            actions::delete(session, &id, api_version, inputs.ok_if_missing.unwrap_or(true)).await?;
            Ok(Produced { id, body: Value::Null, created: false, exists: false })
        }
        ArmAction::Post => {
            let (id, api_version) = target()?;
            let path = match &inputs.operation {
                Some(op) => format!("{}/{}", id.trim_end_matches('/'), op.trim_matches('/')),
                None => id.clone(),
            };
            let body = actions::post(session, &path, api_version, inputs.body.as_ref()).await?;
            Ok(Produced { id, body, created: false, exists: true })
        }
        ArmAction::WaitGone => {
            let (id, api_version) = target()?;
            let timeout = inputs.timeout()?;
            let tags = inputs.tags.clone().unwrap_or_default();
            let gone = wait_gone::wait_gone(session, &id, api_version, &tags, timeout).await?;
            let body = json!({ "gone": gone.first_seen, "count": gone.first_seen.len(), "polls": gone.polls });
            Ok(Produced { id, body, created: false, exists: false })
        }
    }
}

fn outputs(ctx: &StepContext, produced: Produced) -> Result<Map<String, Value>, StepError> {
    let id = produced.body.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or(produced.id);
    let name = produced
        .body
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| resource_id::name_of(&id));
    let mut outputs = Map::new();
    outputs.insert("id".into(), json!(id));
    outputs.insert("name".into(), json!(name));
    outputs.insert("created".into(), json!(produced.created));
    outputs.insert("exists".into(), json!(produced.exists));
    // The only text an ARM step captures is the response body, so every spec reads from it.
    let text = produced.body.to_string();
    for (output, spec) in ctx.output_specs.iter() {
        let value = if produced.body.is_null() { Value::Null } else { spec.extract(output, &text)? };
        outputs.insert(output.clone(), value);
    }
    outputs.insert("body".into(), produced.body);
    Ok(outputs)
}
