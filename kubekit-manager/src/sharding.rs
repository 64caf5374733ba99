//! [`Sharding`]: replicas of a manager that split the objects between them, coordinated by
//! one Lease per replica and nothing else.
//!
//! A manager built with [`ManagerBuilder::sharding`](super::ManagerBuilder::sharding) is a
//! *member* of a *ring*. Each member holds a Lease of its own (named after the ring and its
//! identity, labelled [`RING_LABEL`]` = <ring>`), renewed every retry period as leader
//! election renews its lease. The live members, sorted by identity, cut the hash space
//! into contiguous ranges ([`ShardRange::even_parts`]); each member's controllers reconcile
//! only the objects whose shard hash ([`ShardKey`]: the namespace, or the uid) falls in the
//! ranges it *works on*.
//!
//! # The handover
//!
//! Each member publishes in its Lease (annotation [`HELD_ANNOTATION`]) the ranges it
//! holds: every hash it works on, is giving up, or is claiming. Every retry period it reads
//! every Lease of the ring (a quorum read, never a cache), and:
//!
//! - **gives up** a range it no longer desires by first refusing new reconciles of its keys
//!   (the workers ask the manager's gate before each reconcile; a key outside the working
//!   ranges is dropped and forgotten), then waiting for the reconciles in flight on it to
//!   return, and only then writing the smaller set;
//! - **takes** a range it desires only when no other live member's published set overlaps
//!   it: it writes its claim, reads the ring again, and starts work on the part of the
//!   claim that no other live member publishes (of two members claiming one hash, the one
//!   that wrote last reads the other's claim and backs off; both may); then it enqueues
//!   every cached object of the range.
//!
//! A member reads and writes the ring through a client of its own (its own client-side
//! rate limiter): a renewal never waits behind the controllers' requests. It also watches
//! the ring's Leases: when another member writes its Lease released, it runs a round at
//! once rather than at its next retry period, so released ranges move within a round trip
//! or two (the watch only wakes it; what it decides comes from its own quorum read).
//!
//! *Live* is judged by the reader's monotonic clock, as leader election judges a lease: a
//! member whose record has not changed for its lease duration (the larger of its and the
//! reader's) since the reader last saw it change (in its watch of the ring, or at a round's
//! read when the watch is down) is expired and counts as holding nothing;
//! a released record (no holder) holds nothing at once. A record that vanished counts as
//! it was last seen, until it expires.
//!
//! # What it promises
//!
//! Given that every member runs this algorithm, with distinct identities, and that their
//! clocks run at about the same *rate*:
//!
//! - **No object is reconciled by two members at once**, up to reconciles stopping
//!   promptly: a member works only on hashes it published and then read no other live
//!   member publishing, and it keeps them published until its reconciles on them have
//!   returned.
//! - **A member that cannot renew stops on its own clock.** When `renew_deadline` has
//!   passed since it sent its last successful write, it stops admitting reconciles and
//!   cancels those in flight (they are dropped at their next `.await`); the manager's
//!   clientset refuses its writes from that instant by the clock alone (a member paused
//!   past it and resumed writes nothing). The others wait `lease_duration` from when they
//!   saw that write, which is later.
//! - **Release.** When the manager is cancelled, no reconcile starts any more and its
//!   writes are refused (a reconcile in flight returns at its next write), the reconciles
//!   in flight return, then the member writes its Lease released (no holder, nothing held)
//!   and the others, woken by their watch of the ring, take its ranges at once (at their
//!   next retry at the latest); it is deleted by a member that has seen it released for a
//!   lease duration (as is a record expired for two).
//!
//! What is **not** promised: as with leader election, this is not server-side fencing. A
//! write that passed the clock check and was then delayed on its way, or a write through
//! another client, is not stopped; deleting a live member's Lease by hand lets a member
//! that never saw it take its ranges early. Make writes that must never come from two
//! replicas conditional (a resourceVersion precondition).
//!
//! # Narrowed informers
//!
//! A member's informers cache only what it holds (every range it publishes): each
//! controller's primary type by the shard key, through the informer's
//! [`ShardControl`](kubekit_runtime::cache::ShardControl) (the server's `shardSelector`, or the
//! reflector's own filtering on a server without the feature). When the held ranges change
//! the informer drops its watch and relists with the new selector at the last
//! resourceVersion it applied; the relist replaces its cache, so objects in ranges still
//! held are kept (none missed: the list is the state at or after the last event applied)
//! and the others deleted. A range taken is published at once but worked on only when every
//! narrowed informer has relisted and processed the relist (its indexer holds the objects);
//! then its cached objects are enqueued. A range given up stays cached until its
//! reconciles in flight returned and it is published given up. Before the member takes any
//! range its informers cache nothing.
//!
//! With namespace sharding, owned and watched types are narrowed by their namespace too: an
//! owner and its children share a namespace, so they land on one member. With uid sharding
//! an owned type (`owns`) is narrowed by its controller's uid
//! ([`ShardKey::ControllerUid`]): a child is cached by the member that works on its
//! controller, and so only its events enqueue that controller's key; objects nobody
//! controls are cached by every member (a reconcile that checks a name is free before
//! adopting it still sees them). kube-apiserver cannot hash that field, so these informers'
//! reflectors filter alone: each member still receives and decodes every child, and caches
//! its share. What each key saves a member in bytes, objects and CPU, measured on a ring
//! of App controllers, is in the `ring` section of `bench/README.md` (`bench/run.sh
//! ring`). A type mapped by `watches` stays whole with uid sharding: its objects' fields
//! say nothing of which primary objects they map to. An informer that two uses would
//! narrow by different keys (or one narrows and another uses whole) stays whole.
//!
//! # Timing
//!
//! As leader election's (client-go's defaults): `lease_duration` 15 s, `renew_deadline`
//! 10 s, `retry_period` 2 s (with up to 20 % jitter), and `lease_duration > renew_deadline >
//! 1.2 × retry_period > 0`. A released range is taken within a round or two of the
//! release (one retry period if the watch of the ring is down); a dead member's at
//! `lease_duration` after its last renewal reached the survivors' watches, in the round
//! each starts at that instant (one retry period later if the watch is down).
//!
//! # Metrics
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `kubekit_shard_ranges_held` | `ring` | contiguous ranges this member works on |
//! | `kubekit_shard_hash_space_held_ratio` | `ring` | share of the hash space it works on |
//! | `kubekit_shard_members` | `ring` | live members it sees, itself included |
//! | `kubekit_shard_objects` | `ring`, `controller` | cached primary objects in its ranges |
//! | `kubekit_shard_handovers_total` | `ring`, `direction` (`acquired`, `released`) | ranges taken and given up |
//! | `kubekit_shard_handover_duration_seconds` | `ring`, `direction` | from wanting (or starting to give up) a range to working on it (or publishing it given up) |
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::cache::ShardKey;
//! use kubekit::controller::{ReconcileAction, shutdown_signal};
//! use kubekit::manager::{Manager, Sharding};
//!
//! async fn reconcile(cm: Arc<ConfigMap>, _ctx: Arc<()>) -> Result<ReconcileAction, kubekit::rest::Error> {
//!     println!("{:?}", cm.metadata.name);
//!     Ok(ReconcileAction::Done)
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = kubekit::rest::RestConfig::infer().await?;
//! let mut mgr = Manager::builder(config)
//!     .sharding(Sharding::new("configmaps", ShardKey::Namespace).lease_namespace("demo"))
//!     .build()?;
//! mgr.controller::<ConfigMap>("configmaps").build(reconcile, Arc::new(()))?;
//! mgr.start(shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

