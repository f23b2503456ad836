//! The user's guide (docs/) checked against the product.
//!
//! `walkthrough`: every ```` ```console ```` block of the book's chapters, in the order of
//! docs/src/SUMMARY.md, run in one temporary directory standing for the reader's home
//! (`/home/you` in the guide), against the sandbox the guide starts with `runbook sandbox up`; what
//! each command prints is compared with what the guide shows after it. ```` ```LANG,file=NAME ````
//! blocks are written to NAME, ```` ```toml,fill=NAME ```` blocks replace the lines of NAME that set
//! the same keys (what the reader does in an editor). `links`: every relative link and `#anchor`
//! of the chapters resolves.
//!
//! A console block: `$ COMMAND` lines, each followed by what it prints (stdout and stderr
//! together). In what the guide prints, a line `...` stands for any number of lines, `[..]` for
//! any text within a line, and a last line `[exit N]` for the exit status (else it must be 0).
//! Both sides are normalized before they are compared: loopback ports, run ids, times, durations,
//! UUIDs, hashes, key fingerprints and keys. A run id the guide shows is bound to the one the
//! command printed, and replaced by it in later commands (`runbook approve RUN GATE`). A command
//! ending in ` &` starts in the background (`sandbox up`) and is compared once it has printed as
//! many lines as the guide shows; it is stopped when the test ends. `cd`, `export` and `source`
//! change the directory and environment of the commands after them.
//!
//! `<!-- guide-test: sh COMMAND -->` runs COMMAND without comparing (what the reader does by
//! hand: put a pull secret in place), `<!-- guide-test: env NAME=VALUE -->` sets a variable
//! (who is at the keyboard: `RUNBOOK_USER`, `RUNBOOK_HOST`), and `<!-- guide-test: postgres -->`
//! gives the reader the PostgreSQL server a page assumes: a real one (Debian's, started on
//! loopback), a database `team`, the role's password in `~/.pgpass`, and its port in `PGPORT`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;

/// The reader's home as the guide prints it.
const HOME: &str = "/home/you";

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src")
}

/// The chapters in the order SUMMARY.md lists them.
fn chapters() -> Vec<PathBuf> {
    let summary = std::fs::read_to_string(docs().join("SUMMARY.md")).expect("docs/src/SUMMARY.md");
    let link = Regex::new(r"\]\(([^)#]+\.md)\)").unwrap();
    link.captures_iter(&summary).map(|c| docs().join(&c[1])).collect()
}

#[derive(Debug)]
enum Block {
    Console { commands: Vec<(String, Vec<String>)>, line: usize },
    File { name: String, text: String, fill: bool },
    Sh(String),
    Env(String, String),
    Postgres,
}

fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if let Some(directive) = line.trim().strip_prefix("<!-- guide-test:").and_then(|l| l.strip_suffix("-->")) {
            let directive = directive.trim();
            if let Some(cmd) = directive.strip_prefix("sh ") {
                out.push(Block::Sh(cmd.to_string()));
            } else if let Some((k, v)) = directive.strip_prefix("env ").and_then(|kv| kv.split_once('=')) {
                out.push(Block::Env(k.trim().to_string(), v.trim().to_string()));
            } else if directive == "postgres" {
                out.push(Block::Postgres);
            } else {
                panic!("{}:{}: unknown guide-test directive {directive:?}", path.display(), n + 1);
            }
            continue;
        }
        let Some(info) = line.strip_prefix("```") else { continue };
        let info = info.trim().to_string();
        let mut body = Vec::new();
        for (_, l) in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            body.push(l.to_string());
        }
        if info == "console" {
            let mut commands: Vec<(String, Vec<String>)> = Vec::new();
            for l in body {
                if let Some(cmd) = l.strip_prefix("$ ") {
                    commands.push((cmd.to_string(), Vec::new()));
                } else {
                    let (_, expected) = commands
                        .last_mut()
                        .unwrap_or_else(|| panic!("{}:{}: output before any `$ ` command", path.display(), n + 1));
                    expected.push(l);
                }
            }
            out.push(Block::Console { commands, line: n + 1 });
        } else if let Some((_, attrs)) = info.split_once(',') {
            if let Some(name) = attrs.strip_prefix("file=") {
                out.push(Block::File { name: name.to_string(), text: body.join("\n") + "\n", fill: false });
            } else if let Some(name) = attrs.strip_prefix("fill=") {
                out.push(Block::File { name: name.to_string(), text: body.join("\n") + "\n", fill: true });
            }
        }
    }
    out
}

