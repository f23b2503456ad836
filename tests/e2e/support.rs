//! `TestEnv`: a temporary directory with its own journal, a fixed user and host, and helpers to
//! run the real `runbook` binary and read what it journaled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

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
    pub fn from(output: Output) -> Run {
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
        self.command_on(&self.journal(), args)
    }

    /// The binary with `args` on another journal (another person's), from this directory.
    pub fn command_on(&self, journal: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(runbook_bin());
        command
            .args(["--journal", journal.to_str().expect("utf-8 path")])
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

    /// The `steps_reused` entries naming one step instance (as `{step, kind, from_run,
    /// from_seq}`), each with the event it names (its kind, step and data). The event stores
    /// its steps grouped by the run and kind they were reused from, with their events' seqs in
    /// an array beside them.
    pub fn reuses(&self, step: &str) -> Vec<(serde_json::Value, String, Option<String>, serde_json::Value)> {
        let db = rusqlite::Connection::open(self.journal()).expect("open journal");
        let mut statement = db
            .prepare(
                "SELECT json_object('step', st.value, 'kind', json_extract(g.value, '$.kind'), \
                        'from_run', json_extract(g.value, '$.from_run'), \
                        'from_seq', json_extract(g.value, '$.from_seqs[' || st.key || ']')), \
                        s.kind, s.step, s.data \
                 FROM events AS e, json_each(e.data, '$.reused') AS g, json_each(g.value, '$.steps') AS st \
                 JOIN events AS s ON s.seq = json_extract(g.value, '$.from_seqs[' || st.key || ']') \
                 WHERE e.kind = 'steps_reused' AND st.value = ?1 ORDER BY e.seq",
            )
            .expect("query");
        statement
            .query_map([step], |row| {
                let entry: String = row.get(0)?;
                let data: String = row.get(3)?;
                Ok((
                    serde_json::from_str(&entry).unwrap_or_default(),
                    row.get(1)?,
                    row.get(2)?,
                    serde_json::from_str(&data).unwrap_or_default(),
                ))
            })
            .expect("rows")
            .map(|r| r.expect("row"))
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
    /// The serving process's id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` for the process to end by itself; its exit status, or None.
    pub fn wait_for_exit(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        None
    }

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
            .filter_map(|l| l.strip_prefix("export ")?.split_once('=').map(|(k, v)| (k.to_string(), shell_word(v))))
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

    /// From now on the request `rule` picks fails (`POST /.sandbox/faults`, see the sandbox's
    /// `faults` module): e.g. `{"service": "kube", "method": "POST", "path": "/api/v1/*",
    /// "ordinal": 1, "fault": "reset"}`.
    pub fn add_fault_rule(&self, rule: serde_json::Value) {
        let url =
            format!("{}{}", self.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/'), runbook_sandbox::FAULTS_PATH);
        let answer = self.client().post(url).json(&rule).send().expect("the sandbox answers");
        assert_eq!(answer.status().as_u16(), 201, "{rule}: {}", answer.text().unwrap_or_default());
    }

    /// The fault rules, per service (`azure`, `kube`), with how many requests each matched and
    /// whether it fired.
    pub fn fault_rules(&self) -> serde_json::Value {
        self.get(runbook_sandbox::FAULTS_PATH)
    }

    /// `method url` outside the runbook, as the sandbox's own principal with a token for
    /// `scope`: the status and the JSON answer (null when there is none).
    pub fn call(
        &self,
        method: reqwest::Method,
        url: &str,
        scope: &str,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let s = &self.settings;
        let client = self.client();
        let token: serde_json::Value = client
            .post(format!("{}{}/oauth2/v2.0/token", s["RUNBOOK_AUTHORITY_HOST"], s["AZURE_TENANT_ID"]))
            .form(&[
                ("client_id", s["AZURE_CLIENT_ID"].as_str()),
                ("client_secret", s["AZURE_CLIENT_SECRET"].as_str()),
                ("grant_type", "client_credentials"),
                ("scope", scope),
            ])
            .send()
            .unwrap()
            .json()
            .unwrap();
        let mut request = client.request(method, url).bearer_auth(token["access_token"].as_str().unwrap());
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().unwrap_or(serde_json::Value::Null))
    }

    /// A client trusting the sandbox's CA, carrying its secret for the control pages.
    pub fn client(&self) -> reqwest::blocking::Client {
        sandbox_client(&self.settings)
    }

    fn get(&self, path: &str) -> serde_json::Value {
        let url = format!("{}{}", self.settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/'), path);
        self.client().get(url).send().unwrap().json().unwrap()
    }
}

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `sandbox.env` exports, as a map.
fn read_settings(env_file: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(env_file)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("export ")?.split_once('=').map(|(k, v)| (k.to_string(), shell_word(v))))
        .collect()
}

/// A rehearsal of the phases up to `phase` kept serving (`rehearse --phase N --serve`): its
/// sandbox, and the HyperShift administrator's journal and directory (where Phase 2 onwards ran),
/// so later runbooks run against it as processes of their own that can be killed and resumed.
pub struct Rehearsed {
    pub sandbox: SandboxProcess,
    /// The HyperShift administrator's journal and working directory.
    pub journal: PathBuf,
    pub dir: PathBuf,
    /// The stand-ins (`hypershift`, `ccoctl`) the rehearsal linked, first on the programs' PATH.
    bin: PathBuf,
    /// What the rehearsal was started with besides (a server journal's password file and state
    /// directory): every later command gets it too.
    envs: Vec<(String, std::ffi::OsString)>,
    /// How the test reads the journals when they are on a server.
    pub server: Option<ServerAccess>,
}

/// A server journal as the test reads it behind the runner's back: `psql` with the password.
pub struct ServerAccess {
    pub psql: PathBuf,
    pub password: String,
}

impl ServerAccess {
    /// One value per row of `sql` on the database of `url` (a journal's URL).
    pub fn rows(&self, url: &Path, sql: &str) -> Vec<String> {
        let out = Command::new(&self.psql)
            .arg(url)
            .args(["-v", "ON_ERROR_STOP=1", "-tA", "-c", sql])
            .env("PGPASSWORD", &self.password)
            .output()
            .expect("psql starts");
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
    }

    fn number(&self, url: &Path, sql: &str) -> i64 {
        self.rows(url, sql).first().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("a number from {sql}"))
    }
}

