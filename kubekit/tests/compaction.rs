//! Tests that compact etcd. A compaction affects every watch and list of the control plane
//! it runs on, so these tests run in their own test binary, with their own control plane,
//! away from the tests in `it/` that watch ConfigMaps.

#[path = "it/common.rs"]
mod common;
#[path = "it/configmaps.rs"]
mod configmaps;

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::cache::ListWatch;
use kubekit::clientset::Clientset;
use kubekit::rest::{PatchType, WatchEvent};
use kubekit::watch::RetryWatcher;
use serde_json::json;

use common::{admin_client, namespace};
use configmaps::{configmaps, create_configmap};

#[tokio::test]
async fn watch_from_a_compacted_resource_version_reports_gone() {
    let client = admin_client().await;
    let ns = namespace("rest-gone").await;
    let first = create_configmap(&client, &ns, "a").await;
    let old_rv = first.metadata.resource_version.unwrap();
    let mut latest = String::new();
    for i in 0..3 {
        let c: ConfigMap = configmaps(client.patch(PatchType::Merge), &ns)
            .name("a")
            .body(&json!({"data": {"k": format!("v{i}")}}))
            .send()
            .await
            .unwrap()
            .decode()
            .unwrap();
        latest = c.metadata.resource_version.unwrap();
    }
    testenv::control_plane().compact_etcd(latest.parse().unwrap());

    // The server reports the expiry either as the watch's HTTP status or as its first event.
    let gone = match configmaps(client.get(), &ns)
        .param("resourceVersion", &old_rv)
        .watch::<ConfigMap>()
        .await
    {
        Err(e) => e.is_gone() || e.is_resource_expired(),
        Ok(stream) => {
            let mut stream = Box::pin(stream);
            match tokio::time::timeout(Duration::from_secs(20), stream.next())
                .await
                .expect("an event")
            {
                Some(Ok(WatchEvent::Error(status))) => status.code == Some(410),
                other => panic!("expected an ERROR event with 410, got {other:?}"),
            }
        }
    };
    assert!(
        gone,
        "watching from compacted resourceVersion {old_rv} must report 410 Gone"
    );
}

#[tokio::test]
async fn a_retry_watcher_from_a_compacted_resource_version_passes_on_the_410_and_ends() {
    let client = admin_client().await;
    let ns = namespace("retry-watcher-gone").await;
    let created = |name| create_configmap(&client, &ns, name);
    let old_rv = created("a").await.metadata.resource_version.unwrap();
    let (_, _, latest) = (created("b").await, created("c").await, created("d").await);
    let latest = latest.metadata.resource_version.unwrap();
    testenv::control_plane().compact_etcd(latest.parse().unwrap());

    let cms = Clientset::from_rest_client(client)
        .core_v1()
        .config_maps(&ns);
    let mut watcher = RetryWatcher::new(ListWatch::new(cms), &old_rv).unwrap();
    let ends = async {
        // Some(…) of a 410 (as the watch's HTTP status or as its first event), then None.
        let gone = match watcher.next().await.expect("the 410") {
            Err(e) => e.code() == Some(410),
            Ok(WatchEvent::Error(status)) => status.code == Some(410),
            Ok(other) => panic!("expected a 410, got {}", other.type_name()),
        };
        (gone, watcher.next().await.is_none())
    };
    let ended = tokio::time::timeout(Duration::from_secs(30), ends).await;
    assert_eq!(ended.expect("ends within 30 s"), (true, true));
}

