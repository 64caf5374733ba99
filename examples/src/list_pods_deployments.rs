//! Lists the pods and deployments of a namespace through kubekit's typed clientset, the
//! way client-go's clientset example does: `core_v1().pods(ns)`, `apps_v1().deployments(ns)`.
//!
//! ```text
//! cargo run -p kubekit-examples --bin list-pods-deployments -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS]
//! ```
//!
//! Without `--namespace`, the namespace of the kubeconfig's context is used.

use kubekit::clientset::{Clientset, ListOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let config = flags.config().await?;
    let namespace = flags.namespace_or_default(&config);
    let clientset = Clientset::new(&config)?;
    let page = ListOptions::default().limit(500);

    let pods = clientset.core_v1().pods(&namespace).list(&page).await?;
    println!("{} pod(s) in namespace {namespace}", pods.items.len());
    println!("{:<40} {:<10} NODE", "NAME", "PHASE");
    for pod in &pods.items {
        let status = pod.status.as_ref();
        println!(
            "{:<40} {:<10} {}",
            pod.metadata.name.as_deref().unwrap_or(""),
            status.and_then(|s| s.phase.as_deref()).unwrap_or("Unknown"),
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .unwrap_or("<none>"),
        );
    }

    let deployments = clientset
        .apps_v1()
        .deployments(&namespace)
        .list(&page)
        .await?;
    println!();
    println!(
        "{} deployment(s) in namespace {namespace}",
        deployments.items.len()
    );
    println!(
        "{:<40} {:<8} {:<10} AVAILABLE",
        "NAME", "READY", "UP-TO-DATE"
    );
    for d in &deployments.items {
        let desired = d.spec.replicas.unwrap_or(1);
        let status = d.status.clone().unwrap_or_default();
        println!(
            "{:<40} {:<8} {:<10} {}",
            d.metadata.name.as_deref().unwrap_or(""),
            format!("{}/{desired}", status.ready_replicas.unwrap_or(0)),
            status.updated_replicas.unwrap_or(0),
            status.available_replicas.unwrap_or(0),
        );
    }
    for skipped in pods.skipped.iter().chain(&deployments.skipped) {
        eprintln!("skipped an object that did not decode: {skipped}");
    }
    Ok(())
}
