//! Which proxy a request goes through, decided as the Azure CLI and kubectl decide it:
//! `HTTPS_PROXY` for `https://`, `HTTP_PROXY` for `http://`, `ALL_PROXY` for either (each also in
//! lower case), none for a host `NO_PROXY` names (a domain and its subdomains, `.domain`,
//! `*.domain`, an address, a CIDR range, `*`). One matcher for every client of the runner: the
//! HTTP clients of the Azure kinds (reqwest, which reads the same variables through the same
//! matcher) and the Kubernetes client, which is handed the decision per cluster instead of reading
//! the variables itself (kube-rs compares `NO_PROXY` with the proxy's address rather than the
//! cluster's, and refuses a `NO_PROXY` with an empty entry such as a trailing comma).

use hyper_util::client::proxy::matcher::Matcher;

use crate::azure::settings::SettingsSource;

/// The proxy variables, upper case first as curl and Go read them.
const VARIABLES: [(&str, &str); 4] = [
    ("HTTPS_PROXY", "https_proxy"),
    ("HTTP_PROXY", "http_proxy"),
    ("ALL_PROXY", "all_proxy"),
    ("NO_PROXY", "no_proxy"),
];

/// The proxy for `url`, as a URL with its credentials (if any), or None for a direct connection.
/// The variables are read from `env` and then from the process's environment: settings given to
/// a run (the sandbox's) name where Azure is, not which way this machine reaches the network.
pub fn for_url(env: &SettingsSource, url: &http::Uri) -> Option<http::Uri> {
    decide(&|name| env.var(name).or_else(|| std::env::var(name).ok().filter(|v| !v.trim().is_empty())), url)
}

fn decide(lookup: &dyn Fn(&str) -> Option<String>, url: &http::Uri) -> Option<http::Uri> {
    let get = |(upper, lower): (&str, &str)| lookup(upper).or_else(|| lookup(lower)).unwrap_or_default();
    let [https, http, all, no] = VARIABLES.map(get);
    let matcher = Matcher::builder().https(https.clone()).http(http.clone()).all(all.clone()).no(no).build();
    let intercept = matcher.intercept(url)?;
    // The matcher keeps a proxy's user and password apart (as a header); the Kubernetes client
    // reads them from the URL. The variable that applied, as written, keeps them there.
    let written = match url.scheme_str() {
        Some("https") if !https.is_empty() => https,
        Some("http") if !http.is_empty() => http,
        _ => all,
    };
    let written = if written.contains("://") { written } else { format!("http://{written}") };
    Some(written.parse().unwrap_or_else(|_| intercept.uri().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(vars: &[(&'static str, &'static str)], url: &str) -> Option<String> {
        let lookup = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
        super::decide(&lookup, &url.parse().unwrap()).map(|p| p.to_string())
    }

    #[test]
    fn the_scheme_picks_the_variable_and_no_proxy_names_the_target_not_the_proxy() {
        let corporate = [("HTTPS_PROXY", "http://proxy.corp:3128"), ("NO_PROXY", "localhost,127.0.0.1,.internal,")];
        assert_eq!(decide(&corporate, "https://api.hc.example.com:6443").as_deref(), Some("http://proxy.corp:3128/"));
        assert_eq!(decide(&corporate, "https://127.0.0.1:6443"), None);
        assert_eq!(decide(&corporate, "https://kube.internal:6443"), None);
        assert_eq!(decide(&corporate, "http://plain.example.com"), None, "no HTTP_PROXY for http://");
        // The proxy's own address in NO_PROXY does not turn the proxy off (as kube-rs would).
        let loopback = [("https_proxy", "http://127.0.0.1:3128"), ("no_proxy", "127.0.0.1")];
        assert_eq!(decide(&loopback, "https://api.example.com").as_deref(), Some("http://127.0.0.1:3128/"));
        assert_eq!(decide(&[("ALL_PROXY", "http://p:1"), ("NO_PROXY", "*")], "https://x"), None);
        assert_eq!(decide(&[], "https://x"), None);
    }

    #[test]
    fn credentials_stay_in_the_url() {
        let vars = [("HTTPS_PROXY", "http://alice:s3cret@proxy.corp:3128")];
        let proxy = for_url(&SettingsSource::fixed(vars), &"https://api.example.com".parse().unwrap()).unwrap();
        assert_eq!(proxy.to_string(), "http://alice:s3cret@proxy.corp:3128/");
        assert_eq!(decide(&vars, "https://api.example.com").as_deref(), Some("http://alice:s3cret@proxy.corp:3128/"));
    }
}
