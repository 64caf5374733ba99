//! [`Runner`]: the workers that take keys from the queue and reconcile them, and their
//! counters ([`RunStats`]).

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::error::{ErrorPolicy, ReconcileError};
use super::metrics::{ControllerMetrics, Settled};
use super::reconciler::{ReconcileAction, ReconcileTimeout, Reconciler};
use crate::workqueue::RateLimitingQueue;

/// Why [`Runner::run`] did not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The caches did not sync before cancellation.
    #[error("controller {0}: failed to wait for caches to sync")]
    CachesNotSynced(String),
}

/// Counters of a runner, for logs and tests.
#[derive(Debug, Default)]
pub struct RunStats {
    succeeded: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    permanent: AtomicU64,
    panics: AtomicU64,
    workers_died: AtomicU64,
}

impl RunStats {
    /// Reconciles that succeeded.
    pub fn succeeded(&self) -> u64 {
        self.succeeded.load(Ordering::Relaxed)
    }
    /// Reconciles that returned an error (each retry counts), permanent ones included.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
    /// Keys dropped after exhausting their retries.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
    /// Reconciles that returned a [permanent](ErrorPolicy::Permanent) error (their key
    /// was not retried).
    pub fn permanent(&self) -> u64 {
        self.permanent.load(Ordering::Relaxed)
    }
    /// Reconciles that panicked.
    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }
    /// Worker tasks that ended before shutdown; more than zero means the controller runs
    /// with fewer workers than asked (a liveness check should fail).
    pub fn workers_died(&self) -> u64 {
        self.workers_died.load(Ordering::Relaxed)
    }
}

/// What one reconcile gave.
enum Outcome {
    Succeeded(ReconcileAction),
    Failed(ReconcileError),
    Panicked(String),
}

/// Identifies one reconcile in logs: 128 random bits, shown as 32 hex digits.
struct ReconcileId(u128);

impl ReconcileId {
    fn new() -> Self {
        Self(fastrand::u128(..))
    }
}

impl fmt::Display for ReconcileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// Runs workers over a queue; see the [module docs](super).
#[derive(Debug)]
pub struct Runner {
    name: String,
    queue: RateLimitingQueue<String>,
    max_retries: usize,
    reconcile_timeout: Option<Duration>,
    shutdown_grace: Option<Duration>,
    stats: Arc<RunStats>,
    metrics: Option<ControllerMetrics>,
}

impl Runner {
    /// A runner named `name` (for logs) over `queue`, retrying a key at most 5 times.
    pub fn new(name: &str, queue: RateLimitingQueue<String>) -> Self {
        Self {
            name: name.to_string(),
            queue,
            max_retries: 5,
            reconcile_timeout: None,
            shutdown_grace: None,
            stats: Arc::new(RunStats::default()),
            metrics: None,
        }
    }

