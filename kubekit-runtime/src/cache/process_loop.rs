//! [`ProcessLoop`]: the process loop under every informer (client-go's `cache.Controller`
//! built from a `cache.Config`). Its name tells it from the controllers that reconcile
//! (a [`Runner`](crate::controller::Runner), a manager's controller); its former name,
//! `cache::Controller`, stays deprecated for one release.
//!
//! # Contract
//!
//! - [`ProcessLoop::run`] starts a [`Reflector`] that fills the [`DeltaFifo`] and pops the
//!   FIFO, handing each key's deltas to the process function, one key at a time, until
//!   the cancellation token fires. It then closes the FIFO and returns once the reflector
//!   has stopped. A reflector that panics is reported to its watch-error handler and
//!   restarted after its backoff ([`Reflector::run_restarting`]): it never stops
//!   silently while the loop runs.
//! - A process function that fails has its error logged; with
//!   [`ProcessLoopConfig::retry_on_error`] the deltas are put back (unless the key was
//!   queued again meanwhile, whose newer deltas win).
//! - [`ProcessLoop::has_synced`] is the FIFO's: true once the first list has been popped
//!   and processed.
//!
//! ```no_run
//! # async fn demo(rest: kubekit::rest::RestClient) {
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::cache::{ProcessLoop, ProcessLoopConfig, DeltaFifo, ListWatch};
//! use kubekit::clientset::ResourceClient;
//! use tokio_util::sync::CancellationToken;
//!
//! let lw = ListWatch::new(ResourceClient::<ConfigMap>::namespaced(rest, "demo"));
//! let process_loop = ProcessLoop::new(ProcessLoopConfig::new(
//!     Arc::new(DeltaFifo::new(None)),
//!     Arc::new(lw),
//!     Arc::new(|deltas: &kubekit::cache::Deltas<ConfigMap>| {
//!         println!("{}: {:?}", deltas.key, deltas.newest().kind);
//!         Ok(())
//!     }),
//! ));
//! process_loop.run(CancellationToken::new()).await;
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use tokio_util::sync::CancellationToken;

use futures_util::future::BoxFuture;

use super::delta_fifo::{Closed, DeltaFifo, Deltas};
use super::listwatch::ListerWatcher;
use super::reflector::{Reflector, ReflectorOptions, ReflectorRunner, ShouldResync};

/// The error a process function returns.
pub type ProcessError = Box<dyn std::error::Error + Send + Sync>;

/// Handles the deltas of one key.
pub type ProcessFunc<K> = Arc<dyn Fn(&Deltas<K>) -> Result<(), ProcessError> + Send + Sync>;

/// What a [`ProcessLoop`] is made of (client-go's `cache.Config`).
pub struct ProcessLoopConfig<K> {
    /// The queue the reflector fills and the loop pops.
    pub queue: Arc<DeltaFifo<K>>,
    /// How objects are listed and watched.
    pub lister_watcher: Arc<dyn ListerWatcher<K>>,
    /// Called with each key's deltas.
    pub process: ProcessFunc<K>,
    /// Reflector options (name, page size, transform, watch-error handler, …); its
    /// `resync_period` and `should_resync` are the two fields below.
    pub reflector: ReflectorOptions<K>,
    /// How often the FIFO is resynced (zero: never).
    pub full_resync_period: Duration,
    /// Consulted at each resync tick.
    pub should_resync: Option<ShouldResync>,
    /// Put the deltas back when `process` fails.
    pub retry_on_error: bool,
}

impl<K: 'static> fmt::Debug for ProcessLoopConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessLoopConfig")
            .field("queue", &self.queue)
            .field("lister_watcher", &self.lister_watcher.describe())
            .field("reflector", &self.reflector)
            .field("full_resync_period", &self.full_resync_period)
            .field("retry_on_error", &self.retry_on_error)
            .finish_non_exhaustive()
    }
}

impl<K> ProcessLoopConfig<K> {
    /// A configuration with client-go's defaults: no resync, no retry.
    pub fn new(
        queue: Arc<DeltaFifo<K>>,
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        process: ProcessFunc<K>,
    ) -> Self {
        Self {
            queue,
            lister_watcher,
            process,
            reflector: ReflectorOptions::default(),
            full_resync_period: Duration::ZERO,
            should_resync: None,
            retry_on_error: false,
        }
    }
}

