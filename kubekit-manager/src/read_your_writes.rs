//! Read-your-own-writes: a key's reconcile does not start before the informers have seen
//! what its last reconcile wrote (controller-runtime#3320; kube-controller-manager's
//! KEP-5647 guards its own controllers so).
//!
//! # Contract
//!
//! - The manager's clientset tells the manager of every object a write stored (create,
//!   update, patch and apply, of an object or its status, through the typed, generic and
//!   dynamic clients): its resource, and the resourceVersion it was stored at.
//! - A write made while a reconcile runs (on the reconcile's task: not from a task it
//!   spawned) is the reconcile's. Writes to kinds no controller of the manager reads (no
//!   informer: Events, a kind only written) are not waited for.
//! - The next reconcile of the key waits until the informer of each kind written has
//!   delivered an object at that resourceVersion or later (resourceVersions of one
//!   resource are comparable, and an informer sees them in order): writes to the primary
//!   object and to owned objects alike. It does not block a worker: the key is put back
//!   on the queue [`POLL`] later, without counting as a reconcile or a retry, and taken
//!   again; after the [wait limit](crate::ManagerBuilder::read_your_writes_timeout) (5 s
//!   by default) it is reconciled anyway, with a warning naming the informer.
//! - A resourceVersion that is not a decimal number (a server not backed by etcd) is not
//!   waited for, nor an object of another namespace than the manager's informers watch.
//! - Metrics: `kubekit_read_your_writes_deferrals_total{controller}` (keys put back),
//!   `kubekit_read_your_writes_wait_seconds{controller}` (from a key's first deferral to
//!   its reconcile), `kubekit_informer_write_lag_seconds{resource}` (from a write's answer
//!   to its informer delivering it: how stale each informer is), and
//!   `kubekit_read_your_writes_timeouts_total{controller}`.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kubekit_client::meta_ref::meta_ref;
use kubekit_client::rest::{WriteObserver, Written};
use kubekit_runtime::cache::{ResourceEventHandlerFuncs, SharedIndexInformer};
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// How long a deferred key waits before it is taken again.
pub const POLL: Duration = Duration::from_millis(20);

/// The default limit of a key's wait: after it, the key is reconciled anyway.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

tokio::task_local! {
    /// The writes of the reconcile running on this task.
    static WRITES: RefCell<Vec<(Arc<Observed>, u64)>>;
}

/// What one informer has delivered: the highest resourceVersion, and the writes it has not
/// delivered yet (for its lag).
struct Observed {
    resource: String,
    version: AtomicU64,
    unseen: Mutex<BinaryHeap<Reverse<(u64, Instant)>>>,
}

impl Observed {
    /// The informer delivered an object at `version`.
    fn saw(&self, version: u64, lag: &Family<ResourceLabel, Histogram, fn() -> Histogram>) {
        self.version.fetch_max(version, Ordering::AcqRel);
        let mut unseen = self.unseen.lock();
        while let Some(Reverse((written, at))) = unseen.peek().copied() {
            if written > version {
                break;
            }
            unseen.pop();
            lag.get_or_create(&ResourceLabel {
                resource: self.resource.clone(),
            })
            .observe(at.elapsed().as_secs_f64());
        }
    }

    fn has_seen(&self, version: u64) -> bool {
        self.version.load(Ordering::Acquire) >= version
    }
}

/// A key's writes its informers have not all delivered yet.
struct Pending {
    writes: Vec<(Arc<Observed>, u64)>,
    deferred_since: Option<Instant>,
}

/// The manager's read-your-own-writes state: the informers it follows, each controller's
/// keys waiting, its metrics. See the [module docs](self).
pub(crate) struct Tracker {
    informers: Mutex<HashMap<(String, String), Arc<Observed>>>,
    /// The namespace the manager's informers watch (`""`: all).
    namespace: String,
    metrics: ReadYourWritesMetrics,
    timeout: Duration,
}

