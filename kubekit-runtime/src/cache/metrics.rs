//! [`ReflectorMetrics`]: what reflectors and informers report to Prometheus, by reflector
//! name (an informer's is its resource, e.g. `pods.v1` or `pods.v1 in namespace demo`).
//!
//! | series | kind | what |
//! |---|---|---|
//! | `reflector_lists_total{name}` | counter | complete lists (all pages), the first one included |
//! | `reflector_relists_total{name}` | counter | lists after the first (410 Gone, errors, restarts) |
//! | `reflector_watches_total{name}` | counter | watches opened |
//! | `reflector_watch_events_total{name,type}` | counter | watch events received, by type |
//! | `reflector_errors_total{name,kind}` | counter | errors reported to the watch-error handler, by kind: `api` (a refusal, an `ERROR` event, a 410), `transport` (connection failures, very short watches), `timeout` (a request timed out, a silent watch), `decode` (a malformed object, skipped), `too_large` (a response or watch event over its limit), `panic` (a transform or the reflector panicked), `other` |
//! | `reflector_last_resource_version_timestamp_seconds{name}` | gauge | Unix time the reflector last advanced its resourceVersion (list, event or bookmark): `time() - x` is how stale the cache may be |
//! | `informer_objects{name}` | gauge | objects in the informer's cache |
//! | `reflector_shard_server_filtered{name}` | gauge | sharded reflectors only ([`ShardSelector`](super::ShardSelector)): 1 when the API server echoed the shard selector in the last list (it filtered), 0 when it did not: a server without the feature (the reflector filters alone), or a metadata-only list, which never carries the echo though the server filters (then nothing is dropped) |
//! | `reflector_shard_dropped_objects_total{name}` | counter | sharded reflectors only: objects outside the shard that the server sent anyway (list items and watch events), dropped by the reflector |
//!
//! Give one to every informer of a factory with
//! [`SharedInformerFactoryBuilder::metrics`](crate::informers::SharedInformerFactoryBuilder::metrics),
//! or to one reflector through [`ReflectorOptions::metrics`](super::ReflectorOptions::metrics).

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use kubekit_client::rest::{EVENT_TYPES, Error};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    name: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    name: String,
    r#type: &'static str,
}

/// The reflector and informer metric families; see the [module docs](self). Cheap to
/// clone: clones share the families.
#[derive(Clone, Default)]
pub struct ReflectorMetrics {
    lists: Family<NameLabel, Counter>,
    relists: Family<NameLabel, Counter>,
    watches: Family<NameLabel, Counter>,
    events: Family<EventLabels, Counter>,
    errors: Family<KindLabels, Counter>,
    last_resource_version: Family<NameLabel, Gauge<f64, AtomicU64>>,
    objects: Family<NameLabel, Gauge>,
    shard_by_server: Family<NameLabel, Gauge>,
    shard_dropped: Family<NameLabel, Counter>,
}

impl fmt::Debug for ReflectorMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorMetrics").finish_non_exhaustive()
    }
}

impl ReflectorMetrics {
    /// The families, empty and not yet registered anywhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the families into `registry`. Register one `ReflectorMetrics` into a
    /// registry once.
    pub fn register(&self, registry: &mut Registry) {
        // The encoder appends `_total` to counters.
        registry.register(
            "reflector_lists",
            "Complete lists made by the reflector",
            self.lists.clone(),
        );
        registry.register(
            "reflector_relists",
            "Lists made by the reflector after its first one",
            self.relists.clone(),
        );
        registry.register(
            "reflector_watches",
            "Watches opened by the reflector",
            self.watches.clone(),
        );
        registry.register(
            "reflector_watch_events",
            "Watch events received by the reflector, by type",
            self.events.clone(),
        );
        registry.register(
            "reflector_errors",
            "Errors reported to the reflector's watch-error handler, by kind",
            self.errors.clone(),
        );
        registry.register(
            "reflector_last_resource_version_timestamp_seconds",
            "Unix time at which the reflector last advanced its resourceVersion",
            self.last_resource_version.clone(),
        );
        registry.register(
            "informer_objects",
            "Objects in the informer's cache",
            self.objects.clone(),
        );
        registry.register(
            "reflector_shard_server_filtered",
            "1 when the API server applied the reflector's shard selector to its last list, 0 when the reflector filters alone",
            self.shard_by_server.clone(),
        );
        registry.register(
            "reflector_shard_dropped_objects",
            "Objects outside the reflector's shard that the server sent anyway, dropped by the reflector",
            self.shard_dropped.clone(),
        );
    }

