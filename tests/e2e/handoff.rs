//! Hand-off between two people, each with their own journal and directory: `export` signs the
//! file and encrypts its secrets to the recipient, `import` refuses anything altered, truncated,
//! for someone else, of an unknown version or from an untrusted signer (writing nothing), and a
//! later runbook in the second journal reads the values through `requires`.
//!
//! Keys are made and a file is signed by `ssh-keygen`, an implementation independent of the
//! product's.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{Run, TestEnv, contains_bytes};

pub(crate) const SECRET: &str = "Hand0ff-Secret-Token-5813";

/// One person: their own directory and journal, and their name on the journal's `who`.
pub(crate) struct Person {
    pub(crate) env: TestEnv,
    user: &'static str,
    host: &'static str,
}

impl Person {
    pub(crate) fn new(user: &'static str, host: &'static str) -> Person {
        Person { env: TestEnv::new(), user, host }
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.run_on(&self.env.journal(), args)
    }

    /// With another journal than this person's default one (a rehearsal's, or several for
    /// `audit`).
    pub(crate) fn run_on(&self, journal: &Path, args: &[&str]) -> Run {
        let mut all = vec!["--journal", s(journal)];
        all.extend_from_slice(args);
        self.bare(&all)
    }

    pub(crate) fn bare(&self, args: &[&str]) -> Run {
        let output = Command::new(crate::support::runbook_bin())
            .args(args)
            .current_dir(self.env.path())
            .env("CI", "true")
            .env_remove("RUNBOOK_JOURNAL")
            .env("RUNBOOK_USER", self.user)
            .env("RUNBOOK_HOST", self.host)
            .output()
            .expect("runbook starts");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub(crate) fn ok(&self, args: &[&str]) -> Run {
        let out = self.run(args);
        assert_eq!(out.code, 0, "runbook {args:?}:\n{}", out.all());
        out
    }

    pub(crate) fn ok_bare(&self, args: &[&str]) -> Run {
        let out = self.bare(args);
        assert_eq!(out.code, 0, "runbook {args:?}:\n{}", out.all());
        out
    }

    /// An ed25519 key pair made by ssh-keygen: (private key path, public key path).
    pub(crate) fn ssh_key(&self, name: &str) -> (PathBuf, PathBuf) {
        let private = self.env.path().join(name);
        let status = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
            .arg(&private)
            .status()
            .expect("ssh-keygen must be installed (openssh-client) for the hand-off tests");
        assert!(status.success());
        (private.clone(), PathBuf::from(format!("{}.pub", private.display())))
    }

    /// What the directory holds beside the journal (name and SHA-256 of each file), and the
    /// journal's events: a refusal must change neither. (SQLite may fold its WAL into the
    /// database file when a connection closes, so the journal is compared by its events.)
    pub(crate) fn listing(&self) -> (Vec<(String, String)>, usize) {
        let mut entries: Vec<(String, String)> = std::fs::read_dir(self.env.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file() && !p.file_name().unwrap().to_string_lossy().starts_with("journal.db"))
            .map(|p| {
                (p.file_name().unwrap().to_string_lossy().into_owned(), content_digest(&std::fs::read(&p).unwrap()))
            })
            .collect();
        entries.sort();
        let events = if self.env.journal().exists() { self.env.events().len() } else { 0 };
        (entries, events)
    }
}

fn content_digest(bytes: &[u8]) -> String {
    // Only to compare contents in a test; any stable digest would do.
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("{:016x}:{}", hasher.finish(), bytes.len())
}

pub(crate) fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

pub(crate) const SOURCE: &str = r#"
[runbook]
name = "handoff-source"
persona = "azure-admin"

[vars.token]
secret = true

[vars.issuer]
default = "https://issuer.example/one"

[[steps]]
id = "key"
kind = "template"
inputs.inline = "{\"token\": \"{{token}}\"}"
inputs.path = "signer.private"
inputs.values = { token = "${vars.token}" }

[[steps]]
id = "ids"
kind = "template"
inputs.inline = "{\"clientID\": \"{{id}}\"}"
inputs.path = "ids.json"
inputs.values = { id = "0000-1111" }

[[steps]]
id = "handoff"
kind = "checkpoint"
[steps.inputs.values]
issuer = "${vars.issuer}"
token = "${vars.token}"
[steps.inputs.files]
key_file = "${steps.key.path}"
ids_file = "${steps.ids.path}"
"#;

pub(crate) const CONSUMER: &str = r#"
[runbook]
name = "handoff-consumer"
persona = "hypershift-admin"

[requires.src]
runbook = "handoff-source"
outputs = ["issuer", "token", "key_file"]

[[steps]]
id = "issuer"
kind = "exec"
inputs.argv = ["{stepper}", "print", "${src.issuer}"]
outputs.issuer = { from = "stdout" }

[[steps]]
id = "creds"
kind = "template"
inputs.inline = "{{token}} {{key}}"
inputs.path = "consumed.txt"
inputs.values = { token = "${src.token}", key = "${src.key_file}" }
"#;

/// Alice runs the source runbook and exports to Bob; returns (alice, bob, file, keys).
pub(crate) struct Scene {
    pub(crate) alice: Person,
    pub(crate) bob: Person,
    pub(crate) alice_key: PathBuf,
    pub(crate) alice_pub: PathBuf,
    pub(crate) bob_key: PathBuf,
    pub(crate) bob_pub: PathBuf,
    pub(crate) carol_key: PathBuf,
    pub(crate) carol_pub: PathBuf,
    pub(crate) file: PathBuf,
    pub(crate) printed: String,
}

pub(crate) fn scene() -> Scene {
    let alice = Person::new("alice", "alice-laptop");
    let bob = Person::new("bob", "bob-workstation");
    let (alice_key, alice_pub) = alice.ssh_key("alice_ed25519");
    let (bob_key, bob_pub) = bob.ssh_key("bob_ed25519");
    let (carol_key, carol_pub) = alice.ssh_key("carol_ed25519");
    let source = alice.env.write("source.toml", SOURCE);
    let mut printed = String::new();
    let token = format!("token={SECRET}");
    printed.push_str(&alice.ok(&["run", s(&source), "--var", &token]).all());
    // Bob has the runbook too: what a hand-off may carry is checked against it.
    bob.env.write("handoff-source.toml", SOURCE);
    let file = alice.env.path().join("handoff.json");
    let export =
        alice.ok(&["export", "handoff-source", "--to", s(&bob_pub), "-o", s(&file), "--sign-with", s(&alice_key)]);
    printed.push_str(&export.all());
    Scene { alice, bob, alice_key, alice_pub, bob_key, bob_pub, carol_key, carol_pub, file, printed }
}

impl Scene {
    pub(crate) fn import(&self, file: &Path, identity: &Path, trust: &Path) -> Run {
        self.bob.run(&["import", s(file), "--identity", s(identity), "--trust", s(trust)])
    }