/// The list-watch-process loop; see the [module docs](self).
pub struct ProcessLoop<K> {
    processing: Arc<Processing<K>>,
    reflector: Arc<Reflector<K>>,
    name: String,
}

impl<K: 'static> fmt::Debug for ProcessLoop<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessLoop")
            .field("name", &self.name)
            .field("queue", &self.processing.queue)
            .field("reflector", &self.reflector)
            .finish_non_exhaustive()
    }
}

impl<K> ProcessLoop<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// A process loop from its configuration.
    pub fn new(config: ProcessLoopConfig<K>) -> Self {
        let mut opts = config.reflector;
        opts.resync_period = config.full_resync_period;
        opts.should_resync = config.should_resync;
        let name = opts.name.clone();
        let store = config.queue.erased_store();
        let reflector = Reflector::into_erased_store(config.lister_watcher, store, opts);
        Self {
            processing: Arc::new(Processing {
                queue: config.queue,
                process: config.process,
                retry_on_error: config.retry_on_error,
            }),
            reflector: Arc::new(reflector),
            name,
        }
    }

    /// The reflector feeding the queue.
    pub fn reflector(&self) -> &Arc<Reflector<K>> {
        &self.reflector
    }

    /// Whether the first list has been processed.
    pub fn has_synced(&self) -> bool {
        self.processing.queue.has_synced()
    }

    /// The resourceVersion the reflector last saw.
    pub fn last_sync_resource_version(&self) -> String {
        self.reflector.last_sync_resource_version()
    }

    /// Runs the reflector and the process loop until `cancel` fires.
    pub fn run(&self, cancel: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        self.erased().run(cancel)
    }

    /// The process loop without its type: its loop is compiled once for every type.
    pub(crate) fn erased(&self) -> ErasedProcessLoop {
        ErasedProcessLoop {
            processing: self.processing.clone(),
            reflector: self.reflector.runner(),
            name: self.name.clone(),
        }
    }
}

/// A process loop's queue and process function.
struct Processing<K> {
    queue: Arc<DeltaFifo<K>>,
    process: ProcessFunc<K>,
    retry_on_error: bool,
}

/// What the loop of a process loop of any type does with its queue.
trait ProcessNext: Send + Sync {
    /// Pops the next key and processes its deltas: on failure, the key and the error (the
    /// deltas put back first with `retry_on_error`).
    fn process_next(&self) -> BoxFuture<'_, Result<Option<(String, ProcessError)>, Closed>>;
    /// Closes the queue.
    fn close(&self);
}

impl<K: Resource + Send + Sync + 'static> ProcessNext for Processing<K> {
    fn process_next(&self) -> BoxFuture<'_, Result<Option<(String, ProcessError)>, Closed>> {
        Box::pin(async move {
            let (deltas, result) = self
                .queue
                .pop(|deltas| {
                    let result = (self.process)(&deltas);
                    (deltas, result)
                })
                .await?;
            let Err(e) = result else {
                return Ok(None);
            };
            let key = deltas.key.clone();
            if self.retry_on_error {
                self.queue.add_if_not_present(deltas);
            }
            Ok(Some((key, e)))
        })
    }

    fn close(&self) {
        self.queue.close();
    }
}

/// A [`ProcessLoop`] of any type, to run.
pub(crate) struct ErasedProcessLoop {
    processing: Arc<dyn ProcessNext>,
    reflector: ReflectorRunner,
    name: String,
}

impl ErasedProcessLoop {
    /// [`ProcessLoop::run`].
    pub(crate) async fn run(self, cancel: CancellationToken) {
        let reflector_cancel = cancel.child_token();
        let reflector_task = self.reflector.spawn_restarting(reflector_cancel.clone());
        loop {
            let processed = tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                processed = self.processing.process_next() => processed,
            };
            match processed {
                Err(_closed) => break,
                Ok(None) => {}
                Ok(Some((key, e))) => {
                    tracing::warn!(controller = %self.name, %key, "processing failed: {e}");
                }
            }
        }
        reflector_cancel.cancel();
        self.processing.close();
        if let Err(e) = reflector_task.await {
            tracing::error!(controller = %self.name, "reflector task failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::cache::test_support::{Fake, Script};

    /// Lets the runtime's other tasks run until they wait.
    async fn settle() {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    }

    /// A process loop of `config` running on a task, once its first steps have run.
    async fn started(
        config: ProcessLoopConfig<ConfigMap>,
    ) -> (
        Arc<ProcessLoop<ConfigMap>>,
        CancellationToken,
        tokio::task::JoinHandle<()>,
    ) {
        let process_loop = Arc::new(ProcessLoop::new(config));
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (process_loop, cancel) = (process_loop.clone(), cancel.clone());
            async move { process_loop.run(cancel).await }
        });
        settle().await;
        (process_loop, cancel, task)
    }

