//! Discovery: the legacy documents (`/apis`, `/api/v1`, `/apis/<group>/<version>`) and
//! aggregated discovery (`apidiscovery.k8s.io/v2`, one document for `/api` and one for
//! `/apis`), both made from the served resources, CRDs included.
//!
//! # Contract
//!
//! - `/apis/<group>` answers the group's `APIGroup`; a custom resource group lists its
//!   served versions in Kubernetes' version priority (GA, beta, alpha, each by number,
//!   then others by name), and a version it does not serve is `404 page not found`.
//! - `/api` and `/apis` answer an `APIGroupDiscoveryList` when the `Accept` header asks
//!   for `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` before any
//!   plain JSON, with that content type; otherwise the legacy document. `v2beta1` is not
//!   offered (kube-apiserver 1.37 answers it with the legacy document too).
//! - Entries carry what kube-apiserver 1.37 gives for the same resources: verbs, scope,
//!   singular name, short names, categories, the `scale` and `status` subresources, `responseKind`
//!   (with an empty group and version for a built-in resource), freshness `Current`.

use http::HeaderMap;
use http::header::ACCEPT;
use serde_json::{Value, json};

use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};
use crate::store::Store;

/// The content type of an aggregated discovery answer.
pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The verbs of a `status` or `scale` subresource.
pub const SUBRESOURCE_VERBS: &[&str] = &["get", "patch", "update"];

/// Whether `Accept` asks for aggregated discovery (v2) before anything the fake would
/// answer with a legacy document.
pub fn wants_aggregated(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for media in accept {
        let mut parts = media.split(';').map(str::trim);
        let essence = parts.next().unwrap_or_default();
        let params: Vec<&str> = parts.collect();
        let aggregated_v2 = ["g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"]
            .iter()
            .all(|p| params.contains(p));
        if essence == "application/json" && aggregated_v2 {
            return true;
        }
        if matches!(essence, "application/json" | "*/*" | "application/*") && params.is_empty() {
            return false;
        }
    }
    false
}

/// The groups of the served resources (without the core group), each with its versions,
/// in the order the resources were added.
fn groups(store: &Store) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in store.resources().iter().filter(|r| !r.group.is_empty()) {
        let entry = match groups.iter_mut().position(|(g, _)| *g == r.group) {
            Some(i) => &mut groups[i].1,
            None => {
                groups.push((r.group.clone(), Vec::new()));
                &mut groups.last_mut().expect("just pushed").1
            }
        };
        for v in &r.versions {
            if !entry.contains(v) {
                entry.push(v.clone());
            }
        }
        if !r.builtin {
            entry.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        }
    }
    groups
}

/// How Kubernetes orders a custom resource's versions, highest first: GA before beta
/// before alpha (each by its numbers, highest first), then any other name in alphabetical
/// order.
fn version_priority(version: &str) -> (u8, u64, u64, std::cmp::Reverse<String>) {
    let other = (0, 0, 0, std::cmp::Reverse(version.to_string()));
    let Some(rest) = version.strip_prefix('v') else {
        return other;
    };
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let Ok(major) = rest[..digits].parse::<u64>() else {
        return other;
    };
    let tail = &rest[digits..];
    let none = std::cmp::Reverse(String::new());
    if tail.is_empty() {
        return (3, major, 0, none);
    }
    for (level, word) in [(2, "beta"), (1, "alpha")] {
        if let Some(minor) = tail.strip_prefix(word)
            && let Ok(minor) = minor.parse::<u64>()
        {
            return (level, major, minor, none);
        }
    }
    other
}

/// The resources served at `group`/`version`.
pub(crate) fn served_at<'a>(store: &'a Store, group: &str, version: &str) -> Vec<&'a ResourceInfo> {
    store
        .resources()
        .iter()
        .filter(|r| r.group == group && r.versions.iter().any(|v| v == version))
        .collect()
}

