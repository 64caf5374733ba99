//! [`ControllerMetrics`]: controller-runtime's reconcile metrics.

use std::fmt;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// controller-runtime's reconcile metrics, by controller name:
/// `controller_runtime_reconcile_total{controller,result}` (`success`, `requeue_after` or
/// `error`; a panic, a timeout and a permanent error are errors),
/// `controller_runtime_reconcile_errors_total{controller}`,
/// `controller_runtime_terminal_reconcile_errors_total{controller}` (the errors that are
/// [permanent](super::ErrorPolicy::Permanent): their key is not retried) and
/// `controller_runtime_reconcile_time_seconds{controller}`; and, as kubekit's own,
/// `controller_runtime_reconcile_retries_total{controller}`: the errors whose key was
/// queued again, rate-limited or after a delay (so `errors = retries + terminal + keys
/// dropped after max_retries`). Give it to a runner with [`Runner::metrics`](super::Runner::metrics); cheap to
/// clone (clones share the families).
#[derive(Clone)]
pub struct ControllerMetrics {
    total: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabel, Counter>,
    terminal: Family<ControllerLabel, Counter>,
    retries: Family<ControllerLabel, Counter>,
    time: Family<ControllerLabel, Histogram, fn() -> Histogram>,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

/// controller-runtime's reconcile time buckets, in seconds.
const RECONCILE_BUCKETS: [f64; 21] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 60.0,
];

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ControllerMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerMetrics").finish_non_exhaustive()
    }
}

impl ControllerMetrics {
    /// The families, empty and not yet registered anywhere.
    pub fn new() -> Self {
        Self {
            total: Family::default(),
            errors: Family::default(),
            terminal: Family::default(),
            retries: Family::default(),
            time: Family::new_with_constructor(reconcile_histogram),
        }
    }

    /// Registers the families into `registry` under controller-runtime's names. Register
    /// one `ControllerMetrics` into a registry once.
    pub fn register(&self, registry: &mut Registry) {
        // The encoder appends `_total` to counters.
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            self.total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.errors.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            self.terminal.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_retries",
            "Total number of reconciliation errors whose key was queued again per controller",
            self.retries.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.time.clone(),
        );
    }

    pub(super) fn observe(&self, controller: &str, result: &'static str, took: Duration) {
        self.total
            .get_or_create(&ResultLabels {
                controller: controller.to_string(),
                result,
            })
            .inc();
        let label = ControllerLabel {
            controller: controller.to_string(),
        };
        if result == "error" {
            self.errors.get_or_create(&label).inc();
        }
        self.time.get_or_create(&label).observe(took.as_secs_f64());
    }

    /// Counts an error of `controller` after which `what` was done with its key.
    pub(super) fn settled(&self, controller: &str, what: Settled) {
        let family = match what {
            Settled::Retried => &self.retries,
            Settled::Permanent => &self.terminal,
            Settled::Dropped => return,
        };
        family
            .get_or_create(&ControllerLabel {
                controller: controller.to_string(),
            })
            .inc();
    }
}

/// What became of a key after an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settled {
    /// Queued again, rate-limited or after a delay.
    Retried,
    /// Not retried: the error was permanent.
    Permanent,
    /// Not retried: it had been retried `max_retries` times.
    Dropped,
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::cache::test_support::assert_metric_lines;
    use crate::controller::runner::tests::{queue, run_for};
    use crate::controller::{AsyncReconciler, ReconcileAction, ReconcileError, Runner};

    #[tokio::test(start_paused = true)]
    async fn metrics_count_retries_and_permanent_failures_per_controller() {
        let q = queue();
        for key in ["ns/retried", "ns/later", "ns/permanent"] {
            q.add(key.to_string());
        }
        struct ByKey;
        impl AsyncReconciler for ByKey {
            async fn reconcile(&self, key: &str) -> Result<ReconcileAction, ReconcileError> {
                static RETRIED: AtomicU64 = AtomicU64::new(0);
                static LATER: AtomicU64 = AtomicU64::new(0);
                match key {
                    "ns/retried" if RETRIED.fetch_add(1, Ordering::Relaxed) < 2 => {
                        Err("conflict".into())
                    }
                    "ns/later" if LATER.fetch_add(1, Ordering::Relaxed) < 1 => {
                        Err(ReconcileError::new("not yet").requeue_after(Duration::from_secs(1)))
                    }
                    "ns/permanent" => Err(ReconcileError::new("invalid").permanent()),
                    _ => Ok(ReconcileAction::Done),
                }
            }
        }
        let metrics = ControllerMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let runner = Runner::new("test", q.clone()).metrics(&metrics);
        run_for(&runner, Arc::new(ByKey), 1, Duration::from_secs(60)).await;
        assert_metric_lines(
            &registry,
            &[
                r#"controller_runtime_reconcile_total{controller="test",result="error"} 4"#,
                r#"controller_runtime_reconcile_total{controller="test",result="success"} 2"#,
                r#"controller_runtime_reconcile_errors_total{controller="test"} 4"#,
                r#"controller_runtime_reconcile_retries_total{controller="test"} 3"#,
                r#"controller_runtime_terminal_reconcile_errors_total{controller="test"} 1"#,
            ],
        );
    }
}