    /// `import` of `file` is refused with `why` in its message, and Bob's directory and journal
    /// are exactly as before.
    pub(crate) fn refused(&self, file: &Path, identity: &Path, trust: &Path, why: &str) {
        let before = self.bob.listing();
        let out = self.import(file, identity, trust);
        assert_eq!(out.code, 2, "{}", out.all());
        assert!(out.stderr.contains(why), "expected `{why}` in:\n{}", out.stderr);
        assert!(out.stderr.contains("nothing was imported"), "{}", out.stderr);
        assert_eq!(self.bob.listing(), before, "a refused import wrote something");
    }
}

#[test]
fn a_signed_export_imports_into_another_journal_and_feeds_requires() {
    let scene = scene();
    let Scene { alice, bob, .. } = &scene;
    let exported = std::fs::read(&scene.file).unwrap();
    assert!(!contains_bytes(&exported, SECRET), "the secret is in the export in plaintext");

    let mut printed = scene.printed.clone();
    let import = scene.import(&scene.file, &scene.bob_key, &scene.alice_pub);
    assert_eq!(import.code, 0, "{}", import.all());
    printed.push_str(&import.all());

    // The files land in Bob's directory: the secret one 0600, byte for byte Alice's.
    let key_file = bob.env.path().join("signer.private");
    assert_eq!(std::fs::read(&key_file).unwrap(), std::fs::read(alice.env.path().join("signer.private")).unwrap());
    assert_eq!(std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777, 0o600);
    let ids = bob.env.path().join("ids.json");
    assert_eq!(std::fs::read_to_string(&ids).unwrap(), "{\"clientID\": \"0000-1111\"}");

    // The import is a run of its own that says what it is; there is nothing of it to resume.
    let status = bob.ok(&["status"]);
    assert!(status.stdout.contains("of handoff-source (imported)"), "{}", status.stdout);
    let resume = bob.run(&["resume"]);
    assert_eq!(resume.code, 2, "{}", resume.all());
    assert!(resume.stderr.contains("is the import of a hand-off file"), "{}", resume.stderr);

    // The same file again changes nothing.
    let events = bob.env.events().len();
    let again = scene.import(&scene.file, &scene.bob_key, &scene.alice_pub);
    assert_eq!(again.code, 0, "{}", again.all());
    assert!(again.stdout.contains("already imported"), "{}", again.stdout);
    assert_eq!(bob.env.events().len(), events);

    // A later runbook reads Alice's values without any --var, the secret one included.
    let consumer = bob.env.write("consumer.toml", CONSUMER);
    let run = bob.ok(&["run", s(&consumer)]);
    printed.push_str(&run.all());
    let consumed = std::fs::read_to_string(bob.env.path().join("consumed.txt")).unwrap();
    assert_eq!(consumed, format!("{SECRET} {}", key_file.display()));
    assert_eq!(bob.ok(&["get", "issuer.issuer"]).stdout.trim(), "https://issuer.example/one");

    // Where each value came from: the import, with its exporter.
    let got = bob.ok(&["get", "handoff-source.issuer", "--output", "json"]).last_json();
    assert_eq!(got["value"], "https://issuer.example/one");
    assert_eq!(got["source"]["import"], true);
    assert_eq!(got["source"]["exporter"]["user"], "alice");
    assert_eq!(got["source"]["exporter"]["host"], "alice-laptop");
    let import_run = import.stdout.split("as run ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    let outputs = bob.ok(&["outputs", &import_run]);
    assert!(
        outputs.stdout.contains(
            "handoff.issuer = \"https://issuer.example/one\"  (imported from alice@alice-laptop as azure-admin"
        ),
        "{}",
        outputs.stdout
    );
    assert!(outputs.stdout.contains("handoff.token = \"<secret>\""), "{}", outputs.stdout);
    printed.push_str(&outputs.all());
    let local = alice.ok(&["outputs"]);
    assert!(local.stdout.contains("(local run "), "{}", local.stdout);
    printed.push_str(&local.all());
    for who in [alice, bob] {
        for args in [vec!["audit"], vec!["audit", "--format", "json"], vec!["outputs", "--output", "json"]] {
            printed.push_str(&who.ok(&args).all());
        }
    }

    // No plaintext secret anywhere: either journal (with its WAL), the file, anything printed.
    assert!(!contains_bytes(&alice.env.journal_bytes(), SECRET), "the secret is in Alice's journal");
    assert!(!contains_bytes(&bob.env.journal_bytes(), SECRET), "the secret is in Bob's journal");
    assert!(!printed.contains(SECRET), "the secret was printed:\n{printed}");
}

#[test]
fn altered_truncated_misaddressed_untrusted_and_newer_files_are_refused_writing_nothing() {
    let scene = scene();
    let Scene { alice, .. } = &scene;
    let original = std::fs::read_to_string(&scene.file).unwrap();

    // Altered: one value changed after signing.
    let altered =
        alice.env.write("altered.json", &original.replace("https://issuer.example/one", "https://issuer.example/evil"));
    assert_ne!(std::fs::read_to_string(&altered).unwrap(), original);
    scene.refused(&altered, &scene.bob_key, &scene.alice_pub, "the file was altered after it was signed");

    // Truncated anywhere: in the body, or inside the signature.
    let half = alice.env.write("half.json", &original[..original.len() / 2]);
    scene.refused(&half, &scene.bob_key, &scene.alice_pub, "truncated");
    let cut = alice.env.write("cut.json", &original[..original.len() - 40]);
    scene.refused(&cut, &scene.bob_key, &scene.alice_pub, "truncated");

    // Signed by someone Bob does not trust.
    scene.refused(&scene.file, &scene.bob_key, &scene.carol_pub, "a key you have not said to trust");

    // Made for someone else: Carol is the recipient, Bob tries with his key.
    let for_carol = alice.env.path().join("for-carol.json");
    alice.ok(&[
        "export",
        "handoff-source",
        "--to",
        s(&scene.carol_pub),
        "-o",
        s(&for_carol),
        "--sign-with",
        s(&scene.alice_key),
    ]);
    scene.refused(&for_carol, &scene.bob_key, &scene.alice_pub, "it was made for ssh-ed25519");

    // A newer format version, validly signed by Alice with ssh-keygen itself.
    let body =
        original.split("-----BEGIN SSH SIGNATURE-----").next().unwrap().replace("\"version\": 2,", "\"version\": 3,");
    let newer_body = alice.env.write("newer.body", &body);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "runbook-handoff", "-f"])
        .arg(&scene.alice_key)
        .arg(&newer_body)
        .status()
        .expect("ssh-keygen must be installed (openssh-client) for the hand-off tests");
    assert!(status.success());
    let signature = std::fs::read_to_string(format!("{}.sig", newer_body.display())).unwrap();
    let newer = alice.env.write("newer.json", &format!("{body}{signature}"));
    scene.refused(&newer, &scene.bob_key, &scene.alice_pub, "format version 3; this build reads versions 1 to 2");

