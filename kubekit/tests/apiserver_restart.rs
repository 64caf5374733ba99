//! kube-apiserver restarted under an informer. The restart cuts every connection of the
//! control plane, so this runs in its own test binary with its own control plane.

#[path = "it/common.rs"]
mod common;
#[path = "it/pods.rs"]
mod pods;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubekit::cache::{ListWatch, SharedIndexInformer};
use kubekit::clientset::Clientset;
use parking_lot::Mutex;

use common::{admin_client, namespace};
use pods::{
    AddCounter, assert_cache_converges, create_pods, delete_pods, run, synced, update_pods,
};

#[tokio::test]
async fn informer_converges_after_an_apiserver_restart_during_churn_without_duplicate_adds() {
    let cs = Clientset::from_rest_client(admin_client().await);
    let ns = namespace("restart").await;
    create_pods(&cs, &ns, 0..300).await;

    let informer = Arc::new(SharedIndexInformer::<Pod>::new(
        Arc::new(ListWatch::new(cs.core_v1().pods(&ns))),
        Duration::ZERO,
    ));
    let watch_errors = Arc::new(Mutex::new(Vec::<String>::new()));
    informer.set_watch_error_handler({
        let errors = watch_errors.clone();
        move |e| errors.lock().push(e.to_string())
    });
    let adds = AddCounter::default();
    informer.add_event_handler(adds.handler());
    let (cancel, task) = run(&informer);
    synced(&informer).await;

    let restart = tokio::task::spawn_blocking(|| testenv::control_plane().restart_apiserver());
    tokio::join!(
        create_pods(&cs, &ns, 300..600),
        update_pods(&cs, &ns, 0..100, 1),
        delete_pods(&cs, &ns, 100..200),
    );
    restart.await.expect("restart task");
    // And some churn once it is back.
    update_pods(&cs, &ns, 200..300, 2).await;

    assert_cache_converges(&cs, &ns, informer.indexer()).await;
    assert_eq!(informer.indexer().len(), 500);
    adds.wait_len(600).await;
    assert!(
        adds.duplicates().is_empty(),
        "an unchanged object was added twice: {:?}",
        adds.duplicates()
    );
    println!(
        "watch errors seen across the restart: {:?}",
        watch_errors.lock()
    );
    assert!(!watch_errors.lock().is_empty(), "the restart cut the watch");
    cancel.cancel();
    task.await.unwrap();
}
