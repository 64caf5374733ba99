//! [`SharedInformerFactory`]: one shared informer per resource for a whole program
//! (client-go's `informers.SharedInformerFactory`, `dynamicinformer` and
//! `metadatainformer`).
//!
//! # Contract
//!
//! - Asking the factory twice for the same type (or the same GVR, for dynamic and
//!   metadata informers) returns the same informer: every controller of a program shares
//!   one list-watch and one cache per resource. The metadata informer of a resource
//!   ([`for_metadata`](SharedInformerFactory::for_metadata)) is a second informer beside
//!   its typed or dynamic one, with its own list-watch and a cache of
//!   [`PartialObjectMetadata`]; both share the resource's resync period.
//! - Every informer of a factory watches the factory's namespace (all namespaces by
//!   default; cluster-scoped types ignore it) with the factory's list-option tweak, and
//!   resyncs at the factory's default period unless a per-type period was set.
//! - [`start`](SharedInformerFactory::start) starts every informer asked for and not yet
//!   started (it may be called again after asking for more);
//!   [`wait_for_cache_sync`](SharedInformerFactory::wait_for_cache_sync) waits for the
//!   started ones and reports each by resource; [`shutdown`](SharedInformerFactory::shutdown)
//!   stops them and returns once every task the factory started has ended. After shutdown,
//!   `start` starts nothing. [`remove`](SharedInformerFactory::remove) stops one informer
//!   (a custom resource's whose CRD is gone, say); asking for it again makes a new one.
//! - Informers asked for are configured (handlers, indexers, transform) before `start`;
//!   handlers can also be added later (they are replayed the cache).
//! - A factory built with a [`shard`](SharedInformerFactoryBuilder::shard) gives every
//!   informer it makes that shard: each caches only the objects whose uid (or namespace)
//!   hashes into it, filtered by the API server when it can and by the informer when it
//!   cannot (see [`ShardSelector`]).
//! - Cached objects have no `metadata.managedFields` unless
//!   [`keep_managed_fields(true)`](SharedInformerFactoryBuilder::keep_managed_fields).
//! - Informers sync with a streaming list (a watch with `sendInitialEvents`, as client-go
//!   v0.35's informers do by default) unless
//!   [`streaming_list(false)`](SharedInformerFactoryBuilder::streaming_list): the API
//!   server answers a first list at resourceVersion "0" from its watch cache in one
//!   response, whatever the page size, which a large cache pays for in peak memory; a
//!   server that refuses streaming lists gets paged lists.
//!
//! # Build time
//!
//! Every typed accessor (`factory.core_v1().pods()`) compiles its type's informer: the
//! decoding of its objects and the informer around them, tens of thousands of lines of
//! machine code for a Pod. Where that happens is the program's choice, through kubekit's
//! `prebuilt-<group>` Cargo features (one per API group: `prebuilt-core`, `prebuilt-apps`,
//! `prebuilt-batch`, …, and `prebuilt-all`); the API is the same either way:
//!
//! - **With the group's feature** the accessors of the group's types are compiled once, in
//!   kubekit, for every type of the group: the program's first build pays for all of them,
//!   and its rebuilds for none. `prebuilt-common`, on by default, does so for the core
//!   kinds most controllers read: Pods, Services, ConfigMaps, Secrets, ServiceAccounts,
//!   Namespaces and Nodes (`prebuilt-core` for every core kind).
//! - **Without it** they are `#[inline]`: compiled in the program that calls them, for the
//!   types it uses, on its first build and again each time the calling crate is rebuilt.
//!
//! [`for_type`](SharedInformerFactory::for_type), and so the manager's controllers, are
//! generic and always compiled in the program. `bench/run.sh build` measures the choices
//! (bench/README.md). [`BuiltInResource::prebuilt`](kubekit_client::clientset::BuiltInResource)
//! names each resource's feature.
//!
//! ```no_run
//! # async fn demo(clientset: kubekit::clientset::Clientset) {
//! use std::time::Duration;
//! use kubekit::informers::SharedInformerFactory;
//! use kubekit::labels::Selector;
//! use tokio_util::sync::CancellationToken;
//!
//! let factory = SharedInformerFactory::builder(clientset)
//!     .namespace("demo")
//!     .default_resync(Duration::from_secs(60))
//!     .build();
//! let deployments = factory.apps_v1().deployments();
//! let pods = factory.core_v1().pods();
//! factory.start();
//! let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
//! assert!(synced.values().all(|ok| *ok));
//! for d in deployments.lister().namespaced("demo").list(&Selector::everything()) {
//!     println!("{:?}", d.metadata.name);
//! }
//! # let _ = pods;
//! factory.shutdown().await;
//! # }
//! ```

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{BoxFuture, join_all};
use kube::Resource;
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cache::{
    ListWatch, ListerWatcher, ReflectorMetrics, ShardSelector, SharedIndexInformer,
    TweakListOptions,
};
use crate::listers::Lister;
use kubekit_client::clientset::{Clientset, KnownScope, ListOptions, ResourceClient};
use kubekit_client::dynamic::{DynamicClient, Unstructured};
use kubekit_client::meta::GroupVersionResource;
use kubekit_client::metadata::{MetadataClient, PartialObjectMetadata};

