//! A private network for the sandbox as Azure's public host names (`--public-names`): the
//! process moves into a network namespace of its own, which has only loopback (so nothing it or
//! its children send can leave the machine), and a mount namespace whose `/etc/hosts` is a
//! private file mapping `management.azure.com`, `login.microsoftonline.com`,
//! `graph.microsoft.com` (and, as the sandbox creates them, `<account>.blob.core.windows.net`)
//! to 127.0.0.1.
//!
//! Entered before the tokio runtime starts: a user namespace can only be entered by a process
//! with one thread, and the others apply to the calling thread alone, so every thread the
//! runtime starts later (and every program it runs) inherits them. Without namespaces the
//! command refuses; it never falls back to the real network.

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::cli::exit::CliError;

/// What the namespace gives the sandbox: the private hosts file, open for appending (its path is
/// unlinked once mounted, so only this handle and `/etc/hosts` inside the namespace reach it).
#[derive(Debug)]
pub struct PrivateNetwork {
    pub hosts_file: Arc<File>,
    /// Whether a user namespace was made (not when running as root, who needs none): how
    /// another process enters with `nsenter`.
    pub user_namespace: bool,
}

static ENTERED: OnceLock<PrivateNetwork> = OnceLock::new();

/// The private network this process entered, if it did.
pub fn current() -> Option<&'static PrivateNetwork> {
    ENTERED.get()
}

const HINT: &str = "--public-names needs Linux user and network namespaces (what `unshare --user --map-current-user --net --mount` uses): run as root, or allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0; in a container, a seccomp/AppArmor profile that permits unshare). Without it, rehearse and sandbox up serve on loopback ports instead";

fn refuse(what: &str, error: std::io::Error) -> CliError {
    CliError::user_hint(format!("cannot set up the sandbox's private network: {what}: {error}"), HINT)
}

/// Moves this (still single-threaded) process into a private network and mount namespace with
/// the sandbox's hosts file over `/etc/hosts`.
pub fn enter() -> Result<&'static PrivateNetwork, CliError> {
    if let Some(entered) = ENTERED.get() {
        return Ok(entered);
    }
    // SAFETY: plain system calls; their results are checked.
    let uid = unsafe { libc::geteuid() };
    let gid = unsafe { libc::getegid() };
    let user_namespace = uid != 0;
    let mut flags = libc::CLONE_NEWNET | libc::CLONE_NEWNS;
    if user_namespace {
        flags |= libc::CLONE_NEWUSER;
    }
    // SAFETY: unshare takes flags only.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(refuse("unshare(user, network, mount namespaces)", std::io::Error::last_os_error()));
    }
    if user_namespace {
        // The same user inside as outside; the capabilities this process holds in its new user
        // namespace are enough for the mounts and the loopback interface below.
        write_file("/proc/self/setgroups", "deny").map_err(|e| refuse("writing /proc/self/setgroups", e))?;
        write_file("/proc/self/uid_map", &format!("{uid} {uid} 1"))
            .map_err(|e| refuse("writing /proc/self/uid_map", e))?;
        write_file("/proc/self/gid_map", &format!("{gid} {gid} 1"))
            .map_err(|e| refuse("writing /proc/self/gid_map", e))?;
    }
    loopback_up().map_err(|e| refuse("bringing up the loopback interface", e))?;
    let hosts_file = private_hosts().map_err(|e| refuse("mounting a private /etc/hosts", e))?;
    let interfaces = runbook_sandbox::public_names::interfaces().map_err(|e| refuse("reading /proc/net/dev", e))?;
    if interfaces != ["lo"] {
        return Err(CliError::Internal(anyhow::anyhow!(
            "the sandbox's network namespace has interfaces other than loopback: {interfaces:?}"
        )));
    }
    Ok(ENTERED.get_or_init(|| PrivateNetwork { hosts_file: Arc::new(hosts_file), user_namespace }))
}

fn write_file(path: &str, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new().write(true).open(path)?.write_all(text.as_bytes())
}

/// `ifreq` with the flags member (40 bytes on Linux).
#[repr(C)]
struct InterfaceFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

/// A new network namespace's `lo` is down: set it up (`ip link set lo up`).
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: a socket only to address the interface; closed below.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut request = InterfaceFlags { name: [0; libc::IFNAMSIZ], flags: 0, _rest: [0; 22] };
    for (slot, byte) in request.name.iter_mut().zip(b"lo") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: `request` is a valid ifreq for both calls.
    let result = unsafe {
        if libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request) != 0 {
            -1
        } else {
            request.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            libc::ioctl(socket, libc::SIOCSIFFLAGS, &request)
        }
    };
    let error = std::io::Error::last_os_error();
    // SAFETY: the socket opened above.
    unsafe { libc::close(socket) };
    if result != 0 { Err(error) } else { Ok(()) }
}

/// Makes every mount private to this namespace (nothing propagates back to the machine), then
/// bind-mounts a fresh hosts file over `/etc/hosts` and unlinks its path.
fn private_hosts() -> std::io::Result<File> {
    mount(None, Path::new("/"), None, libc::MS_REC | libc::MS_PRIVATE)?;
    let mut file = tempfile::Builder::new().prefix("runbook-sandbox-hosts").tempfile()?;
    file.write_all(runbook_sandbox::public_names::hosts_file_lines().as_bytes())?;
    file.flush()?;
    let (handle, path) = file.keep().map_err(|e| e.error)?;
    let mounted = mount(Some(&path), Path::new("/etc/hosts"), None, libc::MS_BIND);
    let _ = std::fs::remove_file(&path);
    mounted?;
    // Readable by the programs the rehearsal runs, whatever user they are.
    handle.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    Ok(handle)
}

fn mount(source: Option<&Path>, target: &Path, fstype: Option<&str>, flags: libc::c_ulong) -> std::io::Result<()> {
    let c = |bytes: &[u8]| CString::new(bytes).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput));
    let source = source.map(|s| c(s.as_os_str().as_bytes())).transpose()?;
    let target = c(target.as_os_str().as_bytes())?;
    let fstype = fstype.map(|f| c(f.as_bytes())).transpose()?;
    let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated strings that outlive the call, or null where mount allows it.
    let result = unsafe { libc::mount(ptr(&source), target.as_ptr(), ptr(&fstype), flags, std::ptr::null()) };
    if result != 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

/// How another process joins: `nsenter` into this process's namespaces.
pub fn nsenter_argv(pid: u32, network: &PrivateNetwork) -> Vec<String> {
    let mut argv = vec!["nsenter".to_string(), format!("--target={pid}")];
    if network.user_namespace {
        argv.extend(["--user".to_string(), "--preserve-credentials".to_string()]);
    }
    argv.extend(["--net".to_string(), "--mount".to_string()]);
    argv
}