struct Normalizer {
    rules: Vec<(Regex, &'static str)>,
    run_id: Regex,
}

impl Normalizer {
    fn new() -> Normalizer {
        let rules = [
            (r"127\.0\.0\.1:\d+", "127.0.0.1:PORT"),
            (r"\d{8}T\d{6}Z-[0-9a-f]{6}", "RUN"),
            (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "TIME"),
            (r"\b\d+(\.\d+)? ?(ms|s|µs)\b", "DURATION"),
            (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UUID"),
            (r"SHA256:[A-Za-z0-9+/]{43}", "FINGERPRINT"),
            (r"AAAA[0-9A-Za-z+/]{20,}={0,2}", "KEY"),
            (r"\b[0-9a-f]{32,}\b", "HEX"),
        ];
        Normalizer {
            rules: rules.into_iter().map(|(r, to)| (Regex::new(r).unwrap(), to)).collect(),
            run_id: Regex::new(r"\d{8}T\d{6}Z-[0-9a-f]{6}").unwrap(),
        }
    }

    fn apply(&self, line: &str) -> String {
        let mut line = line.trim_end().to_string();
        for (re, to) in &self.rules {
            line = re.replace_all(&line, *to).into_owned();
        }
        line
    }

    fn run_ids<'a>(&self, line: &'a str) -> Vec<&'a str> {
        self.run_id.find_iter(line).map(|m| m.as_str()).collect()
    }
}

/// One expected line as a regex: `[..]` matches anything.
fn line_pattern(normalized: &str) -> Regex {
    let parts: Vec<String> = normalized.split("[..]").map(regex::escape).collect();
    Regex::new(&format!("^{}$", parts.join(".*"))).unwrap()
}

/// Matches `expected` (with `...` lines) against `actual`; the pairs of matched lines.
fn match_lines(expected: &[(String, Regex)], actual: &[String]) -> Option<Vec<(usize, usize)>> {
    fn go(e: usize, a: usize, exp: &[(String, Regex)], act: &[String], pairs: &mut Vec<(usize, usize)>) -> bool {
        if e == exp.len() {
            return a == act.len();
        }
        if exp[e].0 == "..." {
            for skip in a..=act.len() {
                if go(e + 1, skip, exp, act, pairs) {
                    return true;
                }
            }
            return false;
        }
        if a < act.len() && exp[e].1.is_match(&act[a]) {
            pairs.push((e, a));
            if go(e + 1, a + 1, exp, act, pairs) {
                return true;
            }
            pairs.pop();
        }
        false
    }
    let mut pairs = Vec::new();
    go(0, 0, expected, actual, &mut pairs).then_some(pairs)
}

struct Shell {
    home: PathBuf,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    background: Vec<Child>,
    /// The PostgreSQL server a page asked for, running until the walkthrough ends.
    postgres: Option<runbook_test_postgres::PostgresServer>,
    /// Run ids as the guide shows them → as this walkthrough made them.
    bound: HashMap<String, String>,
    norm: Normalizer,
}

