//! Sharded lists, watches and informers against kube-apiserver 1.37.2: with the
//! `ShardedListAndWatch` feature gate on (the server filters and echoes the selector in
//! `metadata.shardInfo`) and off (it ignores the parameter and sends everything; kubekit
//! filters). This binary runs two control planes, one per setting of the gate.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kubekit::cache::{Compact, ReflectorMetrics, ShardRange, ShardSelector, SharedIndexInformer};
use kubekit::clientset::{Clientset, CreateOptions, KnownScope, ListOptions, ResourceClient};
use kubekit::dynamic::DynamicClient;
use kubekit::informers::SharedInformerFactory;
use kubekit::meta::GroupVersionResource;
use kubekit::rest::{RestClient, RestConfig, WatchEvent};
use prometheus_client::registry::Registry;
use serde::Serialize;
use serde::de::DeserializeOwned;
use testenv::ControlPlane;
use tokio_util::sync::CancellationToken;

/// The label of the objects the tests create (the cluster adds `kube-root-ca.crt` to
/// every namespace, at a moment of its own).
const LABEL: &str = "sharded=yes";

fn gate_on() -> &'static ControlPlane {
    testenv::control_plane()
}

fn gate_off() -> &'static ControlPlane {
    testenv::control_plane_with_feature_gates("ShardedListAndWatch=false")
}

async fn setup(cp: &ControlPlane, prefix: &str) -> (Clientset, String) {
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .expect("admin kubeconfig")
        .with_rate_limit(500.0, 1000);
    let clientset = Clientset::from_rest_client(RestClient::new(&config).expect("rest client"));
    let ns = cp.create_namespace(&cp.client().await, prefix).await;
    (clientset, ns)
}

/// The two halves of the hash space, by uid.
fn uid_halves() -> [ShardSelector; 2] {
    ShardRange::even_parts(2)
        .into_iter()
        .map(ShardSelector::uid)
        .collect::<Vec<_>>()
        .try_into()
        .expect("two halves")
}

/// Creates `n` ConfigMaps `<prefix>-<i>` labelled [`LABEL`] and returns them as created
/// (with their uids).
async fn create_config_maps(
    cms: &ResourceClient<ConfigMap>,
    prefix: &str,
    n: usize,
) -> Vec<ConfigMap> {
    let mut created = Vec::with_capacity(n);
    for i in 0..n {
        created.push(create_config_map(cms, &format!("{prefix}-{i}")).await);
    }
    created
}

async fn create_config_map(cms: &ResourceClient<ConfigMap>, name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some([("sharded".to_string(), "yes".to_string())].into());
    cms.create(&cm, &CreateOptions::default())
        .await
        .expect("create a ConfigMap")
}

fn names<'a, K: Resource + 'a>(objects: impl IntoIterator<Item = &'a K>) -> BTreeSet<String> {
    objects
        .into_iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

/// The names of the objects of `shard` among `objects`, as the server's hash decides.
fn names_in(shard: &ShardSelector, objects: &[ConfigMap]) -> BTreeSet<String> {
    names(objects.iter().filter(|o| shard.matches(*o)))
}

/// The value of the sample of `family` (the only series of its name) in `registry`.
fn sample(registry: &Registry, family: &str) -> Option<f64> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).expect("metrics text");
    let prefix = format!("{family}{{");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn complementary_uid_shards_partition_a_list_and_the_server_echoes_each_selector() {
    let (cs, ns) = setup(gate_on(), "shard-list").await;
    let cms = cs.core_v1().config_maps(&ns);
    let all = create_config_maps(&cms, "cm", 40).await;
    let dynamic = DynamicClient::from_rest_client(cs.rest_client().clone())
        .resource(&GroupVersionResource::of::<ConfigMap>())
        .namespace(&ns);
    let mut union = BTreeSet::new();
    for half in uid_halves() {
        let opts = ListOptions::default().labels(LABEL).shard(&half);
        // Built-in types travel as protobuf, the dynamic client's as JSON: the echo is read
        // from both.
        let typed = cms.list(&opts).await.expect("sharded list");
        assert_eq!(typed.shard_selector, Some(half.to_string()));
        assert_eq!(names(&typed.items), names_in(&half, &all), "{half}");
        let json = dynamic.list(&opts).await.expect("sharded dynamic list");
        assert_eq!(json.shard_selector, Some(half.to_string()));
        assert_eq!(names(&json.items), names_in(&half, &all), "{half} (JSON)");
        assert!(
            union.is_disjoint(&names(&typed.items)),
            "the halves overlap"
        );
        union.extend(names(&typed.items));
    }
    assert_eq!(union, names(&all), "no object lost between the halves");
    let unsharded = cms
        .list(&ListOptions::default().labels(LABEL))
        .await
        .unwrap();
    assert_eq!(unsharded.shard_selector, None, "no selector, no echo");
}

