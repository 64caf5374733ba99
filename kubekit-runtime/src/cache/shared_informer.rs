//! [`SharedIndexInformer`]: one list-watch of a resource feeding an indexed cache and any
//! number of event handlers (client-go's `SharedIndexInformer`).
//!
//! # Contract
//!
//! - **One copy.** The objects the reflector decodes are stored in the [`Indexer`] as
//!   `Arc`s and the same `Arc`s reach every handler and every lister.
//! - **Processing.** For each popped key, in order: `Added`/`Updated`/`Replaced`/`Sync`
//!   store the object and notify an update when the key was cached (old and new), an add
//!   otherwise; `Deleted` removes it and notifies a delete (object or tombstone). A
//!   `Sync` — or a `Replaced` whose resourceVersion is unchanged — is a resync: it goes
//!   only to the handlers whose resync period is due.
//! - **Handlers** ([`add_event_handler`](SharedIndexInformer::add_event_handler)) may be
//!   added and removed at any time. Each has its own thread (handlers are plain functions
//!   and may block) and an unbounded buffer: a slow handler never blocks the informer nor
//!   the other handlers. A handler that says it never blocks
//!   ([`may_block`](ResourceEventHandler::may_block) false, as
//!   [`controller::enqueue_handler`](crate::controller::enqueue_handler)'s and the
//!   manager's are) is called on the informer's task instead: no thread, no buffer, and
//!   two thread switches less per notification. The buffer's depth (and
//!   its high-water mark) is observable on the registration, and a warning is logged each
//!   time it passes a power of ten from 1,000 on; notifications are never dropped, since a
//!   dropped one would leave the handler's view of the cache wrong.
//! - **Late registration.** A handler added after start is first sent every cached object
//!   as an add with `is_in_initial_list = true`, atomically with respect to the processing
//!   of new deltas; its registration [`has_synced`](ResourceEventHandlerRegistration::has_synced)
//!   once the informer has synced and the handler has *handled* those adds.
//! - **Resync periods.** Per handler, never below 1 s.
//!   [`add_event_handler`](SharedIndexInformer::add_event_handler) gives a handler the
//!   informer's default period, the one it was made with (client-go's
//!   `defaultEventHandlerResyncPeriod`), never another handler's.
//!   Before start, a handler period shorter than the informer's check period lowers the
//!   check period (other handlers keep their own periods); after start it is raised to the
//!   check period (the reflector's tick is fixed once it runs), or made zero when the
//!   running informer does not resync. Unlike client-go, an informer made without a
//!   period resyncs for a handler that asks for one before start. With no period
//!   anywhere, there is no resync.
//! - **Panics.** A handler that panics is reported (logged, counted on its registration)
//!   and goes on with its next notification; the informer is unaffected.
//! - **Transform** runs on each object before it is stored; set it before start.
//! - [`run`](SharedIndexInformer::run) may be called once; it returns when its
//!   cancellation token fires, after the reflector and every handler thread have stopped.
//!
//! ```no_run
//! # async fn demo(rest: kubekit::rest::RestClient) {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::Pod;
//! use kubekit::cache::{ListWatch, ResourceEventHandlerFuncs, SharedIndexInformer};
//! use kubekit::clientset::ResourceClient;
//! use tokio_util::sync::CancellationToken;
//!
//! let lw = ListWatch::new(ResourceClient::<Pod>::namespaced(rest, ""));
//! let informer = Arc::new(SharedIndexInformer::new(Arc::new(lw), Duration::ZERO));
//! informer.add_event_handler(
//!     ResourceEventHandlerFuncs::new().on_add(|pod: &Arc<Pod>, _| println!("{:?}", pod.metadata.name)),
//! );
//! let cancel = CancellationToken::new();
//! tokio::spawn({
//!     let informer = informer.clone();
//!     let cancel = cancel.clone();
//!     async move { informer.run(cancel).await }
//! });
//! informer.wait_for_sync(&cancel).await;
//! println!("{} pods cached", informer.indexer().len());
//! # }
//! ```

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use kube::Resource;
use parking_lot::Mutex;
use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::delta_fifo::{DeltaFifo, DeltaType, Deltas};
use super::handler::ResourceEventHandler;
use super::key::MaybeTombstone;
use super::listwatch::ListerWatcher;
use super::object::{AnyObject, Object, erase_tombstone, typed, typed_tombstone};
use super::process_loop::{ErasedProcessLoop, ProcessLoop, ProcessLoopConfig};
use super::reflector::{Reflector, ReflectorOptions};
use super::store::{Error as StoreError, IndexFunc, Indexer};