/// The factory's view of an informer of any type.
/// How often [`SharedInformerFactory::wait_for_served_caches`] asks an unsynced informer
/// whether its resource is served.
const SERVED_POLL: Duration = Duration::from_millis(100);

trait AnyInformer: Send + Sync {
    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, ()>;
    fn wait_for_sync<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, bool>;
    fn is_served(&self) -> bool;
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<K> AnyInformer for SharedIndexInformer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture<'static, ()> {
        Box::pin(async move { SharedIndexInformer::run(&self, cancel).await })
    }

    fn wait_for_sync<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, bool> {
        Box::pin(SharedIndexInformer::wait_for_sync(self, cancel))
    }

    fn is_served(&self) -> bool {
        SharedIndexInformer::is_served(self)
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// An informer of the factory with its lister.
pub struct InformerFor<K> {
    informer: Arc<SharedIndexInformer<K>>,
    gvr: GroupVersionResource,
}

impl<K> Clone for InformerFor<K> {
    fn clone(&self) -> Self {
        Self {
            informer: self.informer.clone(),
            gvr: self.gvr.clone(),
        }
    }
}

impl<K: 'static> fmt::Debug for InformerFor<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerFor")
            .field("resource", &self.gvr.to_string())
            .field("informer", &self.informer)
            .finish()
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> InformerFor<K> {
    /// The shared informer.
    pub fn informer(&self) -> &Arc<SharedIndexInformer<K>> {
        &self.informer
    }

    /// A lister over the informer's cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.informer.indexer().clone(), self.gvr.clone())
    }
}

struct Entry {
    informer: Arc<dyn AnyInformer>,
    /// The namespace it lists and watches in; `None`: all of them (or a cluster-scoped
    /// resource).
    namespace: Option<String>,
    started: bool,
    /// Stops this informer alone ([`SharedInformerFactory::remove`]).
    stop: CancellationToken,
    /// Its task, from `start` until `shutdown` or `remove` waits for it.
    task: Option<JoinHandle<()>>,
}

/// What an informer of the factory caches of its resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum View {
    /// Whole objects, typed or dynamic.
    Objects,
    /// [`PartialObjectMetadata`].
    Metadata,
}

/// An informer's name in [`SharedInformerFactory::wait_for_cache_sync`]'s answer.
fn informer_name((gvr, view): &(GroupVersionResource, View)) -> String {
    match view {
        View::Objects => gvr.to_string(),
        View::Metadata => format!("{gvr} (metadata)"),
    }
}

#[derive(Default)]
struct State {
    informers: BTreeMap<(GroupVersionResource, View), Entry>,
    shut_down: bool,
}

