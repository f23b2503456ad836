use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::{OutputSpec, StepContext, StepError, TemplateSource};

/// One output a step will produce, known before it runs so references can be checked at `plan`.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputDecl {
    pub name: String,
    pub secret: bool,
}

/// What a successful step produced: its outputs and the evidence worth journaling.
#[derive(Clone, Debug, Default)]
pub struct StepOutcome {
    pub outputs: Map<String, Value>,
    pub evidence: Value,
}

/// A problem with a step's inputs found before anything runs: `pointer` is where it is inside the
/// step's `inputs` table (RFC 6901, "" for the table itself), so the runner can name file, line
/// and column.
#[derive(Clone, Debug, PartialEq)]
pub struct InputProblem {
    pub pointer: String,
    pub message: String,
    pub hint: Option<String>,
}

impl InputProblem {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        InputProblem { pointer: pointer.into(), message: message.into(), hint: None }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// What `check_inputs` may consult besides the inputs.
pub struct CheckContext<'a> {
    /// The templates a `template` step can name.
    pub templates: &'a dyn TemplateSource,
}

/// A string input whose value is decided when the run is planned or later (it holds a
/// reference): plan-time checks leave it to the run.
pub fn known_text(value: &Value) -> Option<&str> {
    value.as_str().filter(|s| !s.contains("${"))
}

/// A key as one segment of a JSON pointer (RFC 6901: `~` is `~0`, `/` is `~1`).
pub fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// What the runner does with a step of a kind besides running it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindRole {
    /// Acts on something (a machine, a file, a cloud, a cluster).
    Action,
    /// Checks facts and may wait for an operator's approval; acts on nothing.
    Gate,
    /// Publishes values for later runbooks and for the hand-off.
    Checkpoint,
}

impl KindRole {
    /// The role of the kind named `name`, for code that meets kinds by the names the journal
    /// records; None for a name this build does not know. A kind's role does not depend on its
    /// settings, so the kinds every build has answer for all of them.
    pub fn of(name: &str) -> Option<KindRole> {
        static LOCAL: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(Registry::local);
        LOCAL.get(name).map(|kind| kind.role())
    }

    /// Whether steps of the kind named `name` publish their outputs to later runbooks and the
    /// hand-off.
    pub fn publishes(name: &str) -> bool {
        Self::of(name) == Some(KindRole::Checkpoint)
    }
}

/// A service outside this machine that a kind's steps call, so `doctor` can check before a run
/// that the account may use it, and the run can record who signed in. A kind names a service
/// only when its inputs describe requests to it the way the kind that first needed it does:
/// `doctor` reads them to work out the permissions the steps need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindNeed {
    /// Azure Resource Manager, with inputs like `arm`'s (`action`, `id`, `operation`): doctor
    /// maps each write to the RBAC operation it performs.
    AzureResourceManager,
    /// Microsoft Graph writes to applications and service principals: doctor asks whether the
    /// signed-in principal may make them.
    MicrosoftGraph,
    /// Azure Blob Storage, with inputs like `blob`'s (`action`, `auth`, `sas`): doctor checks a
    /// bearer write's data action, or the permissions a SAS carries.
    BlobStorage,
    /// A Kubernetes cluster, with inputs like `kube`'s (`kubeconfig`, `context`, `action` and
    /// what it acts on): doctor asks the cluster whether its user may do what the steps do,
    /// through the kind's own `access` action, so it finds the cluster the way a run would.
    Kubernetes,
}

impl KindNeed {
    /// Whether the steps act as an Azure principal (a sign-in, journaled with the run).
    pub fn signs_in_to_azure(self) -> bool {
        matches!(self, KindNeed::AzureResourceManager | KindNeed::MicrosoftGraph | KindNeed::BlobStorage)
    }
}