/// The shortest resync period a handler may ask for.
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// Depth from which a growing listener buffer is reported.
const DEPTH_WARNING: usize = 1000;

/// One change, as sent to a handler; its objects' type is erased, so that the listeners,
/// their buffers and threads are compiled once for every type.
#[derive(Clone)]
enum Notification {
    Add(Object, bool),
    Update(Object, Object),
    Delete(MaybeTombstone<dyn AnyObject>),
}

/// A handler of any type.
trait Handle: Send + Sync {
    /// Calls the handler's method for `n`.
    fn handle(&self, n: &Notification);
}

/// A handler of `K`, called with the objects as `K` (the informer sends nothing else).
struct Typed<K>(Box<dyn ResourceEventHandler<K>>);

impl<K: Send + Sync + 'static> Handle for Typed<K> {
    fn handle(&self, n: &Notification) {
        match n {
            Notification::Add(obj, initial) => {
                if let Some(obj) = typed::<K>(obj.clone()) {
                    self.0.on_add(&obj, *initial);
                }
            }
            Notification::Update(old, new) => {
                if let (Some(old), Some(new)) = (typed::<K>(old.clone()), typed::<K>(new.clone())) {
                    self.0.on_update(&old, &new);
                }
            }
            Notification::Delete(obj) => {
                if let Some(obj) = typed_tombstone::<K>(obj.clone()) {
                    self.0.on_delete(&obj);
                }
            }
        }
    }
}

/// How notifications reach a handler.
enum Delivery {
    /// Through an unbounded buffer to a thread of the handler's own; `None` tells the
    /// thread to stop.
    Thread {
        tx: mpsc::Sender<Option<Notification>>,
        rx: Mutex<Option<mpsc::Receiver<Option<Notification>>>>,
    },
    /// By a call on the informer's task: the handler said it does not block
    /// ([`ResourceEventHandler::may_block`]).
    Inline,
}

/// The informer side of one handler: its buffer, counters and resync schedule.
struct Listener {
    id: u64,
    delivery: Delivery,
    handler: Box<dyn Handle>,
    depth: AtomicUsize,
    max_depth: AtomicUsize,
    initial_pending: AtomicUsize,
    panics: AtomicU64,
    removed: AtomicBool,
    synced: Notify,
    resync_period: Duration,
    next_resync: Mutex<Instant>,
}

impl Listener {
    /// Stops the handler's thread once it has reached this point of its buffer.
    fn stop(&self) {
        self.removed.store(true, Ordering::Release);
        if let Delivery::Thread { tx, .. } = &self.delivery {
            let _ = tx.send(None);
        }
    }

    fn push(&self, n: Notification) {
        if let Notification::Add(_, true) = n {
            self.initial_pending.fetch_add(1, Ordering::AcqRel);
        }
        let depth = self.depth.fetch_add(1, Ordering::AcqRel) + 1;
        if self.max_depth.fetch_max(depth, Ordering::AcqRel) < depth
            && depth >= DEPTH_WARNING
            && is_power_of_ten(depth)
        {
            tracing::warn!(
                listener = self.id,
                depth,
                "an event handler is falling behind: its buffer keeps growing"
            );
        }
        match &self.delivery {
            // The receiver lives as long as the listener's thread; a send after it stopped
            // is moot.
            Delivery::Thread { tx, .. } => {
                let _ = tx.send(Some(n));
            }
            Delivery::Inline => self.handle(n),
        }
    }

    fn handle(&self, n: Notification) {
        if !self.removed.load(Ordering::Acquire) {
            let result = catch_unwind(AssertUnwindSafe(|| self.handler.handle(&n)));
            if let Err(panic) = result {
                self.panics.fetch_add(1, Ordering::Relaxed);
                let message = kubekit_client::panic::message(panic.as_ref());
                tracing::error!(listener = self.id, "event handler panicked: {message}");
            }
        }
        self.depth.fetch_sub(1, Ordering::AcqRel);
        if let Notification::Add(_, true) = n
            && self.initial_pending.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.synced.notify_waiters();
        }
    }

    /// Starts the thread that feeds the handler; once per listener, none for an inline one.
    /// Handlers are plain functions that may block: on a thread of their own, a blocking
    /// one holds up nothing else (on a runtime worker it would stall the tasks queued
    /// behind it).
    fn spawn(self: &Arc<Self>) -> Option<JoinHandle<()>> {
        let Delivery::Thread { rx, .. } = &self.delivery else {
            return None;
        };
        let rx = rx.lock().take()?;
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("kubekit-handler-{}", self.id))
            .spawn(move || {
                while let Ok(Some(n)) = rx.recv() {
                    me.handle(n);
                }
            });
        match spawned {
            Ok(handle) => Some(handle),
            Err(e) => {
                tracing::error!(
                    listener = self.id,
                    "cannot start the event handler's thread: {e}"
                );
                None
            }
        }
    }
}

