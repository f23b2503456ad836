//! A corpus of broken runbooks and variable files: each must give the user-error exit code and a
//! problem at the right line, write nothing, and never panic.

use std::path::{Path, PathBuf};

use crate::support::TestEnv;

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

fn check(env: &TestEnv, file: &Path, args: &[&str]) {
    let out = env.run(args);
    let name = file.file_name().unwrap().to_string_lossy();
    assert_eq!(out.code, 2, "{name}: user error exit code expected:\n{}", out.all());
    assert!(!out.stderr.contains("panicked"), "{name} panicked:\n{}", out.stderr);
    assert!(out.stderr.contains("error"), "{name}: an error is printed:\n{}", out.stderr);
    let json = out.last_json();
    let problems = json["problems"].as_array().unwrap_or_else(|| panic!("{name}: no problems list: {json}"));
    for (line, text) in expectations(file) {
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
    assert!(!env.journal().exists(), "{name}: the journal was created");
}

#[test]
fn every_broken_runbook_is_a_user_error_at_the_right_line() {
    let files = corpus("invalid");
    assert!(files.len() >= 20, "the corpus has {} runbooks", files.len());
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
