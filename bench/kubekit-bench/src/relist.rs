//! The relist memory benchmark: memory held by an informer over N ConfigMaps (or Pods of
//! one of `kubekit-bench informer`'s shapes) in steady state, and the peak while it relists
//! them all from the real API server.
//!
//! client-go's informer holds two full copies of its objects at the peak of a relist (the
//! cache and the freshly decoded list). kubekit's reflector shares the cached object when a
//! relisted one has the same resourceVersion, so the peak should stay near the steady
//! state plus one page of objects.
//!
//! How: N ConfigMaps with ~1 KiB of data each are created in a fresh namespace (or, with
//! `--shape`, N Pods of that shape with their status, spread over the informer benchmark's
//! namespaces); an informer syncs them; the process's resident memory (`VmRSS`) is the
//! steady state. The high-water mark is reset (`/proc/self/clear_refs`), then the watch is
//! answered with one `410 Gone` — injected into the real watch stream by a wrapping
//! lister-watcher — which makes the reflector relist from the real server; `VmHWM` after
//! the relist is its peak.
//! The baseline (`VmRSS` before the informer starts) is subtracted from both. The
//! namespaces are deleted at the end.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::{StreamExt, stream};
use informer_protocol::Kind;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::Resource;
use kubekit::cache::{Compact, ListWatch, ListerWatcher, SharedIndexInformer};
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, ListOptions, ResourceClient, WatchStream,
};
use kubekit::rest::{ObjectList, RestConfig, Result, WatchEvent};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::informer::{Cluster, Shape};

/// Command-line options of `kubekit-bench relist`.
pub struct Options {
    kubeconfig: PathBuf,
    objects: usize,
    /// Cache `Compact<K>` instead of typed objects.
    compact: bool,
    /// Cache Pods of this shape instead of ConfigMaps.
    shape: Option<Shape>,
}

impl Options {
    /// Parses `--kubeconfig PATH [--objects N] [--compact] [--shape pods-small|pods-typical|pods-large]`.
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut kubeconfig = None;
        let mut objects = 10_000;
        let mut compact = false;
        let mut shape = None;
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--compact" => compact = true,
                "--kubeconfig" => kubeconfig = Some(PathBuf::from(value("--kubeconfig")?)),
                "--shape" => shape = Some(pod_shape(&value("--shape")?)?),
                "--objects" => {
                    objects = value("--objects")?
                        .parse()
                        .map_err(|e| format!("--objects: {e}"))?
                }
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        Ok(Self {
            kubeconfig: kubeconfig.ok_or("--kubeconfig is required")?,
            objects,
            compact,
            shape,
        })
    }
}

/// The Pod shape named `name`: the relist caches Pods or, without a shape, ConfigMaps.
fn pod_shape(name: &str) -> Result<Shape, String> {
    match Shape::parse(name)? {
        shape if shape.kind() == Kind::Pods && shape != Shape::Fixture => Ok(shape),
        _ => Err(format!(
            "--shape {name:?}: the relist caches Pods of pods-small, pods-typical or pods-large \
             (without --shape, ConfigMaps)"
        )),
    }
}