#[tokio::test]
async fn a_namespace_shard_lists_the_objects_of_the_namespaces_hashing_into_it() {
    let cp = gate_on();
    let (cs, first) = setup(cp, "a-shard-ns").await;
    let client = cp.client().await;
    let mut namespaces = vec![first];
    // Names that differ from their first letter on: FNV-1a barely carries a string's last
    // bytes into its top bits, so names differing only at their end share a half.
    for letter in ["b", "c", "d", "e", "f", "g", "h"] {
        let prefix = format!("{letter}-shard-ns");
        namespaces.push(cp.create_namespace(&client, &prefix).await);
    }
    let label = format!("sharded-ns={}", namespaces[0]);
    for ns in &namespaces {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("one".into());
        cm.metadata.labels = Some([("sharded-ns".to_string(), namespaces[0].clone())].into());
        cs.core_v1()
            .config_maps(ns)
            .create(&cm, &CreateOptions::default())
            .await
            .unwrap();
    }
    let everywhere = ResourceClient::<ConfigMap>::namespaced(cs.rest_client().clone(), "");
    let mut union = BTreeSet::new();
    for range in ShardRange::even_parts(2) {
        let shard = ShardSelector::namespace(range);
        let list = everywhere
            .list(&ListOptions::default().labels(&label).shard(&shard))
            .await
            .unwrap();
        assert_eq!(list.shard_selector, Some(shard.to_string()));
        let got: BTreeSet<String> = list
            .items
            .iter()
            .map(|cm| cm.metadata.namespace.clone().unwrap_or_default())
            .collect();
        let want: BTreeSet<String> = namespaces
            .iter()
            .filter(|ns| shard.contains(kubekit::cache::shard_hash(ns)))
            .cloned()
            .collect();
        assert_eq!(got, want, "{shard}");
        union.extend(got);
    }
    assert_eq!(union.len(), namespaces.len());

    // Cluster-scoped objects hash their empty namespace: all in one shard.
    let ns_client = cs.core_v1().namespaces();
    let empty = kubekit::cache::shard_hash("");
    for range in ShardRange::even_parts(2) {
        let list = ns_client
            .list(&ListOptions::default().shard(ShardSelector::namespace(range)))
            .await
            .unwrap();
        assert_eq!(
            !list.items.is_empty(),
            range.contains(empty),
            "every Namespace or none"
        );
    }
}

