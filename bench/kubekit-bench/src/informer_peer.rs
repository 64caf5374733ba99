//! kubekit's peer of the informer benchmark (`kubekit-bench informer-peer`): the Pod
//! informer of a [`SharedInformerFactory`] as a kubekit user writes it, reporting on
//! stdout in the protocol of [`informer_protocol`].
//!
//! The factory has its defaults (paged lists of 500, no resync); the client has no
//! client-side rate limit. One handler counts the adds and the updates that change a
//! pod's resourceVersion, timing the first and the M-th update.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use informer_protocol::{PeerOptions, Target, UpdateTimer, report_synced, report_updated};
use k8s_openapi::api::core::v1::Pod;
use kubekit::cache::ResourceEventHandlerFuncs;
use kubekit::clientset::Clientset;
use kubekit::informers::SharedInformerFactory;
use kubekit::rest::Config;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The name the peer reports.
const CLIENT: &str = "kubekit";

/// Runs the peer until it has reported.
pub fn run(options: PeerOptions) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))?;
    runtime.block_on(peer(options))
}

async fn peer(options: PeerOptions) -> Result<(), String> {
    let config = match &options.target {
        Target::Server(url) => Config::from_url(url),
        Target::Kubeconfig(path) => Config::from_kubeconfig(path).await,
    }
    .map_err(|e| e.to_string())?
    .with_rate_limit(-1.0, 0);
    let clientset = Clientset::new(&config).map_err(|e| e.to_string())?;
    let factory = SharedInformerFactory::new(clientset);
    let pods = factory.core_v1().pods();

    let adds = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = oneshot::channel();
    let updates = Mutex::new((UpdateTimer::new(options.updates), Some(done_tx)));
    pods.informer().add_event_handler(
        ResourceEventHandlerFuncs::<Pod>::new()
            .on_add({
                let adds = adds.clone();
                move |_, _| {
                    adds.fetch_add(1, Ordering::Relaxed);
                }
            })
            .on_update(move |old, new| {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return;
                }
                let mut updates = updates.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(seconds) = updates.0.record(Instant::now())
                    && let Some(done) = updates.1.take()
                {
                    let _ = done.send(seconds);
                }
            }),
    );

    let started = Instant::now();
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    if let Some((resource, _)) = synced.iter().find(|(_, ok)| !**ok) {
        return Err(format!("the informer of {resource} did not sync"));
    }
    let sync_seconds = started.elapsed().as_secs_f64();
    report_synced(CLIENT, sync_seconds, || pods.informer().indexer().len())?;

    if options.updates > 0 {
        let seconds = done_rx
            .await
            .map_err(|_| "the update handler went away".to_string())?;
        report_updated(CLIENT, options.updates, seconds)?;
    }
    factory.shutdown().await;
    eprintln!(
        "kubekit peer: {} adds handled",
        adds.load(Ordering::Relaxed)
    );
    Ok(())
}
