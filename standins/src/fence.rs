//! The fence around every stand-in: a stand-in acts on the built-in sandbox only. Before any
//! request it checks that the environment names the sandbox credential and loopback endpoints
//! (ARM, Entra, Graph), and every URL it is handed later (a blob endpoint from ARM) is checked
//! the same way, so a `ccoctl` link to this binary next to an `az login` can never reach Azure.
//!
//! The one exception is the sandbox answering as Azure's public host names (`--public-names`),
//! where a stand-in runs with a real user's settings: it acts then only from inside the
//! sandbox's own network ([`super::sandbox_network`]), where nothing but loopback exists.

use runbook_sandbox::public_names::is_public_name;
use runbook_steps::{AzureSettings, CredentialChoice, is_loopback_url};

use super::sandbox_network;

/// The settings a stand-in may act with, or why it must not act at all.
pub fn sandbox_settings(tool: &str) -> Result<AzureSettings, String> {
    let settings = AzureSettings::from_env().map_err(|e| refusal(tool, &e.to_string()))?;
    if settings.credential != CredentialChoice::Sandbox {
        // A real user's settings pass only inside the sandbox's network, and only for the
        // public names the sandbox answers as there.
        let endpoints =
            [settings.arm_endpoint.as_str(), settings.authority_host.as_str(), settings.graph_endpoint.as_str()];
        return match sandbox_network::check() {
            Ok(()) => match endpoints.iter().find(|url| !is_sandbox_url(url)) {
                None => Ok(settings),
                Some(url) => Err(refusal(tool, &format!("`{url}` is not a name the sandbox answers as"))),
            },
            Err(why) => Err(refusal(
                tool,
                &format!(
                    "RUNBOOK_AZURE_CREDENTIAL is `{:?}`, not `sandbox`, and this is not the sandbox's own network ({why})",
                    settings.credential
                )
                .to_lowercase(),
            )),
        };
    }
    settings.require_loopback_graph().map_err(|e| refusal(tool, &e.to_string()))?;
    Ok(settings)
}

/// Checks a URL the stand-in is about to use (one the sandbox handed it, say).
pub fn require_loopback(tool: &str, what: &str, url: &str) -> Result<(), String> {
    if is_loopback_url(url) || (is_public_name_url(url) && sandbox_network::check().is_ok()) {
        Ok(())
    } else {
        Err(refusal(tool, &format!("{what} `{url}` is not a loopback address")))
    }
}

/// Loopback, or one of the public names (only ever reached inside the sandbox's network).
fn is_sandbox_url(url: &str) -> bool {
    is_loopback_url(url) || is_public_name_url(url)
}

fn is_public_name_url(url: &str) -> bool {
    reqwest::Url::parse(url).ok().is_some_and(|u| u.scheme() == "https" && u.host_str().is_some_and(is_public_name))
}

fn refusal(tool: &str, why: &str) -> String {
    format!(
        "this `{tool}` is the stand-in built into runbook, and it acts only on runbook's built-in sandbox: {why}. \
         Nothing was sent. Use the real {tool} for Azure; the stand-in runs under `runbook rehearse`, or with the \
         settings of `runbook sandbox up` (source its sandbox.env; with --public-names, inside its network)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_pass() {
        assert!(require_loopback("ccoctl", "blob endpoint", "https://127.0.0.1:4443/acct/").is_ok());
        assert!(require_loopback("ccoctl", "blob endpoint", "https://localhost/acct/").is_ok());
        let refused = require_loopback("ccoctl", "blob endpoint", "https://acct.blob.core.windows.net/").unwrap_err();
        assert!(refused.contains("not a loopback address") && refused.contains("Nothing was sent"), "{refused}");
        assert!(require_loopback("ccoctl", "blob endpoint", "not a url").is_err());
    }
}
