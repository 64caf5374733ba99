//! Integration tests of `kubekit::metadata`: every verb of the metadata client on
//! ConfigMaps and Pods, negotiated as `PartialObjectMetadata` by the real API server (no
//! data or spec crosses the wire), and metadata informers whose caches equal the server's
//! names, labels and owner references after 2,000 Pods are listed and churned.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, DeleteResponse, GetOptions, ListOptions, PatchBody,
    PatchOptions,
};
use kubekit::informers::SharedInformerFactory;
use kubekit::labels::Selector;
use kubekit::meta::GroupVersionResource;
use kubekit::metadata::{MetadataClient, MetadataResourceClient, PartialObjectMetadata};
use kubekit::rest::WatchEvent;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::clientset::{config_map, next_event_for, setup};
use crate::pods::{assert_cache_converges, create_pods, delete_pods, update_pods};

/// A value only the ConfigMaps' data holds: it must never come back.
const PAYLOAD: &str = "payload-that-must-not-cross-the-wire";

fn configmaps() -> GroupVersionResource {
    GroupVersionResource::new("", "v1", "configmaps")
}

fn pods() -> GroupVersionResource {
    GroupVersionResource::new("", "v1", "pods")
}

fn metadata_client(cs: &Clientset, gvr: &GroupVersionResource, ns: &str) -> MetadataResourceClient {
    MetadataClient::from_rest_client(cs.rest_client().clone())
        .resource(gvr)
        .namespace(ns)
}

/// The server sent `obj` as metadata only, and nothing else is in it.
fn assert_partial(obj: &PartialObjectMetadata) {
    assert!(
        obj.is_partial(),
        "{:?} {:?} is typed {} {}: the server did not negotiate",
        obj.metadata.namespace,
        obj.metadata.name,
        obj.api_version,
        obj.kind
    );
    let value = serde_json::to_value(obj).expect("encodes");
    let mut keys: Vec<&String> = value.as_object().expect("an object").keys().collect();
    keys.sort();
    assert_eq!(keys, ["apiVersion", "kind", "metadata"]);
}

fn names(items: &[PartialObjectMetadata]) -> Vec<&str> {
    let mut names: Vec<&str> = items
        .iter()
        .filter_map(|o| o.metadata.name.as_deref())
        .collect();
    names.sort_unstable();
    names
}