    // After all those, the real file still imports, its signer trusted through a trusted-keys file.
    let trusted = scene.bob.env.write(
        "trusted_keys",
        &format!("# people I take hand-offs from\n\n{}", std::fs::read_to_string(&scene.alice_pub).unwrap()),
    );
    let ok = scene.bob.run(&["import", s(&scene.file), "--identity", s(&scene.bob_key), "--trusted-keys", s(&trusted)]);
    assert_eq!(ok.code, 0, "{}", ok.all());
    let _ = (&scene.carol_key, &scene.bob_pub);
}

#[test]
fn no_secrets_says_what_it_left_out() {
    let scene = scene();
    let Scene { alice, .. } = &scene;

    // --no-secrets: no identity needed, the secrets are named as left out, and not imported.
    let carl = Person::new("carl", "carl-box");
    carl.env.write("handoff-source.toml", SOURCE);
    let bare = alice.env.path().join("bare.json");
    let out = alice.ok(&[
        "export",
        "handoff-source",
        "--to",
        s(&scene.bob_pub),
        "-o",
        s(&bare),
        "--sign-with",
        s(&scene.alice_key),
        "--no-secrets",
    ]);
    assert!(out.stdout.contains("left out (--no-secrets): handoff.token, handoff.key_file"), "{}", out.stdout);
    let imported = carl.ok(&["import", s(&bare), "--trust", s(&scene.alice_pub)]);
    assert!(
        imported.stdout.contains("left out by the exporter: handoff.token, handoff.key_file"),
        "{}",
        imported.stdout
    );
    assert!(!carl.env.path().join("signer.private").exists());
    assert!(carl.env.path().join("ids.json").exists());
}

