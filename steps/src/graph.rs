use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::azure::graph_client::{GraphClient, GraphSession};
use crate::azure::graph_objects::{self, ApplicationRef, DirectoryObject, Ownership};
use crate::azure::graph_password::{self, MintedPassword};
use crate::azure::settings::SettingsSource;
use crate::kind::{KindNeed, MadeObjects};
use crate::kind::{parse_inputs, schema_of};
use crate::{OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome};

/// Microsoft Graph v1.0: the External DNS application, its service principal and a client secret.
/// Where Graph is and who signs in come from the environment when the step runs, as for `arm`
/// (`RUNBOOK_GRAPH_ENDPOINT`, `RUNBOOK_GRAPH_SCOPE` beside the shared Azure settings).
pub struct Graph {
    env: SettingsSource,
    /// Built on first use and shared by later steps, so the token is fetched once per run.
    client: tokio::sync::OnceCell<Arc<GraphClient>>,
}

impl Default for Graph {
    fn default() -> Self {
        Graph { env: SettingsSource::Process, client: tokio::sync::OnceCell::new() }
    }
}

impl Graph {
    /// A `graph` kind that reads its settings from `vars` instead of the process environment.
    pub fn with_env<K: Into<String>, V: Into<String>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        Graph { env: SettingsSource::fixed(vars), client: tokio::sync::OnceCell::new() }
    }

    async fn client(&self) -> Result<Arc<GraphClient>, StepError> {
        self.client
            .get_or_try_init(|| async { self.env.load().and_then(|s| GraphClient::new(&s)).map(Arc::new) })
            .await
            .cloned()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GraphAction {
    /// Find the application by its (unique) display name; create it only when there is none.
    Application,
    /// Find the service principal of `app_id`; create it only when there is none.
    ServicePrincipal,
    /// Mint a client secret on the application (replacing one of the same name left by an
    /// interrupted attempt). Its secret text is a secret output.
    Password,
    /// Delete the application (by object id or display name); fine when it is already gone.
    DeleteApplication,
}

impl GraphAction {
    const ALL: [GraphAction; 4] = [
        GraphAction::Application,
        GraphAction::ServicePrincipal,
        GraphAction::Password,
        GraphAction::DeleteApplication,
    ];

    fn name(self) -> &'static str {
        match self {
            GraphAction::Application => "application",
            GraphAction::ServicePrincipal => "service_principal",
            GraphAction::Password => "password",
            GraphAction::DeleteApplication => "delete_application",
        }
    }

    /// The outputs of the action: name and whether it is secret.
    fn outputs(self) -> &'static [(&'static str, bool)] {
        match self {
            GraphAction::Application => &[
                ("object_id", false),
                ("app_id", false),
                ("display_name", false),
                ("created", false),
                ("adopted", false),
            ],
            GraphAction::ServicePrincipal => &[("object_id", false), ("app_id", false), ("created", false)],
            GraphAction::Password => &[("secret", true), ("key_id", false), ("end_date_time", false)],
            GraphAction::DeleteApplication => &[("object_id", false), ("deleted", false)],
        }
    }
}

/// Single-tenant, as `az ad sp create-for-rbac` creates it: the principal signs in to this tenant only.
const DEFAULT_SIGN_IN_AUDIENCE: &str = "AzureADMyOrg";
const DEFAULT_VALID_FOR: &str = "365days";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphInputs {
    pub action: GraphAction,
    /// application: the application's display name, which must be unique in the tenant (it is how
    /// the step finds it again). delete_application: the name to delete, instead of `object_id`.
    pub display_name: Option<String>,
    /// application: `signInAudience` when creating it (default AzureADMyOrg). An existing
    /// application is left as it is.
    pub sign_in_audience: Option<String>,
    /// application: the application (client) id of an existing application the operator adopts:
    /// it is taken whatever its name or maker (and later given a password, roles, and deleted at
    /// cleanup). Empty: none; an existing application of `display_name` is then taken only when
    /// this journal made it for this cluster, and refused otherwise (`ApplicationNotOurs`).
    pub adopt_app_id: Option<String>,
    /// service_principal: the application (client) id, e.g. the application step's `app_id`.
    pub app_id: Option<String>,
    /// password, delete_application: the application's object id (the application step's
    /// `object_id`, not its app_id).
    pub object_id: Option<String>,
    /// password: the credential's display name (default "runbook:<run id>/<step id>"). A re-run
    /// replaces the credential of this name, so give each secret its own.
    pub credential_display_name: Option<String>,
    /// password: how long the secret stays valid, e.g. "365days", "90d", "2years" (default 365 days).
    pub valid_for: Option<String>,
}

fn invalid(message: impl Into<String>) -> StepError {
    StepError::invalid_inputs(message)
}

fn required<'a>(value: &'a Option<String>, name: &str, action: GraphAction) -> Result<&'a str, StepError> {
    crate::kind::required(value, name, action.name())
}

