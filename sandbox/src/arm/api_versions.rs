//! Which api-versions each resource provider accepts: the ones in the reference table and
//! the ones the recordings use, plus the common releases in between.

use http::StatusCode;

use super::errors::arm_error;
use crate::wire::Reply;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Resources,
    ManagedIdentity,
    Storage,
    Dns,
    Network,
    Authorization,
    /// Tenant-level listings the sandbox answers trivially.
    Any,
}

impl Family {
    pub(crate) fn versions(self) -> &'static [&'static str] {
        match self {
            Family::Resources => &[
                "2025-04-01",
                "2025-03-01",
                "2024-11-01",
                "2024-07-01",
                "2024-03-01",
                "2023-07-01",
                "2022-12-01",
                "2022-09-01",
                "2021-04-01",
                "2021-01-01",
                "2020-10-01",
                "2020-06-01",
                "2019-10-01",
                "2019-08-01",
                "2019-05-10",
                "2018-05-01",
            ],
            Family::ManagedIdentity => &[
                "2026-05-31",
                "2026-04-30",
                "2025-01-31-preview",
                "2024-11-30",
                "2023-07-31-preview",
                "2023-01-31",
                "2022-01-31-preview",
                "2021-09-30-preview",
                "2018-11-30",
                "2015-08-31-preview",
            ],
            Family::Storage => &[
                "2026-09-01",
                "2025-06-01",
                "2025-01-01",
                "2024-01-01",
                "2023-05-01",
                "2023-04-01",
                "2023-01-01",
                "2022-09-01",
                "2022-05-01",
                "2021-09-01",
                "2021-08-01",
                "2021-06-01",
                "2021-04-01",
                "2021-02-01",
                "2021-01-01",
                "2019-06-01",
            ],
            Family::Dns => {
                &["2023-07-01-preview", "2018-05-01", "2018-03-01-preview", "2017-10-01", "2017-09-01", "2016-04-01"]
            }
            Family::Network => &[
                "2026-03-01",
                "2025-07-01",
                "2025-05-01",
                "2025-03-01",
                "2025-01-01",
                "2024-10-01",
                "2024-07-01",
                "2024-05-01",
                "2024-03-01",
                "2024-01-01",
                "2023-11-01",
                "2023-09-01",
                "2023-06-01",
                "2023-05-01",
                "2023-04-01",
                "2023-02-01",
                "2022-11-01",
                "2022-09-01",
                "2022-07-01",
                "2022-05-01",
                "2022-01-01",
                "2021-08-01",
                "2021-05-01",
                "2021-03-01",
                "2021-02-01",
                "2020-11-01",
            ],
            Family::Authorization => &[
                "2022-04-01",
                "2022-01-01-preview",
                "2020-10-01-preview",
                "2020-04-01-preview",
                "2018-09-01-preview",
                "2018-01-01-preview",
                "2015-07-01",
            ],
            Family::Any => &[],
        }
    }

    fn accepts(self, version: &str) -> bool {
        self == Family::Any || self.versions().contains(&version)
    }
}

/// `None` when the request's api-version is acceptable, else the real error reply.
pub(crate) fn check(family: Family, version: Option<&str>, resource_type: &str) -> Option<Reply> {
    let Some(version) = version else {
        return Some(arm_error(
            StatusCode::BAD_REQUEST,
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        ));
    };
    if family.accepts(version) {
        return None;
    }
    let supported = family.versions().join(",");
    Some(if family == Family::Resources {
        arm_error(
            StatusCode::BAD_REQUEST,
            "InvalidApiVersionParameter",
            &format!(
                "The api-version '{version}' is invalid. The supported versions are '{supported}'. The supported locations are ''."
            ),
        )
    } else {
        arm_error(
            StatusCode::BAD_REQUEST,
            "NoRegisteredProviderFound",
            &format!(
                "No registered resource provider found for location 'global' and API version '{version}' for type '{resource_type}'. The supported api-versions are '{supported}'. The supported locations are 'eastus, eastus2, westus, westus2, westus3, centralus, northeurope, westeurope, southcentralus'."
            ),
        )
    })
}
