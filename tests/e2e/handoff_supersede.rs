//! A rotated secret travels: the exporter runs again with the new secret and exports again, and
//! the newer hand-off replaces the values of the one imported before, in the same journal, so
//! the next run of a later runbook runs again exactly the steps that read them. An older
//! hand-off is then refused (no rollback), another source's is refused, the journal's own values
//! are replaced only with `--replace`, and the audit says which import replaced which.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::handoff::{CONSUMER, Person, SECRET, SOURCE, Scene, s, scene};
use crate::support::contains_bytes;

const ROTATED: &str = "Rotated-Secret-Token-2718";

/// How many times `step` has started in this person's journal.
fn starts(person: &Person, step: &str) -> usize {
    person.env.events().iter().filter(|(kind, s, _, _)| kind == "step_started" && s.as_deref() == Some(step)).count()
}

/// Alice exports her journal's checkpoints to Bob again, as `name`.
fn export(scene: &Scene, name: &str) -> PathBuf {
    let file = scene.alice.env.path().join(name);
    scene.alice.ok(&[
        "export",
        "handoff-source",
        "--to",
        s(&scene.bob_pub),
        "-o",
        s(&file),
        "--sign-with",
        s(&scene.alice_key),
    ]);
    file
}

fn run_id_of(import: &str) -> String {
    import.split("as run ").nth(1).unwrap().split_whitespace().next().unwrap().to_string()
}

