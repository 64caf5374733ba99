//! A kube-runtime reflector over Pods, as a kube-rs user's first program: syncs the Pods of
//! the cluster the kubeconfig (or the Pod's service account) points at, prints each applied
//! Pod's name and then their count.

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pods: Api<Pod> = Api::all(Client::try_default().await?);
    let (reader, writer) = reflector::store();
    let events = watcher(pods, watcher::Config::default())
        .default_backoff()
        .reflect(writer);
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        match event? {
            watcher::Event::InitApply(pod) | watcher::Event::Apply(pod) => {
                println!("applied {}", pod.metadata.name.as_deref().unwrap_or_default());
            }
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    println!("synced: {} pods", reader.state().len());
    Ok(())
}
