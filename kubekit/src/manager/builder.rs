//! [`ControllerBuilder`]: a controller in controller-runtime's shape, made from a plain
//! `async fn` (controller-runtime's `builder`).
//!
//! # Contract
//!
//! - The primary type's changes enqueue the object's own key; an owned type's changes
//!   ([`owns`](ControllerBuilder::owns)) enqueue the object named by its *controller*
//!   ownerReference (`controller: true`) when that reference's kind and apiVersion are the
//!   primary type's; a watched type's changes ([`watches`](ControllerBuilder::watches))
//!   enqueue the keys its function returns. An update enqueues from the old and the new
//!   state (an ownerReference may have moved).
//! - With the priority queue (on unless [`priority_queue(false)`](ControllerBuilder::priority_queue)),
//!   keys from the initial list and from resyncs are queued at low priority: live changes
//!   are reconciled first.
//! - Every [`Predicate`] given to [`with_event_filter`](ControllerBuilder::with_event_filter)
//!   must pass for a change to enqueue anything, whichever type it came from.
//! - Informers come from the manager's factory: controllers watching one type share one
//!   informer and one cache.
//! - The reconcile function gets the primary object from the cache (the cache's own `Arc`)
//!   and the context. A key whose object is no longer in the cache is logged and forgotten:
//!   clean-up of deleted objects belongs to ownerReferences (garbage collection) or
//!   finalizers.
//! - It returns an [`Action`] (done, or requeue after a delay), or an error, retried
//!   through the rate limiter (per-item exponential backoff 5 ms … 1000 s under an overall
//!   10 qps bucket): by default without end, as controller-runtime and kube-rs retry, so an
//!   object whose reconcile fails for a long while (an outage) is reconciled when it
//!   succeeds again, without having to change; [`max_retries`](ControllerBuilder::max_retries)
//!   bounds it (the key is then dropped, logged and counted). The control loop is
//!   [`Runner`]'s.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use kube::Resource;

use super::predicate::{Change, Predicate};
use super::{Manager, ManagerError, RegisteredController};
use crate::cache::{Indexer, MetaRef, ResourceEventHandlerFuncs, controller_uid_index, meta_ref};
use crate::clientset::KnownScope;
use crate::controller::{Action, ReconcileError, Reconciler, Runner};
use crate::informers::SharedInformerFactory;
use crate::workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};

pub use crate::meta::{Object, ObjectKey};

/// The key of the object that controls `obj`, when that controller is of type `K`: its
/// group and kind match (as controller-runtime's `EnqueueRequestForOwner` compares them,
/// so a reference written at another version of `K`'s group still counts), and it is in
/// `obj`'s namespace unless `K` is cluster-scoped.
fn controller_key<K: Object>(obj: MetaRef<'_>) -> Option<ObjectKey> {
    let owner = obj.controller()?;
    let group = owner
        .api_version
        .rsplit_once('/')
        .map_or("", |(group, _)| group);
    (owner.kind == K::kind(&()) && group == K::group(&())).then(|| ObjectKey {
        namespace: obj
            .namespace()
            .filter(|ns| K::Scope::NAMESPACED && !ns.is_empty())
            .map(Into::into),
        name: owner.name.into(),
    })
}

/// What a [`mapped_handler`] was called with.
enum Event<'a, W> {
    Create(&'a W),
    Update { old: &'a W, new: &'a W },
    Delete(&'a W),
}

impl<W: Resource> Event<'_, W> {
    /// The change the predicates judge (for a compact object, this makes its `ObjectMeta`).
    fn change(&self) -> Change<'_> {
        match self {
            Event::Create(obj) => Change::Create(obj.meta()),
            Event::Update { old, new } => Change::Update {
                old: old.meta(),
                new: new.meta(),
            },
            Event::Delete(obj) => Change::Delete(obj.meta()),
        }
    }
}

type MapFn<W> = Arc<dyn Fn(&W) -> Vec<ObjectKey> + Send + Sync>;
type Watch = Box<dyn FnOnce(&SharedInformerFactory, &Enqueue)>;

