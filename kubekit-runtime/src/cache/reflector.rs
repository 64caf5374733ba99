//! [`Reflector`]: keeps a store in step with the server by listing, then watching, one
//! resource (client-go's `Reflector`).
//!
//! # Contract
//!
//! - **List.** The first list asks for resourceVersion `"0"` (any recent state, served from
//!   the API server's cache) in pages of [`ReflectorOptions::page_size`]; later lists ask
//!   for the last version the reflector saw, and for `""` (the latest state, from etcd)
//!   once the server has said that version is too old. An expired `continue` token
//!   restarts the list from `""`. The listed objects replace the store's content page by
//!   page ([`ReflectorStore::replace_part`]); the end of the list deletes what it lacked
//!   ([`ReflectorStore::replace_end`]).
//! - **Watch.** From the list's resourceVersion, with bookmarks, and a server-side timeout
//!   drawn at random between [`ReflectorOptions::min_watch_timeout`] and twice that, so
//!   that many reflectors do not reconnect at once. A watch the server closes is reopened
//!   at once from the last version seen (an event's or a bookmark's) — unless it lasted
//!   under a second without a single event (client-go's "very short watch"): that is
//!   reported and backed off like a connection error, so a server answering every watch
//!   with an empty body costs a request per backoff, not a busy loop.
//! - **410 Gone / Expired** (at watch start or as an `ERROR` event): relist. Any other
//!   `ERROR` event: relist. A list or watch failure is reported to the watch-error handler.
//!   A list refused as too old is retried at once from `""` (the latest state), once; any
//!   further refusal is reported and the list retried after the backoff, so a server
//!   answering every list with 410 is asked once per backoff period.
//! - **A list never answered** fails at the client's request timeout
//!   ([`rest::DEFAULT_TIMEOUT`](kubekit_client::rest::DEFAULT_TIMEOUT), 60 s, unless configured),
//!   is reported and retried after the backoff.
//! - **Connection errors** (transport errors, timeouts, 429, 5xx) at watch start or in the
//!   middle of a watch: re-watch from the last version, without relisting, after a backoff
//!   of 800 ms doubling to 30 s with up to 100 % jitter, reset after 2 minutes without
//!   failure. Every return from list-and-watch also waits that backoff, as client-go does.
//!   A wait of 5 s or more is logged when it begins.
//! - **A resource the server does not serve** (a list or watch answered 404 Not Found:
//!   the CRD of a custom resource was deleted, or is not installed yet): reported once, the
//!   store emptied if it was listed (the server has no such objects; handlers see each
//!   cached one deleted; a store never listed stays unsynced), and then no more watching,
//!   backoff or error reports: a list is tried every [`NOT_SERVED_PROBE`] (2 s) until one
//!   succeeds, which is logged, and list-and-watch carries on from it (an informer whose
//!   CRD is installed later syncs within that period). [`Reflector::is_served`] tells which
//!   state it is in.
//! - **A silent watch** — nothing received for longer than the watch's own timeout plus
//!   [`ReflectorOptions::silence_grace`] — is a dead connection: it is dropped and
//!   re-established like a connection error.
//! - **Streaming list** ([`ReflectorOptions::use_streaming_list`]): instead of a list, a
//!   watch with `sendInitialEvents=true`; the initial objects replace the store's content
//!   in parts of 64 as they arrive, the bookmark annotated `k8s.io/initial-events-end`
//!   ends the relist, and the same watch goes on. A server that refuses it gets a plain
//!   list from then on.
//! - **Shard** ([`ReflectorOptions::shard`]). Every list and watch carries the
//!   [`ShardSelector`] (`shardSelector`), and only the objects it selects reach the store,
//!   whatever the server did with it: a server with the `ShardedListAndWatch` feature
//!   filters and echoes the selector in the list's `metadata.shardInfo`; one without it
//!   ignores the parameter and sends everything, and the reflector then drops the objects
//!   outside the shard itself (list items and watch events alike; a watch event for an
//!   object outside the shard that the store holds — which cannot happen for a uid or a
//!   namespace, both immutable, but does when a child changes controller — deletes it).
//!   A selector by [`ShardKey::ControllerUid`](super::ShardKey::ControllerUid), which the
//!   server cannot apply, is not sent: the reflector filters alone. Which of the two happened is logged when it
//!   changes (the first list included) and set in `reflector_shard_server_filtered`;
//!   objects dropped are counted in `reflector_shard_dropped_objects_total`
//!   ([`ReflectorMetrics`]). A streaming list says nothing of the selector (its initial
//!   events end with a bookmark without `shardInfo`), so beside each one (at the same
//!   time, not delaying it) a sharded reflector lists a single object (`limit=1`, the
//!   latest state) to learn it. A
//!   metadata-only list (`PartialObjectMetadataList`) never echoes the selector, though
//!   the server applies it: a metadata informer reports 0 and drops nothing.
//! - **Resync.** Every [`ReflectorOptions::resync_period`] (when non-zero) while watching,
//!   the store's [`resync`](ReflectorStore::resync) is called if `should_resync` agrees.
//! - **Memory.** The transform runs on each object as soon as it is decoded, before it is
//!   kept. While the store holds [`WATCH_BACKLOG_LIMIT`] changes its consumer has not
//!   taken, no further watch event is read (the time spent waiting is not silence). A
//!   relisted object whose resourceVersion equals the one the store already holds is
//!   replaced by the store's own `Arc`, and a relist reaches the store in parts, waiting
//!   for room like the watch: a relist holds the pages in flight (the one decoding and
//!   the next one arriving) plus the objects that changed, never a second copy of the
//!   cache.
//! - A malformed object in a list or watch is reported to the watch-error handler and
//!   skipped; an object without a name is logged and skipped. A transform that panics on
//!   an object is reported ([`Error::Panic`]) and the object skipped the same way (a
//!   deletion too: the cached object stays until the next relist that lacks it).
//! - **A reflector that panics** (a lister-watcher's code, say) is reported and restarted
//!   after the backoff by [`Reflector::run_restarting`], which controllers and informers
//!   run: its cache is never left silently stale.
//! - Every error reported to the watch-error handler is also counted in
//!   `reflector_errors_total` ([`ReflectorMetrics`]).
//! - [`Reflector::run`] returns when its cancellation token fires; it holds no lock across
//!   `.await`.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::Resource;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::key::{KeyError, key_of};
use super::listwatch::ListerWatcher;
use super::metrics::{BoundMetrics, ReflectorMetrics};
use super::object::{AnyObject, Object};
use super::shard::{ShardControl, ShardFilter, ShardSelector, ShardWarnings};
use erased::{ErasedListerWatcher, ErasedStore, erase_options};
use kubekit_client::clientset::{ListOptions, ResourceVersionMatch, WatchStream};
use kubekit_client::rest::{Error, WatchEvent};
use shard::shard_filter;