mod gate;
mod ranges;
mod store;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::time::{Instant, sleep_until, timeout};
use tokio_util::sync::CancellationToken;

pub(crate) use gate::{ShardGate, ShardWaitFn, SweepFn};
pub(crate) use store::LeaseStore;

use kubekit_runtime::cache::{ShardKey, ShardRange};
use kubekit_runtime::leaderelection::{
    ConfigError, DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD,
    default_identity, validate_timing,
};
use ranges::RangeSet;
use store::{MemberRecord, MemberStore, StoredMember};

/// The label on every Lease of a ring; its value is the ring's name.
pub const RING_LABEL: &str = "kubekit.io/shard-ring";

/// The annotation of a member's Lease listing the ranges it holds: `0x<start>-0x<end>`
/// ranges of the hash space joined by `,` (bounds as in a
/// [`ShardSelector`](kubekit_runtime::cache::ShardSelector)); empty when it holds none. A member
/// reading text it cannot parse counts that member as holding everything.
pub const HELD_ANNOTATION: &str = "kubekit.io/shard-held";

/// Why a [`Sharding`] configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardingError {
    /// The ring's name is not a valid label value.
    #[error(
        "sharding: ring name {0:?} must be a label value: 1 to 63 letters, digits, '-', '_' \
         or '.', beginning and ending with a letter or digit"
    )]
    InvalidRing(String),
    /// The identity, once made a Lease name, is empty.
    #[error("sharding: identity {0:?} has no letter or digit to name its Lease after")]
    InvalidIdentity(String),
    /// The timing or identity, by leader election's rules.
    #[error("sharding: {0}")]
    Timing(#[from] ConfigError),
    /// Sharding and leader election were both asked for.
    #[error("sharding and leader election are exclusive: a sharded manager's members all work")]
    WithLeaderElection,
}

