//! Who is acting: journaled with every run and approval.

use serde_json::{Value, json};

pub fn user() -> String {
    std::env::var("RUNBOOK_USER")
        .or_else(|_| std::env::var("USER"))
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| format!("uid:{}", unsafe_uid()))
}

fn unsafe_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:"))?.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
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

/// Sortable by time, readable, and unique enough for one journal.
pub fn new_run_id() -> String {
    let now = jiff::Timestamp::now();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}", now.strftime("%Y%m%dT%H%M%SZ"), &suffix[..6])
}

pub fn now() -> String {
    jiff::Timestamp::now().to_string()
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