/// Where a reflector puts what it sees: client-go's `Store` as the reflector uses it.
/// Implemented by [`DeltaFifo`](super::DeltaFifo).
pub trait ReflectorStore<K: ?Sized>: Send + Sync + 'static {
    /// An object was added.
    fn add(&self, obj: Arc<K>) -> Result<(), KeyError>;
    /// An object changed.
    fn update(&self, obj: Arc<K>) -> Result<(), KeyError>;
    /// An object was deleted.
    fn delete(&self, obj: Arc<K>) -> Result<(), KeyError>;
    /// A (re)list begins; it arrives in parts (pages, or the initial events of a streaming
    /// list). A relist begun before and not ended is abandoned.
    fn replace_begin(&self);
    /// Objects of the relist: they replace what the store holds under their keys at once.
    fn replace_part(&self, part: Vec<Arc<K>>) -> Vec<KeyError>;
    /// A key listed earlier in this relist is gone again: the end of the relist deletes it.
    fn replace_forget(&self, key: &str);
    /// The relist is complete: every key it did not list is deleted.
    fn replace_end(&self);
    /// Periodic resync.
    fn resync(&self);
    /// The object the store's consumer holds under `key`, if any (used to share unchanged
    /// objects on relist).
    fn known(&self, key: &str) -> Option<Arc<K>>;
    /// Whether the store holds [`WATCH_BACKLOG_LIMIT`] or more changes its consumer has
    /// not taken yet: then the reflector reads no further watch event until
    /// [`wait_for_room`](Self::wait_for_room) resolves. The default has no limit.
    fn is_full(&self) -> bool {
        false
    }
    /// Resolves once the consumer has taken the backlog down to half the limit.
    fn wait_for_room(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// Changes a [`DeltaFifo`](super::DeltaFifo) may hold before its reflector stops reading
/// the watch: an informer whose consumer falls behind a burst of events holds the stream
/// back (TCP flow control holds the server's) instead of decoding every pending event into
/// a queued object, so a burst costs at most this many objects of memory.
pub const WATCH_BACKLOG_LIMIT: usize = 1024;

/// Objects of a streaming list's initial events handed to the store together.
const STREAMED_PART: usize = 64;

/// A function applied to every object before it is stored.
pub type TransformFunc<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// The transform most informers want (controller-runtime's
/// `TransformStripManagedFields`): drops `metadata.managedFields`, the server-side-apply
/// bookkeeping that few controllers read and that is often the largest part of an object
/// (half of a typical Pod's memory once decoded). The informer factory's informers drop
/// them by default (before decoding, where the server sends protobuf); for an informer
/// built by hand: `informer.set_transform(strip_managed_fields)`.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kubekit::cache::strip_managed_fields;
///
/// let mut pod = Pod::default();
/// pod.metadata.managed_fields = Some(vec![Default::default()]);
/// assert!(strip_managed_fields(pod).metadata.managed_fields.is_none());
/// ```
pub fn strip_managed_fields<K: Resource + 'static>(mut obj: K) -> K {
    if super::meta_ref(&obj).has_managed_fields() {
        obj.meta_mut().managed_fields = None;
    }
    obj
}

/// Called with every list or watch failure.
pub type WatchErrorHandler = Arc<dyn Fn(&Error) + Send + Sync>;

/// Decides, at each resync tick, whether to resync.
pub type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;

/// The default watch-error handler: a log line.
pub fn default_watch_error_handler(name: &str) -> WatchErrorHandler {
    let name = name.to_string();
    Arc::new(move |e: &Error| {
        if e.is_gone() || e.is_resource_expired() {
            tracing::info!(reflector = %name, "watch closed: {e}");
        } else {
            tracing::warn!(reflector = %name, "list/watch failed: {e}");
        }
    })
}

