//! Forwards local ports to a Pod's ports, like `kubectl port-forward`: client-go's
//! `portforward` package. Runs until Ctrl-C.
//!
//! ```text
//! cargo run -p kubekit-examples --bin port-forward -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS] POD [LOCAL:]REMOTE...
//! ```
//!
//! Each mapping is written as kubectl takes it: `8080:80`, `80` (the same port locally),
//! `:80` (any free local port). Listens on 127.0.0.1 and prints where each port is.

use anyhow::bail;
use kubekit::clientset::Clientset;
use kubekit::pods::PortMapping;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let Some((pod, mappings)) = flags.args.split_first().filter(|(_, m)| !m.is_empty()) else {
        bail!("usage: port-forward [flags] POD [LOCAL:]REMOTE...");
    };
    let mappings = mappings
        .iter()
        .map(|m| m.parse::<PortMapping>())
        .collect::<Result<Vec<_>, _>>()?;
    let config = flags.config().await?;
    let namespace = flags.namespace_or_default(&config);
    let pods = Clientset::new(&config)?.core_v1().pods(&namespace);

    let forward = pods
        .port_forward(pod, std::net::Ipv4Addr::LOCALHOST.into(), &mappings)
        .await?;
    for port in forward.ports() {
        println!("Forwarding from {} -> {}", port.local, port.remote);
    }
    tokio::signal::ctrl_c().await?;
    forward.stop().await;
    Ok(())
}
