//! What an `arm` step can check before anything runs. Storage account names are global across
//! Azure, so a name someone else holds is known up front and should fail `plan`, not step 9 of 14.

use azure_core::http::Method;
use regex::Regex;
use serde_json::json;

use crate::StepError;
use crate::azure::session::ArmSession;

/// The api-version used for the availability check (any current Microsoft.Storage version works).
const STORAGE_API_VERSION: &str = "2023-05-01";

/// The codes of a storage account name that cannot be had (see `crate::PREFLIGHT_DECISIVE_CODES`).
pub const STORAGE_NAME_TAKEN: &str = "StorageAccountAlreadyTaken";
pub const STORAGE_NAME_INVALID: &str = "AccountNameInvalid";

fn storage_account_pattern() -> Regex {
    Regex::new(
        r"(?i)^/subscriptions/([^/]+)/resourceGroups/[^/]+/providers/Microsoft\.Storage/storageAccounts/([^/]+)$",
    )
    .expect("valid pattern")
}

/// Whether a preflight has anything to check for this resource id (before any sign-in).
pub fn applies_to(id: &str) -> bool {
    storage_account_pattern().is_match(id)
}

/// For an ensure of a storage account: fine when its name is free or the account already exists
/// (it is ours); otherwise the error Azure would give at creation, with a hint. The name is
/// checked first: on a first run it is free, and that one answer settles it; the account is read
/// only when the name is not available, to tell our own account from someone else's.
pub async fn storage_account_name(session: &mut ArmSession<'_>, id: &str) -> Result<(), StepError> {
    let Some(parts) = storage_account_pattern().captures(id) else { return Ok(()) };
    let (subscription, name) = (&parts[1], &parts[2]);
    let check = session
        .call(
            Method::Post,
            &format!("/subscriptions/{subscription}/providers/Microsoft.Storage/checkNameAvailability"),
            STORAGE_API_VERSION,
            Some(&json!({ "name": name, "type": "Microsoft.Storage/storageAccounts" })),
        )
        .await?;
    let Some(answer) = check.json().filter(|_| check.is_success()) else { return Ok(()) };
    if answer["nameAvailable"] != false {
        return Ok(());
    }
    let existing = session.call(Method::Get, id, STORAGE_API_VERSION, None).await?;
    if existing.status != 404 {
        // Ours already, or something the step itself will report with its full context.
        return Ok(());
    }
    let code = match answer["reason"].as_str() {
        Some("AccountNameInvalid") => STORAGE_NAME_INVALID,
        _ => STORAGE_NAME_TAKEN,
    };
    let message = answer["message"].as_str().unwrap_or("the name is not available");
    Err(StepError::permanent(format!("storage account name `{name}`: {message}")).with_code(code).with_hint(
        "storage account names are global across Azure: choose another name (3-24 lowercase letters and digits)",
    ))
}