    /// The series of the reflector (and informer) named `name`, resolved once.
    pub(crate) fn bind(&self, name: &str) -> BoundMetrics {
        let label = label(name);
        let event = |kind: &'static str| {
            self.events
                .get_or_create(&EventLabels {
                    name: name.to_string(),
                    r#type: kind,
                })
                .clone()
        };
        BoundMetrics {
            lists: self.lists.get_or_create(&label).clone(),
            relists: self.relists.get_or_create(&label).clone(),
            watches: self.watches.get_or_create(&label).clone(),
            events: EVENT_TYPES.map(event),
            errors: ERROR_KINDS.map(|kind| {
                self.errors
                    .get_or_create(&KindLabels {
                        name: name.to_string(),
                        kind,
                    })
                    .clone()
            }),
            last_resource_version: self.last_resource_version.get_or_create(&label).clone(),
            objects: self.objects.get_or_create(&label).clone(),
        }
    }

    /// The shard series of the sharded reflector named `name`, resolved once (only
    /// sharded reflectors have them).
    pub(crate) fn bind_shard(&self, name: &str) -> ShardMetrics {
        let label = label(name);
        ShardMetrics {
            by_server: self.shard_by_server.get_or_create(&label).clone(),
            dropped: self.shard_dropped.get_or_create(&label).clone(),
        }
    }
}

/// The kinds of error counted, in the order of [`BoundMetrics::errors`].
const ERROR_KINDS: [&str; 7] = [
    "api",
    "transport",
    "timeout",
    "decode",
    "too_large",
    "panic",
    "other",
];

/// One reflector's series.
#[derive(Clone, Debug)]
pub(crate) struct BoundMetrics {
    lists: Counter,
    relists: Counter,
    watches: Counter,
    /// Per event type, in the order of [`EVENT_TYPES`].
    events: [Counter; 5],
    errors: [Counter; 7],
    last_resource_version: Gauge<f64, AtomicU64>,
    objects: Gauge,
}

impl BoundMetrics {
    /// A complete list; `relist` when it was not the reflector's first.
    pub(crate) fn listed(&self, relist: bool) {
        self.lists.inc();
        if relist {
            self.relists.inc();
        }
        self.advanced();
    }

    /// A watch opened.
    pub(crate) fn watch_opened(&self) {
        self.watches.inc();
    }

    /// A watch event of type `kind` (one of `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`,
    /// `ERROR`).
    pub(crate) fn event(&self, kind: &str) {
        if let Some(i) = EVENT_TYPES.iter().position(|t| *t == kind) {
            self.events[i].inc();
        }
    }

    /// An error reported to the watch-error handler.
    pub(crate) fn error(&self, e: &Error) {
        let kind = match e {
            Error::Api { .. } => 0,
            Error::Transport { .. } => 1,
            Error::Timeout { .. } => 2,
            Error::Decode { .. } => 3,
            Error::TooLarge { .. } => 4,
            Error::Panic { .. } => 5,
            _ => 6,
        };
        self.errors[kind].inc();
    }

    /// The resourceVersion advanced now.
    pub(crate) fn advanced(&self) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.last_resource_version.set(now);
    }

    /// The informer's cache holds `count` objects.
    pub(crate) fn objects(&self, count: usize) {
        self.objects.set(i64::try_from(count).unwrap_or(i64::MAX));
    }
}

/// One sharded reflector's series.
#[derive(Clone, Debug)]
pub(crate) struct ShardMetrics {
    by_server: Gauge,
    dropped: Counter,
}

impl ShardMetrics {
    /// Whether the server applied the selector to the last list.
    pub(crate) fn server_filtered(&self, yes: bool) {
        self.by_server.set(i64::from(yes));
    }

    /// An object outside the shard was dropped.
    pub(crate) fn dropped(&self) {
        self.dropped.inc();
    }
}

fn label(name: &str) -> NameLabel {
    NameLabel {
        name: name.to_string(),
    }
}
