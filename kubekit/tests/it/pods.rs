//! Bulk Pod helpers for the informer tests: create, churn, and compare an informer's cache
//! with the server; run an informer and wait for its sync. Pods need no node here: they
//! stay Pending.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, stream};
use k8s_openapi::api::core::v1::Pod;
use kubekit::cache::{Indexer, ResourceEventHandlerFuncs, SharedIndexInformer, meta_namespace_key};
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, ListOptions, PatchBody, PatchOptions, ResourceClient,
};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Requests in flight at once during bulk operations.
const PARALLEL: usize = 16;

/// A minimal Pod named `name`.
pub fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"bulk": "yes"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .expect("pod")
}

/// What to do to one pod.
#[derive(Clone, Copy)]
enum Op {
    Create,
    Update(u32),
    Delete,
}

/// Does `op` to `pod-<i>`, retrying while the server is unreachable (the failure tests
/// restart it): an error that only means an earlier attempt got through counts as done.
async fn apply(pods: &ResourceClient<Pod>, i: usize, op: Op) {
    let name = format!("pod-{i}");
    for _ in 0..240 {
        let result = match op {
            Op::Create => pods
                .create(&pod(&name), &CreateOptions::default())
                .await
                .map(drop)
                .or_else(|e| {
                    if e.is_already_exists() {
                        Ok(())
                    } else {
                        Err(e)
                    }
                }),
            Op::Update(round) => {
                let patch =
                    PatchBody::Merge(json!({"metadata": {"labels": {"round": round.to_string()}}}));
                pods.patch(&name, &patch, &PatchOptions::default())
                    .await
                    .map(drop)
            }
            Op::Delete => pods
                .delete(&name, &DeleteOptions::default().grace_period_seconds(0))
                .await
                .map(drop)
                .or_else(|e| if e.is_not_found() { Ok(()) } else { Err(e) }),
        };
        match result {
            Ok(()) => return,
            Err(e) if e.is_transient() => tokio::time::sleep(Duration::from_millis(250)).await,
            Err(e) => panic!("{name}: {e}"),
        }
    }
    panic!("{name}: the server stayed unreachable for a minute");
}

async fn bulk(cs: &Clientset, ns: &str, range: std::ops::Range<usize>, op: Op) {
    let pods = cs.core_v1().pods(ns);
    stream::iter(range)
        .map(|i| apply(&pods, i, op))
        .buffer_unordered(PARALLEL)
        .collect::<Vec<_>>()
        .await;
}

/// Creates `pod-<i>` for every `i` in `range`.
pub async fn create_pods(cs: &Clientset, ns: &str, range: std::ops::Range<usize>) {
    bulk(cs, ns, range, Op::Create).await
}

/// Labels `pod-<i>` with `round=<round>` for every `i` in `range`.
pub async fn update_pods(cs: &Clientset, ns: &str, range: std::ops::Range<usize>, round: u32) {
    bulk(cs, ns, range, Op::Update(round)).await
}

/// Deletes `pod-<i>` for every `i` in `range`.
pub async fn delete_pods(cs: &Clientset, ns: &str, range: std::ops::Range<usize>) {
    bulk(cs, ns, range, Op::Delete).await
}

/// The server's pods of `ns`: key → resourceVersion.
pub async fn server_state(cs: &Clientset, ns: &str) -> BTreeMap<String, String> {
    let list = cs
        .core_v1()
        .pods(ns)
        .list(&ListOptions::default())
        .await
        .expect("list pods");
    list.items
        .iter()
        .map(|p| {
            (
                meta_namespace_key(p).expect("key"),
                p.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// The cache's pods (typed or compact): key → resourceVersion.
pub fn cache_state<K: kube::Resource + 'static>(indexer: &Indexer<K>) -> BTreeMap<String, String> {
    indexer
        .list()
        .iter()
        .map(|p| {
            (
                meta_namespace_key(p.as_ref()).expect("key"),
                p.meta().resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits until the cache holds exactly the server's pods at the server's versions.
pub async fn assert_cache_converges<K: kube::Resource + 'static>(
    cs: &Clientset,
    ns: &str,
    indexer: &Indexer<K>,
) {
    let mut last = (BTreeMap::new(), BTreeMap::new());
    for _ in 0..120 {
        let server = server_state(cs, ns).await;
        let cache = cache_state(indexer);
        if server == cache {
            return;
        }
        last = (server, cache);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (server, cache) = last;
    let missing: Vec<_> = server
        .keys()
        .filter(|k| !cache.contains_key(*k))
        .take(5)
        .collect();
    let extra: Vec<_> = cache
        .keys()
        .filter(|k| !server.contains_key(*k))
        .take(5)
        .collect();
    let stale: Vec<_> = server
        .iter()
        .filter(|(k, v)| cache.get(*k).is_some_and(|c| c != *v))
        .take(5)
        .collect();
    panic!(
        "cache did not converge in 60 s: server {} pods, cache {}; missing {missing:?}, extra {extra:?}, stale {stale:?}",
        server.len(),
        cache.len()
    );
}

/// Counts the adds each key receives.
#[derive(Clone, Default)]
pub struct AddCounter(pub Arc<Mutex<HashMap<String, usize>>>);

impl AddCounter {
    /// A handler that counts adds.
    pub fn handler<K: kube::Resource + Send + Sync + 'static>(
        &self,
    ) -> ResourceEventHandlerFuncs<K> {
        let counts = self.0.clone();
        ResourceEventHandlerFuncs::new().on_add(move |o: &Arc<K>, _| {
            *counts
                .lock()
                .entry(meta_namespace_key(o.as_ref()).expect("key"))
                .or_default() += 1;
        })
    }

    /// Keys added more than once.
    pub fn duplicates(&self) -> Vec<(String, usize)> {
        self.0
            .lock()
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(k, n)| (k.clone(), *n))
            .collect()
    }

    /// Number of distinct keys added.
    pub fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// Waits (up to 30 s) until `n` distinct keys were added: handlers run on their own
    /// threads, a little after the cache is updated.
    pub async fn wait_len(&self, n: usize) {
        testenv::eventually(30, &format!("{n} keys added"), || async {
            (self.len() == n).then_some(())
        })
        .await
    }
}

/// Runs `informer` until the returned token is cancelled.
pub fn run<K>(
    informer: &Arc<SharedIndexInformer<K>>,
) -> (CancellationToken, tokio::task::JoinHandle<()>)
where
    K: kube::Resource + Clone + Send + Sync + 'static,
{
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    (cancel, task)
}

/// Waits (up to a minute) for `informer`'s cache to sync.
pub async fn synced<K>(informer: &SharedIndexInformer<K>)
where
    K: kube::Resource + Clone + Send + Sync + 'static,
{
    tokio::time::timeout(
        Duration::from_secs(60),
        informer.wait_for_sync(&CancellationToken::new()),
    )
    .await
    .expect("informer synced within 60 s");
}