fn is_power_of_ten(mut n: usize) -> bool {
    while n >= 10 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

/// A handler's registration: its sync state and buffer, and the handle to remove it.
pub struct ResourceEventHandlerRegistration<K> {
    listener: Arc<Listener>,
    fifo: Arc<DeltaFifo<K>>,
}

impl<K> Clone for ResourceEventHandlerRegistration<K> {
    fn clone(&self) -> Self {
        Self {
            listener: self.listener.clone(),
            fifo: self.fifo.clone(),
        }
    }
}

impl<K> fmt::Debug for ResourceEventHandlerRegistration<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerRegistration")
            .field("id", &self.listener.id)
            .field("depth", &self.listener.depth.load(Ordering::Relaxed))
            .field("resync_period", &self.listener.resync_period)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> ResourceEventHandlerRegistration<K> {
    /// Whether the informer has synced and this handler has handled every object of the
    /// initial list (or, registered late, of the replay).
    pub fn has_synced(&self) -> bool {
        self.fifo.has_synced() && self.listener.initial_pending.load(Ordering::Acquire) == 0
    }

    /// Notifications buffered for this handler, not yet handled.
    pub fn depth(&self) -> usize {
        self.listener.depth.load(Ordering::Acquire)
    }

    /// The largest depth the buffer has reached.
    pub fn max_depth(&self) -> usize {
        self.listener.max_depth.load(Ordering::Acquire)
    }

    /// How many times the handler panicked.
    pub fn panics(&self) -> u64 {
        self.listener.panics.load(Ordering::Relaxed)
    }

    /// The handler's effective resync period (zero: none).
    pub fn resync_period(&self) -> Duration {
        self.listener.resync_period
    }

    /// Waits until the handler's initial adds are handled (not the informer's sync).
    pub async fn wait_initial_handled(&self) {
        loop {
            let notified = self.listener.synced.notified();
            if self.listener.initial_pending.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

struct Processor {
    listeners: Vec<Arc<Listener>>,
    /// Listeners due for the resync being processed.
    syncing: Vec<Arc<Listener>>,
    /// How often the reflector asks whether a resync is due: the shortest handler period
    /// asked for before start (or the default).
    resync_check_period: Duration,
    /// The period [`SharedIndexInformer::add_event_handler`] gives a handler: the one the
    /// informer was made with, never lowered by other handlers.
    default_resync: Duration,
    next_id: u64,
    tasks: Vec<JoinHandle<()>>,
    started: bool,
}

impl Processor {
    fn distribute(&self, n: Notification, sync: bool) {
        let targets = if sync { &self.syncing } else { &self.listeners };
        for l in targets {
            l.push(n.clone());
        }
    }

    /// Marks the listeners whose resync is due; true when there is at least one.
    fn should_resync(&mut self) -> bool {
        let now = Instant::now();
        self.syncing.clear();
        for l in &self.listeners {
            if l.resync_period.is_zero() {
                continue;
            }
            let mut next = l.next_resync.lock();
            if now >= *next {
                self.syncing.push(l.clone());
                // Keep to the handler's own schedule: computing it from `now` would let a
                // tick that fires a hair early skip a whole period.
                *next += l.resync_period;
                if *next <= now {
                    *next = now + l.resync_period;
                }
            }
        }
        !self.syncing.is_empty()
    }
}

struct Shared<K> {
    indexer: Arc<Indexer<K>>,
    fifo: Arc<DeltaFifo<K>>,
    processor: Mutex<Processor>,
}

impl<K: Resource + Send + Sync + 'static> Shared<K> {
    /// The informer's process function (client-go's `HandleDeltas`).
    fn handle_deltas(&self, deltas: &Deltas<K>) {
        let processor = self.processor.lock();
        for delta in &deltas.deltas {
            let obj = delta.object.object();
            match delta.kind {
                DeltaType::Deleted => {
                    self.indexer.delete(&deltas.key);
                    let object = erase_tombstone(delta.object.clone());
                    processor.distribute(Notification::Delete(object), false);
                }
                kind => match self.indexer.add_with_key(deltas.key.clone(), obj.clone()) {
                    Some(old) => {
                        let version = |o| super::meta_ref(o).resource_version();
                        let is_sync = kind == DeltaType::Sync
                            || (kind == DeltaType::Replaced
                                && version(&*old).is_some()
                                && version(&*old) == version(&**obj));
                        processor.distribute(Notification::Update(old, obj.clone()), is_sync);
                    }
                    None => processor.distribute(
                        Notification::Add(obj.clone(), deltas.is_in_initial_list),
                        false,
                    ),
                },
            }
        }
    }
}

/// A shared, indexed informer; see the [module docs](self).
pub struct SharedIndexInformer<K> {
    lw: Arc<dyn ListerWatcher<K>>,
    shared: Arc<Shared<K>>,
    /// The reflector's options, including the transform and the watch-error handler.
    options: Mutex<ReflectorOptions<K>>,
    reflector: Mutex<Option<Arc<Reflector<K>>>>,
}

impl<K: 'static> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("lister_watcher", &self.lw.describe())
            .field("indexer", &self.shared.indexer)
            .field("queue", &self.shared.fifo)
            .finish_non_exhaustive()
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// An informer over `lw` whose handlers resync every `default_resync` by default
    /// (zero: never). The cache has the namespace index.
    pub fn new(lw: Arc<dyn ListerWatcher<K>>, default_resync: Duration) -> Self {
        let indexer = Arc::new(Indexer::new());
        let fifo = Arc::new(DeltaFifo::new(Some(indexer.clone())));
        let name = lw.describe();
        Self {
            lw,
            shared: Arc::new(Shared {
                indexer,
                fifo,
                processor: Mutex::new(Processor {
                    listeners: Vec::new(),
                    syncing: Vec::new(),
                    resync_check_period: default_resync,
                    default_resync,
                    next_id: 0,
                    tasks: Vec::new(),
                    started: false,
                }),
            }),
            options: Mutex::new(ReflectorOptions {
                name,
                ..Default::default()
            }),
            reflector: Mutex::new(None),
        }
    }

    /// The cache. Read it freely; write it only if you know the informer will not.
    pub fn indexer(&self) -> &Arc<Indexer<K>> {
        &self.shared.indexer
    }

    /// Adds named indexes (existing objects are indexed at once).
    pub fn add_indexers(
        &self,
        indexers: impl IntoIterator<Item = (String, IndexFunc<K>)>,
    ) -> Result<(), StoreError> {
        self.shared.indexer.add_indexers(indexers)
    }

    /// Sets the function applied to each object before it is stored (e.g. to drop
    /// `managedFields`). Has no effect once the informer runs.
    pub fn set_transform(&self, transform: impl Fn(K) -> K + Send + Sync + 'static) {
        self.options.lock().transform = Some(Arc::new(transform));
    }

    /// Sets the function called with every list or watch failure. Has no effect once the
    /// informer runs.
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&kubekit_client::rest::Error) + Send + Sync + 'static,
    ) {
        self.options.lock().watch_error_handler = Some(Arc::new(handler));
    }

    /// Caches only the objects of one shard (see [`ShardSelector`](super::ShardSelector)
    /// and the reflector's **Shard** rules), whether or not the server applies the
    /// selector. Has no effect once the informer runs.
    pub fn set_shard(&self, shard: super::ShardSelector) {
        self.options.lock().shard = Some(shard);
    }

    /// The control of this informer's shard, made on the first call with the shard set by
    /// [`set_shard`](Self::set_shard) (or everything) as its target; give it a target
    /// before [`run`](Self::run) to start with that, and change it while running to make
    /// the informer relist with the new one (see [`ShardControl`](super::ShardControl)).
    pub fn shard_control(&self) -> super::ShardControl {
        let mut options = self.options.lock();
        let initial = match &options.shard {
            Some(selector) => super::ShardTarget::Shard(selector.clone()),
            None => super::ShardTarget::Everything,
        };
        options
            .shard_control
            .get_or_insert_with(|| super::ShardControl::new(initial))
            .clone()
    }

    /// Ready once this informer's cache reflects `generation` of its
    /// [`shard_control`](Self::shard_control): the reflector relisted with that target (or
    /// a later one) and the informer processed the relist (its indexer holds the objects,
    /// its handlers were called).
    pub fn shard_synced(&self, generation: u64) -> impl Future<Output = ()> + Send + 'static {
        let control = self.shard_control();
        let shared = self.shared.clone();
        async move {
            control.listed(generation).await;
            shared.fifo.wait_replaces_processed().await;
        }
    }

    /// Adjusts the reflector's options (page size, watch timeout, streaming list, backoff).
    /// Has no effect once the informer runs.
    pub fn configure_reflector(&self, f: impl FnOnce(&mut ReflectorOptions<K>)) {
        f(&mut self.options.lock());
    }

    /// Whether the first list has been stored.
    pub fn has_synced(&self) -> bool {
        self.shared.fifo.has_synced()
    }

    /// Waits until [`has_synced`](Self::has_synced); false if `cancel` fired first.
    pub fn wait_for_sync<'a>(
        &self,
        cancel: &'a CancellationToken,
    ) -> impl Future<Output = bool> + Send + 'a {
        wait_for_sync(self.shared.fifo.wait_synced(), cancel)
    }

    /// Whether the server serves the informer's resource ([`Reflector::is_served`]): false
    /// while its CRD is deleted or not installed yet, the informer then waiting for it
    /// (true before start).
    pub fn is_served(&self) -> bool {
        self.reflector.lock().as_ref().is_none_or(|r| r.is_served())
    }

    /// The resourceVersion the reflector last saw (empty before start).
    pub fn last_sync_resource_version(&self) -> String {
        self.reflector
            .lock()
            .as_ref()
            .map(|r| r.last_sync_resource_version())
            .unwrap_or_default()
    }

    /// Adds a handler with the informer's default resync period, the one it was made with
    /// (client-go's `defaultEventHandlerResyncPeriod`), whatever shorter periods other
    /// handlers asked for.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> ResourceEventHandlerRegistration<K> {
        let period = self.shared.processor.lock().default_resync;
        self.add_event_handler_with_resync_period(handler, period)
    }

    /// Adds a handler with its own resync period (zero: none; at least
    /// [`MINIMUM_RESYNC_PERIOD`]). Added after start, it is first sent every cached object.
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl ResourceEventHandler<K>,
        resync_period: Duration,
    ) -> ResourceEventHandlerRegistration<K> {
        let mut processor = self.shared.processor.lock();
        let mut period = resync_period;
        if !period.is_zero() {
            if period < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(
                    "resync period {period:?} is too small; using {MINIMUM_RESYNC_PERIOD:?}"
                );
                period = MINIMUM_RESYNC_PERIOD;
            }
            if period < processor.resync_check_period || processor.resync_check_period.is_zero() {
                if processor.started {
                    if processor.resync_check_period.is_zero() {
                        tracing::warn!(
                            "resync period {period:?} asked of a running informer that does not resync; the handler gets none"
                        );
                        period = Duration::ZERO;
                    } else {
                        tracing::warn!(
                            "resync period {period:?} is below the running informer's check period {:?}; using that",
                            processor.resync_check_period
                        );
                        period = processor.resync_check_period;
                    }
                } else {
                    processor.resync_check_period = period;
                }
            }
        }
        let delivery = if handler.may_block() {
            let (tx, rx) = mpsc::channel();
            Delivery::Thread {
                tx,
                rx: Mutex::new(Some(rx)),
            }
        } else {
            Delivery::Inline
        };
        processor.next_id += 1;
        let listener = Arc::new(Listener {
            id: processor.next_id,
            delivery,
            handler: Box::new(Typed(Box::new(handler))),
            depth: AtomicUsize::new(0),
            max_depth: AtomicUsize::new(0),
            initial_pending: AtomicUsize::new(0),
            panics: AtomicU64::new(0),
            removed: AtomicBool::new(false),
            synced: Notify::new(),
            resync_period: period,
            next_resync: Mutex::new(Instant::now() + period),
        });
        if processor.started {
            // Holding the processor lock keeps new deltas out until the replay is queued.
            for obj in self.shared.indexer.list() {
                listener.push(Notification::Add(obj, true));
            }
            if let Some(task) = listener.spawn() {
                processor.tasks.push(task);
            }
        }
        processor.listeners.push(listener.clone());
        ResourceEventHandlerRegistration {
            listener,
            fifo: self.shared.fifo.clone(),
        }
    }

    /// Removes a handler: it receives nothing more, including what is still buffered.
    pub fn remove_event_handler(&self, registration: &ResourceEventHandlerRegistration<K>) {
        let mut processor = self.shared.processor.lock();
        registration.listener.stop();
        let id = registration.listener.id;
        processor.listeners.retain(|l| l.id != id);
        processor.syncing.retain(|l| l.id != id);
    }

    /// Runs the informer until `cancel` fires, then stops every task it started. Calling
    /// it a second time returns at once.
    pub fn run(&self, cancel: CancellationToken) -> impl Future<Output = ()> + Send + '_ {
        run_informer(self, cancel)
    }
}

