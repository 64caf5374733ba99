//! [`RestMapper`]: from a kind (GVK) to the resource (GVR) that serves it and back, with
//! its scope — what a dynamic client or `kubectl apply` needs to turn a manifest into a
//! request.

use std::collections::HashMap;

use super::model::ApiDiscovery;
use crate::meta::{GroupVersionKind, GroupVersionResource};

/// How objects of a kind are reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestMapping {
    /// The resource that serves the kind.
    pub resource: GroupVersionResource,
    /// The kind.
    pub kind: GroupVersionKind,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// The server does not serve what was asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no match for {what}: the server does not serve it (is its CRD installed?)")]
pub struct NoMatchError {
    /// What was looked up, e.g. `apps/v1, Kind=Deployment`.
    pub what: String,
}

/// A snapshot mapping between kinds and resources; build it from an [`ApiDiscovery`].
#[derive(Debug, Clone, Default)]
pub struct RestMapper {
    by_kind: HashMap<GroupVersionKind, RestMapping>,
    by_resource: HashMap<GroupVersionResource, GroupVersionKind>,
    /// (group, kind) → mapping in the group's most preferred version that serves the kind.
    preferred: HashMap<(String, String), RestMapping>,
}

impl RestMapper {
    /// Indexes `discovery`.
    pub fn new(discovery: &ApiDiscovery) -> Self {
        let mut m = Self::default();
        for r in &discovery.resources {
            let mapping = RestMapping {
                resource: r.gvr(),
                kind: r.gvk(),
                namespaced: r.namespaced,
            };
            m.by_resource
                .insert(mapping.resource.clone(), mapping.kind.clone());
            m.by_kind.entry(mapping.kind.clone()).or_insert(mapping);
        }
        for g in &discovery.groups {
            for v in &g.versions {
                for r in discovery
                    .resources
                    .iter()
                    .filter(|r| r.group == g.name && r.version == *v)
                {
                    m.preferred
                        .entry((g.name.clone(), r.kind.clone()))
                        .or_insert_with(|| m.by_kind[&r.gvk()].clone());
                }
            }
        }
        m
    }

    /// The resource serving `kind`.
    pub fn rest_mapping(&self, kind: &GroupVersionKind) -> Result<RestMapping, NoMatchError> {
        self.by_kind.get(kind).cloned().ok_or_else(|| NoMatchError {
            what: kind.to_string(),
        })
    }

    /// The resource serving `kind` of `group` in the group's preferred version that has it.
    pub fn rest_mapping_for_group_kind(
        &self,
        group: &str,
        kind: &str,
    ) -> Result<RestMapping, NoMatchError> {
        self.preferred
            .get(&(group.to_string(), kind.to_string()))
            .cloned()
            .ok_or_else(|| NoMatchError {
                what: format!("{kind} in group {group:?}"),
            })
    }

    /// The kind served by `resource`.
    pub fn kind_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<GroupVersionKind, NoMatchError> {
        self.by_resource
            .get(resource)
            .cloned()
            .ok_or_else(|| NoMatchError {
                what: resource.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::{ApiGroup, ApiResource};

    fn resource(
        group: &str,
        version: &str,
        name: &str,
        kind: &str,
        namespaced: bool,
    ) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: version.into(),
            name: name.into(),
            singular: String::new(),
            kind: kind.into(),
            namespaced,
            verbs: vec![],
            short_names: vec![],
            categories: vec![],
            subresources: vec![],
        }
    }

    fn discovery() -> ApiDiscovery {
        ApiDiscovery {
            groups: vec![
                ApiGroup {
                    name: "".into(),
                    versions: vec!["v1".into()],
                },
                ApiGroup {
                    name: "autoscaling".into(),
                    versions: vec!["v2".into(), "v1".into()],
                },
            ],
            resources: vec![
                resource("", "v1", "nodes", "Node", false),
                resource("", "v1", "pods", "Pod", true),
                resource(
                    "autoscaling",
                    "v1",
                    "horizontalpodautoscalers",
                    "HorizontalPodAutoscaler",
                    true,
                ),
                resource(
                    "autoscaling",
                    "v2",
                    "horizontalpodautoscalers",
                    "HorizontalPodAutoscaler",
                    true,
                ),
            ],
            failed: vec![],
        }
    }

    #[test]
    fn kind_maps_to_resource_with_scope_and_back() {
        let m = RestMapper::new(&discovery());
        let node = m
            .rest_mapping(&GroupVersionKind::new("", "v1", "Node"))
            .unwrap();
        assert_eq!(node.resource, GroupVersionResource::new("", "v1", "nodes"));
        assert!(!node.namespaced);
        assert!(
            m.rest_mapping(&GroupVersionKind::new("", "v1", "Pod"))
                .unwrap()
                .namespaced
        );
        assert_eq!(
            m.kind_for(&GroupVersionResource::new("", "v1", "pods"))
                .unwrap(),
            GroupVersionKind::new("", "v1", "Pod")
        );
    }

    #[test]
    fn group_kind_maps_to_the_preferred_version() {
        let m = RestMapper::new(&discovery());
        let hpa = m
            .rest_mapping_for_group_kind("autoscaling", "HorizontalPodAutoscaler")
            .unwrap();
        assert_eq!(hpa.resource.version, "v2");
    }

    #[test]
    fn unknown_kind_or_resource_is_a_no_match_error() {
        let m = RestMapper::new(&discovery());
        let err = m
            .rest_mapping(&GroupVersionKind::new("appcontroller.k8s.io", "v1", "App"))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("appcontroller.k8s.io/v1, Kind=App"),
            "{err}"
        );
        assert!(
            m.kind_for(&GroupVersionResource::new("", "v1", "widgets"))
                .is_err()
        );
    }
}