impl Rehearsed {
    /// With the reference latencies times `latency_scale`.
    pub fn start(env: &TestEnv, phase: u8, latency_scale: &str) -> Rehearsed {
        Rehearsed::start_on(env, phase, latency_scale, None, &[])
    }

    /// [`Rehearsed::start`] with both people's journals on a PostgreSQL server of the test's own
    /// (returned: it stops when dropped), read by the test with `psql`.
    pub fn start_on_server(
        env: &TestEnv,
        phase: u8,
        latency_scale: &str,
    ) -> (Rehearsed, runbook_test_postgres::PostgresServer) {
        use runbook_test_postgres::{PostgresServer, USER};
        use std::os::unix::fs::PermissionsExt;
        let server = PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
        server.create_database("team").unwrap_or_else(|e| panic!("{e}"));
        let passfile = env.path().join("pgpass");
        std::fs::write(&passfile, format!("127.0.0.1:{}:*:{USER}:{}\n", server.port(), server.password())).unwrap();
        std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
        let state = env.path().join("state");
        let url = format!("postgres://{USER}@127.0.0.1:{}/team?sslmode=disable", server.port());
        let envs = [("PGPASSFILE", passfile.as_os_str()), ("RUNBOOK_STATE_DIR", state.as_os_str())];
        let mut rehearsed = Rehearsed::start_on(env, phase, latency_scale, Some(&url), &envs);
        assert!(rehearsed.journal.to_string_lossy().starts_with("postgres://"), "{}", rehearsed.journal.display());
        rehearsed.server =
            Some(ServerAccess { psql: server.bin().join("psql"), password: server.password().to_string() });
        (rehearsed, server)
    }

