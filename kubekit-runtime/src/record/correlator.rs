//! The correlator a sink writer runs every event through (client-go's `EventCorrelator`):
//! spam filter, aggregation of similar events, and counting of identical ones.
//!
//! It belongs to one sink writer task, which calls it for one event at a time, so it holds
//! no lock. Its clock is tokio's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use tokio::time::Instant;

use super::shared::{CorrelatorOptions, event_name, text};
use kubekit_client::flowcontrol::TokenBucket;

/// The prefix of an aggregate event's message.
const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// What the sink writer must write for one event.
#[derive(Debug)]
pub(super) struct Correlated {
    /// The event to create; or, when `update_existing`, the new state of the event already
    /// written under the same name.
    pub(super) event: Event,
    /// An equal event was written before: patch its count, lastTimestamp and message.
    pub(super) update_existing: bool,
}

/// The spam filter's key: who reports about which object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ObjectKey {
    component: String,
    host: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    api_version: String,
}

impl ObjectKey {
    fn of(event: &Event) -> Self {
        let source = event.source.clone().unwrap_or_default();
        let object = &event.involved_object;
        Self {
            component: source.component.unwrap_or_default(),
            host: source.host.unwrap_or_default(),
            kind: text(&object.kind).to_owned(),
            namespace: text(&object.namespace).to_owned(),
            name: text(&object.name).to_owned(),
            uid: text(&object.uid).to_owned(),
            api_version: text(&object.api_version).to_owned(),
        }
    }
}

/// Similar events: the same source, object, type and reason; only the message differs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SimilarKey {
    object: ObjectKey,
    type_: String,
    reason: String,
}

/// Under which key an event is counted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum RecordedKey {
    /// An event written as recorded: similar, with this exact message.
    Exact(SimilarKey, String),
    /// The aggregate event of a group of similar events.
    Aggregate(SimilarKey),
}

/// The distinct messages of a group of similar events.
#[derive(Debug)]
struct SimilarGroup {
    /// At most `max_events - 1`: the messages still written as they are.
    messages: HashSet<String>,
    last_seen: Instant,
}

/// An event already written: later equal events patch it.
#[derive(Debug)]
struct Recorded {
    name: Option<String>,
    first_timestamp: Option<Time>,
    count: i32,
}

/// Filters, aggregates and counts events; see the [module docs](super).
#[derive(Debug)]
pub(super) struct Correlator {
    opts: CorrelatorOptions,
    spam: Lru<ObjectKey, TokenBucket>,
    similar: Lru<SimilarKey, SimilarGroup>,
    recorded: Lru<RecordedKey, Recorded>,
}

impl Correlator {
    pub(super) fn new(opts: CorrelatorOptions) -> Self {
        Self {
            spam: Lru::new(opts.cache_size),
            similar: Lru::new(opts.cache_size),
            recorded: Lru::new(opts.cache_size),
            opts,
        }
    }

    /// What to write for `event`; `None` when the spam filter refuses it. A refused event
    /// leaves no trace in the aggregation and counting state.
    pub(super) fn correlate(&mut self, event: &Event) -> Option<Correlated> {
        let object = ObjectKey::of(event);
        let (qps, burst) = (self.opts.spam_qps, self.opts.spam_burst);
        let bucket = self
            .spam
            .get_or_insert_with(object.clone(), || TokenBucket::new(qps, burst));
        if !bucket.try_acquire() {
            return None;
        }

        let similar = SimilarKey {
            object,
            type_: text(&event.type_).to_owned(),
            reason: text(&event.reason).to_owned(),
        };
        let message = text(&event.message);
        let (mut event, key) = if self.is_combined(&similar, message) {
            (aggregate_of(event), RecordedKey::Aggregate(similar))
        } else {
            let key = RecordedKey::Exact(similar, message.to_owned());
            (event.clone(), key)
        };

        let recorded = self.recorded.get_or_insert_with(key, || Recorded {
            name: event.metadata.name.clone(),
            first_timestamp: event.first_timestamp.clone(),
            count: 0,
        });
        recorded.count = recorded.count.saturating_add(1);
        event.metadata.name.clone_from(&recorded.name);
        event.first_timestamp.clone_from(&recorded.first_timestamp);
        event.count = Some(recorded.count);
        Some(Correlated {
            event,
            update_existing: recorded.count > 1,
        })
    }

    /// Notes `message` in the group `key` and tells whether it must be combined: the group
    /// already holds `max_events - 1` other messages seen with no gap over `max_interval`.
    /// Messages the group holds keep being written as they are.
    fn is_combined(&mut self, key: &SimilarKey, message: &str) -> bool {
        let now = Instant::now();
        let group = self
            .similar
            .get_or_insert_with(key.clone(), || SimilarGroup {
                messages: HashSet::new(),
                last_seen: now,
            });
        if now.saturating_duration_since(group.last_seen) > self.opts.max_interval {
            group.messages.clear();
        }
        group.last_seen = now;
        if group.messages.contains(message) {
            return false;
        }
        if group.messages.len() + 1 < self.opts.max_events {
            group.messages.insert(message.to_owned());
            return false;
        }
        true
    }
}

/// The aggregate event standing for `event` and the similar events before it: a fresh name,
/// the message prefixed with [`COMBINED_PREFIX`], everything else as in `event`.
fn aggregate_of(event: &Event) -> Event {
    let mut aggregate = event.clone();
    aggregate.metadata.name = Some(event_name(text(&event.involved_object.name)));
    aggregate.message = Some(format!("{COMBINED_PREFIX}{}", text(&event.message)));
    aggregate
}

/// A map of at most `capacity` entries that forgets the least recently used one.
#[derive(Debug)]
struct Lru<K, V> {
    capacity: usize,
    /// Increases with every use; an entry's last use orders it in `by_use`.
    clock: u64,
    entries: HashMap<K, (u64, V)>,
    by_use: BTreeMap<u64, K>,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            clock: 0,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    /// The value of `key`, made by `make` if absent (forgetting the least recently used
    /// entry when full); either way `key` becomes the most recently used.
    fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        self.clock += 1;
        let now = self.clock;
        match self.entries.get(&key) {
            Some((last_use, _)) => {
                self.by_use.remove(last_use);
            }
            None if self.entries.len() >= self.capacity => {
                if let Some((_, oldest)) = self.by_use.pop_first() {
                    self.entries.remove(&oldest);
                }
            }
            None => {}
        }
        self.by_use.insert(now, key.clone());
        let entry = self.entries.entry(key).or_insert_with(|| (now, make()));
        entry.0 = now;
        &mut entry.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_forgets_the_least_recently_used_entry() {
        let mut lru = Lru::new(2);
        *lru.get_or_insert_with("a", || 1) += 10;
        lru.get_or_insert_with("b", || 2);
        assert_eq!(*lru.get_or_insert_with("a", || 0), 11, "a is kept and used");
        lru.get_or_insert_with("c", || 3);
        assert_eq!(*lru.get_or_insert_with("a", || 0), 11, "a was used after b");
        assert_eq!(*lru.get_or_insert_with("b", || 0), 0, "b was forgotten");
        assert_eq!(lru.entries.len(), 2);
        assert_eq!(lru.by_use.len(), 2);
    }

    #[test]
    fn lru_of_capacity_zero_keeps_one_entry() {
        let mut lru = Lru::new(0);
        lru.get_or_insert_with(1, || "one");
        assert_eq!(*lru.get_or_insert_with(1, || "new"), "one");
        assert_eq!(*lru.get_or_insert_with(2, || "two"), "two");
        assert_eq!(lru.entries.len(), 1);
    }
}
