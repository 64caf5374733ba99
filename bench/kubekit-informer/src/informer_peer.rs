//! kubekit's peer of the informer benchmark (`kubekit-informer informer-peer`): the Pod
//! informer of a [`SharedInformerFactory`] as a kubekit user writes it, reporting on
//! stdout in the protocol of [`informer_protocol`].
//!
//! The factory has its defaults (a streaming list, no resync, no `managedFields` in the
//! cache); the client has no client-side rate limit and its defaults (protobuf for
//! built-in types). One handler counts the adds and the updates that change a pod's
//! resourceVersion, timing the first and the M-th update. With `--compact` the informer
//! caches [`Compact<Pod>`] (`factory.for_type::<Compact<Pod>>()`) instead of typed Pods,
//! and reports itself as `kubekit-compact`; with `--json`, the typed informer asking for
//! JSON alone (CBOR off), as `kubekit-json`; with `--metadata`, the Pods'
//! [`PartialObjectMetadata`](kubekit::metadata::PartialObjectMetadata) with their `managedFields` (`factory.for_metadata(&pods)`
//! of a factory built with `keep_managed_fields(true)`), as `kubekit-metadata`, and with
//! `--metadata-strip` the same without them (the factory's default), as
//! `kubekit-metadata-strip`.
//!
//! With `--resource R` the informer caches another kind (`factory.for_type::<K>()`, the
//! compact and metadata caches likewise): deployments, configmaps, secrets, events, nodes,
//! or the benchmark's custom resource ([`Widget`]), typed only, in CBOR where the server
//! serves it (`--json`: JSON).
//!
//! With `--shard I/N` the factory is given the I-th of N equal uid ranges
//! ([`SharedInformerFactoryBuilder::shard`](kubekit::informers::SharedInformerFactoryBuilder::shard)):
//! the informer caches only the Pods whose uid hashes into it, filtered by the server when
//! it serves sharded lists and watches, by the informer otherwise (`bench/run.sh shards`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use informer_protocol::widget::Widget;
use informer_protocol::{Kind, PeerOptions, Target, UpdateTimer, report_synced, report_updated};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod, Secret};
use kube::Resource;
use kubekit::cache::{
    Compact, ResourceEventHandlerFuncs, ShardRange, ShardSelector, SharedIndexInformer, meta_ref,
};
use kubekit::clientset::Clientset;
use kubekit::informers::SharedInformerFactory;
use kubekit::meta::{GroupVersionResource, Object};
use kubekit::rest::RestConfig;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Which cache the peer's informer keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    /// Typed Pods: `factory.core_v1().pods()`.
    Typed,
    /// `Compact<Pod>`: `factory.for_type::<Compact<Pod>>()`.
    Compact,
    /// The Pods' metadata: `factory.for_metadata(&pods)`.
    Metadata,
    /// The same without `managedFields`.
    MetadataStrip,
    /// Typed objects read in JSON only ([`RestConfig::cbor`] off): what the default asks
    /// for where it has no protobuf, CBOR, set aside.
    TypedJson,
}

impl Cache {
    /// The name the peer reports.
    pub fn client_name(self) -> &'static str {
        match self {
            Cache::Typed => "kubekit",
            Cache::Compact => "kubekit-compact",
            Cache::Metadata => "kubekit-metadata",
            Cache::MetadataStrip => "kubekit-metadata-strip",
            Cache::TypedJson => "kubekit-json",
        }
    }

    /// The flag of the peer's command line that selects this cache.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            Cache::Typed => None,
            Cache::Compact => Some("--compact"),
            Cache::Metadata => Some("--metadata"),
            Cache::MetadataStrip => Some("--metadata-strip"),
            Cache::TypedJson => Some("--json"),
        }
    }
}

/// The peer's command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Peer {
    /// The cache its informer keeps.
    pub cache: Cache,
    /// `--shard I/N`: the I-th of N equal uid ranges.
    pub shard: Option<ShardSelector>,
    /// The options every peer has.
    pub options: PeerOptions,
}

/// Parses `I/N` (I < N) into the I-th of N equal uid ranges.
fn parse_shard(text: &str) -> Result<ShardSelector, String> {
    let bad = || format!("--shard {text:?}: expected I/N with I < N, e.g. 0/2");
    let (index, count) = text.split_once('/').ok_or_else(bad)?;
    let index: usize = index.parse().map_err(|_| bad())?;
    let count: u32 = count.parse().map_err(|_| bad())?;
    let range = ShardRange::even_parts(count)
        .get(index)
        .copied()
        .ok_or_else(bad)?;
    Ok(ShardSelector::uid(range))
}

/// Parses the peer's arguments: at most one of `--compact`, `--metadata`,
/// `--metadata-strip` and `--json`, `--shard I/N`, and the common peer options.
pub fn parse(args: impl Iterator<Item = String>) -> Result<Peer, String> {
    let caches = [
        Cache::Compact,
        Cache::Metadata,
        Cache::MetadataStrip,
        Cache::TypedJson,
    ];
    let is_cache = |arg: &String| caches.iter().any(|c| c.flag() == Some(arg.as_str()));
    let mut shard = None;
    let mut others = Vec::new();
    let mut args = args;
    while let Some(arg) = args.next() {
        if arg == "--shard" {
            let value = args.next().ok_or("--shard needs a value")?;
            shard = Some(parse_shard(&value)?);
        } else {
            others.push(arg);
        }
    }
    let (flags, rest): (Vec<String>, Vec<String>) = others.into_iter().partition(is_cache);
    let cache = match flags.as_slice() {
        [] => Cache::Typed,
        [flag] => caches
            .into_iter()
            .find(|c| c.flag() == Some(flag.as_str()))
            .unwrap_or(Cache::Typed),
        _ => return Err(format!("one cache at most, got {flags:?}")),
    };
    Ok(Peer {
        cache,
        shard,
        options: PeerOptions::parse(rest.into_iter())?,
    })
}