/// Backoff of the reflector: `initial` doubling to `max`, up to 100 % jitter, back to
/// `initial` after `reset_after` without a failure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffPolicy {
    /// First delay.
    pub initial: Duration,
    /// Largest delay before jitter.
    pub max: Duration,
    /// Quiet time after which the delay starts again from `initial`.
    pub reset_after: Duration,
    /// Extra random delay, as a fraction of the delay (1.0: up to double).
    pub jitter: f64,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
            jitter: 1.0,
        }
    }
}

/// The state of a [`BackoffPolicy`].
#[derive(Debug)]
pub(crate) struct Backoff {
    policy: BackoffPolicy,
    current: Option<Duration>,
    last: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(policy: BackoffPolicy) -> Self {
        Self {
            policy,
            current: None,
            last: None,
        }
    }

    /// The base (unjittered) delay of the next wait, advancing the state.
    fn next_base(&mut self) -> Duration {
        let now = Instant::now();
        let quiet = self
            .last
            .is_none_or(|last| now.duration_since(last) >= self.policy.reset_after);
        let base = match self.current {
            Some(d) if !quiet => (d * 2).min(self.policy.max),
            _ => self.policy.initial,
        };
        self.current = Some(base);
        self.last = Some(now);
        base
    }

    /// The next delay, jittered.
    pub(crate) fn next(&mut self) -> Duration {
        let base = self.next_base();
        kubekit_client::retry::jitter(base, self.policy.jitter)
    }

    /// Waits the next delay, or until `cancel` fires (returns false then). A wait of 5 s
    /// or more is logged when it begins, naming reflector `name`.
    pub(crate) async fn wait(&mut self, cancel: &CancellationToken, name: &str) -> bool {
        let delay = self.next();
        if delay >= Duration::from_secs(5) {
            tracing::info!(reflector = %name, "backing off: next attempt in {delay:.1?}");
        }
        tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(delay) => true,
        }
    }
}

/// Options of a [`Reflector`]; the defaults are client-go's.
#[derive(Clone)]
pub struct ReflectorOptions<K> {
    /// Name for logs.
    pub name: String,
    /// Page size of lists (0: unpaged).
    pub page_size: u32,
    /// Shortest server-side watch timeout; the actual one is random, up to twice this.
    pub min_watch_timeout: Duration,
    /// How long past the watch timeout a silent watch is kept before it is taken for dead.
    pub silence_grace: Duration,
    /// Resync interval (zero: never).
    pub resync_period: Duration,
    /// Consulted at each resync tick; resync happens only if it returns true.
    pub should_resync: Option<ShouldResync>,
    /// List with a streaming watch (`sendInitialEvents`) instead of a list.
    pub use_streaming_list: bool,
    /// Drop `metadata.managedFields` from each object before the transform (the
    /// informer factory's default; see [`strip_managed_fields`]).
    pub drop_managed_fields: bool,
    /// Applied to each object before it is stored.
    pub transform: Option<TransformFunc<K>>,
    /// Called with every list or watch failure.
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Backoff between failed attempts.
    pub backoff: BackoffPolicy,
    /// Where lists, watches and events are counted, under `name`.
    pub metrics: Option<ReflectorMetrics>,
    /// Only the objects of this shard: see the module docs (**Shard**).
    pub shard: Option<ShardSelector>,
    /// A shard that changes while the reflector runs (it takes precedence over
    /// [`shard`](Self::shard)): see the module docs (**Resharding**).
    pub shard_control: Option<ShardControl>,
}

impl<K> fmt::Debug for ReflectorOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorOptions")
            .field("name", &self.name)
            .field("page_size", &self.page_size)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("silence_grace", &self.silence_grace)
            .field("resync_period", &self.resync_period)
            .field("use_streaming_list", &self.use_streaming_list)
            .field("drop_managed_fields", &self.drop_managed_fields)
            .field("transform", &self.transform.is_some())
            .field("backoff", &self.backoff)
            .field("metrics", &self.metrics.is_some())
            .field("shard", &self.shard.as_ref().map(ToString::to_string))
            .field("shard_control", &self.shard_control)
            .finish_non_exhaustive()
    }
}

impl<K> Default for ReflectorOptions<K> {
    fn default() -> Self {
        Self {
            name: "reflector".into(),
            page_size: 500,
            min_watch_timeout: Duration::from_secs(300),
            silence_grace: Duration::from_secs(30),
            resync_period: Duration::ZERO,
            should_resync: None,
            use_streaming_list: false,
            drop_managed_fields: false,
            transform: None,
            watch_error_handler: None,
            backoff: BackoffPolicy::default(),
            metrics: None,
            shard: None,
            shard_control: None,
        }
    }
}

/// A watch the server closes sooner than this without sending any event is a failure
/// (client-go's "very short watch"), backed off like one.
pub const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// What reading a watch gave.
enum Next {
    /// The cancellation token fired.
    Cancelled,
    /// The server closed the watch.
    Closed,
    /// An event (an `ERROR` event included).
    Event(WatchEvent<Object>),
    /// The connection failed or went silent.
    Failed(Error),
}

/// How a watch ended.
enum WatchEnd {
    /// The cancellation token fired.
    Cancelled,
    /// The server closed it: re-watch at once.
    Closed,
    /// A connection problem (or silence): re-watch after a backoff.
    Connection(Error),
    /// Relist (410 Gone, expired, or another error event).
    Relist(Error),
}