/// Builds a [`SharedInformerFactory`].
pub struct SharedInformerFactoryBuilder {
    clientset: Clientset,
    namespace: String,
    tweak: Option<TweakListOptions>,
    default_resync: Duration,
    custom_resync: HashMap<GroupVersionResource, Duration>,
    page_size: Option<u32>,
    metrics: Option<ReflectorMetrics>,
    streaming_list: bool,
    keep_managed_fields: bool,
    shard: Option<ShardSelector>,
}

impl fmt::Debug for SharedInformerFactoryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactoryBuilder")
            .field("namespace", &self.namespace)
            .field("default_resync", &self.default_resync)
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactoryBuilder {
    /// Watches only `namespace` (namespaced types; `""`: all namespaces).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Adjusts the options of every list and watch (e.g. a label selector).
    pub fn tweak_list_options(
        mut self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(tweak));
        self
    }

    /// The resync period of every informer (zero: none).
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.default_resync = period;
        self
    }

    /// The page size of every informer's lists (client-go's default, 500, unless set;
    /// 0: unpaged). Larger pages mean fewer requests and larger responses held at once.
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = Some(page_size);
        self
    }

    /// Whether informers sync with a streaming list (default) or with paged lists.
    pub fn streaming_list(mut self, streaming: bool) -> Self {
        self.streaming_list = streaming;
        self
    }

    /// Keeps `metadata.managedFields` in the informers' caches. By default they are
    /// left out while decoding for typed informers (skipped in protobuf, cut from the JSON
    /// of custom resources) and dropped after decoding for dynamic and metadata ones: the
    /// server-side-apply bookkeeping is half of a decoded Pod's memory and
    /// few controllers read it (controller-runtime users get the same by
    /// `cache.TransformStripManagedFields`). Keep them for a controller that inspects field
    /// ownership.
    pub fn keep_managed_fields(mut self, keep: bool) -> Self {
        self.keep_managed_fields = keep;
        self
    }

    /// Caches only the objects of `shard` in every informer (typed, dynamic and metadata)
    /// the factory makes; see [`ShardSelector`] and
    /// [`SharedIndexInformer::set_shard`].
    pub fn shard(mut self, shard: ShardSelector) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Counts every informer's lists, watches, events and cached objects in `metrics`
    /// (see [`ReflectorMetrics`]), each under its resource's name.
    pub fn metrics(mut self, metrics: &ReflectorMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The resync period of the informer of `K`.
    pub fn resync_for<K: Resource<DynamicType = ()>>(mut self, period: Duration) -> Self {
        self.custom_resync
            .insert(GroupVersionResource::of::<K>(), period);
        self
    }

    /// The resync period of the dynamic and metadata informers of `gvr`.
    pub fn resync_for_resource(mut self, gvr: GroupVersionResource, period: Duration) -> Self {
        self.custom_resync.insert(gvr, period);
        self
    }

    /// The factory.
    pub fn build(self) -> SharedInformerFactory {
        let rest = self.clientset.rest_client();
        let dynamic = DynamicClient::from_rest_client(rest.clone());
        let metadata = MetadataClient::from_rest_client(rest.clone());
        SharedInformerFactory {
            clientset: self.clientset,
            dynamic,
            metadata,
            namespace: self.namespace,
            tweak: self.tweak,
            default_resync: self.default_resync,
            custom_resync: self.custom_resync,
            page_size: self.page_size,
            metrics: self.metrics,
            streaming_list: self.streaming_list,
            keep_managed_fields: self.keep_managed_fields,
            shard: self.shard,
            state: Mutex::new(State::default()),
            cancel: CancellationToken::new(),
        }
    }
}