/// A field of `/proc/self/status`, in bytes.
fn proc_status(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Passes lists and watches through; a watch opened after `gone` is set ends with one
/// `410 Gone` event once its first real event arrives (or at once when idle).
struct InjectGone<L> {
    inner: L,
    gone: Arc<AtomicBool>,
    lists: Arc<AtomicUsize>,
}

impl<K: Send + 'static, L: ListerWatcher<K>> ListerWatcher<K> for InjectGone<L> {
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<K>>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(opts)
    }

    fn watch(&self, opts: ListOptions) -> BoxFuture<'_, Result<WatchStream<K>>> {
        let gone = self.gone.clone();
        Box::pin(async move {
            let real = self.inner.watch(opts).await?;
            // Poll the flag alongside the real stream; the first tick after it is set
            // yields the injected error.
            let ticks = stream::unfold(gone, |gone| async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let fire = gone.swap(false, Ordering::SeqCst);
                Some((fire, gone))
            })
            .filter_map(|fire| async move {
                fire.then(|| {
                    Ok(WatchEvent::Error(Box::new(Status {
                        code: Some(410),
                        reason: Some("Expired".into()),
                        message: Some("injected by the benchmark".into()),
                        ..Default::default()
                    })))
                })
            });
            let merged: WatchStream<K> = Box::pin(stream::select(real, ticks));
            Ok(merged)
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

fn config_map(i: usize) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("cm-{i:06}"));
    let (key, value) = CONFIG_MAP_LABEL;
    cm.metadata.labels = Some([(key.to_string(), value.to_string())].into());
    cm.data = Some(
        (0..8)
            .map(|k| (format!("key-{k}"), format!("{i:06}-{}", "x".repeat(120))))
            .collect(),
    );
    cm
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Runs the benchmark and prints its table.
pub fn run(opts: Options) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let config = RestConfig::from_kubeconfig(&opts.kubeconfig)
            .await
            .map_err(|e| e.to_string())?
            .with_rate_limit(1000.0, 2000);
        let cs = Clientset::new(&config).map_err(|e| e.to_string())?;
        if let Some(shape) = opts.shape {
            return relist_pods(&opts, shape, &cs).await;
        }
        let ns = format!("bench-relist-{}", std::process::id());
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some(ns.clone());
        cs.core_v1()
            .namespaces()
            .create(&namespace, &CreateOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let result = create(&cs, &ns, opts.objects).await;
        let result = match (result, opts.compact) {
            (Err(e), _) => Err(e),
            (Ok(()), false) => {
                let client = cs.core_v1().config_maps(&ns);
                measure(client, &Objects::config_maps(opts.objects), "ConfigMap").await
            }
            (Ok(()), true) => {
                let rest = cs.rest_client().clone();
                let client = ResourceClient::<Compact<ConfigMap>>::namespaced(rest, &ns);
                measure(
                    client,
                    &Objects::config_maps(opts.objects),
                    "Compact<ConfigMap>",
                )
                .await
            }
        };
        let _ = cs
            .core_v1()
            .namespaces()
            .delete(&ns, &DeleteOptions::default())
            .await;
        result
    })
}

/// Creates `objects` Pods of `shape` (deleted at the end) and measures their relist.
async fn relist_pods(opts: &Options, shape: Shape, cs: &Clientset) -> Result<(), String> {
    let cluster = Cluster::populate_shape(&opts.kubeconfig, shape, opts.objects).await?;
    let objects = Objects {
        count: opts.objects,
        // Every Pod shape has this label (`informer::shapes::labels`).
        selector: "tier=backend".to_string(),
        described: format!("Pods ({})", shape.name()),
    };
    let rest = cs.rest_client().clone();
    let result = match opts.compact {
        false => measure(ResourceClient::<Pod>::namespaced(rest, ""), &objects, "Pod").await,
        true => {
            let client = ResourceClient::<Compact<Pod>>::namespaced(rest, "");
            measure(client, &objects, "Compact<Pod>").await
        }
    };
    let cleaned = cluster.clean_up().await;
    result.and(cleaned)
}

/// The label of the ConfigMaps of [`create`].
const CONFIG_MAP_LABEL: (&str, &str) = ("bench", "relist");

/// The objects an informer of the relist caches.
struct Objects {
    /// How many.
    count: usize,
    /// The label selector that lists them.
    selector: String,
    /// What they are, in the table's title.
    described: String,
}

impl Objects {
    /// The N ConfigMaps of [`create`].
    fn config_maps(count: usize) -> Self {
        Self {
            count,
            selector: format!("{}={}", CONFIG_MAP_LABEL.0, CONFIG_MAP_LABEL.1),
            described: "ConfigMaps (~1.2 KiB each)".to_string(),
        }
    }
}