/// What running an informer takes, whatever its type.
trait Run: Send + Sync {
    /// Marks the informer started and starts its handlers' threads; its process loop, or
    /// `None` when it was started already.
    fn start(&self) -> Option<ErasedProcessLoop>;
    /// Stops the handlers: their threads, to wait for.
    fn stop(&self) -> Vec<JoinHandle<()>>;
}

impl<K> Run for SharedIndexInformer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn start(&self) -> Option<ErasedProcessLoop> {
        let resync = {
            let mut processor = self.shared.processor.lock();
            if processor.started {
                tracing::warn!("informer of {} is already running", self.lw.describe());
                return None;
            }
            processor.started = true;
            let listeners = processor.listeners.clone();
            for l in listeners {
                if let Some(task) = l.spawn() {
                    processor.tasks.push(task);
                }
            }
            processor.resync_check_period
        };
        let mut config = {
            let reflector = self.options.lock().clone();
            let shared = self.shared.clone();
            let metrics = reflector.metrics.as_ref().map(|m| m.bind(&reflector.name));
            let mut config = ProcessLoopConfig::new(
                self.shared.fifo.clone(),
                self.lw.clone(),
                Arc::new(move |deltas: &Deltas<K>| {
                    shared.handle_deltas(deltas);
                    if let Some(metrics) = &metrics {
                        metrics.objects(shared.indexer.len());
                    }
                    Ok(())
                }),
            );
            config.reflector = reflector;
            config
        };
        config.full_resync_period = resync;
        let shared = self.shared.clone();
        config.should_resync = Some(Arc::new(move || shared.processor.lock().should_resync()));
        let process_loop = ProcessLoop::new(config);
        *self.reflector.lock() = Some(process_loop.reflector().clone());
        Some(process_loop.erased())
    }

    fn stop(&self) -> Vec<JoinHandle<()>> {
        let mut processor = self.shared.processor.lock();
        for l in &processor.listeners {
            l.stop();
        }
        processor.listeners.clear();
        processor.syncing.clear();
        std::mem::take(&mut processor.tasks)
    }
}