const PHASE3_READS: &str = r#"
[runbook]
name = "phase3-reads"
persona = "hypershift-admin"

[requires.phase1]
runbook = "phase1-workload-identity"
outputs = ["oidc_issuer_url", "workload_identities_file", "sa_token_issuer_private_key_path", "azure_mgmt_file", "azure_credentials_file", "tenant_id"]

[[steps]]
id = "issuer"
kind = "exec"
inputs.argv = ["{stepper}", "print", "${phase1.oidc_issuer_url}"]
outputs.url = { from = "stdout" }

[[steps]]
id = "files"
kind = "exec"
inputs.argv = ["{stepper}", "require", "${phase1.workload_identities_file}", "require", "${phase1.sa_token_issuer_private_key_path}", "require", "${phase1.azure_mgmt_file}", "require", "${phase1.azure_credentials_file}"]
"#;

#[test]
fn phase1_by_one_person_feeds_another_journal_and_audit_over_both_verifies_the_link() {
    let alice = Person::new("alice", "alice-laptop");
    let bob = Person::new("bob", "bob-workstation");
    let (alice_key, alice_pub) = alice.ssh_key("alice_ed25519");
    let (bob_key, bob_pub) = bob.ssh_key("bob_ed25519");
    let mut printed = String::new();

    let rehearsal = alice.ok_bare(&["rehearse", "--phase", "1", "--output", "json", "--dir", "rehearsals"]);
    printed.push_str(&rehearsal.all());
    let result = rehearsal.last_json();
    let workdir = PathBuf::from(result["workdir"].as_str().unwrap());
    let alice_journal = PathBuf::from(result["journal"].as_str().unwrap());
    let file = alice.env.path().join("phase1.handoff");
    let export = alice.run_on(
        &alice_journal,
        &["export", "phase1-workload-identity", "--to", s(&bob_pub), "-o", s(&file), "--sign-with", s(&alice_key)],
    );
    assert_eq!(export.code, 0, "{}", export.all());
    printed.push_str(&export.all());

    let import = bob.ok(&[
        "import",
        s(&file),
        "--identity",
        s(&bob_key),
        "--trust",
        s(&alice_pub),
        "--persona",
        "hypershift-admin",
    ]);
    printed.push_str(&import.all());
    for secret_file in ["serviceaccount-signer.private", "azure_mgmt.json", "azure-credentials.json"] {
        let path = bob.env.path().join(secret_file);
        assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(workdir.join(secret_file)).unwrap(), "{secret_file}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "{secret_file}");
    }
    assert!(bob.env.path().join("workload-identities.json").exists());

    // The later runbook reads Phase 1's values from the import, with no --var at all: acting on
    // the rehearsal's sandbox (named by its CA), since values made there do not stand for Azure.
    let reads = bob.env.write("phase3-reads.toml", PHASE3_READS);
    let as_sandbox = Command::new(crate::support::runbook_bin())
        .args(["--journal", s(&bob.env.journal()), "run", s(&reads)])
        .current_dir(bob.env.path())
        .env("CI", "true")
        .env_remove("RUNBOOK_JOURNAL")
        .env("RUNBOOK_USER", bob.user)
        .env("RUNBOOK_HOST", bob.host)
        .env("RUNBOOK_AZURE_CREDENTIAL", "sandbox")
        .env("RUNBOOK_CA_FILE", workdir.join("sandbox-ca.pem"))
        .output()
        .expect("runbook starts");
    let reads_out =
        format!("{}{}", String::from_utf8_lossy(&as_sandbox.stdout), String::from_utf8_lossy(&as_sandbox.stderr));
    assert_eq!(as_sandbox.status.code(), Some(0), "{reads_out}");
    printed.push_str(&reads_out);
    let issuer = alice.run_on(&alice_journal, &["get", "phase1-workload-identity.oidc_issuer_url"]);
    assert_eq!(issuer.code, 0, "{}", issuer.all());
    assert_eq!(bob.ok(&["get", "issuer.url"]).stdout.trim(), issuer.stdout.trim());

    // One timeline over both journals, each step with its person, and the hand-off between them.
    let bob_journal = bob.env.journal();
    let both = ["--journal", s(&alice_journal), "--journal", s(&bob_journal)];
    let verify = bob.bare(&[&both[..], &["audit", "--verify"]].concat());
    assert_eq!(verify.code, 0, "{}", verify.all());
    assert!(
        verify.stdout.contains("linked to journal 1, which holds the exporter's chain head and records the export"),
        "{}",
        verify.stdout
    );
    let markdown = bob.ok_bare(&[&both[..], &["audit", "--format", "markdown"]].concat());
    assert!(markdown.stdout.starts_with("## Runs"), "{}", markdown.stdout);
    for expected in [
        "alice@alice-laptop (azure-admin, Azure sandbox-client-",
        "bob@bob-workstation (hypershift-admin",
        "imported from alice@alice-laptop",
        "| phase1-workload-identity |",
        "| phase3-reads |",
        "handoff_exported",
        "handoff_imported",
    ] {
        assert!(markdown.stdout.contains(expected), "`{expected}` missing:\n{}", markdown.stdout);
    }
    printed.push_str(&markdown.all());
    let table = bob.ok_bare(&[&both[..], &["audit"]].concat());
    printed.push_str(&table.all());
    let json = bob.ok_bare(&[&both[..], &["audit", "--format", "json"]].concat());
    printed.push_str(&json.all());
    printed.push_str(&bob.ok(&["outputs"]).all());

    // Bob's journal alone verifies too; beside a journal that is not the exporter's, the link fails.
    let alone = bob.run(&["audit", "--verify"]);
    assert_eq!(alone.code, 0, "{}", alone.all());
    let stranger = Person::new("carol", "elsewhere");
    let source = stranger.env.write("source.toml", SOURCE);
    stranger.ok(&["run", s(&source), "--var", "token=x"]);
    let wrong =
        bob.bare(&["--journal", s(&stranger.env.journal()), "--journal", s(&bob.env.journal()), "audit", "--verify"]);
    assert_eq!(wrong.code, 6, "{}", wrong.all());
    assert!(wrong.stdout.contains("is in none of the other journals given"), "{}", wrong.stdout);

    // No secret in plaintext: both journals (with WAL), the hand-off file, anything printed.
    let mgmt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(workdir.join("azure_mgmt.json")).unwrap()).unwrap();
    let credentials: serde_json::Value =
        serde_json::from_slice(&std::fs::read(workdir.join("azure-credentials.json")).unwrap()).unwrap();
    let key = std::fs::read_to_string(workdir.join("serviceaccount-signer.private")).unwrap();
    let key_lines: Vec<&str> = key.lines().filter(|l| !l.starts_with("-----")).collect();
    let mut secrets = vec![mgmt["aadClientSecret"].as_str().unwrap().to_string()];
    secrets.extend(
        credentials
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.to_lowercase().contains("secret"))
            .map(|(_, v)| v.as_str().unwrap().to_string()),
    );
    // The PEM's last lines hold the private CRT values (its first ones the public modulus).
    secrets.extend(key_lines[key_lines.len() - 4..key_lines.len() - 1].iter().map(|l| l.to_string()));
    let mut alice_bytes = std::fs::read(&alice_journal).unwrap();
    alice_bytes.extend(std::fs::read(format!("{}-wal", alice_journal.display())).unwrap_or_default());
    let exported = std::fs::read(&file).unwrap();
    for secret in &secrets {
        assert!(secret.len() > 10);
        assert!(!contains_bytes(&alice_bytes, secret), "a secret is in Alice's journal");
        assert!(!contains_bytes(&bob.env.journal_bytes(), secret), "a secret is in Bob's journal");
        assert!(!contains_bytes(&exported, secret), "a secret is in the hand-off file");
        assert!(!printed.contains(secret.as_str()), "a secret was printed");
    }
}