/// Creates the N ConfigMaps.
async fn create(cs: &Clientset, ns: &str, objects: usize) -> Result<(), String> {
    let cms: ResourceClient<ConfigMap> = cs.core_v1().config_maps(ns);
    let started = Instant::now();
    let failures: Vec<String> = stream::iter(0..objects)
        .map(|i| {
            let cms = cms.clone();
            async move { cms.create(&config_map(i), &CreateOptions::default()).await }
        })
        .buffer_unordered(16)
        .filter_map(|r| async move { r.err().map(|e| e.to_string()) })
        .collect()
        .await;
    if let Some(e) = failures.first() {
        return Err(format!(
            "creating ConfigMaps: {} failed, first: {e}",
            failures.len()
        ));
    }
    eprintln!("created {objects} ConfigMaps in {:.1?}", started.elapsed());
    Ok(())
}

/// Syncs an informer of `K` (named `cached_as`) over `objects`, then relists.
async fn measure<K>(
    client: ResourceClient<K>,
    objects: &Objects,
    cached_as: &str,
) -> Result<(), String>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
{
    let baseline = proc_status("VmRSS");
    let selector = objects.selector.clone();
    let gone = Arc::new(AtomicBool::new(false));
    let lists = Arc::new(AtomicUsize::new(0));
    let lw = InjectGone {
        inner: ListWatch::new(client)
            .with_tweak(move |o| o.label_selector = Some(selector.clone())),
        gone: gone.clone(),
        lists: lists.clone(),
    };
    let informer = Arc::new(SharedIndexInformer::new(Arc::new(lw), Duration::ZERO));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    informer.wait_for_sync(&cancel).await;
    if informer.indexer().len() != objects.count {
        return Err(format!(
            "synced {} objects, expected {}",
            informer.indexer().len(),
            objects.count
        ));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let steady = proc_status("VmRSS").saturating_sub(baseline);

    std::fs::write("/proc/self/clear_refs", "5")
        .map_err(|e| format!("cannot reset the RSS high-water mark: {e}"))?;
    let before = informer.last_sync_resource_version();
    let lists_before = lists.load(Ordering::SeqCst);
    let relist_started = Instant::now();
    gone.store(true, Ordering::SeqCst);
    // The relist is done once a new list ran and the informer is watching again.
    while lists.load(Ordering::SeqCst) == lists_before
        || informer.last_sync_resource_version() == before
            && relist_started.elapsed() < Duration::from_secs(60)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let peak = proc_status("VmHWM").saturating_sub(baseline);
    let after = proc_status("VmRSS").saturating_sub(baseline);
    cancel.cancel();
    let _ = task.await;

    println!(
        "relist of {} {} cached as {cached_as}, memory above the process baseline",
        objects.count, objects.described
    );
    println!("{:<34}{:>10}", "state", "MiB");
    println!("{:<34}{:>10.1}", "steady (synced, watching)", mib(steady));
    println!("{:<34}{:>10.1}", "peak during relist (VmHWM)", mib(peak));
    println!("{:<34}{:>10.1}", "after relist", mib(after));
    println!(
        "peak / steady: {:.2}  (two full copies would be ~2.0)",
        peak as f64 / steady.max(1) as f64
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Options, String> {
        Options::parse(line.split_whitespace().map(str::to_string))
    }

    #[test]
    fn a_pod_shape_makes_the_relist_cache_pods_and_configmaps_are_the_default() {
        let pods = parse("--kubeconfig k --shape pods-typical --compact").unwrap();
        assert_eq!(pods.shape, Some(Shape::PodsTypical));
        assert!(pods.compact);
        assert_eq!(parse("--kubeconfig k").unwrap().shape, None);
    }

    #[test]
    fn shapes_that_are_not_pods_are_refused_with_the_ones_that_are() {
        for shape in ["configmaps", "fixture", "nodes"] {
            let e = parse(&format!("--kubeconfig k --shape {shape}"))
                .err()
                .unwrap();
            assert!(e.contains("pods-typical"), "{shape}: {e}");
        }
        assert!(parse("--kubeconfig k --shape pod").is_err());
        assert!(parse("--kubeconfig k --shape").is_err());
    }
}
