//! Waits until a Pod is Ready, the way `kubectl wait --for=condition=Ready pod/POD` does:
//! one read, then a watch of that Pod that survives the server closing it
//! (`watch::RetryWatcher`), until its `Ready` condition is `True`, it is deleted, or the
//! timeout passes.
//!
//! ```text
//! cargo run -p kubekit-examples --bin wait-pod-ready -- \
//!     [--kubeconfig PATH] [--master URL] [--namespace NS] POD [TIMEOUT_SECONDS]
//! ```
//!
//! Exits 0 once the Pod is Ready (at once if it already is), and with an error if it is
//! deleted, missing or not Ready within the timeout (default 60 s). Without
//! `--namespace`, the namespace of the kubeconfig's context is used.

use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Pod;
use kubekit::cache::ListWatch;
use kubekit::clientset::{Clientset, GetOptions};
use kubekit::rest::WatchEvent;
use kubekit::watch::RetryWatcher;

fn is_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    let ready = conditions
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready");
    ready.is_some_and(|c| c.status == "True")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = kubekit_examples::Flags::parse()?;
    let (name, timeout) = match flags.args.as_slice() {
        [name] => (name.clone(), 60),
        [name, secs] => (name.clone(), secs.parse().context("TIMEOUT_SECONDS")?),
        _ => bail!("usage: wait-pod-ready [flags] POD [TIMEOUT_SECONDS]"),
    };
    let config = flags.config().await?;
    let namespace = flags.namespace_or_default(&config);
    let pods = Clientset::new(&config)?.core_v1().pods(&namespace);

    let pod = pods.get(&name, &GetOptions::default()).await?;
    if is_ready(&pod) {
        println!("pod/{name} is Ready");
        return Ok(());
    }
    let from = pod.metadata.resource_version.unwrap_or_default();
    let selector = format!("metadata.name={name}");
    let this_pod =
        ListWatch::new(pods).with_tweak(move |o| o.field_selector = Some(selector.clone()));
    let mut watcher = RetryWatcher::new(this_pod, &from)?;
    let ready_or_gone = watcher.until(|event| match event {
        WatchEvent::Deleted(_) => true,
        event => event.object().is_some_and(is_ready),
    });
    match tokio::time::timeout(Duration::from_secs(timeout), ready_or_gone).await {
        Err(_) => bail!("timed out after {timeout} s waiting for pod/{name} to be Ready"),
        Ok(Err(e)) => Err(e).context(format!("watching pod/{name}")),
        Ok(Ok(WatchEvent::Deleted(_))) => bail!("pod/{name} was deleted before it was Ready"),
        Ok(Ok(_)) => {
            println!("pod/{name} is Ready");
            Ok(())
        }
    }
}
