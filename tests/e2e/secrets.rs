use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

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

/// Every file under `dir` other than the journal: (path, bytes, mode).
fn written_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>, u32)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            found.extend(written_files(&path));
        } else if !path.file_name().unwrap().to_string_lossy().starts_with("journal.db") {
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            found.push((path.clone(), std::fs::read(&path).unwrap(), mode));
        }
    }
    found
}

/// The secret is nowhere but in files only their owner can read: not in what was printed, not in
/// the journal (with its write-ahead log), not in a file anyone else can read.
fn assert_kept_secret(env: &TestEnv, secrets: &[&str], printed: &str) {
    let journal = env.journal_bytes();
    for secret in secrets {
        assert!(!printed.contains(secret), "the secret {secret} was printed:\n{printed}");
        assert!(!contains_bytes(&journal, secret), "the secret {secret} is in the journal's bytes");
        for (path, bytes, mode) in written_files(env.path()) {
            if contains_bytes(&bytes, secret) {
                assert_eq!(mode, 0o600, "{} holds the secret {secret} with mode {mode:o}", path.display());
            }
        }
    }
}

fn inspect_everything(env: &TestEnv, extra: &[&[&str]]) -> String {
    let mut printed = String::new();
    let mut commands: Vec<&[&str]> = vec![
        &["status"],
        &["status", "--output", "json"],
        &["outputs"],
        &["outputs", "--output", "json"],
        &["audit"],
        &["audit", "--format", "json"],
        &["audit", "--format", "markdown"],
    ];
    commands.extend_from_slice(extra);
    for args in commands {
        printed.push_str(&env.run(args).all());
    }
    printed
}

const ITEM_A: &str = "Item-Secret-Alpha-5521";
const ITEM_B: &str = "Item-Secret-Bravo-9034";

#[test]
fn the_items_of_a_secret_list_stay_secret() {
    let env = TestEnv::new();
    let runbook = env.write(
        "list.toml",
        r#"
[runbook]
name = "secret-list"

[vars.tokens]
type = "list"
secret = true

[[steps]]
id = "each"
kind = "exec"
for_each = "${vars.tokens}"
inputs.argv = ["{stepper}", "env", "TOKEN"]
inputs.env = { TOKEN = "${item}" }
outputs.seen = { from = "stdout" }

[[steps]]
id = "file"
kind = "template"
for_each = "${vars.tokens}"
serialize = "one-file"
inputs.inline = "{{token}}"
inputs.path = "out/token.txt"
inputs.values = { token = "${item}" }
"#,
    );
    let var = format!("tokens={ITEM_A},{ITEM_B}");
    let mut printed = env.run(&["plan", runbook.to_str().unwrap(), "--var", &var]).all();
    printed.push_str(&env.run(&["plan", runbook.to_str().unwrap(), "--var", &var, "--output", "json"]).all());
    let run = env.run(&["run", runbook.to_str().unwrap(), "--var", &var]);
    printed.push_str(&run.all());
    assert_eq!(run.code, 0, "{}", run.all());
    printed.push_str(&inspect_everything(&env, &[&["get", "each[0].seen"], &["get", "each[1].seen"]]));
    // Instances are named by position, not by the secret items.
    assert!(printed.contains("each[0]") && printed.contains("each[1]"), "{printed}");
    assert_kept_secret(&env, &[ITEM_A, ITEM_B], &printed);
    let file = env.path().join("out/token.txt");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "a secret item's file");
}

const DERIVED: &str = "Derived-From-Secret-3141";

#[test]
fn what_is_derived_from_a_secret_is_secret_in_outputs_files_and_evidence() {
    let env = TestEnv::new();
    let runbook = env.write(
        "taint.toml",
        r#"
[runbook]
name = "taint"

[vars.token]
secret = true

[[steps]]
id = "use"
kind = "exec"
inputs.argv = ["{stepper}", "env", "TOKEN"]
inputs.env = { TOKEN = "${vars.token}" }
outputs.echoed = { from = "stdout" }

[[steps]]
id = "again"
kind = "exec"
inputs.argv = ["{stepper}", "env", "ECHOED"]
inputs.env = { ECHOED = "${steps.use.echoed}" }
outputs.twice = { from = "stdout" }

[[steps]]
id = "file"
kind = "template"
inputs.inline = "{{token}}"
inputs.path = "out/token.txt"
inputs.values = { token = "${steps.again.twice}" }
"#,
    );
    let var = format!("token={DERIVED}");
    let run = env.run(&["run", runbook.to_str().unwrap(), "--var", &var]);
    assert_eq!(run.code, 0, "{}", run.all());
    let mut printed = run.all();
    printed.push_str(&inspect_everything(&env, &[&["get", "use.echoed"], &["get", "again.twice"]]));
    let token = env.path().join("out/token.txt");
    assert_eq!(std::fs::read_to_string(&token).unwrap().trim(), DERIVED);
    assert_eq!(std::fs::metadata(&token).unwrap().permissions().mode() & 0o777, 0o600, "the derived secret's file");
    assert!(env.step_events("step_finished", "again")[0]["outputs"]["twice"]["$sealed"].is_string());
    assert_kept_secret(&env, &[DERIVED], &printed);
}