    /// Drops a reconcile that has not finished after `timeout` and counts it as an error
    /// (retried through the rate limiter). Default: no timeout.
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.reconcile_timeout = Some(timeout);
        self
    }

    /// Bounds the shutdown (controller-runtime's `GracefulShutdownTimeout`): when the
    /// cancellation token fires, no reconcile starts any more and the keys still queued
    /// are dropped; the reconciles in flight get `grace` to finish, and are dropped at
    /// their next `.await` after it. Default: none, the queue drains (client-go's
    /// `ShutDownWithDrain`: queued keys are reconciled too).
    pub fn graceful_shutdown(mut self, grace: Duration) -> Self {
        self.shutdown_grace = Some(grace);
        self
    }

    /// Counts and times every reconcile in `metrics`, under the runner's name.
    pub fn metrics(mut self, metrics: &ControllerMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// How many times a failing key is retried through the rate limiter
    /// ([`ErrorPolicy::Retry`]) before it is dropped.
    pub fn max_retries(mut self, retries: usize) -> Self {
        self.max_retries = retries;
        self
    }

    /// The runner's counters.
    pub fn stats(&self) -> &Arc<RunStats> {
        &self.stats
    }

    /// Waits for `caches_synced`, runs `workers` workers until `cancel` fires, then drains
    /// the queue and waits for the workers.
    pub async fn run<R: Reconciler>(
        &self,
        reconciler: Arc<R>,
        workers: usize,
        caches_synced: impl Future<Output = bool>,
        cancel: CancellationToken,
    ) -> Result<(), RunError> {
        let abort = CancellationToken::new();
        self.run_or_abort(reconciler, workers, caches_synced, cancel, abort)
            .await
    }

    /// [`run`](Self::run), except that when `abort` fires the workers stop at once: no
    /// further key is taken, queued keys are left, and the reconciles in flight are
    /// dropped and their keys queued again. `run_or_abort` returns once every worker has
    /// ended; unless `cancel` fired too, the queue is not shut down and the runner can run
    /// again.
    pub async fn run_or_abort<R: Reconciler>(
        &self,
        reconciler: Arc<R>,
        workers: usize,
        caches_synced: impl Future<Output = bool>,
        cancel: CancellationToken,
        abort: CancellationToken,
    ) -> Result<(), RunError> {
        tracing::info!(controller = %self.name, "waiting for informer caches to sync");
        let synced = tokio::select! {
            biased;
            synced = caches_synced => synced,
            _ = cancel.cancelled() => false,
            _ = abort.cancelled() => false,
        };
        if !synced {
            if abort.is_cancelled() && !cancel.is_cancelled() {
                return Ok(());
            }
            self.queue.shut_down();
            return Err(RunError::CachesNotSynced(self.name.clone()));
        }
        tracing::info!(controller = %self.name, workers, "starting workers");
        // Fired to stop the workers: by `abort`, or when a bounded shutdown's grace ends.
        let stop = abort.child_token();
        // Fired when no key may be taken any more (a bounded shutdown), or by `stop`.
        let stop_taking = stop.child_token();
        let tasks: Vec<_> = (0..workers.max(1))
            .map(|_| {
                let worker = Worker {
                    name: self.name.clone(),
                    queue: self.queue.clone(),
                    max_retries: self.max_retries,
                    reconcile_timeout: self.reconcile_timeout,
                    stats: self.stats.clone(),
                    metrics: self.metrics.clone(),
                    reconciler: reconciler.clone(),
                };
                let (stop, stop_taking) = (stop.clone(), stop_taking.clone());
                tokio::spawn(async move { worker.run(stop, stop_taking).await })
            })
            .collect();
        tokio::select! {
            // An abort wins over a cancel that comes with it: the queue is left running.
            biased;
            _ = abort.cancelled() => {}
            _ = cancel.cancelled() => match self.shutdown_grace {
                Some(grace) => {
                    let queued = self.queue.len();
                    tracing::info!(controller = %self.name, queued, ?grace,
                        "shutting down: dropping the queued keys, waiting for the reconciles in flight");
                    stop_taking.cancel();
                    tokio::select! {
                        () = self.queue.shut_down_with_drain() => {}
                        () = tokio::time::sleep(grace) => {
                            tracing::warn!(controller = %self.name, ?grace,
                                "shutting down: reconciles still in flight after the grace period are dropped");
                            stop.cancel();
                        }
                        _ = abort.cancelled() => {}
                    }
                }
                None => {
                    tracing::info!(controller = %self.name, "shutting down: finishing queued work");
                    tokio::select! {
                        () = self.queue.shut_down_with_drain() => {}
                        _ = abort.cancelled() => self.queue.shut_down(),
                    }
                }
            },
        }
        if abort.is_cancelled() {
            tracing::warn!(controller = %self.name, "aborted: queued work left undone");
        }
        for task in tasks {
            if let Err(e) = task.await {
                tracing::error!(controller = %self.name, "worker task failed: {e}");
            }
        }
        tracing::info!(controller = %self.name, "workers stopped");
        Ok(())
    }
}

struct Worker<R> {
    name: String,
    queue: RateLimitingQueue<String>,
    max_retries: usize,
    reconcile_timeout: Option<Duration>,
    stats: Arc<RunStats>,
    metrics: Option<ControllerMetrics>,
    reconciler: Arc<R>,
}

/// Counts its worker in [`RunStats::workers_died`] when dropped before the queue shut down
/// (the worker's task unwound from a panic).
struct AliveGuard<'a> {
    stats: &'a RunStats,
    queue: &'a RateLimitingQueue<String>,
    finished: bool,
}

