//! `runbook doctor`: programs on PATH with versions, and hypershift's flags read from its help.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::TestEnv;

/// A `hypershift` that knows `create cluster azure` with the flags in `known` only.
fn fake_hypershift(dir: &Path, known: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let flags: String = known.iter().map(|f| format!("      --{f} string   a flag\n")).collect();
    let script = format!(
        "#!/bin/sh\ncase \"$*\" in\n  version|--version) echo 'hypershift version 0.1.50-test' ;;\n  'create cluster azure --help') printf 'Flags:\\n{}  -h, --help   help\\n' ;;\n  *) echo \"unknown command $*\" >&2; exit 1 ;;\nesac\n",
        flags.replace('\n', "\\n")
    );
    let path = dir.join("hypershift");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

const RUNBOOK: &str = r#"
[runbook]
name = "needs-tools"
[[steps]]
id = "cluster"
kind = "exec"
inputs.argv = ["hypershift", "create", "cluster", "azure", "--name", "demo", "--pull-secret=ps.json", "--azure-creds", "c.json"]
[[steps]]
id = "nodes"
kind = "exec"
after = ["cluster"]
inputs.argv = ["kubectl", "get", "nodes"]
"#;

struct Report {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Report {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// `runbook doctor` with only `path` as PATH.
fn doctor(env: &TestEnv, path: &str) -> Report {
    let runbook = env.path().join("needs-tools.toml");
    let out = env.command(&["doctor", runbook.to_str().unwrap()]).env("PATH", path).output().unwrap();
    Report {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A directory holding a `kubectl` that prints a version.
fn fake_kubectl(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("kubectl");
    std::fs::write(&path, "#!/bin/sh\necho 'Client Version: v1.32.0'\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn doctor_passes_with_every_program_and_flag_and_names_what_is_missing() {
    let env = TestEnv::new();
    env.write("needs-tools.toml", RUNBOOK);
    let (good, kube) = (env.path().join("good"), env.path().join("kube"));
    fake_hypershift(&good, &["name", "pull-secret", "azure-creds"]);
    fake_kubectl(&kube);
    let path = format!("{}:{}", good.display(), kube.display());

    let ok = doctor(&env, &path);
    assert_eq!(ok.code, 0, "{}", ok.all());
    assert!(ok.stdout.contains("ok   program hypershift: hypershift version 0.1.50-test"), "{}", ok.stdout);
    assert!(ok.stdout.contains("ok   program kubectl: Client Version: v1.32.0"), "{}", ok.stdout);
    assert!(ok.stdout.contains("ok   hypershift create cluster azure flags: all 3 accepted"), "{}", ok.stdout);

    // No kubectl on PATH: the check names it.
    let without_kubectl = doctor(&env, good.to_str().unwrap());
    assert_ne!(without_kubectl.code, 0, "{}", without_kubectl.all());
    assert!(without_kubectl.stdout.contains("FAIL program kubectl: not found on PATH"), "{}", without_kubectl.stdout);
    assert!(without_kubectl.stdout.contains("hint: install `kubectl`"), "{}", without_kubectl.stdout);

    // A hypershift whose help lacks --azure-creds (renamed in a later release): named with its step.
    let old = env.path().join("old");
    fake_hypershift(&old, &["name", "pull-secret"]);
    let rejected = doctor(&env, &format!("{}:{}", old.display(), kube.display()));
    assert_ne!(rejected.code, 0, "{}", rejected.all());
    assert!(
        rejected
            .stdout
            .contains("FAIL hypershift create cluster azure flags: not accepted: --azure-creds (step cluster)"),
        "{}",
        rejected.stdout
    );
    assert!(!rejected.stdout.contains("--pull-secret (step"), "{}", rejected.stdout);
}
