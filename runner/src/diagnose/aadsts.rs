//! Reading what components report when they cannot sign in: the AADSTS code, the workload
//! identity's client id and the service-account subject, wherever a message puts them (the
//! HostedCluster's conditions, an Event, a pod's log), since HyperShift and external-dns each
//! word it their own way.

/// What one failed sign-in message says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SignInFailure {
    /// The AADSTS number, e.g. 700213.
    pub code: Option<u32>,
    /// The first client id (a GUID) the message names.
    pub client_id: Option<String>,
    /// The first service-account subject (`system:serviceaccount:NS:NAME`) it names.
    pub subject: Option<String>,
    /// The issuer the assertion presented (`presented assertion issuer '…'`), if named.
    pub issuer: Option<String>,
}

fn is_guid(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() == 5
        && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The quoted text after `marker`, e.g. the issuer in `presented assertion issuer 'X'`.
fn quoted_after(message: &str, marker: &str) -> Option<String> {
    let rest = &message[message.find(marker)? + marker.len()..];
    let rest = rest.trim_start().strip_prefix('\'')?;
    Some(rest[..rest.find('\'')?].to_string())
}

/// Reads a message; None when it names no AADSTS code.
pub fn parse(message: &str) -> Option<SignInFailure> {
    let at = message.find("AADSTS")?;
    let digits: String = message[at + 6..].chars().take_while(char::is_ascii_digit).collect();
    let code = digits.parse().ok();
    let words = message.split(|c: char| c.is_whitespace() || "()'\",;".contains(c));
    let mut failure = SignInFailure { code, ..SignInFailure::default() };
    for word in words {
        let word = word.trim_end_matches(['.', ':']);
        if failure.client_id.is_none() && is_guid(word) {
            failure.client_id = Some(word.to_ascii_lowercase());
        }
        if failure.subject.is_none() && word.starts_with("system:serviceaccount:") {
            failure.subject = Some(word.to_string());
        }
    }
    failure.issuer = quoted_after(message, "presented assertion issuer");
    Some(failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostedcluster_condition_gives_code_client_and_subject() {
        let message = "disk (Azure Disk CSI driver) cannot authenticate as workload identity CD033F51-841f-4f95-a700-2209ab9caee5 (subject system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-node-sa): AADSTS700213: No matching federated identity record found for presented assertion subject 'system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-node-sa'.";
        let failure = parse(message).unwrap();
        assert_eq!(failure.code, Some(700213));
        assert_eq!(failure.client_id.as_deref(), Some("cd033f51-841f-4f95-a700-2209ab9caee5"));
        assert_eq!(
            failure.subject.as_deref(),
            Some("system:serviceaccount:openshift-cluster-csi-drivers:azure-disk-csi-driver-node-sa")
        );
    }

    #[test]
    fn the_issuer_an_assertion_presented_is_read_from_its_quotes() {
        let message = "AADSTS700211: No matching federated identity record found for presented assertion issuer 'https://a.blob.core.windows.net/oidc'. Please check";
        let failure = parse(message).unwrap();
        assert_eq!(failure.code, Some(700211));
        assert_eq!(failure.issuer.as_deref(), Some("https://a.blob.core.windows.net/oidc"));
    }

    #[test]
    fn a_message_without_a_code_is_not_a_sign_in_failure() {
        assert_eq!(parse("waiting for the control plane"), None);
    }
}
