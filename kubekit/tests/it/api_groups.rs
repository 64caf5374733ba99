//! The clientset's table of built-in resources against what the real API server serves:
//! nothing it serves with list and watch is missing, and everything in the table it serves
//! lists through its typed client.

use std::collections::{BTreeSet, HashSet};

use kubekit::clientset::{Clientset, ListOptions, built_in_resources};
use kubekit::discovery::{ApiDiscovery, DiscoveryClient};

use crate::common::admin_client;

/// Resources kube-apiserver serves that `k8s-openapi` (v1_37, generated from the same
/// release's OpenAPI document) has no type for, so the table cannot name them. None so far.
const WITHOUT_A_K8S_OPENAPI_TYPE: &[(&str, &str, &str)] = &[];

async fn discover(clientset: &Clientset) -> ApiDiscovery {
    let all = DiscoveryClient::new(clientset.rest_client().clone())
        .server_groups_and_resources()
        .await
        .unwrap();
    assert!(all.failed.is_empty(), "{:?}", all.failed);
    all
}

/// The group versions kube-apiserver serves itself: those the aggregator registers at
/// start (APIServices labelled `onstart`; the ones custom resource definitions add, which
/// other tests make, are labelled `true`) and the aggregator's own group, which has no
/// APIService.
async fn built_in_group_versions(
    clientset: &Clientset,
    served: &ApiDiscovery,
) -> HashSet<(String, String)> {
    let services = clientset
        .apiregistration_v1()
        .api_services()
        .list(&ListOptions::default().labels("kube-aggregator.kubernetes.io/automanaged=onstart"))
        .await
        .unwrap();
    let aggregator = served
        .groups
        .iter()
        .filter(|g| g.name == "apiregistration.k8s.io")
        .flat_map(|g| g.versions.iter().map(|v| (g.name.clone(), v.clone())));
    services
        .items
        .into_iter()
        .filter_map(|s| s.spec)
        .map(|spec| {
            (
                spec.group.unwrap_or_default(),
                spec.version.unwrap_or_default(),
            )
        })
        .chain(aggregator)
        .collect()
}

#[tokio::test]
async fn every_built_in_resource_served_with_list_and_watch_is_in_the_table() {
    let clientset = Clientset::from_rest_client(admin_client().await);
    let served = discover(&clientset).await;
    let built_in = built_in_group_versions(&clientset, &served).await;
    for gv in [
        ("", "v1"),
        ("apps", "v1"),
        ("networking.k8s.io", "v1"),
        ("apiregistration.k8s.io", "v1"),
    ] {
        assert!(
            built_in.contains(&(gv.0.to_string(), gv.1.to_string())),
            "{gv:?} is not among the built-in group versions {built_in:?}"
        );
    }
    let table: HashSet<_> = built_in_resources().iter().map(|r| r.gvr()).collect();

    let mut checked = 0;
    let mut missing = BTreeSet::new();
    for r in &served.resources {
        let built_in_gv = built_in.contains(&(r.group.clone(), r.version.clone()));
        if !(built_in_gv && r.supports("list") && r.supports("watch")) {
            continue;
        }
        checked += 1;
        let exempt = WITHOUT_A_K8S_OPENAPI_TYPE.contains(&(
            r.group.as_str(),
            r.version.as_str(),
            r.name.as_str(),
        ));
        if !table.contains(&r.gvr()) && !exempt {
            missing.insert(format!("{} (kind {})", r.gvr(), r.kind));
        }
    }
    assert!(checked >= 50, "only {checked} built-in resources served");
    assert!(
        missing.is_empty(),
        "served with list and watch but missing from the clientset's table: {missing:#?}"
    );
}

#[tokio::test]
async fn every_table_resource_the_server_serves_lists_through_its_typed_client() {
    let clientset = Clientset::from_rest_client(admin_client().await);
    let served = discover(&clientset).await;

    let mut listed = 0;
    let mut failures = Vec::new();
    for entry in built_in_resources() {
        let Some(resource) = served.resource(&entry.gvr()) else {
            continue; // an alpha or beta version not enabled, or not in this release
        };
        let watchable = resource.supports("list") && resource.supports("watch");
        if (resource.kind.as_str(), resource.namespaced, watchable)
            != (entry.kind, entry.namespaced, entry.informer)
        {
            failures.push(format!(
                "{}: the server says kind {}, namespaced {}, list+watch {}; the table {entry:?}",
                entry.gvr(),
                resource.kind,
                resource.namespaced,
                watchable
            ));
        }
        if !resource.supports("list") {
            continue; // bindings: create only
        }
        match entry
            .list_typed(&clientset, &ListOptions::default().limit(1))
            .await
        {
            Ok(_) => listed += 1,
            Err(e) => failures.push(format!("{}: {e}", entry.accessor)),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(listed >= 50, "only {listed} table resources served");
}
