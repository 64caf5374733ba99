//! kube-rs's peer of the informer benchmark (see `bench/README.md`): a kube-runtime
//! reflector and store over every Pod, as kube-rs users write one, reporting on stdout in
//! the protocol of [`informer_protocol`].
//!
//! Usage: `kube-rs-informer (--server URL | --kubeconfig PATH) [--updates M] [--resource
//! R]`; with `--resource` the reflector caches another kind (deployments, configmaps,
//! secrets, events, nodes, or the benchmark's custom resource [`Widget`]) instead of Pods.
//!
//! The watcher has kube-rs's default configuration (paged lists of 500, then a watch with
//! bookmarks) and its default backoff; the client has no client-side rate limit (kube has
//! none). The cache has synced at the `InitDone` event; every `Apply` event after it is an
//! update. The process uses the system allocator, as kube-rs users do by default.

use std::process::ExitCode;
use std::time::Instant;

use futures::{Stream, StreamExt};
use informer_protocol::widget::Widget;
use informer_protocol::{Kind, PeerOptions, Target, UpdateTimer, report_synced, report_updated};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod, Secret};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client};

/// The name the peer reports.
const CLIENT: &str = "kube-rs";

fn main() -> ExitCode {
    let options = match PeerOptions::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            eprintln!(
                "kube-rs-informer: {e}\nusage: kube-rs-informer {}",
                PeerOptions::USAGE
            );
            return ExitCode::from(2);
        }
    };
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))
        .and_then(|runtime| runtime.block_on(run(options)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kube-rs-informer: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn config(target: &Target) -> Result<kube::Config, String> {
    match target {
        Target::Server(url) => {
            let url = url.parse().map_err(|e| format!("--server {url:?}: {e}"))?;
            Ok(kube::Config::new(url))
        }
        Target::Kubeconfig(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| format!("kubeconfig {}: {e}", path.display()))
        }
    }
}

/// Polls `events` until `stop` says the event is the one waited for. Errors are logged
/// and the watcher retries them after its backoff, as an application's would.
async fn next_matching<S, K>(
    events: &mut S,
    mut stop: impl FnMut(&watcher::Event<K>) -> bool,
) -> Result<(), String>
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    loop {
        match events.next().await {
            Some(Ok(event)) if stop(&event) => return Ok(()),
            Some(Ok(_)) => {}
            Some(Err(e)) => eprintln!("kube-rs-informer: watcher: {e}"),
            None => return Err("the watch stream ended".into()),
        }
    }
}

async fn run(options: PeerOptions) -> Result<(), String> {
    let client = Client::try_from(config(&options.target).await?).map_err(|e| e.to_string())?;
    match options.kind {
        Kind::Pods => reflect(Api::<Pod>::all(client), &options).await,
        Kind::Deployments => reflect(Api::<Deployment>::all(client), &options).await,
        Kind::ConfigMaps => reflect(Api::<ConfigMap>::all(client), &options).await,
        Kind::Secrets => reflect(Api::<Secret>::all(client), &options).await,
        Kind::Events => reflect(Api::<Event>::all(client), &options).await,
        Kind::Nodes => reflect(Api::<Node>::all(client), &options).await,
        Kind::Widgets => reflect(Api::<Widget>::all(client), &options).await,
    }
}

/// Syncs a reflector over every object of `api`, then counts updates.
async fn reflect<K>(api: Api<K>, options: &PeerOptions) -> Result<(), String>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (reader, writer) = reflector::store();

    let started = Instant::now();
    let events = watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer);
    let mut events = std::pin::pin!(events);
    next_matching(&mut events, |event| {
        matches!(event, watcher::Event::InitDone)
    })
    .await?;
    let sync_seconds = started.elapsed().as_secs_f64();
    report_synced(CLIENT, sync_seconds, || reader.state().len())?;

    if options.updates > 0 {
        let mut timer = UpdateTimer::new(options.updates);
        let mut seconds = 0.0;
        next_matching(&mut events, |event| {
            let watcher::Event::Apply(_) = event else {
                return false;
            };
            timer.record(Instant::now()).map(|s| seconds = s).is_some()
        })
        .await?;
        report_updated(CLIENT, options.updates, seconds)?;
    }
    Ok(())
}
