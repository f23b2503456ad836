//! One journal, several operators: a run locks the cluster it acts on, not the whole journal.
//! Runs on two clusters go on at once on one chain; a second run on the same cluster is refused
//! naming its holder and the key; a runner killed with `kill -9` frees its cluster for `resume`;
//! values required from an earlier runbook come only from runs on the same cluster.
//!
//! The steps wait for the test to release them, so the runs overlap for certain (no race
//! against a fixed sleep on a loaded machine).

use std::process::Child;
use std::time::{Duration, Instant};

use crate::support::TestEnv;

/// A runbook on the cluster `cluster`: its step logs `started` in `log-<cluster>`, waits until
/// `release-<cluster>` exists, logs `done`; then a checkpoint publishes the cluster's name.
pub(crate) fn clustered_runbook(env: &TestEnv) -> String {
    env.write(
        "clustered.toml",
        r#"
[runbook]
name = "clustered"
[vars.cluster]
rule = "cluster_name"
[[steps]]
id = "held"
kind = "exec"
# A runner that wrongly got past the lock would wait here too: it fails instead of hanging.
timeout = "120s"
inputs.argv = ["{stepper}", "append", "{dir}/log-${vars.cluster}", "started", "await", "{dir}/release-${vars.cluster}", "append", "{dir}/log-${vars.cluster}", "done"]
[[steps]]
id = "handoff"
kind = "checkpoint"
after = ["held"]
inputs.values = { name = "${vars.cluster}" }
"#,
    )
    .display()
    .to_string()
}

fn release(env: &TestEnv, cluster: &str) {
    std::fs::write(env.path().join(format!("release-{cluster}")), "").expect("release the step");
}