#[tokio::test]
async fn metadata_client_gets_lists_watches_patches_and_deletes_config_maps_as_partial_metadata() {
    let (cs, ns) = setup("meta-verbs").await;
    let typed = cs.core_v1().config_maps(&ns);
    for (name, app) in [("web", "web"), ("db", "db"), ("cache", "db")] {
        typed
            .create(
                &config_map(name, &[("app", app)], &[("payload", PAYLOAD)]),
                &CreateOptions::default(),
            )
            .await
            .expect("create");
    }
    let stored = typed.get("web", &GetOptions::default()).await.expect("get");
    let cms = metadata_client(&cs, &configmaps(), &ns);

    // On the wire: the body the metadata Accept header brings back has no data.
    let raw = cs
        .rest_client()
        .get()
        .group_version("", "v1")
        .namespace(&ns)
        .resource("configmaps")
        .name("web")
        .accept("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
        .send()
        .await
        .expect("raw get");
    let body = String::from_utf8_lossy(raw.body());
    assert!(!body.contains(PAYLOAD), "data crossed the wire: {body}");
    assert!(body.contains(r#""kind":"PartialObjectMetadata""#), "{body}");

    let web = cms.get("web", &GetOptions::default()).await.expect("get");
    assert_partial(&web);
    assert_eq!(web.metadata.uid, stored.metadata.uid);
    assert_eq!(
        web.metadata.resource_version,
        stored.metadata.resource_version
    );
    assert_eq!(web.metadata.labels, stored.metadata.labels);
    let missing = cms
        .get("nope", &GetOptions::default())
        .await
        .expect_err("no such ConfigMap");
    assert!(missing.is_not_found(), "{missing}");

    let listed = cms
        .list(&ListOptions::default().labels("app in (web,db)"))
        .await
        .expect("list");
    assert_eq!(names(&listed.items), ["cache", "db", "web"]);
    assert!(listed.skipped.is_empty(), "{:?}", listed.skipped);
    listed.items.iter().for_each(assert_partial);
    let page = cms
        .list(&ListOptions::default().limit(2))
        .await
        .expect("first page");
    assert_eq!(page.items.len(), 2);
    assert!(page.metadata.continue_.is_some(), "a next page");

    let rv = listed.metadata.resource_version.clone().expect("list rv");
    let mut events = cms
        .watch(
            &ListOptions::default()
                .labels("app=web")
                .resource_version(&rv),
        )
        .await
        .expect("watch");
    let patched = cms
        .patch(
            "web",
            &PatchBody::Merge(json!({"metadata": {"labels": {"round": "1"}}})),
            &PatchOptions::default(),
        )
        .await
        .expect("merge patch of a label");
    assert_partial(&patched);
    assert_eq!(
        patched
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("round")),
        Some(&"1".to_string())
    );
    let after = typed.get("web", &GetOptions::default()).await.expect("get");
    assert_eq!(
        after
            .data
            .as_ref()
            .and_then(|d| d.get("payload"))
            .map(String::as_str),
        Some(PAYLOAD),
        "a metadata patch leaves the data alone"
    );
    match next_event_for(&mut events, "web").await {
        WatchEvent::Modified(obj) => {
            assert_partial(&obj);
            assert_eq!(
                obj.metadata.resource_version,
                patched.metadata.resource_version
            );
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }

    let deleted = cms
        .delete("web", &DeleteOptions::default())
        .await
        .expect("delete");
    assert!(
        deleted.status().is_some(),
        "a ConfigMap's delete answers a Status: {deleted:?}"
    );
    match next_event_for(&mut events, "web").await {
        WatchEvent::Deleted(obj) => assert_partial(&obj),
        other => panic!("expected DELETED, got {other:?}"),
    }

    let collection = cms
        .delete_collection(
            &DeleteOptions::default(),
            &ListOptions::default().labels("app=db"),
        )
        .await
        .expect("delete collection");
    match &collection {
        DeleteResponse::Object(list) => {
            assert_eq!(names(&list.items), ["cache", "db"]);
            list.items.iter().for_each(assert_partial);
        }
        DeleteResponse::Status(status) => panic!("expected the deleted objects, got {status:?}"),
    }
    let left = typed.list(&ListOptions::default()).await.expect("list");
    let left: Vec<_> = left
        .items
        .iter()
        .filter_map(|c: &ConfigMap| c.metadata.name.as_deref())
        .filter(|n| *n != "kube-root-ca.crt")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn metadata_client_reads_pods_without_their_spec_and_deletes_them() {
    let (cs, ns) = setup("meta-pods").await;
    create_pods(&cs, &ns, 0..3).await;
    let client = metadata_client(&cs, &pods(), &ns);
    let pod = client
        .get("pod-0", &GetOptions::default())
        .await
        .expect("get");
    assert_partial(&pod);
    assert_eq!(
        pod.metadata.labels.as_ref().and_then(|l| l.get("bulk")),
        Some(&"yes".to_string())
    );
    let all = MetadataClient::from_rest_client(cs.rest_client().clone())
        .resource(&pods())
        .list(&ListOptions::default().labels("bulk=yes"))
        .await
        .expect("list across namespaces");
    assert!(all.items.len() >= 3);
    let deleted = client
        .delete("pod-1", &DeleteOptions::default().grace_period_seconds(0))
        .await
        .expect("delete");
    let obj = deleted.object().expect("a Pod's delete answers the Pod");
    assert_partial(obj);
    assert_eq!(obj.metadata.name.as_deref(), Some("pod-1"));
    let left = client.list(&ListOptions::default()).await.expect("list");
    assert_eq!(names(&left.items), ["pod-0", "pod-2"]);
}

/// What a comparison of metadata looks at: labels and owner references by key.
type Compared = BTreeMap<String, (BTreeMap<String, String>, Vec<OwnerReference>)>;

fn compared<'a>(
    objects: impl Iterator<Item = &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
) -> Compared {
    objects
        .map(|m| {
            let key = format!(
                "{}/{}",
                m.namespace.as_deref().unwrap_or_default(),
                m.name.as_deref().unwrap_or_default()
            );
            let labels = m.labels.clone().unwrap_or_default();
            (
                key,
                (labels, m.owner_references.clone().unwrap_or_default()),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_metadata_informer_on_2000_pods_equals_the_servers_names_labels_and_owner_references() {
    let (cs, ns) = setup("meta-inf").await;
    let owner = cs
        .core_v1()
        .config_maps(&ns)
        .create(&config_map("owner", &[], &[]), &CreateOptions::default())
        .await
        .expect("owner");
    create_pods(&cs, &ns, 0..1000).await;

    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(&ns)
        .build();
    let informer = factory.for_metadata(&pods());
    let again = factory.for_metadata(&pods());
    assert!(Arc::ptr_eq(informer.informer(), again.informer()));
    let typed = factory.core_v1().pods();
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert_eq!(
        synced.keys().map(String::as_str).collect::<Vec<_>>(),
        ["pods.v1", "pods.v1 (metadata)"]
    );
    assert!(synced.values().all(|ok| *ok), "{synced:?}");
    let indexer = informer.informer().indexer();
    assert_eq!(indexer.len(), 1000);
    assert_eq!(typed.informer().indexer().len(), 1000);
    indexer.list().iter().for_each(|o| assert_partial(o));

    // Churn while watching: 1000 more, 500 relabelled, 200 given an owner, 300 deleted.
    let owner_ref = json!({"metadata": {"ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": owner.metadata.uid.clone().expect("owner uid"),
    }]}});
    let metadata_pods = metadata_client(&cs, &pods(), &ns);
    let own = async {
        for i in 500..700 {
            metadata_pods
                .patch(
                    &format!("pod-{i}"),
                    &PatchBody::Merge(&owner_ref),
                    &PatchOptions::default(),
                )
                .await
                .expect("owner reference patch");
        }
    };
    tokio::join!(
        create_pods(&cs, &ns, 1000..2000),
        update_pods(&cs, &ns, 0..500, 1),
        delete_pods(&cs, &ns, 700..1000),
        own,
    );
    assert_cache_converges(&cs, &ns, indexer).await;
    assert_eq!(indexer.len(), 1700);

    let server = cs
        .core_v1()
        .pods(&ns)
        .list(&ListOptions::default())
        .await
        .expect("list pods");
    let cached = indexer.list();
    assert_eq!(
        compared(cached.iter().map(|o| &o.metadata)),
        compared(server.items.iter().map(|p| &p.metadata)),
        "the cache's labels and owner references are the server's"
    );
    cached.iter().for_each(|o| assert_partial(o));

    let lister = informer.lister();
    let in_ns = lister.namespaced(&ns);
    assert_eq!(
        in_ns.list(&"round=1".parse::<Selector>().unwrap()).len(),
        500
    );
    assert_eq!(in_ns.list(&Selector::everything()).len(), 1700);
    let owned = in_ns.get("pod-600").expect("pod-600");
    assert_eq!(
        owned
            .metadata
            .owner_references
            .as_ref()
            .map(|o| o[0].name.as_str()),
        Some("owner")
    );
    assert!(in_ns.get("pod-800").unwrap_err().is_not_found());
    factory.shutdown().await;
}

#[tokio::test]
async fn a_metadata_informer_with_paged_lists_syncs_through_partial_object_metadata_lists() {
    let (cs, ns) = setup("meta-paged").await;
    create_pods(&cs, &ns, 0..250).await;
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(&ns)
        .streaming_list(false)
        .page_size(100)
        .build();
    let informer = factory.for_metadata(&pods());
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert_eq!(synced.get("pods.v1 (metadata)"), Some(&true), "{synced:?}");
    // A paged list at resourceVersion "0" is served by the watch cache, which may lag
    // behind the creates: the pods it missed come as watch events.
    let indexer = informer.informer().indexer();
    assert_cache_converges(&cs, &ns, indexer).await;
    assert_eq!(indexer.len(), 250);
    indexer.list().iter().for_each(|o| assert_partial(o));
    update_pods(&cs, &ns, 0..10, 2).await;
    delete_pods(&cs, &ns, 10..20).await;
    assert_cache_converges(&cs, &ns, indexer).await;
    factory.shutdown().await;
}
