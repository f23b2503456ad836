//! Behind a corporate proxy: a whole rehearsal (every phase) with `HTTPS_PROXY` set reaches every
//! service of the sandbox through a real proxy (Debian's `tinyproxy`, started here on loopback),
//! and with the sandbox named in `NO_PROXY` reaches it directly. The proxy makes its outgoing
//! connections from 127.0.0.2 (`Bind`), and the sandbox logs the address each request came
//! from, so every request is seen to have come one way or the other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::support::{Rehearsed, TestEnv};

const TINYPROXY: &str = "/usr/bin/tinyproxy";
/// Where the proxy's own connections come from (loopback, but not the client's 127.0.0.1).
const PROXY_SOURCE: &str = "127.0.0.2";

struct Proxy {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Proxy {
    fn start(dir: &Path) -> Proxy {
        assert!(
            Path::new(TINYPROXY).exists(),
            "the proxy tests need Debian's tinyproxy at {TINYPROXY}: run `bash tests/install-tools.sh`"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = dir.join("tinyproxy.log");
        let conf = dir.join("tinyproxy.conf");
        std::fs::write(
            &conf,
            format!(
                "Port {port}\nListen 127.0.0.1\nBind {PROXY_SOURCE}\nTimeout 120\nLogFile \"{}\"\nLogLevel Connect\nMaxClients 200\nDisableViaHeader Yes\n",
                log.display()
            ),
        )
        .unwrap();
        let child = Command::new(TINYPROXY)
            .args(["-d", "-c"])
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tinyproxy starts");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "tinyproxy did not listen on {port}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Proxy { child, port, log }
    }

    /// The tunnels the proxy opened, by the `host:port` each was asked for.
    fn tunnels(&self) -> BTreeMap<String, usize> {
        let mut tunnels = BTreeMap::new();
        for line in std::fs::read_to_string(&self.log).unwrap_or_default().lines() {
            if let Some((_, request)) = line.split_once("): CONNECT ") {
                let target = request.split_whitespace().next().unwrap_or_default().to_string();
                *tunnels.entry(target).or_insert(0) += 1;
            }
        }
        tunnels
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const LATENCY_SCALE: &str = "0.001";

fn rehearse(env: &TestEnv, proxy: &Proxy, no_proxy: &str) -> Rehearsed {
    let url = format!("http://127.0.0.1:{}", proxy.port);
    let envs: Vec<(&str, &std::ffi::OsStr)> = vec![
        ("HTTPS_PROXY", url.as_ref()),
        ("https_proxy", url.as_ref()),
        ("NO_PROXY", no_proxy.as_ref()),
        ("no_proxy", no_proxy.as_ref()),
    ];
    Rehearsed::start_on(env, 3, LATENCY_SCALE, None, &envs)
}

/// What the rehearsal sent, without the test's own reads of the sandbox's control pages.
fn rehearsal_requests(rehearsed: &Rehearsed) -> Vec<serde_json::Value> {
    let requests = rehearsed.sandbox.requests();
    requests.into_iter().filter(|r| !r["path"].as_str().unwrap_or_default().starts_with("/.sandbox/")).collect()
}

fn by_service_and_peer(requests: &[serde_json::Value]) -> BTreeMap<(String, String), usize> {
    let mut counts = BTreeMap::new();
    for request in requests {
        let key = (request["service"].as_str().unwrap().to_string(), request["peer"].as_str().unwrap().to_string());
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

#[test]
fn every_request_of_a_rehearsal_goes_through_the_proxy_and_none_for_a_no_proxy_host() {
    let env = TestEnv::new();
    let proxy = Proxy::start(env.path());
    // A corporate laptop's NO_PROXY, with an empty entry at its end; none of it names the sandbox.
    let rehearsed = rehearse(&env, &proxy, "intranet.example,.corp.example,10.0.0.0/8,");
    let requests = rehearsal_requests(&rehearsed);
    let counts = by_service_and_peer(&requests);
    // kubectl, like every Go program, never sends a request for a loopback address or
    // `localhost` through a proxy (Go's `httpproxy`), and the sandbox's cluster is on loopback; a
    // real cluster is not. Its requests are counted apart.
    let is_go = |r: &&serde_json::Value| r["user_agent"].as_str().is_some_and(|ua| ua.starts_with("kubectl"));
    let kubectl = requests.iter().filter(is_go).count();
    let direct: Vec<_> = requests.iter().filter(|r| !is_go(r) && r["peer"] != PROXY_SOURCE).collect();
    let shown: Vec<String> =
        direct.iter().map(|r| format!("{} {} {} {}", r["service"], r["method"], r["path"], r["user_agent"])).collect();
    assert!(direct.is_empty(), "{} requests bypassed the proxy:\n{}\n{counts:?}", direct.len(), shown.join("\n"));
    for service in ["arm", "entra", "graph", "blob", "kube"] {
        assert!(
            counts.get(&(service.to_string(), PROXY_SOURCE.to_string())).is_some_and(|n| *n > 0),
            "no {service} request went through the proxy: {counts:?}"
        );
    }
    let tunnels = proxy.tunnels();
    assert!(!tunnels.is_empty(), "the proxy opened no tunnel");
    println!(
        "through the proxy: {} requests in {} tunnels ({tunnels:?}); kubectl, direct to loopback: {kubectl}; by service and peer: {counts:?}",
        requests.len() - kubectl,
        tunnels.values().sum::<usize>()
    );
    drop(rehearsed);

    // The same rehearsal with the sandbox in NO_PROXY: nothing through the proxy.
    let env = TestEnv::new();
    let quiet = Proxy::start(env.path());
    let rehearsed = rehearse(&env, &quiet, "intranet.example,127.0.0.1,localhost");
    let requests = rehearsal_requests(&rehearsed);
    assert!(requests.iter().all(|r| r["peer"] == "127.0.0.1"), "{:?}", by_service_and_peer(&requests));
    assert!(quiet.tunnels().is_empty(), "NO_PROXY hosts went through the proxy: {:?}", quiet.tunnels());
    println!("with the sandbox in NO_PROXY: {} requests, all direct", requests.len());
}