#[derive(Default)]
struct VersionState {
    last_sync: String,
    /// The server said `last_sync` is too old to list at.
    unavailable: bool,
}

/// Lists and watches one resource into a store; see the [module docs](self).
///
/// Whatever `K` is, the work is done by one type-erased core compiled once: a program
/// with informers of many types compiles the reflector once, not once per type.
pub struct Reflector<K> {
    core: Arc<Core>,
    _type: PhantomData<fn() -> K>,
}

impl<K: 'static> fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.core.fmt(f)
    }
}

impl<K> Reflector<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// A reflector from `lw` into `store`.
    pub fn new(
        lw: Arc<dyn ListerWatcher<K>>,
        store: Arc<dyn ReflectorStore<K>>,
        opts: ReflectorOptions<K>,
    ) -> Self {
        Self::into_erased_store(lw, Arc::new(ErasedStore(store)), opts)
    }

    /// A reflector from `lw` into a store that takes objects of any type (a
    /// [`DeltaFifo::erased_store`](super::DeltaFifo::erased_store)).
    pub(crate) fn into_erased_store(
        lw: Arc<dyn ListerWatcher<K>>,
        store: Arc<dyn ReflectorStore<dyn AnyObject>>,
        opts: ReflectorOptions<K>,
    ) -> Self {
        Self {
            core: Arc::new(Core::new(
                Arc::new(ErasedListerWatcher(lw)),
                store,
                erase_options(opts),
            )),
            _type: PhantomData,
        }
    }

    /// Whether the server serves the resource: false from a list or watch answered 404 Not
    /// Found (its CRD deleted, or not installed yet) to the next list that succeeds.
    pub fn is_served(&self) -> bool {
        self.core.served.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The resourceVersion of the last list, event or bookmark applied to the store (empty
    /// before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.core.version.lock().last_sync.clone()
    }

    /// [`run`](Self::run), restarted after the backoff each time it panics (reported as an
    /// [`Error::Panic`]), until `cancel` fires. Controllers and informers run this.
    pub fn run_restarting(&self, cancel: CancellationToken) -> impl Future<Output = ()> + Send {
        self.core.run_restarting(cancel)
    }

    /// Lists and watches until `cancel` fires.
    pub fn run(&self, cancel: CancellationToken) -> impl Future<Output = ()> + Send {
        self.core.run(cancel)
    }

    /// What starts this reflector, without its type.
    pub(crate) fn runner(&self) -> ReflectorRunner {
        ReflectorRunner(self.core.clone())
    }
}

/// Starts a reflector of any type.
pub(crate) struct ReflectorRunner(Arc<Core>);

impl ReflectorRunner {
    /// Runs [`Reflector::run_restarting`] on a task of its own.
    pub(crate) fn spawn_restarting(&self, cancel: CancellationToken) -> JoinHandle<()> {
        let core = self.0.clone();
        kubekit_client::spawn::spawn(async move { core.run_restarting(cancel).await })
    }
}

/// How often a reflector whose resource the server does not serve tries to list it again.
pub const NOT_SERVED_PROBE: Duration = Duration::from_secs(2);

/// The reflector of every type.
struct Core {
    lw: Arc<dyn ListerWatcher<Object>>,
    store: Arc<dyn ReflectorStore<dyn AnyObject>>,
    opts: ReflectorOptions<Object>,
    error_handler: WatchErrorHandler,
    version: Mutex<VersionState>,
    streaming: std::sync::atomic::AtomicBool,
    metrics: Option<BoundMetrics>,
    /// The shard, and what the server does with its selector (replaced on a reshard).
    shard: Mutex<Option<Arc<ShardFilter>>>,
    /// The warnings its shard filters gave, each given once for the reflector's life.
    shard_warnings: Arc<ShardWarnings>,
    /// Whether a list completed once (the next ones are relists).
    listed: std::sync::atomic::AtomicBool,
    /// False from a 404 Not Found of its resource to the next list that succeeds.
    served: std::sync::atomic::AtomicBool,
}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("lister_watcher", &self.lw.describe())
            .field("options", &self.opts)
            .field("last_sync_resource_version", &self.version.lock().last_sync)
            .finish_non_exhaustive()
    }
}

fn resource_version(obj: &Object) -> Option<&str> {
    obj.meta().resource_version()
}

impl Core {
    fn new(
        lw: Arc<dyn ListerWatcher<Object>>,
        store: Arc<dyn ReflectorStore<dyn AnyObject>>,
        opts: ReflectorOptions<Object>,
    ) -> Self {
        let error_handler = opts
            .watch_error_handler
            .clone()
            .unwrap_or_else(|| default_watch_error_handler(&opts.name));
        let streaming = std::sync::atomic::AtomicBool::new(opts.use_streaming_list);
        let metrics = opts.metrics.as_ref().map(|m| m.bind(&opts.name));
        let shard_warnings = Arc::new(ShardWarnings::default());
        let shard = opts
            .shard
            .clone()
            .map(|s| shard_filter(&opts, s, &shard_warnings));
        let shard = Mutex::new(shard);
        Self {
            lw,
            store,
            opts,
            error_handler,
            version: Mutex::new(VersionState::default()),
            streaming,
            metrics,
            shard,
            shard_warnings,
            listed: std::sync::atomic::AtomicBool::new(false),
            served: std::sync::atomic::AtomicBool::new(true),
        }
    }

