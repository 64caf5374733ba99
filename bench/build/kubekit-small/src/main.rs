//! A factory Pod informer with one event handler, as a kubekit user's first program: syncs
//! the Pods of the cluster the kubeconfig (or the Pod's service account) points at, prints
//! each added Pod's name and then their count.

use k8s_openapi::api::core::v1::Pod;
use kubekit::cache::ResourceEventHandlerFuncs;
use kubekit::clientset::Clientset;
use kubekit::informers::SharedInformerFactory;
use kubekit::rest::RestConfig;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = RestConfig::infer().await?;
    let factory = SharedInformerFactory::new(Clientset::new(&config)?);
    let pods = factory.core_v1().pods();
    pods.informer()
        .add_event_handler(ResourceEventHandlerFuncs::<Pod>::new().on_add(|pod, _| {
            println!("added {}", pod.metadata.name.as_deref().unwrap_or_default());
        }));
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    println!("synced: {synced:?}, {} pods", pods.informer().indexer().len());
    factory.shutdown().await;
    Ok(())
}
