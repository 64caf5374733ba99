//! The Deployment informer and lister of the seeds' informer example: a shared informer
//! factory with a 60 s resync prints every add, update and delete of a Deployment, and
//! after each one lists the namespace's Deployments from the cache.
//!
//! ```text
//! cargo run -p kubekit-examples --bin deployment-informer -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS]
//! ```
//!
//! Without `--namespace`, the namespace of the kubeconfig's context is used. Stop with
//! Ctrl-C.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kubekit::cache::{MaybeTombstone, ResourceEventHandlerFuncs};
use kubekit::clientset::Clientset;
use kubekit::controller::shutdown_signal;
use kubekit::informers::SharedInformerFactory;
use kubekit::labels::Selector;
use kubekit::listers::Lister;

fn name(d: &Deployment) -> &str {
    d.metadata.name.as_deref().unwrap_or_default()
}

/// Prints the Deployments of `namespace` as the cache has them.
fn print_cached(lister: &Lister<Deployment>, namespace: &str) {
    let mut names: Vec<String> = lister
        .namespaced(namespace)
        .list(&Selector::everything())
        .iter()
        .map(|d| name(d).to_string())
        .collect();
    names.sort();
    println!("  deployments in {namespace} (from the cache): {names:?}");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let config = flags.config().await?;
    let namespace = flags.namespace_or_default(&config);
    let clientset = Clientset::new(&config)?;

    let factory = SharedInformerFactory::builder(clientset)
        .namespace(&namespace)
        .default_resync(Duration::from_secs(60))
        .build();
    let deployments = factory.apps_v1().deployments();
    let lister = deployments.lister();
    let (l1, l2, l3) = (lister.clone(), lister.clone(), lister.clone());
    let (n1, n2, n3) = (namespace.clone(), namespace.clone(), namespace.clone());
    deployments.informer().add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(move |d: &Arc<Deployment>, _| {
                println!("add: {}", name(d));
                print_cached(&l1, &n1);
            })
            .on_update(move |old: &Arc<Deployment>, new: &Arc<Deployment>| {
                let resync = old.metadata.resource_version == new.metadata.resource_version;
                println!(
                    "update: {}{}",
                    name(new),
                    if resync { " (resync)" } else { "" }
                );
                print_cached(&l2, &n2);
            })
            .on_delete(move |d: &MaybeTombstone<Deployment>| {
                println!("delete: {}", name(d.object()));
                print_cached(&l3, &n3);
            }),
    );

    let cancel = shutdown_signal();
    factory.start();
    let synced = factory.wait_for_cache_sync(&cancel).await;
    if !synced.values().all(|ok| *ok) {
        anyhow::bail!("caches did not sync: {synced:?}");
    }
    println!("synced; watching Deployments in {namespace} (Ctrl-C to stop)");
    cancel.cancelled().await;
    factory.shutdown().await;
    Ok(())
}