    /// [`Rehearsed::start`] with the rehearsal's journal at `journal` (a server's URL: the
    /// second person's journal is then a database beside it) and `envs` set for the rehearsal.
    pub fn start_on(
        env: &TestEnv,
        phase: u8,
        latency_scale: &str,
        journal: Option<&str>,
        envs: &[(&str, &std::ffi::OsStr)],
    ) -> Rehearsed {
        let log_path = env.path().join("rehearse.log");
        let log = std::fs::File::create(&log_path).expect("log file");
        let phase = phase.to_string();
        let args =
            ["rehearse", "--phase", &phase, "--serve", "--output", "json", "--dir", "rehearsals", "--latency-scale"];
        let mut command = match journal {
            Some(journal) => env.command_on(Path::new(journal), &args),
            None => env.command(&args),
        };
        command.envs(envs.iter().copied());
        let mut child = command.arg(latency_scale).stdout(Stdio::piped()).stderr(log).spawn().expect("rehearse starts");
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().expect("piped")));
        let (mut result, mut serving) = (None, None);
        while serving.is_none() {
            let Some(Ok(line)) = lines.next() else { panic!("the rehearsal ended before serving:\n{}", log()) };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if value["serving"] == true {
                serving = Some(value);
            } else if value.get("runs").is_some() {
                result = Some(value);
            }
        }
        let (result, serving) = (result.expect("the rehearsal's result"), serving.expect("serving"));
        for run in result["runs"].as_array().expect("runs") {
            assert_eq!(run["status"], "succeeded", "{run}\n{}", log());
        }
        let env_file = PathBuf::from(serving["env_file"].as_str().expect("env_file"));
        let first_dir = env_file.parent().expect("the rehearsal's directory").to_path_buf();
        let to = &result["handoff"]["to"];
        let sandbox = SandboxProcess { child, settings: read_settings(&env_file), dir: first_dir.clone() };
        Rehearsed {
            sandbox,
            journal: PathBuf::from(to["journal"].as_str().expect("the second person's journal")),
            dir: PathBuf::from(to["dir"].as_str().expect("the second person's directory")),
            bin: first_dir.join("bin"),
            envs: envs.iter().map(|(k, v)| (k.to_string(), v.to_os_string())).collect(),
            server: None,
        }
    }

    /// The binary on the HyperShift administrator's journal, in their directory, pointed at the
    /// sandbox as the rehearsal points its own runs.
    pub fn command(&self, env: &TestEnv, args: &[&str]) -> Command {
        self.command_in(env, &self.journal, &self.dir, args)
    }

    /// [`Rehearsed::command`] on `journal`, in `dir`: another person's (the Azure administrator's
    /// journal is the rehearsal's first), or another cluster's directory.
    pub fn command_in(&self, env: &TestEnv, journal: &Path, dir: &Path, args: &[&str]) -> Command {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        let mut command = env.command_on(journal, args);
        command.current_dir(dir).envs(&self.sandbox.settings).env("PATH", path);
        command.envs(self.envs.iter().map(|(k, v)| (k, v)));
        command
    }

    /// kubectl against the management cluster (it must be installed).
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl").args(args).envs(&self.sandbox.settings).output().expect("kubectl runs")
    }

    fn query<T: rusqlite::types::FromSql>(&self, sql: &str, runbook: &str) -> Vec<T> {
        let db = rusqlite::Connection::open_with_flags(&self.journal, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open journal");
        let mut statement = db.prepare(sql).expect("query");
        statement.query_map([runbook], |row| row.get(0)).expect("rows").map(|r| r.expect("row")).collect()
    }

    /// The runs of `runbook` in the journal, oldest first.
    pub fn runs_of(&self, runbook: &str) -> Vec<String> {
        match &self.server {
            Some(server) => server
                .rows(&self.journal, &format!("SELECT id FROM runbook.runs WHERE runbook = '{runbook}' ORDER BY ord")),
            None => self.query("SELECT id FROM runs WHERE runbook = ?1 ORDER BY rowid", runbook),
        }
    }
}

