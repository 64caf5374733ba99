//! The Pod controller of the seeds' workqueue example: an informer on Pods feeds a
//! rate-limited work queue; one worker prints what it finds in the cache for each key.
//!
//! ```text
//! cargo run -p kubekit-examples --bin pod-controller -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS]
//! ```
//!
//! Prints `Sync/Add/Update for Pod <name>` for a pod in the cache and
//! `Pod <namespace>/<name> does not exist anymore` once it is gone. Before starting, the
//! cache is warmed with `default/mypod`, a pod "known from a previous run": if it no
//! longer exists, the first list turns it into a delete and its key is reported gone. Stop
//! with Ctrl-C. Without `--namespace`, all namespaces are watched.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubekit::cache::{Indexer, ListWatch, SharedIndexInformer};
use kubekit::clientset::Clientset;
use kubekit::controller::{
    AsyncReconciler, ReconcileAction, ReconcileError, Runner, enqueue_handler, shutdown_signal,
};
use kubekit::workqueue::{RateLimitingQueue, default_controller_rate_limiter};

/// Prints what the cache holds for each key.
struct SyncToStdout {
    indexer: Arc<Indexer<Pod>>,
}

impl AsyncReconciler for SyncToStdout {
    async fn reconcile(&self, key: &str) -> Result<ReconcileAction, ReconcileError> {
        match self.indexer.get(key) {
            None => println!("Pod {key} does not exist anymore"),
            // The object is the one in the cache: no copy was made.
            Some(pod) => println!(
                "Sync/Add/Update for Pod {}",
                pod.metadata.name.as_deref().unwrap_or_default()
            ),
        }
        Ok(ReconcileAction::Done)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let config = flags.config().await?;
    let namespace = flags.namespace.clone().unwrap_or_default();
    let clientset = Clientset::new(&config)?;

    let lw = ListWatch::new(clientset.core_v1().pods(&namespace));
    let informer = Arc::new(SharedIndexInformer::new(Arc::new(lw), Duration::ZERO));
    let queue = RateLimitingQueue::new(default_controller_rate_limiter());
    informer.add_event_handler(enqueue_handler(&queue));

    // A pod known from a previous run: if it is gone, the first list reports its deletion.
    let mut known = Pod::default();
    known.metadata.name = Some("mypod".into());
    known.metadata.namespace = Some("default".into());
    informer.indexer().add(Arc::new(known))?;

    let cancel = shutdown_signal();
    let informer_task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    println!("Starting Pod controller");
    let runner = Runner::new("pod-controller", queue).max_retries(5);
    let reconciler = Arc::new(SyncToStdout {
        indexer: informer.indexer().clone(),
    });
    let synced = informer.wait_for_sync(&cancel);
    runner.run(reconciler, 1, synced, cancel.clone()).await?;
    informer_task.await?;
    println!("Stopping Pod controller");
    Ok(())
}
