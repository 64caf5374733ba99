//! The chaos suite: faults of the real control plane under informers, each followed by a
//! check that every cache equals the server.
//!
//! - kube-apiserver restarted ten times while 2,000 Pods churn, under three informers
//!   (streaming list typed and compact, paged list typed);
//! - etcd compacted between two pages of an informer's paged list (the continue token
//!   expires).
//!
//! A restart cuts every connection of the control plane and a compaction affects every
//! watch, so this is its own test binary with its own control plane, and its tests run
//! one at a time. It takes about three minutes on two cores.

#[path = "it/common.rs"]
mod common;
#[path = "it/configmaps.rs"]
mod configmaps;
#[path = "it/pods.rs"]
mod pods;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kubekit::cache::{BackoffPolicy, Compact, ListWatch, ListerWatcher, SharedIndexInformer};
use kubekit::clientset::{Clientset, ListOptions, WatchStream};
use kubekit::informers::SharedInformerFactory;
use kubekit::rest::{ListPage, ObjectList, Result};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use common::{admin_client, namespace};
use configmaps::create_configmap;
use pods::{
    AddCounter, assert_cache_converges, create_pods, delete_pods, run, synced, update_pods,
};

/// Logs what `RUST_LOG` asks for (nothing by default), for the failures of this suite.
fn log_to_stderr() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// One fault at a time: each disturbs the whole control plane.
static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// Pods that exist from the start.
const POPULATION: usize = 2000;