    fn set_version(&self, rv: &str) {
        if !rv.is_empty() {
            let mut v = self.version.lock();
            v.last_sync.clear();
            v.last_sync.push_str(rv);
            if let Some(m) = &self.metrics {
                m.advanced();
            }
        }
    }

    /// Counts a complete list (streaming or not).
    fn count_list(&self) {
        let relist = self.listed.swap(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(m) = &self.metrics {
            m.listed(relist);
        }
    }

    fn count_watch(&self) {
        if let Some(m) = &self.metrics {
            m.watch_opened();
        }
    }

    /// The resourceVersion to relist at: "0" first, the last one seen later, "" once the
    /// server said it is too old.
    fn relist_resource_version(&self) -> String {
        let v = self.version.lock();
        if v.unavailable {
            String::new()
        } else if v.last_sync.is_empty() {
            "0".into()
        } else {
            v.last_sync.clone()
        }
    }

    /// Reports `e` to the watch-error handler and counts it.
    fn report(&self, e: &Error) {
        if let Some(m) = &self.metrics {
            m.error(e);
        }
        (self.error_handler)(e);
    }

    async fn run_restarting(&self, cancel: CancellationToken) {
        let mut backoff = Backoff::new(self.opts.backoff);
        loop {
            let run = std::panic::AssertUnwindSafe(self.run(cancel.clone())).catch_unwind();
            let Err(panic) = run.await else {
                return;
            };
            self.report(&Error::Panic {
                what: format!("the reflector of {}", self.lw.describe()),
                message: kubekit_client::panic::message(panic.as_ref()).to_string(),
            });
            tracing::error!(reflector = %self.opts.name, "reflector panicked; restarting it after the backoff");
            if !backoff.wait(&cancel, &self.opts.name).await {
                return;
            }
        }
    }

    async fn run(&self, cancel: CancellationToken) {
        tracing::debug!(reflector = %self.opts.name, "starting on {}", self.lw.describe());
        let mut backoff = Backoff::new(self.opts.backoff);
        loop {
            match self.list_and_watch(&cancel, &mut backoff).await {
                Err(e) if e.is_not_found() => {
                    self.not_served(&e);
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        () = tokio::time::sleep(NOT_SERVED_PROBE) => continue,
                    }
                }
                Err(e) => self.report(&e),
                Ok(()) => {}
            }
            if cancel.is_cancelled() || !backoff.wait(&cancel, &self.opts.name).await {
                tracing::debug!(reflector = %self.opts.name, "stopped");
                return;
            }
        }
    }

    /// The server answered 404 Not Found for the resource: reported and the store emptied
    /// the first time, quiet after that.
    fn not_served(&self, e: &Error) {
        use std::sync::atomic::Ordering;
        if !self.served.swap(false, Ordering::AcqRel) {
            tracing::debug!(reflector = %self.opts.name, "still not served: {e}");
            return;
        }
        self.report(e);
        tracing::warn!(
            reflector = %self.opts.name,
            "the server does not serve {} (its CRD deleted, or not installed yet): cache emptied; listing again every {NOT_SERVED_PROBE:?} until it does",
            self.lw.describe()
        );
        // Never listed: nothing cached, and not synced until the resource is served.
        if self.listed.load(Ordering::Acquire) {
            self.store.replace_begin();
            self.store.replace_end();
        }
    }

    /// A list succeeded: logs that the resource is served again, if it was not.
    fn served_again(&self) {
        if !self.served.swap(true, std::sync::atomic::Ordering::AcqRel) {
            tracing::info!(reflector = %self.opts.name, "{} is served again", self.lw.describe());
        }
    }

    /// One list followed by watches until a relist is needed (`Err`) or `cancel` fires;
    /// with a shard control, relists at once whenever its target changes.
    async fn list_and_watch(
        &self,
        cancel: &CancellationToken,
        backoff: &mut Backoff,
    ) -> Result<(), Error> {
        let Some(control) = self.opts.shard_control.clone() else {
            return self.list_and_watch_once(cancel, backoff, None).await;
        };
        loop {
            let (generation, nothing) = self.adopt_target(&control);
            if nothing {
                // A relist of nothing: the store lets go of everything it held.
                self.store.replace_begin();
                self.store.replace_end();
                control.mark_listed(generation);
                tracing::debug!(reflector = %self.opts.name, generation, "shard target: nothing");
                tokio::select! {
                    _ = cancel.cancelled() => return Ok(()),
                    () = control.changed_after(generation) => continue,
                }
            }
            tracing::debug!(reflector = %self.opts.name, generation, selector = ?self.shard_selector(), "listing for the shard target");
            let run = self.list_and_watch_once(cancel, backoff, Some((&control, generation)));
            tokio::select! {
                r = run => return r,
                () = control.changed_after(generation) => {
                    tracing::info!(reflector = %self.opts.name, "the shard target changed: relisting");
                }
            }
        }
    }