#[test]
fn a_rehearsal_plays_both_people_with_a_key_pair_each_and_the_hand_off_between_them() {
    let env = TestEnv::new();
    let out = env.run_bare(&["rehearse", "--phase", "1", "--output", "json", "--dir", "rehearsals"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let result = out.last_json();
    let handoff = &result["handoff"];
    let first = PathBuf::from(handoff["from"]["journal"].as_str().unwrap());
    let second = PathBuf::from(handoff["to"]["journal"].as_str().unwrap());
    assert_eq!(first, PathBuf::from(result["journal"].as_str().unwrap()));
    assert_ne!(first, second);
    assert_eq!(handoff["from"]["persona"], "azure-admin");
    assert_eq!(handoff["to"]["persona"], "hypershift-admin");
    let file = std::fs::read(handoff["file"].as_str().unwrap()).unwrap();
    assert!(String::from_utf8_lossy(&file).contains("-----BEGIN SSH SIGNATURE-----"));

    // Each persona's private key is theirs alone; the second one's files are 0600 where secret.
    let workdir = PathBuf::from(result["workdir"].as_str().unwrap());
    for persona in ["azure-admin", "hypershift-admin"] {
        let key = workdir.join("personas").join(persona).join("id_ed25519");
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600, "{persona}");
    }
    let dir = PathBuf::from(handoff["to"]["dir"].as_str().unwrap());
    for secret_file in ["serviceaccount-signer.private", "azure_mgmt.json", "azure-credentials.json"] {
        assert_eq!(std::fs::metadata(dir.join(secret_file)).unwrap().permissions().mode() & 0o777, 0o600);
    }

    // The second journal answers Phase 1's values as the first one does, and both verify with
    // the link between them.
    let key = "phase1-workload-identity.oidc_issuer_url";
    let there = env.run_bare(&["--journal", s(&first), "get", key]);
    let here = env.run_bare(&["--journal", s(&second), "get", key]);
    assert_eq!(here.code, 0, "{}", here.all());
    assert_eq!(here.stdout, there.stdout);
    let verify = env.run_bare(&["--journal", s(&first), "--journal", s(&second), "audit", "--verify"]);
    assert_eq!(verify.code, 0, "{}", verify.all());
    assert!(verify.stdout.contains("linked to journal 1"), "{}", verify.stdout);
}

/// `body` signed by `key` with ssh-keygen, as a hand-off file.
fn signed(person: &Person, key: &Path, name: &str, body: &serde_json::Value) -> PathBuf {
    let mut text = serde_json::to_string_pretty(body).unwrap();
    text.push('\n');
    let body_file = person.env.write(&format!("{name}.body"), &text);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "runbook-handoff", "-f"])
        .arg(key)
        .arg(&body_file)
        .status()
        .expect("ssh-keygen must be installed (openssh-client) for the hand-off tests");
    assert!(status.success());
    let signature = std::fs::read_to_string(format!("{}.sig", body_file.display())).unwrap();
    person.env.write(name, &format!("{text}{signature}"))
}