    /// Runs a process loop whose process function fails the first time; returns how many
    /// times it was called.
    async fn calls_with_one_failure(retry_on_error: bool) -> usize {
        let script = Arc::new(Script::default());
        script.list("10", None, &[("a", "1")]);
        let _events = script.watch();
        let calls = Arc::new(AtomicUsize::new(0));
        let mut config = ProcessLoopConfig::new(
            Arc::new(DeltaFifo::new(None)),
            Arc::new(Fake(script)),
            Arc::new({
                let calls = calls.clone();
                move |_: &Deltas<ConfigMap>| -> Result<(), ProcessError> {
                    match calls.fetch_add(1, Ordering::SeqCst) {
                        0 => Err("transient".into()),
                        _ => Ok(()),
                    }
                }
            }),
        );
        config.retry_on_error = retry_on_error;
        let (process_loop, cancel, task) = started(config).await;
        cancel.cancel();
        task.await.unwrap();
        assert_eq!(process_loop.last_sync_resource_version(), "10");
        calls.load(Ordering::SeqCst)
    }

    /// A lister-watcher whose first list panics.
    struct PanicsOnce(Fake, std::sync::atomic::AtomicBool);

    impl ListerWatcher<ConfigMap> for PanicsOnce {
        fn list(
            &self,
            opts: kubekit_client::clientset::ListOptions,
        ) -> futures_util::future::BoxFuture<
            '_,
            kubekit_client::rest::Result<kubekit_client::rest::ObjectList<ConfigMap>>,
        > {
            assert!(self.1.swap(true, Ordering::SeqCst), "first list panics");
            self.0.list(opts)
        }
        fn watch(
            &self,
            opts: kubekit_client::clientset::ListOptions,
        ) -> futures_util::future::BoxFuture<
            '_,
            kubekit_client::rest::Result<kubekit_client::clientset::WatchStream<ConfigMap>>,
        > {
            self.0.watch(opts)
        }
        fn describe(&self) -> String {
            self.0.describe()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_reflector_is_reported_and_restarted_after_the_backoff() {
        let script = Arc::new(Script::default());
        script.list("10", None, &[("a", "1")]);
        let _events = script.watch();
        let errors = Arc::new(parking_lot::Mutex::new(Vec::<String>::new()));
        let mut config = ProcessLoopConfig::new(
            Arc::new(DeltaFifo::new(None)),
            Arc::new(PanicsOnce(Fake(script.clone()), Default::default())),
            Arc::new(|_: &Deltas<ConfigMap>| Ok(())),
        );
        config.reflector.backoff.jitter = 0.0;
        config.reflector.watch_error_handler = Some({
            let errors = errors.clone();
            Arc::new(move |e: &kubekit_client::rest::Error| errors.lock().push(e.to_string()))
        });
        let (process_loop, cancel, task) = started(config).await;
        assert!(!process_loop.has_synced());
        assert_eq!(errors.lock().len(), 1);
        assert!(
            errors.lock()[0]
                .contains("the reflector of configmaps.v1 (scripted): panicked: first list panics"),
            "{:?}",
            errors.lock()
        );
        assert!(script.kinds().is_empty());
        tokio::time::advance(Duration::from_millis(800)).await;
        settle().await;
        assert_eq!(script.kinds(), ["list", "watch"], "restarted");
        assert!(process_loop.has_synced());
        assert_eq!(process_loop.last_sync_resource_version(), "10");
        cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn failed_deltas_are_processed_again_only_with_retry_on_error() {
        assert_eq!(calls_with_one_failure(true).await, 2);
        assert_eq!(calls_with_one_failure(false).await, 1);
    }
}