/// A read-only view of a journal another process is writing, polled while it runs: what the
/// events after a given sequence number say about how far the run has got. A file is read with
/// SQLite; a server journal with `psql`, the same questions in its SQL.
enum JournalWatch<'a> {
    File(rusqlite::Connection),
    Server { access: &'a ServerAccess, url: &'a Path },
}

impl JournalWatch<'_> {
    fn open(rehearsed: &Rehearsed) -> JournalWatch<'_> {
        match &rehearsed.server {
            Some(access) => JournalWatch::Server { access, url: &rehearsed.journal },
            None => JournalWatch::File(
                rusqlite::Connection::open_with_flags(&rehearsed.journal, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                    .expect("open journal"),
            ),
        }
    }

    /// The sequence number of the latest event.
    fn last_seq(&self) -> i64 {
        match self {
            JournalWatch::File(db) => {
                db.query_row("SELECT coalesce(max(seq), 0) FROM events", [], |row| row.get(0)).expect("journal query")
            }
            JournalWatch::Server { access, url } => {
                access.number(url, "SELECT coalesce(max(seq), 0) FROM runbook.events")
            }
        }
    }

    /// Events of `kind` after `since`.
    fn count(&self, kind: &str, since: i64) -> i64 {
        match self {
            JournalWatch::File(db) => {
                let mut statement =
                    db.prepare_cached("SELECT count(*) FROM events WHERE kind = ?1 AND seq > ?2").expect("query");
                statement.query_row(rusqlite::params![kind, since], |row| row.get(0)).expect("journal query")
            }
            JournalWatch::Server { access, url } => access
                .number(url, &format!("SELECT count(*) FROM runbook.events WHERE kind = '{kind}' AND seq > {since}")),
        }
    }

    /// Steps that succeeded, or were passed over, after `since`: what no later attempt runs.
    fn settled(&self, since: i64) -> i64 {
        match self {
            JournalWatch::File(db) => db
                .query_row(
                    "SELECT count(DISTINCT step) FROM (SELECT step FROM events WHERE seq > ?1 AND (kind = 'step_skipped' \
                     OR (kind = 'step_finished' AND json_extract(data, '$.status') = 'succeeded')) \
                     UNION ALL SELECT st.value FROM events AS e, json_each(e.data, '$.reused') AS g, \
                     json_each(g.value, '$.steps') AS st WHERE e.seq > ?1 AND e.kind = 'steps_reused')",
                    [since],
                    |row| row.get(0),
                )
                .expect("journal query"),
            JournalWatch::Server { access, url } => access.number(
                url,
                &format!(
                    "SELECT count(DISTINCT step) FROM (SELECT step FROM runbook.events WHERE seq > {since} AND (kind = 'step_skipped' \
                     OR (kind = 'step_finished' AND data::jsonb ->> 'status' = 'succeeded')) \
                     UNION ALL SELECT st FROM runbook.events AS e, jsonb_array_elements(e.data::jsonb -> 'reused') AS g, \
                     jsonb_array_elements_text(g -> 'steps') AS st WHERE e.seq > {since} AND e.kind = 'steps_reused') AS settled"
                ),
            ),
        }
    }
}

/// What a runner's JSON events (`--output json`, one line per event, written as they happen)
/// say about its run so far: the journal commits a step's events when it ends, so only these
/// show which step is running now.
#[derive(Default)]
struct LiveRun {
    running: std::collections::BTreeSet<String>,
    /// Steps that succeeded or were passed over (reused ones included, on a resume).
    settled: std::collections::BTreeSet<String>,
    finished: bool,
    lines: Vec<String>,
}