/// How a sharded manager's replicas split the work; see the [module docs](self).
///
/// ```
/// use std::time::Duration;
/// use kubekit::cache::ShardKey;
/// use kubekit::manager::{Sharding, ShardingError};
///
/// let sharding = Sharding::new("apps", ShardKey::Uid)
///     .lease_namespace("app-system")
///     .identity("replica-0")
///     .lease_duration(Duration::from_secs(6))
///     .renew_deadline(Duration::from_secs(4))
///     .retry_period(Duration::from_secs(1));
/// assert!(sharding.validate().is_ok());
/// assert_eq!(sharding.lease_name(), "apps-replica-0");
///
/// let err = Sharding::new("no spaces", ShardKey::Uid).validate().unwrap_err();
/// assert!(matches!(err, ShardingError::InvalidRing(_)));
/// ```
#[derive(Debug, Clone)]
pub struct Sharding {
    ring: String,
    key: ShardKey,
    namespace: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
}

impl Sharding {
    /// Members of `ring` splitting the objects by the hash of `key`, with client-go's
    /// leader election timing (15 s, 10 s, 2 s), Leases in `default`, and the identity
    /// [`default_identity()`] (host name and a random suffix).
    pub fn new(ring: impl Into<String>, key: ShardKey) -> Self {
        Self {
            ring: ring.into(),
            key,
            namespace: "default".into(),
            identity: default_identity(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
        }
    }

    /// The namespace of the ring's Leases (default `default`).
    pub fn lease_namespace(mut self, namespace: &str) -> Self {
        self.namespace = namespace.to_string();
        self
    }

    /// This member's identity (default: [`default_identity()`]); unique in the ring, and
    /// the order of the members (and so of their ranges) is that of their identities.
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// How long the others wait after they last saw this member's Lease change before
    /// they count it dead (default 15 s; whole seconds).
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How long after its last successful renewal a member stops all work when it cannot
    /// renew (default 10 s).
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.renew_deadline = deadline;
        self
    }

