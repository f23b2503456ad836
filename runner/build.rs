// Bundled runbooks and templates are embedded at compile time; rebuild when they change.
fn main() {
    println!("cargo:rerun-if-changed=../runbooks");
    println!("cargo:rerun-if-changed=../templates");
}
