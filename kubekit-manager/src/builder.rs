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
//! - It returns a [`ReconcileAction`] (done, or requeue after a delay), or a [`ReconcileError`]
//!   (`?` on any error makes one), handled as its [`ErrorPolicy`] says — unless the
//!   controller's [`error_policy`](ControllerBuilder::error_policy) hook, which sees the
//!   object and the error, decides otherwise:
//!   - [`Retry`](ErrorPolicy::Retry), the default: retried through the rate limiter
//!     (per-item exponential backoff 5 ms … 1000 s under an overall 10 qps bucket), by
//!     default without end, as controller-runtime and kube-rs retry, so an object whose
//!     reconcile fails for a long while (an outage) is reconciled when it succeeds again,
//!     without having to change; [`max_retries`](ControllerBuilder::max_retries) bounds it
//!     (the key is then dropped, logged and counted);
//!   - [`RequeueAfter`](ErrorPolicy::RequeueAfter): reconciled again after that delay;
//!   - [`Permanent`](ErrorPolicy::Permanent): logged, counted
//!     (`controller_runtime_terminal_reconcile_errors_total`), recorded as a Warning Event
//!     on the object (reason [`PERMANENT_ERROR_REASON`], reported by a recorder named
//!     after the controller) and not retried: the object is reconciled again when an
//!     event about it comes (it changed, a child it owns changed, or a resync).
//!
//!   The control loop is [`Runner`]'s (a `reconcile` span per reconcile, with the
//!   controller, the key, the attempt and a reconcile id).
//! - **Resync** ([`resync_period`](ControllerBuilder::resync_period), or the manager's
//!   [`resync_period`](super::ManagerBuilder::resync_period); none by default): every
//!   period, every cached object of the primary type is enqueued again, changed or not
//!   (client-go's informer resync, controller-runtime's `SyncPeriod`), through the
//!   shared informer's own per-handler resync. Owned and watched types do not resync for
//!   the controller. A resync is an update whose resourceVersion is unchanged: the event
//!   filters see it (so [`Predicate::resource_version_changed`] and
//!   [`Predicate::generation_changed`] drop it, as in controller-runtime), and with the
//!   priority queue it waits behind live changes.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{BoxFuture, join_all};
use kube::Resource;
use tokio_util::sync::CancellationToken;

use super::predicate::{Change, Predicate};
use super::rbac::{Rule, Verb};
use super::read_your_writes::Gate;
use super::sharding::{ShardGate, ShardWaitFn, SweepFn};
use super::{Manager, ManagerError, RegisteredController};
use kubekit_client::clientset::KnownScope;
use kubekit_runtime::cache::{
    Indexer, MetaRef, ResourceEventHandlerFuncs, ShardKey, SharedIndexInformer,
    controller_uid_index, meta_ref, shard_hash,
};
use kubekit_runtime::controller::{
    ErrorPolicy, ObjectReconciler, ReconcileAction, ReconcileError, Reconciler, Runner,
};
use kubekit_runtime::informers::SharedInformerFactory;
use kubekit_runtime::record::{EventRecorder, EventType};
use kubekit_runtime::workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};

pub use kubekit_client::meta::{Object, ObjectKey};

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

/// The reason of the Warning Event a manager's controller records on an object whose
/// reconcile failed with a [permanent](ErrorPolicy::Permanent) error.
pub const PERMANENT_ERROR_REASON: &str = "PermanentReconcileError";

type MapFn<W> = Arc<dyn Fn(&W) -> Vec<ObjectKey> + Send + Sync>;
type ErrorPolicyFn<K> = Arc<dyn Fn(&K, &ReconcileError) -> ErrorPolicy + Send + Sync>;
/// Registers a watched type's handler (and, in a sharded manager, its informer with the
/// gate); returns the wait for that informer's sync.
type Watch = Box<dyn FnOnce(&SharedInformerFactory, &Enqueue, Option<&Arc<ShardGate>>) -> Synced>;
/// Waits for one informer to sync: false if the token fired first.
type Synced = Box<dyn Fn(CancellationToken) -> BoxFuture<'static, bool> + Send + Sync>;

/// The wait for `informer`'s sync.
fn synced<T: Object>(informer: &Arc<SharedIndexInformer<T>>) -> Synced {
    let informer = Arc::clone(informer);
    Box::new(move |cancel| {
        let informer = Arc::clone(&informer);
        Box::pin(async move { informer.wait_for_sync(&cancel).await })
    })
}

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