/// Shared informers for a program; see the [module docs](self).
pub struct SharedInformerFactory {
    clientset: Clientset,
    dynamic: DynamicClient,
    metadata: MetadataClient,
    namespace: String,
    tweak: Option<TweakListOptions>,
    default_resync: Duration,
    custom_resync: HashMap<GroupVersionResource, Duration>,
    page_size: Option<u32>,
    metrics: Option<ReflectorMetrics>,
    streaming_list: bool,
    keep_managed_fields: bool,
    shard: Option<ShardSelector>,
    state: Mutex<State>,
    cancel: CancellationToken,
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("SharedInformerFactory")
            .field("namespace", &self.namespace)
            .field("default_resync", &self.default_resync)
            .field(
                "informers",
                &state
                    .informers
                    .keys()
                    .map(informer_name)
                    .collect::<Vec<_>>(),
            )
            .field("shut_down", &state.shut_down)
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactory {
    /// A factory over every namespace, without resync.
    pub fn new(clientset: Clientset) -> Self {
        Self::builder(clientset).build()
    }

    /// A builder for a factory with options.
    pub fn builder(clientset: Clientset) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder {
            clientset,
            namespace: String::new(),
            tweak: None,
            default_resync: Duration::ZERO,
            custom_resync: HashMap::new(),
            page_size: None,
            metrics: None,
            streaming_list: true,
            keep_managed_fields: false,
            shard: None,
        }
    }

    /// A new informer over `lw` with the factory's resync period for `gvr` and its page
    /// size.
    fn new_informer<K>(
        &self,
        gvr: &GroupVersionResource,
        lw: Arc<dyn ListerWatcher<K>>,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + Clone + Send + Sync + 'static,
    {
        let resync = self
            .custom_resync
            .get(gvr)
            .copied()
            .unwrap_or(self.default_resync);
        let informer = SharedIndexInformer::new(lw, resync);
        informer.configure_reflector(|o| {
            if let Some(page_size) = self.page_size {
                o.page_size = page_size;
            }
            o.metrics.clone_from(&self.metrics);
            o.use_streaming_list = self.streaming_list;
            o.drop_managed_fields = !self.keep_managed_fields;
            o.shard.clone_from(&self.shard);
        });
        informer
    }

    fn get_or_insert<K>(
        &self,
        gvr: GroupVersionResource,
        view: View,
        namespaced: bool,
        make: impl FnOnce() -> SharedIndexInformer<K>,
    ) -> InformerFor<K>
    where
        K: Resource + Clone + Send + Sync + 'static,
    {
        let mut state = self.state.lock();
        let key = (gvr.clone(), view);
        let entry = state.informers.entry(key).or_insert_with(|| Entry {
            informer: Arc::new(make()),
            namespace: (namespaced && !self.namespace.is_empty()).then(|| self.namespace.clone()),
            started: false,
            stop: self.cancel.child_token(),
            task: None,
        });
        let informer = entry
            .informer
            .clone()
            .as_any()
            .downcast::<SharedIndexInformer<K>>()
            .unwrap_or_else(|_| {
                panic!("two Rust types claim resource {gvr}; the factory keeps one informer per resource")
            });
        InformerFor { informer, gvr }
    }

    /// The shared informer of `K` (built-in or custom type).
    ///
    /// # Panics
    ///
    /// If two different Rust types for the same resource are asked for (a programming
    /// error: the cache holds one type per resource).
    pub fn for_type<K>(&self) -> InformerFor<K>
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
        let gvr = GroupVersionResource::of::<K>();
        self.get_or_insert(gvr.clone(), View::Objects, K::Scope::NAMESPACED, || {
            let mut client =
                ResourceClient::<K>::new(self.clientset.rest_client().clone(), &self.namespace);
            if !self.keep_managed_fields {
                client = client.skipping_managed_fields();
            }
            let lw = ListWatch::new(client).with_shared_tweak(self.tweak.clone());
            self.new_informer(&gvr, Arc::new(lw))
        })
    }

