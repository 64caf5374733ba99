//! The control loop of a controller: workers that take keys from a rate-limited work queue
//! and reconcile them (the `Run` / `runWorker` / `processNextWorkItem` pattern every
//! client-go controller repeats).
//!
//! # Contract
//!
//! - [`Runner::run`] first waits for the caches the controller reads (any future that
//!   resolves to `true` once they have synced, typically
//!   [`SharedInformerFactory::wait_for_cache_sync`](crate::informers::SharedInformerFactory::wait_for_cache_sync)
//!   folded to a `bool`); if they never sync before cancellation, it returns
//!   [`RunError::CachesNotSynced`] and starts no worker.
//! - Then `workers` tasks each loop: get a key, reconcile it, and
//!   - on success **forget** the key (its backoff starts over) and, for
//!     [`ReconcileAction::RequeueAfter`], add it again after that delay;
//!   - on error do what the error's [`ErrorPolicy`] says:
//!     - [`Retry`](ErrorPolicy::Retry) (what `?` on any error gives): re-add it
//!       **rate-limited** while it has been retried fewer than [`Runner::max_retries`]
//!       times, then drop it with an error log;
//!     - [`RequeueAfter`](ErrorPolicy::RequeueAfter): add it again after that delay; its
//!       failure history in the rate limiter is left as it is (neither raised nor
//!       cleared), and `max_retries` does not apply;
//!     - [`Permanent`](ErrorPolicy::Permanent): log it as an error, count it
//!       ([`RunStats::permanent`], `controller_runtime_terminal_reconcile_errors_total`),
//!       forget the key and cancel any retry of it still waiting in the queue. The key is
//!       reconciled again only when something adds it to the queue again: for a
//!       controller, a new event about its object (a change, or a resync). A key added
//!       while its reconcile ran is reconciled again, as always;
//!   - on a **panic** inside the reconcile (or while the reconciler makes its future),
//!     report it (log and
//!     [`RunStats::panics`]) and re-add it rate-limited like an error; the worker goes on;
//!   - a reconcile that outlasts [`Runner::reconcile_timeout`] is dropped and counts as an
//!     error (retried);
//!   - and always mark it **done**, exactly once.
//! - Each reconcile runs in an INFO-level `reconcile` [span](tracing::Span) with the fields
//!   `controller`, `key` (`namespace/name`), `attempt` (the key's retries through the rate
//!   limiter so far, client-go's `NumRequeues`: 0 on a first try) and `reconcile_id` (32 hex
//!   digits, random, different for every reconcile, as controller-runtime's `reconcileID`):
//!   whatever the reconciler logs carries them. kubekit installs no subscriber. The span's
//!   target is `kubekit::controller`: a filter that turns kubekit's INFO off (say
//!   `RUST_LOG=info,kubekit=warn`) drops the span and its fields with it; keep
//!   `kubekit::controller=info` on to have them.
//! - When the cancellation token fires, the queue is shut down: workers finish the keys
//!   in flight *and those still queued*, then `run` returns once every worker has ended.
//!   With [`Runner::graceful_shutdown`] instead, the queued keys are dropped and the
//!   reconciles in flight get a grace period, after which they are dropped too.
//!   [`Runner::run_or_abort`] also takes an `abort` token: when it fires, workers take no
//!   further key and the reconciles in flight are dropped at their next `.await` (what a
//!   controller that lost its leadership must do), their keys put back on the queue; the
//!   queue is left running, so that a later run (once leading again) takes its keys.
//! - A worker task that ends before shutdown (a panic outside the reconcile) is counted in
//!   [`RunStats::workers_died`], which a liveness check reads.
//! - [`shutdown_signal`] gives a token cancelled by the first SIGINT or SIGTERM; a second
//!   signal exits the process at once, as a Go controller's `SetupSignalHandler` does.
//!
//! The reconcile a runner calls is a [`Reconciler`] of keys. The usual one is an
//! [`ObjectReconciler`]: a function of the cached object and a context,
//! `async fn reconcile(obj: Arc<K>, ctx: Arc<C>) -> Result<ReconcileAction, E>`, the
//! signature a manager's controllers take, so one reconcile function runs under either.
//! A reconciler that works on keys itself (to act on a key whose object is gone, say, as
//! client-go's workqueue example does) implements [`Reconciler`] (returns a boxed future;
//! usable as a trait object) or, more simply, [`AsyncReconciler`] (an `async fn`):
//!
//! ```no_run
//! # async fn demo(queue: kubekit::workqueue::RateLimitingQueue<String>) {
//! use std::time::Duration;
//! use kubekit::controller::{ReconcileAction, AsyncReconciler, ReconcileError, ReconcileResultExt, Runner, shutdown_signal};
//!
//! struct Printer;
//! impl AsyncReconciler for Printer {
//!     async fn reconcile(&self, key: &str) -> Result<ReconcileAction, ReconcileError> {
//!         tracing::info!("reconciling"); // logged with controller, key, attempt, reconcile_id
//!         let Some((_namespace, name)) = key.split_once('/') else {
//!             // Retrying cannot help: wait until the object changes.
//!             return Err(ReconcileError::new(format!("{key} is not namespaced")).permanent());
//!         };
//!         let config = std::fs::read_to_string(format!("/etc/printer/{name}"))
//!             .requeue_after(Duration::from_secs(30))?; // not there yet: look again in 30 s
//!         let width: usize = config.trim().parse()?; // any other error: retried with backoff
//!         println!("{name:>width$}");
//!         Ok(ReconcileAction::Done)
//!     }
//! }
//!
//! let runner = Runner::new("printer", queue).max_retries(10);
//! let cancel = shutdown_signal();
//! runner.run(std::sync::Arc::new(Printer), 2, async { true }, cancel).await.unwrap();
//! # }
//! ```

mod error;
mod handlers;
mod metrics;
mod object;
mod reconciler;
mod runner;

pub use error::{ErrorPolicy, ReconcileError, ReconcileResultExt};
pub use handlers::{enqueue, enqueue_handler, shutdown_signal};
pub use metrics::ControllerMetrics;
pub use object::ObjectReconciler;
#[allow(deprecated)]
pub use reconciler::Action;
pub use reconciler::{AsyncReconciler, ReconcileAction, ReconcileTimeout, Reconciler};
pub use runner::{RunError, RunStats, Runner};