/// Enqueues the key of every change of the primary type, and of every cached object each
/// `resync` period (zero: never), through `informer`'s own resync.
fn watch_primary<K: Resource + Clone + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
    enqueue: &Enqueue,
    resync: Duration,
) {
    let own_key: MapFn<K> = Arc::new(|obj| ObjectKey::of(obj).into_iter().collect());
    informer.add_event_handler_with_resync_period(mapped_handler(enqueue, own_key), resync);
}

/// Builds a controller into a [`Manager`]; see the [module docs](self). Made by
/// [`Manager::controller`].
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubekit::controller::ReconcileAction;
/// use kubekit::manager::{Manager, Predicate};
///
/// struct Ctx;
///
/// async fn reconcile(cm: Arc<ConfigMap>, _ctx: Arc<Ctx>) -> Result<ReconcileAction, kubekit::rest::Error> {
///     println!("reconciling {:?}", cm.metadata.name);
///     Ok(ReconcileAction::RequeueAfter(Duration::from_secs(300)))
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
    resync_period: Option<Duration>,
    error_policy: Option<ErrorPolicyFn<K>>,
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
            .field("resync_period", &self.resync_period)
            .field("error_policy", &self.error_policy.is_some())
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
            resync_period: None,
            error_policy: None,
            primary: PhantomData,
        }
    }

    /// Watches `D`: a change of a `D` controlled by a `K` enqueues that `K`. `D`'s informer
    /// gets the [`CONTROLLER_UID_INDEX`](kubekit_runtime::cache::CONTROLLER_UID_INDEX) (unless it has
    /// an index of that name), so
    /// [`Lister::controlled_by`](kubekit_runtime::listers::Lister::controlled_by) finds a `K`'s
    /// children without scanning the cache.
    ///
    /// In [`Manager::rbac`], `D`'s informer and `update` of `K`'s `finalizers`: a child's
    /// controller reference sets `blockOwnerDeletion`, which the
    /// `OwnerReferencesPermissionEnforcement` admission plugin allows only to those who
    /// may. What the reconcile writes to `D` is declared with [`writes`](Self::writes).
    pub fn owns<D: Object>(self) -> Self {
        let finalizers = Rule::of::<K>().subresource("finalizers");
        self.manager.grant::<K>(finalizers.verbs([Verb::Update]));
        let informer = self.manager.factory().for_type::<D>().informer().clone();
        if let Err(e) = informer.add_indexers([controller_uid_index::<D>()]) {
            // Another controller owns `D` too, or the program added the index itself.
            tracing::debug!(error = %e, "{} has the controller-uid index already", D::kind(&()));
        }
        self.watch::<D>(true, |obj| {
            controller_key::<K>(meta_ref(obj)).into_iter().collect()
        })
    }

    /// Declares that the reconciles write `D`s with `verbs` (in the manager's namespace,
    /// if `D` is namespaced): [`Verb::APPLY`] for a server-side apply, `Verb::Delete`, ...
    /// Nothing is checked at run time; it goes into [`Manager::rbac`], and a request it
    /// does not cover is refused by a cluster whose RBAC is generated from it.
    pub fn writes<D: Object>(self, verbs: impl IntoIterator<Item = Verb>) -> Self {
        self.manager.grant::<D>(Rule::of::<D>().verbs(verbs));
        self
    }

    /// Declares that the reconciles write `K`'s status subresource with `verbs`
    /// ([`Verb::Patch`] for an apply or a patch of the status, [`Verb::Update`] for an
    /// update), as [`writes`](Self::writes) does.
    pub fn writes_status(self, verbs: impl IntoIterator<Item = Verb>) -> Self {
        let status = Rule::of::<K>().subresource("status");
        self.manager.grant::<K>(status.verbs(verbs));
        self
    }

    /// Watches `W`: a change of a `W` enqueues the keys `map` returns for it. `map` (like
    /// the [event filters](Self::with_event_filter)) is called on `W`'s informer task: keep
    /// it quick, reading caches rather than calling the API server.
    pub fn watches<W: Object>(
        self,
        map: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.watch(false, map)
    }

    /// [`watches`](Self::watches), for a type whose objects are `owned` by the primary
    /// ones or not.
    fn watch<W: Object>(
        mut self,
        owned: bool,
        map: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        let map: MapFn<W> = Arc::new(map);
        if let Some(tracker) = &self.manager.read_your_writes {
            tracker.follow(self.manager.factory().for_type::<W>().informer());
        }
        self.watches.push(Box::new(move |factory, enqueue, gate| {
            let informer = factory.for_type::<W>();
            if let Some(gate) = gate {
                let narrow = watched_shard_key(gate.key(), owned);
                gate_informer(gate, informer.informer(), narrow);
            }
            // No resync: a controller resyncs its primary type only. Explicit, so that
            // an informer made with a default period gives none to this handler either.
            informer
                .informer()
                .add_event_handler_with_resync_period(mapped_handler(enqueue, map), Duration::ZERO);
            synced(informer.informer())
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

    /// A reconcile still running after `timeout` is dropped and counts as an error
    /// (retried through the rate limiter; the [error policy](Self::error_policy) does not
    /// see it).
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.reconcile_timeout = Some(timeout);
        self
    }

    /// Every `period`, every cached object of the primary type is enqueued again, changed
    /// or not (see the [module docs](self)); overrides the manager's
    /// [`resync_period`](super::ManagerBuilder::resync_period). Zero: no resync. At least
    /// 1 s (a shorter period is raised to it, and logged).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = Some(period);
        self
    }

    /// Decides what becomes of a failed reconcile (kube-rs's `error_policy`): `policy` is
    /// given the object and the error and returns the [`ErrorPolicy`] to follow. Without
    /// it, the error's own ([`ReconcileError::policy`]). It runs on the worker, after the
    /// reconcile; a panic in it is handled as a panic of the reconcile. Timeouts and
    /// panics do not reach it (they are retried).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kubekit::controller::{ReconcileAction, ErrorPolicy};
    /// # async fn reconcile(_: Arc<ConfigMap>, _: Arc<()>) -> Result<ReconcileAction, kubekit::rest::Error> { Ok(ReconcileAction::Done) }
    /// # fn demo(mut mgr: kubekit::manager::Manager) -> Result<(), kubekit::manager::ManagerError> {
    /// mgr.controller::<ConfigMap>("configmaps")
    ///     .error_policy(|_cm, err| match err.downcast_ref::<kubekit::rest::Error>() {
    ///         // Not allowed to act on this object: asking again will not help.
    ///         Some(e) if e.is_forbidden() => ErrorPolicy::Permanent,
    ///         _ => ErrorPolicy::RequeueAfter(Duration::from_secs(5)),
    ///     })
    ///     .build(reconcile, Arc::new(()))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn error_policy(
        mut self,
        policy: impl Fn(&K, &ReconcileError) -> ErrorPolicy + Send + Sync + 'static,
    ) -> Self {
        self.error_policy = Some(Arc::new(policy));
        self
    }

    /// Registers the controller, reconciling with `reconcile(object, ctx)`; it runs when
    /// the manager starts (and leads). Fails if the manager already has a controller of
    /// this name (its metrics and queue are named after it).
    pub fn build<F, Fut, E, C>(self, reconcile: F, ctx: Arc<C>) -> Result<(), ManagerError>
    where
        F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReconcileAction, E>> + Send + 'static,
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
            resync_period,
            error_policy,
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
        if let Some(tracker) = &manager.read_your_writes {
            tracker.follow(primary.informer());
        }
        let resync = resync_period.unwrap_or(manager.resync_period);
        watch_primary(primary.informer(), &enqueue, resync);
        let shard = manager.coordination.shard_gate().cloned();
        if let Some(gate) = &shard {
            // Its cache narrowed to the held ranges, its objects swept into the queue when
            // a range is taken.
            gate_informer(gate, primary.informer(), Some(gate.key()));
            let sweep = sweep(primary.informer().indexer(), &enqueue, gate.key());
            gate.add_sweep(&name, sweep);
        }
        // Its own informers: the primary type's and the watched ones'.
        let mut own = vec![synced(primary.informer())];
        for watch in watches {
            own.push(watch(&manager.factory, &enqueue, shard.as_ref()));
        }
        let mut runner = Runner::new(&name, queue)
            .max_retries(max_retries)
            .graceful_shutdown(manager.graceful_shutdown_timeout)
            .metrics(&manager.metrics.controller);
        if let Some(timeout) = reconcile_timeout {
            runner = runner.reconcile_timeout(timeout);
        }
        let reconciler = Arc::new(FnReconciler {
            reconciler: ObjectReconciler::new(primary.informer().indexer().clone(), reconcile, ctx),
            error_policy,
            recorder: manager.event_recorder(&name),
            shard,
            read_your_writes: manager.read_your_writes.as_ref().map(|t| t.gate(&name)),
        });
        let stats = runner.stats().clone();
        let runner = Arc::new(runner);
        let own = Arc::new(own);
        manager.controllers.push(RegisteredController {
            name,
            stats,
            run: Box::new(move |factory, cancel, abort| {
                let (runner, reconciler) = (Arc::clone(&runner), Arc::clone(&reconciler));
                let own = Arc::clone(&own);
                Box::pin(async move {
                    // Its own informers synced, and every other one synced or not served
                    // (a controller of a kind whose CRD is not installed waits alone).
                    let synced = async {
                        let own = join_all(own.iter().map(|wait| wait(cancel.clone()))).await;
                        own.into_iter().all(|ok| ok)
                            && factory.wait_for_served_caches(&cancel).await
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

/// The key a sharded manager (sharding by `key`) narrows a watched type's informer by;
/// `None`: cached whole. With namespace sharding an owner and its children share a
/// namespace, so any watched type narrows like the primary; with uid sharding an `owned`
/// type follows its controller's uid (the primary's own), and a type mapped otherwise
/// stays whole, since its objects' keys say nothing of which primary objects they map to
/// (see the module docs of `manager::sharding`).
fn watched_shard_key(key: ShardKey, owned: bool) -> Option<ShardKey> {
    match key {
        ShardKey::Namespace => Some(ShardKey::Namespace),
        ShardKey::Uid if owned => Some(ShardKey::ControllerUid),
        _ => None,
    }
}

/// Registers `informer` with a sharded manager's gate, to be narrowed to the held ranges
/// by `narrow` (unless `None`) before it starts and whenever they change.
fn gate_informer<T: Object>(
    gate: &ShardGate,
    informer: &Arc<SharedIndexInformer<T>>,
    narrow: Option<ShardKey>,
) {
    let control = informer.shard_control();
    let waiter = Arc::clone(informer);
    let wait: ShardWaitFn = Box::new(move |generation| Box::pin(waiter.shard_synced(generation)));
    let resource = format!("{}/{}", T::api_version(&()), T::plural(&()));
    gate.add_informer(&resource, control, wait, narrow);
}

/// A sharded controller's sweep: enqueues (at low priority, with the priority queue) the
/// key of every cached primary object whose `key` hash is in the set given, or only counts
/// them.
fn sweep<K: Object>(indexer: &Arc<Indexer<K>>, enqueue: &Enqueue, key: ShardKey) -> SweepFn {
    let (indexer, target) = (Arc::clone(indexer), enqueue.clone());
    Box::new(move |set, add| {
        let mut count = 0;
        for obj in indexer.list() {
            if !set.contains(shard_hash(key.value_of(obj.as_ref()))) {
                continue;
            }
            count += 1;
            match ObjectKey::of(obj.as_ref()) {
                Some(k) if add && target.priority => target.queue.add_low_priority(k.to_string()),
                Some(k) if add => target.queue.add(k.to_string()),
                _ => {}
            }
        }
        count
    })
}

/// A sharded reconcile stopped because this replica stopped working on its shard.
#[derive(Debug, thiserror::Error)]
#[error(
    "stopped: this replica no longer works on the object's shard (its shard lease was not renewed in time)"
)]
struct ShardLost;

/// A [`Reconciler`] over a reconcile function: looks the key up in the primary cache, and
/// settles the policy of an error (recording the Event of a permanent one). Sharded, it
/// reconciles only objects the gate admits (others are dropped), and drops a reconcile the
/// gate tells to stop.
struct FnReconciler<K, F, C> {
    reconciler: ObjectReconciler<K, F, C>,
    error_policy: Option<ErrorPolicyFn<K>>,
    recorder: EventRecorder,
    shard: Option<Arc<ShardGate>>,
    read_your_writes: Option<Gate>,
}

impl<K: Resource<DynamicType = ()>, F, C> FnReconciler<K, F, C> {
    /// `error` with the policy the controller's hook gives it (its own without a hook);
    /// a permanent one is recorded as a Warning Event on `obj`.
    fn settle_policy(&self, obj: &K, error: ReconcileError) -> ReconcileError {
        let error = match &self.error_policy {
            Some(policy) => {
                let policy = policy(obj, &error);
                error.with_policy(policy)
            }
            None => error,
        };
        if error.policy() == ErrorPolicy::Permanent {
            let message = format!("{error}; not retried until the object changes");
            self.recorder
                .event(obj, EventType::Warning, PERMANENT_ERROR_REASON, &message);
        }
        error
    }
}

impl<K, F, Fut, E, C> Reconciler for FnReconciler<K, F, C>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReconcileAction, E>> + Send + 'static,
    E: Into<ReconcileError>,
    C: Send + Sync + 'static,
{
    fn reconcile<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<ReconcileAction, ReconcileError>> {
        let Some(obj) = self.reconciler.object(key) else {
            // The runner's span names the controller and the key.
            match self.shard {
                // Expected: an owned object of another replica's shard enqueued its owner.
                Some(_) => tracing::debug!(
                    "object in work queue is not cached: deleted, or not in this replica's shard ranges"
                ),
                None => tracing::info!("object in work queue no longer exists"),
            }
            return Box::pin(std::future::ready(Ok(ReconcileAction::Done)));
        };
        let admitted = match &self.shard {
            None => None,
            Some(gate) => match gate.try_start(gate.hash_of(obj.as_ref())) {
                Some(admitted) => Some(admitted),
                None => {
                    tracing::debug!("not in the shard ranges this replica works on: dropped");
                    return Box::pin(std::future::ready(Ok(ReconcileAction::Done)));
                }
            },
        };
        let reconcile = self.reconciler.call(obj.clone());
        let reconcile = async move {
            match &self.read_your_writes {
                Some(gate) => gate.track(key, reconcile).await,
                None => reconcile.await,
            }
        };
        Box::pin(async move {
            let result = match &admitted {
                None => reconcile.await,
                Some(admitted) => tokio::select! {
                    biased;
                    _ = admitted.term().cancelled() => return Err(ReconcileError::new(ShardLost)),
                    result = reconcile => result,
                },
            };
            // Counted in flight until here.
            drop(admitted);
            result.map_err(|e| self.settle_policy(&obj, e.into()))
        })
    }

    fn defer(&self, key: &str) -> Option<Duration> {
        self.read_your_writes.as_ref()?.defer(key)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;
    use kubekit_runtime::cache::CONTROLLER_UID_INDEX;

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
        let config = kubekit_client::rest::RestConfig::from_url("http://127.0.0.1:9").unwrap();
        let mut mgr = Manager::builder(config).build().unwrap();
        async fn noop<K>(_: Arc<K>, _: Arc<()>) -> Result<ReconcileAction, ReconcileError> {
            Ok(ReconcileAction::Done)
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
        RateLimitingQueue::new(
            kubekit_runtime::workqueue::ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(1),
                Duration::from_millis(10),
            ),
        )
    }

    #[tokio::test]
    async fn initial_list_and_resync_events_wait_behind_live_changes_unless_turned_off() {
        use kubekit_runtime::cache::ResourceEventHandler;

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

    /// Writes down the reason and message of every event it is given.
    #[derive(Clone, Default)]
    struct RecordingSink(Arc<parking_lot::Mutex<Vec<String>>>);

    impl kubekit_runtime::record::EventSink for RecordingSink {
        fn create(
            &self,
            event: &k8s_openapi::api::core::v1::Event,
        ) -> BoxFuture<'_, kubekit_client::rest::Result<k8s_openapi::api::core::v1::Event>>
        {
            self.0.lock().push(format!(
                "{}: {}",
                event.reason.as_deref().unwrap_or_default(),
                event.message.as_deref().unwrap_or_default()
            ));
            Box::pin(std::future::ready(Ok(event.clone())))
        }

        fn patch(
            &self,
            event: &k8s_openapi::api::core::v1::Event,
            patch: &serde_json::Value,
        ) -> BoxFuture<'_, kubekit_client::rest::Result<k8s_openapi::api::core::v1::Event>>
        {
            self.0.lock().push(format!("patched: {}", patch["message"]));
            Box::pin(std::future::ready(Ok(event.clone())))
        }
    }

    /// A controller of ConfigMaps wired as `build` wires one (primary handler, resync,
    /// error policy, event recorder), over a scripted informer; it runs until `stop`.
    struct Rig {
        watch: kubekit_runtime::cache::test_support::Events,
        stats: Arc<kubekit_runtime::controller::RunStats>,
        events: RecordingSink,
        broadcaster: kubekit_runtime::record::EventBroadcaster,
        cancel: tokio_util::sync::CancellationToken,
        tasks: Vec<tokio::task::JoinHandle<()>>,
    }

    type Cm = k8s_openapi::api::core::v1::ConfigMap;

    fn start_rig<F, Fut>(
        listed: &[(&str, &str)],
        resync: Duration,
        error_policy: Option<ErrorPolicyFn<Cm>>,
        reconcile: F,
    ) -> Rig
    where
        F: Fn(Arc<Cm>, Arc<()>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReconcileAction, ReconcileError>> + Send + 'static,
    {
        use kubekit_runtime::cache::test_support::{Fake, Script};

        let script = Arc::new(Script::default());
        script.list("10", None, listed);
        let watch = script.watch();
        let informer = Arc::new(SharedIndexInformer::new(
            Arc::new(Fake(script)),
            Duration::ZERO,
        ));
        let queue = test_queue();
        let enqueue = Enqueue {
            queue: queue.clone(),
            predicates: Vec::new().into(),
            priority: true,
        };
        watch_primary(&informer, &enqueue, resync);
        let broadcaster = kubekit_runtime::record::EventBroadcaster::new();
        let events = RecordingSink::default();
        broadcaster.start_recording_to_sink(events.clone());
        let reconciler = Arc::new(FnReconciler {
            reconciler: ObjectReconciler::new(informer.indexer().clone(), reconcile, Arc::new(())),
            error_policy,
            recorder: broadcaster.new_recorder(kubekit_runtime::record::EventSource::new("test")),
            shard: None,
            read_your_writes: None,
        });
        let runner = Runner::new("test", queue).max_retries(5);
        let stats = runner.stats().clone();
        let cancel = tokio_util::sync::CancellationToken::new();
        let run_informer = {
            let (informer, cancel) = (informer.clone(), cancel.clone());
            tokio::spawn(async move { informer.run(cancel).await })
        };
        let run_controller = {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                let token = cancel.clone();
                let synced = informer.wait_for_sync(&token);
                runner.run(reconciler, 1, synced, cancel).await.unwrap();
            })
        };
        Rig {
            watch,
            stats,
            events,
            broadcaster,
            cancel,
            tasks: vec![run_informer, run_controller],
        }
    }

    impl Rig {
        fn change(&self, cm: Cm) {
            let event = kubekit_client::rest::WatchEvent::Modified(cm);
            self.watch.send(Ok(event)).unwrap();
        }

        fn events(&self) -> Vec<String> {
            self.events.0.lock().clone()
        }

        async fn stop(self) {
            self.cancel.cancel();
            for task in self.tasks {
                task.await.unwrap();
            }
            self.broadcaster.shutdown().await;
        }
    }

    /// Counts the reconciles of each object, by `name@resourceVersion`.
    #[derive(Clone, Default)]
    struct Calls(Arc<parking_lot::Mutex<Vec<String>>>);

    impl Calls {
        fn record(&self, cm: &Cm) {
            let meta = &cm.metadata;
            let (name, rv) = (meta.name.as_deref(), meta.resource_version.as_deref());
            self.0.lock().push(format!(
                "{}@{}",
                name.unwrap_or_default(),
                rv.unwrap_or_default()
            ));
        }

        fn take(&self) -> Vec<String> {
            std::mem::take(&mut *self.0.lock())
        }
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[tokio::test(start_paused = true)]
    async fn a_permanent_error_is_recorded_as_an_event_and_not_retried_until_the_object_changes() {
        use kubekit_runtime::cache::test_support::cm;

        let calls = Calls::default();
        let seen = calls.clone();
        // Invalid until the ConfigMap has a `valid` key.
        let reconcile = move |cm: Arc<Cm>, _: Arc<()>| {
            seen.record(&cm);
            let valid = cm.data.as_ref().is_some_and(|d| d.contains_key("valid"));
            async move {
                match valid {
                    true => Ok(ReconcileAction::Done),
                    false => Err(ReconcileError::new("no valid key").permanent()),
                }
            }
        };
        let rig = start_rig(&[("a", "1")], Duration::ZERO, None, reconcile);
        // A retried error would be reconciled 5 more times within 50 ms.
        tokio::time::sleep(MINUTE).await;
        assert_eq!(calls.take(), ["a@1"]);
        assert_eq!(
            rig.events(),
            ["PermanentReconcileError: no valid key; not retried until the object changes"]
        );
        rig.change(cm("a", "2"));
        tokio::time::sleep(MINUTE).await;
        assert_eq!(
            calls.take(),
            ["a@2"],
            "changed, reconciled, failed again: not retried"
        );
        let mut valid = cm("a", "3");
        valid.data = Some([("valid".to_string(), String::new())].into());
        rig.change(valid);
        tokio::time::sleep(MINUTE).await;
        assert_eq!(calls.take(), ["a@3"]);
        assert_eq!(rig.events().len(), 2, "one event per permanent failure");
        assert_eq!(
            (
                rig.stats.permanent(),
                rig.stats.succeeded(),
                rig.stats.dropped()
            ),
            (2, 1, 0)
        );
        rig.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_error_policy_hook_sees_the_object_and_its_decision_is_followed() {
        let calls = Calls::default();
        let seen = calls.clone();
        let reconcile = move |cm: Arc<Cm>, _: Arc<()>| {
            seen.record(&cm);
            // Retried through the rate limiter, unless the hook says otherwise.
            async { Err::<ReconcileAction, _>(ReconcileError::new("conflict")) }
        };
        let policy: ErrorPolicyFn<Cm> = Arc::new(|cm, err| {
            assert_eq!(err.to_string(), "conflict");
            match cm.metadata.name.as_deref() {
                Some("later") => ErrorPolicy::RequeueAfter(Duration::from_secs(25)),
                Some("stop") => ErrorPolicy::Permanent,
                _ => err.policy(),
            }
        });
        let rig = start_rig(
            &[("later", "1"), ("stop", "2"), ("retry", "3")],
            Duration::ZERO,
            Some(policy),
            reconcile,
        );
        tokio::time::sleep(MINUTE).await;
        let calls = calls.take();
        let count = |name: &str| calls.iter().filter(|c| c.starts_with(name)).count();
        assert_eq!(count("later@"), 3, "at 0, 25 and 50 s");
        assert_eq!(count("stop@"), 1);
        assert_eq!(
            count("retry@"),
            6,
            "the error's own policy: retried 5 times"
        );
        assert_eq!(rig.events().len(), 1, "the permanent one");
        rig.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_resync_enqueues_every_unchanged_object_of_the_primary_type_each_period() {
        let calls = Calls::default();
        let seen = calls.clone();
        let reconcile = move |cm: Arc<Cm>, _: Arc<()>| {
            seen.record(&cm);
            async { Ok(ReconcileAction::Done) }
        };
        let rig = start_rig(
            &[("a", "1"), ("b", "2")],
            Duration::from_secs(10),
            None,
            reconcile,
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
        let mut first = calls.take();
        first.sort();
        assert_eq!(first, ["a@1", "b@2"], "the initial list");
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let mut resynced = calls.take();
            resynced.sort();
            assert_eq!(resynced, ["a@1", "b@2"], "each period, nothing changed");
        }
        rig.stop().await;

        let calls = Calls::default();
        let seen = calls.clone();
        let reconcile = move |cm: Arc<Cm>, _: Arc<()>| {
            seen.record(&cm);
            async { Ok(ReconcileAction::Done) }
        };
        let without = start_rig(&[("a", "1")], Duration::ZERO, None, reconcile);
        tokio::time::sleep(MINUTE).await;
        assert_eq!(calls.take(), ["a@1"], "no resync: reconciled once");
        without.stop().await;
    }

    #[tokio::test]
    async fn the_handler_enqueues_mapped_keys_of_changes_the_predicates_pass() {
        use kubekit_runtime::cache::{MaybeTombstone, ResourceEventHandler};

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