    /// The shared dynamic informer of `gvr` (objects as [`Unstructured`]). It watches the
    /// factory's namespace; for a cluster-scoped resource build the factory without one.
    pub fn for_resource(&self, gvr: &GroupVersionResource) -> InformerFor<Unstructured> {
        self.get_or_insert(gvr.clone(), View::Objects, true, || {
            let client = self.dynamic.resource(gvr).namespace(&self.namespace);
            let lw = ListWatch::new(client).with_shared_tweak(self.tweak.clone());
            self.new_informer(gvr, Arc::new(lw))
        })
    }

    /// The shared informer of the metadata of `gvr`'s objects (client-go's
    /// `metadatainformer` `ForResource`): the [metadata client](kubekit_client::metadata) lists and
    /// watches them, so only their metadata crosses the wire and is cached. It watches the
    /// factory's namespace; for a cluster-scoped resource build the factory without one.
    pub fn for_metadata(&self, gvr: &GroupVersionResource) -> InformerFor<PartialObjectMetadata> {
        self.get_or_insert(gvr.clone(), View::Metadata, true, || {
            let client = self.metadata.resource(gvr).namespace(&self.namespace);
            let lw = ListWatch::new(client).with_shared_tweak(self.tweak.clone());
            self.new_informer(gvr, Arc::new(lw))
        })
    }

    /// The resources the factory has informers for (typed, dynamic or metadata, each
    /// once), with the namespace each lists and watches in (`None`: all namespaces, or a
    /// cluster-scoped resource): the `list` and `watch` a program's RBAC must grant.
    pub fn informed(&self) -> Vec<(GroupVersionResource, Option<String>)> {
        let state = self.state.lock();
        let mut informed: Vec<_> = state
            .informers
            .iter()
            .map(|((gvr, _), entry)| (gvr.clone(), entry.namespace.clone()))
            .collect();
        informed.dedup();
        informed
    }

    /// Starts every informer asked for and not started yet. Must be called within a tokio
    /// runtime.
    pub fn start(&self) {
        let mut state = self.state.lock();
        if state.shut_down {
            tracing::warn!("SharedInformerFactory::start after shutdown: nothing started");
            return;
        }
        for entry in state.informers.values_mut().filter(|e| !e.started) {
            entry.started = true;
            let informer = entry.informer.clone();
            entry.task = Some(tokio::spawn(informer.run(entry.stop.clone())));
        }
    }

    /// Stops the informer of `gvr`'s whole objects (typed or dynamic) and forgets it,
    /// returning once its task has ended; `false` if the factory had none. The next
    /// [`for_type`](Self::for_type) or [`for_resource`](Self::for_resource) makes a new
    /// one, which [`start`](Self::start) starts. Whoever still holds the old informer or a
    /// lister of it keeps its last cache, no longer updated. (client-go's factory cannot
    /// remove an informer; its informers stop only with the whole factory.)
    pub async fn remove(&self, gvr: &GroupVersionResource) -> bool {
        self.remove_informer((gvr.clone(), View::Objects)).await
    }

    /// [`remove`](Self::remove) for the metadata informer of `gvr`
    /// ([`for_metadata`](Self::for_metadata)).
    pub async fn remove_metadata(&self, gvr: &GroupVersionResource) -> bool {
        self.remove_informer((gvr.clone(), View::Metadata)).await
    }

    async fn remove_informer(&self, key: (GroupVersionResource, View)) -> bool {
        let entry = self.state.lock().informers.remove(&key);
        let Some(entry) = entry else {
            return false;
        };
        entry.stop.cancel();
        if let Some(task) = entry.task
            && let Err(e) = task.await
        {
            tracing::error!(informer = %informer_name(&key), "informer task failed: {e}");
        }
        true
    }