impl fmt::Debug for Tracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracker")
            .field("informers", &self.informers.lock().len())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Tracker {
    /// A tracker of the informers of a manager watching `namespace` (`""`: all).
    pub(crate) fn new(
        namespace: &str,
        metrics: ReadYourWritesMetrics,
        timeout: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            informers: Mutex::default(),
            namespace: namespace.to_string(),
            metrics,
            timeout,
        })
    }

    /// The observer the manager's clientset tells of its writes.
    pub(crate) fn observer(self: &Arc<Self>) -> WriteObserver {
        let tracker = Arc::downgrade(self);
        Arc::new(move |written: &Written<'_>| {
            let Some(tracker) = tracker.upgrade() else {
                return;
            };
            let Ok(version) = written.resource_version.parse::<u64>() else {
                return;
            };
            // An object of another namespace than the informers watch never reaches them.
            let namespaced = !written.namespace.is_empty();
            if namespaced && !tracker.namespace.is_empty() && written.namespace != tracker.namespace
            {
                return;
            }
            let key = (written.group.to_string(), written.resource.to_string());
            let Some(observed) = tracker.informers.lock().get(&key).cloned() else {
                return;
            };
            if !observed.has_seen(version) {
                observed
                    .unseen
                    .lock()
                    .push(Reverse((version, Instant::now())));
            }
            // Outside a reconcile there is no key to hold back.
            let _ = WRITES.try_with(|writes| writes.borrow_mut().push((observed, version)));
        })
    }

    /// Follows what `informer` (of `T`) delivers, once per type.
    pub(crate) fn follow<T>(&self, informer: &SharedIndexInformer<T>)
    where
        T: kube::Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    {
        let key = (T::group(&()).into_owned(), T::plural(&()).into_owned());
        let mut informers = self.informers.lock();
        if informers.contains_key(&key) {
            return;
        }
        let observed = Arc::new(Observed {
            resource: format!("{}/{}", T::api_version(&()), T::plural(&())),
            version: AtomicU64::new(0),
            unseen: Mutex::default(),
        });
        informers.insert(key, Arc::clone(&observed));
        let lag = self.metrics.lag.clone();
        let saw = Arc::new(move |obj: &T| {
            let version = meta_ref(obj).resource_version().map(str::parse);
            if let Some(Ok(version)) = version {
                observed.saw(version, &lag);
            }
        });
        let (on_add, on_update, on_delete) = (Arc::clone(&saw), Arc::clone(&saw), saw);
        informer.add_event_handler_with_resync_period(
            ResourceEventHandlerFuncs::new()
                .on_add(move |obj: &Arc<T>, _| on_add(obj))
                .on_update(move |_, new: &Arc<T>| on_update(new))
                .on_delete(move |obj| on_delete(obj.object()))
                // After the cache is updated, on the informer's task.
                .non_blocking(),
            Duration::ZERO,
        );
    }

    /// The read-your-own-writes gate of the controller `name`.
    pub(crate) fn gate(self: &Arc<Self>, name: &str) -> Gate {
        Gate {
            tracker: Arc::clone(self),
            controller: ControllerLabel {
                controller: name.to_string(),
            },
            pending: Mutex::default(),
        }
    }
}

/// One controller's keys waiting for their informers.
pub(crate) struct Gate {
    tracker: Arc<Tracker>,
    controller: ControllerLabel,
    pending: Mutex<HashMap<String, Pending>>,
}

impl Gate {
    /// `None` when `key` may be reconciled now; otherwise how long to put it back for.
    pub(crate) fn defer(&self, key: &str) -> Option<Duration> {
        let mut pending = self.pending.lock();
        let waiting = pending.get_mut(key)?;
        waiting
            .writes
            .retain(|(observed, version)| !observed.has_seen(*version));
        let metrics = &self.tracker.metrics;
        if waiting.writes.is_empty() {
            if let Some(since) = pending.remove(key).and_then(|p| p.deferred_since) {
                metrics
                    .wait
                    .get_or_create(&self.controller)
                    .observe(since.elapsed().as_secs_f64());
            }
            return None;
        }
        let since = *waiting.deferred_since.get_or_insert_with(Instant::now);
        if since.elapsed() < self.tracker.timeout {
            metrics.deferrals.get_or_create(&self.controller).inc();
            return Some(POLL);
        }
        let behind: Vec<&str> = waiting
            .writes
            .iter()
            .map(|(observed, _)| observed.resource.as_str())
            .collect();
        tracing::warn!(
            informers = ?behind,
            waited = ?since.elapsed(),
            "the informers have not delivered what this key's last reconcile wrote; reconciling anyway"
        );
        metrics.timeouts.get_or_create(&self.controller).inc();
        metrics
            .wait
            .get_or_create(&self.controller)
            .observe(since.elapsed().as_secs_f64());
        pending.remove(key);
        None
    }