impl LiveRun {
    /// Reads `stdout` on a thread of its own until the runner closes it.
    fn follow(stdout: std::process::ChildStdout) -> (Arc<Mutex<LiveRun>>, std::thread::JoinHandle<()>) {
        let live = Arc::new(Mutex::new(LiveRun::default()));
        let shared = live.clone();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
                let Ok(line) = line else { break };
                let mut live = shared.lock().expect("live run");
                if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) {
                    let step = event["step"].as_str().unwrap_or_default().to_string();
                    match event["event"].as_str().unwrap_or_default() {
                        "step_started" => {
                            live.running.insert(step);
                        }
                        "step_finished" => {
                            live.running.remove(&step);
                            if event["status"] == "succeeded" {
                                live.settled.insert(step);
                            }
                        }
                        "step_skipped" => {
                            live.settled.insert(step);
                        }
                        "steps_reused" => {
                            let steps = event["steps"].as_array().into_iter().flatten();
                            live.settled.extend(steps.filter_map(|s| s.as_str()).map(String::from));
                        }
                        "run_finished" => live.finished = true,
                        _ => {}
                    }
                }
                live.lines.push(line);
            }
        });
        (live, reader)
    }
}

/// Runs runbooks and kills them with SIGKILL (the runner alone, as `kill -9 PID` does) at
/// seeded moments chosen from the live run, each followed by `resume` until the run succeeds.
///
/// A runbook's kills are drawn up front as points of its progress, sorted: "once p of its N
/// steps are done (succeeded or passed over), d milliseconds later, inside whichever step then
/// runs", p at most N - 5, d up to `max_delay`. Progress is read from the journal while the run
/// goes, so every point is reached by some attempt; several kills may share one (each then cuts
/// a resumed run short). Should the run get past N - 5 steps done before d is up, the kill comes
/// at once, so there is always work left to cut. The kill always lands inside a running step:
/// the runner is stopped (SIGSTOP) the moment its events show one running, the journal is read
/// again to confirm the run has not finished and has steps left, and only then is it killed. A
/// kill that would come after the end fails the test; it is never counted. What runs is followed
/// on the runner's JSON events ([`LiveRun`]); what is done, on the journal.
pub struct Crasher {
    pub seed: u64,
    rng: rand::rngs::StdRng,
    max_delay_ms: u64,
    /// What each kill interrupted: every one landed while its run was unfinished.
    pub kills: Vec<String>,
    /// Every ARM id present right after one of the kills: what existed at some moment.
    pub resources_seen: std::collections::BTreeSet<String>,
    attempts: usize,
}

/// How often the journal is read while waiting for a kill moment.
const POLL: Duration = Duration::from_millis(3);

impl Crasher {
    /// Seeded from `RUNBOOK_CRASH_SEED` when it is set (to reproduce a failure), else at random;
    /// the seed is printed, so a failing test's output names it.
    pub fn new(max_delay: Duration) -> Crasher {
        use rand::SeedableRng;
        let seed = std::env::var("RUNBOOK_CRASH_SEED")
            .ok()
            .map(|s| s.parse().expect("RUNBOOK_CRASH_SEED is a number"))
            .unwrap_or_else(rand::random);
        eprintln!("crash seed {seed} (RUNBOOK_CRASH_SEED={seed} reproduces these kill moments)");
        Crasher {
            seed,
            rng: rand::rngs::StdRng::seed_from_u64(seed),
            max_delay_ms: max_delay.as_millis() as u64,
            kills: Vec::new(),
            resources_seen: Default::default(),
            attempts: 0,
        }
    }