    /// Time between renewals (default 2 s, plus up to 20 % jitter).
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.retry_period = period;
        self
    }

    /// The namespace of the ring's Leases.
    pub fn namespace_name(&self) -> &str {
        &self.namespace
    }

    /// The ring's name.
    pub fn ring(&self) -> &str {
        &self.ring
    }

    /// The shard key.
    pub fn key(&self) -> ShardKey {
        self.key
    }

    /// This member's Lease: `<ring>-<identity>`, the identity lowercased and every
    /// character a Lease name does not allow made `-`.
    pub fn lease_name(&self) -> String {
        let identity: String = self
            .identity
            .to_lowercase()
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '.' | '-' => c,
                _ => '-',
            })
            .collect();
        let identity = identity.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        let mut name = format!("{}-{identity}", self.ring.to_lowercase().replace('_', "-"));
        name.truncate(253);
        name.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_string()
    }

    /// Checks the ring's name, the identity and the timing (leader election's rules).
    pub fn validate(&self) -> Result<(), ShardingError> {
        let ring = &self.ring;
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        let edges = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        if ring.is_empty()
            || ring.len() > 63
            || !ring.chars().all(allowed)
            || !edges(ring.chars().next())
            || !edges(ring.chars().last())
        {
            return Err(ShardingError::InvalidRing(ring.clone()));
        }
        validate_timing(
            Some(&self.identity),
            self.lease_duration,
            self.renew_deadline,
            self.retry_period,
        )?;
        if !self.identity.chars().any(|c| c.is_ascii_alphanumeric()) {
            return Err(ShardingError::InvalidIdentity(self.identity.clone()));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RingLabel {
    ring: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    ring: String,
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabel {
    ring: String,
    direction: &'static str,
}

fn handover_histogram() -> Histogram {
    // 10 ms … ~80 s.
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

/// The sharding metric families of a manager's registry (see the [module docs](self)).
#[derive(Clone)]
pub(crate) struct ShardingMetrics {
    ranges: Family<RingLabel, Gauge>,
    ratio: Family<RingLabel, Gauge<f64, AtomicU64>>,
    members: Family<RingLabel, Gauge>,
    objects: Family<ControllerLabel, Gauge>,
    handovers: Family<DirectionLabel, Counter>,
    duration: Family<DirectionLabel, Histogram, fn() -> Histogram>,
}

impl Default for ShardingMetrics {
    fn default() -> Self {
        Self {
            ranges: Family::default(),
            ratio: Family::default(),
            members: Family::default(),
            objects: Family::default(),
            handovers: Family::default(),
            duration: Family::new_with_constructor(handover_histogram),
        }
    }
}

impl fmt::Debug for ShardingMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardingMetrics").finish_non_exhaustive()
    }
}

impl ShardingMetrics {
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "kubekit_shard_ranges_held",
            "Contiguous ranges of the hash space this member works on",
            self.ranges.clone(),
        );
        registry.register(
            "kubekit_shard_hash_space_held_ratio",
            "Share of the hash space this member works on",
            self.ratio.clone(),
        );
        registry.register(
            "kubekit_shard_members",
            "Live members of the ring this member sees, itself included",
            self.members.clone(),
        );
        registry.register(
            "kubekit_shard_objects",
            "Cached primary objects of a controller in the ranges this member works on",
            self.objects.clone(),
        );
        registry.register(
            "kubekit_shard_handovers",
            "Ranges this member took (acquired) or gave up (released)",
            self.handovers.clone(),
        );
        registry.register(
            "kubekit_shard_handover_duration_seconds",
            "From wanting a range to working on it (acquired), or from refusing new work on \
             it to publishing it given up (released)",
            self.duration.clone(),
        );
    }

    fn handover(&self, ring: &str, direction: &'static str, took: Duration) {
        let label = DirectionLabel {
            ring: ring.to_string(),
            direction,
        };
        self.handovers.get_or_create(&label).inc();
        self.duration
            .get_or_create(&label)
            .observe(took.as_secs_f64());
    }
}

/// Another member as this one last saw it.
struct Peer {
    record: MemberRecord,
    /// What it holds (nothing once released; everything if unreadable).
    held: RangeSet,
    resource_version: String,
    /// When its record last changed, by the local clock.
    at: Instant,
    /// Missing from the last read.
    gone: bool,
}

impl Peer {
    fn released(&self) -> bool {
        self.record.holder.is_empty()
    }

    /// How long after `at` it expires: the larger of its lease duration and ours.
    fn expiry(&self, ours: Duration) -> Duration {
        let secs = u64::try_from(self.record.lease_duration_seconds).unwrap_or(0);
        Duration::from_secs(secs).max(ours)
    }

    fn alive(&self, now: Instant, ours: Duration) -> bool {
        !self.released() && now < self.at + self.expiry(ours)
    }
}

/// One member's membership loop over a [`MemberStore`]; see the [module docs](self).
pub(crate) struct Member<S> {
    store: S,
    gate: Arc<ShardGate>,
    ring: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    metrics: Option<ShardingMetrics>,
    peers: HashMap<String, Peer>,
    own_resource_version: Option<String>,
    /// New reconciles may start here.
    working: RangeSet,
    /// Given up: no new reconciles, maybe some in flight; still published.
    draining: RangeSet,
    draining_since: Option<Instant>,
    /// Stopped at once when the lease was lost, maybe some reconciles still unwinding;
    /// still published, never worked on again without a new claim.
    stopping: RangeSet,
    /// Taken (claimed and verified), published, and not worked on until the narrowed
    /// informers hold its objects.
    syncing: RangeSet,
    /// What the narrowed informers were last told to cache.
    narrowed: Option<RangeSet>,
    /// Ready once the narrowed informers hold `narrowed`.
    narrowing: Option<futures_util::future::BoxFuture<'static, ()>>,
    /// Since when a desired range has not been worked on.
    wanting_since: Option<Instant>,
    /// The end of the lease by the local clock: last successful write sent + renew deadline.
    renewed_until: Option<Instant>,
}

