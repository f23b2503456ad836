//! `runbook init RUNBOOK`: a vars file to start from. The values to give are `{ fill_in = … }`,
//! which `plan` refuses at their line until they are replaced; defaults are commented out and
//! valid as they stand; no secret value is ever written; an existing file is never replaced.

use crate::support::TestEnv;

#[test]
fn init_writes_what_to_fill_in_and_plan_names_each_until_it_is_filled() {
    let env = TestEnv::new();
    let out = env.run(&["init", "phase1-workload-identity"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let path = env.path().join("phase1-workload-identity.vars.toml");
    let written = std::fs::read_to_string(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
    assert!(written.contains("\nprefix = { fill_in = "), "{written}");
    assert!(written.contains("\noidc_storage_account = { fill_in = "), "{written}");
    assert!(written.contains("# type: string; rule: storage_account"), "{written}");
    assert!(written.contains("# type: string; one of: native, ccoctl"), "{written}");
    assert!(written.contains("# location = \"eastus\""), "{written}");

    // Never over an existing file.
    let again = env.run(&["init", "phase1-workload-identity"]);
    assert_eq!(again.code, 2, "{}", again.all());
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);

    // Untouched, plan names each value still to give, at its line and column, and nothing else.
    let plan = env.run(&["plan", "phase1-workload-identity", "--vars", path.to_str().unwrap()]);
    assert_eq!(plan.code, 2, "{}", plan.all());
    let line_of = |name: &str| written.lines().position(|l| l.starts_with(&format!("{name} = "))).unwrap() + 1;
    for name in ["dns_parent_rg", "dns_parent_zone", "oidc_storage_account", "prefix"] {
        let at =
            format!("phase1-workload-identity.vars.toml:{}:{}: still to be filled in", line_of(name), name.len() + 4);
        assert!(plan.stderr.contains(&at), "{at}\n{}", plan.stderr);
    }
    assert!(plan.stderr.contains("4 problems found"), "{}", plan.stderr);

    // Filled in, and with every default uncommented as written, it plans.
    let filled: String = written
        .lines()
        .map(|l| match l {
            l if l.starts_with("prefix = ") => "prefix = \"demo\"".to_string(),
            l if l.starts_with("oidc_storage_account = ") => "oidc_storage_account = \"demooidc\"".to_string(),
            l if l.starts_with("dns_parent_zone = ") => "dns_parent_zone = \"example.com\"".to_string(),
            l if l.starts_with("dns_parent_rg = ") => "dns_parent_rg = \"dns-parent\"".to_string(),
            l if is_commented_value(l) => l.trim_start_matches("# ").to_string(),
            l => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&path, filled).unwrap();
    let plan = env.run(&["plan", "phase1-workload-identity", "--vars", path.to_str().unwrap()]);
    assert_eq!(plan.code, 0, "{}", plan.all());
}

/// A commented-out default: `# name = value`, or a line of a list written over several lines.
fn is_commented_value(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("# ") else { return false };
    let assignment = rest.split_once(" = ").is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    assignment || rest.starts_with("  {") || rest == "]"
}

#[test]
fn init_never_writes_a_secret_and_works_for_every_bundled_runbook() {
    let env = TestEnv::new();
    let runbook = env.write(
        "secrets.toml",
        r#"
[runbook]
name = "secrets"
[vars.token]
secret = true
default = "hunter2-default"
[vars.password]
secret = true
description = "The admin password"
[[steps]]
id = "one"
kind = "checkpoint"
inputs.values = { a = "${vars.token}", b = "${vars.password}" }
"#,
    );
    let out = env.run(&["init", runbook.to_str().unwrap(), "secrets.vars.toml"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let written = std::fs::read_to_string(env.path().join("secrets.vars.toml")).unwrap();
    assert!(!written.contains("hunter2"), "{written}");
    assert!(written.contains("# token = { from_env = \"RUNBOOK_VAR_TOKEN\" }"), "{written}");
    assert!(written.contains("password = { fill_in = \"The admin password (a secret"), "{written}");

    let list = env.run(&["list", "--output", "json"]);
    for bundled in list.last_json()["runbooks"].as_array().unwrap() {
        let name = bundled["name"].as_str().unwrap();
        let file = format!("{name}.vars.toml");
        let out = env.run(&["init", name, &file]);
        assert_eq!(out.code, 0, "{name}: {}", out.all());
        let text = std::fs::read_to_string(env.path().join(&file)).unwrap();
        let uncommented: String = text
            .lines()
            .map(|l| if is_commented_value(l) { l.trim_start_matches("# ") } else { l })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(uncommented.parse::<toml::Table>().is_ok(), "{name}: the defaults are TOML as written\n{uncommented}");
    }
}