/// Where a controller's event handlers put keys, and how.
#[derive(Clone)]
struct Enqueue {
    queue: RateLimitingQueue<String>,
    /// Every one must pass for a change to enqueue anything.
    predicates: Arc<[Predicate]>,
    /// Changes from the initial list and resyncs go in at low priority.
    priority: bool,
}

/// An event handler that puts on the queue the keys `map` gives for every change that
/// passes all predicates: at low priority (with the priority queue on) for objects of the
/// initial list and for resyncs (an update that does not change the resourceVersion).
fn mapped_handler<W: Resource + Send + Sync + 'static>(
    target: &Enqueue,
    map: MapFn<W>,
) -> ResourceEventHandlerFuncs<W> {
    let enqueue = {
        let target = target.clone();
        Arc::new(move |event: Event<'_, W>, low: bool| {
            let predicates = &target.predicates;
            if predicates.is_empty() || {
                let change = event.change();
                predicates.iter().all(|p| p.matches(&change))
            } {
                let objects = match event {
                    Event::Create(obj) | Event::Delete(obj) => [Some(obj), None],
                    Event::Update { old, new } => [Some(old), Some(new)],
                };
                let mut keys: Vec<ObjectKey> =
                    objects.iter().flatten().flat_map(|o| map(o)).collect();
                keys.sort_unstable();
                keys.dedup();
                for key in keys {
                    if low && target.priority {
                        target.queue.add_low_priority(key.to_string());
                    } else {
                        target.queue.add(key.to_string());
                    }
                }
            }
        })
    };
    let (on_add, on_update, on_delete) = (enqueue.clone(), enqueue.clone(), enqueue);
    ResourceEventHandlerFuncs::new()
        .on_add(move |obj: &Arc<W>, initial| on_add(Event::Create(obj), initial))
        .on_update(move |old: &Arc<W>, new: &Arc<W>| {
            let (old, new) = (old.as_ref(), new.as_ref());
            let resync = meta_ref(old).resource_version() == meta_ref(new).resource_version();
            on_update(Event::Update { old, new }, resync);
        })
        .on_delete(move |obj| on_delete(Event::Delete(obj.object()), false))
        // Mapping, filtering and queueing keys never block: called on the informer's task.
        .non_blocking()
}

/// Builds a controller into a [`Manager`]; see the [module docs](self). Made by
/// [`Manager::controller`].
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubekit::controller::Action;
/// use kubekit::manager::{Manager, Predicate};
///
/// struct Ctx;
///
/// async fn reconcile(cm: Arc<ConfigMap>, _ctx: Arc<Ctx>) -> Result<Action, kubekit::rest::Error> {
///     println!("reconciling {:?}", cm.metadata.name);
///     Ok(Action::RequeueAfter(Duration::from_secs(300)))
/// }
///
/// # async fn demo(mut mgr: Manager) -> Result<(), kubekit::manager::ManagerError> {
/// mgr.controller::<ConfigMap>("configmaps")
///     .owns::<Deployment>()
///     .with_event_filter(Predicate::resource_version_changed())
///     .workers(2)
///     .build(reconcile, Arc::new(Ctx))?;
/// # Ok(())
/// # }
/// ```
#[must_use = "a controller builder does nothing until `build` is called"]
pub struct ControllerBuilder<'m, K> {
    manager: &'m mut Manager,
    name: String,
    watches: Vec<Watch>,
    predicates: Vec<Predicate>,
    workers: usize,
    max_retries: usize,
    reconcile_timeout: Option<Duration>,
    priority_queue: bool,
    primary: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for ControllerBuilder<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerBuilder")
            .field("name", &self.name)
            .field("watches", &self.watches.len())
            .field("workers", &self.workers)
            .field("max_retries", &self.max_retries)
            .field("reconcile_timeout", &self.reconcile_timeout)
            .field("priority_queue", &self.priority_queue)
            .finish_non_exhaustive()
    }
}