#[test]
fn a_newer_hand_off_replaces_the_imported_values_reruns_their_readers_and_an_older_one_is_refused() {
    let scene = scene();
    let Scene { alice, bob, .. } = &scene;
    let mut printed = scene.printed.clone();
    // Two hand-offs of the same values: Bob takes the later one; the earlier stays unused.
    let earlier = scene.file.clone();
    let first = export(&scene, "first.handoff");
    let import = scene.import(&first, &scene.bob_key, &scene.alice_pub);
    assert_eq!(import.code, 0, "{}", import.all());
    let first_run = run_id_of(&import.stdout);
    let consumer = bob.env.write("consumer.toml", CONSUMER);
    printed.push_str(&bob.ok(&["run", s(&consumer)]).all());
    let (issuer_starts, creds_starts) = (starts(bob, "issuer"), starts(bob, "creds"));

    // The secret is rotated: Alice runs again with the new one, which rewrites the key file and
    // the checkpoint, and exports again.
    let source = alice.env.path().join("source.toml");
    printed.push_str(&alice.ok(&["run", s(&source), "--var", &format!("token={ROTATED}")]).all());
    let rotated = export(&scene, "rotated.handoff");

    // A tampered copy of the new file is refused as any altered file is, writing nothing.
    let text = std::fs::read_to_string(&rotated).unwrap();
    let tampered = alice.env.write("tampered.handoff", &text.replace("https://issuer.example/one", "https://evil"));
    scene.refused(&tampered, &scene.bob_key, &scene.alice_pub, "the file was altered after it was signed");

    // The new file replaces the values of the first import, in the same journal.
    let import = scene.import(&rotated, &scene.bob_key, &scene.alice_pub);
    assert_eq!(import.code, 0, "{}", import.all());
    printed.push_str(&import.all());
    let rotated_run = run_id_of(&import.stdout);
    let replaces = format!("replaces handoff.key_file, handoff.token of run {first_run} (the import of file sha256 ");
    assert!(import.stdout.contains(&replaces), "{}", import.stdout);

    // The new key file sits beside the old one under a name of its own, 0600; the old one is
    // still what the first import journaled.
    let old_key = bob.env.path().join("signer.private");
    assert!(std::fs::read_to_string(&old_key).unwrap().contains(SECRET));
    let new_key = std::fs::read_dir(bob.env.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("signer.") && name.ends_with(".private") && name != "signer.private"
        })
        .expect("the rotated key file is written under a name of its own");
    assert_eq!(std::fs::read(&new_key).unwrap(), std::fs::read(alice.env.path().join("signer.private")).unwrap());
    assert_eq!(std::fs::metadata(&new_key).unwrap().permissions().mode() & 0o777, 0o600);
    let got = bob.ok(&["get", "handoff-source.key_file", "--output", "json"]).last_json();
    assert_eq!(got["value"], new_key.display().to_string());
    assert_eq!(got["source"]["replaces"][0]["run_id"], first_run.as_str());

    // The later runbook runs again the step that reads the changed values, and only it.
    let rerun = bob.ok(&["run", s(&consumer)]);
    printed.push_str(&rerun.all());
    assert_eq!(starts(bob, "creds"), creds_starts + 1, "{}", rerun.all());
    assert_eq!(starts(bob, "issuer"), issuer_starts, "{}", rerun.all());
    let consumed = std::fs::read_to_string(bob.env.path().join("consumed.txt")).unwrap();
    assert_eq!(consumed, format!("{ROTATED} {}", new_key.display()));

    // The earlier hand-off, never imported, would bring the old secret back: refused, writing
    // nothing. The first one again is known as imported and changes nothing either.
    scene.refused(&earlier, &scene.bob_key, &scene.alice_pub, "importing it would roll the values back");
    let again = scene.import(&first, &scene.bob_key, &scene.alice_pub);
    assert!(again.stdout.contains("already imported"), "{}", again.all());
    assert_eq!(bob.ok(&["run", s(&consumer)]).code, 0);
    assert_eq!(starts(bob, "creds"), creds_starts + 1, "nothing changed, nothing runs again");

    // The audit says which import replaced which, and both journals verify with both links.
    let audit = bob.ok(&["audit"]);
    assert!(
        audit.stdout.contains(&format!("replaces handoff.key_file, handoff.token of run {first_run}")),
        "{}",
        audit.stdout
    );
    let json = bob.ok(&["audit", "--format", "json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json.stdout).unwrap();
    let rotation = rows.iter().find(|r| r["run"] == rotated_run.as_str() && r["event"] == "handoff_imported").unwrap();
    assert_eq!(rotation["data"]["replaces"][0]["run_id"], first_run.as_str(), "{rotation}");
    assert_eq!(rotation["data"]["replaces"][0]["values"], serde_json::json!(["key_file", "token"]), "{rotation}");
    printed.push_str(&audit.all());
    printed.push_str(&json.all());
    let (alice_journal, bob_journal) = (alice.env.journal(), bob.env.journal());
    let both = ["--journal", s(&alice_journal), "--journal", s(&bob_journal), "audit", "--verify"];
    let verify = bob.ok_bare(&both);
    assert_eq!(
        verify.stdout.matches("linked to journal 1, which holds the exporter's chain head").count(),
        2,
        "{}",
        verify.stdout
    );

    // No secret in plaintext, old or new: Bob's journal, anything printed.
    for secret in [SECRET, ROTATED] {
        assert!(!contains_bytes(&bob.env.journal_bytes(), secret), "a secret is in Bob's journal");
        assert!(!printed.contains(secret), "a secret was printed:\n{printed}");
    }
}

/// Carol's own journal ran the same runbook with another secret: Carol (whose directory holds
/// the files), a file of hers signed by Alice's key, and one signed by her own.
fn from_another_journal(scene: &Scene) -> (Person, PathBuf, PathBuf) {
    let carol = Person::new("carol", "carol-box");
    let source = carol.env.write("source.toml", SOURCE);
    carol.ok(&["run", s(&source), "--var", &format!("token={ROTATED}")]);
    let export = |key: &Path, name: &str| {
        let file = carol.env.path().join(name);
        carol.ok(&["export", "handoff-source", "--to", s(&scene.bob_pub), "-o", s(&file), "--sign-with", s(key)]);
        file
    };
    let (as_alice, as_carol) =
        (export(&scene.alice_key, "as-alice.handoff"), export(&scene.carol_key, "as-carol.handoff"));
    (carol, as_alice, as_carol)
}

#[test]
fn another_signer_or_journal_does_not_replace_and_local_values_need_replace() {
    let scene = scene();
    let Scene { bob, .. } = &scene;
    assert_eq!(scene.import(&scene.file, &scene.bob_key, &scene.alice_pub).code, 0);

    // Same signer, another journal; another signer (trusted too): both refused as a mix-up.
    let (_carol, as_alice, as_carol) = from_another_journal(&scene);
    scene.refused(&as_alice, &scene.bob_key, &scene.alice_pub, "exported from another journal than this one");
    let before = bob.listing();
    let trust_both = bob.run(&[
        "import",
        s(&as_carol),
        "--identity",
        s(&scene.bob_key),
        "--trust",
        s(&scene.alice_pub),
        "--trust",
        s(&scene.carol_pub),
        "--replace",
    ]);
    assert_eq!(trust_both.code, 2, "{}", trust_both.all());
    assert!(
        trust_both.stderr.contains("imported from another source: that hand-off was signed by"),
        "{}",
        trust_both.stderr
    );
    assert_eq!(bob.listing(), before);

    // Dave ran the source runbook himself: his own values are replaced only with --replace.
    let dave = Person::new("dave", "dave-box");
    let source = dave.env.write("handoff-source.toml", SOURCE);
    dave.ok(&["run", s(&source), "--var", &format!("token={ROTATED}")]);
    let import = |extra: &[&str]| {
        let mut args = vec!["import", s(&scene.file), "--identity", s(&scene.bob_key), "--trust", s(&scene.alice_pub)];
        args.extend_from_slice(extra);
        dave.run(&args)
    };
    let before = dave.listing();
    let refused = import(&[]);
    assert_eq!(refused.code, 2, "{}", refused.all());
    assert!(
        refused.stderr.contains("already holds other values for handoff.key_file, handoff.token"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("pass --replace"), "{}", refused.stderr);
    assert_eq!(dave.listing(), before);
    let replaced = import(&["--replace"]);
    assert_eq!(replaced.code, 0, "{}", replaced.all());
    assert!(replaced.stdout.contains("replaces handoff.key_file, handoff.token of local run "), "{}", replaced.stdout);
    assert!(replaced.stdout.contains("(--replace)"), "{}", replaced.stdout);
    let audit = dave.ok(&["audit"]);
    assert!(audit.stdout.contains("of local run ") && audit.stdout.contains("(--replace)"), "{}", audit.stdout);
    assert_eq!(dave.ok(&["audit", "--verify"]).code, 0);
}
