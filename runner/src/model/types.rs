//! The runbook format: what a runbook file may contain. The JSON Schema (`runbook schema`) is
//! generated from these types, and validation checks files against that schema first.

use std::collections::BTreeMap;

use runbook_steps::OutputSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "runbook", description = "A runbook: typed variables and a graph of typed steps.")]
pub struct RunbookFile {
    pub runbook: Meta,
    /// Typed variables, given by a vars file, `--var name=value` or `RUNBOOK_VAR_<name>`.
    #[serde(default)]
    pub vars: BTreeMap<String, VarSpec>,
    /// Values this runbook needs from earlier runbooks' checkpoints, by alias: `${alias.output}`.
    #[serde(default)]
    pub requires: BTreeMap<String, Requirement>,
    #[serde(default)]
    pub steps: Vec<StepSpec>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The runbook's name, used by `run`, `resume` and by later runbooks' `requires`.
    #[schemars(regex(pattern = r"^[a-z0-9][a-z0-9-]*$"))]
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Who runs it, e.g. "azure-admin" or "hypershift-admin".
    pub persona: Option<String>,
    /// At most this many steps run at once (default 16).
    #[schemars(range(min = 1))]
    pub parallelism: Option<usize>,
    /// Retries allowed across the whole run, so a persistent fault fails instead of looping (default 200).
    pub retry_budget: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VarType {
    #[default]
    String,
    Integer,
    Boolean,
    List,
    /// A string naming a file that must exist when the runbook is planned.
    Path,
    /// Names with string values (e.g. Azure tags): a TOML table in a vars file, or on the
    /// command line `k=v,k2=v2` (as `az --tags` takes them) or a JSON object.
    Table,
}

/// Naming rules of Azure resources that can be checked before any call.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NamingRule {
    StorageAccount,
    ResourceGroup,
    ManagedIdentity,
    DnsZone,
    ClusterName,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VarSpec {
    #[serde(rename = "type", default)]
    pub ty: VarType,
    pub description: Option<String>,
    pub default: Option<Value>,
    /// A secret is never journaled in plaintext, never printed, and files holding it are 0600.
    #[serde(default)]
    pub secret: bool,
    /// A regular expression the whole value must match.
    pub pattern: Option<String>,
    /// The allowed values.
    #[serde(rename = "enum")]
    pub allowed: Option<Vec<Value>>,
    /// An Azure naming rule the value must follow.
    pub rule: Option<NamingRule>,
    /// Defaults that depend on the value of another variable (one with `enum`): where that
    /// variable has one of these values, this one's default is the value given for it. A value
    /// set in the vars file, the environment or `--var` wins as over any default.
    pub default_by: Option<DefaultBy>,
    /// The value an earlier runbook journaled, as `alias.output` of this runbook's `requires`
    /// (e.g. "phase1.external_dns"): the variable takes that value, so two phases cannot
    /// disagree; a value given in the vars file, the environment or `--var` that differs is
    /// refused at `plan`, naming both. It has no `default`.
    pub from: Option<String>,
}

/// `default_by = { var = "identity_tool", values = { hypershift = [ ... ] } }`
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefaultBy {
    /// The variable whose value picks the default (it must have `enum` and no `default_by`).
    pub var: String,
    /// The default for each of its values; for a value not listed, `default` applies.
    pub values: BTreeMap<String, Value>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// The name of the earlier runbook.
    pub runbook: String,
    /// The checkpoint outputs this runbook reads from it.
    pub outputs: Vec<String>,
    /// Outputs it publishes only in some configurations (e.g. with External DNS on): a missing
    /// one reads as null, so the steps that use it must be `when`-gated on that configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_-]*$"))]
    pub id: String,
    /// The step kind: exec, template, http, gate, checkpoint, and the cloud kinds.
    pub kind: String,
    pub description: Option<String>,
    /// Steps that must finish first, beyond those this step references.
    #[serde(default)]
    pub after: Vec<String>,
    /// Run only when this holds: `${vars.x}`, `!${vars.x}`, `${vars.x} == 'v'` or `!=`; several joined by `&&`.
    pub when: Option<String>,
    /// Run once per item: a list, or a reference to a list variable. `${item}` is the current item.
    pub for_each: Option<Value>,
    /// Steps with the same key never run at the same time (e.g. writes to one managed identity).
    pub serialize: Option<String>,
    pub retry: Option<RetrySpec>,
    /// Time limit per attempt, e.g. "30s", "10m".
    pub timeout: Option<String>,
    /// Whether re-running after an interruption is safe; defaults to what the kind says.
    pub idempotent: Option<bool>,
    /// Inputs of the step kind.
    #[serde(default)]
    pub inputs: serde_json::Map<String, Value>,
    /// Outputs extracted from what the step captured (exec: stdout/stderr, http: body).
    #[serde(default)]
    pub outputs: BTreeMap<String, OutputSpec>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Attempts in all, the first included.
    #[schemars(range(min = 1, max = 100))]
    pub attempts: u32,
    /// First delay between attempts (doubles each time), e.g. "1s". Default "1s".
    pub backoff: Option<String>,
    /// Upper bound of the delay. Default "60s".
    pub max_backoff: Option<String>,
    /// Also retry when an attempt times out.
    #[serde(default)]
    pub on_timeout: bool,
}
