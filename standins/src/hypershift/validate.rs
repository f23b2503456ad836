//! The checks `create cluster azure` and `create nodepool azure` make before touching anything,
//! with the real messages (`core/create.go` Validate, `azure/create.go` Validate,
//! `nodepool/azure/create.go` Validate, `util.ValidateMarketplaceFlags`).

use super::flags::Parsed;

const DNS1123_LABEL: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// `validation.IsDNS1123Label`: the list of problems, empty when valid.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !regex::Regex::new(DNS1123_LABEL).expect("static regex").is_match(value) {
        errors.push(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    errors
}

/// The core checks that need no cluster: name, pull secret, --wait, the name's form.
pub fn core(flags: &Parsed) -> Result<(), String> {
    let name = flags.str_or("name", "");
    if name.is_empty() {
        return Err("--name is required".into());
    }
    if flags.str_or("pull-secret", "").is_empty() {
        return Err("--pull-secret is required".into());
    }
    if flags.bool("wait") && flags.int("node-pool-replicas", 0) < 1 {
        return Err("--wait requires --node-pool-replicas > 0".into());
    }
    let errors = dns1123_label(name);
    if !errors.is_empty() {
        return Err(format!("HostedCluster name failed RFC1123 validation: {}", errors.join(" ")));
    }
    Ok(())
}

/// `validateExternalDNSDomain`.
pub fn external_dns_domain(external: &str, name: &str, base_domain: &str) -> Result<(), String> {
    if external.is_empty() || name.is_empty() || base_domain.is_empty() {
        return Ok(());
    }
    let cluster_domain = format!("{name}.{base_domain}");
    let ext = external.trim_end_matches('.').to_lowercase();
    let cluster = cluster_domain.trim_end_matches('.').to_lowercase();
    if ext == cluster || cluster.ends_with(&format!(".{ext}")) {
        return Err(format!(
            "external DNS domain \"{external}\" conflicts with cluster domain \"{cluster_domain}\": this would create an Azure Private DNS zone that shadows *.apps DNS resolution. Use a different --external-dns-domain value"
        ));
    }
    Ok(())
}

/// The Azure checks of `create cluster azure`, in the real order.
pub fn azure_cluster(flags: &Parsed) -> Result<(), String> {
    let given = |name: &str| flags.get(name).is_some_and(|v| !v.is_empty());
    if given("network-security-group-id") && !given("resource-group-name") {
        return Err("flag --resource-group-name is required when using --network-security-group-id".into());
    }
    if flags.bool("assign-service-principal-roles") || flags.bool("assign-custom-hcp-roles") {
        if given("infra-json") {
            return Err("role assignment flags cannot be used with --infra-json; use --assign-identity-roles on 'create infra azure' instead".into());
        }
        if flags.str_or("dns-zone-rg-name", "").trim().is_empty() {
            return Err("--dns-zone-rg-name is required when --assign-service-principal-roles or --assign-custom-hcp-roles is set".into());
        }
    }
    if given("workload-identities-file") && given("managed-identities-file") {
        return Err("flags --workload-identities-file and --managed-identities-file are mutually exclusive".into());
    }
    if given("workload-identities-file") && given("data-plane-identities-file") {
        return Err("flags --workload-identities-file and --data-plane-identities-file are mutually exclusive".into());
    }
    if given("data-plane-identities-file") && !given("managed-identities-file") {
        return Err("--data-plane-identities-file requires --managed-identities-file".into());
    }
    if given("managed-identities-file") && !given("data-plane-identities-file") {
        return Err("--managed-identities-file requires --data-plane-identities-file".into());
    }
    let access = flags.str_or("endpoint-access", "Public");
    if !access.is_empty() && !["Public", "PublicAndPrivate", "Private"].contains(&access) {
        return Err("--endpoint-access must be one of: Public, PublicAndPrivate, Private".into());
    }
    match flags.str_or("oauth-publishing-strategy", "Route") {
        "" | "Route" => {}
        "LoadBalancer" if given("managed-identities-file") => {
            return Err(
                "--oauth-publishing-strategy LoadBalancer is not supported for ARO HCP (managed identities) clusters"
                    .into(),
            );
        }
        "LoadBalancer" => {}
        _ => return Err("--oauth-publishing-strategy must be either Route or LoadBalancer".into()),
    }
    external_dns_domain(
        flags.str_or("external-dns-domain", ""),
        flags.str_or("name", ""),
        flags.str_or("base-domain", ""),
    )?;
    for zone in flags.list("availability-zones") {
        if !["1", "2", "3"].contains(&zone.as_str()) {
            return Err(format!("invalid value for --availability-zone: {zone}"));
        }
    }
    azure_nodepool(flags)
}

/// The NodePool checks shared by both commands.
pub fn azure_nodepool(flags: &Parsed) -> Result<(), String> {
    // The real check walks a Go map, so which empty flag it names first varies; all four or none.
    let marketplace = ["marketplace-publisher", "marketplace-offer", "marketplace-sku", "marketplace-version"];
    if marketplace.iter().any(|f| !flags.str_or(f, "").is_empty())
        && let Some(empty) = marketplace.iter().find(|f| flags.str_or(f, "").is_empty())
    {
        return Err(format!(
            "all marketplace flags (i.e. marketplace-publisher, marketplace-offer, marketplace-sku, marketplace-version) are required when using a marketplace image; the following flag was empty: {empty}"
        ));
    }
    let diagnostics = flags.str_or("diagnostics-storage-account-type", "");
    if !diagnostics.is_empty() && !["Disabled", "Managed", "UserManaged"].contains(&diagnostics) {
        return Err(format!(
            "invalid argument \"{diagnostics}\" for \"--diagnostics-storage-account-type\" flag: unknown diagnostics storage account type: {diagnostics}"
        ));
    }
    if diagnostics != "UserManaged" && !flags.str_or("diagnostics-storage-account-uri", "").is_empty() {
        return Err("--diagnostics-storage-account-uri is applicable only if --diagnostics-storage-account-type is set to UserManaged".into());
    }
    let at_host = flags.str_or("encryption-at-host", "");
    if !at_host.is_empty() && at_host != "Enabled" && at_host != "Disabled" {
        return Err(
            "flag --encryption-at-host has an invalid value; accepted values are 'Enabled' and 'Disabled'".into()
        );
    }
    let zone = flags.str_or("availability-zone", "");
    if !["", "1", "2", "3"].contains(&zone) {
        return Err(format!("invalid value for --availability-zone: {zone}"));
    }
    let generation = flags.str_or("image-generation", "");
    if !generation.is_empty() && generation != "Gen1" && generation != "Gen2" {
        return Err(format!("invalid value for --image-generation: {generation}. Supported values: Gen1, Gen2"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_dns_1123_labels() {
        assert!(dns1123_label("myprefix-hc").is_empty());
        assert_eq!(dns1123_label("My_Cluster").len(), 1);
        assert_eq!(dns1123_label(&"a".repeat(64)).len(), 1);
    }

    #[test]
    fn external_dns_domain_must_not_shadow_the_cluster_domain() {
        assert!(external_dns_domain("prefix.example.com", "prefix-hc", "example.com").is_ok());
        assert!(external_dns_domain("example.com", "prefix-hc", "example.com").unwrap_err().contains("conflicts"));
        assert!(external_dns_domain("prefix-hc.example.com.", "prefix-hc", "example.com").is_err());
    }
}