/// The legacy `APIGroupList` of `/apis`.
pub fn group_list(store: &Store) -> Value {
    let groups: Vec<Value> = groups(store)
        .into_iter()
        .map(|(name, versions)| {
            let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
            json!({
                "name": name,
                "versions": versions.iter().map(gv).collect::<Vec<_>>(),
                "preferredVersion": gv(&versions[0]),
            })
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// The legacy `APIGroup` of `/apis/<group>`; `None` for a group not served.
pub fn group(store: &Store, name: &str) -> Option<Value> {
    let doc = group_list(store);
    let found = doc["groups"]
        .as_array()?
        .iter()
        .find(|g| g["name"] == name)?
        .clone();
    let mut group = json!({"kind": "APIGroup", "apiVersion": "v1"});
    for k in ["name", "versions", "preferredVersion"] {
        group[k] = found[k].clone();
    }
    Some(group)
}

/// Whether `name` is a group the server serves.
pub fn serves_group(store: &Store, name: &str) -> bool {
    groups(store).iter().any(|(g, _)| g == name)
}

/// The legacy `APIResourceList` of `/api/v1` or `/apis/<group>/<version>`.
pub fn resource_list(store: &Store, group: &str, version: &str) -> ApiResult<Value> {
    let served = served_at(store, group, version);
    if served.is_empty() {
        // A custom resource group's version that is not served has no handler at all.
        if store
            .resources()
            .iter()
            .any(|r| r.group == group && !r.builtin)
        {
            return Err(ApiError::new(404, "NotFound", "404 page not found"));
        }
        return Err(ApiError::no_route());
    }
    let mut resources = Vec::new();
    for r in served {
        let mut entry = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": r.verbs,
        });
        add_names(&mut entry, r);
        resources.push(entry);
        if r.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", r.plural), "singularName": "",
                "namespaced": r.namespaced, "group": "autoscaling", "version": "v1",
                "kind": "Scale", "verbs": SUBRESOURCE_VERBS,
            }));
        }
        if r.status {
            resources.push(json!({
                "name": format!("{}/status", r.plural), "singularName": "",
                "namespaced": r.namespaced, "kind": r.kind, "verbs": SUBRESOURCE_VERBS,
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(json!({
        "kind": "APIResourceList", "apiVersion": "v1",
        "groupVersion": group_version, "resources": resources,
    }))
}

/// Adds a resource's short names and categories to its discovery entry (left out when
/// there are none, as the real server leaves them out).
fn add_names(entry: &mut Value, r: &ResourceInfo) {
    if !r.short_names.is_empty() {
        entry["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        entry["categories"] = json!(r.categories);
    }
}

/// One resource of an aggregated discovery document (`APIResourceDiscovery`).
fn resource_entry(r: &ResourceInfo, version: &str) -> Value {
    // Built-in resources leave their own group and version out; custom resources name them.
    let response_kind = if r.builtin {
        json!({"group": "", "version": "", "kind": r.kind})
    } else {
        json!({"group": r.group, "version": version, "kind": r.kind})
    };
    let mut entry = json!({
        "resource": r.plural,
        "responseKind": response_kind,
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    add_names(&mut entry, r);
    let mut subresources = Vec::new();
    if r.status {
        subresources.push(json!({
            "subresource": "status", "responseKind": response_kind, "verbs": SUBRESOURCE_VERBS,
        }));
    }
    if r.scale.is_some() {
        let scale = json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": SUBRESOURCE_VERBS,
        });
        // The real server lists a built-in resource's scale first, a custom one's last.
        subresources.insert(if r.builtin { 0 } else { subresources.len() }, scale);
    }
    if !subresources.is_empty() {
        entry["subresources"] = json!(subresources);
    }
    entry
}

/// One group (`APIGroupDiscovery`): `name` (empty for the core group) at `versions`.
fn group_entry(store: &Store, name: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = served_at(store, name, v)
                .into_iter()
                .map(|r| resource_entry(r, v))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let metadata = if name.is_empty() {
        json!({})
    } else {
        json!({"name": name})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// The aggregated discovery document of `/api` (`core`) or `/apis`.
pub fn aggregated(store: &Store, core: bool) -> Value {
    let items: Vec<Value> = if core {
        vec![group_entry(store, "", &["v1".to_string()])]
    } else {
        groups(store)
            .iter()
            .map(|(name, versions)| group_entry(store, name, versions))
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn accept(value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn aggregated_discovery_is_served_when_asked_for_before_plain_json() {
        assert!(wants_aggregated(&accept(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        )));
        assert!(wants_aggregated(&accept(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )));
        assert!(!wants_aggregated(&accept(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
        )));
        assert!(!wants_aggregated(&accept("application/json, */*")));
        assert!(!wants_aggregated(&HeaderMap::new()));
    }

    #[test]
    fn the_core_document_lists_namespaces_without_deletecollection_and_with_status() {
        let doc = aggregated(&Store::new(), true);
        let resources = doc["items"][0]["versions"][0]["resources"]
            .as_array()
            .unwrap();
        let ns = resources
            .iter()
            .find(|r| r["resource"] == "namespaces")
            .unwrap();
        assert_eq!(ns["scope"], "Cluster");
        assert!(
            !ns["verbs"]
                .as_array()
                .unwrap()
                .contains(&json!("deletecollection"))
        );
        assert_eq!(ns["subresources"][0]["subresource"], "status");
    }
}
