//! [`RestClientMetrics`]: client-go's REST client metrics, for Prometheus.
//!
//! - `rest_client_requests_total{code,method,host}`: every HTTP exchange with the API
//!   server (each retry counts), by status code (`<error>` when no response came back),
//!   method and server host.
//! - `rest_client_request_duration_seconds{verb,host}`: the latency of each exchange, up to
//!   the response headers (a watch's stream is not timed), in client-go's buckets
//!   (1 ms … 60 s).
//!
//! ```
//! use kubekit::rest::{RestConfig, RestClientMetrics};
//! use prometheus_client::registry::Registry;
//!
//! let metrics = RestClientMetrics::new();
//! let mut registry = Registry::default();
//! metrics.register(&mut registry);
//! let config = RestConfig::from_url("http://127.0.0.1:8001")
//!     .unwrap()
//!     .with_metrics(&metrics);
//! # let _ = config;
//! ```

use std::fmt;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    verb: String,
    host: String,
}

/// client-go's request latency buckets, in seconds.
const DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

type DurationFamily = Family<DurationLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The REST client's metric families; see the [module docs](self). Cheap to clone: clones
/// share the families.
#[derive(Clone)]
pub struct RestClientMetrics {
    requests: Family<RequestLabels, Counter>,
    duration: DurationFamily,
}

impl Default for RestClientMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RestClientMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestClientMetrics").finish_non_exhaustive()
    }
}

impl RestClientMetrics {
    /// The two families, empty and not yet registered anywhere.
    pub fn new() -> Self {
        Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
        }
    }

    /// Registers the families into `registry` under client-go's names. Register one
    /// `RestClientMetrics` into a registry once.
    pub fn register(&self, registry: &mut Registry) {
        // The encoder appends `_total` to counters.
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            self.requests.clone(),
        );
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            self.duration.clone(),
        );
    }

    /// Records one exchange: its status code (`None`: no response), method, host and
    /// latency.
    pub(crate) fn observe(&self, code: Option<u16>, method: &str, host: &str, latency: Duration) {
        let code = code.map_or_else(|| "<error>".to_string(), |c| c.to_string());
        self.requests
            .get_or_create(&RequestLabels {
                code,
                method: method.to_string(),
                host: host.to_string(),
            })
            .inc();
        self.duration
            .get_or_create(&DurationLabels {
                verb: method.to_string(),
                host: host.to_string(),
            })
            .observe(latency.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchanges_are_counted_by_code_method_and_host_and_timed_by_verb_and_host() {
        let metrics = RestClientMetrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        metrics.observe(Some(200), "GET", "10.0.0.1:6443", Duration::from_millis(3));
        metrics.observe(Some(200), "GET", "10.0.0.1:6443", Duration::from_millis(30));
        metrics.observe(None, "PUT", "10.0.0.1:6443", Duration::from_secs(2));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(
                r#"rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443"} 2"#
            ),
            "{text}"
        );
        assert!(text.contains(
            r#"rest_client_requests_total{code="<error>",method="PUT",host="10.0.0.1:6443"} 1"#
        ));
        assert!(text.contains(
            r#"rest_client_request_duration_seconds_bucket{le="0.005",verb="GET",host="10.0.0.1:6443"} 1"#
        ));
        assert!(text.contains(
            r#"rest_client_request_duration_seconds_count{verb="GET",host="10.0.0.1:6443"} 2"#
        ));
    }
}