impl<S> fmt::Debug for Member<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Member")
            .field("ring", &self.ring)
            .field("identity", &self.identity)
            .field("working", &self.working.to_string())
            .field("draining", &self.draining.to_string())
            .finish_non_exhaustive()
    }
}

impl<S: MemberStore> Member<S> {
    pub(crate) fn new(
        store: S,
        gate: Arc<ShardGate>,
        sharding: &Sharding,
        metrics: Option<ShardingMetrics>,
    ) -> Self {
        Self {
            store,
            gate,
            ring: sharding.ring.clone(),
            identity: sharding.identity.clone(),
            lease_duration: sharding.lease_duration,
            renew_deadline: sharding.renew_deadline,
            retry_period: sharding.retry_period,
            metrics,
            peers: HashMap::new(),
            own_resource_version: None,
            working: RangeSet::default(),
            draining: RangeSet::default(),
            draining_since: None,
            stopping: RangeSet::default(),
            syncing: RangeSet::default(),
            narrowed: None,
            narrowing: None,
            wanting_since: None,
            renewed_until: None,
        }
    }

    /// Narrows the manager's informers to what this member holds (and its ranges being
    /// synced): nothing before it took any range. Called before the informers start, and
    /// after every round.
    pub(crate) fn narrow_informers(&mut self) {
        let held = self.held();
        if self.narrowed.as_ref() == Some(&held) {
            return;
        }
        tracing::debug!(ranges = %held, "narrowing the informers to the held shard ranges");
        self.narrowing = self.gate.narrow(&held);
        self.narrowed = Some(held);
    }

    /// The ranges being synced, once the informers hold them: worked on (and their objects
    /// enqueued) while the lease holds by the local clock.
    fn promote(&mut self) {
        let syncing = std::mem::take(&mut self.syncing);
        if syncing.is_empty() {
            return;
        }
        if self
            .renewed_until
            .is_none_or(|until| Instant::now() >= until)
        {
            // Still published; dropped from the set once nothing is in flight (none is).
            self.stopping = self.stopping.union(&syncing);
            return;
        }
        tracing::info!(lease = %self.store.describe(), ranges = %syncing, "took shard ranges: the informers hold their objects");
        self.working = self.working.union(&syncing);
        self.gate.set_working(&self.working);
        self.gate.sweep(&syncing);
        if let (Some(m), Some(since)) = (&self.metrics, self.wanting_since) {
            m.handover(&self.ring, "acquired", Instant::now() - since);
        }
        self.wanting_since = None;
        self.update_metrics(None);
    }

    /// The gate its manager's workers ask.
    pub(crate) fn gate(&self) -> &Arc<ShardGate> {
        &self.gate
    }

