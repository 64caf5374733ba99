//! The server's discovery documents as they arrive on the wire, and their conversion into
//! [`ApiDiscovery`]: aggregated discovery (`apidiscovery.k8s.io/v2`, one document for `/api`
//! and one for `/apis`) and the legacy documents (`/api`, `/apis`, and one
//! `APIResourceList` per group/version).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResource, APIResourceList};
use serde::Deserialize;

use super::model::{ApiGroup, ApiResource};

/// `Accept` header asking for aggregated discovery, falling back to the legacy document.
pub(super) const AGGREGATED_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// Whether a response's content type is an aggregated discovery document.
pub(super) fn is_aggregated(content_type: &str) -> bool {
    content_type.contains("as=APIGroupDiscoveryList")
}

#[derive(Deserialize)]
pub(super) struct GroupDiscoveryList {
    #[serde(default)]
    items: Vec<GroupDiscovery>,
}

#[derive(Deserialize)]
struct GroupDiscovery {
    #[serde(default)]
    metadata: NameOnly,
    #[serde(default)]
    versions: Vec<VersionDiscovery>,
}

#[derive(Deserialize, Default)]
struct NameOnly {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct VersionDiscovery {
    version: String,
    #[serde(default)]
    resources: Vec<ResourceDiscovery>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceDiscovery {
    resource: String,
    #[serde(default)]
    response_kind: Option<KindRef>,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    singular_resource: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
    #[serde(default)]
    subresources: Vec<SubresourceDiscovery>,
}

#[derive(Deserialize)]
struct KindRef {
    #[serde(default)]
    kind: String,
}

#[derive(Deserialize)]
struct SubresourceDiscovery {
    subresource: String,
}

impl GroupDiscoveryList {
    /// Appends this document's groups and resources.
    pub(super) fn collect_into(self, groups: &mut Vec<ApiGroup>, resources: &mut Vec<ApiResource>) {
        for g in self.items {
            groups.push(ApiGroup {
                name: g.metadata.name.clone(),
                versions: g.versions.iter().map(|v| v.version.clone()).collect(),
            });
            for v in g.versions {
                resources.extend(v.resources.into_iter().map(|r| ApiResource {
                    group: g.metadata.name.clone(),
                    version: v.version.clone(),
                    kind: r.response_kind.map(|k| k.kind).unwrap_or_default(),
                    namespaced: r.scope == "Namespaced",
                    singular: r.singular_resource,
                    verbs: r.verbs,
                    short_names: r.short_names,
                    categories: r.categories,
                    subresources: r.subresources.into_iter().map(|s| s.subresource).collect(),
                    name: r.resource,
                }));
            }
        }
    }
}

/// Resources of one legacy `APIResourceList`: subresource entries (`pods/status`) are
/// folded into their parent's `subresources`.
pub(super) fn legacy_resources(
    group: &str,
    version: &str,
    list: APIResourceList,
) -> Vec<ApiResource> {
    let mut out: Vec<ApiResource> = Vec::new();
    let (main, subs): (Vec<APIResource>, Vec<APIResource>) = list
        .resources
        .into_iter()
        .partition(|r| !r.name.contains('/'));
    for r in main {
        out.push(ApiResource {
            group: group.to_string(),
            version: version.to_string(),
            singular: r.singular_name,
            kind: r.kind,
            namespaced: r.namespaced,
            verbs: r.verbs,
            short_names: r.short_names.unwrap_or_default(),
            categories: r.categories.unwrap_or_default(),
            subresources: Vec::new(),
            name: r.name,
        });
    }
    for s in subs {
        if let Some((parent, sub)) = s.name.split_once('/')
            && let Some(p) = out.iter_mut().find(|r| r.name == parent)
        {
            p.subresources.push(sub.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_document_becomes_groups_in_preference_order_and_resources() {
        let doc = br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[
          {"metadata":{"name":"autoscaling"},"versions":[
            {"version":"v2","resources":[{"resource":"horizontalpodautoscalers","responseKind":{"group":"autoscaling","version":"v2","kind":"HorizontalPodAutoscaler"},"scope":"Namespaced","singularResource":"horizontalpodautoscaler","verbs":["get","list"],"shortNames":["hpa"],"categories":["all"],"subresources":[{"subresource":"status","verbs":["get"]}]}],"freshness":"Current"},
            {"version":"v1","resources":[],"freshness":"Current"}]}]}"#;
        let list: GroupDiscoveryList = serde_json::from_slice(doc).unwrap();
        let (mut groups, mut resources) = (vec![], vec![]);
        list.collect_into(&mut groups, &mut resources);
        assert_eq!(
            groups,
            [ApiGroup {
                name: "autoscaling".into(),
                versions: vec!["v2".into(), "v1".into()]
            }]
        );
        let hpa = &resources[0];
        assert_eq!(
            (hpa.kind.as_str(), hpa.namespaced, hpa.version.as_str()),
            ("HorizontalPodAutoscaler", true, "v2")
        );
        assert_eq!(hpa.short_names, ["hpa"]);
        assert_eq!(hpa.subresources, ["status"]);
    }

    #[test]
    fn legacy_subresources_fold_into_their_parent() {
        let list: APIResourceList = serde_json::from_value(serde_json::json!({
            "groupVersion": "v1",
            "resources": [
                {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": ["get"]},
                {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]},
                {"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]},
                {"name": "nodes", "singularName": "node", "namespaced": false, "kind": "Node", "verbs": ["list"]}
            ]
        }))
        .unwrap();
        let r = legacy_resources("", "v1", list);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].subresources, ["status", "log"]);
        assert!(!r[1].namespaced);
    }
}
