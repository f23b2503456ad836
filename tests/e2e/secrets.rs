use std::os::unix::fs::PermissionsExt;

use crate::support::{TestEnv, contains_bytes};

const SECRET: &str = "Sup3r-Secret-Value-4711";

#[test]
fn a_secret_never_reaches_the_journal_the_terminal_or_the_audit() {
    let env = TestEnv::new();
    let runbook = env.write(
        "secret.toml",
        r#"
[runbook]
name = "secret-demo"

[vars.token]
secret = true

[[steps]]
id = "use"
kind = "exec"
inputs.argv = ["{stepper}", "print", "token=${vars.token}", "env", "TOKEN"]
inputs.env = { TOKEN = "${vars.token}" }
outputs.echoed = { from = "stdout" }

[[steps]]
id = "file"
kind = "template"
inputs.inline = "{\"token\": \"{{token}}\"}"
inputs.path = "out/creds.json"
inputs.values = { token = "${vars.token}" }

[[steps]]
id = "fails"
kind = "exec"
after = ["use", "file"]
inputs.argv = ["{stepper}", "print", "${vars.token}", "fail", "7"]
"#,
    );
    let var = format!("token={SECRET}");
    let mut printed = String::new();
    let run = env.run(&["run", runbook.to_str().unwrap(), "--var", &var]);
    assert_eq!(run.code, 3, "{}", run.all());
    printed.push_str(&run.all());
    let json_run = env.run(&["resume", "--var", &var, "--output", "json"]);
    printed.push_str(&json_run.all());
    for args in [
        vec!["status"],
        vec!["outputs"],
        vec!["outputs", "--output", "json"],
        vec!["audit"],
        vec!["audit", "--format", "json"],
        vec!["audit", "--format", "markdown"],
        vec!["get", "use.echoed"],
        vec!["plan", runbook.to_str().unwrap(), "--var", &var],
    ] {
        let out = env.run(&args);
        printed.push_str(&out.all());
    }
    assert!(!printed.contains(SECRET), "the secret was printed:\n{printed}");
    assert!(printed.contains("<redacted>"), "redaction is visible where the secret would be");
    assert!(!contains_bytes(&env.journal_bytes(), SECRET), "the secret is in the journal's bytes");

    // The step itself did get the secret, and the file holding it is 0600.
    let creds = env.path().join("out/creds.json");
    assert!(std::fs::read_to_string(&creds).unwrap().contains(SECRET));
    assert_eq!(std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777, 0o600);
    // A secret-carrying output is sealed in the journal but usable on resume.
    let finished = env.step_events("step_finished", "use");
    assert!(finished[0]["outputs"]["echoed"]["$sealed"].is_string(), "{:?}", finished[0]);
}
