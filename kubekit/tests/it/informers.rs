//! Informers, the factory and listers against the real control plane.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{StreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
#[cfg(feature = "compact")]
use kubekit::cache::{Compact, Encoding};
use kubekit::cache::{
    IndexFunc, ListWatch, ListerWatcher, ResourceEventHandlerFuncs, SharedIndexInformer,
};
use kubekit::clientset::{Clientset, CreateOptions, ListOptions, ResourceClient, WatchStream};
use kubekit::dynamic::{DynamicClient, Unstructured};
use kubekit::informers::SharedInformerFactory;
use kubekit::labels::Selector;
use kubekit::meta::GroupVersionResource;
use kubekit::rest::{ObjectList, RestConfig, Result};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::clientset::{config_map, ensure_app_crd, setup};
use crate::pods::{
    AddCounter, assert_cache_converges, create_pods, delete_pods, run, synced, update_pods,
};

/// Wraps a lister-watcher and counts its list calls (pages).
struct CountingLists<L> {
    inner: L,
    lists: Arc<AtomicUsize>,
}

impl<K: 'static, L: ListerWatcher<K>> ListerWatcher<K> for CountingLists<L> {
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<K>>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(opts)
    }
    fn watch(&self, opts: ListOptions) -> BoxFuture<'_, Result<WatchStream<K>>> {
        self.inner.watch(opts)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// Leaves out what the cluster puts in every namespace (the `kube-root-ca.crt` ConfigMap).
fn only_test_objects(opts: &mut ListOptions) {
    opts.label_selector = Some("test".into());
}

/// Creates `cm-0` … `cm-<n-1>` labelled `test=yes`.
async fn create_test_config_maps(cms: &ResourceClient<ConfigMap>, n: usize) {
    for i in 0..n {
        let cm = config_map(&format!("cm-{i}"), &[("test", "yes")], &[]);
        cms.create(&cm, &CreateOptions::default()).await.unwrap();
    }
}

/// An informer over the `test`-labelled ConfigMaps of `cms`, without resync.
fn test_config_map_informer(
    cms: &ResourceClient<ConfigMap>,
) -> Arc<SharedIndexInformer<ConfigMap>> {
    Arc::new(SharedIndexInformer::new(
        Arc::new(ListWatch::new(cms.clone()).with_tweak(only_test_objects)),
        Duration::ZERO,
    ))
}

#[tokio::test]
async fn informer_cache_equals_the_server_after_2000_pods_are_listed_and_churned() {
    let (cs, ns) = setup("inf-pods").await;
    create_pods(&cs, &ns, 0..1000).await;

    let lists = Arc::new(AtomicUsize::new(0));
    let lw = CountingLists {
        inner: ListWatch::new(cs.core_v1().pods(&ns)),
        lists: lists.clone(),
    };
    let informer = Arc::new(SharedIndexInformer::<Pod>::new(
        Arc::new(lw),
        Duration::ZERO,
    ));
    informer.configure_reflector(|o| o.page_size = 100);
    let adds = AddCounter::default();
    informer.add_event_handler(adds.handler());
    let (cancel, task) = run(&informer);
    synced(&informer).await;
    // The first list (resourceVersion "0") comes from the API server's watch cache, which
    // may not have every pod just created yet: exactness is checked after the churn.
    assert!(informer.indexer().len() <= 1000);

    // Churn while watching: 1000 more, 500 updated, 500 deleted.
    tokio::join!(
        create_pods(&cs, &ns, 1000..2000),
        update_pods(&cs, &ns, 0..500, 1),
        delete_pods(&cs, &ns, 500..1000),
    );
    assert_cache_converges(&cs, &ns, informer.indexer()).await;
    assert_eq!(informer.indexer().len(), 1500);
    adds.wait_len(2000).await;
    assert!(adds.duplicates().is_empty(), "{:?}", adds.duplicates());
    assert!(lists.load(Ordering::SeqCst) >= 1);
    println!(
        "initial list of 1000 pods took {} page request(s)",
        lists.load(Ordering::SeqCst)
    );
    cancel.cancel();
    task.await.unwrap();
}

