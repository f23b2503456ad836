use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::azure::settings::{CA_FILE_VAR, SettingsSource};
use crate::kind::{known_text, parse_inputs, pointer_segment, refuse_bad_inputs, schema_of};
use crate::net;
use crate::{
    CheckContext, InputProblem, OutputDecl, OutputSpec, StepContext, StepError, StepKind, StepOutcome,
    json_pointer_problem,
};

/// An HTTP check: the status and JSON assertions over the body, e.g. that the OIDC discovery
/// document is publicly readable and names the right issuer. It trusts `RUNBOOK_CA_FILE` like
/// the Azure kinds, so a runbook run against the sandbox (`sandbox up`) checks its issuer too.
#[derive(Default)]
pub struct Http {
    env: SettingsSource,
}

impl Http {
    /// Settings from a fixed map instead of the process environment.
    pub fn with_env<K: Into<String>, V: Into<String>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        Http { env: SettingsSource::fixed(vars) }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpInputs {
    pub url: String,
    /// GET unless given.
    pub method: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body to send.
    pub body: Option<Value>,
    /// Acceptable status codes (default [200]).
    pub expect_status: Option<Vec<u16>>,
    /// JSON pointer → expected value, checked against the response body.
    #[serde(default)]
    pub expect_json: BTreeMap<String, Value>,
    /// A PEM file with an extra CA to trust (for a sandbox or a private endpoint); empty for none.
    /// `RUNBOOK_CA_FILE`, when set, is trusted as well.
    pub ca_file: Option<String>,
}

#[async_trait]
impl StepKind for Http {
    fn name(&self) -> &'static str {
        "http"
    }

    /// Its `ca_file`: an issuer served by a local stand-in is checked with the CA it trusts.
    fn trusted_ca_files(&self, inputs: &Value) -> Vec<String> {
        inputs["ca_file"].as_str().filter(|f| !f.is_empty()).map(String::from).into_iter().collect()
    }

    fn inputs_schema(&self) -> Value {
        schema_of::<HttpInputs>()
    }

    fn default_attempts(&self) -> u32 {
        6
    }

    fn accepts_output_specs(&self) -> bool {
        true
    }

    fn declared_outputs(&self, _inputs: &Value, specs: &BTreeMap<String, OutputSpec>) -> Vec<OutputDecl> {
        let mut outputs = vec![OutputDecl { name: "status".into(), secret: false }];
        outputs.extend(specs.iter().map(|(name, spec)| OutputDecl { name: name.clone(), secret: spec.secret }));
        outputs
    }

    fn idempotent(&self, _inputs: &Value) -> bool {
        true
    }

    fn check_inputs(&self, inputs: &Value, _ctx: &CheckContext<'_>) -> Vec<InputProblem> {
        check_http_inputs(inputs)
    }

    async fn run(&self, ctx: &StepContext, raw: &Value) -> Result<StepOutcome, StepError> {
        refuse_bad_inputs(check_http_inputs(raw))?;
        let inputs: HttpInputs = parse_inputs(raw)?;
        // An empty path means "no extra CA": runbooks pass a variable that is empty for real Azure.
        let input_ca = inputs.ca_file.as_ref().filter(|f| !f.is_empty()).map(|f| ctx.resolve_path(f)).transpose()?;
        let env_ca = self.env.var(CA_FILE_VAR).map(PathBuf::from);
        let mut ca_files: Vec<(&Path, &str)> = Vec::new();
        ca_files.extend(input_ca.as_deref().map(|p| (p, "the step's ca_file")));
        ca_files.extend(env_ca.as_deref().map(|p| (p, CA_FILE_VAR)));
        // The connect timeout is real time (a socket's wait, not the run's clock); waits between
        // attempts are the engine's, on its clock.
        let cert_file = self.env.var(net::SSL_CERT_FILE_VAR).map(PathBuf::from);
        let builder = net::trusting_roots(
            reqwest::Client::builder().connect_timeout(Duration::from_secs(10)),
            cert_file.as_deref(),
            &ca_files,
        )?;
        let client =
            builder.build().map_err(|e| StepError::permanent(format!("HTTP client: {}", net::error_chain(&e))))?;
        let method = inputs.method.as_deref().unwrap_or("GET");
        let method = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).map_err(|_| {
            StepError::permanent(format!("`{method}` is not an HTTP method")).with_code("InvalidInputs")
        })?;
        let mut request = client.request(method, &inputs.url);
        for (name, value) in &inputs.headers {
            request = request.header(name, value);
        }
        if let Some(body) = &inputs.body {
            request = request.json(body);
        }
        let response = tokio::select! {
            r = request.send() => r,
            _ = ctx.cancel.cancelled() => return Err(StepError::new(crate::ErrorClass::Cancelled, "cancelled")),
        }
        .map_err(|e| {
            // Connection failures are worth another try; the runbook's retry policy bounds them.
            StepError::transient(format!("request to {} failed: {}", inputs.url, net::error_chain(&e)), None)
                .with_code("ConnectionFailed")
        })?;
        let status = response.status().as_u16();
        let retry_after = net::retry_after(|name| response.headers().get(name).and_then(|v| v.to_str().ok()));
        let body = response.text().await.unwrap_or_default();
        let expected = inputs.expect_status.unwrap_or_else(|| vec![200]);
        // A secret output by pointer is replaced by the runner only once it is extracted, after
        // every check passed; before that (or with checks still to pass) the body is not kept.
        let extracted = expected.contains(&status) && inputs.expect_json.is_empty();
        let evidence = json!({
            "url": ctx.redact(&inputs.url),
            "status": status,
            "body_tail": ctx.kept(crate::OutputSource::Body, &body, 1000, extracted),
        });

