//! Where the real tools are: named by environment variables, since no registry serves them.
//! A test that runs without its binary fails loudly instead of passing vacuously.

use std::path::PathBuf;

/// The path in `variable`, which must name an existing file.
pub fn required(variable: &str, tool: &str) -> PathBuf {
    let Some(path) = std::env::var_os(variable).filter(|p| !p.is_empty()) else {
        panic!(
            "{variable} is not set: point it at the real {tool} binary (built from its upstream source) to run this test"
        )
    };
    let path = PathBuf::from(path);
    assert!(
        path.is_file(),
        "{variable}={} does not name a file: the real {tool} binary is needed there",
        path.display()
    );
    path
}
