//! The event handler of a client-go style controller ([`enqueue_handler`]) and the
//! shutdown signal ([`shutdown_signal`]).

use std::sync::Arc;

use kube::Resource;
use tokio_util::sync::CancellationToken;

use crate::cache::{
    MaybeTombstone, ResourceEventHandlerFuncs, deletion_handling_meta_namespace_key,
    meta_namespace_key,
};
use crate::workqueue::RateLimitingQueue;

/// Puts the key (`namespace/name`) of `obj` on `queue`; an object without a name is
/// logged and skipped.
pub fn enqueue<K: Resource + 'static>(queue: &RateLimitingQueue<String>, obj: &K) {
    match meta_namespace_key(obj) {
        Ok(key) => queue.add(key),
        Err(e) => tracing::error!("cannot enqueue an object: {e}"),
    }
}

/// The event handler of a client-go style controller: the key of every added, updated or
/// deleted object goes on `queue` (for a deletion learned from a relist, the tombstone's
/// key). It never blocks, so the informer calls it on its own task
/// ([`ResourceEventHandler::may_block`](crate::cache::ResourceEventHandler::may_block)).
pub fn enqueue_handler<K: Resource + Send + Sync + 'static>(
    queue: &RateLimitingQueue<String>,
) -> ResourceEventHandlerFuncs<K> {
    let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
    ResourceEventHandlerFuncs::new()
        .on_add(move |obj: &Arc<K>, _| enqueue(&on_add, obj.as_ref()))
        .on_update(move |_: &Arc<K>, new: &Arc<K>| enqueue(&on_update, new.as_ref()))
        .on_delete(
            move |obj: &MaybeTombstone<K>| match deletion_handling_meta_namespace_key(obj) {
                Ok(key) => on_delete.add(key),
                Err(e) => tracing::error!("cannot enqueue a deleted object: {e}"),
            },
        )
        .non_blocking()
}

/// A token cancelled by the first SIGINT or SIGTERM; a second one exits the process with
/// status 1. Must be called within a tokio runtime.
pub fn shutdown_signal() -> CancellationToken {
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    tokio::spawn(async move {
        let mut signals = 0;
        loop {
            if wait_for_signal().await.is_err() {
                tracing::error!("cannot listen for signals; shut down by other means");
                return;
            }
            signals += 1;
            if signals == 1 {
                tracing::info!("signal received: shutting down (again to exit at once)");
                token.cancel();
            } else {
                tracing::warn!("second signal: exiting now");
                std::process::exit(1);
            }
        }
    });
    cancel
}

#[cfg(unix)]
async fn wait_for_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

#[cfg(not(unix))]
async fn wait_for_signal() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::runner::tests::queue;

    #[tokio::test]
    async fn the_enqueue_handler_queues_the_key_of_adds_updates_deletes_and_tombstones() {
        use crate::cache::{DeletedFinalStateUnknown, ResourceEventHandler};
        use k8s_openapi::api::core::v1::Pod;

        let pod = |name: &str| {
            let mut p = Pod::default();
            p.metadata.namespace = Some("ns".into());
            p.metadata.name = Some(name.into());
            Arc::new(p)
        };
        let q = queue();
        let handler = enqueue_handler::<Pod>(&q);
        let h: &dyn ResourceEventHandler<Pod> = &handler;
        assert!(!h.may_block(), "queueing a key never blocks: called inline");
        h.on_add(&pod("a"), true);
        h.on_update(&pod("b"), &pod("b"));
        h.on_delete(&MaybeTombstone::Object(pod("c")));
        h.on_delete(&MaybeTombstone::Tombstone(DeletedFinalStateUnknown {
            key: "ns/d".into(),
            obj: pod("d"),
        }));
        h.on_add(&Arc::new(Pod::default()), false);
        assert_eq!(q.len(), 4, "the nameless pod is skipped");
    }
}
