//! The stand-ins act on the built-in sandbox only: a `ccoctl` link to the binary in an
//! environment that names real Azure (an `az login`, a service principal, or the sandbox
//! credential pointed elsewhere) is refused before any request.

use std::io::ErrorKind;
use std::net::{IpAddr, TcpListener, UdpSocket};
use std::process::Command;

use crate::support::{TestEnv, runbook_bin};

/// An address of this machine that is not loopback, found without sending anything (a UDP
/// "connect" only picks the route).
fn non_loopback_ip() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").expect("udp socket");
    socket.connect("192.0.2.1:9").expect("this test needs a network interface besides loopback");
    let ip = socket.local_addr().expect("local address").ip();
    assert!(!ip.is_loopback() && !ip.is_unspecified(), "this test needs a non-loopback address, found {ip}");
    ip
}

/// A stand-in for "Azure" on a non-loopback address of this machine, counting the connections.
struct Elsewhere(TcpListener);

impl Elsewhere {
    fn new() -> Self {
        let listener = TcpListener::bind((non_loopback_ip(), 0)).expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        Elsewhere(listener)
    }

    fn url(&self) -> String {
        format!("https://{}/", self.0.local_addr().expect("addr"))
    }

    fn connections(&self) -> usize {
        let mut count = 0;
        loop {
            match self.0.accept() {
                Ok(_) => count += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return count,
                Err(e) => panic!("accept: {e}"),
            }
        }
    }
}

fn ccoctl(env: &TestEnv, settings: &[(&str, String)], args: &[&str]) -> (i32, String) {
    let link = env.path().join("bin/ccoctl");
    if !link.exists() {
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(runbook_bin(), &link).unwrap();
    }
    let mut command = Command::new(&link);
    command.args(args).current_dir(env.path());
    for name in [
        "RUNBOOK_AZURE_CREDENTIAL",
        "RUNBOOK_ARM_ENDPOINT",
        "RUNBOOK_AUTHORITY_HOST",
        "RUNBOOK_GRAPH_ENDPOINT",
        "AZURE_CLIENT_SECRET",
    ] {
        command.env_remove(name);
    }
    command.envs(settings.iter().map(|(k, v)| (k, v)));
    let out = command.output().expect("the ccoctl link starts");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_ccoctl_stand_in_refuses_anything_but_the_sandbox_before_any_request() {
    let env = TestEnv::new();
    let azure = Elsewhere::new();
    std::fs::write(env.path().join("signer.public"), "not read before the fence").unwrap();
    let issuer = [
        "azure",
        "create-oidc-issuer",
        "--name",
        "fenced",
        "--region",
        "eastus",
        "--subscription-id",
        "00000000-0000-0000-0000-000000000001",
        "--tenant-id",
        "00000000-0000-0000-0000-000000000002",
        "--public-key-file",
        "signer.public",
        "--output-dir",
        "out",
    ];
    let principal = |credential: &str| {
        vec![
            ("RUNBOOK_AZURE_CREDENTIAL", credential.to_string()),
            ("AZURE_TENANT_ID", "00000000-0000-0000-0000-000000000002".to_string()),
            ("AZURE_CLIENT_ID", "00000000-0000-0000-0000-000000000003".to_string()),
            ("AZURE_CLIENT_SECRET", "not-a-secret".to_string()),
        ]
    };
    let loopback = "https://127.0.0.1:9/".to_string();
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        // An operator's `az login`: the default credential, real endpoints.
        ("az login", vec![("RUNBOOK_ARM_ENDPOINT", azure.url()), ("RUNBOOK_AUTHORITY_HOST", azure.url())]),
        ("a service principal", {
            let mut s = principal("client-secret");
            s.extend([("RUNBOOK_ARM_ENDPOINT", azure.url()), ("RUNBOOK_AUTHORITY_HOST", azure.url())]);
            s
        }),
        ("the sandbox credential aimed elsewhere", {
            let mut s = principal("sandbox");
            s.extend([("RUNBOOK_ARM_ENDPOINT", azure.url()), ("RUNBOOK_AUTHORITY_HOST", azure.url())]);
            s
        }),
        ("the sandbox credential with Graph elsewhere", {
            let mut s = principal("sandbox");
            s.extend([
                ("RUNBOOK_ARM_ENDPOINT", loopback.clone()),
                ("RUNBOOK_AUTHORITY_HOST", loopback.clone()),
                ("RUNBOOK_GRAPH_ENDPOINT", azure.url()),
            ]);
            s
        }),
    ];
    for (what, settings) in &cases {
        for args in [&issuer[..], &["azure", "create-key-pair", "--output-dir", "out"]] {
            let (code, stderr) = ccoctl(&env, settings, args);
            assert_eq!(code, 1, "{what}, {args:?}: {stderr}");
            assert!(stderr.contains("stand-in") && stderr.contains("sandbox"), "{what}: {stderr}");
            assert!(stderr.contains("Nothing was sent"), "{what}: {stderr}");
        }
    }
    assert_eq!(azure.connections(), 0, "no connection was attempted");
    assert!(!env.path().join("out").exists(), "nothing was written");
    // Flags are still checked as the real tool checks them (cobra-style usage errors).
    let (code, _) = ccoctl(&env, &cases[0].1, &["azure", "create-oidc-issuer", "--bogus"]);
    assert_ne!(code, 0);
}