#[tokio::test]
async fn a_sharded_watch_sends_only_the_events_of_objects_in_its_shard() {
    let (cs, ns) = setup(gate_on(), "shard-watch").await;
    let cms = cs.core_v1().config_maps(&ns);
    let [shard, _] = uid_halves();
    let rv = cms
        .list(&ListOptions::default().labels(LABEL))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let opts = ListOptions::default()
        .labels(LABEL)
        .shard(&shard)
        .resource_version(&rv);
    let mut events = cms.watch(&opts).await.expect("sharded watch");
    // Objects until 10 are in the shard, the last created one among them: every event of
    // an object outside the shard would come before the last one's.
    let mut created = Vec::new();
    while names_in(&shard, &created).len() < 10
        || !shard.matches(created.last().expect("one created"))
    {
        let name = format!("cm-{}", created.len());
        created.push(create_config_map(&cms, &name).await);
    }
    let want = names_in(&shard, &created);
    let mut seen = BTreeSet::new();
    while seen != want {
        let event = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap_or_else(|_| panic!("events missing: saw {seen:?} of {want:?}"))
            .expect("the watch goes on")
            .expect("an event");
        match event {
            WatchEvent::Added(cm) => {
                assert!(shard.matches(&cm), "{:?} is outside {shard}", cm.metadata);
                seen.extend(cm.metadata.name);
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert!(
        created.len() > want.len(),
        "some objects fell outside the shard"
    );
}

/// How an informer lists.
#[derive(Debug, Clone, Copy)]
enum Listing {
    /// The factory's default: a watch with `sendInitialEvents`.
    Streaming,
    /// Paged lists of 7.
    Paged,
}

/// What the server is expected to do with the selector.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Filtering {
    /// It filters and echoes the selector.
    Server,
    /// It filters, but its lists do not echo the selector (metadata-only lists).
    ServerWithoutEcho,
    /// It ignores the selector (the feature gate is off).
    Client,
}

/// A factory given `shard` over the labelled ConfigMaps of a new namespace: its informer
/// (made by `informer_of`) holds exactly the shard's objects after the sync and once more
/// objects are created while it watches, and its metrics say who filtered.
async fn a_sharded_informer_holds_exactly_its_shard<K>(
    cp: &ControlPlane,
    listing: Listing,
    filtering: Filtering,
    informer_of: impl FnOnce(&SharedInformerFactory) -> Arc<SharedIndexInformer<K>>,
) where
    K: Resource + Clone + Send + Sync + 'static,
{
    let (cs, ns) = setup(cp, "shard-informer").await;
    let cms = cs.core_v1().config_maps(&ns);
    let mut all = create_config_maps(&cms, "before", 40).await;
    let [_, shard] = uid_halves();
    let metrics = ReflectorMetrics::new();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(&ns)
        .tweak_list_options(|o| o.label_selector = Some(LABEL.into()))
        .streaming_list(matches!(listing, Listing::Streaming))
        .page_size(7)
        .metrics(&metrics)
        .shard(shard.clone())
        .build();
    let informer = informer_of(&factory);
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|ok| *ok), "{synced:?}");
    let cached = || -> BTreeSet<String> {
        informer
            .indexer()
            .list_keys()
            .into_iter()
            .map(|key| key.rsplit('/').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(cached(), names_in(&shard, &all), "after the sync");

    all.extend(create_config_maps(&cms, "after", 20).await);
    let want = names_in(&shard, &all);
    testenv::eventually(30, "the cache holds the shard's new objects", || {
        let cached = cached();
        let want = want.clone();
        async move { (cached == want).then_some(()) }
    })
    .await;

    let by_server = sample(&registry, "reflector_shard_server_filtered");
    let mut dropped = sample(&registry, "reflector_shard_dropped_objects_total");
    if let Filtering::Client = filtering {
        // The cache may hold the shard's last object before the reflector has met (and
        // counted) the last object outside it: wait for the count to get there.
        let outside = (all.len() - want.len()) as f64;
        dropped = testenv::eventually(30, "every object outside the shard dropped", || {
            let dropped = sample(&registry, "reflector_shard_dropped_objects_total");
            async move { dropped.filter(|d| *d >= outside).map(Some) }
        })
        .await;
    }
    match filtering {
        Filtering::Server => {
            assert_eq!(by_server, Some(1.0));
            assert_eq!(dropped, Some(0.0), "the server sent only the shard");
        }
        Filtering::ServerWithoutEcho => {
            assert_eq!(by_server, Some(0.0), "no echo");
            assert_eq!(dropped, Some(0.0), "the server sent only the shard");
        }
        Filtering::Client => {
            assert_eq!(by_server, Some(0.0));
            let outside = (all.len() - want.len()) as f64;
            assert!(
                dropped.is_some_and(|d| d >= outside),
                "every object outside the shard was sent and dropped: {dropped:?} < {outside}"
            );
        }
    }
    factory.shutdown().await;
}

fn typed<K>(factory: &SharedInformerFactory) -> Arc<SharedIndexInformer<K>>
where
    K: Resource<DynamicType = ()>
        + Serialize
        + DeserializeOwned
        + Clone
        + fmt::Debug
        + Send
        + Sync
        + 'static,
    K::Scope: KnownScope,
{
    factory.for_type::<K>().informer().clone()
}

#[tokio::test]
async fn a_sharded_streaming_informer_holds_exactly_its_shard_filtered_by_the_server() {
    a_sharded_informer_holds_exactly_its_shard(
        gate_on(),
        Listing::Streaming,
        Filtering::Server,
        typed::<ConfigMap>,
    )
    .await;
}

#[tokio::test]
async fn a_sharded_paged_compact_informer_holds_exactly_its_shard_filtered_by_the_server() {
    a_sharded_informer_holds_exactly_its_shard(
        gate_on(),
        Listing::Paged,
        Filtering::Server,
        typed::<Compact<ConfigMap>>,
    )
    .await;
}

#[tokio::test]
async fn a_sharded_metadata_informer_is_filtered_by_the_server_though_its_lists_never_echo() {
    // kube-apiserver 1.37.2 builds a PartialObjectMetadataList from the list's
    // resourceVersion, continue token and remaining count only: its shardInfo is lost.
    a_sharded_informer_holds_exactly_its_shard(
        gate_on(),
        Listing::Paged,
        Filtering::ServerWithoutEcho,
        |factory| {
            let gvr = GroupVersionResource::of::<ConfigMap>();
            factory.for_metadata(&gvr).informer().clone()
        },
    )
    .await;
}

#[tokio::test]
async fn without_the_feature_gate_a_streaming_informer_filters_its_shard_itself() {
    a_sharded_informer_holds_exactly_its_shard(
        gate_off(),
        Listing::Streaming,
        Filtering::Client,
        typed::<ConfigMap>,
    )
    .await;
}

#[tokio::test]
async fn without_the_feature_gate_a_paged_compact_informer_filters_its_shard_itself() {
    a_sharded_informer_holds_exactly_its_shard(
        gate_off(),
        Listing::Paged,
        Filtering::Client,
        typed::<Compact<ConfigMap>>,
    )
    .await;
}

#[tokio::test]
async fn without_the_feature_gate_a_dynamic_informer_filters_its_shard_itself() {
    a_sharded_informer_holds_exactly_its_shard(
        gate_off(),
        Listing::Streaming,
        Filtering::Client,
        |factory| {
            let gvr = GroupVersionResource::of::<ConfigMap>();
            factory.for_resource(&gvr).informer().clone()
        },
    )
    .await;
}

#[tokio::test]
async fn without_the_feature_gate_the_server_ignores_the_selector_and_echoes_nothing() {
    let (cs, ns) = setup(gate_off(), "shard-ignored").await;
    let cms = cs.core_v1().config_maps(&ns);
    let all = create_config_maps(&cms, "cm", 10).await;
    let [shard, _] = uid_halves();
    let list = cms
        .list(&ListOptions::default().labels(LABEL).shard(&shard))
        .await
        .unwrap();
    assert_eq!(list.shard_selector, None);
    assert_eq!(names(&list.items), names(&all), "every object, in or out");
}