/// Which objects a finished step leaves behind for `verify` to expect, read from the step's
/// journaled inputs and outputs in the shape of the kind that first made them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadeObjects {
    /// Nothing that lasts outside the run (files, checks, published values).
    Nothing,
    /// ARM resources an `ensure` made (their id in the outputs) and role assignments; a
    /// `delete` takes its resource and everything under it away.
    ArmResources,
    /// Entra applications, their service principals and client secrets.
    GraphObjects,
    /// An OIDC issuer: its URL and key id in the outputs.
    OidcIssuer,
    /// Kubernetes objects applied, waited on, scaled, patched or deleted in the management
    /// cluster.
    KubeObjects,
    /// What a known CLI makes, recognised from the step's `argv` (`hypershift create cluster`
    /// makes a HostedCluster and its NodePool).
    CommandLineObjects,
}

#[async_trait]
pub trait StepKind: Send + Sync {
    fn name(&self) -> &'static str;

    fn role(&self) -> KindRole {
        KindRole::Action
    }

    /// Whether a step with these (resolved) inputs waits for an operator's recorded approval
    /// before it runs.
    fn awaits_approval(&self, _inputs: &Value) -> bool {
        false
    }

    /// JSON Schema of the `inputs` table, generated from the kind's input type.
    fn inputs_schema(&self) -> Value;

    /// Whether the runbook may declare extracted outputs (`[steps.outputs]`) for this kind.
    fn accepts_output_specs(&self) -> bool {
        false
    }

    /// The outputs this step will produce, from its (unresolved) inputs and output specs.
    fn declared_outputs(&self, inputs: &Value, specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl>;

    /// Whether re-running after an interruption is safe without asking the operator. Given the
    /// step's (unresolved) inputs, since one kind can hold both kinds of action.
    fn idempotent(&self, _inputs: &Value) -> bool {
        false
    }

    /// Attempts when the runbook gives the step no `retry`: kinds that talk to cloud services
    /// meet throttling, resets and replication delays as a matter of course, so they retry.
    fn default_attempts(&self) -> u32 {
        1
    }

    async fn run(&self, ctx: &StepContext, inputs: &Value) -> Result<StepOutcome, StepError>;

    /// What can be said about the inputs as written in the runbook, before any value is resolved:
    /// the schema checks shapes and types; this checks meaning (a URL that does not parse, an
    /// empty program, a regex that does not compile). Strings holding references are checked
    /// when the step runs instead (see [`known_text`]).
    fn check_inputs(&self, _inputs: &Value, _ctx: &CheckContext<'_>) -> Vec<InputProblem> {
        Vec::new()
    }

    /// Inputs (JSON pointers into `inputs`) whose values other users of the machine can see while
    /// the step runs, such as a program's argv in `ps`: a secret there is warned about at plan.
    fn exposed_inputs(&self) -> &'static [&'static str] {
        &[]
    }

    /// The services outside this machine its steps call, which `doctor` checks the account may
    /// use before a run.
    fn needs(&self) -> &'static [KindNeed] {
        &[]
    }

    /// The command lines (argv, program first) a step with these inputs would run on this
    /// machine, as far as they are known before the run: `doctor` finds each program on PATH,
    /// reports its version and checks the flags `hypershift` is given.
    fn command_lines(&self, _inputs: &Value) -> Vec<Vec<String>> {
        Vec::new()
    }

    /// Which objects its finished steps made, for `verify` to expect.
    fn made_objects(&self) -> MadeObjects {
        MadeObjects::Nothing
    }

    /// CA files (PEM) a step with these inputs trusts besides the system's roots: `verify`
    /// trusts them too when it reads what the run made (an issuer served by a local stand-in).
    fn trusted_ca_files(&self, _inputs: &Value) -> Vec<String> {
        Vec::new()
    }

    /// Checks that can be made before anything runs, on inputs known when the run is planned
    /// (e.g. that a storage account name is still free). Errors whose code is in
    /// [`crate::PREFLIGHT_DECISIVE_CODES`] stop `plan` and `run`; others are only reported.
    async fn preflight(&self, _inputs: &Value) -> Result<(), StepError> {
        Ok(())
    }
}

/// The step kinds this build knows, by name.
#[derive(Clone, Default)]
pub struct Registry {
    kinds: BTreeMap<&'static str, Arc<dyn StepKind>>,
}

