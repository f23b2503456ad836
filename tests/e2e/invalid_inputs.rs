//! A corpus of broken runbooks and variable files: each must give the user-error exit code and a
//! problem at the right line, write nothing, never panic, and finish promptly (a runbook that is a
//! FIFO or /dev/zero must not block or exhaust memory).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Run, TestEnv};

/// Generous for what each case does (read, validate, report); a case that blocks on a FIFO or
/// reads an endless device never gets there.
const CASE_LIMIT: Duration = Duration::from_secs(2);

fn corpus(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("corpus {} is missing: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// `# expect: LINE text` lines at the top of a corpus file.
fn expectations(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("# expect: "))
        .map(|rest| {
            let (line, text) = rest.split_once(' ').unwrap_or((rest, ""));
            (line.parse().expect("expect line number"), text.trim().to_string())
        })
        .collect()
}

/// Runs the binary, failing the test when it does not finish within [`CASE_LIMIT`].
fn run_bounded(env: &TestEnv, args: &[&str]) -> Run {
    run_bounded_on(env, &env.journal(), args)
}

/// [`run_bounded`] on the journal at `journal`.
fn run_bounded_on(env: &TestEnv, journal: &Path, args: &[&str]) -> Run {
    let mut child = env
        .command_on(journal, args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runbook starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + CASE_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`runbook {}` did not finish within {CASE_LIMIT:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
    }
}

/// Everything under `dir`, for "nothing was written".
fn contents(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.is_dir() && !path.is_symlink() {
            found.extend(contents(&path));
        }
        found.push(path);
    }
    found.sort();
    found
}

/// A user error, printed, without a panic, leaving `env`'s directory (the working directory and
/// the journal's place) empty; returns the reported problems.
fn refused(env: &TestEnv, name: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = run_bounded(env, args);
    assert_eq!(out.code, 2, "{name}: user error exit code expected:\n{}", out.all());
    assert!(!out.stderr.contains("panicked"), "{name} panicked:\n{}", out.stderr);
    assert!(out.stderr.contains("error"), "{name}: an error is printed:\n{}", out.stderr);
    assert!(contents(env.path()).is_empty(), "{name}: files were written: {:?}", contents(env.path()));
    let json = out.last_json();
    json["problems"].as_array().unwrap_or_else(|| panic!("{name}: no problems list: {json}")).clone()
}

fn check(env: &TestEnv, file: &Path, args: &[&str]) {
    let name = file.file_name().unwrap().to_string_lossy();
    let problems = refused(env, &name, args);
    let expected = expectations(file);
    assert!(!expected.is_empty(), "{name}: the case says what it expects");
    for (line, text) in expected {
        let found = problems.iter().any(|p| {
            p["line"] == line
                && p["file"].as_str().unwrap().ends_with(&*name)
                && format!("{} {}", p["message"].as_str().unwrap(), p["hint"].as_str().unwrap_or(""))
                    .to_lowercase()
                    .contains(&text.to_lowercase())
                && p["column"].as_u64().unwrap() >= 1
        });
        assert!(found, "{name}: expected a problem at line {line} containing {text:?}, got {problems:#?}");
    }
}

#[test]
fn every_broken_runbook_is_a_user_error_at_the_right_line() {
    let files = corpus("invalid");
    assert!(files.len() >= 90, "the corpus has {} runbooks", files.len());
    for file in files {
        let env = TestEnv::new();
        let path = file.to_str().unwrap();
        check(&env, &file, &["run", path, "--output", "json"]);
        check(&env, &file, &["plan", path, "--output", "json"]);
    }
}

#[test]
fn every_broken_vars_file_is_a_user_error_at_the_right_line() {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/vars-target.toml");
    for file in corpus("invalid-vars") {
        let env = TestEnv::new();
        check(&env, &file, &["run", target.to_str().unwrap(), "--vars", file.to_str().unwrap(), "--output", "json"]);
    }
}

/// Files that cannot live in the corpus directory: special files, other encodings, huge files.
/// Each is refused naming the file (and the line and column where there is text to point into).
#[test]
fn special_files_encodings_and_huge_inputs_are_refused_promptly() {
    let inputs = tempfile::tempdir().expect("temp dir");
    let at = |name: &str| inputs.path().join(name);
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/vars-target.toml");
    let target = target.to_str().unwrap();
    let fifo = |name: &str| {
        let path = at(name);
        let status = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
        path
    };
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(at(name), bytes).expect("write input");
        at(name)
    };
    let valid = "[runbook]\nname = \"ok\"\n[[steps]]\nid = \"a\"\nkind = \"exec\"\ninputs.argv = [\"true\"]\n";
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain(valid.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    let utf16_no_bom: Vec<u8> = valid.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let mut bad_utf8 = b"[runbook]\nname = \"ok\"\n# caf".to_vec();
    bad_utf8.extend([0xE9, b'\n']);
    let huge = {
        let mut text = valid.to_string();
        while text.len() < 5 * 1024 * 1024 {
            text.push_str("# padding padding padding padding padding padding padding padding padding\n");
        }
        text
    };
    // One argument over Linux's 128 KiB limit; and a line of 512 KiB (refused without quoting it).
    let long_arg = valid.replace("[\"true\"]", &format!("[\"echo\", \"{}\"]", "x".repeat(200 * 1024)));
    let long_line = format!("{valid}bogus = \"{}\"\n", "y".repeat(512 * 1024));
    let dev_zero_link = at("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &dev_zero_link).expect("symlink");
    std::fs::create_dir(at("directory.toml")).expect("mkdir");

    // (case, file the problem must name, line where there is text to point into, arguments)
    let runbook_cases: Vec<(&str, PathBuf, Option<usize>)> = vec![
        ("runbook is a FIFO", fifo("fifo.toml"), None),
        ("runbook is /dev/zero", PathBuf::from("/dev/zero"), None),
        ("runbook is a link to /dev/zero", dev_zero_link.clone(), None),
        ("runbook is a directory", at("directory.toml"), None),
        ("runbook is 5 MiB", write("huge.toml", huge.as_bytes()), None),
        ("runbook is UTF-16 with a BOM", write("utf16.toml", &utf16), Some(1)),
        ("runbook is UTF-16 without a BOM", write("utf16-no-bom.toml", &utf16_no_bom), Some(1)),
        ("runbook is not UTF-8", write("latin1.toml", &bad_utf8), Some(3)),
        ("an argument longer than a program can be given", write("long-arg.toml", long_arg.as_bytes()), Some(6)),
        ("a 512 KiB line", write("long-line.toml", long_line.as_bytes()), Some(7)),
    ];
    for (case, file, line) in &runbook_cases {
        for command in ["plan", "run"] {
            let env = TestEnv::new();
            let problems = refused(&env, case, &[command, file.to_str().unwrap(), "--output", "json"]);
            assert_points_at(case, &problems, file, *line);
        }
    }

    let token_fifo = fifo("token-fifo");
    let vars_cases: Vec<(&str, PathBuf, PathBuf, Option<usize>)> = vec![
        ("vars file is a FIFO", fifo("vars-fifo.toml"), at("vars-fifo.toml"), None),
        ("vars file is /dev/zero", PathBuf::from("/dev/zero"), PathBuf::from("/dev/zero"), None),
        ("vars file is 5 MiB", write("huge-vars.toml", huge.as_bytes()), at("huge-vars.toml"), None),
        ("vars file is UTF-16", write("vars16.toml", &utf16), at("vars16.toml"), Some(1)),
        (
            "vars file is not UTF-8",
            write("vars-latin1.toml", b"name = \"ok\"\n# caf\xE9\n"),
            at("vars-latin1.toml"),
            Some(2),
        ),
        (
            "a from_file value is a FIFO",
            write(
                "from-fifo.toml",
                format!("name = \"ok\"\ntoken = {{ from_file = \"{}\" }}\n", token_fifo.display()).as_bytes(),
            ),
            at("from-fifo.toml"),
            Some(2),
        ),
        (
            "a from_file value is /dev/zero",
            write("from-zero.toml", b"name = \"ok\"\ntoken = { from_file = \"/dev/zero\" }\n"),
            at("from-zero.toml"),
            Some(2),
        ),
    ];
    for (case, vars, named, line) in &vars_cases {
        let env = TestEnv::new();
        let problems = refused(&env, case, &["run", target, "--vars", vars.to_str().unwrap(), "--output", "json"]);
        assert_points_at(case, &problems, named, *line);
    }
}

fn assert_points_at(case: &str, problems: &[serde_json::Value], file: &Path, line: Option<usize>) {
    let shown = file.display().to_string();
    let found = problems.iter().any(|p| {
        p["file"].as_str() == Some(shown.as_str())
            && line.is_none_or(|line| p["line"] == line && p["column"].as_u64().is_some_and(|c| c >= 1))
    });
    assert!(found, "{case}: expected a problem naming {shown} (line {line:?}), got {problems:#?}");
}

#[test]
fn problems_are_reported_all_at_once_with_a_hint() {
    let env = TestEnv::new();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/invalid/27-several-problems.toml");
    let out = env.run(&["plan", file.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("27-several-problems.toml:8:"), "{}", out.stderr);
    assert!(out.stderr.contains("27-several-problems.toml:9:"), "{}", out.stderr);
    assert!(out.stderr.contains("hint:"), "{}", out.stderr);
    assert!(out.stderr.contains("problems found; nothing was run"), "{}", out.stderr);
}

#[test]
fn bad_command_line_values_are_user_errors() {
    let env = TestEnv::new();
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/vars-target.toml");
    let target = target.to_str().unwrap();
    for args in [
        vec!["run", target, "--var", "name"],
        vec!["run", target, "--var", "name=ok", "--var", "count=many"],
        vec!["run", target, "--var", "nme=ok"],
        vec!["run", target],
        vec!["run", "no-such-runbook"],
    ] {
        let out = env.run(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.all());
        assert!(!out.stderr.contains("panicked"));
    }
    assert!(!env.journal().exists());
}

/// A value the runbook gives literally is checked at plan; the same check runs on the value a
/// reference brings when the step runs, before it has any effect.
#[test]
fn paths_from_references_are_checked_when_the_step_runs() {
    let env = TestEnv::new();
    let runbook = env.write(
        "escape.toml",
        r#"
[runbook]
name = "escape"
[vars.target]
default = "../escaped.txt"
[[steps]]
id = "t"
kind = "template"
inputs.inline = "x"
inputs.path = "${vars.target}"
"#,
    );
    let workdir = env.path().join("work");
    let out = env.run(&["run", runbook.to_str().unwrap(), "--workdir", workdir.to_str().unwrap()]);
    assert_eq!(out.code, 3, "{}", out.all());
    assert!(out.all().contains("leaves the run's working directory"), "{}", out.all());
    assert!(!env.path().join("escaped.txt").exists(), "the file was written outside the working directory");
}

/// `import` reads a file someone else sent: a FIFO must not block it, a device must not feed it
/// forever, and neither may leave a journal behind.
#[test]
fn import_refuses_special_files_promptly() {
    let inputs = tempfile::tempdir().expect("temp dir");
    let fifo = inputs.path().join("handoff.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
    let key = inputs.path().join("trusted.pub");
    std::fs::write(&key, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOcaGCvbOUQ8L6GL4mLlOY0Ts2wU6FlYmhsw2L/tbXmH x\n")
        .unwrap();
    for (case, file) in [
        ("a FIFO", fifo.clone()),
        ("a device", PathBuf::from("/dev/zero")),
        ("a directory", inputs.path().to_path_buf()),
    ] {
        let env = TestEnv::new();
        let out = run_bounded(&env, &["import", file.to_str().unwrap(), "--trust", key.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{case}: {}", out.all());
        assert!(out.stderr.contains("not a regular file"), "{case}: {}", out.stderr);
        assert!(contents(env.path()).is_empty(), "{case}: files were written: {:?}", contents(env.path()));
    }
}

/// `--journal` naming something that cannot be a journal: a user error, at once, creating nothing.
#[test]
fn a_journal_path_that_is_not_a_file_is_a_user_error() {
    let inputs = tempfile::tempdir().expect("temp dir");
    let fifo = inputs.path().join("journal.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/vars-target.toml");
    for (case, journal) in [
        ("a FIFO", fifo.clone()),
        ("a device", PathBuf::from("/dev/zero")),
        ("a directory", inputs.path().to_path_buf()),
    ] {
        for args in
            [vec!["status"], vec!["audit", "--verify"], vec!["run", target.to_str().unwrap(), "--var", "name=ok"]]
        {
            let env = TestEnv::new();
            let out = run_bounded_on(&env, &journal, &args);
            assert_eq!(out.code, 2, "{case} {args:?}: {}", out.all());
            assert!(out.stderr.contains("not a journal file"), "{case} {args:?}: {}", out.stderr);
            assert!(contents(env.path()).is_empty(), "{case}: files were written: {:?}", contents(env.path()));
        }
    }
    assert!(!inputs.path().join("journal.fifo.key").exists() && !Path::new("/dev/zero.key").exists());
}