    /// Runs `runbook` (`run NAME ARGS`), killing it exactly `kills` times while it is unfinished,
    /// and resumes it until it succeeds; a manual gate it waits at is approved as `persona`.
    pub fn run(
        &mut self,
        env: &TestEnv,
        rehearsed: &Rehearsed,
        runbook: &str,
        args: &[&str],
        kills: usize,
        persona: &str,
    ) {
        use rand::Rng;
        let mut plan_args = vec!["--output", "json", "plan", runbook];
        plan_args.extend(args);
        let plan = Run::from(rehearsed.command(env, &plan_args).output().expect("plan"));
        assert_eq!(plan.code, 0, "{}", plan.all());
        let steps = plan.last_json()["steps"].as_array().expect("steps").len() as i64;
        let last_point = (steps - 5).max(0);
        let mut moments: Vec<(i64, u64)> = (0..kills)
            .map(|_| (self.rng.random_range(0..=last_point), self.rng.random_range(0..=self.max_delay_ms)))
            .collect();
        moments.sort();
        moments.reverse();
        let watch = JournalWatch::open(rehearsed);
        let earlier = rehearsed.runs_of(runbook);
        // Everything journaled from here on is this runbook's run (and its approvals).
        let start = watch.last_seq();
        loop {
            let run = rehearsed.runs_of(runbook).into_iter().find(|r| !earlier.contains(r));
            let mut command_args = match &run {
                Some(id) => vec!["resume", id.as_str()],
                None => vec!["run", runbook],
            };
            if run.is_none() {
                command_args.extend(args);
            }
            self.attempts += 1;
            let attempt = watch.last_seq();
            let log_path = env.path().join(format!("crash-{}.log", self.attempts));
            let log = std::fs::File::create(&log_path).expect("log file");
            let mut child = rehearsed
                .command(env, &["--output", "json"])
                .args(&command_args)
                .stdout(Stdio::piped())
                .stderr(log)
                .spawn()
                .expect("runbook starts");
            let (live, reader) = LiveRun::follow(child.stdout.take().expect("piped"));
            let log = || {
                let events = live.lock().expect("live run").lines.join("\n");
                format!("{events}\n{}", std::fs::read_to_string(&log_path).unwrap_or_default())
            };
            let seed = self.seed;
            let context = |kills: &[String]| format!("seed {seed}, kills so far {kills:#?}");
            if let Some(&(point, delay_ms)) = moments.last() {
                let mut reached: Option<Instant> = None;
                let stopped = loop {
                    if child.try_wait().expect("poll").is_some() {
                        break false;
                    }
                    let (settled, running) = {
                        let live = live.lock().expect("live run");
                        (live.settled.len() as i64, !live.running.is_empty() && !live.finished)
                    };
                    if reached.is_none() && settled >= point && running {
                        reached = Some(Instant::now());
                    }
                    let due = reached.is_some_and(|at| at.elapsed() >= Duration::from_millis(delay_ms));
                    if running && (due || settled >= last_point) {
                        // Frozen inside a step: it cannot finish between this look and the kill.
                        unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
                        break true;
                    }
                    std::thread::sleep(POLL);
                };
                if stopped {
                    let inside = live.lock().expect("live run").running.clone();
                    let (finished, settled) = (watch.count("run_finished", attempt) > 0, watch.settled(start));
                    child.kill().expect("SIGKILL");
                    child.wait().expect("reaped");
                    reader.join().expect("events read");
                    let kill = format!(
                        "{runbook} ({}): at {point} of {steps} steps done + {delay_ms} ms: inside {inside:?}, {settled} journaled done",
                        command_args.join(" ")
                    );
                    assert!(
                        !finished && settled < steps,
                        "kill {} came after the run's work was done: {kill} ({}):\n{}",
                        self.kills.len() + 1,
                        context(&self.kills),
                        log()
                    );
                    self.kills.push(kill);
                    moments.pop();
                    let state = rehearsed.sandbox.state();
                    let ids = state["resources"].as_array().into_iter().flatten().filter_map(|id| id.as_str());
                    self.resources_seen.extend(ids.map(str::to_string));
                    continue;
                }
            }
            let code = child.wait().expect("runbook ends").code();
            reader.join().expect("events read");
            match code {
                Some(0) if moments.is_empty() => return,
                Some(0) => panic!(
                    "{runbook} finished before {} more kills could land ({}):\n{}",
                    moments.len(),
                    context(&self.kills),
                    log()
                ),
                Some(5) => self.approve_waiting(env, rehearsed, run.as_deref(), runbook, persona),
                other => panic!("{} exited {other:?} ({}):\n{}", command_args.join(" "), context(&self.kills), log()),
            }
        }
    }