        if !expected.contains(&status) {
            let message = format!("{} answered {status}, expected {expected:?}", inputs.url);
            let error = if status == 429 || status >= 500 {
                StepError::transient(message, retry_after)
            } else {
                StepError::new(crate::ErrorClass::GateFailed, message)
            };
            return Err(error.with_code(format!("HttpStatus{status}")).with_evidence(evidence));
        }
        if !inputs.expect_json.is_empty() {
            let doc: Value = serde_json::from_str(&body).map_err(|e| {
                StepError::new(crate::ErrorClass::GateFailed, format!("body of {} is not JSON: {e}", inputs.url))
                    .with_code("BodyNotJson")
                    .with_evidence(evidence.clone())
            })?;
            let mismatches: Vec<String> = inputs
                .expect_json
                .iter()
                .filter_map(|(pointer, want)| match doc.pointer(pointer) {
                    Some(found) if found == want => None,
                    Some(found) => Some(format!("{pointer}: expected {want}, found {found}")),
                    None => Some(format!("{pointer}: missing")),
                })
                .collect();
            if !mismatches.is_empty() {
                return Err(StepError::new(crate::ErrorClass::GateFailed, mismatches.join("; "))
                    .with_code("BodyMismatch")
                    .with_evidence(evidence));
            }
        }
        let mut outputs = serde_json::Map::new();
        outputs.insert("status".into(), json!(status));
        for (name, spec) in ctx.output_specs.iter() {
            outputs.insert(name.clone(), spec.extract(name, &body).map_err(|e| e.with_evidence(evidence.clone()))?);
        }
        Ok(StepOutcome { outputs, evidence })
    }
}

/// The methods a check may use; anything else is a typo, not an extension method.
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// A URL that parses as http(s) with a host, a known method, valid header names and values,
/// JSON pointers in `expect_json`, status codes that exist.
fn check_http_inputs(inputs: &Value) -> Vec<InputProblem> {
    let mut problems = Vec::new();
    if let Some(url) = inputs.get("url").and_then(known_text) {
        match reqwest::Url::parse(url) {
            Err(e) => problems.push(
                InputProblem::new("/url", format!("`{url}` is not a URL: {e}"))
                    .with_hint("write an absolute URL, e.g. \"https://example.com/.well-known/openid-configuration\""),
            ),
            Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => problems.push(
                InputProblem::new("/url", format!("`{url}` is not an http(s) URL"))
                    .with_hint("the http kind speaks http:// and https:// only"),
            ),
            Ok(parsed) if parsed.host_str().is_none_or(str::is_empty) => {
                problems.push(InputProblem::new("/url", format!("`{url}` names no host")))
            }
            Ok(_) => {}
        }
    }
    if let Some(method) = inputs.get("method").and_then(known_text)
        && !METHODS.contains(&method.to_ascii_uppercase().as_str())
    {
        problems.push(
            InputProblem::new("/method", format!("`{method}` is not an HTTP method"))
                .with_hint(format!("one of: {}", METHODS.join(", "))),
        );
    }
    if let Some(headers) = inputs.get("headers").and_then(Value::as_object) {
        for (name, value) in headers {
            let at = format!("/headers/{}", pointer_segment(name));
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                problems.push(InputProblem::new(&at, format!("`{}` is not a header name", name.escape_debug())));
            }
            if let Some(text) = known_text(value)
                && reqwest::header::HeaderValue::from_str(text).is_err()
            {
                problems.push(
                    InputProblem::new(&at, format!("header `{name}` has a value no request can carry"))
                        .with_hint("header values are visible ASCII without line breaks"),
                );
            }
        }
    }
    if let Some(expect) = inputs.get("expect_json").and_then(Value::as_object) {
        for pointer in expect.keys() {
            if let Some(why) = json_pointer_problem(pointer) {
                problems.push(InputProblem::new(format!("/expect_json/{}", pointer_segment(pointer)), why));
            }
        }
    }
    if let Some(codes) = inputs.get("expect_status").and_then(Value::as_array) {
        if codes.is_empty() {
            problems.push(InputProblem::new("/expect_status", "no status is expected, so the check can never pass"));
        }
        for (i, code) in codes.iter().enumerate() {
            if code.as_u64().is_some_and(|c| !(100..=599).contains(&c)) {
                problems
                    .push(InputProblem::new(format!("/expect_status/{i}"), format!("{code} is not an HTTP status")));
            }
        }
    }
    problems
}