impl GraphInputs {
    /// Inputs that mean nothing for the action are refused rather than silently ignored.
    fn check_applicable(&self) -> Result<(), StepError> {
        use GraphAction::*;
        let given: [(&str, bool, &[GraphAction]); 7] = [
            ("display_name", self.display_name.is_some(), &[Application, DeleteApplication]),
            ("sign_in_audience", self.sign_in_audience.is_some(), &[Application]),
            ("adopt_app_id", self.adopt_app_id.is_some(), &[Application]),
            ("app_id", self.app_id.is_some(), &[ServicePrincipal]),
            ("object_id", self.object_id.is_some(), &[Password, DeleteApplication]),
            ("credential_display_name", self.credential_display_name.is_some(), &[Password]),
            ("valid_for", self.valid_for.is_some(), &[Password]),
        ];
        for (name, present, allowed) in given {
            if present && !allowed.contains(&self.action) {
                return Err(invalid(format!("`{name}` does not apply to action `{}`", self.action.name())));
            }
        }
        if self.action == DeleteApplication && self.object_id.is_some() == self.display_name.is_some() {
            return Err(invalid("`delete_application` needs exactly one of `object_id` and `display_name`"));
        }
        Ok(())
    }

    fn valid_for(&self) -> Result<Duration, StepError> {
        let text = self.valid_for.as_deref().unwrap_or(DEFAULT_VALID_FOR);
        let duration = humantime::parse_duration(text)
            .map_err(|e| invalid(format!("`valid_for` `{text}` is not a duration: {e}")))?;
        if duration < Duration::from_secs(3600) {
            return Err(invalid(format!("`valid_for` `{text}` is shorter than an hour")));
        }
        Ok(duration)
    }
}

/// What an action produced, before it becomes outputs and evidence.
enum Produced {
    Object { object: DirectoryObject, created: bool, adopted: bool },
    Password { object_id: String, display_name: String, minted: MintedPassword },
    Deleted { object_id: Option<String> },
}

#[async_trait]
impl StepKind for Graph {
    fn default_attempts(&self) -> u32 {
        6
    }

    fn name(&self) -> &'static str {
        "graph"
    }

    fn needs(&self) -> &'static [KindNeed] {
        &[KindNeed::MicrosoftGraph]
    }

    fn made_objects(&self) -> MadeObjects {
        MadeObjects::GraphObjects
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<GraphInputs>()
    }

    fn declared_outputs(&self, inputs: &Value, _specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        let action = inputs.get("action").and_then(|a| serde_json::from_value::<GraphAction>(a.clone()).ok());
        // An action not known yet (not a literal) may be any of them: declare every output.
        let actions: Vec<GraphAction> = action.map_or_else(|| GraphAction::ALL.to_vec(), |a| vec![a]);
        let mut outputs: Vec<OutputDecl> = Vec::new();
        for (name, secret) in actions.iter().flat_map(|a| a.outputs()) {
            if !outputs.iter().any(|o| o.name == *name) {
                outputs.push(OutputDecl { name: name.to_string(), secret: *secret });
            }
        }
        outputs
    }

    /// A password mint cannot be repeated without asking (a new secret replaces the one consumers
    /// may hold), so the engine asks the operator after an interruption. Applications and service
    /// principals are found again by name and app id, so re-running them is safe.
    fn idempotent(&self, inputs: &Value) -> bool {
        inputs.get("action").and_then(Value::as_str) != Some("password")
    }

    async fn run(&self, ctx: &StepContext, inputs: &Value) -> Result<StepOutcome, StepError> {
        let inputs: GraphInputs = parse_inputs(inputs)?;
        inputs.check_applicable()?;
        let client = self.client().await?;
        let mut session = GraphSession::new(&client, &ctx.cancel);
        let produced = match perform(&mut session, ctx, &inputs).await {
            Ok(produced) => produced,
            Err(mut error) => {
                attach(&mut error.evidence, "action", json!(inputs.action.name()));
                attach(&mut error.evidence, "requests", session.requests());
                return Err(error);
            }
        };
        let (outputs, mut evidence) = outputs_and_evidence(produced);
        attach(&mut evidence, "action", json!(inputs.action.name()));
        attach(&mut evidence, "wrote", json!(session.wrote));
        attach(&mut evidence, "requests", session.requests());
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
    session: &mut GraphSession<'_>,
    ctx: &StepContext,
    inputs: &GraphInputs,
) -> Result<Produced, StepError> {
    let action = inputs.action;
    match action {
        GraphAction::Application => {
            let name = required(&inputs.display_name, "display_name", action)?;
            let audience = inputs.sign_in_audience.as_deref().unwrap_or(DEFAULT_SIGN_IN_AUDIENCE);
            let adopt_app_id = inputs.adopt_app_id.as_deref().filter(|id| !id.trim().is_empty());
            if let Some(id) = adopt_app_id
                && uuid::Uuid::parse_str(id).is_err()
            {
                return Err(invalid(format!("`adopt_app_id` `{id}` is not an application (client) id, a GUID")));
            }
            let owner = Ownership { tag: ctx.owner.as_deref(), adopt_app_id };
            let ensured = graph_objects::ensure_application(session, name, audience, &owner).await?;
            Ok(Produced::Object { object: ensured.object, created: ensured.created, adopted: ensured.adopted })
        }
        GraphAction::ServicePrincipal => {
            let app_id = required(&inputs.app_id, "app_id", action)?;
            if uuid::Uuid::parse_str(app_id).is_err() {
                return Err(invalid(format!("`app_id` `{app_id}` is not an application (client) id, a GUID")));
            }
            let (object, created) = graph_objects::ensure_service_principal(session, app_id).await?;
            Ok(Produced::Object { object, created, adopted: false })
        }
        GraphAction::Password => {
            let object_id = required(&inputs.object_id, "object_id", action)?;
            let default_name = format!("runbook:{}/{}", ctx.run_id, ctx.step_id);
            let display_name = inputs.credential_display_name.as_deref().unwrap_or(&default_name).to_string();
            let end = graph_password::end_date_time(SystemTime::from(ctx.clock.timestamp()), inputs.valid_for()?);
            let minted = graph_password::replace_password(session, object_id, &display_name, &end).await?;
            Ok(Produced::Password { object_id: object_id.to_string(), display_name, minted })
        }
        GraphAction::DeleteApplication => {
            let target = match (&inputs.object_id, &inputs.display_name) {
                (Some(_), _) => ApplicationRef::ObjectId(required(&inputs.object_id, "object_id", action)?),
                _ => ApplicationRef::DisplayName(required(&inputs.display_name, "display_name", action)?),
            };
            let object_id = graph_objects::delete_application(session, target, ctx.owner.as_deref()).await?;
            Ok(Produced::Deleted { object_id })
        }
    }
}