impl<'m, K: Object> ControllerBuilder<'m, K> {
    pub(super) fn new(manager: &'m mut Manager, name: &str) -> Self {
        Self {
            manager,
            name: name.to_string(),
            watches: Vec::new(),
            predicates: Vec::new(),
            workers: 1,
            max_retries: usize::MAX,
            reconcile_timeout: None,
            priority_queue: true,
            primary: PhantomData,
        }
    }

    /// Watches `D`: a change of a `D` controlled by a `K` enqueues that `K`. `D`'s informer
    /// gets the [`CONTROLLER_UID_INDEX`](crate::cache::CONTROLLER_UID_INDEX) (unless it has
    /// an index of that name), so
    /// [`Lister::controlled_by`](crate::listers::Lister::controlled_by) finds a `K`'s
    /// children without scanning the cache.
    pub fn owns<D: Object>(self) -> Self {
        let informer = self.manager.factory().for_type::<D>().informer().clone();
        if let Err(e) = informer.add_indexers([controller_uid_index::<D>()]) {
            // Another controller owns `D` too, or the program added the index itself.
            tracing::debug!(error = %e, "{} has the controller-uid index already", D::kind(&()));
        }
        self.watches::<D>(|obj| controller_key::<K>(meta_ref(obj)).into_iter().collect())
    }

    /// Watches `W`: a change of a `W` enqueues the keys `map` returns for it. `map` (like
    /// the [event filters](Self::with_event_filter)) is called on `W`'s informer task: keep
    /// it quick, reading caches rather than calling the API server.
    pub fn watches<W: Object>(
        mut self,
        map: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        let map: MapFn<W> = Arc::new(map);
        self.watches.push(Box::new(move |factory, enqueue| {
            let informer = factory.for_type::<W>();
            informer
                .informer()
                .add_event_handler(mapped_handler(enqueue, map));
        }));
        self
    }

    /// Whether events from the initial list and resyncs wait behind live changes in the
    /// work queue (controller-runtime's priority queue; default on): after a restart or a
    /// relist, what just changed is reconciled first.
    pub fn priority_queue(mut self, on: bool) -> Self {
        self.priority_queue = on;
        self
    }

    /// Only changes `predicate` passes enqueue anything (for every watched type; several
    /// filters must all pass).
    pub fn with_event_filter(mut self, predicate: Predicate) -> Self {
        self.predicates.push(predicate);
        self
    }

    /// Worker tasks reconciling at once (default 1; at least 1).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Retries of a failing key before it is dropped, logged and counted (default: no
    /// limit; the backoff caps each wait at 1000 s).
    pub fn max_retries(mut self, retries: usize) -> Self {
        self.max_retries = retries;
        self
    }

    /// A reconcile still running after `timeout` is dropped and counts as an error.
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.reconcile_timeout = Some(timeout);
        self
    }

    /// Registers the controller, reconciling with `reconcile(object, ctx)`; it runs when
    /// the manager starts (and leads). Fails if the manager already has a controller of
    /// this name (its metrics and queue are named after it).
    pub fn build<F, Fut, E, C>(self, reconcile: F, ctx: Arc<C>) -> Result<(), ManagerError>
    where
        F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Into<ReconcileError>,
        C: Send + Sync + 'static,
    {
        let Self {
            manager,
            name,
            watches,
            predicates,
            workers,
            max_retries,
            reconcile_timeout,
            priority_queue,
            primary: _,
        } = self;
        if manager.controllers.iter().any(|c| c.name == name) {
            return Err(ManagerError::DuplicateController(name));
        }
        let queue = RateLimitingQueue::with_config(
            default_controller_rate_limiter(),
            QueueConfig::new()
                .name(name.as_str())
                .metrics(&manager.metrics.workqueue),
        );
        let enqueue = Enqueue {
            queue: queue.clone(),
            predicates: predicates.into(),
            priority: priority_queue,
        };
        let primary = manager.factory.for_type::<K>();
        primary.informer().add_event_handler(mapped_handler::<K>(
            &enqueue,
            Arc::new(|obj| ObjectKey::of(obj).into_iter().collect()),
        ));
        for watch in watches {
            watch(&manager.factory, &enqueue);
        }
        let mut runner = Runner::new(&name, queue)
            .max_retries(max_retries)
            .metrics(&manager.metrics.controller);
        if let Some(timeout) = reconcile_timeout {
            runner = runner.reconcile_timeout(timeout);
        }
        let reconciler = Arc::new(FnReconciler {
            controller: name.clone(),
            indexer: primary.informer().indexer().clone(),
            reconcile,
            ctx,
        });
        let stats = runner.stats().clone();
        manager.controllers.push(RegisteredController {
            name,
            stats,
            run: Box::new(move |factory, cancel, abort| {
                Box::pin(async move {
                    let synced = async {
                        let synced = factory.wait_for_cache_sync(&cancel).await;
                        synced.values().all(|ok| *ok)
                    };
                    runner
                        .run_or_abort(reconciler, workers, synced, cancel.clone(), abort)
                        .await
                })
            }),
        });
        Ok(())
    }
}