/// A trusted signer vouches for values, not for what they are: a file the runbook publishes
/// sent as a path, a value the runbook does not publish, a file named like the importer's
/// journal, a dotfile, an option-looking name and one with a terminal escape are each refused
/// with nothing written, the name printed escaped.
#[test]
fn a_crafted_hand_off_from_a_trusted_signer_is_checked_against_its_runbook() {
    let scene = scene();
    let original = std::fs::read_to_string(&scene.file).unwrap();
    let body: serde_json::Value =
        serde_json::from_str(original.split("-----BEGIN SSH SIGNATURE-----").next().unwrap()).unwrap();
    let crafted = |name: &str, change: &dyn Fn(&mut serde_json::Value)| {
        let mut body = body.clone();
        change(&mut body);
        signed(&scene.alice, &scene.alice_key, name, &body)
    };

    let path = crafted("path.handoff", &|b| {
        let files = b["checkpoints"]["handoff"]["files"].as_object_mut().unwrap();
        files.remove("ids_file");
        b["checkpoints"]["handoff"]["values"]["ids_file"] = serde_json::json!({ "plain": "/home/bob/.ssh/id_ed25519" });
    });
    scene.refused(
        &path,
        &scene.bob_key,
        &scene.alice_pub,
        "`handoff.ids_file` is a file in `handoff-source`, and arrived as a plain value",
    );

    let extra = crafted("extra.handoff", &|b| {
        b["checkpoints"]["handoff"]["values"]["kubeconfig"] = serde_json::json!({ "plain": "/etc/shadow" });
    });
    scene.refused(
        &extra,
        &scene.bob_key,
        &scene.alice_pub,
        "`handoff.kubeconfig` is not published by `handoff-source`",
    );

    for (i, (name, why)) in [
        ("journal.db", "the importer's journal has that name"),
        ("journal.db.key", "the importer's journal has that name"),
        (".bash_profile", "a hidden file"),
        ("-rf", "as an option would"),
        ("ids\u{1b}[31m.json", "only letters, digits"),
    ]
    .into_iter()
    .enumerate()
    {
        let file = crafted(&format!("named{i}.handoff"), &|b| {
            b["checkpoints"]["handoff"]["files"]["ids_file"]["file_name"] = serde_json::json!(name);
        });
        scene.refused(&file, &scene.bob_key, &scene.alice_pub, why);
        let out = scene.import(&file, &scene.bob_key, &scene.alice_pub);
        assert!(!out.stderr.contains('\u{1b}'), "an escape sequence was printed raw: {:?}", out.stderr);
    }
    // The file as Alice's export wrote it still imports, listing every value it took.
    let ok = scene.import(&scene.file, &scene.bob_key, &scene.alice_pub);
    assert_eq!(ok.code, 0, "{}", ok.all());
    assert!(ok.stdout.contains("handoff.issuer = \"https://issuer.example/one\""), "{}", ok.stdout);
    assert!(ok.stdout.contains("handoff.token = (secret)"), "{}", ok.stdout);
}