/// Waits until `log-<cluster>` has `lines` lines: that runner is inside its step, holding its lock.
fn wait_until_logged(env: &TestEnv, runner: &mut Child, cluster: &str, lines: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while env.log(&format!("log-{cluster}")).len() < lines {
        assert!(runner.try_wait().expect("runner status").is_none(), "the runner on {cluster} ended before its step");
        assert!(Instant::now() < deadline, "the runner on {cluster} never started its step");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every event as (seq, run id, kind).
fn events(env: &TestEnv) -> Vec<(i64, String, String)> {
    let db = rusqlite::Connection::open(env.journal()).expect("open journal");
    let mut statement = db.prepare("SELECT seq, run_id, kind FROM events ORDER BY seq").expect("query");
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect()
}

/// The id of the run created with `cluster`.
fn run_on(env: &TestEnv, cluster: &str) -> String {
    let db = rusqlite::Connection::open(env.journal()).expect("open journal");
    db.query_row(
        "SELECT id FROM runs WHERE json_extract(vars, '$.cluster') = ?1 ORDER BY rowid DESC LIMIT 1",
        [cluster],
        |row| row.get(0),
    )
    .expect("a run on the cluster")
}

#[test]
fn two_clusters_run_at_once_on_one_chain_and_the_same_cluster_is_refused_naming_holder_and_key() {
    let env = TestEnv::new();
    let runbook = clustered_runbook(&env);
    let mut blue = env.command(&["run", &runbook, "--var", "cluster=blue"]).spawn().expect("run on blue");
    wait_until_logged(&env, &mut blue, "blue", 1);
    let mut green = env.command(&["run", &runbook, "--var", "cluster=green"]).spawn().expect("run on green");
    wait_until_logged(&env, &mut green, "green", 1);
    // Both are inside their steps at once.
    assert_eq!(env.log("log-blue"), ["started"]);

    let second = env.run(&["run", &runbook, "--var", "cluster=blue"]);
    assert_eq!(second.code, 2, "{}", second.all());
    assert!(second.stderr.contains("in use by run"), "{}", second.stderr);
    assert!(second.stderr.contains(&format!("pid {}", blue.id())), "names the pid: {}", second.stderr);
    assert!(second.stderr.contains("tester") && second.stderr.contains("testhost"), "{}", second.stderr);
    assert!(second.stderr.contains("/cluster=blue`"), "names the key: {}", second.stderr);
    // The key is the cluster, not the runbook: another runbook on blue waits too.
    let other = env.write(
        "other.toml",
        "[runbook]\nname = \"other\"\n[vars.name]\nrule = \"cluster_name\"\n[[steps]]\nid = \"a\"\nkind = \"exec\"\ninputs.argv = [\"true\"]\n",
    );
    let other = env.run(&["run", other.to_str().unwrap(), "--var", "name=blue"]);
    assert_eq!(other.code, 2, "{}", other.all());
    assert!(
        other.stderr.contains(&format!("pid {}", blue.id())) && other.stderr.contains("/cluster=blue`"),
        "{}",
        other.stderr
    );
    // The whole journal waits for every cluster.
    let whole = env.write(
        "whole.toml",
        "[runbook]\nname = \"whole\"\n[[steps]]\nid = \"a\"\nkind = \"exec\"\ninputs.argv = [\"true\"]\n",
    );
    let whole = env.run(&["run", whole.to_str().unwrap()]);
    assert_eq!(whole.code, 2, "{}", whole.all());
    assert!(whole.stderr.contains("in use by run") && whole.stderr.contains("/cluster="), "{}", whole.stderr);

    let blue_run = run_on(&env, "blue");
    let status = env.run(&["status", &blue_run]);
    assert!(status.stdout.contains(&format!("run {blue_run} of clustered (running)")), "{}", status.all());

    release(&env, "green");
    assert!(green.wait().expect("green finishes").success());
    release(&env, "blue");
    assert!(blue.wait().expect("blue finishes").success());
    assert_eq!(env.log("log-blue"), ["started", "done"]);
    assert_eq!(env.log("log-green"), ["started", "done"]);

    // One chain, one total order: green's run began and ended while blue's was under way.
    let events = events(&env);
    let green_run = run_on(&env, "green");
    let span = |run: &str| {
        let seqs: Vec<i64> = events.iter().filter(|(_, r, _)| r == run).map(|(s, ..)| *s).collect();
        (*seqs.first().expect("events"), *seqs.last().expect("events"))
    };
    let (blue_first, blue_last) = span(&blue_run);
    let (green_first, green_last) = span(&green_run);
    assert!(blue_first < green_first && green_last < blue_last, "interleaved: {events:?}");
    assert_eq!(events.iter().filter(|(_, _, k)| k == "run_created").count(), 2, "the refused runs created none");
    let verify = env.run(&["audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
}

#[test]
fn a_killed_runner_frees_its_cluster_and_resume_goes_on() {
    let env = TestEnv::new();
    let runbook = clustered_runbook(&env);
    let mut blue = env.command(&["run", &runbook, "--var", "cluster=blue"]).spawn().expect("run on blue");
    wait_until_logged(&env, &mut blue, "blue", 1);
    let blue_run = run_on(&env, "blue");
    // A run on another cluster is under way when blue's runner dies, and stays so.
    let mut green = env.command(&["run", &runbook, "--var", "cluster=green"]).spawn().expect("run on green");
    wait_until_logged(&env, &mut green, "green", 1);
    blue.kill().expect("SIGKILL"); // Child::kill sends SIGKILL on Unix
    blue.wait().expect("reaped");

    let status = env.run(&["status", &blue_run]);
    assert!(status.stdout.contains("(interrupted)"), "{}", status.all());
    let green_run = run_on(&env, "green");
    let status = env.run(&["status", &green_run]);
    assert!(status.stdout.contains("(running)"), "{}", status.all());
    let audit = env.run(&["audit", "--format", "markdown"]);
    let row = |run: &str| audit.stdout.lines().find(|l| l.starts_with(&format!("| {run} |"))).unwrap_or_default();
    assert!(row(&blue_run).contains("| interrupted |"), "{}", audit.all());
    assert!(row(&green_run).contains("| running |"), "{}", audit.all());
    let timeline = env.run(&["timeline", &blue_run, &green_run]);
    assert_eq!(timeline.code, 0, "{}", timeline.all());
    assert!(timeline.stdout.contains(&format!("run {green_run} (clustered) running")), "{}", timeline.stdout);
    assert!(timeline.stdout.contains(&format!("run {blue_run} (clustered) not finished")), "{}", timeline.stdout);

    // Without a run id, resume takes the latest run not running: blue's, not green's.
    release(&env, "blue");
    let resumed = env.run(&["resume", "--rerun-interrupted"]);
    assert_eq!(resumed.code, 0, "{}", resumed.all());
    assert!(resumed.all().contains(&blue_run), "{}", resumed.all());
    assert_eq!(env.log("log-blue").last().map(String::as_str), Some("done"));
    let status = env.run(&["status", &blue_run]);
    assert!(status.stdout.contains("(succeeded)"), "{}", status.all());

    release(&env, "green");
    assert!(green.wait().expect("green finishes").success());
    let verify = env.run(&["audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
}

#[test]
fn values_required_from_an_earlier_runbook_come_from_the_same_cluster() {
    let env = TestEnv::new();
    let runbook = clustered_runbook(&env);
    let later = later_runbook(&env);
    let later = later.as_str();
    release(&env, "blue");
    release(&env, "green");
    let blue = env.run(&["run", &runbook, "--var", "cluster=blue"]);
    assert_eq!(blue.code, 0, "{}", blue.all());

    let refused = env.run(&["run", later, "--var", "prefix=green"]);
    assert_eq!(refused.code, 2, "{}", refused.all());
    let blue_run = run_on(&env, "blue");
    assert!(
        refused.stderr.contains("only for another cluster")
            && refused.stderr.contains(&format!("`blue` (run {blue_run})")),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("cluster `green`"), "{}", refused.stderr);
    assert!(env.log("later").is_empty());

    let green = env.run(&["run", &runbook, "--var", "cluster=green"]);
    assert_eq!(green.code, 0, "{}", green.all());
    // Blue ran before green, and blue's value is still the one blue's runs take.
    let on_blue = env.run(&["run", later, "--var", "prefix=blue"]);
    assert_eq!(on_blue.code, 0, "{}", on_blue.all());
    assert_eq!(env.log("later"), ["blue"]);
    // Naming no cluster, with two published, would take whichever ran last: refused, naming
    // both and the variable to set.
    let unnamed = env.run(&["run", later, "--fresh"]);
    assert_eq!(unnamed.code, 2, "{}", unnamed.all());
    assert!(
        unnamed.stderr.contains("several clusters (`blue`, `green`)") && unnamed.stderr.contains("set `prefix`"),
        "{}",
        unnamed.stderr
    );
    assert_eq!(env.log("later"), ["blue"]);
}

/// `later`, which reads `clustered`'s checkpoint for the cluster its `prefix` names.
fn later_runbook(env: &TestEnv) -> String {
    env.write(
        "later.toml",
        r#"
[runbook]
name = "later"
[requires.earlier]
runbook = "clustered"
outputs = ["name"]
[vars.prefix]
rule = "cluster_name"
default = ""
[[steps]]
id = "use"
kind = "exec"
inputs.argv = ["{stepper}", "append", "{dir}/later", "${earlier.name}"]
"#,
    )
    .display()
    .to_string()
}

#[test]
fn a_hand_off_carries_its_cluster_and_the_importer_reads_each_clusters_own() {
    use crate::handoff::{Person, s};
    let alice = Person::new("alice", "alice-laptop");
    let bob = Person::new("bob", "bob-laptop");
    let runbook = clustered_runbook(&alice.env);
    clustered_runbook(&bob.env);
    release(&alice.env, "blue");
    release(&alice.env, "green");
    alice.ok(&["run", &runbook, "--var", "cluster=blue"]);
    alice.ok(&["run", &runbook, "--var", "cluster=green"]);
    let (alice_key, alice_pub) = alice.ssh_key("alice");
    let (bob_key, bob_pub) = bob.ssh_key("bob");
    let file = |name: &str| alice.env.path().join(format!("{name}.handoff"));
    let export = |cluster: Option<&str>, out: &std::path::Path| {
        let mut args = vec!["export", "clustered", "--to", s(&bob_pub), "-o", s(out), "--sign-with", s(&alice_key)];
        if let Some(cluster) = cluster {
            args.extend(["--cluster", cluster]);
        }
        alice.run(&args)
    };

    // Both clusters published: the exporter must say whose values go.
    let ambiguous = export(None, &file("any"));
    assert_eq!(ambiguous.code, 2, "{}", ambiguous.all());
    assert!(
        ambiguous.stderr.contains("several clusters in this journal: `blue`, `green`")
            && ambiguous.stderr.contains("--cluster NAME"),
        "{}",
        ambiguous.stderr
    );
    let unknown = export(Some("red"), &file("red"));
    assert_eq!(unknown.code, 2, "{}", unknown.all());
    assert!(
        unknown.stderr.contains("for cluster `red`") && unknown.stderr.contains("it has for `blue`, `green`"),
        "{}",
        unknown.stderr
    );
    assert!(!file("any").exists() && !file("red").exists());
    for cluster in ["green", "blue"] {
        let exported = export(Some(cluster), &file(cluster));
        assert_eq!(exported.code, 0, "{}", exported.all());
        assert!(exported.stdout.contains(&format!("of clustered for cluster {cluster} to")), "{}", exported.stdout);
    }

    // Imported one after the other, the two clusters' values are no conflict: each stands
    // beside the other, as two clusters' runs do.
    for cluster in ["green", "blue"] {
        let imported = bob.run(&["import", s(&file(cluster)), "--identity", s(&bob_key), "--trust", s(&alice_pub)]);
        assert_eq!(imported.code, 0, "{}", imported.all());
    }
    let later = later_runbook(&bob.env);
    bob.ok(&["run", &later, "--var", "prefix=green"]);
    bob.ok(&["run", &later, "--var", "prefix=blue"]);
    assert_eq!(bob.env.log("later"), ["green", "blue"]);
    let unnamed = bob.run(&["run", &later, "--fresh"]);
    assert_eq!(unnamed.code, 2, "{}", unnamed.all());
    assert!(unnamed.stderr.contains("several clusters (`green`, `blue`)"), "{}", unnamed.stderr);
    let other = bob.run(&["run", &later, "--var", "prefix=red"]);
    assert_eq!(other.code, 2, "{}", other.all());
    assert!(other.stderr.contains("or import its hand-off for it"), "{}", other.stderr);
    assert_eq!(bob.ok(&["audit", "--verify"]).code, 0);
}
