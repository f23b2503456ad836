use crate::support::TestEnv;

#[test]
fn the_checked_in_schema_is_current() {
    let env = TestEnv::new();
    let generated = env.run(&["schema"]);
    assert_eq!(generated.code, 0);
    let checked_in = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../schema/runbook.schema.json"))
        .expect("schema/runbook.schema.json");
    assert!(
        generated.stdout == checked_in,
        "schema/runbook.schema.json is stale: regenerate it with `cargo run -p runbook -- schema > schema/runbook.schema.json`"
    );
}

#[test]
fn bundled_runbooks_validate_and_graph() {
    let env = TestEnv::new();
    let list = env.run(&["list", "--output", "json"]);
    assert_eq!(list.code, 0, "{}", list.all());
    for runbook in list.last_json()["runbooks"].as_array().unwrap() {
        let name = runbook["name"].as_str().unwrap();
        for format in ["text", "mermaid", "dot"] {
            let graph = env.run(&["graph", name, "--format", format]);
            assert_eq!(graph.code, 0, "{name} {format}: {}", graph.all());
        }
        assert_eq!(env.run(&["show", name]).code, 0);
    }
}