impl Drop for AliveGuard<'_> {
    fn drop(&mut self) {
        if !self.finished && !self.queue.shutting_down() {
            self.stats.workers_died.fetch_add(1, Ordering::Relaxed);
            tracing::error!("a worker task ended before shutdown");
        }
    }
}

impl<R: Reconciler> Worker<R> {
    /// Takes keys until the queue is shut down and empty or `stop_taking` fires; drops the
    /// reconcile in flight when `stop` fires.
    async fn run(&self, stop: CancellationToken, stop_taking: CancellationToken) {
        let mut guard = AliveGuard {
            stats: &self.stats,
            queue: &self.queue,
            finished: false,
        };
        loop {
            let key = tokio::select! {
                biased;
                _ = stop_taking.cancelled() => break,
                key = self.queue.get() => key,
            };
            let Some(key) = key else { break };
            if stop_taking.is_cancelled() {
                // Handed out as the shutdown began: dropped with the other queued keys.
                self.queue.done(&key);
                break;
            }
            tokio::select! {
                biased;
                _ = stop.cancelled() => {
                    // Dropped unfinished: whoever runs next reconciles it (a shut down
                    // queue takes nothing more).
                    self.queue.done(&key);
                    self.queue.add(key);
                    break;
                }
                () = self.process(&key) => self.queue.done(&key),
            }
        }
        guard.finished = true;
    }

    /// The reconcile of `key`, bounded by the timeout, with panics caught.
    async fn outcome(&self, key: &str) -> Outcome {
        // A reconciler may panic while making its future as well as while running it.
        let made = std::panic::catch_unwind(AssertUnwindSafe(|| self.reconciler.reconcile(key)));
        let reconcile = match made {
            Ok(future) => AssertUnwindSafe(future).catch_unwind(),
            Err(panic) => {
                return Outcome::Panicked(kubekit_client::panic::message(panic.as_ref()).into());
            }
        };
        let caught = match self.reconcile_timeout {
            None => reconcile.await,
            Some(limit) => match tokio::time::timeout(limit, reconcile).await {
                Ok(caught) => caught,
                Err(_) => Ok(Err(ReconcileTimeout(limit).into())),
            },
        };
        match caught {
            Ok(Ok(action)) => Outcome::Succeeded(action),
            Ok(Err(e)) => Outcome::Failed(e),
            Err(panic) => Outcome::Panicked(kubekit_client::panic::message(panic.as_ref()).into()),
        }
    }

    /// Reconciles `key` in its `reconcile` span and settles what comes of it.
    async fn process(&self, key: &str) {
        if let Some(delay) = self.reconciler.defer(key) {
            self.queue.add_after(key.to_string(), delay);
            return;
        }
        let key = key.to_string();
        let attempt = self.queue.num_requeues(&key);
        let span = tracing::info_span!(
            "reconcile",
            controller = %self.name,
            key = %key,
            attempt,
            reconcile_id = %ReconcileId::new(),
        );
        self.reconcile_and_settle(key, attempt)
            .instrument(span)
            .await;
    }

