//! Prometheus metrics for named work queues.
//!
//! # Contract
//!
//! - [`WorkqueueMetrics`] owns seven metric families, each labelled by the queue's name
//!   (label `name`). It is a cheap handle: clones share the same families, so one value
//!   can be registered once and passed to any number of queues.
//! - A queue reports metrics only when its [`QueueConfig`](super::QueueConfig) has both a
//!   name and a `WorkqueueMetrics`. An unnamed queue keeps no timestamps and touches no
//!   metric: its hot path pays one branch.
//! - The values change exactly when client-go changes them:
//!
//!   | metric | type | changed when |
//!   |---|---|---|
//!   | `workqueue_depth` | gauge | +1 when `add` marks an item dirty (also while it is being processed), −1 when `get` hands it out |
//!   | `workqueue_adds_total` | counter | with every +1 of the depth |
//!   | `workqueue_queue_duration_seconds` | histogram | at `get`: time since the `add` that made the item dirty |
//!   | `workqueue_work_duration_seconds` | histogram | at `done`: time since the `get` |
//!   | `workqueue_unfinished_work_seconds` | gauge | every 500 ms until shutdown: sum of the ages of the items being processed |
//!   | `workqueue_longest_running_processor_seconds` | gauge | every 500 ms until shutdown: age of the oldest item being processed |
//!   | `workqueue_retries_total` | counter | at every `add_after` (and so `add_rate_limited`) made before shutdown, whatever the delay |
//!
//! - Histograms use client-go's buckets: ten exponential buckets from 10 ns by a factor of 10.
//! - All methods may be called from any thread; metric updates are atomic operations (the
//!   histograms take their own short lock).
//!
//! # Example
//!
//! ```
//! use kubekit::workqueue::{Queue, QueueConfig, WorkqueueMetrics};
//! use prometheus_client::registry::Registry;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let mut registry = Registry::default();
//! let metrics = WorkqueueMetrics::new();
//! metrics.register(&mut registry);
//!
//! let queue = Queue::with_config(QueueConfig::new().name("pods").metrics(&metrics));
//! queue.add("default/web-0".to_string());
//!
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains(r#"workqueue_depth{name="pods"} 1"#));
//! assert!(text.contains(r#"workqueue_adds_total{name="pods"} 1"#));
//! # }
//! ```

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::time::Instant;

/// Gauge holding a float value (seconds).
type SecondsGauge = Gauge<f64, AtomicU64>;

/// Histogram family whose histograms are built with the work queue buckets.
type HistogramFamily = Family<QueueLabel, Histogram, fn() -> Histogram>;

/// The label set of every work queue metric: the queue's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    name: String,
}

/// Builds a histogram with client-go's work queue buckets (10 ns … 10 s, ×10).
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 10))
}

/// The metric families shared by all named work queues of a process (or of one registry).
///
/// Create one, [`register`](Self::register) it into your
/// [`Registry`], and pass it to every queue you want measured with
/// [`QueueConfig::metrics`](super::QueueConfig::metrics). See the [module docs](self) for
/// what each metric means and when it changes.
///
/// ```
/// use kubekit::workqueue::{
///     QueueConfig, RateLimitingQueue, WorkqueueMetrics, default_controller_rate_limiter,
/// };
/// use prometheus_client::registry::Registry;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut registry = Registry::default();
/// let metrics = WorkqueueMetrics::new();
/// metrics.register(&mut registry);
///
/// let queue = RateLimitingQueue::with_config(
///     default_controller_rate_limiter(),
///     QueueConfig::new().name("apps").metrics(&metrics),
/// );
/// queue.add_rate_limited("tcs/app-1".to_string());
///
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.contains(r#"workqueue_retries_total{name="apps"} 1"#));
/// # queue.shut_down();
/// # }
/// ```
#[derive(Clone)]
pub struct WorkqueueMetrics {
    depth: Family<QueueLabel, Gauge>,
    adds: Family<QueueLabel, Counter>,
    queue_duration: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<QueueLabel, SecondsGauge>,
    longest_running: Family<QueueLabel, SecondsGauge>,
    retries: Family<QueueLabel, Counter>,
}

impl Default for WorkqueueMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for WorkqueueMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueMetrics").finish_non_exhaustive()
    }
}

impl WorkqueueMetrics {
    /// Creates the seven metric families, empty and not yet registered anywhere.
    pub fn new() -> Self {
        Self {
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
        }
    }

    /// Registers the families into `registry` under their client-go names
    /// (`workqueue_depth`, `workqueue_adds_total`, …).
    ///
    /// Register a given `WorkqueueMetrics` into one registry once; registering it twice
    /// encodes every family twice.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.depth.clone(),
        );
        // The encoder appends `_total` to counters.
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            self.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            self.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by \
             work_duration. Large values indicate stuck threads. One can deduce the number of \
             stuck threads by observing the rate at which this increases.",
            self.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            self.longest_running.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.retries.clone(),
        );
    }

    /// The per-queue metric handles for the queue called `name`.
    pub(crate) fn for_queue(&self, name: &str) -> QueueMetrics {
        let label = QueueLabel {
            name: name.to_owned(),
        };
        QueueMetrics {
            depth: self.depth.get_or_create_owned(&label),
            adds: self.adds.get_or_create_owned(&label),
            queue_duration: self.queue_duration.get_or_create_owned(&label),
            work_duration: self.work_duration.get_or_create_owned(&label),
            unfinished_work: self.unfinished_work.get_or_create_owned(&label),
            longest_running: self.longest_running.get_or_create_owned(&label),
        }
    }

    /// The retry counter of the queue called `name`.
    pub(crate) fn retries_for(&self, name: &str) -> Counter {
        self.retries.get_or_create_owned(&QueueLabel {
            name: name.to_owned(),
        })
    }
}

/// The metric handles of one named queue, resolved once at construction so that no label
/// lookup happens on the hot path.
pub(crate) struct QueueMetrics {
    depth: Gauge,
    adds: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished_work: SecondsGauge,
    longest_running: SecondsGauge,
}

impl QueueMetrics {
    /// An item became dirty.
    pub(crate) fn added(&self) {
        self.adds.inc();
        self.depth.inc();
    }

    /// An item was handed out by `get`; `waited` is the time since it became dirty.
    pub(crate) fn got(&self, waited: Option<Duration>) {
        self.depth.dec();
        if let Some(waited) = waited {
            self.queue_duration.observe(waited.as_secs_f64());
        }
    }

    /// An item was marked done after being processed for `worked`.
    pub(crate) fn done(&self, worked: Duration) {
        self.work_duration.observe(worked.as_secs_f64());
    }

    /// Sets the two unfinished-work gauges from the start times of the items being
    /// processed.
    pub(crate) fn update_unfinished(&self, now: Instant, started: impl Iterator<Item = Instant>) {
        let mut total = 0.0;
        let mut oldest = 0.0_f64;
        for start in started {
            let age = now.saturating_duration_since(start).as_secs_f64();
            total += age;
            oldest = oldest.max(age);
        }
        self.unfinished_work.set(total);
        self.longest_running.set(oldest);
    }
}