    /// One list followed by watches until a relist is needed (`Err`) or `cancel` fires;
    /// the list done, marks `generation` listed on its control.
    async fn list_and_watch_once(
        &self,
        cancel: &CancellationToken,
        backoff: &mut Backoff,
        generation: Option<(&ShardControl, u64)>,
    ) -> Result<(), Error> {
        let mut pending = None;
        if self.streaming.load(std::sync::atomic::Ordering::Relaxed) {
            match self.streaming_list(cancel).await {
                Ok(Some(stream)) => pending = Some(stream),
                Ok(None) => return Ok(()),
                Err(e) if e.is_invalid() => {
                    tracing::info!(reflector = %self.opts.name, "streaming list refused ({e}); listing instead");
                    self.streaming
                        .store(false, std::sync::atomic::Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
        }
        if pending.is_none() {
            tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                r = self.list() => r?,
            }
        }
        self.served_again();
        if let Some((control, generation)) = generation {
            control.mark_listed(generation);
        }
        tokio::select! {
            r = self.watch_loop(cancel, backoff, pending) => r,
            _ = self.resync_loop() => Ok(()),
        }
    }

    async fn resync_loop(&self) {
        if self.opts.resync_period.is_zero() {
            return std::future::pending().await;
        }
        let mut tick = tokio::time::interval_at(
            Instant::now() + self.opts.resync_period,
            self.opts.resync_period,
        );
        loop {
            tick.tick().await;
            if self.opts.should_resync.as_ref().is_none_or(|f| f()) {
                self.store.resync();
            }
        }
    }

    /// The object transformed; `None` (reported) when the transform panicked on it.
    fn transform(&self, mut obj: Object) -> Option<Object> {
        if self.opts.drop_managed_fields
            && obj.meta().has_managed_fields()
            && let Some(unshared) = Arc::get_mut(&mut obj)
        {
            unshared.drop_managed_fields();
        }
        let Some(t) = &self.opts.transform else {
            return Some(obj);
        };
        let key = key_of(obj.meta()).unwrap_or_default();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t(obj))) {
            Ok(obj) => Some(obj),
            Err(panic) => {
                self.report(&Error::Panic {
                    what: format!(
                        "the transform of {} on {key:?} (the object is skipped)",
                        self.opts.name
                    ),
                    message: kubekit_client::panic::message(panic.as_ref()).to_string(),
                });
                None
            }
        }
    }

    /// Transforms and de-duplicates one listed object against the store; `None` for an
    /// object to skip (outside the shard, no name, a panicking transform).
    fn intern(&self, obj: Object) -> Option<Object> {
        if !self.in_shard(&obj) {
            return None;
        }
        let obj = self.transform(obj)?;
        let Ok(key) = key_of(obj.meta()) else {
            tracing::warn!(reflector = %self.opts.name, "skipping a listed object without a name");
            return None;
        };
        if let Some(known) = self.store.known(&key)
            && resource_version(&known).is_some()
            && resource_version(&known) == resource_version(&obj)
        {
            return Some(known);
        }
        Some(obj)
    }

