//! Prints every resource the API server offers (name, group, version), in each group's
//! preferred version, through kubekit's discovery client.
//!
//! ```text
//! cargo run -p kubekit-examples --bin discovery-resources -- [--kubeconfig PATH] [--master URL]
//! ```

use std::io::Write;

use kubekit::discovery::DiscoveryClient;
use kubekit::rest::RestClient;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let config = flags.config().await?;
    let discovery = DiscoveryClient::new(RestClient::new(&config)?);

    let version = discovery.server_version().await?;
    let resources = discovery.server_preferred_resources().await?;
    // Written through a locked handle so a closed pipe (`| head`) ends the program quietly.
    let mut out = std::io::stdout().lock();
    writeln!(out, "server {}", version.git_version)?;
    writeln!(out, "{:<40} {:<36} VERSION", "NAME", "GROUP")?;
    for r in resources {
        writeln!(out, "{:<40} {:<36} {}", r.name, r.group, r.version)?;
    }
    Ok(())
}
