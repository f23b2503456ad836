//! Who is acting: journaled with every run and approval.

use std::sync::Arc;

use runbook_steps::SettingsSource;
use serde_json::{Value, json};

/// The OS user's name: RUNBOOK_USER, USER or LOGNAME when set, else the account database's
/// name for this process's uid (containers and services often set none of those variables).
pub fn user() -> String {
    std::env::var("RUNBOOK_USER")
        .or_else(|_| std::env::var("USER"))
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| {
            let uid = real_uid();
            account_name(uid).unwrap_or_else(|| format!("uid:{uid}"))
        })
}

fn real_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:"))?.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// The name `/etc/passwd` gives `uid` (name:password:uid:…).
fn account_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_string())
    })
}

pub fn host() -> String {
    std::env::var("RUNBOOK_HOST").unwrap_or_else(|_| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "unknown".into())
    })
}

pub fn who(persona: Option<&str>) -> Value {
    json!({
        "user": user(),
        "host": host(),
        "pid": std::process::id(),
        "persona": persona,
        "azure_principal": std::env::var("AZURE_CLIENT_ID").ok(),
    })
}

/// [`who`] with the Azure principal the run's credential signs in as (object id, app, user,
/// display name), for a runbook with steps that act on Azure. Looked up once per process and
/// Azure (a rehearsal's second pass asks nothing again; a run's doctor check already asked),
/// bounded in time, and on failure recorded as unknown: the run's first Azure step reports a
/// sign-in problem properly.
pub async fn who_signed_in(persona: Option<&str>, runbook: &crate::model::Runbook, azure: &SettingsSource) -> Value {
    let mut who = who(persona);
    if !runbook.steps.iter().any(|s| s.kind.needs().iter().any(|need| need.signs_in_to_azure())) {
        return who;
    }
    let looked_up = match azure.load() {
        // Real time: it bounds a network lookup, not a wait of the run.
        Ok(settings) => tokio::time::timeout(std::time::Duration::from_secs(15), signed_in_principal(azure, &settings))
            .await
            .ok()
            .and_then(Result::ok),
        Err(_) => None,
    };
    if let Some(principal) = looked_up.filter(|p| !p.is_null()) {
        who["azure_principal"] = principal;
    }
    who
}

/// Who `settings` sign in as ([`runbook_steps::signed_in_principal`]), asked once per process
/// and Azure: the doctor's sign-in check and the journal's `who` share one lookup, and callers
/// that come while it is under way wait for its answer instead of asking again.
pub async fn signed_in_principal(
    azure: &SettingsSource,
    settings: &runbook_steps::AzureSettings,
) -> Result<Value, runbook_steps::StepError> {
    let target = serde_json::to_string(&azure.target()).unwrap_or_default();
    let key = format!("{target}|{}", azure.var("AZURE_CLIENT_ID").unwrap_or_default());
    let lookup = PRINCIPALS.lock().unwrap_or_else(|p| p.into_inner()).entry(key).or_default().clone();
    lookup.get_or_init(|| runbook_steps::signed_in_principal(settings)).await.clone()
}

type PrincipalLookup = Arc<tokio::sync::OnceCell<Result<Value, runbook_steps::StepError>>>;

static PRINCIPALS: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, PrincipalLookup>>> =
    std::sync::LazyLock::new(Default::default);

/// Sortable by time, readable, and unique enough for one journal.
pub fn new_run_id() -> String {
    let now = runbook_clock::Clock::process().timestamp();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}", now.strftime("%Y%m%dT%H%M%SZ"), &suffix[..6])
}

pub fn now() -> String {
    runbook_clock::Clock::process().timestamp().to_string()
}

/// The run lock's holder, named the same way as the journal's `who`.
pub fn holder(run_id: &str, command: &str) -> runbook_journal::Holder {
    runbook_journal::Holder {
        pid: std::process::id(),
        user: user(),
        host: host(),
        run_id: run_id.to_string(),
        command: command.to_string(),
        since: now(),
    }
}