    /// Takes part in the ring until `release` fires, then releases this member's Lease.
    /// The caller fires `release` once no reconcile runs any more.
    pub(crate) async fn run(mut self, release: CancellationToken) {
        tracing::info!(lease = %self.store.describe(), identity = %self.identity, "joining the shard ring");
        loop {
            let round = Instant::now();
            let gate = Arc::clone(&self.gate);
            let deadline = self.renewed_until;
            let lost = {
                let tick = self.tick();
                tokio::pin!(tick);
                tokio::select! {
                    biased;
                    () = &mut tick => false,
                    () = sleep_until_some(deadline) => {
                        // Stop at once, even with a request still in flight.
                        gate.stop_all();
                        tick.await;
                        true
                    }
                }
            };
            if lost || self.renewed_until.is_some_and(|u| Instant::now() >= u) {
                self.lose();
            }
            self.narrow_informers();
            if self.narrowing.is_none() {
                self.promote();
            }
            // The next round: a retry period on, or as soon as a member expires (at once
            // for one that expired while this round's requests were under way).
            let next = Instant::now() + kubekit_client::retry::jitter(self.retry_period, 0.2);
            let next = self.next_expiry(round).map_or(next, |e| e.min(next));
            let mut narrowing = self.narrowing.take();
            let pending = !self.syncing.is_empty();
            let mut synced = false;
            tokio::select! {
                biased;
                _ = release.cancelled() => break,
                () = sleep_until_some(self.renewed_until) => self.lose(),
                () = async { if let Some(n) = narrowing.as_mut() { n.await } }, if pending && narrowing.is_some() => {
                    synced = true;
                }
                // Another member released its ranges: take them now.
                () = self.store.released() => {}
                () = sleep_until(next) => {}
            }
            if synced {
                self.promote();
            } else if self.narrowing.is_none() {
                self.narrowing = narrowing;
            }
        }
        self.release().await;
    }

    /// The renew deadline passed: nothing is worked on any more, by the local clock.
    fn lose(&mut self) {
        if !self.working.is_empty() || !self.draining.is_empty() {
            tracing::warn!(lease = %self.store.describe(), deadline = ?self.renew_deadline,
                "could not renew the shard lease within the renew deadline: stopping all work");
        }
        self.stop_all();
    }

    /// Stops all work at once; see [`lose`](Self::lose).
    fn stop_all(&mut self) {
        self.gate.stop_all();
        // Still published until the reconciles told to stop have returned (see `plan`),
        // but never worked on again without a new claim: others may have taken them.
        let working = std::mem::take(&mut self.working);
        let draining = std::mem::take(&mut self.draining);
        let syncing = std::mem::take(&mut self.syncing);
        self.stopping = self
            .stopping
            .union(&working)
            .union(&draining)
            .union(&syncing);
        self.draining_since = None;
        self.renewed_until = None;
        self.update_metrics(None);
    }

    /// One round: read the ring, decide, write (renewing), and verify new claims.
    async fn tick(&mut self) {
        let read = self.read().await;
        let members = read.then(|| self.plan());
        let claims = members
            .clone()
            .map(|(claims, _)| claims)
            .unwrap_or_default();
        let publish = self.held().union(&claims);
        let sent = Instant::now();
        let secs = i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let rv = self.own_resource_version.clone();
        let write = self
            .store
            .write(&self.identity, secs, &publish, rv.as_deref());
        match timeout(self.renew_deadline, write).await {
            Ok(Ok(rv)) => {
                self.own_resource_version = Some(rv);
                let until = sent + self.renew_deadline;
                self.renewed_until = Some(until);
                self.gate.set_until(Some(until));
            }
            Ok(Err(e)) => {
                tracing::warn!(lease = %self.store.describe(), error = %e, "failed to renew the shard lease");
                return;
            }
            Err(_) => {
                tracing::warn!(lease = %self.store.describe(), "renewing the shard lease timed out");
                return;
            }
        }
        if !claims.is_empty() && self.read().await {
            self.verify(&claims);
        }
        self.update_metrics(members.map(|(_, n)| n));
    }

    /// Reads every member's record; returns whether it could.
    async fn read(&mut self) -> bool {
        match timeout(self.renew_deadline, self.store.list()).await {
            Ok(Ok(list)) => {
                self.observe(list);
                self.collect_garbage().await;
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(lease = %self.store.describe(), error = %e, "failed to read the shard ring");
                false
            }
            Err(_) => {
                tracing::warn!(lease = %self.store.describe(), "reading the shard ring timed out");
                false
            }
        }
    }

