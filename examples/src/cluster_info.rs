//! Shows that a cluster is serving: its version, its namespaces and how many API
//! resources it offers.
//!
//! ```text
//! cargo run -p kubekit-examples --bin cluster-info -- [--kubeconfig PATH]
//! ```
//!
//! Without `--kubeconfig` the usual rules apply: `$KUBECONFIG`, then `~/.kube/config`, then
//! the in-cluster service account.

use anyhow::Context;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let config = match (args.next().as_deref(), args.next()) {
        (Some("--kubeconfig"), Some(path)) => {
            let kc = Kubeconfig::read_from(&path).with_context(|| format!("reading {path}"))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
        }
        (None, _) => kube::Config::infer().await?,
        _ => anyhow::bail!("usage: cluster-info [--kubeconfig PATH]"),
    };
    let server = config.cluster_url.clone();
    let client = kube::Client::try_from(config)?;

    let version = client.apiserver_version().await.context("GET /version")?;
    println!("server      {server}");
    println!("version     {} ({})", version.git_version, version.platform);

    let namespaces = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing namespaces")?;
    let names: Vec<_> = namespaces
        .items
        .iter()
        .filter_map(|ns| ns.metadata.name.as_deref())
        .collect();
    println!("namespaces  {}", names.join(" "));

    let core = client.list_core_api_resources("v1").await?;
    let groups = client.list_api_groups().await?;
    let mut resources = core.resources.len();
    for group in &groups.groups {
        if let Some(v) = &group.preferred_version {
            resources += client
                .list_api_group_resources(&v.group_version)
                .await?
                .resources
                .len();
        }
    }
    println!(
        "api         {} groups, {resources} resources (preferred versions)",
        groups.groups.len() + 1
    );
    Ok(())
}