/// A key a tool left readable by others (as ccoctl leaves its signing key 0644 until a later
/// step tightens it) is not exported in plain text: the export is refused, naming the mode.
#[test]
fn a_private_key_readable_by_others_is_not_exported_in_plain_text() {
    let alice = Person::new("alice", "alice-laptop");
    let (alice_key, _) = alice.ssh_key("alice_ed25519");
    let (_, bob_pub) = alice.ssh_key("bob_ed25519");
    let source = alice.env.write(
        "loose.toml",
        r#"
[runbook]
name = "loose-key"
[[steps]]
id = "key"
kind = "template"
inputs.inline = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
inputs.path = "signer.private"
[[steps]]
id = "handoff"
kind = "checkpoint"
inputs.files = { key_file = "${steps.key.path}" }
"#,
    );
    alice.ok(&["run", s(&source)]);
    let key = alice.env.path().join("signer.private");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let file = alice.env.path().join("loose.handoff");
    let out = alice.run(&["export", "loose-key", "--to", s(&bob_pub), "-o", s(&file), "--sign-with", s(&alice_key)]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains("holds a private key or a client secret and is readable by others (mode 644)"),
        "{}",
        out.stderr
    );
    assert!(!file.exists());
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    alice.ok(&["export", "loose-key", "--to", s(&bob_pub), "-o", s(&file), "--sign-with", s(&alice_key)]);
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(!written.contains("MIIB"), "the key travels encrypted");
}