    /// Waits for every started informer to sync, or for `cancel`; the result names each
    /// informer's resource (`pods.v1`, `deployments.v1.apps`, …; a metadata informer as
    /// `pods.v1 (metadata)`) with whether it synced.
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> BTreeMap<String, bool> {
        let started: Vec<(String, Arc<dyn AnyInformer>)> = self
            .state
            .lock()
            .informers
            .iter()
            .filter(|(_, e)| e.started)
            .map(|(key, e)| (informer_name(key), e.informer.clone()))
            .collect();
        let results = join_all(started.iter().map(|(_, i)| i.wait_for_sync(cancel))).await;
        started
            .into_iter()
            .map(|(name, _)| name)
            .zip(results)
            .collect()
    }

    /// Waits until every started informer has synced or found its resource not served (a
    /// CRD not installed, or deleted: see [`SharedIndexInformer::is_served`]), or for
    /// `cancel`; false if `cancel` fired first. What a manager's controller waits for
    /// besides its own informers: the caches its reconciles may read, without a kind the
    /// server does not serve holding every controller back.
    pub async fn wait_for_served_caches(&self, cancel: &CancellationToken) -> bool {
        let started: Vec<Arc<dyn AnyInformer>> = self
            .state
            .lock()
            .informers
            .values()
            .filter(|e| e.started)
            .map(|e| e.informer.clone())
            .collect();
        let each = started.iter().map(|informer| async move {
            let synced = informer.wait_for_sync(cancel);
            tokio::pin!(synced);
            loop {
                tokio::select! {
                    ok = &mut synced => return ok,
                    () = tokio::time::sleep(SERVED_POLL) => {
                        if !informer.is_served() {
                            return true;
                        }
                    }
                }
            }
        });
        join_all(each).await.into_iter().all(|ok| ok)
    }

    /// Stops every informer and waits for all the tasks the factory started.
    pub async fn shutdown(&self) {
        let tasks: Vec<JoinHandle<()>> = {
            let mut state = self.state.lock();
            state.shut_down = true;
            state
                .informers
                .values_mut()
                .filter_map(|e| e.task.take())
                .collect()
        };
        self.cancel.cancel();
        for task in tasks {
            if let Err(e) = task.await {
                tracing::error!("informer task failed: {e}");
            }
        }
    }
}

use kubekit_client::{built_in_groups, gated, unless_client_only};

/// Generates, from the clientset's table of built-in resources, the typed accessors:
/// `factory.core_v1().pods()`, `factory.networking_v1().ingresses()`, …, one per resource
/// the server can watch (`[client only]` ones have none).
macro_rules! informer_groups {
    ($(
        $(#[doc = $doc:literal])*
        $accessor:ident => $Client:ident, $Group:ident (
            $api_version:literal, $($module:ident)::+, $prebuilt:literal
        )
        $(if $gate:ident)?
        {
            namespaced {
                $(
                    $ns_fn:ident: $NsKind:ident $([client $ns_only:ident])?
                    $([prebuilt $ns_also:literal])? $(if $ns_gate:ident)?,
                )*
            }
            cluster {
                $(
                    $cl_fn:ident: $ClKind:ident $([client $cl_only:ident])?
                    $([prebuilt $cl_also:literal])? $(if $cl_gate:ident)?,
                )*
            }
        }
    )*) => {
        $(
            gated! { $($gate)?;
                /// The types of the group version, under a short path.
                mod $accessor {
                    pub(super) use $($module)::+::*;
                }

                #[doc = concat!("Informers of `", $api_version, "`.")]
                #[derive(Debug)]
                pub struct $Group<'a> {
                    factory: &'a SharedInformerFactory,
                }

                impl $Group<'_> {
                    $(
                        gated! { $($ns_gate)?;
                            unless_client_only! { $($ns_only)?;
                                #[doc = concat!(
                                    "The shared informer of `", $api_version, "` `",
                                    stringify!($NsKind), "`."
                                )]
                                #[cfg_attr(
                                    not(any(feature = $prebuilt $(, feature = $ns_also)?)),
                                    inline
                                )]
                                pub fn $ns_fn(&self) -> InformerFor<$accessor::$NsKind> {
                                    self.factory.for_type()
                                }
                            }
                        }
                    )*
                    $(
                        gated! { $($cl_gate)?;
                            unless_client_only! { $($cl_only)?;
                                #[doc = concat!(
                                    "The shared informer of `", $api_version, "` `",
                                    stringify!($ClKind), "`."
                                )]
                                #[cfg_attr(
                                    not(any(feature = $prebuilt $(, feature = $cl_also)?)),
                                    inline
                                )]
                                pub fn $cl_fn(&self) -> InformerFor<$accessor::$ClKind> {
                                    self.factory.for_type()
                                }
                            }
                        }
                    )*
                }

                impl SharedInformerFactory {
                    #[doc = concat!("Informers of `", $api_version, "`.")]
                    pub fn $accessor(&self) -> $Group<'_> {
                        $Group { factory: self }
                    }
                }
            }
        )*
    };
}

