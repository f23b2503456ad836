//! A real PostgreSQL server for the tests: Debian's `postgresql` package (installed by
//! `tests/install-tools.sh`), started in a temporary directory, listening on 127.0.0.1 only, at a
//! free port, and stopped when dropped. PostgreSQL refuses to run as root, so where the tests run
//! as root (CI does) the server runs as `nobody`. A missing server is an error that says how to
//! install it, never a skipped test.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The unprivileged account the server runs as when the tests run as root.
const NOBODY: u32 = 65534;
/// The server's superuser, and the user the tests connect as.
pub const USER: &str = "runbook";
/// How long a server may take to accept connections on a loaded machine.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// A running server; stopped (fast shutdown) and its directory removed when dropped.
pub struct PostgresServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    password: String,
    server: Child,
}

impl PostgresServer {
    /// Initialises a database cluster in a new temporary directory and starts its server.
    pub fn start() -> Result<PostgresServer, String> {
        let bin = bin_dir()?;
        let dir = tempfile::Builder::new().prefix("runbook-pg-").tempdir().map_err(|e| e.to_string())?;
        let password = format!("pw-{}", std::process::id());
        // SAFETY: `geteuid` only reads the process's credentials.
        let as_root = unsafe { libc::geteuid() } == 0;
        let password_file = dir.path().join("password");
        std::fs::File::create(&password_file)
            .and_then(|mut f| f.write_all(password.as_bytes()))
            .map_err(|e| format!("cannot write {}: {e}", password_file.display()))?;
        std::fs::create_dir(dir.path().join("socket")).map_err(|e| e.to_string())?;
        if as_root {
            for path in [dir.path(), &password_file, &dir.path().join("socket")] {
                std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY))
                    .map_err(|e| format!("cannot give {} to nobody: {e}", path.display()))?;
            }
        }
        std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;

        let data = dir.path().join("data");
        let mut initdb = command(&bin, "initdb", dir.path(), as_root);
        initdb
            .arg("--pgdata")
            .arg(&data)
            .args(["--username", USER, "--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C"])
            .arg("--pwfile")
            .arg(&password_file)
            // The cluster lives only as long as the test: its creation need not survive a crash.
            .arg("--no-sync");
        run(&mut initdb, "initdb")?;

        let port = free_port()?;
        let log = std::fs::File::create(dir.path().join("server.log")).map_err(|e| e.to_string())?;
        if as_root {
            std::os::unix::fs::chown(dir.path().join("server.log"), Some(NOBODY), Some(NOBODY))
                .map_err(|e| e.to_string())?;
        }
        let mut postgres = command(&bin, "postgres", dir.path(), as_root);
        postgres
            .arg("-D")
            .arg(&data)
            .args(["-c", "listen_addresses=127.0.0.1", "-p", &port.to_string(), "-k"])
            .arg(dir.path().join("socket"))
            .stdout(Stdio::null())
            .stderr(log);
        let server = postgres.spawn().map_err(|e| format!("cannot start {}: {e}", bin.join("postgres").display()))?;
        let mut started = PostgresServer { dir, bin, port, password, server };
        started.wait_until_ready()?;
        Ok(started)
    }

    /// `postgres://runbook:<password>@127.0.0.1:<port>/<database>`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{USER}:{}@127.0.0.1:{}/{database}", self.password, self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// The directory of the server's own programs (`psql`, `createdb`, …).
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// What the server has logged so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Creates the database `name`, owned by [`USER`].
    pub fn create_database(&self, name: &str) -> Result<(), String> {
        let mut createdb = Command::new(self.bin.join("createdb"));
        createdb.args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", USER, name]);
        createdb.env("PGPASSWORD", &self.password);
        run(&mut createdb, "createdb")
    }

    fn wait_until_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.server.try_wait() {
                return Err(format!(
                    "the PostgreSQL server exited ({status}) before accepting connections:\n{}",
                    self.log()
                ));
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(format!(
                    "the PostgreSQL server did not accept connections within {READY_WITHIN:?}:\n{}",
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        // SIGINT is PostgreSQL's fast shutdown: sessions are ended and the server exits cleanly.
        // SAFETY: `kill` touches no memory of this process; the pid is our own child's.
        unsafe { libc::kill(self.server.id() as libc::pid_t, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.server.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Debian installs the server's programs in `/usr/lib/postgresql/<major>/bin`, outside `PATH`;
/// `RUNBOOK_POSTGRES_BIN` names another directory. The newest major version is used.
fn bin_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("RUNBOOK_POSTGRES_BIN") {
        let dir = PathBuf::from(dir);
        return if dir.join("postgres").is_file() {
            Ok(dir)
        } else {
            Err(format!("RUNBOOK_POSTGRES_BIN={} has no `postgres` program", dir.display()))
        };
    }
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("postgres").is_file() && bin.join("initdb").is_file()).then_some((major, bin))
        })
        .collect();
    majors.sort();
    majors.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "no PostgreSQL server is installed (/usr/lib/postgresql/<version>/bin/postgres): run `bash tests/install-tools.sh`, which installs Debian's `postgresql` package, or set RUNBOOK_POSTGRES_BIN".to_string()
    })
}

fn command(bin: &Path, program: &str, dir: &Path, as_root: bool) -> Command {
    let mut command = Command::new(bin.join(program));
    command.current_dir(dir).env("LC_ALL", "C").env_remove("PGDATA");
    if as_root {
        // std drops the supplementary groups too when a process running as root sets a uid.
        command.uid(NOBODY).gid(NOBODY).env("HOME", dir);
    }
    command
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command.output().map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A port on 127.0.0.1 nothing listens on now (the server binds it a moment later).
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}
