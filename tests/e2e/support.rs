//! `TestEnv`: a temporary directory with its own journal, a fixed user and host, and helpers to
//! run the real `runbook` binary and read what it journaled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

/// What a command did, with stdout and stderr as text.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The last JSON object printed on stdout (with `--output json`).
    pub fn last_json(&self) -> serde_json::Value {
        let line = self
            .stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or_else(|| panic!("no JSON on stdout:\n{}", self.all()));
        serde_json::from_str(line).expect("valid JSON")
    }
}

/// The CLI under test: built by cargo for this package's tests, so it is never missing or stale.
pub fn runbook_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_runbook-under-test"))
}

pub fn stepper_bin() -> String {
    env!("CARGO_BIN_EXE_stepper").to_string()
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> Self {
        TestEnv { dir: tempfile::tempdir().expect("temp dir") }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn journal(&self) -> PathBuf {
        self.path().join("journal.db")
    }

    /// Writes a file in the test directory; `{stepper}` and `{dir}` in the text are replaced.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        let text = text.replace("{stepper}", &stepper_bin()).replace("{dir}", &self.path().display().to_string());
        std::fs::write(&path, text).expect("write");
        path
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(runbook_bin());
        command
            .args(["--journal", self.journal().to_str().expect("utf-8 path")])
            .args(args)
            .current_dir(self.path())
            .env("RUNBOOK_USER", "tester")
            .env("RUNBOOK_HOST", "testhost")
            .env("CI", "true")
            .env_remove("RUNBOOK_JOURNAL");
        command
    }

    /// Runs the binary with `args` only (no `--journal` of this environment).
    pub fn run_bare(&self, args: &[&str]) -> Run {
        let mut command = self.command(&[]);
        let mut bare = Command::new(runbook_bin());
        bare.args(args)
            .current_dir(self.path())
            .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env_remove("RUNBOOK_JOURNAL");
        let _ = &mut command;
        Run::from(bare.output().expect("runbook starts"))
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("runbook starts"))
    }

    /// Every journaled event as (kind, step, attempt, data), in order.
    pub fn events(&self) -> Vec<(String, Option<String>, Option<i64>, serde_json::Value)> {
        let db = rusqlite::Connection::open(self.journal()).expect("open journal");
        let mut statement = db.prepare("SELECT kind, step, attempt, data FROM events ORDER BY seq").expect("query");
        statement
            .query_map([], |row| {
                let data: String = row.get(3)?;
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, serde_json::from_str(&data).unwrap_or_default()))
            })
            .expect("rows")
            .map(|r| r.expect("row"))
            .collect()
    }

    /// Events of one kind for one step instance.
    pub fn step_events(&self, kind: &str, step: &str) -> Vec<serde_json::Value> {
        self.events()
            .into_iter()
            .filter(|(k, s, _, _)| k == kind && s.as_deref() == Some(step))
            .map(|(_, _, _, d)| d)
            .collect()
    }

    /// Lines of a side-effect log the test's steps append to.
    pub fn log(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.path().join(name)).unwrap_or_default().lines().map(String::from).collect()
    }

    /// All bytes of the journal, including its write-ahead log.
    pub fn journal_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for suffix in ["", "-wal", "-shm"] {
            let path = PathBuf::from(format!("{}{suffix}", self.journal().display()));
            if let Ok(b) = std::fs::read(path) {
                bytes.extend(b);
            }
        }
        bytes
    }
}

pub fn contains_bytes(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// A sandbox in its own process (`runbook sandbox up`), so runs against it can be killed and
/// resumed, and other programs (the Azure CLI) can use it through its `sandbox.env`.
pub struct SandboxProcess {
    child: Child,
    /// What `sandbox.env` exports.
    pub settings: BTreeMap<String, String>,
    pub dir: PathBuf,
}

impl SandboxProcess {
    pub fn start(dir: &Path) -> SandboxProcess {
        SandboxProcess::start_scaled(dir, "0.05")
    }

    /// With the reference latencies times `latency_scale`.
    pub fn start_scaled(dir: &Path, latency_scale: &str) -> SandboxProcess {
        let child = Command::new(runbook_bin())
            .args(["sandbox", "up", "--latency-scale", latency_scale, "--dir", dir.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sandbox starts");
        let env_file = dir.join("sandbox.env");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !env_file.exists() {
            assert!(Instant::now() < deadline, "the sandbox never wrote {}", env_file.display());
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(100));
        let settings = std::fs::read_to_string(&env_file)
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        SandboxProcess { child, settings, dir: dir.to_path_buf() }
    }

    /// Every request the sandbox answered so far (`GET /.sandbox/requests`).
    pub fn requests(&self) -> Vec<serde_json::Value> {
        let listed = self.get(runbook_sandbox::REQUESTS_PATH);
        listed["requests"].as_array().cloned().unwrap_or_default()
    }

    pub fn state(&self) -> serde_json::Value {
        self.get(runbook_sandbox::STATE_PATH)
    }

    fn get(&self, path: &str) -> serde_json::Value {
        let ca = reqwest::Certificate::from_pem(&std::fs::read(self.dir.join("sandbox-ca.pem")).unwrap()).unwrap();
        let client = reqwest::blocking::Client::builder().add_root_certificate(ca).build().unwrap();
        let url = format!("{}{}", self.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/'), path);
        client.get(url).send().unwrap().json().unwrap()
    }
}

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
