//! What the broadcaster, its recorders, correlators and sink writers share: the
//! broadcaster's and the correlator's options, the counters of events lost on the way, and
//! the helpers that print an event's object in their log lines and name new events. A
//! leaf: it imports no other part of `record`.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use k8s_openapi::jiff::Timestamp;

/// How an [`EventBroadcaster`](super::EventBroadcaster) queues, correlates and writes
/// events. The defaults are client-go's.
#[derive(Debug, Clone, PartialEq)]
pub struct BroadcasterOptions {
    /// Capacity of the broadcaster's queue, and of each watcher's buffer (default 1000;
    /// 0 counts as 1).
    pub queue_capacity: usize,
    /// The correlator each sink writer runs events through.
    pub correlator: CorrelatorOptions,
    /// Most attempts a sink writer makes to write one event (default 12; 0 counts as 1).
    pub max_tries_per_event: u32,
    /// The wait between two attempts (default 10 s). The first wait is a random fraction of
    /// it, so that clients do not retry in step after an API server outage.
    pub retry_interval: Duration,
    /// How long [`EventBroadcaster::shutdown`](super::EventBroadcaster::shutdown) waits for queued events to be delivered
    /// (default 5 s).
    pub shutdown_timeout: Duration,
}

impl Default for BroadcasterOptions {
    fn default() -> Self {
        Self {
            queue_capacity: 1000,
            correlator: CorrelatorOptions::default(),
            max_tries_per_event: 12,
            retry_interval: Duration::from_secs(10),
            shutdown_timeout: Duration::from_secs(5),
        }
    }
}

/// Settings of the correlator; the defaults are client-go's.
#[derive(Debug, Clone, PartialEq)]
pub struct CorrelatorOptions {
    /// Entries in each of the correlator's caches (spam buckets, groups of similar events,
    /// recorded events); the least recently used entry is forgotten first (default 4096;
    /// 0 counts as 1).
    pub cache_size: usize,
    /// Events one source may report about one object in a burst (default 25).
    pub spam_burst: u32,
    /// Tokens per second the spam bucket of a source and object refills (default 1/300:
    /// one event every 5 minutes once the burst is spent). `f64::INFINITY` turns the filter
    /// off; a value that is not positive, or NaN, refuses every event.
    pub spam_qps: f64,
    /// Distinct messages with the same source, object, type and reason that are written as
    /// they are: from the `max_events`-th distinct message on, events are combined into one
    /// aggregate event (default 10).
    pub max_events: usize,
    /// A group of similar events starts over after this long without one (default 10 min).
    pub max_interval: Duration,
}

impl Default for CorrelatorOptions {
    fn default() -> Self {
        Self {
            cache_size: 4096,
            spam_burst: 25,
            spam_qps: 1.0 / 300.0,
            max_events: 10,
            max_interval: Duration::from_secs(600),
        }
    }
}

/// Events lost on the way, shared by the broadcaster, its recorders and its watchers.
#[derive(Debug, Default)]
pub(super) struct Counters {
    /// Events lost because a queue was full.
    pub(super) dropped: AtomicU64,
    /// Events a spam filter refused.
    pub(super) spam_filtered: AtomicU64,
}

impl Counters {
    /// Counts and reports `event`, lost because `queue` was full.
    pub(super) fn drop_event(&self, event: &Event, queue: &str) {
        let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(
            object = %ObjectRef(&event.involved_object),
            reason = text(&event.reason),
            dropped,
            "{queue} full; event dropped"
        );
    }

    /// Counts and reports `event`, refused by the spam filter.
    pub(super) fn filter_event(&self, event: &Event) {
        let filtered = self.spam_filtered.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!(
            object = %ObjectRef(&event.involved_object),
            reason = text(&event.reason),
            filtered,
            "too many events about the object; event dropped"
        );
    }
}

/// An optional string field of an API object, `""` when unset.
pub(super) fn text(field: &Option<String>) -> &str {
    field.as_deref().unwrap_or_default()
}

/// Displays an object reference as `namespace/name`, or `name` without a namespace.
pub(super) struct ObjectRef<'a>(pub(super) &'a ObjectReference);

impl fmt::Display for ObjectRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match text(&self.0.namespace) {
            "" => f.write_str(text(&self.0.name)),
            ns => write!(f, "{ns}/{}", text(&self.0.name)),
        }
    }
}

/// A fresh Event name for an object: `<object name>.<hex>`, where the hex is the Unix time
/// in nanoseconds, as in client-go, bumped when needed so that no two names this process
/// makes are equal.
pub(super) fn event_name(object_name: &str) -> String {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = u64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(0);
    let next = |last: u64| now.max(last.saturating_add(1));
    let (Ok(last) | Err(last)) = LAST.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
        Some(next(last))
    });
    format!("{object_name}.{:x}", next(last))
}