    async fn reconcile_and_settle(&self, key: String, attempt: usize) {
        let started = Instant::now();
        let outcome = self.outcome(&key).await;
        if let Some(metrics) = &self.metrics {
            let result = match outcome {
                Outcome::Succeeded(ReconcileAction::Done) => "success",
                Outcome::Succeeded(ReconcileAction::RequeueAfter(_)) => "requeue_after",
                Outcome::Failed(_) | Outcome::Panicked(_) => "error",
            };
            metrics.observe(&self.name, result, started.elapsed());
        }
        let (policy, error) = match outcome {
            Outcome::Succeeded(action) => {
                self.stats.succeeded.fetch_add(1, Ordering::Relaxed);
                self.queue.forget(&key);
                if let ReconcileAction::RequeueAfter(delay) = action {
                    self.queue.add_after(key, delay);
                }
                return;
            }
            Outcome::Failed(e) => {
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                (e.policy(), e.to_string())
            }
            Outcome::Panicked(panic) => {
                self.stats.panics.fetch_add(1, Ordering::Relaxed);
                (ErrorPolicy::Retry, format!("reconcile panicked: {panic}"))
            }
        };
        let settled = match policy {
            ErrorPolicy::Retry if attempt < self.max_retries => {
                tracing::warn!("error syncing: {error}; retrying");
                self.queue.add_rate_limited(key);
                Settled::Retried
            }
            ErrorPolicy::Retry => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::error!("dropping key out of the queue after {attempt} retries: {error}");
                self.queue.forget(&key);
                Settled::Dropped
            }
            ErrorPolicy::RequeueAfter(delay) => {
                tracing::warn!("error syncing: {error}; requeued after {delay:?}");
                self.queue.add_after(key, delay);
                Settled::Retried
            }
            ErrorPolicy::Permanent => {
                self.stats.permanent.fetch_add(1, Ordering::Relaxed);
                tracing::error!("permanent error, not retried until the object changes: {error}");
                self.queue.forget(&key);
                self.queue.cancel_waiting(&key);
                Settled::Permanent
            }
        };
        if let Some(metrics) = &self.metrics {
            metrics.settled(&self.name, settled);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use futures_util::future::BoxFuture;
    use parking_lot::Mutex;
    use prometheus_client::registry::Registry;

    use super::*;
    use crate::cache::test_support::assert_metric_lines;
    use crate::controller::AsyncReconciler;
    use crate::workqueue::ItemExponentialFailureRateLimiter;

    /// Fails `key-fail` always, panics on `key-panic` the first time, succeeds otherwise;
    /// counts the calls per key.
    #[derive(Default)]
    struct Script {
        calls: Mutex<HashMap<String, usize>>,
    }

    impl Reconciler for Script {
        fn reconcile<'a>(
            &'a self,
            key: &'a str,
        ) -> BoxFuture<'a, Result<ReconcileAction, ReconcileError>> {
            if key == "key-panic-early" && !self.calls.lock().contains_key(key) {
                self.calls.lock().insert(key.to_string(), 1);
                panic!("bug before the future");
            }
            Box::pin(async move {
                let n = {
                    let mut calls = self.calls.lock();
                    let n = calls.entry(key.to_string()).or_default();
                    *n += 1;
                    *n
                };
                match key {
                    "key-fail" => Err("always fails".into()),
                    "key-panic" if n == 1 => panic!("bug in reconcile"),
                    "key-slow" => std::future::pending().await,
                    "key-10s" => {
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        Ok(ReconcileAction::Done)
                    }
                    "key-again" if n < 3 => {
                        Ok(ReconcileAction::RequeueAfter(Duration::from_secs(1)))
                    }
                    _ => Ok(ReconcileAction::Done),
                }
            })
        }
    }

    pub(crate) fn queue() -> RateLimitingQueue<String> {
        RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(1),
            Duration::from_millis(10),
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn errors_retry_up_to_the_limit_panics_retry_and_success_forgets() {
        let q = queue();
        for k in ["key-ok", "key-fail", "key-panic", "key-panic-early"] {
            q.add(k.to_string());
        }
        let metrics = ControllerMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let runner = Runner::new("test", q.clone())
            .max_retries(3)
            .metrics(&metrics);
        let script = Arc::new(Script::default());
        run_for(&runner, script.clone(), 2, Duration::from_secs(5)).await;
        let calls = script.calls.lock().clone();
        assert_eq!(calls["key-ok"], 1);
        assert_eq!(calls["key-fail"], 4, "first try + 3 retries");
        assert_eq!(calls["key-panic"], 2, "a panic is retried like an error");
        assert_eq!(
            calls["key-panic-early"], 2,
            "so is one while making the future"
        );
        let stats = runner.stats();
        assert_eq!(
            (
                stats.succeeded(),
                stats.failed(),
                stats.dropped(),
                stats.panics()
            ),
            (3, 4, 1, 2)
        );
        assert_eq!(stats.workers_died(), 0);
        assert_eq!(
            q.num_requeues(&"key-fail".to_string()),
            0,
            "dropped keys are forgotten"
        );
        assert_metric_lines(
            &registry,
            &[
                r#"controller_runtime_reconcile_total{controller="test",result="success"} 3"#,
                r#"controller_runtime_reconcile_total{controller="test",result="error"} 6"#,
                r#"controller_runtime_reconcile_errors_total{controller="test"} 6"#,
                r#"controller_runtime_reconcile_time_seconds_count{controller="test"} 9"#,
            ],
        );
    }

    /// Runs `runner` with `workers` workers for `time`, then cancels it and waits for it.
    pub(crate) async fn run_for<R: Reconciler>(
        runner: &Runner,
        r: Arc<R>,
        workers: usize,
        time: Duration,
    ) {
        let cancel = CancellationToken::new();
        let run = runner.run(r, workers, async { true }, cancel.clone());
        let stop = async {
            tokio::time::sleep(time).await;
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(run, stop);
        result.unwrap();
    }

    /// Fails until `until` (virtual time since the test began), then succeeds.
    struct FailsUntil {
        began: tokio::time::Instant,
        until: Duration,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Reconciler for FailsUntil {
        fn reconcile<'a>(
            &'a self,
            _key: &'a str,
        ) -> BoxFuture<'a, Result<ReconcileAction, ReconcileError>> {
            Box::pin(async move {
                self.calls.fetch_add(1, Ordering::Relaxed);
                if self.began.elapsed() < self.until {
                    return Err("the API server is down".into());
                }
                Ok(ReconcileAction::Done)
            })
        }
    }

    /// Defers each key until `until` (virtual time since the test began), then succeeds.
    struct DefersUntil {
        began: tokio::time::Instant,
        until: Duration,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Reconciler for DefersUntil {
        fn reconcile<'a>(
            &'a self,
            _key: &'a str,
        ) -> BoxFuture<'a, Result<ReconcileAction, ReconcileError>> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::ready(Ok(ReconcileAction::Done)))
        }

        fn defer(&self, _key: &str) -> Option<Duration> {
            (self.began.elapsed() < self.until).then_some(Duration::from_millis(20))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_deferred_key_is_put_back_and_reconciled_once_no_longer_deferred() {
        let q = queue();
        q.add("key".to_string());
        let runner = Runner::new("test", q.clone());
        let script = Arc::new(DefersUntil {
            began: tokio::time::Instant::now(),
            until: Duration::from_millis(100),
            calls: Default::default(),
        });
        run_for(&runner, script.clone(), 1, Duration::from_secs(1)).await;
        let stats = runner.stats();
        assert_eq!((stats.succeeded(), stats.failed()), (1, 0));
        assert_eq!(
            script.calls.load(Ordering::Relaxed),
            1,
            "deferrals are not reconciles"
        );
        assert_eq!(q.num_requeues(&"key".to_string()), 0, "nor retries");
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_failing_for_ten_minutes_is_retried_until_it_succeeds_with_no_limit() {
        let q = RateLimitingQueue::new(crate::workqueue::default_controller_rate_limiter());
        q.add("key".to_string());
        let runner = Runner::new("test", q.clone()).max_retries(usize::MAX);
        let script = Arc::new(FailsUntil {
            began: tokio::time::Instant::now(),
            until: Duration::from_secs(600),
            calls: Default::default(),
        });
        run_for(&runner, script.clone(), 1, Duration::from_secs(3600)).await;
        let stats = runner.stats();
        assert_eq!((stats.succeeded(), stats.dropped()), (1, 0));
        // Waits of 5 ms doubling: after 17 failures they add up to 655 s, past ten minutes,
        // and the 18th reconcile succeeds.
        assert_eq!(script.calls.load(Ordering::Relaxed), 18);
        assert_eq!(q.num_requeues(&"key".to_string()), 0, "success forgets");
    }

    #[tokio::test(start_paused = true)]
    async fn requeue_after_reconciles_again_and_a_timed_out_reconcile_is_retried_as_an_error() {
        let q = queue();
        q.add("key-again".to_string());
        q.add("key-slow".to_string());
        let metrics = ControllerMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let runner = Runner::new("test", q.clone())
            .max_retries(2)
            .reconcile_timeout(Duration::from_secs(1))
            .metrics(&metrics);
        let script = Arc::new(Script::default());
        run_for(&runner, script.clone(), 2, Duration::from_secs(30)).await;
        let calls = script.calls.lock().clone();
        assert_eq!(calls["key-again"], 3, "requeued twice, then done");
        assert_eq!(
            calls["key-slow"], 3,
            "first try + 2 retries, each timed out"
        );
        assert_eq!(runner.stats().dropped(), 1);
        assert_metric_lines(
            &registry,
            &[
                r#"controller_runtime_reconcile_total{controller="test",result="requeue_after"} 2"#,
                r#"controller_runtime_reconcile_total{controller="test",result="success"} 1"#,
                r#"controller_runtime_reconcile_errors_total{controller="test"} 3"#,
            ],
        );
    }

    /// Reconciles `key` as `script` says for its call (1st, 2nd, …); past its end,
    /// succeeds. Records the (virtual) time of every call; `during` runs inside each call.
    struct Scripted {
        script: Vec<Result<ReconcileAction, fn() -> ReconcileError>>,
        calls: Mutex<Vec<tokio::time::Instant>>,
        during: Box<dyn Fn() + Send + Sync>,
    }

    impl Scripted {
        fn new(script: Vec<Result<ReconcileAction, fn() -> ReconcileError>>) -> Self {
            Self {
                script,
                calls: Mutex::default(),
                during: Box::new(|| {}),
            }
        }

        fn calls(&self) -> Vec<tokio::time::Instant> {
            self.calls.lock().clone()
        }
    }

    impl AsyncReconciler for Scripted {
        async fn reconcile(&self, _key: &str) -> Result<ReconcileAction, ReconcileError> {
            tracing::info!("inside the reconcile");
            (self.during)();
            let n = {
                let mut calls = self.calls.lock();
                calls.push(tokio::time::Instant::now());
                calls.len()
            };
            match self.script.get(n - 1) {
                None => Ok(ReconcileAction::Done),
                Some(Ok(action)) => Ok(*action),
                Some(Err(error)) => Err(error()),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_permanent_error_cancels_the_waiting_retry_and_the_key_waits_for_its_next_add() {
        let q = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_secs(1),
            Duration::from_secs(10),
        ));
        q.add("ns/a".to_string());
        let mut script = Scripted::new(vec![
            Err(|| "the API server is down".into()),
            Err(|| ReconcileError::new("spec.replicas is negative").permanent()),
        ]);
        // An event while the first reconcile runs: the key is reconciled again at once,
        // while its retry (in 1 s) waits.
        let first = std::sync::Once::new();
        let events = q.clone();
        script.during = Box::new(move || first.call_once(|| events.add("ns/a".to_string())));
        let script = Arc::new(script);
        let runner = Runner::new("test", q.clone());
        let cancel = CancellationToken::new();
        let run = runner.run(script.clone(), 1, async { true }, cancel.clone());
        let test = async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            assert_eq!(script.calls().len(), 2, "the waiting retry was cancelled");
            assert_eq!(runner.stats().permanent(), 1);
            assert_eq!(q.num_requeues(&"ns/a".to_string()), 0, "forgotten");
            // The object changed: its key is added again, and reconciled at once.
            let changed = tokio::time::Instant::now();
            q.add("ns/a".to_string());
            tokio::time::sleep(Duration::from_secs(60)).await;
            assert_eq!(script.calls()[2], changed);
            assert_eq!(script.calls().len(), 3, "then succeeded");
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(run, test);
        result.unwrap();
        let stats = runner.stats();
        assert_eq!(
            (stats.succeeded(), stats.failed(), stats.dropped()),
            (1, 2, 0)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_to_requeue_after_a_delay_is_reconciled_again_exactly_that_delay_later() {
        let q = queue();
        q.add("ns/a".to_string());
        let later =
            || ReconcileError::new("waiting for the volume").requeue_after(Duration::from_secs(7));
        let script = Arc::new(Scripted::new(vec![Err(later), Err(later), Err(later)]));
        let runner = Runner::new("test", q.clone()).max_retries(0);
        run_for(&runner, script.clone(), 1, Duration::from_secs(60)).await;
        let calls = script.calls();
        assert_eq!(calls.len(), 4, "three errors, then success");
        for pair in calls.windows(2) {
            assert_eq!(pair[1] - pair[0], Duration::from_secs(7));
        }
        let stats = runner.stats();
        assert_eq!(
            (stats.failed(), stats.dropped(), stats.succeeded()),
            (3, 0, 1),
            "max_retries does not apply to a requeue after a delay"
        );
    }

    /// What a `fmt` subscriber writes, kept for the test to read.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn what_a_reconcile_logs_carries_the_controller_the_key_the_attempt_and_a_reconcile_id() {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(false)
            .finish();
        // The test's runtime runs every task on this thread.
        let _default = tracing::subscriber::set_default(subscriber);
        // While one dispatcher is registered, tracing-core asks only the registering
        // thread's about a callsite first met on another thread: a test there, without a
        // subscriber, meeting the reconcile span first would disable it for this one. A
        // second live dispatcher makes it ask every one.
        let _second = tracing::Dispatch::new(tracing_subscriber::registry());
        let q = queue();
        q.add("ns/a".to_string());
        let script = Arc::new(Scripted::new(vec![Err(|| "conflict".into())]));
        run_for(&Runner::new("test", q), script, 1, Duration::from_secs(1)).await;
        let text = String::from_utf8(captured.0.lock().clone()).unwrap();
        let inside: Vec<&str> = text
            .lines()
            .filter(|l| l.ends_with("inside the reconcile"))
            .collect();
        assert_eq!(inside.len(), 2, "{text}");
        let mut ids = Vec::new();
        for (attempt, line) in inside.iter().enumerate() {
            let prefix =
                format!("reconcile{{controller=test key=ns/a attempt={attempt} reconcile_id=");
            let (_, rest) = line
                .split_once(&prefix)
                .unwrap_or_else(|| panic!("{prefix} not in {line}"));
            let id = &rest[..rest.find('}').unwrap()];
            assert!(
                id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
                "{id}"
            );
            ids.push(id.to_string());
        }
        assert_ne!(ids[0], ids[1], "each reconcile has its own id");
        assert!(
            text.lines()
                .any(|l| l.contains(&format!("reconcile_id={}}}", ids[0]))
                    && l.contains("error syncing: conflict; retrying")),
            "the runner's own log of the error is in the span too:\n{text}"
        );
    }

    /// Runs `runner` with one worker over `script` and aborts it 5 s in, cancelling it
    /// just before when `cancel_too`.
    async fn aborted_after_5s(runner: &Runner, script: Arc<Script>, cancel_too: bool) {
        let (cancel, abort) = (CancellationToken::new(), CancellationToken::new());
        let run = runner.run_or_abort(script, 1, async { true }, cancel.clone(), abort.clone());
        let stop = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            if cancel_too {
                cancel.cancel();
            }
            abort.cancel();
        };
        let (result, ()) = tokio::join!(run, stop);
        result.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn abort_drops_the_reconcile_in_flight_and_leaves_queued_keys() {
        let q = queue();
        q.add("key-slow".to_string());
        for i in 0..10 {
            q.add(format!("key-{i}"));
        }
        let runner = Runner::new("test", q.clone());
        let script = Arc::new(Script::default());
        // The one worker is stuck in key-slow.
        aborted_after_5s(&runner, script.clone(), true).await;
        let calls = script.calls.lock().clone();
        assert_eq!(calls.len(), 1, "only key-slow was started: {calls:?}");
        // key-slow is queued again too, unless the cancel shut the queue down first.
        assert!(q.len() >= 10, "queued keys are left undone: {}", q.len());
        assert_eq!(runner.stats().workers_died(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn after_an_abort_alone_the_runner_runs_again_and_reconciles_what_was_left() {
        let q = queue();
        q.add("key-slow".to_string());
        q.add("key-0".to_string());
        let runner = Runner::new("test", q.clone());
        let script = Arc::new(Script::default());
        aborted_after_5s(&runner, script.clone(), false).await;
        assert!(
            !q.shutting_down(),
            "an abort alone leaves the queue running"
        );
        // Two workers: key-slow never ends, key-0 does.
        let again = CancellationToken::new();
        let never = CancellationToken::new();
        let run = runner.run_or_abort(script.clone(), 2, async { true }, never, again.clone());
        let stop = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            again.cancel();
        };
        let (result, ()) = tokio::join!(run, stop);
        result.unwrap();
        let calls = script.calls.lock().clone();
        assert_eq!(
            calls.get("key-0"),
            Some(&1),
            "the key left is reconciled: {calls:?}"
        );
        assert_eq!(
            calls.get("key-slow"),
            Some(&2),
            "and the one dropped again: {calls:?}"
        );
    }

    /// Runs `runner` with one worker over `key` then ten more, cancels it after 5 s, and
    /// says how long after the start it returned.
    async fn cancelled_after_5s(runner: &Runner, script: Arc<Script>, key: &str) -> Duration {
        runner.queue.add(key.to_string());
        for i in 0..10 {
            runner.queue.add(format!("key-{i}"));
        }
        let start = tokio::time::Instant::now();
        let cancel = CancellationToken::new();
        let run = runner.run(script, 1, async { true }, cancel.clone());
        let stop = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(run, stop);
        result.unwrap();
        start.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn a_bounded_shutdown_drops_queued_keys_and_lets_the_reconcile_in_flight_finish() {
        let runner = Runner::new("test", queue()).graceful_shutdown(Duration::from_secs(30));
        let script = Arc::new(Script::default());
        let took = cancelled_after_5s(&runner, script.clone(), "key-10s").await;
        let calls = script.calls.lock().clone();
        assert_eq!(calls.len(), 1, "no queued key was started: {calls:?}");
        assert!(
            took >= Duration::from_secs(10) && took < Duration::from_secs(30),
            "{took:?}"
        );
        assert_eq!(runner.stats().workers_died(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_bounded_shutdown_drops_the_reconcile_still_in_flight_when_its_grace_ends() {
        let runner = Runner::new("test", queue()).graceful_shutdown(Duration::from_secs(30));
        let script = Arc::new(Script::default());
        let took = cancelled_after_5s(&runner, script.clone(), "key-slow").await;
        assert_eq!(script.calls.lock().len(), 1);
        assert!(
            took >= Duration::from_secs(35),
            "returned before the grace ended: {took:?}"
        );
        assert_eq!(runner.stats().workers_died(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_bound_the_shutdown_reconciles_every_queued_key() {
        let runner = Runner::new("test", queue());
        let script = Arc::new(Script::default());
        cancelled_after_5s(&runner, script.clone(), "key-10s").await;
        assert_eq!(script.calls.lock().len(), 11);
    }

    #[tokio::test]
    async fn a_worker_that_ends_before_shutdown_is_counted_dead() {
        let (stats, q) = (RunStats::default(), queue());
        let finished = AliveGuard {
            stats: &stats,
            queue: &q,
            finished: true,
        };
        drop(finished);
        assert_eq!(stats.workers_died(), 0);
        let unwound = AliveGuard {
            stats: &stats,
            queue: &q,
            finished: false,
        };
        drop(unwound);
        assert_eq!(stats.workers_died(), 1);
        q.shut_down();
        let at_shutdown = AliveGuard {
            stats: &stats,
            queue: &q,
            finished: false,
        };
        drop(at_shutdown);
        assert_eq!(stats.workers_died(), 1, "ending at shutdown is not dying");
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_finishes_queued_keys_before_returning() {
        let q = queue();
        for i in 0..50 {
            q.add(format!("key-{i}"));
        }
        let runner = Runner::new("test", q.clone());
        let script = Arc::new(Script::default());
        let cancel = CancellationToken::new();
        cancel.cancel();
        // Cancelled before start: the caches never "sync", nothing runs.
        let err = runner
            .run(script.clone(), 1, std::future::pending(), cancel)
            .await
            .unwrap_err();
        assert_eq!(err, RunError::CachesNotSynced("test".into()));
        assert!(script.calls.lock().is_empty());

        let q = queue();
        for i in 0..50 {
            q.add(format!("key-{i}"));
        }
        let runner = Runner::new("test", q.clone());
        let cancel = CancellationToken::new();
        let run = runner.run(script.clone(), 3, async { true }, cancel.clone());
        cancel.cancel();
        run.await.unwrap();
        assert_eq!(
            script.calls.lock().len(),
            50,
            "every queued key was processed"
        );
        assert!(q.shutting_down());
    }
}