/// What one round of churn does, while kube-apiserver restarts: creates 100 new pods,
/// updates 200 of the first population, deletes 50 of those the previous round created.
async fn churn(cs: &Clientset, ns: &str, round: usize) {
    let created = POPULATION + 100 * (round - 1);
    let updated = 200 * (round - 1);
    let deleted = POPULATION + 100 * round.saturating_sub(2);
    let delete = async {
        if round > 1 {
            delete_pods(cs, ns, deleted..deleted + 50).await;
        }
    };
    tokio::join!(
        create_pods(cs, ns, created..created + 100),
        update_pods(cs, ns, updated..updated + 200, round as u32),
        delete,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_informer_equals_the_server_after_each_of_ten_apiserver_restarts_under_churn() {
    let _alone = ONE_AT_A_TIME.lock().await;
    log_to_stderr();
    let cs = Clientset::from_rest_client(admin_client().await);
    let ns = namespace("chaos-restart").await;
    create_pods(&cs, &ns, 0..POPULATION).await;

    // One informer per factory: a factory keeps one informer per resource.
    let factory = || SharedInformerFactory::builder(cs.clone()).namespace(&ns);
    let factories = [
        factory().build(),
        factory().build(),
        factory().streaming_list(false).page_size(250).build(),
    ];
    let typed = factories[0].core_v1().pods();
    let compact = factories[1].for_type::<Compact<Pod>>();
    let listed = factories[2].core_v1().pods();
    let adds = [
        AddCounter::default(),
        AddCounter::default(),
        AddCounter::default(),
    ];
    // Restarts come faster than the backoff's reset period (2 minutes), so the default
    // backoff would reach 30 s (60 s with jitter) between re-watches: cap it, the suite
    // checks what the caches hold, not how long the reflectors wait.
    let quick = BackoffPolicy {
        max: Duration::from_secs(4),
        ..BackoffPolicy::default()
    };
    for (informer, name) in [(typed.informer(), "typed"), (listed.informer(), "paged")] {
        informer.configure_reflector(|o| {
            o.name = name.into();
            o.backoff = quick;
        });
    }
    compact.informer().configure_reflector(|o| {
        o.name = "compact".into();
        o.backoff = quick;
    });
    typed.informer().add_event_handler(adds[0].handler());
    compact.informer().add_event_handler(adds[1].handler());
    listed.informer().add_event_handler(adds[2].handler());
    let relists = Arc::new(AtomicUsize::new(0));
    for informer in [typed.informer(), listed.informer()] {
        let relists = relists.clone();
        informer.set_watch_error_handler(move |_| {
            relists.fetch_add(1, Ordering::Relaxed);
        });
    }
    let cancel = CancellationToken::new();
    for factory in &factories {
        factory.start();
    }
    for factory in &factories {
        let synced = tokio::time::timeout(
            Duration::from_secs(120),
            factory.wait_for_cache_sync(&cancel),
        )
        .await
        .expect("synced within 2 minutes");
        assert!(synced.values().all(|s| *s), "{synced:?}");
    }

    for round in 1..=10 {
        let restart = tokio::task::spawn_blocking(|| testenv::control_plane().restart_apiserver());
        churn(&cs, &ns, round).await;
        restart.await.expect("restart task");
        assert_cache_converges(&cs, &ns, typed.informer().indexer()).await;
        assert_cache_converges(&cs, &ns, compact.informer().indexer()).await;
        assert_cache_converges(&cs, &ns, listed.informer().indexer()).await;
    }

    // 2,000 + 10 × 100 created, 9 × 50 deleted.
    let expected = POPULATION + 1000 - 450;
    assert_eq!(typed.informer().indexer().len(), expected);
    for (informer, adds) in ["typed", "compact", "paged"].iter().zip(&adds) {
        adds.wait_len(POPULATION + 1000).await;
        assert!(
            adds.duplicates().is_empty(),
            "{informer}: an object was added twice: {:?}",
            &adds.duplicates()[..adds.duplicates().len().min(5)]
        );
    }
    assert!(
        relists.load(Ordering::Relaxed) >= 10,
        "every restart cut the watches (errors reported: {})",
        relists.load(Ordering::Relaxed)
    );
    // Shutting down ends every task the factories started.
    for factory in &factories {
        tokio::time::timeout(Duration::from_secs(30), factory.shutdown())
            .await
            .expect("the factory's tasks end at shutdown");
    }
}

/// A lister-watcher that compacts etcd to the latest revision before the first page asked
/// for by continue token, so that token has expired when the server reads it.
struct CompactBeforeSecondPage {
    inner: ListWatch<kubekit::clientset::ResourceClient<ConfigMap>>,
    client: kubekit::rest::RestClient,
    elsewhere: String,
    continued: AtomicUsize,
    first_pages: AtomicUsize,
}

impl ListerWatcher<ConfigMap> for CompactBeforeSecondPage {
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<ConfigMap>>> {
        self.inner.list(opts)
    }

    fn list_page(&self, opts: ListOptions) -> BoxFuture<'_, Result<ListPage<ConfigMap>>> {
        Box::pin(async move {
            if opts.continue_token.is_none() {
                self.first_pages.fetch_add(1, Ordering::SeqCst);
            } else if self.continued.fetch_add(1, Ordering::SeqCst) == 0 {
                // Move etcd past the list's revision, then compact it away.
                let bump = create_configmap(&self.client, &self.elsewhere, "bump").await;
                let revision = bump.metadata.resource_version.unwrap().parse().unwrap();
                tokio::task::spawn_blocking(move || {
                    testenv::control_plane().compact_etcd(revision)
                })
                .await
                .unwrap();
            }
            self.inner.list_page(opts).await
        })
    }

    fn watch(&self, opts: ListOptions) -> BoxFuture<'_, Result<WatchStream<ConfigMap>>> {
        self.inner.watch(opts)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paged_list_whose_continue_token_expires_restarts_and_the_cache_equals_the_server() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let client = admin_client().await;
    let cs = Clientset::from_rest_client(client.clone());
    let ns = namespace("chaos-continue").await;
    let elsewhere = namespace("chaos-continue-bump").await;
    for i in 0..30 {
        create_configmap(&client, &ns, &format!("cm-{i}")).await;
    }
    let lw = Arc::new(CompactBeforeSecondPage {
        inner: ListWatch::new(cs.core_v1().config_maps(&ns)),
        client: client.clone(),
        elsewhere,
        continued: AtomicUsize::new(0),
        first_pages: AtomicUsize::new(0),
    });
    let informer = Arc::new(SharedIndexInformer::<ConfigMap>::new(
        lw.clone(),
        Duration::ZERO,
    ));
    informer.configure_reflector(|o| {
        o.page_size = 10;
        o.use_streaming_list = false;
    });
    let (cancel, task) = run(&informer);
    synced(&informer).await;

    assert!(
        lw.first_pages.load(Ordering::SeqCst) >= 2,
        "the expired continue token restarted the list"
    );
    let names = |items: Vec<ConfigMap>| {
        let mut names: Vec<(String, String)> = items
            .into_iter()
            .map(|c| {
                let rv = c.metadata.resource_version.unwrap_or_default();
                (c.metadata.name.unwrap_or_default(), rv)
            })
            .collect();
        names.sort();
        names
    };
    // kube-controller-manager adds kube-root-ca.crt to the namespace at any time.
    testenv::eventually(30, "the cache to equal the server", || async {
        let cms = cs.core_v1().config_maps(&ns);
        let server = names(cms.list(&ListOptions::default()).await.ok()?.items);
        let cached = names(
            informer
                .indexer()
                .list()
                .iter()
                .map(|c| (**c).clone())
                .collect(),
        );
        (server == cached).then_some(())
    })
    .await;
    let cached = informer.indexer().list_keys();
    assert!(
        (0..30).all(|i| cached.contains(&format!("{ns}/cm-{i}"))),
        "{cached:?}"
    );
    cancel.cancel();
    task.await.unwrap();
}
