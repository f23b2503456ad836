//! Stand-ins for the external tools the procedure uses, for rehearsals against the sandbox: the
//! `runbook` binary acts as the tool when it is started under the tool's name (a symlink the
//! rehearsal puts first on the programs' PATH). They check flags and inputs the way the real
//! tools do, and act only on the built-in sandbox (see `fence`): they are built only into
//! binaries that carry the sandbox (the `sandbox` cargo feature).

pub mod ccoctl;
pub mod fence;
pub mod hypershift;
mod sandbox_network;
mod steps;

/// Runs a stand-in when the process was started under a tool's name; returns otherwise.
pub fn dispatch_by_name() {
    let name = std::env::args_os()
        .next()
        .and_then(|arg0| std::path::Path::new(&arg0).file_name().map(|n| n.to_string_lossy().into_owned()));
    match name.as_deref() {
        Some("ccoctl") => std::process::exit(ccoctl::main()),
        Some("hypershift") => std::process::exit(hypershift::main()),
        _ => {}
    }
}