/// The outputs and the evidence of what was produced. The secret goes to the outputs only.
fn outputs_and_evidence(produced: Produced) -> (Map<String, Value>, Value) {
    let mut outputs = Map::new();
    let evidence = match produced {
        Produced::Object { object, created, adopted } => {
            outputs.insert("object_id".into(), json!(object.object_id));
            outputs.insert("app_id".into(), json!(object.app_id));
            outputs.insert("display_name".into(), json!(object.display_name));
            outputs.insert("created".into(), json!(created));
            outputs.insert("adopted".into(), json!(adopted));
            json!({
                "object_id": object.object_id,
                "app_id": object.app_id,
                "display_name": object.display_name,
                "created": created,
                "adopted": adopted,
            })
        }
        Produced::Password { object_id, display_name, minted } => {
            outputs.insert("secret".into(), json!(minted.secret));
            outputs.insert("key_id".into(), json!(minted.key_id));
            outputs.insert("end_date_time".into(), json!(minted.end_date_time));
            json!({
                "object_id": object_id,
                "credential_display_name": display_name,
                "key_id": minted.key_id,
                "end_date_time": minted.end_date_time,
                // An earlier attempt's secret that was minted but never journaled, now revoked.
                "replaced_orphaned_key_id": minted.replaced_key_ids.first(),
                "replaced_orphaned_key_ids": minted.replaced_key_ids,
            })
        }
        Produced::Deleted { object_id } => {
            outputs.insert("object_id".into(), json!(object_id));
            outputs.insert("deleted".into(), json!(object_id.is_some()));
            json!({ "object_id": object_id, "deleted": object_id.is_some() })
        }
    };
    (outputs, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decls(inputs: Value) -> Vec<(String, bool)> {
        Graph::default().declared_outputs(&inputs, &BTreeMap::new()).into_iter().map(|d| (d.name, d.secret)).collect()
    }

    #[test]
    fn only_the_password_secret_is_declared_secret() {
        let password = decls(json!({"action": "password", "object_id": "x"}));
        assert_eq!(password, vec![("secret".into(), true), ("key_id".into(), false), ("end_date_time".into(), false)]);
        assert!(decls(json!({"action": "application", "display_name": "a"})).iter().all(|(_, secret)| !secret));
        // Unknown action: every output, and `secret` still secret.
        let all = decls(json!({"action": "${{ vars.action }}"}));
        assert!(all.contains(&("secret".into(), true)) && all.contains(&("app_id".into(), false)));
    }

    #[test]
    fn inputs_for_another_action_are_refused() {
        let inputs: GraphInputs =
            serde_json::from_value(json!({"action": "application", "display_name": "a", "valid_for": "1d"})).unwrap();
        assert!(inputs.check_applicable().unwrap_err().message.contains("valid_for"));
        let both: GraphInputs =
            serde_json::from_value(json!({"action": "delete_application", "display_name": "a", "object_id": "b"}))
                .unwrap();
        assert!(both.check_applicable().is_err());
    }

    #[test]
    fn valid_for_defaults_to_a_year_and_refuses_nonsense() {
        let inputs: GraphInputs = serde_json::from_value(json!({"action": "password", "object_id": "x"})).unwrap();
        assert_eq!(inputs.valid_for().unwrap(), Duration::from_secs(365 * 86_400));
        let bad: GraphInputs =
            serde_json::from_value(json!({"action": "password", "object_id": "x", "valid_for": "soon"})).unwrap();
        assert_eq!(bad.valid_for().unwrap_err().code.as_deref(), Some("InvalidInputs"));
    }
}