/// A [`Reconciler`] over a reconcile function: looks the key up in the primary cache.
struct FnReconciler<K, F, C> {
    controller: String,
    indexer: Arc<Indexer<K>>,
    reconcile: F,
    ctx: Arc<C>,
}

impl<K, F, Fut, E, C> Reconciler for FnReconciler<K, F, C>
where
    K: Resource + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Into<ReconcileError>,
    C: Send + Sync + 'static,
{
    fn reconcile<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Action, ReconcileError>> {
        let Some(obj) = self.indexer.get(key) else {
            tracing::info!(controller = %self.controller, %key, "object in work queue no longer exists");
            return Box::pin(std::future::ready(Ok(Action::Done)));
        };
        let reconcile = (self.reconcile)(obj, self.ctx.clone());
        Box::pin(async move { reconcile.await.map_err(Into::into) })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;
    use crate::cache::CONTROLLER_UID_INDEX;

    fn owned_by(kind: &str, api_version: &str, controller: bool) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("child".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: api_version.into(),
                kind: kind.into(),
                name: "parent".into(),
                uid: "uid-1".into(),
                controller: Some(controller),
                block_owner_deletion: None,
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn an_owned_object_maps_to_its_controller_of_the_primary_kind_only() {
        assert_eq!(
            controller_key::<Deployment>(MetaRef::new(&owned_by("Deployment", "apps/v1", true))),
            Some(ObjectKey::new("ns", "parent"))
        );
        assert_eq!(
            controller_key::<Deployment>(MetaRef::new(&owned_by("Deployment", "apps/v1", false))),
            None
        );
        assert_eq!(
            controller_key::<Deployment>(MetaRef::new(&owned_by("ReplicaSet", "apps/v1", true))),
            None
        );
        assert_eq!(
            controller_key::<Deployment>(MetaRef::new(&owned_by(
                "Deployment",
                "extensions/v1beta1",
                true
            ))),
            None
        );
        assert_eq!(
            controller_key::<ReplicaSet>(MetaRef::new(&ObjectMeta::default())),
            None
        );
    }

    #[tokio::test]
    async fn owns_gives_the_owned_informer_the_controller_uid_index_even_when_two_controllers_own_it()
     {
        let config = crate::rest::Config::from_url("http://127.0.0.1:9").unwrap();
        let mut mgr = Manager::builder(config).build().unwrap();
        async fn noop<K>(_: Arc<K>, _: Arc<()>) -> Result<Action, ReconcileError> {
            Ok(Action::Done)
        }
        let first = mgr.controller::<Deployment>("first").owns::<ReplicaSet>();
        first.build(noop, Arc::new(())).unwrap();
        let second = mgr.controller::<Namespace>("second").owns::<ReplicaSet>();
        second.build(noop, Arc::new(())).unwrap();

        let informer = mgr.factory().for_type::<ReplicaSet>().informer().clone();
        let child = ReplicaSet {
            metadata: owned_by("Deployment", "apps/v1", true),
            ..Default::default()
        };
        informer.indexer().add(Arc::new(child)).unwrap();
        let controlled = informer.indexer().by_index(CONTROLLER_UID_INDEX, "uid-1");
        let names: Vec<_> = controlled
            .unwrap()
            .iter()
            .map(|r| r.metadata.name.clone())
            .collect();
        assert_eq!(names, [Some("child".to_string())]);
    }

    #[test]
    fn an_owner_reference_at_another_version_of_the_group_still_maps_to_the_controller() {
        assert_eq!(
            controller_key::<Deployment>(MetaRef::new(&owned_by(
                "Deployment",
                "apps/v1beta2",
                true
            ))),
            Some(ObjectKey::new("ns", "parent"))
        );
    }

    #[test]
    fn a_cluster_scoped_controller_is_keyed_without_the_dependents_namespace() {
        let key = controller_key::<Namespace>(MetaRef::new(&owned_by("Namespace", "v1", true)));
        assert_eq!(key.map(|k| k.to_string()), Some("parent".to_string()));
    }

    fn test_queue() -> RateLimitingQueue<String> {
        RateLimitingQueue::new(crate::workqueue::ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(1),
            Duration::from_millis(10),
        ))
    }

    #[tokio::test]
    async fn initial_list_and_resync_events_wait_behind_live_changes_unless_turned_off() {
        use crate::cache::ResourceEventHandler;

        let cm = |name: &str, rv: &str| {
            let mut cm = k8s_openapi::api::core::v1::ConfigMap::default();
            cm.metadata.namespace = Some("ns".into());
            cm.metadata.name = Some(name.into());
            cm.metadata.resource_version = Some(rv.into());
            Arc::new(cm)
        };
        for priority in [true, false] {
            let queue = test_queue();
            let enqueue = Enqueue {
                queue: queue.clone(),
                predicates: Vec::new().into(),
                priority,
            };
            let handler = mapped_handler(
                &enqueue,
                Arc::new(|cm| ObjectKey::of(cm).into_iter().collect()),
            );
            let h: &dyn ResourceEventHandler<_> = &handler;
            h.on_add(&cm("listed", "1"), true);
            h.on_update(&cm("resynced", "2"), &cm("resynced", "2"));
            h.on_update(&cm("changed", "3"), &cm("changed", "4"));
            h.on_add(&cm("created", "5"), false);
            let mut order = Vec::new();
            while !queue.is_empty() {
                let key = queue.get().await.unwrap();
                queue.done(&key);
                order.push(key);
            }
            let expected = if priority {
                ["ns/changed", "ns/created", "ns/listed", "ns/resynced"]
            } else {
                ["ns/listed", "ns/resynced", "ns/changed", "ns/created"]
            };
            assert_eq!(order, expected, "priority queue {priority}");
        }
    }

    #[tokio::test]
    async fn the_handler_enqueues_mapped_keys_of_changes_the_predicates_pass() {
        use crate::cache::{MaybeTombstone, ResourceEventHandler};

        let queue = test_queue();
        let enqueue = Enqueue {
            queue: queue.clone(),
            predicates: vec![Predicate::generation_changed()].into(),
            priority: true,
        };
        let handler = mapped_handler::<ReplicaSet>(
            &enqueue,
            Arc::new(|rs| {
                controller_key::<Deployment>(meta_ref(rs))
                    .into_iter()
                    .collect()
            }),
        );
        let rs = |generation, owner: &str| {
            let mut meta = owned_by("Deployment", "apps/v1", true);
            meta.generation = Some(generation);
            meta.owner_references.as_mut().unwrap()[0].name = owner.into();
            Arc::new(ReplicaSet {
                metadata: meta,
                ..Default::default()
            })
        };
        let h: &dyn ResourceEventHandler<ReplicaSet> = &handler;
        h.on_update(&rs(1, "a"), &rs(1, "b"));
        assert_eq!(queue.len(), 0, "the generation did not change");
        h.on_update(&rs(1, "a"), &rs(2, "b"));
        assert_eq!(queue.len(), 2, "old and new owners");
        h.on_add(&rs(1, "a"), true);
        h.on_delete(&MaybeTombstone::Object(rs(1, "c")));
        assert_eq!(queue.len(), 3, "a is queued once; c added");
        assert_eq!(ObjectKey::new("ns", "c").to_string(), "ns/c");
    }
}
