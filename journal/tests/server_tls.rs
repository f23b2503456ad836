//! A journal on a server elsewhere is reached over TLS, and its password never crosses a
//! connection that is not: a fake PostgreSQL server that declines TLS and asks for the password
//! in clear text receives nothing. The fake listens on loopback and the URL names another host
//! with `hostaddr=127.0.0.1`, as a server reached by name would be: the client judges by the
//! name, which is what its certificate is checked against.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

const PASSWORD: &str = "pg-secret-that-must-not-travel";

/// Answers every connection as a server without TLS that wants a clear-text password; returns
/// its port and everything clients sent it.
fn tls_stripping_server() -> (u16, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).ok();
                let mut buffer = [0u8; 4096];
                let mut asked = false;
                loop {
                    let n = match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    log.lock().unwrap().extend_from_slice(&buffer[..n]);
                    // SSLRequest: length 8, code 80877103. Decline it.
                    if n == 8 && buffer[4..8] == [0x04, 0xd2, 0x16, 0x2f] {
                        let _ = stream.write_all(b"N");
                        continue;
                    }
                    if !asked {
                        // AuthenticationCleartextPassword.
                        let _ = stream.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]);
                        asked = true;
                    }
                }
            });
        }
    });
    (port, received)
}

#[test]
fn a_server_that_declines_tls_and_asks_for_a_clear_text_password_receives_none() {
    let state = tempfile::tempdir().unwrap();
    // Set once for this test binary, which holds this test alone.
    unsafe {
        std::env::set_var("RUNBOOK_STATE_DIR", state.path());
        std::env::set_var("PGPASSWORD", PASSWORD);
        std::env::remove_var("PGPASSFILE");
        std::env::set_var("PGSSLROOTCERT", "/dev/null");
    }
    let (port, received) = tls_stripping_server();
    let url = format!("postgres://runbook@journal.db.example:{port}/team?hostaddr=127.0.0.1");
    let Err(error) = runbook_journal::Journal::open_existing(Path::new(&url)) else {
        panic!("the connection is refused")
    };
    let message = error.to_string();
    assert!(!message.contains(PASSWORD), "{message}");
    let sent = received.lock().unwrap().clone();
    assert!(!sent.windows(PASSWORD.len()).any(|w| w == PASSWORD.as_bytes()), "the password was sent");
    assert!(!sent.is_empty(), "the client never reached the fake server");

    // TLS switched off explicitly for such a server is refused before anything is sent.
    let before = received.lock().unwrap().len();
    let off = format!("postgres://runbook@journal.db.example:{port}/team?hostaddr=127.0.0.1&sslmode=disable");
    let Err(error) = runbook_journal::Journal::open_existing(Path::new(&off)) else { panic!("refused") };
    assert!(error.to_string().contains("sslmode=disable"), "{error}");
    assert_eq!(received.lock().unwrap().len(), before, "something was sent");

    // A password in the URL, however written, is never echoed.
    for url in [
        format!("postgres://runbook:{PASSWORD}@journal.db.example:{port}/team"),
        format!("postgres://runbook@journal.db.example:{port}/team?password={PASSWORD}"),
        format!("postgres://runbook:pg@{PASSWORD}@journal.db.example:{port}/team"),
        format!("postgres://runbook:{PASSWORD}@journal.db.example:notaport/team"),
    ] {
        let Err(error) = runbook_journal::Journal::open_existing(Path::new(&url)) else { panic!("refused") };
        assert!(!error.to_string().contains(PASSWORD), "{url}: {error}");
    }
}
