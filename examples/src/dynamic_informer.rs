//! The dynamic informer of the seeds' informer example: a shared informer over any
//! resource named on the command line, objects kept as unstructured JSON.
//!
//! ```text
//! cargo run -p kubekit-examples --bin dynamic-informer -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS] GROUP/VERSION/RESOURCE
//! ```
//!
//! e.g. `apps/v1/deployments`, `v1/configmaps` (core group) or
//! `appcontroller.k8s.io/v1/apps`. Prints every add, update and delete with the object's
//! namespace/name and resourceVersion. Without `--namespace`, all namespaces are watched.
//! Stop with Ctrl-C.

use std::sync::Arc;

use kubekit::cache::{
    MaybeTombstone, ResourceEventHandlerFuncs, deletion_handling_meta_namespace_key,
};
use kubekit::controller::shutdown_signal;
use kubekit::dynamic::Unstructured;

fn describe(obj: &Unstructured) -> String {
    format!(
        "{}/{} (resourceVersion {})",
        obj.namespace().unwrap_or("-"),
        obj.name().unwrap_or("?"),
        obj.resource_version().unwrap_or("?")
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let [resource] = flags.args.as_slice() else {
        anyhow::bail!(
            "usage: dynamic-informer [--kubeconfig PATH] [--namespace NS] GROUP/VERSION/RESOURCE"
        );
    };
    let gvr = kubekit_examples::parse_gvr(resource)?;
    let factory = flags.informer_factory().await?;
    let informer = factory.for_resource(&gvr);
    informer.informer().add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(|o: &Arc<Unstructured>, _| println!("add {} {}", o.kind, describe(o)))
            .on_update(|_: &Arc<Unstructured>, o: &Arc<Unstructured>| {
                println!("update {} {}", o.kind, describe(o))
            })
            .on_delete(|o: &MaybeTombstone<Unstructured>| {
                let key = deletion_handling_meta_namespace_key(o).unwrap_or_default();
                println!("delete {} {key}", o.object().kind)
            }),
    );
    let cancel = shutdown_signal();
    factory.start();
    let synced = factory.wait_for_cache_sync(&cancel).await;
    if !synced.values().all(|ok| *ok) {
        anyhow::bail!("the informer of {gvr} did not sync: is the resource served? {synced:?}");
    }
    println!(
        "synced {} {gvr} object(s); watching (Ctrl-C to stop)",
        informer.informer().indexer().len()
    );
    cancel.cancelled().await;
    factory.shutdown().await;
    Ok(())
}
