//! What discovery finds: API groups with their versions, and the resources each
//! group/version serves. One model for both ways the server describes itself (aggregated
//! discovery documents and the legacy per-group-version lists), serializable so the disk
//! cache can keep it.

use serde::{Deserialize, Serialize};

use crate::meta::{GroupVersion, GroupVersionKind, GroupVersionResource};

/// An API group and the versions the server serves, most preferred first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiGroup {
    /// Group name; empty for the core group.
    pub name: String,
    /// Served versions, the preferred one first.
    pub versions: Vec<String>,
}

impl ApiGroup {
    /// The version clients should use when they have no preference.
    pub fn preferred_version(&self) -> Option<&str> {
        self.versions.first().map(String::as_str)
    }
}

/// A resource served in one group/version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiResource {
    /// API group; empty for the core group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Plural resource name used in URLs, e.g. `deployments`.
    pub name: String,
    /// Singular name, e.g. `deployment` (may be empty on old servers).
    pub singular: String,
    /// Kind of the objects, e.g. `Deployment`.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Verbs the resource supports (`get`, `list`, `watch`, `create`, …).
    pub verbs: Vec<String>,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Subresources (`status`, `scale`, …).
    pub subresources: Vec<String>,
}

impl ApiResource {
    /// The resource's group/version/resource.
    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::new(&self.group, &self.version, &self.name)
    }

    /// The kind of its objects.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, &self.kind)
    }

    /// The group/version it is served in.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }

    /// Whether the resource supports `verb`.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// Everything the server serves: groups (the core group first) and resources of every
/// served version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiDiscovery {
    /// API groups, the core group (`""`) first.
    pub groups: Vec<ApiGroup>,
    /// Resources of every group and version, in the server's order.
    pub resources: Vec<ApiResource>,
    /// Group/versions that could not be discovered, each with the reason (legacy
    /// discovery only; their resources are missing from `resources`).
    #[serde(default)]
    pub failed: Vec<String>,
}

impl ApiDiscovery {
    /// Resources served in group/version `gv`.
    pub fn resources_for(&self, gv: &GroupVersion) -> impl Iterator<Item = &ApiResource> {
        self.resources
            .iter()
            .filter(move |r| r.group == gv.group && r.version == gv.version)
    }

    /// Resources of each group's preferred version (client-go's
    /// `ServerPreferredResources`).
    pub fn preferred_resources(&self) -> Vec<&ApiResource> {
        let preferred: Vec<GroupVersion> = self
            .groups
            .iter()
            .filter_map(|g| g.preferred_version().map(|v| GroupVersion::new(&g.name, v)))
            .collect();
        preferred
            .iter()
            .flat_map(|gv| self.resources_for(gv))
            .collect()
    }

    /// The resource with this group/version/resource, if served.
    pub fn resource(&self, gvr: &GroupVersionResource) -> Option<&ApiResource> {
        self.resources
            .iter()
            .find(|r| r.group == gvr.group && r.version == gvr.version && r.name == gvr.resource)
    }
}
