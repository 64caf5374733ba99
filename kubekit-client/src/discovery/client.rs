//! [`DiscoveryClient`]: what the API server serves, asked fresh every time.
//!
//! The client asks for aggregated discovery (`apidiscovery.k8s.io/v2`: two requests
//! describe every group, version and resource) and falls back to the legacy endpoints
//! (`/api`, `/apis`, then one request per group/version, sent concurrently) when the
//! server does not offer it. Use [`CachedDiscoveryClient`](super::CachedDiscoveryClient)
//! to avoid asking again.

use futures_util::future::join_all;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList, APIVersions};
use k8s_openapi::apimachinery::pkg::version::Info;

use super::model::{ApiDiscovery, ApiGroup, ApiResource};
use super::wire::{AGGREGATED_ACCEPT, GroupDiscoveryList, is_aggregated, legacy_resources};
use crate::meta::GroupVersion;
use crate::rest::{Response, RestClient, Result};

/// Asks the API server what it serves; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct DiscoveryClient {
    rest: RestClient,
}

/// One of the two discovery roots: `/api` (core group) or `/apis` (every other group).
enum Root {
    Aggregated(GroupDiscoveryList),
    Legacy(Vec<ApiGroup>),
}

impl DiscoveryClient {
    /// A discovery client using `rest`.
    pub fn new(rest: RestClient) -> Self {
        Self { rest }
    }

    /// The server's version (`GET /version`).
    pub async fn server_version(&self) -> Result<Info> {
        self.rest.get().abs_path("/version").send().await?.decode()
    }

    async fn root(&self, path: &str) -> Result<Root> {
        let res: Response = self
            .rest
            .get()
            .abs_path(path)
            .accept(AGGREGATED_ACCEPT)
            .send()
            .await?;
        if is_aggregated(res.content_type()) {
            return res.decode().map(Root::Aggregated);
        }
        Ok(Root::Legacy(if path == "/api" {
            let versions: APIVersions = res.decode()?;
            vec![ApiGroup {
                name: String::new(),
                versions: versions.versions,
            }]
        } else {
            let groups: APIGroupList = res.decode()?;
            groups
                .groups
                .into_iter()
                .map(|g| {
                    let preferred = g.preferred_version.map(|p| p.version);
                    let mut versions: Vec<String> =
                        g.versions.into_iter().map(|v| v.version).collect();
                    if let Some(i) = preferred.and_then(|p| versions.iter().position(|v| *v == p)) {
                        let v = versions.remove(i);
                        versions.insert(0, v);
                    }
                    ApiGroup {
                        name: g.name,
                        versions,
                    }
                })
                .collect()
        }))
    }

    /// The API groups and their versions, the core group first.
    pub async fn server_groups(&self) -> Result<Vec<ApiGroup>> {
        let mut groups = Vec::new();
        for path in ["/api", "/apis"] {
            match self.root(path).await? {
                Root::Aggregated(list) => list.collect_into(&mut groups, &mut Vec::new()),
                Root::Legacy(g) => groups.extend(g),
            }
        }
        Ok(groups)
    }

    /// The resources served in group/version `gv` (its legacy `APIResourceList`).
    pub async fn server_resources_for_group_version(
        &self,
        gv: &GroupVersion,
    ) -> Result<Vec<ApiResource>> {
        let path = if gv.group.is_empty() {
            format!("/api/{}", gv.version)
        } else {
            format!("/apis/{}/{}", gv.group, gv.version)
        };
        let list: APIResourceList = self.rest.get().abs_path(&path).send().await?.decode()?;
        Ok(legacy_resources(&gv.group, &gv.version, list))
    }

    /// Every group and every resource of every served version.
    ///
    /// With legacy discovery, a group/version that fails to answer (an aggregated API whose
    /// backend is down, say) is left out and named in
    /// [`ApiDiscovery::failed`]; the rest is returned.
    pub async fn server_groups_and_resources(&self) -> Result<ApiDiscovery> {
        let mut out = ApiDiscovery::default();
        let mut legacy = Vec::new();
        for path in ["/api", "/apis"] {
            match self.root(path).await? {
                Root::Aggregated(list) => list.collect_into(&mut out.groups, &mut out.resources),
                Root::Legacy(groups) => {
                    legacy.extend(
                        groups
                            .iter()
                            .flat_map(|g| g.versions.iter().map(|v| GroupVersion::new(&g.name, v))),
                    );
                    out.groups.extend(groups);
                }
            }
        }
        let lists = join_all(
            legacy
                .iter()
                .map(|gv| self.server_resources_for_group_version(gv)),
        )
        .await;
        for (gv, list) in legacy.into_iter().zip(lists) {
            match list {
                Ok(resources) => out.resources.extend(resources),
                Err(e) => {
                    tracing::warn!(group_version = %gv, error = %e, "discovery of a group/version failed");
                    out.failed.push(format!("{gv}: {e}"));
                }
            }
        }
        Ok(out)
    }

    /// Resources of each group's preferred version (client-go's
    /// `ServerPreferredResources`).
    pub async fn server_preferred_resources(&self) -> Result<Vec<ApiResource>> {
        let all = self.server_groups_and_resources().await?;
        Ok(all.preferred_resources().into_iter().cloned().collect())
    }
}
