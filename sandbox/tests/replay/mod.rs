//! Replays an Azure CLI recording against the sandbox in recording order and compares
//! each answer with the recorded one (status code and key body fields).
//!
//! The recorded hosts become the sandbox's ARM, Graph and Blob endpoints; bearer tokens
//! come from the sandbox's token endpoint; values the sandbox generates (object ids,
//! etags, the account SAS) are substituted into later requests; polling follows the
//! sandbox's own LRO headers rather than the recorded operation URLs.

pub mod cassette;
mod compare;
mod scope;
mod substitutions;
mod target;

use std::collections::HashMap;
use std::time::Duration;

use runbook_sandbox::{Sandbox, SandboxConfig};
use serde_json::Value;

use crate::support;
use cassette::Interaction;
use scope::Check;
use substitutions::Substitutions;
use target::{Service, Target, poll_key};

/// What became of one recorded interaction.
pub struct Report {
    pub file: String,
    pub checked: usize,
    /// Body fields compared over all checked interactions.
    pub fields: usize,
    pub status_only: Vec<(usize, &'static str)>,
    pub mismatches: Vec<String>,
}

impl Report {
    pub fn print(&self) {
        println!(
            "{}: {} interactions checked in full ({} body fields compared), {} status only, {} mismatches",
            self.file,
            self.checked,
            self.fields,
            self.status_only.len(),
            self.mismatches.len()
        );
        for (i, why) in &self.status_only {
            println!("  #{i}: status only ({why})");
        }
        for m in &self.mismatches {
            println!("  MISMATCH {m}");
        }
    }

    /// Fails the test with every mismatch listed.
    pub fn assert_faithful(&self, expected_checked: usize) {
        self.print();
        assert!(
            self.mismatches.is_empty(),
            "{}: the sandbox disagrees with the recording:\n{}",
            self.file,
            self.mismatches.join("\n")
        );
        assert_eq!(self.checked, expected_checked, "{}: number of interactions checked in full", self.file);
    }
}

/// A sandbox response, fully read.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }

    /// Still running: a 202, or an Azure-AsyncOperation status that is not final.
    fn in_progress(&self) -> bool {
        self.status == 202
            || self.json().is_some_and(|v| matches!(v["status"].as_str(), Some("InProgress" | "Running" | "Accepted")))
    }
}

struct Replayer {
    sandbox: Sandbox,
    client: reqwest::Client,
    arm_token: String,
    graph_token: String,
    subs: Substitutions,
    /// Recorded polling URL (see `poll_key`) -> the sandbox's URL for the same operation.
    polls: HashMap<String, String>,
    report: Report,
}

/// Request headers worth forwarding: content type, Blob's `x-ms-*`, conditional writes.
fn forwarded(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "content-type" || n == "if-match" || n == "if-none-match" || (n.starts_with("x-ms-") && n != "x-ms-date")
}

fn is_recorded_in_progress(interaction: &Interaction) -> bool {
    let status = interaction.response.status.code;
    let body: Value = serde_json::from_str(&interaction.response.body.string).unwrap_or_default();
    status == 202 || matches!(body["status"].as_str(), Some("InProgress" | "Running" | "Accepted"))
}

pub async fn replay(file: &str) -> Report {
    let cassette = cassette::load(file);
    let sandbox = support::start(SandboxConfig::instant()).await;
    let client = support::client(&sandbox);
    let arm_token = support::arm_token(&sandbox, &client).await;
    let graph_token = support::token_for(
        &sandbox,
        &client,
        runbook_sandbox::SANDBOX_CLIENT_ID,
        runbook_sandbox::SANDBOX_CLIENT_SECRET,
        "https://graph.microsoft.com/.default",
    )
    .await;
    let mut replayer = Replayer {
        sandbox,
        client,
        arm_token,
        graph_token,
        subs: Substitutions::default(),
        polls: HashMap::new(),
        report: Report {
            file: file.to_string(),
            checked: 0,
            fields: 0,
            status_only: Vec::new(),
            mismatches: Vec::new(),
        },
    };
    for (rg, body) in scope::preexisting_resource_groups(&cassette.interactions) {
        replayer.create_resource_group(&rg, &body).await;
    }
    for (i, interaction) in cassette.interactions.iter().enumerate() {
        replayer.step(i, interaction).await;
    }
    let Replayer { sandbox, report, .. } = replayer;
    sandbox.shutdown().await;
    report
}

impl Replayer {
    async fn create_resource_group(&self, rg: &str, body: &Value) {
        let url = format!(
            "{}subscriptions/{}/resourcegroups/{rg}?api-version=2021-04-01",
            self.sandbox.arm_endpoint(),
            self.sandbox.subscription_id()
        );
        let resp =
            self.client.put(url).bearer_auth(&self.arm_token).json(body).send().await.expect("resource group setup");
        assert!(resp.status().is_success(), "setting up resource group {rg}: {}", resp.status());
    }

