//! A first attempt that failed halfway has a way out: `runbook teardown` deletes what the run
//! made, from the journal's record alone, behind an approval that lists every object and asks
//! for the cluster's name; what the run found in place (the parent DNS zone) stays.

use serde_json::{Value, json};

use crate::support::{Run, SandboxProcess, TestEnv};

/// The sandbox's resources and applications that belong to cluster `prefix`.
fn of_prefix(state: &Value, prefix: &str, storage: &str) -> Vec<String> {
    let mut found: Vec<String> = state["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|id| {
            let lower = id.to_ascii_lowercase();
            lower.contains(&format!("/{prefix}-"))
                || lower.contains(&format!("/{storage}"))
                || lower.ends_with("/os4-common")
        })
        .map(String::from)
        .collect();
    found.extend(
        state["applications"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["displayName"].as_str())
            .filter(|name| name.starts_with(&format!("{prefix}-")))
            .map(|name| format!("application {name}")),
    );
    found
}

/// The runs of `runbook` in the test's journal, oldest first.
fn runs_of(env: &TestEnv, runbook: &str) -> Vec<String> {
    let db = rusqlite::Connection::open(env.journal()).expect("open journal");
    let mut statement = db.prepare("SELECT id FROM runs WHERE runbook = ?1 ORDER BY rowid").expect("query");
    statement.query_map([runbook], |row| row.get(0)).expect("rows").map(|r| r.expect("row")).collect()
}

#[test]
fn a_phase_1_stopped_by_a_403_is_torn_down_from_the_journal_with_nothing_left() {
    let env = TestEnv::new();
    let sandbox = SandboxProcess::start(&env.path().join("sandbox"));
    let vars = env.write(
        "phase1.vars.toml",
        &format!(
            "prefix = \"tear\"\noidc_storage_account = \"tearoidc\"\nexternal_dns = true\ndns_parent_zone = \"example.com\"\ndns_parent_rg = \"dns-parent\"\nca_file = \"{}\"\n",
            sandbox.dir.join("sandbox-ca.pem").display()
        ),
    );
    let before = sandbox.state();
    // The first role assignment is refused, as a tenant's policy or a missing role would.
    sandbox.add_fault_rule(json!({
        "method": "PUT", "path": "*/providers/Microsoft.Authorization/roleAssignments/*", "fault": "forbidden",
    }));
    let run = |args: &[&str]| Run::from(env.command(args).envs(&sandbox.settings).output().unwrap());
    let phase1 = run(&["--no-progress", "run", "phase1-workload-identity", "--vars", vars.to_str().unwrap()]);
    assert_eq!(phase1.code, 3, "{}", phase1.all());
    assert!(phase1.stderr.contains("AuthorizationFailed"), "{}", phase1.stderr);
    let run_id = runs_of(&env, "phase1-workload-identity").pop().expect("a run");
    let made = of_prefix(&sandbox.state(), "tear", "tearoidc");
    assert!(made.iter().any(|id| id.contains("userAssignedIdentities")), "{made:#?}");
    assert!(made.iter().any(|id| id.contains("storageAccounts/tearoidc")), "{made:#?}");
    assert!(made.iter().any(|id| id.starts_with("application tear-hc-")), "{made:#?}");

    // The cleanup runbooks cannot help: Phase 1 published nothing.
    let cleanup = run(&["--no-progress", "plan", "cleanup-shared-resources", "--var", "prefix=tear"]);
    assert_ne!(cleanup.code, 0, "{}", cleanup.all());

    let teardown = run(&["--no-progress", "teardown", &run_id]);
    assert_eq!(teardown.code, 5, "it waits for approval:\n{}", teardown.all());
    assert!(teardown.stderr.contains("wrote teardown-tear.toml"), "{}", teardown.stderr);
    assert!(teardown.stderr.contains("storageAccounts/tearoidc"), "every object is listed:\n{}", teardown.stderr);
    assert!(
        !teardown.stderr.lines().any(|l| l.trim_end().ends_with("/dnszones/example.com")),
        "the parent zone is not the run's (its delegation record is):\n{}",
        teardown.stderr
    );
    let written = std::fs::read_to_string(env.path().join("teardown-tear.toml")).unwrap();
    let waiting = env.step_events("gate_waiting", "approve");
    let prompt = waiting.last().unwrap()["prompt"].as_str().unwrap().to_string();
    for object in made.iter().filter(|o| !o.starts_with("application")) {
        // Federated credentials go with their identity, listed or not; everything else is named.
        if !object.contains("federatedIdentityCredentials") {
            assert!(prompt.contains(object.as_str()), "{object} is not in the approval:\n{prompt}");
        }
    }
    let teardown_run = runs_of(&env, "teardown-tear").pop().expect("the teardown's run");
    let wrong = run(&["approve", &teardown_run, "approve", "--confirm", "other"]);
    assert_eq!(wrong.code, 2, "{}", wrong.all());
    let approved = run(&["approve", &teardown_run, "approve", "--confirm", "tear"]);
    assert_eq!(approved.code, 0, "{}", approved.all());
    let resumed = run(&["--no-progress", "resume", &teardown_run]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());

    let left = of_prefix(&sandbox.state(), "tear", "tearoidc");
    assert!(left.is_empty(), "left behind:\n{left:#?}");
    // What was there before the run is all still there.
    let after = sandbox.state();
    for id in before["resources"].as_array().unwrap() {
        assert!(after["resources"].as_array().unwrap().contains(id), "{id} was deleted");
    }
    // A second teardown finds nothing, and a resume of the first writes nothing.
    let again = run(&["--no-progress", "teardown", &run_id]);
    assert_eq!(again.code, 0, "{}", again.all());
    assert!(again.stdout.contains("nothing to tear down"), "{}", again.all());
    let requests = sandbox.requests().len();
    let resumed = run(&["--no-progress", "resume", &teardown_run]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    let writes: Vec<Value> = sandbox
        .requests()
        .into_iter()
        .skip(requests)
        .filter(|r| r["method"] != "GET" && r["service"] != "entra" && r["path"] != "/v1.0/directoryObjects/getByIds")
        .collect();
    assert!(writes.is_empty(), "{writes:#?}");
    assert!(written.contains("kind = \"arm\""), "{written}");
}