    /// A paged list at the relist resourceVersion, falling back to "" when the server
    /// says it is too old; replaces the store page by page. The next page is asked for
    /// while the current one decodes.
    async fn list(&self) -> Result<(), Error> {
        let mut rv = self.relist_resource_version();
        let mut restarted = false;
        'restart: loop {
            self.store.replace_begin();
            let mut count = 0;
            let mut list_rv = String::new();
            let mut continued = false;
            let mut fetched = self.lw.list_page(self.list_options(&rv, None)).await;
            loop {
                let page = match fetched {
                    Ok(page) => page,
                    Err(e) => match self.list_failed(e, &mut rv, continued, &mut restarted) {
                        Ok(()) => continue 'restart,
                        Err(e) => return Err(e),
                    },
                };
                if list_rv.is_empty() {
                    list_rv = page.metadata.resource_version.clone().unwrap_or_default();
                }
                if let (Some(shard), false) = (self.shard(), continued) {
                    shard.listed(&self.opts.name, page.shard_selector.as_deref());
                }
                let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
                let (decoded, next) = match next {
                    Some(token) => {
                        let next = self.lw.list_page(self.list_options(&rv, Some(token)));
                        let (decoded, next) = tokio::join!(page.items, next);
                        (decoded, Some(next))
                    }
                    None => (page.items.await, None),
                };
                let decoded = decoded?;
                for skipped in &decoded.skipped {
                    self.report(skipped);
                }
                let part: Vec<Object> = decoded
                    .items
                    .into_iter()
                    .filter_map(|o| self.intern(o))
                    .collect();
                count += part.len();
                self.store_part(part).await;
                match next {
                    Some(next) => (fetched, continued) = (next, true),
                    None => break,
                }
            }
            self.store.replace_end();
            let mut v = self.version.lock();
            v.unavailable = false;
            if !list_rv.is_empty() {
                v.last_sync = list_rv;
            }
            tracing::debug!(reflector = %self.opts.name, count, resource_version = %v.last_sync, "listed");
            drop(v);
            self.count_list();
            return Ok(());
        }
    }

    /// Hands one part of a relist to the store, once its consumer has taken the backlog
    /// down (see [`ReflectorStore::is_full`]).
    async fn store_part(&self, part: Vec<Object>) {
        if self.store.is_full() {
            self.store.wait_for_room().await;
        }
        for e in self.store.replace_part(part) {
            tracing::warn!(reflector = %self.opts.name, "relist: {e}");
        }
    }

    /// The options of a list page: the first at `rv`, the others by continue token.
    fn list_options(&self, rv: &str, continue_token: Option<String>) -> ListOptions {
        let mut opts = ListOptions {
            resource_version: (continue_token.is_none() && !rv.is_empty()).then(|| rv.into()),
            limit: (self.opts.page_size > 0).then_some(self.opts.page_size),
            continue_token,
            shard_selector: self.shard_selector(),
            ..Default::default()
        };
        if opts.resource_version.as_deref().is_some_and(|v| v != "0") {
            opts.resource_version_match = Some(ResourceVersionMatch::NotOlderThan);
        }
        opts
    }

    /// Whether a failed list page restarts the list at once (`Ok`): when the version or
    /// the continue token (`continued`) is too old, from the latest state, once per list
    /// (`restarted`). The latest state refused, or refused again, is an error: retried
    /// after the backoff.
    fn list_failed(
        &self,
        e: Error,
        rv: &mut String,
        continued: bool,
        restarted: &mut bool,
    ) -> Result<(), Error> {
        if !(e.is_gone() || e.is_resource_expired()) {
            return Err(e);
        }
        if !rv.is_empty() {
            self.version.lock().unavailable = true;
        }
        if *restarted || (rv.is_empty() && !continued) {
            return Err(e);
        }
        *restarted = true;
        if continued {
            tracing::info!(reflector = %self.opts.name, "list continuation expired ({e}); listing again");
        } else {
            tracing::info!(reflector = %self.opts.name, "list at resourceVersion {rv:?} expired ({e}); listing the latest state");
        }
        rv.clear();
        Ok(())
    }

    fn watch_options(&self, timeout: Duration) -> ListOptions {
        ListOptions {
            resource_version: Some(self.version.lock().last_sync.clone()),
            timeout_seconds: Some(timeout.as_secs().max(1) as u32),
            allow_watch_bookmarks: true,
            shard_selector: self.shard_selector(),
            ..Default::default()
        }
    }

    fn random_timeout(&self) -> Duration {
        let min = self.opts.min_watch_timeout.max(Duration::from_secs(1));
        kubekit_client::retry::jitter(min, 1.0)
    }

    /// A streaming list: returns the watch once the initial events have replaced the
    /// store, to be watched on; `None` when cancelled.
    async fn streaming_list(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<(WatchStream<Object>, Duration)>, Error> {
        let timeout = self.random_timeout();
        let rv = self.relist_resource_version();
        let mut opts = self.watch_options(timeout);
        opts.send_initial_events = Some(true);
        opts.resource_version_match = Some(ResourceVersionMatch::NotOlderThan);
        opts.resource_version = Some(if rv == "0" { String::new() } else { rv });
        // The probe runs beside the watch, not before it: it only reports what the server
        // does, and the objects are filtered here either way.
        let watch = async {
            tokio::select! {
                _ = cancel.cancelled() => Ok(None),
                s = self.lw.watch(opts) => s.map(Some),
            }
        };
        let (probed, stream) = tokio::join!(self.probe_shard(cancel), watch);
        let (true, Some(mut stream)) = (probed, stream?) else {
            return Ok(None);
        };
        self.count_watch();
        self.store.replace_begin();
        let mut part: Vec<Object> = Vec::new();
        let silence = timeout + self.opts.silence_grace;
        loop {
            let event = match self.next_event(cancel, &mut stream, silence).await {
                Next::Cancelled => return Ok(None),
                Next::Closed => {
                    return Err(Error::Request(format!(
                        "streaming list of {} ended before its initial events were complete",
                        self.lw.describe()
                    )));
                }
                Next::Failed(e) => return Err(e),
                Next::Event(event) => event,
            };
            match event {
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                    part.extend(self.intern(obj));
                    if part.len() >= STREAMED_PART && !self.flush(cancel, &mut part).await {
                        return Ok(None);
                    }
                }
                WatchEvent::Deleted(obj) => {
                    if !self.flush(cancel, &mut part).await {
                        return Ok(None);
                    }
                    if let Ok(key) = key_of(obj.meta()) {
                        self.store.replace_forget(&key);
                    }
                }
                WatchEvent::Bookmark(b) => {
                    if b.is_initial_events_end() {
                        if !self.flush(cancel, &mut part).await {
                            return Ok(None);
                        }
                        self.store.replace_end();
                        let mut v = self.version.lock();
                        v.unavailable = false;
                        v.last_sync = b.resource_version;
                        drop(v);
                        self.count_list();
                        return Ok(Some((stream, timeout)));
                    }
                }
                WatchEvent::Error(status) => {
                    let e = self.event_error(*status);
                    if e.is_gone() || e.is_resource_expired() {
                        self.version.lock().unavailable = true;
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Hands the objects streamed so far to the store; false when cancelled meanwhile.
    async fn flush(&self, cancel: &CancellationToken, part: &mut Vec<Object>) -> bool {
        if part.is_empty() {
            return true;
        }
        tokio::select! {
            _ = cancel.cancelled() => false,
            () = self.store_part(std::mem::take(part)) => true,
        }
    }

    /// The next event of `stream`. A malformed event is reported and skipped; nothing
    /// received for `silence` is a dead connection.
    async fn next_event(
        &self,
        cancel: &CancellationToken,
        stream: &mut WatchStream<Object>,
        silence: Duration,
    ) -> Next {
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Next::Cancelled,
                n = tokio::time::timeout(silence, stream.next()) => n,
            };
            return match next {
                Err(_) => Next::Failed(self.silent_error(silence)),
                Ok(None) => Next::Closed,
                Ok(Some(Err(e @ Error::Decode { .. }))) => {
                    self.report(&e);
                    continue;
                }
                Ok(Some(Err(e))) => Next::Failed(e),
                Ok(Some(Ok(event))) => {
                    if let Some(m) = &self.metrics {
                        m.event(event.type_name());
                    }
                    Next::Event(event)
                }
            };
        }
    }

    /// The error an `ERROR` event reports.
    fn event_error(&self, status: Status) -> Error {
        Error::from_status("WATCH", self.lw.describe(), status)
    }

    fn silent_error(&self, after: Duration) -> Error {
        Error::Timeout {
            verb: "WATCH".into(),
            url: format!(
                "{} (nothing received: connection presumed dead)",
                self.lw.describe()
            ),
            after,
        }
    }

    fn short_watch_error(&self) -> Error {
        Error::Transport {
            verb: "WATCH".into(),
            url: self.lw.describe(),
            source: format!(
                "very short watch: closed by the server within {VERY_SHORT_WATCH:?} without an event"
            )
            .into(),
        }
    }

    /// Watches until a relist is needed.
    async fn watch_loop(
        &self,
        cancel: &CancellationToken,
        backoff: &mut Backoff,
        mut pending: Option<(WatchStream<Object>, Duration)>,
    ) -> Result<(), Error> {
        loop {
            let (stream, timeout, fresh) = match pending.take() {
                Some((stream, timeout)) => (stream, timeout, false),
                None => {
                    let timeout = self.random_timeout();
                    let opts = self.watch_options(timeout);
                    let started = tokio::select! {
                        _ = cancel.cancelled() => return Ok(()),
                        s = self.lw.watch(opts) => s,
                    };
                    match started {
                        Ok(stream) => {
                            self.count_watch();
                            (stream, timeout, true)
                        }
                        Err(e) if e.is_transient() => {
                            self.report(&e);
                            if !backoff.wait(cancel, &self.opts.name).await {
                                return Ok(());
                            }
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
            };
            match self.watch_handler(cancel, stream, timeout, fresh).await {
                WatchEnd::Cancelled => return Ok(()),
                WatchEnd::Closed => {}
                WatchEnd::Connection(e) => {
                    self.report(&e);
                    if !backoff.wait(cancel, &self.opts.name).await {
                        return Ok(());
                    }
                }
                WatchEnd::Relist(e) => return Err(e),
            }
        }
    }

    /// Applies the events of one watch to the store; a `fresh` one (not the continuation
    /// of a streaming list, which has delivered its initial events) closed within
    /// [`VERY_SHORT_WATCH`] without an event is a failure.
    async fn watch_handler(
        &self,
        cancel: &CancellationToken,
        mut stream: WatchStream<Object>,
        timeout: Duration,
        fresh: bool,
    ) -> WatchEnd {
        let silence = timeout + self.opts.silence_grace;
        let started = Instant::now();
        let mut received = !fresh;
        loop {
            if self.store.is_full() {
                tokio::select! {
                    _ = cancel.cancelled() => return WatchEnd::Cancelled,
                    () = self.store.wait_for_room() => {}
                }
            }
            let event = match self.next_event(cancel, &mut stream, silence).await {
                Next::Cancelled => return WatchEnd::Cancelled,
                Next::Closed if !received && started.elapsed() < VERY_SHORT_WATCH => {
                    return WatchEnd::Connection(self.short_watch_error());
                }
                Next::Closed => return WatchEnd::Closed,
                Next::Failed(e) => return WatchEnd::Connection(e),
                Next::Event(event) => event,
            };
            received = true;
            let (result, rv) = match event {
                WatchEvent::Added(obj) => self.apply(obj, |s, o| s.add(o)),
                WatchEvent::Modified(obj) => self.apply(obj, |s, o| s.update(o)),
                WatchEvent::Deleted(obj) => self.apply(obj, |s, o| s.delete(o)),
                WatchEvent::Bookmark(b) => (Ok(()), Some(b.resource_version)),
                WatchEvent::Error(status) => return WatchEnd::Relist(self.event_error(*status)),
            };
            if let Err(e) = result {
                tracing::warn!(reflector = %self.opts.name, "skipping a watched object: {e}");
            }
            if let Some(rv) = rv {
                self.set_version(&rv);
            }
        }
    }

    fn apply(
        &self,
        obj: Object,
        op: fn(&dyn ReflectorStore<dyn AnyObject>, Object) -> Result<(), KeyError>,
    ) -> (Result<(), KeyError>, Option<String>) {
        if !self.in_shard(&obj) {
            let rv = resource_version(&obj).map(str::to_string);
            return (self.outside_shard(obj), rv);
        }
        let Some(obj) = self.transform(obj) else {
            return (Ok(()), None);
        };
        let rv = resource_version(&obj).map(str::to_string);
        (op(self.store.as_ref(), obj), rv)
    }
}
mod erased;
mod shard;

#[cfg(test)]
mod tests;