    async fn send(&self, method: &str, url: &str, target: &Target, interaction: &Interaction) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("recorded method");
        let mut req = self.client.request(method, url);
        match target.service {
            Service::Arm => req = req.bearer_auth(&self.arm_token),
            Service::Graph => req = req.bearer_auth(&self.graph_token),
            // Blob requests carry the (substituted) SAS in their query.
            Service::Blob => {}
        }
        for (name, values) in &interaction.request.headers {
            if forwarded(name)
                && let Some(v) = values.first()
            {
                req = req.header(name.as_str(), self.subs.apply(v));
            }
        }
        if let Some(body) = &interaction.request.body {
            req = req.body(self.subs.apply(body));
        }
        let resp = req.send().await.unwrap_or_else(|e| panic!("{} {url}: {e}", interaction.request.method));
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.text().await.unwrap_or_default();
        Answer { status, headers, body }
    }

    fn mismatch(&mut self, i: usize, interaction: &Interaction, what: String) {
        let path = Target::parse(&interaction.request.uri).path().to_string();
        self.report.mismatches.push(format!("#{i} {} {path}: {what}", interaction.request.method));
    }

    async fn step(&mut self, i: usize, interaction: &Interaction) {
        let recorded_uri = interaction.request.uri.clone();
        if let Some(url) = self.polls.get(&poll_key(&recorded_uri)).cloned() {
            return self.poll(i, interaction, &url).await;
        }
        let target = Target::parse(&self.subs.apply(&recorded_uri));
        let url = target.url(&self.sandbox);
        let answer = self.send(&interaction.request.method, &url, &target, interaction).await;
        let recorded = &interaction.response;
        if answer.status != recorded.status.code {
            let detail = answer.json().map(|v| v["error"]["code"].to_string()).unwrap_or_default();
            return self.mismatch(
                i,
                interaction,
                format!("status: recorded {} but sandbox {} {detail}", recorded.status.code, answer.status),
            );
        }
        if let Check::StatusOnly(why) = scope::check_for(interaction, &target) {
            self.report.status_only.push((i, why));
            return;
        }
        if target.service == Service::Arm {
            self.follow_headers(i, interaction, &answer);
        }
        let is_read = matches!(interaction.request.method.to_ascii_uppercase().as_str(), "GET" | "HEAD");
        self.compare_bodies(i, interaction, &answer, is_read);
        self.report.checked += 1;
    }

    /// Maps the recorded polling URLs to the sandbox's, and checks etag presence.
    fn follow_headers(&mut self, i: usize, interaction: &Interaction, answer: &Answer) {
        for name in ["azure-asyncoperation", "location"] {
            let Some(recorded) = interaction.response.header(name) else { continue };
            if !recorded.starts_with("https://") {
                continue;
            }
            match answer.header(name) {
                Some(actual) => {
                    self.polls.insert(poll_key(recorded), actual.to_string());
                }
                None => self.mismatch(i, interaction, format!("the recording has a {name} header, the sandbox none")),
            }
        }
        if let Some(recorded) = interaction.response.header("etag") {
            match answer.header("etag") {
                Some(actual) => {
                    let actual = actual.to_string();
                    self.subs.add(recorded, &actual);
                }
                None => self.mismatch(i, interaction, "the recording has an etag header, the sandbox none".into()),
            }
        }
    }

    fn compare_bodies(&mut self, i: usize, interaction: &Interaction, answer: &Answer, is_read: bool) {
        let recorded_text = &interaction.response.body.string;
        if recorded_text.is_empty() {
            if !answer.body.is_empty() && interaction.request.method != "HEAD" {
                self.mismatch(i, interaction, format!("the recording has no body, the sandbox sent {}", answer.body));
            }
            return;
        }
        let Ok(recorded) = serde_json::from_str::<Value>(recorded_text) else {
            return self.compare_text(i, interaction, recorded_text, &answer.body);
        };
        let Some(actual) = answer.json() else {
            return self.mismatch(i, interaction, format!("the sandbox's body is not JSON: {}", answer.body));
        };
        self.subs.learn(&recorded, &actual);
        let recorded: Value = serde_json::from_str(&self.subs.apply(recorded_text)).unwrap_or(recorded);
        let comparison = compare::compare(&recorded, &actual, &compare::Options { is_read });
        self.report.fields += comparison.fields;
        for what in comparison.mismatches {
            self.mismatch(i, interaction, what);
        }
    }

    /// Blob bodies: a plain-text blob must come back byte for byte; a blob listing must
    /// name the same blobs.
    fn compare_text(&mut self, i: usize, interaction: &Interaction, recorded: &str, actual: &str) {
        let names = |xml: &str| -> Vec<String> {
            xml.split("<Name>").skip(1).filter_map(|s| s.split("</Name>").next()).map(str::to_string).collect()
        };
        let same = if recorded.trim_start_matches('\u{feff}').starts_with("<?xml") {
            names(recorded) == names(actual)
        } else {
            recorded == actual
        };
        if !same {
            self.mismatch(i, interaction, format!("body: recorded {recorded:?} but sandbox {actual:?}"));
        }
    }

    /// A recorded polling GET, sent to the sandbox's own URL for the same operation.
    /// Intermediate recorded answers may find the sandbox already done (it runs faster
    /// than Azure); the final one is awaited and compared.
    async fn poll(&mut self, i: usize, interaction: &Interaction, url: &str) {
        let target = Target::parse(&interaction.request.uri);
        let recorded_in_progress = is_recorded_in_progress(interaction);
        let mut answer = self.send("GET", url, &target, interaction).await;
        let mut attempts = 0;
        while !recorded_in_progress && answer.in_progress() {
            attempts += 1;
            assert!(attempts < 100, "#{i}: operation {url} never finished");
            let wait = answer.header("retry-after-ms").and_then(|v| v.parse().ok()).unwrap_or(50u64).min(100);
            tokio::time::sleep(Duration::from_millis(wait)).await;
            answer = self.send("GET", url, &target, interaction).await;
        }
        let recorded_status = interaction.response.status.code;
        if recorded_in_progress {
            if answer.status != recorded_status && answer.in_progress() {
                self.mismatch(
                    i,
                    interaction,
                    format!("poll status: recorded {recorded_status} but sandbox {}", answer.status),
                );
            }
            self.report.checked += 1;
            return;
        }
        if answer.status != recorded_status {
            return self.mismatch(
                i,
                interaction,
                format!("final poll status: recorded {recorded_status} but sandbox {}", answer.status),
            );
        }
        self.compare_bodies(i, interaction, &answer, true);
        self.report.checked += 1;
    }
}