/// Runs `peer` on a multi-threaded runtime with the client configuration of `target`, as
/// the benchmark's clients are configured: no client-side rate limit, kubekit's defaults
/// otherwise.
pub fn run_with_config<F>(target: &Target, peer: impl FnOnce(RestConfig) -> F) -> Result<(), String>
where
    F: Future<Output = Result<(), String>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))?;
    runtime.block_on(async {
        let config = match target {
            Target::Server(url) => RestConfig::from_url(url),
            Target::Kubeconfig(path) => RestConfig::from_kubeconfig(path).await,
        }
        .map_err(|e| e.to_string())?
        .with_rate_limit(-1.0, 0);
        peer(config).await
    })
}

/// Runs the peer until it has reported.
pub fn run(
    Peer {
        cache,
        shard,
        options,
    }: Peer,
) -> Result<(), String> {
    let target = options.target.clone();
    run_with_config(&target, |config| async move {
        let config = config.with_cbor(cache != Cache::TypedJson);
        let clientset = Clientset::new(&config).map_err(|e| e.to_string())?;
        let mut builder =
            SharedInformerFactory::builder(clientset).keep_managed_fields(cache == Cache::Metadata);
        if let Some(shard) = shard {
            builder = builder.shard(shard);
        }
        let factory = builder.build();
        match options.kind {
            Kind::Pods => cached::<Pod>(cache, &options, &factory).await,
            Kind::Deployments => cached::<Deployment>(cache, &options, &factory).await,
            Kind::ConfigMaps => cached::<ConfigMap>(cache, &options, &factory).await,
            Kind::Secrets => cached::<Secret>(cache, &options, &factory).await,
            Kind::Events => cached::<Event>(cache, &options, &factory).await,
            Kind::Nodes => cached::<Node>(cache, &options, &factory).await,
            Kind::Widgets => match cache {
                Cache::Typed | Cache::TypedJson => {
                    let widgets = factory.for_type::<Widget>();
                    peer(cache, &options, &factory, widgets.informer()).await
                }
                _ => Err(format!(
                    "{} is not measured on widgets",
                    cache.client_name()
                )),
            },
        }
    })
}

/// Runs the peer on the informer of `K` that `cache` names.
async fn cached<K>(
    cache: Cache,
    options: &PeerOptions,
    factory: &SharedInformerFactory,
) -> Result<(), String>
where
    K: Object,
{
    match cache {
        Cache::Typed | Cache::TypedJson => {
            peer(cache, options, factory, factory.for_type::<K>().informer()).await
        }
        Cache::Compact => {
            let informer = factory.for_type::<Compact<K>>();
            peer(cache, options, factory, informer.informer()).await
        }
        Cache::Metadata | Cache::MetadataStrip => {
            let informer = factory.for_metadata(&GroupVersionResource::of::<K>());
            peer(cache, options, factory, informer.informer()).await
        }
    }
}

async fn peer<K>(
    cache: Cache,
    options: &PeerOptions,
    factory: &SharedInformerFactory,
    informer: &SharedIndexInformer<K>,
) -> Result<(), String>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    let client = cache.client_name();
    let adds = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = oneshot::channel();
    let updates = Mutex::new((UpdateTimer::new(options.updates), Some(done_tx)));
    informer.add_event_handler(
        ResourceEventHandlerFuncs::<K>::new()
            .on_add({
                let adds = adds.clone();
                move |_, _| {
                    adds.fetch_add(1, Ordering::Relaxed);
                }
            })
            .on_update(move |old, new| {
                if meta_ref(&**old).resource_version() == meta_ref(&**new).resource_version() {
                    return;
                }
                let mut updates = updates.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(seconds) = updates.0.record(Instant::now())
                    && let Some(done) = updates.1.take()
                {
                    let _ = done.send(seconds);
                }
            })
            // Counting never blocks: called on the informer's task, as the handlers of
            // `controller::enqueue_handler` and the manager are.
            .non_blocking(),
    );

    let started = Instant::now();
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    if let Some((resource, _)) = synced.iter().find(|(_, ok)| !**ok) {
        return Err(format!("the informer of {resource} did not sync"));
    }
    let sync_seconds = started.elapsed().as_secs_f64();
    report_synced(client, sync_seconds, || informer.indexer().len())?;

    if options.updates > 0 {
        let seconds = done_rx
            .await
            .map_err(|_| "the update handler went away".to_string())?;
        report_updated(client, options.updates, seconds)?;
    }
    factory.shutdown().await;
    eprintln!(
        "{client} peer: {} adds handled",
        adds.load(Ordering::Relaxed)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> impl Iterator<Item = String> {
        line.split_whitespace().map(str::to_string)
    }

    #[test]
    fn a_shard_is_the_ith_of_n_equal_uid_ranges_and_bad_ones_are_refused() {
        let peer = parse(args("--compact --shard 1/4 --kubeconfig k")).unwrap();
        assert_eq!(peer.cache, Cache::Compact);
        let range = ShardRange::even_parts(4)[1];
        assert_eq!(peer.shard, Some(ShardSelector::uid(range)));
        assert_eq!(parse(args("--kubeconfig k")).unwrap().shard, None);
        for bad in ["4/4", "1", "a/2", "1/0"] {
            let e = parse(args(&format!("--shard {bad} --kubeconfig k"))).unwrap_err();
            assert!(e.contains("expected I/N"), "{bad}: {e}");
        }
        assert!(parse(args("--kubeconfig k --shard")).is_err());
    }
}