#[cfg(feature = "compact")]
#[tokio::test]
async fn compact_pod_informer_keeps_an_exact_cache_with_listers_indexes_and_late_handlers() {
    let (cs, ns) = setup("inf-compact").await;
    create_pods(&cs, &ns, 0..300).await;
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(&ns)
        .page_size(100)
        .streaming_list(false)
        .build();
    let pods = factory.for_type::<Compact<Pod>>();
    let by_bulk: IndexFunc<Compact<Pod>> = Arc::new(|p: &Compact<Pod>| {
        let bulk = p.meta_ref().label("bulk");
        bulk.map(str::to_owned).into_iter().collect()
    });
    pods.informer()
        .add_indexers([("bulk".to_string(), by_bulk)])
        .unwrap();
    let adds = AddCounter::default();
    pods.informer().add_event_handler(adds.handler());
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|ok| *ok), "{synced:?}");
    // The first list (resourceVersion "0") comes from the API server's watch cache, which
    // may not have every pod just created yet: exactness is checked after the churn.
    assert!(pods.informer().indexer().len() <= 300);

    tokio::join!(
        create_pods(&cs, &ns, 300..600),
        update_pods(&cs, &ns, 0..100, 1),
        delete_pods(&cs, &ns, 100..200),
    );
    let indexer = pods.informer().indexer();
    assert_cache_converges(&cs, &ns, indexer).await;
    adds.wait_len(600).await;
    assert!(adds.duplicates().is_empty(), "{:?}", adds.duplicates());

    // Listers and label selectors work on the cached metadata; typed access decodes.
    let lister = pods.lister().namespaced(&ns);
    let pod = lister.get("pod-7").expect("pod-7 is cached");
    let typed = pod.get().expect("a pod the server sent decodes");
    assert_eq!(
        typed.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("busybox")
    );
    assert!(pod.compressed_len() < pod.encoded_len());
    assert_eq!(
        pod.encoding(),
        Encoding::Protobuf,
        "a built-in type is read, and kept, as protobuf"
    );
    let mut direct = cs
        .core_v1()
        .pods(&ns)
        .get("pod-7", &Default::default())
        .await
        .unwrap();
    direct.metadata.managed_fields = None;
    assert_eq!(
        *typed, direct,
        "the cached message decodes to the object, without managedFields as the factory's default"
    );
    let selected = lister.list(&"bulk=yes".parse::<Selector>().unwrap());
    assert_eq!(selected.len(), 500);
    assert_eq!(indexer.by_index("bulk", "yes").unwrap().len(), 500);
    assert!(lister.get("pod-150").unwrap_err().is_not_found());

    // A handler registered late is replayed the compact cache, once per object.
    let late = AddCounter::default();
    let registration = pods.informer().add_event_handler(late.handler());
    late.wait_len(500).await;
    assert!(late.duplicates().is_empty());
    registration.wait_initial_handled().await;
    assert!(registration.has_synced());
    factory.shutdown().await;
}