const GENERATED: &str = "Generated-Only-By-The-Program-2718";

#[test]
fn a_secret_output_is_scrubbed_from_its_own_evidence() {
    let env = TestEnv::new();
    let runbook = env.write(
        "evidence.toml",
        r#"
[runbook]
name = "evidence"

[[steps]]
id = "mint"
kind = "exec"
inputs.argv = ["{stepper}", "env", "MINTED"]
outputs.token = { from = "stdout", secret = true }
"#,
    );
    // The program learns the value from the runner's environment: it is in no input.
    let output = env.command(&["run", runbook.to_str().unwrap()]).env("MINTED", GENERATED).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let mut printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    printed.push_str(&inspect_everything(&env, &[]));
    let evidence = &env.step_events("step_finished", "mint")[0]["evidence"];
    // The stream a secret output is read from is not kept at all: the output may be all of it.
    assert!(evidence["stdout_tail"].as_str().unwrap().contains("not kept"), "{evidence}");
    assert_kept_secret(&env, &[GENERATED], &printed);
}

const PROMPTED: &str = "Prompted-Secret-1618";

#[test]
fn a_gate_prompt_never_shows_a_secret() {
    let env = TestEnv::new();
    let runbook = env.write(
        "gate.toml",
        r#"
[runbook]
name = "gate"

[vars.token]
secret = true

[[steps]]
id = "confirm"
kind = "gate"
inputs.approval = { prompt = "the service accepts the token ${vars.token}" }
"#,
    );
    let var = format!("token={PROMPTED}");
    let run = env.run(&["run", runbook.to_str().unwrap(), "--var", &var]);
    assert_eq!(run.code, 5, "{}", run.all());
    let mut printed = run.all();
    printed.push_str(&env.run(&["run", runbook.to_str().unwrap(), "--var", &var, "--output", "json"]).all());
    printed.push_str(&inspect_everything(&env, &[]));
    assert!(printed.contains("the service accepts the token <redacted>"), "{printed}");
    assert_kept_secret(&env, &[PROMPTED], &printed);
}