/// [`SharedIndexInformer::wait_for_sync`], compiled once for every type.
async fn wait_for_sync(
    synced: impl Future<Output = ()> + Send,
    cancel: &CancellationToken,
) -> bool {
    tokio::select! {
        () = synced => true,
        _ = cancel.cancelled() => false,
    }
}

/// [`SharedIndexInformer::run`], compiled once for every type.
async fn run_informer(informer: &dyn Run, cancel: CancellationToken) {
    let Some(process_loop) = informer.start() else {
        return;
    };
    process_loop.run(cancel).await;
    join_handler_threads(informer.stop()).await;
}

/// Waits for the handler threads of a stopped informer: a handler busy in a call is waited
/// for (its thread cannot be interrupted). Not generic, so compiled once.
async fn join_handler_threads(tasks: Vec<JoinHandle<()>>) {
    let joined = tokio::task::spawn_blocking(move || {
        for task in tasks {
            if task.join().is_err() {
                tracing::error!("an event handler thread failed");
            }
        }
    })
    .await;
    if let Err(e) = joined {
        tracing::error!("joining the event handler threads: {e}");
    }
}

impl<K> Drop for SharedIndexInformer<K> {
    /// Stops the handler threads of an informer dropped without finishing `run`.
    fn drop(&mut self) {
        for l in &self.shared.processor.lock().listeners {
            l.stop();
        }
    }
}

#[cfg(test)]
mod tests;
