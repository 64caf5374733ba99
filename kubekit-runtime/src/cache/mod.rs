//! The informer machinery (client-go's `tools/cache`).
//!
//! Data flows one way: a [`Reflector`] lists and watches the server through a
//! [`ListerWatcher`] and puts what it sees into a [`DeltaFifo`]; a [`ProcessLoop`] pops the
//! FIFO and hands each key's deltas to a process function; a [`SharedIndexInformer`] is
//! that loop with an [`Indexer`] as the cache and any number of
//! [`ResourceEventHandler`]s fed from it.
//!
//! - [`key`]: how objects are named in the cache, and tombstones.
//! - [`store`]: [`Indexer`], the thread-safe cache with named secondary indexes.
//! - [`compact`]: [`Compact`], objects kept compressed with their metadata at hand, for
//!   informers over many objects (the `compact` feature, off by default).
//! - [`meta_ref`](mod@meta_ref): [`MetaRef`], an object's metadata as the cache reads it, without
//!   building an `ObjectMeta` for a compact object.
//! - [`delta_fifo`]: [`DeltaFifo`], the queue of changes between a reflector and an
//!   informer.
//! - [`listwatch`]: [`ListerWatcher`] and [`ListWatch`] over typed and dynamic clients.
//! - [`pager`]: [`ListPager`], a list in pages as an async stream, with client-go's
//!   full-list fallback when a continue token expires.
//! - [`metrics`]: [`ReflectorMetrics`], the reflectors' and informers' Prometheus series.
//! - [`reflector`]: [`Reflector`], list-then-watch with client-go's resourceVersion,
//!   backoff and relist rules.
//! - [`shard`]: [`ShardSelector`], one shard of a resource's objects by the hash of their
//!   uid or namespace, as the API server's sharded list and watch selects them.
//! - [`process_loop`]: [`ProcessLoop`], the process loop (formerly `cache::Controller`).
//! - [`handler`]: [`ResourceEventHandler`] and [`ResourceEventHandlerFuncs`].
//! - [`shared_informer`]: [`SharedIndexInformer`] and its handler registrations.
//! - [`wait_for_cache_sync`]: waits for several informers at once.

pub mod delta_fifo;
pub mod handler;
pub mod key;
pub mod listwatch;
pub mod metrics;
mod object;
pub mod pager;
pub mod process_loop;
pub mod reflector;
pub mod shard;
pub mod shared_informer;
pub mod store;
#[cfg(any(test, feature = "test-util"))]
pub mod test_support;

pub use delta_fifo::{Closed, Delta, DeltaFifo, DeltaType, Deltas};
pub use handler::{ResourceEventHandler, ResourceEventHandlerFuncs};
pub use key::{
    DeletedFinalStateUnknown, KeyError, MaybeTombstone, deletion_handling_meta_namespace_key,
    meta_namespace_key, split_meta_namespace_key,
};
#[cfg(feature = "compact")]
pub use kubekit_client::compact::{self, Compact, Encoding};
pub use kubekit_client::meta_ref::{self, MetaRef, OwnerRef, meta_ref};
pub use listwatch::{ListWatch, ListerWatcher, TweakListOptions};
pub use metrics::ReflectorMetrics;
pub use pager::{DEFAULT_PAGE_SIZE, ListPager, Page};
pub use process_loop::{ProcessError, ProcessFunc, ProcessLoop, ProcessLoopConfig};
pub use reflector::{
    BackoffPolicy, Reflector, ReflectorOptions, ReflectorStore, ShouldResync, TransformFunc,
    WATCH_BACKLOG_LIMIT, WatchErrorHandler, default_watch_error_handler, strip_managed_fields,
};
pub use shard::{
    HASH_SPACE_END, ShardControl, ShardKey, ShardRange, ShardSelector, ShardSelectorError,
    ShardTarget, shard_hash,
};
pub use shared_informer::{
    MINIMUM_RESYNC_PERIOD, ResourceEventHandlerRegistration, SharedIndexInformer,
};
pub use store::{
    CONTROLLER_UID_INDEX, Error, IndexFunc, Indexer, NAMESPACE_INDEX, controller_uid_index,
    namespace_index_func,
};

/// The former name of [`ProcessLoop`], renamed because "controller" names the
/// reconciling controllers (a [`Runner`](crate::controller::Runner), a manager's).
///
/// ```
/// # #![allow(deprecated)]
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubekit::cache::{Controller, ProcessLoop};
///
/// fn renamed(old: Controller<ConfigMap>) -> ProcessLoop<ConfigMap> {
///     old
/// }
/// ```
#[deprecated(
    note = "renamed `cache::ProcessLoop` (client-go's `cache.Controller`, the loop under an informer)"
)]
pub type Controller<K> = ProcessLoop<K>;

/// The former name of [`ProcessLoopConfig`].
#[deprecated(note = "renamed `cache::ProcessLoopConfig`")]
pub type ControllerConfig<K> = ProcessLoopConfig<K>;

/// The former path of [`process_loop`].
#[deprecated(note = "renamed `cache::process_loop`")]
pub mod controller {
    #[allow(deprecated)]
    pub use super::{Controller, ControllerConfig};
    pub use super::{ProcessError, ProcessFunc};
}

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How often [`wait_for_cache_sync`] checks its conditions (client-go's 100 ms).
pub const SYNC_POLL_PERIOD: Duration = Duration::from_millis(100);

/// Waits until every `has_synced` returns true (client-go's `WaitForCacheSync`); false if
/// `cancel` fired first. The conditions are plain functions, so they are checked every
/// [`SYNC_POLL_PERIOD`]; an informer's own
/// [`wait_for_sync`](SharedIndexInformer::wait_for_sync) waits without polling.
pub async fn wait_for_cache_sync(
    cancel: &CancellationToken,
    has_synced: &[&(dyn Fn() -> bool + Send + Sync)],
) -> bool {
    let mut tick = tokio::time::interval(SYNC_POLL_PERIOD);
    loop {
        if has_synced.iter().all(|f| f()) {
            return true;
        }
        tokio::select! {
            _ = cancel.cancelled() => return false,
            _ = tick.tick() => {}
        }
    }
}