    /// Records what was read: a peer's clock restarts only when its record changed, from
    /// when this member first saw the new record (its watch of the ring may have, before
    /// this read).
    fn observe(&mut self, list: Vec<StoredMember>) {
        let now = Instant::now();
        let own = self.store.own_name().to_string();
        let store = &self.store;
        let seen = |name: &str, record: &MemberRecord| {
            store.first_seen(name, record).map_or(now, |at| at.min(now))
        };
        self.own_resource_version = None;
        for peer in self.peers.values_mut() {
            peer.gone = true;
        }
        for member in list {
            if member.name == own {
                self.own_resource_version = Some(member.resource_version);
                continue;
            }
            match self.peers.entry(member.name) {
                Entry::Occupied(mut e) => {
                    let name = e.key().clone();
                    let peer = e.get_mut();
                    peer.gone = false;
                    peer.resource_version = member.resource_version;
                    if peer.record != member.record {
                        peer.at = seen(&name, &member.record);
                        peer.held = held_of(&name, &member.record);
                        peer.record = member.record;
                    }
                }
                Entry::Vacant(e) => {
                    let held = held_of(e.key(), &member.record);
                    let at = seen(e.key(), &member.record);
                    e.insert(Peer {
                        record: member.record,
                        held,
                        resource_version: member.resource_version,
                        at,
                        gone: false,
                    });
                }
            }
        }
        let ours = self.lease_duration;
        self.peers
            .retain(|_, p| !(p.gone && (p.released() || !p.alive(now, ours))));
    }

    /// Deletes the records of members released for a lease duration, or expired for two.
    async fn collect_garbage(&mut self) {
        let now = Instant::now();
        let ours = self.lease_duration;
        let stale: Vec<(String, String)> = self
            .peers
            .iter()
            .filter(|(_, p)| {
                let expiry = p.expiry(ours);
                let dead_for = if p.released() { expiry } else { expiry * 2 };
                !p.gone && now >= p.at + dead_for
            })
            .map(|(name, p)| (name.clone(), p.resource_version.clone()))
            .collect();
        for (name, rv) in stale {
            match self.store.delete(&name, &rv).await {
                Ok(()) => {
                    tracing::info!(lease = %name, "deleted the shard lease of a departed member");
                    self.peers.remove(&name);
                }
                Err(e) => {
                    tracing::debug!(lease = %name, error = %e, "could not delete a departed member's shard lease")
                }
            }
        }
    }

    /// When the first member that was live at `since` expires by the local clock (maybe
    /// already).
    fn next_expiry(&self, since: Instant) -> Option<Instant> {
        self.peers
            .values()
            .filter(|p| p.alive(since, self.lease_duration))
            .map(|p| p.at + p.expiry(self.lease_duration))
            .min()
    }

    /// What this member holds without its claims: published at every renewal.
    fn held(&self) -> RangeSet {
        self.working
            .union(&self.draining)
            .union(&self.stopping)
            .union(&self.syncing)
    }

    /// What the other live members hold.
    fn others_held(&self, now: Instant) -> RangeSet {
        self.peers
            .values()
            .filter(|p| p.alive(now, self.lease_duration))
            .fold(RangeSet::default(), |acc, p| acc.union(&p.held))
    }

    /// Decides from the last read: gives up what is no longer desired, finishes giving up
    /// what has no reconcile in flight, and returns the claims to write (and the number of
    /// live members).
    fn plan(&mut self) -> (RangeSet, usize) {
        let now = Instant::now();
        let mut live: Vec<&str> = self
            .peers
            .values()
            .filter(|p| p.alive(now, self.lease_duration))
            .map(|p| p.record.holder.as_str())
            .collect();
        live.push(&self.identity);
        live.sort_unstable();
        live.dedup();
        let count = u32::try_from(live.len()).unwrap_or(u32::MAX);
        let index = live.iter().position(|m| *m == self.identity).unwrap_or(0);
        let desired: RangeSet = ShardRange::even_parts(count)
            .get(index)
            .map(|r| RangeSet::from(*r))
            .unwrap_or_default();

        // Not worked on yet: a range being synced that is no longer desired is dropped.
        self.syncing = self.syncing.intersect(&desired);
        // Still published: a range being given up that is desired again is worked on again.
        let back = self.draining.intersect(&desired);
        if !back.is_empty() {
            self.working = self.working.union(&back);
            self.draining = self.draining.subtract(&back);
        }
        let give_up = self.working.subtract(&desired);
        if !give_up.is_empty() {
            tracing::info!(lease = %self.store.describe(), ranges = %give_up, members = live.len(),
                "giving shard ranges up: no new reconciles of their objects");
            self.working = self.working.intersect(&desired);
            self.draining = self.draining.union(&give_up);
            self.draining_since.get_or_insert(now);
        }
        // Before counting what is in flight: nothing new starts on what is given up.
        self.gate.set_working(&self.working);
        if !self.draining.is_empty() {
            match self.gate.in_flight_within(&self.draining) {
                0 => {
                    tracing::info!(lease = %self.store.describe(), ranges = %self.draining,
                        "no reconcile in flight on the ranges given up: publishing them released");
                    if let (Some(m), Some(since)) = (&self.metrics, self.draining_since) {
                        m.handover(&self.ring, "released", now - since);
                    }
                    self.draining = RangeSet::default();
                    self.draining_since = None;
                }
                n => tracing::debug!(ranges = %self.draining, in_flight = n,
                    "waiting for reconciles in flight on the ranges given up"),
            }
        }
        if !self.stopping.is_empty() && self.gate.in_flight_within(&self.stopping) == 0 {
            tracing::info!(ranges = %self.stopping, "the reconciles stopped when the lease was lost have returned");
            self.stopping = RangeSet::default();
        }
        let wanted = desired.subtract(&self.held());
        if wanted.is_empty() {
            self.wanting_since = None;
        } else {
            self.wanting_since.get_or_insert(now);
        }
        (wanted.subtract(&self.others_held(now)), live.len())
    }

