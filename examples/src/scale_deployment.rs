//! Reads and changes the replicas of a Deployment through its `scale` subresource, the way
//! client-go's `scale` client does, without knowing the object's type: the same works for
//! ReplicaSets, StatefulSets and custom resources with a scale subresource.
//!
//! ```text
//! cargo run -p kubekit-examples --bin scale-deployment -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS] NAME [REPLICAS]
//! ```
//!
//! Prints the Deployment's desired and current replicas and its selector; with `REPLICAS`,
//! sets the desired count (an update carrying the read resourceVersion: a concurrent change
//! makes it a conflict, reported, never overwritten). Without `--namespace`, the
//! namespace of the kubeconfig's context is used.

use anyhow::{Context, bail};
use kubekit::clientset::Clientset;
use kubekit::scale::{GroupResource, ScaleClient};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let (name, replicas) = match flags.args.as_slice() {
        [name] => (name.clone(), None),
        [name, n] => (
            name.clone(),
            Some(
                n.parse::<i32>()
                    .with_context(|| format!("REPLICAS {n:?}"))?,
            ),
        ),
        _ => bail!("usage: scale-deployment [flags] NAME [REPLICAS]"),
    };
    let config = flags.config().await?;
    let namespace = flags.namespace_or_default(&config);
    let clientset = Clientset::new(&config)?;
    let scales = ScaleClient::discover(clientset.rest_client().clone()).await?;
    let deployments = GroupResource::new("apps", "deployments");

    let mut scale = scales.get(&deployments, &namespace, &name).await?;
    let desired = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    let status = scale.status.clone().unwrap_or_default();
    println!(
        "deployment {namespace}/{name}: {desired} desired, {} current, selector {:?}",
        status.replicas,
        status.selector.as_deref().unwrap_or("")
    );
    if let Some(replicas) = replicas {
        scale.spec.get_or_insert_with(Default::default).replicas = Some(replicas);
        let written = scales.update(&deployments, &namespace, &scale).await?;
        let now = written.spec.and_then(|s| s.replicas).unwrap_or(0);
        println!("deployment {namespace}/{name}: scaled from {desired} to {now} desired");
    }
    Ok(())
}