#[tokio::test]
async fn an_informer_whose_watch_version_was_compacted_relists_and_matches_the_server() {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use kubekit::cache::{ListWatch, SharedIndexInformer};
    use kubekit::clientset::{Clientset, ListOptions};
    use parking_lot::Mutex;
    use tokio_util::sync::CancellationToken;

    let client = admin_client().await;
    let cs = Clientset::from_rest_client(client.clone());
    let ns = namespace("inf-gone").await;
    let elsewhere = namespace("inf-gone-bump").await;
    for i in 0..10 {
        create_configmap(&client, &ns, &format!("cm-{i}")).await;
    }
    let informer = Arc::new(SharedIndexInformer::<ConfigMap>::new(
        Arc::new(ListWatch::new(cs.core_v1().config_maps(&ns))),
        Duration::ZERO,
    ));
    // Short watches, so the informer soon re-watches from its (soon compacted) version.
    informer.configure_reflector(|o| o.min_watch_timeout = Duration::from_secs(1));
    let gone = Arc::new(Mutex::new(0usize));
    informer.set_watch_error_handler({
        let gone = gone.clone();
        move |e| {
            if e.is_gone() || e.is_resource_expired() {
                *gone.lock() += 1;
            }
        }
    });
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    informer.wait_for_sync(&CancellationToken::new()).await;
    let seen_rv = informer.last_sync_resource_version();

    // Move etcd past the informer's version in another namespace, then compact.
    let mut latest = String::new();
    for i in 0..3 {
        latest = create_configmap(&client, &elsewhere, &format!("bump-{i}"))
            .await
            .metadata
            .resource_version
            .unwrap();
    }
    testenv::control_plane().compact_etcd(latest.parse().unwrap());
    testenv::eventually(60, "the informer to see 410 Gone", || {
        let gone = gone.clone();
        async move { (*gone.lock() > 0).then_some(()) }
    })
    .await;

    // The relisted cache follows the server from here on.
    create_configmap(&client, &ns, "after").await;
    configmaps(client.delete(), &ns)
        .name("cm-0")
        .send()
        .await
        .unwrap();
    let server = || async {
        cs.core_v1()
            .config_maps(&ns)
            .list(&ListOptions::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|c| {
                (
                    c.metadata.name.unwrap(),
                    c.metadata.resource_version.unwrap(),
                )
            })
            .collect::<BTreeSet<_>>()
    };
    let cache = || {
        informer
            .indexer()
            .list()
            .iter()
            .map(|c| {
                (
                    c.metadata.name.clone().unwrap(),
                    c.metadata.resource_version.clone().unwrap(),
                )
            })
            .collect::<BTreeSet<_>>()
    };
    testenv::eventually(60, "the cache to equal the server", || async {
        (server().await == cache()).then_some(())
    })
    .await;
    assert_ne!(informer.last_sync_resource_version(), seen_rv);
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_pager_whose_continue_token_was_compacted_falls_back_to_a_full_list() {
    use std::collections::BTreeSet;

    use kubekit::cache::ListPager;
    use kubekit::clientset::{ListOptions, ResourceClient};

    let client = admin_client().await;
    let ns = namespace("pager-expired").await;
    for i in 0..25 {
        create_configmap(&client, &ns, &format!("cm-{i:02}")).await;
    }
    let cms = ResourceClient::<ConfigMap>::namespaced(client.clone(), &ns);
    let pager = ListPager::new(kubekit::cache::ListWatch::new(cms.clone())).page_size(10);
    // The namespace's kube-root-ca.crt is left out.
    let opts = ListOptions {
        field_selector: Some("metadata.name!=kube-root-ca.crt".into()),
        ..Default::default()
    };
    let mut pages = std::pin::pin!(pager.pages(opts.clone()));
    let first = pages.next().await.expect("a page").expect("first page");
    assert_eq!(first.items.len(), 10);
    assert!(!first.restarted);

    // The state moves on and etcd forgets the first page's revision.
    configmaps(client.delete(), &ns)
        .name("cm-24")
        .send()
        .await
        .unwrap();
    let latest = create_configmap(&client, &ns, "cm-late")
        .await
        .metadata
        .resource_version
        .unwrap();
    testenv::control_plane().compact_etcd(latest.parse().unwrap());

    let second = pages.next().await.expect("a page").expect("the full list");
    assert!(
        second.restarted,
        "the expired continue token restarts the list"
    );
    assert!(
        pages.next().await.is_none(),
        "the full list is the last page"
    );
    let names = |items: &[ConfigMap]| {
        items
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect::<BTreeSet<_>>()
    };
    let server = cms.list(&opts).await.expect("server state");
    assert_eq!(names(&second.items), names(&server.items));
    assert_eq!(second.items.len(), 25);
    assert!(names(&second.items).contains("cm-late"));
    assert!(!names(&second.items).contains("cm-24"));
}