impl Registry {
    /// The kinds that need no cloud: exec, template, http, gate, checkpoint.
    pub fn local() -> Self {
        let mut registry = Registry::default();
        registry.register(Arc::new(crate::Exec::default()));
        registry.register(Arc::new(crate::Template));
        registry.register(Arc::new(crate::Http::default()));
        registry.register(Arc::new(crate::Gate));
        registry.register(Arc::new(crate::Checkpoint));
        registry.register(Arc::new(crate::Keypair));
        registry.register(Arc::new(crate::Oidc));
        registry.register(Arc::new(crate::Arm::default()));
        registry.register(Arc::new(crate::Blob::default()));
        registry.register(Arc::new(crate::Graph::default()));
        registry.register(Arc::new(crate::Kube::default()));
        registry
    }

    pub fn register(&mut self, kind: Arc<dyn StepKind>) {
        self.kinds.insert(kind.name(), kind);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn StepKind>> {
        self.kinds.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.kinds.keys().copied()
    }

    /// Whether the kind named `name` needs `need`; false for a kind this build does not know.
    pub fn needs(&self, name: &str, need: KindNeed) -> bool {
        self.get(name).is_some_and(|kind| kind.needs().contains(&need))
    }
}

/// Deserializes a kind's inputs; the runner validated them against the schema already, so a
/// failure here is a bug in the kind or the schema and is reported as permanent.
pub(crate) fn parse_inputs<T: serde::de::DeserializeOwned>(inputs: &Value) -> Result<T, StepError> {
    serde_json::from_value(inputs.clone())
        .map_err(|e| StepError::permanent(format!("invalid inputs: {e}")).with_code("InvalidInputs"))
}

/// An optional text input that `action` needs, trimmed; a clear error when it is missing or blank.
pub(crate) fn required<'a>(value: &'a Option<String>, name: &str, action: &str) -> Result<&'a str, StepError> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| StepError::invalid_inputs(format!("`{action}` needs `{name}`")))
}

/// The same checks as at plan, on the resolved inputs: values that came from references are
/// known only now. The first problem becomes the step's error.
pub(crate) fn refuse_bad_inputs(problems: Vec<InputProblem>) -> Result<(), StepError> {
    match problems.into_iter().next() {
        None => Ok(()),
        Some(problem) => {
            let at = if problem.pointer.is_empty() { String::new() } else { format!("inputs{}: ", problem.pointer) };
            let error = StepError::invalid_inputs(format!("{at}{}", problem.message));
            Err(match problem.hint {
                Some(hint) => error.with_hint(hint),
                None => error,
            })
        }
    }
}

pub(crate) fn schema_of<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("schemas serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds needing each service, as doctor and the run's sign-in look them up.
    #[test]
    fn the_registry_says_which_kinds_need_which_services() {
        let registry = Registry::local();
        let needing = |need| registry.names().filter(|name| registry.needs(name, need)).collect::<Vec<_>>();
        assert_eq!(needing(KindNeed::AzureResourceManager), ["arm"]);
        assert_eq!(needing(KindNeed::MicrosoftGraph), ["graph"]);
        assert_eq!(needing(KindNeed::BlobStorage), ["blob"]);
        assert_eq!(needing(KindNeed::Kubernetes), ["kube"]);
        assert!(!registry.needs("no-such-kind", KindNeed::Kubernetes));
        let signs_in: Vec<&str> = registry
            .names()
            .filter(|name| registry.get(name).unwrap().needs().iter().any(|n| n.signs_in_to_azure()))
            .collect();
        assert_eq!(signs_in, ["arm", "blob", "graph"]);
        let made = |objects| {
            registry.names().filter(|n| registry.get(n).unwrap().made_objects() == objects).collect::<Vec<_>>()
        };
        assert_eq!(made(MadeObjects::ArmResources), ["arm"]);
        assert_eq!(made(MadeObjects::GraphObjects), ["graph"]);
        assert_eq!(made(MadeObjects::OidcIssuer), ["oidc"]);
        assert_eq!(made(MadeObjects::KubeObjects), ["kube"]);
        assert_eq!(made(MadeObjects::CommandLineObjects), ["exec"]);
    }
}