#[tokio::test]
async fn a_handler_added_after_sync_gets_every_object_exactly_once_as_an_initial_add() {
    let (cs, ns) = setup("inf-late").await;
    let cms = cs.core_v1().config_maps(&ns);
    create_test_config_maps(&cms, 50).await;
    let informer = test_config_map_informer(&cms);
    let (cancel, task) = run(&informer);
    synced(&informer).await;

    let initial = Arc::new(AtomicUsize::new(0));
    let adds = AddCounter::default();
    let counting = adds.handler::<ConfigMap>();
    let reg = informer.add_event_handler(ResourceEventHandlerFuncs::new().on_add({
        let initial = initial.clone();
        move |o: &Arc<ConfigMap>, is_initial| {
            if is_initial {
                initial.fetch_add(1, Ordering::SeqCst);
            }
            kubekit::cache::ResourceEventHandler::on_add(&counting, o, is_initial);
        }
    }));
    tokio::time::timeout(Duration::from_secs(30), reg.wait_initial_handled())
        .await
        .expect("replay handled");
    assert!(reg.has_synced());
    assert_eq!(initial.load(Ordering::SeqCst), 50);
    assert_eq!(adds.len(), 50);
    cms.create(
        &config_map("after", &[("test", "late")], &[]),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    testenv::eventually(30, "the new ConfigMap's add", || {
        let adds = adds.clone();
        async move { (adds.len() == 51).then_some(()) }
    })
    .await;
    assert!(adds.duplicates().is_empty(), "{:?}", adds.duplicates());
    assert_eq!(
        initial.load(Ordering::SeqCst),
        50,
        "a new object is not an initial add"
    );
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn two_handlers_get_resyncs_at_their_own_periods() {
    let (cs, ns) = setup("inf-resync").await;
    let cms = cs.core_v1().config_maps(&ns);
    cms.create(
        &config_map("one", &[("test", "yes")], &[]),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    let informer = test_config_map_informer(&cms);
    let resyncs = |counter: &Arc<AtomicUsize>| {
        let counter = counter.clone();
        ResourceEventHandlerFuncs::new().on_update(
            move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                assert_eq!(old.metadata.resource_version, new.metadata.resource_version);
                counter.fetch_add(1, Ordering::SeqCst);
            },
        )
    };
    let fast = Arc::new(AtomicUsize::new(0));
    let slow = Arc::new(AtomicUsize::new(0));
    informer.add_event_handler_with_resync_period(resyncs(&fast), Duration::from_secs(1));
    informer.add_event_handler_with_resync_period(resyncs(&slow), Duration::from_secs(4));
    let (cancel, task) = run(&informer);
    synced(&informer).await;
    tokio::time::sleep(Duration::from_millis(8500)).await;
    let (f, s) = (fast.load(Ordering::SeqCst), slow.load(Ordering::SeqCst));
    println!("resyncs in 8.5 s: 1 s handler {f}, 4 s handler {s}");
    assert!((6..=11).contains(&f), "1 s handler resynced {f} times");
    assert!((1..=3).contains(&s), "4 s handler resynced {s} times");
    assert!(f >= 3 * s, "each handler resyncs at its own period");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_custom_index_over_1000_config_maps_answers_by_value() {
    let (cs, ns) = setup("inf-index").await;
    let cms = cs.core_v1().config_maps(&ns);
    stream::iter(0..1000)
        .map(|i| {
            let cms = cms.clone();
            async move {
                let shard = (i % 10).to_string();
                let cm = config_map(&format!("cm-{i}"), &[("shard", &shard)], &[]);
                cms.create(&cm, &CreateOptions::default()).await.unwrap()
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let informer = Arc::new(SharedIndexInformer::new(
        Arc::new(
            ListWatch::new(cms.clone()).with_tweak(|o| o.label_selector = Some("shard".into())),
        ),
        Duration::ZERO,
    ));
    let by_shard: IndexFunc<ConfigMap> = Arc::new(|c: &ConfigMap| {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("shard").cloned())
            .into_iter()
            .collect()
    });
    informer
        .add_indexers([("shard".to_string(), by_shard)])
        .unwrap();
    // A streaming list is consistent: the cache holds every ConfigMap once synced.
    informer.configure_reflector(|o| o.use_streaming_list = true);
    let (cancel, task) = run(&informer);
    synced(&informer).await;
    let indexer = informer.indexer();
    assert_eq!(indexer.len(), 1000);
    let shard3 = indexer.by_index("shard", "3").unwrap();
    assert_eq!(shard3.len(), 100);
    assert!(
        shard3
            .iter()
            .all(|c| c.metadata.labels.as_ref().unwrap()["shard"] == "3")
    );
    let mut values = indexer.list_index_func_values("shard").unwrap();
    values.sort();
    assert_eq!(values, (0..10).map(|i| i.to_string()).collect::<Vec<_>>());
    assert_eq!(indexer.index_keys("shard", "7").unwrap().len(), 100);
    assert!(indexer.by_index("shard", "10").unwrap().is_empty());
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_dynamic_informer_over_the_app_crd_caches_and_lists_apps() {
    let (cs, ns) = setup("inf-dyn").await;
    ensure_app_crd(&cs).await;
    let gvr = GroupVersionResource::new("appcontroller.k8s.io", "v1", "apps");
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(&ns)
        .build();
    let apps = factory.for_resource(&gvr);
    let adds = AddCounter::default();
    apps.informer()
        .add_event_handler(adds.handler::<Unstructured>());
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert_eq!(
        synced.get("apps.v1.appcontroller.k8s.io"),
        Some(&true),
        "{synced:?}"
    );

    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone());
    let app: Unstructured = serde_json::from_value(json!({
        "apiVersion": "appcontroller.k8s.io/v1",
        "kind": "App",
        "metadata": {"name": "web", "labels": {"tier": "front"}},
        "spec": {"deploymentTemplate": {"name": "web", "image": "nginx", "replicas": 1},
                 "serviceTemplate": {"name": "web"}},
    }))
    .unwrap();
    dynamic
        .resource(&gvr)
        .namespace(&ns)
        .create(&app, &CreateOptions::default())
        .await
        .unwrap();
    let lister = apps.lister();
    let got = testenv::eventually(30, "the App in the lister", || {
        let lister = lister.clone();
        let ns = ns.clone();
        async move { lister.namespaced(&ns).get("web").ok() }
    })
    .await;
    assert_eq!(
        got.nested(&["spec", "deploymentTemplate", "image"]),
        Some(&json!("nginx"))
    );
    assert_eq!(
        lister
            .list(&"tier=front".parse::<Selector>().unwrap())
            .len(),
        1
    );
    assert!(
        lister
            .namespaced(&ns)
            .get("nope")
            .unwrap_err()
            .is_not_found()
    );
    adds.wait_len(1).await;
    factory.shutdown().await;
}

#[tokio::test]
async fn the_factory_shares_one_informer_per_type_and_honours_namespace_and_tweak() {
    let (cs, ns) = setup("inf-factory").await;
    let other = crate::common::namespace("inf-factory-other").await;
    for (n, name, app) in [
        (&ns, "web", "web"),
        (&ns, "db", "db"),
        (&other, "web", "web"),
    ] {
        cs.core_v1()
            .config_maps(n)
            .create(
                &config_map(name, &[("app", app)], &[]),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
    }
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(&ns)
        .tweak_list_options(|o| o.label_selector = Some("app=web".into()))
        .build();
    let first = factory.core_v1().config_maps();
    let second = factory.for_type::<ConfigMap>();
    assert!(Arc::ptr_eq(first.informer(), second.informer()));
    let _pods = factory.core_v1().pods();
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert_eq!(synced.len(), 2, "{synced:?}");
    assert!(synced.values().all(|ok| *ok), "{synced:?}");

    let cached = first.lister().list(&Selector::everything());
    assert_eq!(cached.len(), 1, "only app=web in {ns}");
    assert_eq!(cached[0].metadata.namespace.as_deref(), Some(ns.as_str()));
    factory.shutdown().await;
    assert!(first.informer().has_synced());
    factory.start(); // after shutdown: starts nothing, does not panic
}

#[tokio::test]
async fn a_streaming_list_syncs_the_cache_like_a_list() {
    let (cs, ns) = setup("inf-stream").await;
    let cms: ResourceClient<ConfigMap> = cs.core_v1().config_maps(&ns);
    create_test_config_maps(&cms, 20).await;
    let lists = Arc::new(AtomicUsize::new(0));
    let lw = CountingLists {
        inner: ListWatch::new(cms.clone()).with_tweak(only_test_objects),
        lists: lists.clone(),
    };
    let informer = Arc::new(SharedIndexInformer::new(Arc::new(lw), Duration::ZERO));
    informer.configure_reflector(|o| o.use_streaming_list = true);
    let (cancel, task) = run(&informer);
    synced(&informer).await;
    assert_eq!(informer.indexer().len(), 20);
    cms.create(
        &config_map("late", &[("test", "stream")], &[]),
        &CreateOptions::default(),
    )
    .await
    .unwrap();
    testenv::eventually(30, "the late ConfigMap", || {
        let informer = informer.clone();
        async move { (informer.indexer().len() == 21).then_some(()) }
    })
    .await;
    assert!(!informer.last_sync_resource_version().is_empty());
    assert_eq!(
        lists.load(Ordering::SeqCst),
        0,
        "the server streamed; nothing was listed"
    );
    cancel.cancel();
    task.await.unwrap();
}

/// The factory's caches hold no `managedFields` unless asked to keep them: dropped while
/// decoding protobuf (ConfigMaps, a built-in type) and after decoding JSON (the dynamic
/// informer of the same resource).
#[tokio::test]
async fn factory_caches_drop_managed_fields_unless_told_to_keep_them() {
    let (cs, ns) = setup("inf-managed").await;
    let cms = cs.core_v1().config_maps(&ns);
    create_test_config_maps(&cms, 3).await;
    let stored = cms.get("cm-0", &Default::default()).await.unwrap();
    assert!(
        stored.metadata.managed_fields.is_some(),
        "the server writes managedFields, and a plain get keeps them"
    );
    let gvr = GroupVersionResource::of::<ConfigMap>();
    // Typed informers over JSON too, as a custom resource's are.
    let json_clientset = {
        let mut config = RestConfig::from_kubeconfig(testenv::control_plane().kubeconfig_path())
            .await
            .unwrap();
        config.protobuf = false;
        Clientset::new(&config).unwrap()
    };
    for keep in [false, true] {
        // A factory keeps one informer per resource: one for each kind of informer.
        let factory = |cs: &Clientset| {
            SharedInformerFactory::builder(cs.clone())
                .namespace(&ns)
                .tweak_list_options(only_test_objects)
                .keep_managed_fields(keep)
                .build()
        };
        let (typed_factory, dynamic_factory) = (factory(&cs), factory(&cs));
        let json_factory = factory(&json_clientset);
        let typed = typed_factory.core_v1().config_maps();
        let dynamic = dynamic_factory.for_resource(&gvr);
        let json = json_factory.core_v1().config_maps();
        for f in [&typed_factory, &dynamic_factory, &json_factory] {
            f.start();
            let synced = f.wait_for_cache_sync(&CancellationToken::new()).await;
            assert!(synced.values().all(|s| *s), "{synced:?}");
        }
        let typed_objects = typed.lister().list(&Selector::everything());
        let dynamic_objects = dynamic.lister().list(&Selector::everything());
        let json_objects = json.lister().list(&Selector::everything());
        assert_eq!(
            (
                typed_objects.len(),
                dynamic_objects.len(),
                json_objects.len()
            ),
            (3, 3, 3)
        );
        for (cm, how) in typed_objects
            .iter()
            .map(|cm| (cm, "protobuf"))
            .chain(json_objects.iter().map(|cm| (cm, "JSON")))
        {
            assert_eq!(
                cm.metadata.managed_fields.is_some(),
                keep,
                "typed over {how}, keep = {keep}"
            );
            assert_eq!(cm.data, stored.data, "the rest is kept");
        }
        for obj in &dynamic_objects {
            let has = kube::Resource::meta(obj.as_ref()).managed_fields.is_some();
            assert_eq!(has, keep, "dynamic, keep = {keep}");
        }
        typed_factory.shutdown().await;
        dynamic_factory.shutdown().await;
        json_factory.shutdown().await;
    }
}

#[tokio::test]
async fn a_removed_informer_stops_and_the_next_one_asked_for_is_new() {
    let (cs, ns) = setup("inf-remove").await;
    let cms = cs.core_v1().config_maps(&ns);
    let create = |name: &'static str| {
        let cms = cms.clone();
        async move {
            cms.create(&config_map(name, &[], &[]), &CreateOptions::default())
                .await
                .unwrap();
        }
    };
    create("before").await;
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(&ns)
        .build();
    let gvr = GroupVersionResource::of::<ConfigMap>();
    let old = factory.for_type::<ConfigMap>();
    let _pods = factory.core_v1().pods();
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|ok| *ok), "{synced:?}");
    let names = |informer: &Arc<SharedIndexInformer<ConfigMap>>| {
        let mut names: Vec<String> = informer
            .indexer()
            .list()
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .filter(|n| n != "kube-root-ca.crt")
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(old.informer()), ["before"]);

    // Removed: its task has ended when `remove` returns, the other informer runs on.
    assert!(factory.remove(&gvr).await);
    assert!(!factory.remove(&gvr).await, "nothing left to remove");
    assert!(
        !factory.remove_metadata(&gvr).await,
        "no metadata informer was made"
    );
    create("after").await;
    let new = factory.for_type::<ConfigMap>();
    assert!(!Arc::ptr_eq(old.informer(), new.informer()));
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert_eq!(synced.len(), 2, "{synced:?}");
    assert!(synced.values().all(|ok| *ok), "{synced:?}");
    assert_eq!(names(new.informer()), ["after", "before"]);
    // The old one keeps its last cache, no longer updated.
    assert_eq!(names(old.informer()), ["before"]);
    factory.shutdown().await;
}

#[tokio::test]
async fn an_informer_waits_for_its_crd_empties_when_it_is_deleted_and_resumes_when_it_returns() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kubekit::clientset::DeleteOptions;

    let (cs, ns) = setup("inf-crd-lifecycle").await;
    let group = format!("{ns}.kubekit.test");
    let gvr = GroupVersionResource::new(&group, "v1", "widgets");
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(&ns)
        .build();
    let widgets = factory.for_resource(&gvr);
    factory.start();
    let informer = widgets.informer().clone();
    testenv::eventually(
        30,
        "the informer to find its resource not served",
        || async { (!informer.is_served()).then_some(()) },
    )
    .await;
    assert!(
        !informer.has_synced(),
        "not synced while its CRD is not installed"
    );

    // Installed later: the informer syncs and caches what is created.
    let crds = cs.cluster_resource::<CustomResourceDefinition>();
    let install = || async {
        cs.install_crd(
            crate::clientset::crd(&group, "widgets", "Widget"),
            "kubekit-tests",
        )
        .await
        .expect("install the CRD")
    };
    install().await;
    let installed = std::time::Instant::now();
    synced(&informer).await;
    eprintln!(
        "synced {:?} after its CRD was installed",
        installed.elapsed()
    );
    assert!(informer.is_served());
    let client = DynamicClient::from_rest_client(cs.rest_client().clone());
    let create = |name: &'static str| {
        let widgets = client.resource(&gvr).namespace(&ns);
        let mut widget = Unstructured::new(&format!("{group}/v1"), "Widget");
        widget.metadata.name = Some(name.into());
        async move { widgets.create(&widget, &CreateOptions::default()).await }
    };
    create("first").await.expect("create a Widget");
    let lister = widgets.lister();
    let cached = |name: &'static str| {
        let (lister, ns) = (lister.clone(), ns.clone());
        async move { lister.namespaced(&ns).get(name).ok() }
    };
    testenv::eventually(30, "the first Widget cached", || cached("first")).await;

    // Deleted: the informer says so and lets go of its objects.
    crds.delete(&format!("widgets.{group}"), &DeleteOptions::default())
        .await
        .expect("delete the CRD");
    testenv::eventually(60, "not served, and nothing cached", || async {
        (!informer.is_served() && informer.indexer().list().is_empty()).then_some(())
    })
    .await;

    // Back: served again, and caching again.
    testenv::eventually_ok(60, "the CRD installed again", || async {
        match crds
            .get_opt(&format!("widgets.{group}"), &Default::default())
            .await
        {
            Ok(None) => Ok(install().await),
            Ok(Some(_)) => Err("still being deleted".to_string()),
            Err(e) => Err(e.to_string()),
        }
    })
    .await;
    testenv::eventually_ok(30, "a Widget created again", || async {
        create("second").await.map_err(|e| e.to_string())
    })
    .await;
    testenv::eventually(30, "the second Widget cached", || cached("second")).await;
    assert!(informer.is_served());
    factory.shutdown().await;
}