#[test]
fn plan_warns_about_a_secret_in_argv_and_suggests_env() {
    let env = TestEnv::new();
    let runbook = env.write(
        "argv.toml",
        r#"
[runbook]
name = "argv"

[vars.token]
secret = true

[[steps]]
id = "login"
kind = "exec"
inputs.argv = ["{stepper}", "print", "--password=${vars.token}"]
outputs.session = { from = "stdout" }

[[steps]]
id = "via-env"
kind = "exec"
inputs.argv = ["{stepper}", "env", "TOKEN"]
inputs.env = { TOKEN = "${vars.token}" }
outputs.derived = { from = "stdout" }

[[steps]]
id = "derived-in-argv"
kind = "exec"
inputs.argv = ["{stepper}", "print", "${steps.via-env.derived}"]
"#,
    );
    let out = env.run(&["plan", runbook.to_str().unwrap(), "--var", "token=x"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stderr.contains("argv.toml:11:"), "the warning points at the argv:\n{}", out.stderr);
    assert!(out.stderr.contains("argv.toml:24:"), "a value derived from a secret is one too:\n{}", out.stderr);
    assert!(out.stderr.contains("ps"), "{}", out.stderr);
    assert!(out.stderr.contains("inputs.env"), "it suggests env:\n{}", out.stderr);
    assert_eq!(out.stderr.matches("warning").count(), 2, "no warning for the secret given in env:\n{}", out.stderr);
}

/// A secret with characters JSON escapes, as a service would send it inside a JSON body.
const ANSWERED: &str = r#"Answered-"Secret"\Value-7919"#;

/// An HTTP server on loopback answering every request with `body`, until the test ends.
fn answering(body: String) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// The http kind keeps the body's tail as evidence: a secret output taken from the body is
/// scrubbed from it, in the body's own (JSON-escaped) spelling too.
#[test]
fn a_secret_output_of_an_http_check_is_scrubbed_from_its_body_tail() {
    let env = TestEnv::new();
    let url = answering(serde_json::json!({ "token": ANSWERED, "kind": "bearer" }).to_string());
    let runbook = env.write(
        "http.toml",
        &format!(
            r#"
[runbook]
name = "http-secret"

[[steps]]
id = "fetch"
kind = "http"
inputs.url = "{url}"
outputs.token = {{ json_pointer = "/token", secret = true }}

[[steps]]
id = "file"
kind = "template"
inputs.inline = "{{{{token}}}}"
inputs.path = "out/token.txt"
inputs.values = {{ token = "${{steps.fetch.token}}" }}
"#
        ),
    );
    let run = env.run(&["run", runbook.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.all());
    let mut printed = run.all();
    printed.push_str(&inspect_everything(&env, &[&["get", "fetch.token"]]));
    let evidence = &env.step_events("step_finished", "fetch")[0]["evidence"];
    let tail = evidence["body_tail"].as_str().unwrap();
    assert!(tail.contains("<redacted>") && tail.contains("bearer"), "{evidence}");
    let escaped = serde_json::to_string(ANSWERED).unwrap();
    let escaped = &escaped[1..escaped.len() - 1];
    assert_kept_secret(&env, &[ANSWERED, escaped], &printed);
    assert_eq!(std::fs::read_to_string(env.path().join("out/token.txt")).unwrap(), ANSWERED);
}

/// A secret with characters a URL percent-encodes and upper-case letters a host name loses.
const ENCODED: &str = "Echo Secret/Value+99 Mixed";

/// An HTTP server on loopback answering every request with 400 and the request itself as the
/// body, as a service does that echoes what it was sent in its error.
fn echoing() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let read = stream.read(&mut request).unwrap_or(0);
            let body = String::from_utf8_lossy(&request[..read]).into_owned();
            let _ = write!(
                stream,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// The request a step sends holds the secret in the spelling the URL gives it (percent-encoded);
/// an error that echoes the request, or names the URL, must not carry it out in that spelling.
#[test]
fn a_secret_in_a_url_is_scrubbed_in_its_encoded_spelling_too() {
    let env = TestEnv::new();
    let url = echoing();
    let runbook = env.write(
        "echo.toml",
        &format!(
            r#"
[runbook]
name = "echo-secret"

[vars.token]
secret = true

[[steps]]
id = "query"
kind = "http"
retry = {{ attempts = 1 }}
inputs.url = "{url}/check/${{vars.token}}?key=${{vars.token}}"
"#
        ),
    );
    let run = env.run(&["run", runbook.to_str().unwrap(), "--var", &format!("token={ENCODED}")]);
    assert_eq!(run.code, 4, "the status check fails: {}", run.all());
    let evidence = env.step_events("step_finished", "query")[0].to_string();
    assert!(
        evidence.contains("GET /check/<redacted>?key=<redacted>"),
        "the echoed request is kept, scrubbed: {evidence}"
    );
    let mut printed = run.all();
    printed
        .push_str(&inspect_everything(&env, &[&["timeline", "--format", "html"], &["timeline", "--format", "chrome"]]));
    let spellings = [
        ENCODED.to_string(),
        ENCODED.replace(' ', "%20"),
        ENCODED.replace(' ', "%20").replace('/', "%2F"),
        ENCODED.replace(' ', "+"),
        ENCODED.to_lowercase(),
    ];
    let spellings: Vec<&str> = spellings.iter().map(String::as_str).collect();
    assert_kept_secret(&env, &spellings, &printed);
    assert!(printed.contains("<redacted>"), "{printed}");
}

/// `run` checks the programs its steps start before anything runs; a program named by a secret
/// is reported missing without being named.
#[test]
fn the_checks_before_a_run_never_name_a_secret() {
    let env = TestEnv::new();
    let runbook = env.write(
        "program.toml",
        r#"
[runbook]
name = "secret-program"

[vars.token]
secret = true

[[steps]]
id = "p"
kind = "exec"
inputs.argv = ["${vars.token}", "--version"]
"#,
    );
    for args in [vec!["run", runbook.to_str().unwrap()], vec!["doctor", runbook.to_str().unwrap()]] {
        let mut args = args.clone();
        args.extend(["--var", "token=NoSuchProgram-Secret-0042"]);
        let out = env.run(&args);
        assert_eq!(out.code, 2, "{}", out.all());
        assert!(out.all().contains("<redacted>"), "{}", out.all());
        assert!(!out.all().contains("NoSuchProgram-Secret-0042"), "the secret was printed:\n{}", out.all());
    }
}

/// A vars file's bad value for a secret variable is reported at its place without quoting the
/// line that holds it.
#[test]
fn a_problem_with_a_secret_value_does_not_quote_it() {
    let env = TestEnv::new();
    let runbook = env.write(
        "checked.toml",
        r#"
[runbook]
name = "checked"

[vars.token]
secret = true
pattern = "^[a-z]+$"

[vars.count]
secret = true
type = "integer"

[[steps]]
id = "a"
kind = "exec"
inputs.argv = ["true"]
"#,
    );
    let vars = env.write("vars.toml", "token = \"Quoted-Secret-6120\"\ncount = \"Count-Secret-7731\"\n");
    for command in ["plan", "run"] {
        let out = env.run(&[command, runbook.to_str().unwrap(), "--vars", vars.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{}", out.all());
        assert!(out.stderr.contains("vars.toml:1:") && out.stderr.contains("vars.toml:2:"), "{}", out.stderr);
        for secret in ["Quoted-Secret-6120", "Count-Secret-7731"] {
            assert!(!out.all().contains(secret), "the secret {secret} was printed:\n{}", out.all());
        }
    }
}

/// A kubeconfig the size and shape of `hypershift create kubeconfig`'s (a client certificate and
/// its RSA key, about 6 KB).
fn real_size_kubeconfig() -> String {
    use base64::Engine;
    let cert = runbook_sandbox::kube::ClientCertificate::generate("system:admin", &["system:masters"]).unwrap();
    let ca = runbook_sandbox::kube::ClientCertificate::generate("root-ca", &[]).unwrap();
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://api.demo-hc.example.com:443\n  name: cluster\ncontexts:\n- context:\n    cluster: cluster\n    namespace: default\n    user: admin\n  name: admin\ncurrent-context: admin\nkind: Config\npreferences: {{}}\nusers:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(&ca.certificate_pem),
        b64(&cert.certificate_pem),
        b64(&cert.key_pem)
    )
}

/// Every 40-byte slice of `secret` found in `haystack`, as offsets into the secret.
fn slices_found(haystack: &[u8], secret: &str) -> Vec<usize> {
    const SLICE: usize = 40;
    let windows: std::collections::HashMap<&[u8], usize> =
        secret.as_bytes().windows(SLICE).enumerate().map(|(at, w)| (w, at)).collect();
    let mut found: Vec<usize> = haystack.windows(SLICE).filter_map(|w| windows.get(w).copied()).collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// A secret output read from a program's whole stdout (a real-size kubeconfig), the same
/// kubeconfig echoed by a program that got it as a secret, and a program that prints it and then
/// fails: no 40-character slice of it is anywhere in the journal, the terminal or the audit.
#[test]
fn a_real_size_kubeconfig_leaves_no_slice_of_itself_in_the_journal_the_terminal_or_the_audit() {
    let env = TestEnv::new();
    let kubeconfig = real_size_kubeconfig();
    assert!(kubeconfig.len() > 5000, "{}", kubeconfig.len());
    let file = env.write("admin.kubeconfig", &kubeconfig);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let runbook = env.write(
        "kubeconfig.toml",
        &format!(
            r#"
[runbook]
name = "kubeconfig"

[vars.given]
secret = true

[[steps]]
id = "printed"
kind = "exec"
inputs.argv = ["cat", "{file}"]
outputs.kubeconfig = {{ from = "stdout", secret = true }}

[[steps]]
id = "echoed"
kind = "exec"
inputs.argv = ["{{stepper}}", "env", "GIVEN"]
inputs.env = {{ GIVEN = "${{vars.given}}" }}

[[steps]]
id = "failed"
kind = "exec"
after = ["printed", "echoed"]
inputs.argv = ["cat", "{file}", "{missing}"]
outputs.kubeconfig = {{ from = "stdout", secret = true }}
"#,
            file = file.display(),
            missing = env.path().join("missing").display()
        ),
    );
    let vars = env.write("vars.toml", &format!("given = {{ from_file = \"{}\" }}\n", file.display()));
    let output = env.command(&["run", runbook.to_str().unwrap(), "--vars", vars.to_str().unwrap()]).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let mut printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    printed.push_str(&inspect_everything(&env, &[]));
    assert_eq!(slices_found(printed.as_bytes(), &kubeconfig), Vec::<usize>::new(), "printed:\n{printed}");
    assert_eq!(slices_found(&env.journal_bytes(), &kubeconfig), Vec::<usize>::new(), "in the journal's bytes");
    // The key alone, as base64 inside the kubeconfig: not a 40-byte piece of it either.
    let evidence = &env.step_events("step_finished", "echoed")[0]["evidence"];
    assert!(evidence["stdout_tail"].as_str().unwrap().contains("<redacted>"), "{evidence}");
}

/// `sandbox.env` is sourced by people: a directory named with what a shell acts on (`$(…)`,
/// backquotes, `;`, a space, a quote) is a value there, and nothing runs.
#[test]
fn sandbox_env_is_sourced_as_values_never_as_commands() {
    let env = TestEnv::new();
    let dir = env.path().join("a b;$(touch pwned1)`touch pwned2`'q");
    let _sandbox = crate::support::SandboxProcess::start(&dir);
    let out = std::process::Command::new("bash")
        .args(["-c", "source \"$1\" && printf %s \"$KUBECONFIG\"", "bash"])
        .arg(dir.join("sandbox.env"))
        .current_dir(env.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kubeconfig = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(kubeconfig.starts_with(dir.to_str().unwrap()), "{kubeconfig}");
    for pwned in ["pwned1", "pwned2"] {
        assert!(!env.path().join(pwned).exists(), "sourcing sandbox.env ran a command");
    }
}

/// A program sees the runner's own credentials only when its step names them in `inherit`:
/// neither the principal's secret, nor the journal's database password, nor a variable's value
/// given in the environment reaches any other.
#[test]
fn programs_do_not_inherit_the_runners_secrets_unless_a_step_names_them() {
    let env = TestEnv::new();
    let runbook = env.write(
        "env.toml",
        r#"
[runbook]
name = "env-demo"
[vars.token]
secret = true
[[steps]]
id = "plain"
kind = "exec"
inputs.argv = ["{stepper}", "env", "AZURE_CLIENT_SECRET", "env", "PGPASSWORD", "env", "RUNBOOK_VAR_TOKEN", "env", "AZURE_CLIENT_ID"]
outputs.seen = { from = "stdout" }
[[steps]]
id = "signs_in"
kind = "exec"
inputs.inherit = ["AZURE_CLIENT_SECRET"]
inputs.argv = ["{stepper}", "env", "AZURE_CLIENT_SECRET", "env", "PGPASSWORD"]
outputs.seen = { from = "stdout" }
"#,
    );
    let out = crate::support::Run::from(
        env.command(&["run", runbook.to_str().unwrap(), "--output", "json"])
            .env("AZURE_CLIENT_SECRET", "principal-secret-value")
            .env("AZURE_CLIENT_ID", "the-client-id")
            .env("PGPASSWORD", "database-password-value")
            .env("RUNBOOK_VAR_TOKEN", "token-value-from-env")
            .output()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.all());
    let plain = env.step_events("step_finished", "plain");
    assert_eq!(plain[0]["evidence"]["stdout_tail"], "\n\n\nthe-client-id\n", "{plain:?}");
    // The step that names the secret gets it, and only it.
    let inherited = env.step_events("step_finished", "signs_in");
    assert_eq!(inherited[0]["evidence"]["stdout_tail"], "principal-secret-value\n\n", "{inherited:?}");

    let bad = env.write(
        "bad.toml",
        r#"
[runbook]
name = "bad-inherit"
[[steps]]
id = "x"
kind = "exec"
inputs.inherit = ["HOME"]
inputs.argv = ["true"]
"#,
    );
    let refused = env.run(&["plan", bad.to_str().unwrap()]);
    assert_eq!(refused.code, 2, "{}", refused.all());
    assert!(refused.stderr.contains("bad.toml:7:"), "{}", refused.stderr);
    assert!(refused.stderr.contains("not one of the runner's secrets"), "{}", refused.stderr);
}
