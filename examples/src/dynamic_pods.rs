//! Lists the pods of a namespace through kubekit's dynamic client, by group/version/
//! resource, and converts each unstructured object into a typed `Pod`, the way client-go's
//! dynamic client example does.
//!
//! ```text
//! cargo run -p kubekit-examples --bin dynamic-pods -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS]
//! ```
//!
//! Without `--namespace`, the namespace of the kubeconfig's context is used.

use k8s_openapi::api::core::v1::Pod;
use kubekit::clientset::ListOptions;
use kubekit::dynamic::DynamicClient;
use kubekit::meta::GroupVersionResource;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let config = flags.config().await?;
    let namespace = flags.namespace_or_default(&config);
    let dynamic = DynamicClient::new(&config)?;

    let gvr = GroupVersionResource::new("", "v1", "pods");
    let list = dynamic
        .resource(&gvr)
        .namespace(&namespace)
        .list(&ListOptions::default().limit(500))
        .await?;
    println!(
        "{} {gvr} object(s) in namespace {namespace}",
        list.items.len()
    );
    println!("{:<40} {:<12} {:<10} CONTAINERS", "NAME", "KIND", "PHASE");
    for obj in list.items {
        let kind = format!("{} {}", obj.api_version, obj.kind);
        let pod: Pod = obj.into_typed()?;
        let containers: Vec<&str> = pod
            .spec
            .iter()
            .flat_map(|s| &s.containers)
            .map(|c| c.name.as_str())
            .collect();
        println!(
            "{:<40} {:<12} {:<10} {}",
            pod.metadata.name.as_deref().unwrap_or(""),
            kind,
            pod.status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("Unknown"),
            containers.join(","),
        );
    }
    for skipped in &list.skipped {
        eprintln!("skipped an object that did not decode: {skipped}");
    }
    Ok(())
}