    /// Runs `reconcile` (of `key`) collecting its writes; the next reconcile of `key`
    /// waits for them.
    pub(crate) async fn track<T>(&self, key: &str, reconcile: impl Future<Output = T>) -> T {
        let (result, writes) = WRITES
            .scope(RefCell::new(Vec::new()), async {
                let result = reconcile.await;
                (result, WRITES.with(|w| w.take()))
            })
            .await;
        let mut latest: Vec<(Arc<Observed>, u64)> = Vec::new();
        for (observed, version) in writes {
            match latest.iter_mut().find(|(o, _)| Arc::ptr_eq(o, &observed)) {
                Some((_, v)) => *v = (*v).max(version),
                None => latest.push((observed, version)),
            }
        }
        latest.retain(|(observed, version)| !observed.has_seen(*version));
        let mut pending = self.pending.lock();
        if latest.is_empty() {
            pending.remove(key);
        } else {
            pending.insert(
                key.to_string(),
                Pending {
                    writes: latest,
                    deferred_since: None,
                },
            );
        }
        result
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabel {
    resource: String,
}

fn wait_histogram() -> Histogram {
    // 1 ms … ~16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The read-your-own-writes metric families of a manager's registry (see the
/// [module docs](self)).
#[derive(Clone)]
pub(crate) struct ReadYourWritesMetrics {
    deferrals: Family<ControllerLabel, Counter>,
    timeouts: Family<ControllerLabel, Counter>,
    wait: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    lag: Family<ResourceLabel, Histogram, fn() -> Histogram>,
}

impl Default for ReadYourWritesMetrics {
    fn default() -> Self {
        Self {
            deferrals: Family::default(),
            timeouts: Family::default(),
            wait: Family::new_with_constructor(wait_histogram),
            lag: Family::new_with_constructor(wait_histogram),
        }
    }
}

impl fmt::Debug for ReadYourWritesMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadYourWritesMetrics")
            .finish_non_exhaustive()
    }
}

impl ReadYourWritesMetrics {
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "kubekit_read_your_writes_deferrals",
            "Keys put back on the queue because an informer had not delivered what their last reconcile wrote",
            self.deferrals.clone(),
        );
        registry.register(
            "kubekit_read_your_writes_timeouts",
            "Keys reconciled after the wait limit although an informer had not delivered what their last reconcile wrote",
            self.timeouts.clone(),
        );
        registry.register(
            "kubekit_read_your_writes_wait_seconds",
            "From a key's first deferral to its reconcile",
            self.wait.clone(),
        );
        registry.register(
            "kubekit_informer_write_lag_seconds",
            "From the answer to a write of the manager's clientset to its informer delivering the object written",
            self.lag.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracker following one resource, `/configmaps`, without an informer.
    fn tracker(timeout: Duration) -> (Arc<Tracker>, Arc<Observed>) {
        let tracker = Tracker::new("demo", ReadYourWritesMetrics::default(), timeout);
        let observed = Arc::new(Observed {
            resource: "v1/configmaps".into(),
            version: AtomicU64::new(0),
            unseen: Mutex::default(),
        });
        let key = (String::new(), "configmaps".to_string());
        tracker.informers.lock().insert(key, Arc::clone(&observed));
        (tracker, observed)
    }

    fn write(observer: &WriteObserver, resource: &str, version: &str) {
        observer(&Written {
            group: "",
            resource,
            namespace: "demo",
            name: "a",
            resource_version: version,
        });
    }

    #[tokio::test]
    async fn a_key_waits_until_its_informers_deliver_what_its_last_reconcile_wrote() {
        let (tracker, observed) = tracker(DEFAULT_TIMEOUT);
        let (observer, gate) = (tracker.observer(), tracker.gate("test"));
        assert_eq!(gate.defer("demo/a"), None, "nothing written yet");
        gate.track("demo/a", async {
            write(&observer, "configmaps", "7");
            write(&observer, "configmaps", "9");
            // Not followed: not waited for.
            write(&observer, "events", "12");
        })
        .await;
        assert_eq!(gate.defer("demo/a"), Some(POLL));
        assert_eq!(gate.defer("demo/b"), None, "another key does not wait");
        let lag = &tracker.metrics.lag;
        observed.saw(8, lag);
        assert_eq!(gate.defer("demo/a"), Some(POLL), "8 is older than 9");
        observed.saw(9, lag);
        assert_eq!(gate.defer("demo/a"), None);
        assert_eq!(gate.defer("demo/a"), None, "and stays free");
        assert!(
            observed.unseen.lock().is_empty(),
            "both writes' lags measured"
        );
    }

    #[tokio::test]
    async fn writes_outside_a_reconcile_or_the_watched_namespace_or_without_numeric_versions_wait_for_nothing()
     {
        let (tracker, _) = tracker(DEFAULT_TIMEOUT);
        let (observer, gate) = (tracker.observer(), tracker.gate("test"));
        write(&observer, "configmaps", "7");
        gate.track("demo/a", async {
            write(&observer, "configmaps", "not-etcd");
            observer(&Written {
                group: "",
                resource: "configmaps",
                namespace: "elsewhere",
                name: "a",
                resource_version: "8",
            });
        })
        .await;
        assert_eq!(gate.defer("demo/a"), None);
    }

    #[tokio::test]
    async fn a_key_waits_no_longer_than_the_limit() {
        let (tracker, _) = tracker(Duration::ZERO);
        let (observer, gate) = (tracker.observer(), tracker.gate("test"));
        gate.track("demo/a", async { write(&observer, "configmaps", "7") })
            .await;
        assert_eq!(gate.defer("demo/a"), None, "reconciled anyway");
        let controller = ControllerLabel {
            controller: "test".into(),
        };
        assert_eq!(tracker.metrics.timeouts.get_or_create(&controller).get(), 1);
    }
}