    /// Approves, as `persona`, every gate the latest run of `runbook` waits at.
    fn approve_waiting(&self, env: &TestEnv, rehearsed: &Rehearsed, run: Option<&str>, runbook: &str, persona: &str) {
        let run = run.map(str::to_string).or_else(|| rehearsed.runs_of(runbook).pop()).expect("a run waits");
        let status = Run::from(rehearsed.command(env, &["--output", "json", "status", &run]).output().expect("status"));
        let states = status.last_json();
        let waiting: Vec<(String, Option<String>)> = states["steps"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, state)| state["state"] == "awaiting_approval")
            .map(|(step, state)| (step.clone(), state["confirm"].as_str().map(str::to_string)))
            .collect();
        assert!(!waiting.is_empty(), "exit 5 without a gate waiting: {}", status.all());
        for (gate, confirm) in waiting {
            // A gate that deletes asks for the cluster's name, which the person types.
            let mut args = vec!["approve", &run, &gate];
            if let Some(name) = confirm.as_deref() {
                args.extend(["--confirm", name]);
            }
            let approved = rehearsed.command(env, &args).env("RUNBOOK_PERSONA", persona).output().expect("approve");
            assert!(approved.status.success(), "{}", String::from_utf8_lossy(&approved.stderr));
        }
    }
}

/// A value as `sandbox.env` writes it (single-quoted when it holds what a shell would act on),
/// as the shell reads it.
pub fn shell_word(written: &str) -> String {
    match written.strip_prefix('\'').and_then(|w| w.strip_suffix('\'')) {
        Some(quoted) => quoted.replace("'\\''", "'"),
        None => written.to_string(),
    }
}

/// The settings a sandbox's `sandbox.env` exports.
pub fn sandbox_settings(env_file: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(env_file)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("export ")?.split_once('=').map(|(k, v)| (k.to_string(), shell_word(v))))
        .collect()
}

/// A client trusting the sandbox's CA (`RUNBOOK_CA_FILE` of its settings).
pub fn sandbox_client(settings: &BTreeMap<String, String>) -> reqwest::blocking::Client {
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&settings["RUNBOOK_CA_FILE"]).unwrap()).unwrap();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-runbook-sandbox-secret", settings["AZURE_CLIENT_SECRET"].parse().unwrap());
    reqwest::blocking::Client::builder().add_root_certificate(ca).default_headers(headers).build().unwrap()
}

/// `GET` one of the sandbox's own pages (`/.sandbox/requests`, `/.sandbox/state`).
pub fn sandbox_get(settings: &BTreeMap<String, String>, path: &str) -> serde_json::Value {
    let url = format!("{}{}", settings["RUNBOOK_ARM_ENDPOINT"].trim_end_matches('/'), path);
    sandbox_client(settings).get(url).send().unwrap().json().unwrap()
}

// The `hypershift` stand-in against `runbook sandbox up`, as its tests drive it.

