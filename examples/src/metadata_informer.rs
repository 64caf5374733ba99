//! A metadata informer (client-go's `metadatainformer`): a shared informer over the
//! metadata of any resource — names, labels, owners, resourceVersions — without the
//! objects' spec, status or data, which the API server leaves out before sending.
//!
//! ```text
//! cargo run -p kubekit-examples --bin metadata-informer -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS] [GROUP/VERSION/RESOURCE]
//! ```
//!
//! The resource defaults to `v1/pods`; e.g. `v1/secrets` lists Secrets without reading a
//! byte of their data. Prints every add, update and delete with the object's
//! namespace/name, resourceVersion, labels and controlling owner; once synced, how many
//! objects are cached and whether the server sent them as `PartialObjectMetadata`.
//! `managedFields` are dropped before objects are stored. Without `--namespace`, all
//! namespaces are watched. Stop with Ctrl-C.

use std::sync::Arc;

use kubekit::cache::{
    MaybeTombstone, ResourceEventHandlerFuncs, deletion_handling_meta_namespace_key,
};
use kubekit::controller::shutdown_signal;
use kubekit::labels::Selector;
use kubekit::meta::controller_of;
use kubekit::metadata::PartialObjectMetadata;

fn describe(obj: &PartialObjectMetadata) -> String {
    let meta = &obj.metadata;
    let owner =
        controller_of(meta).map_or_else(|| "-".into(), |o| format!("{}/{}", o.kind, o.name));
    format!(
        "{}/{} (resourceVersion {}) labels {:?} controller {owner}",
        meta.namespace.as_deref().unwrap_or("-"),
        meta.name.as_deref().unwrap_or("?"),
        meta.resource_version.as_deref().unwrap_or("?"),
        meta.labels.clone().unwrap_or_default(),
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let resource = match flags.args.as_slice() {
        [] => "v1/pods",
        [resource] => resource.as_str(),
        _ => anyhow::bail!(
            "usage: metadata-informer [--kubeconfig PATH] [--namespace NS] [GROUP/VERSION/RESOURCE]"
        ),
    };
    let gvr = kubekit_examples::parse_gvr(resource)?;
    let factory = flags.informer_factory().await?;
    let informer = factory.for_metadata(&gvr);
    informer.informer().add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(|o: &Arc<PartialObjectMetadata>, _| println!("add {}", describe(o)))
            .on_update(
                |_: &Arc<PartialObjectMetadata>, o: &Arc<PartialObjectMetadata>| {
                    println!("update {}", describe(o))
                },
            )
            .on_delete(|o: &MaybeTombstone<PartialObjectMetadata>| {
                let key = deletion_handling_meta_namespace_key(o).unwrap_or_default();
                println!("delete {key}")
            }),
    );
    let cancel = shutdown_signal();
    factory.start();
    let synced = factory.wait_for_cache_sync(&cancel).await;
    if !synced.values().all(|ok| *ok) {
        anyhow::bail!(
            "the metadata informer of {gvr} did not sync: is the resource served? {synced:?}"
        );
    }
    let cached = informer.lister().list(&Selector::everything());
    let partial = cached.iter().filter(|o| o.is_partial()).count();
    println!(
        "synced the metadata of {} {gvr} object(s), {partial} sent as PartialObjectMetadata; \
         watching (Ctrl-C to stop)",
        cached.len()
    );
    cancel.cancelled().await;
    factory.shutdown().await;
    Ok(())
}
