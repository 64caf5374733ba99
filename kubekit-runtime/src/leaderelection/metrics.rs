//! Prometheus metrics of leader election (client-go's `leader_election_master_status`).
//!
//! # Contract
//!
//! - [`LeaderElectionMetrics`] owns one gauge family, `leader_election_master_status`,
//!   labelled by the elector's name (label `name`; by default the lock's name, i.e. the
//!   Lease's). It is a cheap handle: clones share the family, so one value can be
//!   registered once and passed to any number of electors with distinct names.
//! - An elector given the metrics sets its series to 0 when it is built, to 1 the moment it
//!   starts leading, and back to 0 the moment it stops (leadership lost, or released).
//!   Two electors with the same name in one process share one series: give them distinct
//!   names (or separate metrics).
//!
//! # Example
//!
//! ```
//! use kubekit::leaderelection::LeaderElectionMetrics;
//! use prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let metrics = LeaderElectionMetrics::new();
//! metrics.register(&mut registry);
//! // LeaderElectionConfig::new(lock).metrics(&metrics) ...
//! # let gauge = metrics.master_status_for("my-controller");
//! # gauge.set(1);
//!
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! # assert!(text.contains(r#"leader_election_master_status{name="my-controller"} 1"#));
//! ```

use std::fmt;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The label set of the leader election metric: the elector's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

/// The metric family shared by the leader electors of a process (or of one registry).
///
/// Create one, [`register`](Self::register) it into your [`Registry`], and pass it to
/// every elector you want measured with
/// [`LeaderElectionConfig::metrics`](super::LeaderElectionConfig::metrics). See the
/// [module docs](self) for when the gauge changes.
#[derive(Clone, Default)]
pub struct LeaderElectionMetrics {
    master_status: Family<NameLabel, Gauge>,
}

impl fmt::Debug for LeaderElectionMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionMetrics")
            .finish_non_exhaustive()
    }
}

impl LeaderElectionMetrics {
    /// Creates the metric family, empty and not yet registered anywhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the family into `registry` under its client-go name,
    /// `leader_election_master_status`.
    ///
    /// Register a given `LeaderElectionMetrics` into one registry once; registering it
    /// twice encodes the family twice.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates \
             backup, 1 indicates master. 'name' is the string used to identify the lease. \
             Please make sure to group by name.",
            self.master_status.clone(),
        );
    }

    /// The gauge of the elector called `name` (created at 0 if it did not exist).
    pub fn master_status_for(&self, name: &str) -> Gauge {
        self.master_status.get_or_create_owned(&NameLabel {
            name: name.to_owned(),
        })
    }
}
