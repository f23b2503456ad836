//! The causes `diagnose` can name, one file per Troubleshooting entry of the procedure. Each rule
//! starts from a symptom the scene shows (a condition, a pod's state, an Event) and looks for the
//! evidence that explains it; a symptom no rule explains is reported as seen.

mod api_load_balancer;
mod cleanup;
mod cluster;
mod control_plane;
mod external_dns;
mod external_dns_expired;
mod fix;
mod identity;
mod stale_roles;
mod workers;

use super::{Diagnosis, Scene};

/// The procedure's Troubleshooting entries, as it titles them.
pub const AUTHENTICATION: &str = "Cluster Creation Fails with Authentication Errors";
pub const CONTROL_PLANE: &str = "Control Plane Pods Not Starting";
pub const WORKERS: &str = "Worker Nodes Not Joining Cluster";
pub const DNS: &str = "DNS Resolution Issues";
/// Not in the procedure's list: users' reports of `hypershift destroy` hanging.
pub const DELETION: &str = "Deleting a hosted cluster hangs (users' reports)";
/// Not in the procedure's list: users' reports of role assignments left by an earlier cluster.
pub const STALE_ROLES: &str =
    "Role assignments left over from an earlier cluster with the same infra id (users' reports)";

/// Every rule, then what is still unhealthy and unexplained, then what is healthy.
pub fn find_all(scene: &Scene, diagnosis: &mut Diagnosis) {
    let mut explained = Vec::new();
    identity::find(scene, diagnosis, &mut explained);
    control_plane::find(scene, diagnosis, &mut explained);
    api_load_balancer::find(scene, diagnosis, &mut explained);
    workers::find(scene, diagnosis, &mut explained);
    cleanup::find(scene, diagnosis, &mut explained);
    external_dns::find(scene, diagnosis);
    stale_roles::find(scene, diagnosis);
    cluster::report(scene, diagnosis, &explained);
}