impl Drop for Shell {
    fn drop(&mut self) {
        for child in &mut self.background {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Shell {
    fn new(home: &Path) -> Shell {
        let bin = home.join(".local/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_runbook-under-test"), bin.join("runbook")).unwrap();
        let mut env = BTreeMap::new();
        env.insert("PATH".into(), format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()));
        env.insert("HOME".into(), home.display().to_string());
        env.insert("CI".into(), "true".into());
        env.insert("NO_COLOR".into(), "1".into());
        env.insert("LANG".into(), "C.UTF-8".into());
        env.insert("RUNBOOK_USER".into(), "you".into());
        env.insert("RUNBOOK_HOST".into(), "laptop".into());
        Shell {
            home: home.to_path_buf(),
            cwd: home.to_path_buf(),
            env,
            background: Vec::new(),
            postgres: None,
            bound: HashMap::new(),
            norm: Normalizer::new(),
        }
    }

    /// A PostgreSQL server as the reader of the server journal's page has one: a database
    /// `team`, the password of the role `runbook` in `~/.pgpass` (0600), the port in `PGPORT`.
    fn start_postgres(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let server = runbook_test_postgres::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
        server.create_database("team").unwrap_or_else(|e| panic!("{e}"));
        let passfile = self.home.join(".pgpass");
        let line = format!("127.0.0.1:{}:*:{}:{}\n", server.port(), runbook_test_postgres::USER, server.password());
        std::fs::write(&passfile, line).unwrap();
        std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
        self.env.insert("PGPORT".into(), server.port().to_string());
        self.postgres = Some(server);
    }

    fn command(&self, script: &str) -> Command {
        let mut command = Command::new("/bin/bash");
        command.arg("-c").arg(script).current_dir(&self.cwd).env_clear().envs(&self.env).stdin(Stdio::null());
        command
    }

    /// Paths under the test's home as the guide prints them.
    fn printed(&self, text: &str) -> Vec<String> {
        let home = self.home.display().to_string();
        text.replace(&home, HOME).lines().map(|l| l.to_string()).collect()
    }

    fn substitute(&self, cmd: &str) -> String {
        let mut cmd = cmd.to_string();
        for (shown, made) in &self.bound {
            cmd = cmd.replace(shown, made);
        }
        cmd
    }

    fn check(&mut self, where_: &str, cmd: &str, expected: &[String], actual: &[String], code: i32) {
        let mut expected: Vec<String> = expected.to_vec();
        let mut want_code = 0;
        if let Some(last) = expected.last()
            && let Some(n) = last.strip_prefix("[exit ").and_then(|l| l.strip_suffix(']'))
        {
            want_code = n.parse().expect("[exit N]");
            expected.pop();
        }
        let patterns: Vec<(String, Regex)> = expected
            .iter()
            .map(|l| {
                let n = self.norm.apply(l);
                let re = line_pattern(&n);
                (n, re)
            })
            .collect();
        let normalized: Vec<String> = actual.iter().map(|l| self.norm.apply(l)).collect();
        let report = || {
            format!(
                "{where_}: `{cmd}` (exit {code}) printed:\n{}\n--- the guide shows:\n{}",
                actual.join("\n"),
                expected.join("\n")
            )
        };
        assert_eq!(code, want_code, "{}", report());
        let pairs = match_lines(&patterns, &normalized).unwrap_or_else(|| panic!("{}", report()));
        for (e, a) in pairs {
            for (shown, made) in self.norm.run_ids(&expected[e]).into_iter().zip(self.norm.run_ids(&actual[a])) {
                self.bound.insert(shown.to_string(), made.to_string());
            }
        }
    }

    fn run(&mut self, where_: &str, cmd: &str, expected: &[String]) {
        let cmd = self.substitute(cmd);
        if let Some(background) = cmd.strip_suffix(" &") {
            let log = self.home.join(format!(".background-{}.log", self.background.len()));
            let child =
                self.command(&format!("exec {background} >{} 2>&1", log.display())).spawn().expect("bash starts");
            self.background.push(child);
            let wanted = expected.len();
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut printed;
            loop {
                printed = self.printed(&std::fs::read_to_string(&log).unwrap_or_default());
                if printed.len() >= wanted || Instant::now() > deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            std::thread::sleep(Duration::from_millis(200));
            self.check(where_, &cmd, expected, &printed, 0);
            return;
        }
        // Every command may change the directory or the environment (`cd`, `export`, `source`):
        // both are read back after it for the commands that follow.
        let state = self.home.join(".shell-state");
        let script =
            format!("{{ {cmd} ; }} 2>&1; status=$?; pwd > {0}.pwd; env -0 > {0}.env; exit $status", state.display());
        let out = self.command(&script).output().expect("bash starts");
        let code = out.status.code().unwrap_or(-1);
        let printed = self.printed(&String::from_utf8_lossy(&out.stdout));
        self.check(where_, &cmd, expected, &printed, code);
        {
            let pwd = std::fs::read_to_string(state.with_extension("pwd")).expect("the shell's directory");
            self.cwd = PathBuf::from(pwd.trim_end());
            let env = std::fs::read(state.with_extension("env")).expect("the shell's environment");
            self.env = env
                .split(|b| *b == 0)
                .filter_map(|kv| std::str::from_utf8(kv).ok()?.split_once('='))
                .filter(|(k, _)| !matches!(*k, "PWD" | "OLDPWD" | "SHLVL" | "_"))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        }
    }
}

#[test]
fn walkthrough() {
    let home = tempfile::tempdir().expect("temp dir");
    let mut shell = Shell::new(home.path());
    for chapter in chapters() {
        let name = chapter.strip_prefix(docs()).unwrap_or(&chapter).display().to_string();
        for block in blocks(&chapter) {
            match block {
                Block::Console { commands, line } => {
                    for (cmd, expected) in commands {
                        shell.run(&format!("{name}:{line}"), &cmd, &expected);
                    }
                }
                Block::File { name: file, text, fill } => {
                    let path = shell.cwd.join(&file);
                    if fill {
                        let mut current = std::fs::read_to_string(&path)
                            .unwrap_or_else(|e| panic!("{name}: fill {}: {e}", path.display()));
                        for set in text.lines().filter(|l| l.contains('=') && !l.starts_with('#')) {
                            let key = set.split('=').next().unwrap().trim();
                            let prefix = format!("{key} =");
                            let lines: Vec<&str> = current.lines().collect();
                            assert!(
                                lines.iter().any(|l| l.starts_with(&prefix)),
                                "{name}: {file} has no line setting {key}"
                            );
                            current = lines
                                .iter()
                                .map(|l| if l.starts_with(&prefix) { set } else { l })
                                .collect::<Vec<_>>()
                                .join("\n")
                                + "\n";
                        }
                        std::fs::write(&path, current).unwrap();
                    } else {
                        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                        std::fs::write(&path, text).unwrap();
                    }
                }
                Block::Sh(cmd) => {
                    let out = shell.command(&cmd).output().expect("bash starts");
                    assert!(out.status.success(), "{name}: {cmd}: {}", String::from_utf8_lossy(&out.stderr));
                }
                Block::Env(k, v) => {
                    shell.env.insert(k, v);
                }
                Block::Postgres => shell.start_postgres(),
            }
        }
    }
}

/// Every relative link of the chapters (and of the README, the front page linking into them)
/// names a file, and every `#anchor` a heading of the file it points into.
#[test]
fn links() {
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut files = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"), docs().join("SUMMARY.md")];
    files.extend(chapters());
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let text = strip_code(&text);
        for target in link.captures_iter(&text).map(|c| c[1].to_string()) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let dest = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            if !dest.is_file() {
                broken.push(format!("{}: {target}: no file {}", file.display(), dest.display()));
                continue;
            }
            if !anchor.is_empty() && dest.extension().is_some_and(|e| e == "md") {
                let headings = anchors(&std::fs::read_to_string(&dest).unwrap());
                if !headings.iter().any(|h| h == anchor) {
                    broken.push(format!("{}: {target}: no heading #{anchor} (has {headings:?})", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The text outside fenced code blocks.
fn strip_code(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The anchors mdBook gives a file's headings: lower case, letters, digits, `-` and `_` kept,
/// spaces to `-`, the rest dropped; a repeated one gets `-1`, `-2`.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for line in strip_code(text).lines() {
        let Some(heading) = line.strip_prefix('#') else { continue };
        let heading = heading.trim_start_matches('#').trim();
        let mut id = String::new();
        for c in heading.chars() {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                id.extend(c.to_lowercase());
            } else if c == ' ' {
                id.push('-');
            }
        }
        let n = seen.entry(id.clone()).or_insert(0);
        out.push(if *n == 0 { id.clone() } else { format!("{id}-{n}") });
        *n += 1;
    }
    out
}

/// The comparison itself: `...` spans lines, `[..]` text within one, normalized values match
/// any of their kind, and anything else must be exactly as the guide shows it.
#[test]
fn comparison() {
    let norm = Normalizer::new();
    let check = |expected: &[&str], actual: &[&str]| {
        let patterns: Vec<(String, Regex)> = expected
            .iter()
            .map(|l| {
                let n = norm.apply(l);
                let re = line_pattern(&n);
                (n, re)
            })
            .collect();
        let actual: Vec<String> = actual.iter().map(|l| norm.apply(l)).collect();
        match_lines(&patterns, &actual).is_some()
    };
    assert!(check(&["a", "...", "z"], &["a", "b", "c", "z"]));
    assert!(check(&["a", "...", "z"], &["a", "z"]));
    assert!(!check(&["a", "z"], &["a", "b", "z"]));
    assert!(!check(&["a"], &["a", "b"]));
    assert!(check(&["path: [..] -> end"], &["path: x → y -> end"]));
    assert!(check(
        &["run 20261127T154454Z-fc2fa9 succeeded in 4.3s at https://127.0.0.1:36749/"],
        &["run 20270101T000000Z-abcdef succeeded in 12.0 s at https://127.0.0.1:5/"]
    ));
    assert!(!check(&["78 ran"], &["77 ran"]));
    assert_eq!(norm.run_ids("run 20261127T154454Z-fc2fa9 and 20261127T154455Z-000000").len(), 2);
}