pub const KUBECTL: &str = "/usr/bin/kubectl";

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A `hypershift` link to the binary in the test directory, run there with `settings`.
pub fn hypershift(dir: &Path, settings: &[(String, String)], args: &[&str]) -> Out {
    let link = dir.join("bin/hypershift");
    if !link.exists() {
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(runbook_bin(), &link).unwrap();
    }
    let mut command = Command::new(&link);
    command.args(args).current_dir(dir);
    for name in [
        "RUNBOOK_AZURE_CREDENTIAL",
        "RUNBOOK_ARM_ENDPOINT",
        "RUNBOOK_AUTHORITY_HOST",
        "RUNBOOK_GRAPH_ENDPOINT",
        "KUBECONFIG",
    ] {
        command.env_remove(name);
    }
    command.envs(settings.iter().map(|(k, v)| (k, v)));
    let out = command.output().expect("the hypershift link starts");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn settings(sandbox: &SandboxProcess) -> Vec<(String, String)> {
    sandbox.settings.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

pub fn kubectl(sandbox: &SandboxProcess, args: &[&str]) -> String {
    assert!(Path::new(KUBECTL).exists(), "kubectl 1.32 is required at {KUBECTL}");
    let out = Command::new(KUBECTL)
        .args(args)
        .env("KUBECONFIG", &sandbox.settings["KUBECONFIG"])
        .env("HOME", sandbox.dir.as_os_str())
        .output()
        .expect("kubectl runs");
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn object(sandbox: &SandboxProcess, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&kubectl(sandbox, &all)).expect("kubectl prints JSON")
}

/// Phase 1 against the sandbox, in `env`'s directory: workload identities, the OIDC issuer, the
/// External DNS principal and azure-credentials.json.
pub fn phase1(env: &TestEnv, sandbox: &SandboxProcess) {
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"demo\"\noidc_storage_account = \"demooidc\"\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nexternal_dns = true\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let out = env
        .command(&["--no-progress", "run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()])
        .envs(&sandbox.settings)
        .output()
        .unwrap();
    assert!(out.status.success(), "Phase 1: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(env.path().join("pull-secret.json"), "{\"auths\":{}}\n").unwrap();
}

pub fn create_cluster_args<'a>(issuer: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "create",
        "cluster",
        "azure",
        "--name",
        "demo-hc",
        "--namespace",
        "clusters",
        "--azure-creds",
        "azure-credentials.json",
        "--location",
        "eastus",
        "--node-pool-replicas",
        "2",
        "--base-domain",
        "example.com",
        "--pull-secret",
        "pull-secret.json",
        "--release-image",
        "quay.io/openshift-release-dev/ocp-release:4.21.0-x86_64",
        "--sa-token-issuer-private-key-path",
        "serviceaccount-signer.private",
        "--oidc-issuer-url",
        issuer,
        "--dns-zone-rg-name",
        "os4-common",
        "--assign-service-principal-roles",
        "--workload-identities-file",
        "./workload-identities.json",
        "--diagnostics-storage-account-type",
        "Managed",
    ];
    args.extend_from_slice(extra);
    args
}

pub fn issuer_url(env: &TestEnv) -> String {
    let out = env.run(&["get", "phase1-workload-identity.oidc_issuer_url"]);
    assert_eq!(out.code, 0, "{}", out.all());
    out.stdout.trim().to_string()
}

/// A sandbox with Phase 1 run against it from `env`'s directory: the set-up of the stand-in's
/// tests of `create cluster azure` and after.
pub struct Standin {
    pub env: TestEnv,
    pub sandbox: SandboxProcess,
    /// What the stand-in is run with: the sandbox's settings.
    pub settings: Vec<(String, String)>,
    /// The OIDC issuer Phase 1 published.
    pub issuer: String,
}

impl Standin {
    pub fn after_phase1() -> Standin {
        let env = TestEnv::new();
        let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
        let settings = settings(&sandbox);
        phase1(&env, &sandbox);
        let issuer = issuer_url(&env);
        Standin { env, sandbox, settings, issuer }
    }

    /// [`Standin::after_phase1`], and `hypershift install` done.
    pub fn installed() -> Standin {
        let standin = Standin::after_phase1();
        let install =
            hypershift(standin.env.path(), &standin.settings, &["install", "--pull-secret", "pull-secret.json"]);
        assert_eq!(install.code, 0, "{}{}", install.stdout, install.stderr);
        standin
    }
}