    /// After writing `claims` and reading the ring again: works on the part no other live
    /// member publishes, while the lease holds by the local clock.
    fn verify(&mut self, claims: &RangeSet) {
        let now = Instant::now();
        if self.renewed_until.is_none_or(|until| now >= until) {
            return;
        }
        let granted = claims.subtract(&self.others_held(now));
        if granted.is_empty() {
            tracing::debug!(ranges = %claims, "claimed shard ranges are published by another member: backing off");
            return;
        }
        // Worked on once the narrowed informers hold the new ranges' objects (at once
        // without narrowed informers).
        self.syncing = self.syncing.union(&granted);
        self.narrow_informers();
        if self.narrowing.is_none() {
            self.promote();
        } else {
            tracing::info!(lease = %self.store.describe(), ranges = %granted,
                "claimed shard ranges: waiting for the informers to list their objects");
        }
    }

    fn update_metrics(&self, members: Option<usize>) {
        let Some(m) = &self.metrics else { return };
        let ring = RingLabel {
            ring: self.ring.clone(),
        };
        let ranges = i64::try_from(self.working.len()).unwrap_or(i64::MAX);
        m.ranges.get_or_create(&ring).set(ranges);
        m.ratio.get_or_create(&ring).set(self.working.fraction());
        if let Some(n) = members {
            m.members
                .get_or_create(&ring)
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        for (controller, n) in self.gate.count(&self.working) {
            let label = ControllerLabel {
                ring: self.ring.clone(),
                controller,
            };
            m.objects
                .get_or_create(&label)
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Stops all work and writes the Lease released (no holder, nothing held), so the
    /// others take its ranges at their next round. Bounded by the renew deadline.
    async fn release(&mut self) {
        self.stop_all();
        let limit = self.renew_deadline;
        let nothing = RangeSet::default();
        let attempt = async {
            for _ in 0..3 {
                let rv = self.own_resource_version.clone();
                let write = self.store.write("", 1, &nothing, rv.as_deref());
                match write.await {
                    Ok(_) => {
                        tracing::info!(lease = %self.store.describe(), "released the shard lease");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(lease = %self.store.describe(), error = %e, "failed to release the shard lease");
                        if !self.read().await {
                            return;
                        }
                    }
                }
            }
        };
        let _ = timeout(limit, attempt).await;
    }
}

/// What a peer's record holds: nothing once released; everything, with a warning, when
/// its text cannot be read.
fn held_of(name: &str, record: &MemberRecord) -> RangeSet {
    if record.holder.is_empty() {
        return RangeSet::default();
    }
    RangeSet::parse(&record.held).unwrap_or_else(|reason| {
        tracing::warn!(lease = %name, annotation = HELD_ANNOTATION, %reason,
            "unreadable held ranges in a member's shard lease: counting it as holding everything");
        RangeSet::full()
    })
}

/// Sleeps until `until`, or forever without one.
async fn sleep_until_some(until: Option<Instant>) {
    match until {
        Some(until) => sleep_until(until).await,
        None => std::future::pending().await,
    }
}