built_in_groups!(informer_groups);

#[cfg(test)]
mod tests {
    use kubekit_client::clientset::Clientset;

    use super::SharedInformerFactory;

    #[tokio::test]
    async fn the_table_gives_the_informer_factory_the_clientset_accessors() {
        let config = kube::Config::new("https://127.0.0.1:1".parse().expect("url"));
        let clientset = Clientset::new(&kubekit_client::rest::RestConfig::from_kube(config))
            .expect("clientset");
        let factory = SharedInformerFactory::new(clientset.clone());
        let informers = [
            format!("{:?}", factory.networking_v1().ingresses()),
            format!("{:?}", factory.core_v1().pod_templates()),
            format!("{:?}", factory.flowcontrol_v1().flow_schemas()),
            format!(
                "{:?}",
                factory.apiextensions_v1().custom_resource_definitions()
            ),
        ];
        let clients = [
            clientset.networking_v1().ingresses("").gvr().to_string(),
            clientset.core_v1().pod_templates("").gvr().to_string(),
            clientset.flowcontrol_v1().flow_schemas().gvr().to_string(),
            clientset
                .apiextensions_v1()
                .custom_resource_definitions()
                .gvr()
                .to_string(),
        ];
        for (informer, resource) in informers.iter().zip(&clients) {
            assert!(
                informer.contains(&format!("resource: \"{resource}\"")),
                "{informer} is not of {resource}"
            );
        }
    }

    #[test]
    fn every_group_names_a_prebuilt_feature_of_its_api_group_that_prebuilt_all_turns_on() {
        // The features are this crate's: the informer accessors are compiled here.
        let manifest = include_str!("../Cargo.toml");
        let features = &manifest[manifest.find("\n[features]").expect("[features]")..];
        let features = &features[..features[1..].find("\n[").map_or(features.len(), |i| i + 1)];
        let declared = |name: &str| features.contains(&format!("\n{name} = "));
        let all = &features[features.find("prebuilt-all = [").expect("prebuilt-all")..];
        let all = &all[..all.find(']').expect("prebuilt-all's end")];
        for r in kubekit_client::clientset::built_in_resources() {
            let group = r.group.split('.').next().filter(|g| !g.is_empty());
            assert_eq!(
                r.prebuilt,
                format!("prebuilt-{}", group.unwrap_or("core")),
                "{r:?}"
            );
            assert!(declared(r.prebuilt), "{} is not a feature", r.prebuilt);
            assert!(
                all.contains(&format!("\"{}\"", r.prebuilt)),
                "prebuilt-all leaves out {}",
                r.prebuilt
            );
        }
        let groups: std::collections::HashSet<_> = kubekit_client::clientset::built_in_resources()
            .iter()
            .map(|r| r.prebuilt)
            .collect();
        assert_eq!(all.matches("\"prebuilt-").count(), groups.len(), "{all}");
        let default = &features[features.find("\ndefault = [").expect("default")..];
        let default = &default[..default.find(']').expect("default's end")];
        assert_eq!(default.matches("\"prebuilt-").count(), 1, "{default}");
        assert!(default.contains("\"prebuilt-common\""), "{default}");
    }
}
