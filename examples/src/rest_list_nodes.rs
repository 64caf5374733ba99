//! Lists the cluster's nodes through kubekit's `RestClient`, the way client-go's
//! RESTClient example does: verb, API group/version, resource, then decode.
//!
//! ```text
//! cargo run -p kubekit-examples --bin rest-list-nodes -- [--kubeconfig PATH] [--master URL]
//! ```

use k8s_openapi::api::core::v1::Node;
use kubekit::rest::RestClient;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let config = flags.config().await?;
    let client = RestClient::new(&config)?;

    let nodes = client
        .get()
        .group_version("", "v1")
        .resource("nodes")
        .param("limit", "500")
        .send()
        .await?
        .decode_list::<Node>()?;
    println!(
        "{} node(s) at resourceVersion {}",
        nodes.items.len(),
        nodes.metadata.resource_version.unwrap_or_default()
    );
    for node in &nodes.items {
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .map_or("Unknown", |c| c.status.as_str());
        println!(
            "{:<40} Ready={ready}",
            node.metadata.name.as_deref().unwrap_or("")
        );
    }
    Ok(())
}