/// A value an earlier runbook publishes as secret (imported or made here) is a secret in the
/// runbook that requires it: `plan` warns when it is put in a program's argv.
#[test]
fn a_secret_required_from_an_earlier_runbook_in_argv_is_warned_about_at_plan() {
    let alice = Person::new("alice", "alice-laptop");
    alice.env.write("handoff-source.toml", SOURCE);
    let consumer = alice.env.write(
        "leaky.toml",
        r#"
[runbook]
name = "leaky-consumer"
[requires.src]
runbook = "handoff-source"
outputs = ["issuer", "token"]
[[steps]]
id = "leak"
kind = "exec"
inputs.argv = ["{stepper}", "print", "${src.token}"]
[[steps]]
id = "fine"
kind = "exec"
inputs.argv = ["{stepper}", "print", "${src.issuer}"]
"#,
    );
    let plan = alice.run(&["plan", s(&consumer)]);
    assert!(plan.stderr.contains("step `leak` puts a secret (`src.token`) in its argv"), "{}", plan.all());
    assert!(!plan.stderr.contains("step `fine`"), "{}", plan.stderr);
}

/// A plain value a trusted signer sent, declared by the runbook, is still only a value: a later
/// step that would read it as a path out of the run's directory (here, vouching for a file to
/// send on) is refused, naming the value; a path the runbook itself writes is not affected.
#[test]
fn a_handed_value_is_not_a_path_out_of_the_run_directory() {
    let scene = scene();
    let secret = scene.bob.env.write("private/notes.txt", "bob's own file");
    let original = std::fs::read_to_string(&scene.file).unwrap();
    let body: serde_json::Value =
        serde_json::from_str(original.split("-----BEGIN SSH SIGNATURE-----").next().unwrap()).unwrap();
    let consumer = scene.bob.env.write(
        "path-consumer.toml",
        r#"
[runbook]
name = "path-consumer"

[requires.src]
runbook = "handoff-source"
outputs = ["issuer"]

[[steps]]
id = "own"
kind = "checkpoint"
[steps.inputs.files]
hostname = "/etc/hostname"

[[steps]]
id = "republish"
kind = "checkpoint"
[steps.inputs.files]
leak = "${src.issuer}"
"#,
    );
    for (i, value) in
        [secret.display().to_string(), "../private/notes.txt".to_string(), "~/.ssh/id_ed25519".to_string()]
            .into_iter()
            .enumerate()
    {
        let mut crafted = body.clone();
        crafted["checkpoints"]["handoff"]["values"]["issuer"] = serde_json::json!({ "plain": value });
        let file = signed(&scene.alice, &scene.alice_key, &format!("value{i}.handoff"), &crafted);
        // A journal of Bob's per case: a second import of the same export would be a roll-back.
        let journal = scene.bob.env.path().join(format!("case{i}.db"));
        let bob = |args: &[&str]| scene.bob.run_on(&journal, args);
        let imported = bob(&["import", s(&file), "--identity", s(&scene.bob_key), "--trust", s(&scene.alice_pub)]);
        assert_eq!(imported.code, 0, "{}", imported.all());
        assert!(imported.stdout.contains("handoff.issuer = "), "every value is listed: {}", imported.stdout);
        let run = bob(&["run", s(&consumer)]);
        assert_eq!(run.code, 3, "{}", run.all());
        assert!(run.all().contains("HandedPathOutside"), "{}", run.all());
        assert!(run.all().contains("through `src.issuer`, a value a hand-off brought"), "{}", run.all());
        let leaked = bob(&["get", "path-consumer.leak"]);
        assert_ne!(leaked.code, 0, "the file was vouched for: {}", leaked.all());
        // The runbook's own absolute path was read as written.
        let own = bob(&["get", "path-consumer.hostname"]);
        assert_eq!(own.code, 0, "{}", own.all());
    }
}
