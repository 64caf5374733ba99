//! Integration tests of `kubekit::discovery` against the real API server.

use std::time::{Duration, SystemTime};

use kubekit::discovery::{CacheStats, CachedDiscoveryClient, DiscoveryClient};
use kubekit::meta::{GroupVersion, GroupVersionKind, GroupVersionResource};
use serde_json::json;

use crate::common::admin_client;
use testenv::eventually;

#[tokio::test]
async fn server_version_is_the_pinned_kubernetes_release() {
    let d = kubekit::clientset::Clientset::from_rest_client(admin_client().await).discovery();
    let v = d.server_version().await.unwrap();
    assert_eq!((v.major.as_str(), v.minor.as_str()), ("1", "37"));
    assert!(v.git_version.starts_with("v1.37."), "{}", v.git_version);
}

#[tokio::test]
async fn groups_and_resources_describe_core_and_apps_with_scope_and_subresources() {
    let d = DiscoveryClient::new(admin_client().await);
    let all = d.server_groups_and_resources().await.unwrap();
    assert!(all.failed.is_empty(), "{:?}", all.failed);
    assert_eq!(all.groups[0].name, "", "core group first");
    assert!(
        all.groups
            .iter()
            .any(|g| g.name == "apps" && g.preferred_version() == Some("v1"))
    );
    let pods = all
        .resource(&GroupVersionResource::new("", "v1", "pods"))
        .expect("pods");
    assert!(pods.namespaced && pods.kind == "Pod" && pods.supports("watch"));
    assert!(pods.subresources.iter().any(|s| s == "status"));
    let nodes = all
        .resource(&GroupVersionResource::new("", "v1", "nodes"))
        .expect("nodes");
    assert!(!nodes.namespaced);

    let groups = d.server_groups().await.unwrap();
    assert_eq!(groups, all.groups);

    // The legacy per-group-version endpoint agrees with the aggregated document.
    let apps = d
        .server_resources_for_group_version(&GroupVersion::new("apps", "v1"))
        .await
        .unwrap();
    let deploy = apps
        .iter()
        .find(|r| r.name == "deployments")
        .expect("deployments");
    assert!(deploy.subresources.iter().any(|s| s == "scale"));
    assert_eq!(
        Some(deploy),
        all.resource(&GroupVersionResource::new("apps", "v1", "deployments"))
    );
}

#[tokio::test]
async fn preferred_resources_list_each_resource_once() {
    let d = DiscoveryClient::new(admin_client().await);
    let preferred = d.server_preferred_resources().await.unwrap();
    let mut keys: Vec<_> = preferred
        .iter()
        .map(|r| (r.group.clone(), r.name.clone()))
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "a resource listed in two versions");
    assert!(
        preferred
            .iter()
            .any(|r| r.group == "autoscaling" && r.version == "v2")
    );
}

fn stats(memory_hits: u64, disk_hits: u64, server_fetches: u64) -> CacheStats {
    CacheStats {
        memory_hits,
        disk_hits,
        server_fetches,
    }
}

#[tokio::test]
async fn disk_cache_hits_within_ttl_misses_after_expiry_and_invalidate() {
    let rest = admin_client().await;
    let dir = std::env::temp_dir().join(format!("kubekit-discovery-cache-{}", std::process::id()));
    let host: http::Uri = "https://127.0.0.1:6443".parse().unwrap();
    let ttl = Duration::from_secs(600);
    let new_client =
        || CachedDiscoveryClient::disk(DiscoveryClient::new(rest.clone()), &dir, &host, ttl);

    let first = new_client();
    let from_server = first.discovery().await.unwrap();
    first.discovery().await.unwrap();
    assert_eq!(first.stats(), stats(1, 0, 1), "miss, then memory hit");
    assert!(first.fresh());
    let file = first.cache_file().unwrap().to_path_buf();
    assert!(
        file.starts_with(dir.join("127.0.0.1_6443")),
        "{}",
        file.display()
    );

    let second = new_client();
    assert_eq!(*second.discovery().await.unwrap(), *from_server);
    assert_eq!(
        second.stats(),
        stats(0, 1, 0),
        "another process reads the file"
    );
    assert!(!second.fresh());

    // Age the file past the TTL: the next client goes back to the server.
    let old = SystemTime::now() - ttl - Duration::from_secs(1);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let third = new_client();
    third.discovery().await.unwrap();
    assert_eq!(third.stats(), stats(0, 0, 1), "expired file is a miss");

    third.invalidate();
    assert!(!file.exists(), "invalidate removes the file");
    third.discovery().await.unwrap();
    assert_eq!(third.stats(), stats(0, 0, 2));

    std::fs::write(&file, b"{ corrupt").unwrap();
    let fourth = new_client();
    fourth.discovery().await.unwrap();
    assert_eq!(
        fourth.stats(),
        stats(0, 0, 1),
        "a corrupt file is a miss, not an error"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn stale_cached_discovery_refreshes_for_a_kind_installed_since() {
    let rest = admin_client().await;
    let dir = std::env::temp_dir().join(format!("kubekit-discovery-crd-{}", std::process::id()));
    let host: http::Uri = "https://kubekit-crd-test:1".parse().unwrap();
    let ttl = Duration::from_secs(600);
    let widget = GroupVersionKind::new("discovery-test.kubekit.dev", "v1", "Widget");

    let before = CachedDiscoveryClient::disk(DiscoveryClient::new(rest.clone()), &dir, &host, ttl);
    assert!(
        before.rest_mapping(&widget).await.is_err(),
        "not installed yet"
    );

    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.discovery-test.kubekit.dev"},
        "spec": {
            "group": "discovery-test.kubekit.dev",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Cluster",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    });
    rest.post()
        .group_version("apiextensions.k8s.io", "v1")
        .resource("customresourcedefinitions")
        .body(&crd)
        .send()
        .await
        .expect("create CRD");

    // A client reading the old file is not fresh: an unknown kind makes it refresh.
    let after = CachedDiscoveryClient::disk(DiscoveryClient::new(rest.clone()), &dir, &host, ttl);
    let mapping = eventually(30, "Widget served", || async {
        let m = after.rest_mapping(&widget).await.ok();
        if m.is_none() {
            // Still not served by the server: make the next try read stale data again.
            after.invalidate();
        }
        m
    })
    .await;
    assert_eq!(
        mapping.resource,
        GroupVersionResource::new("discovery-test.kubekit.dev", "v1", "widgets")
    );
    assert!(!mapping.namespaced);
    assert!(after.stats().server_fetches >= 1);
    std::fs::remove_dir_all(&dir).ok();
}
