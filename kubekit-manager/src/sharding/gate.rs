//! [`ShardGate`]: where a sharded manager's workers ask whether they may start a
//! reconcile, and where its membership learns which reconciles are still running.
//!
//! # What it promises
//!
//! - [`try_start`](ShardGate::try_start) admits a reconcile only when the object's shard
//!   hash is in the *working* set and this member's lease is still valid by the local
//!   monotonic clock (the instant set by [`set_until`](ShardGate::set_until)); the
//!   check and the in-flight count are one step under one lock, so once
//!   [`set_working`](ShardGate::set_working) has narrowed the set, no reconcile of a
//!   removed hash starts, and [`in_flight_within`](ShardGate::in_flight_within) counts
//!   every one that did.
//! - [`stop_all`](ShardGate::stop_all) empties the working set and cancels the token of
//!   every admitted reconcile: the manager's reconcilers drop their future on it.
//! - [`close`](ShardGate::close) admits nothing from then on, for good, and lets the
//!   reconciles in flight return: the manager's shutdown, before the member releases.
//! - The [`fence`](ShardGate::fence) refuses writes past that instant by the clock alone,
//!   before any timer has run (a member paused past its renew deadline and resumed), and
//!   every write once the gate is closed: a reconcile in flight at shutdown returns at its
//!   next write (refused at once, or within 50 ms if it is waiting for the client-side rate
//!   limit) rather than after all its writes, and the ranges are handed over once the
//!   writes already sent have been answered.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, join_all};

use super::ranges::RangeSet;
use kubekit_runtime::cache::{ShardControl, ShardKey, ShardSelector, ShardTarget, shard_hash};

/// Enqueues (or, with `false`, only counts) the cached primary objects of a controller
/// whose hash is in the set; returns how many there are.
pub(crate) type SweepFn = Box<dyn Fn(&RangeSet, bool) -> usize + Send + Sync>;

/// Waits until an informer's cache reflects a generation of its shard control.
pub(crate) type ShardWaitFn = Box<dyn Fn(u64) -> BoxFuture<'static, ()> + Send + Sync>;

/// An informer of the manager, narrowed to the held ranges or not.
struct GatedInformer {
    /// The resource's name (one informer per resource in the factory).
    resource: String,
    control: ShardControl,
    wait: ShardWaitFn,
    /// The key this use of the informer narrows it by; a use that may not narrow it
    /// (`None`: a type mapped by `watches` with uid sharding), or uses that disagree on the
    /// key, keep it caching everything.
    narrow: Option<ShardKey>,
}

struct GateState {
    working: RangeSet,
    /// Admitted reconciles per hash.
    in_flight: HashMap<u64, usize>,
    /// Cancelled by [`ShardGate::stop_all`]; replaced then.
    term: CancellationToken,
    /// The end of this member's lease by the local clock; `None`: not a member.
    until: Option<Instant>,
    /// Set by [`ShardGate::close`]: nothing is admitted any more.
    closed: bool,
}

/// The gate between a sharded manager's membership and its workers; see the
/// [module docs](self).
pub(crate) struct ShardGate {
    key: ShardKey,
    state: Mutex<GateState>,
    sweeps: Mutex<Vec<(String, SweepFn)>>,
    informers: Mutex<Vec<GatedInformer>>,
}

/// A reconcile admitted by [`ShardGate::try_start`]; counted in flight until dropped.
pub(crate) struct InFlight {
    gate: Arc<ShardGate>,
    hash: u64,
    term: CancellationToken,
}

impl InFlight {
    /// Cancelled when this member must stop all its work at once.
    pub(crate) fn term(&self) -> &CancellationToken {
        &self.term
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.gate.state.lock();
        if let Some(n) = state.in_flight.get_mut(&self.hash) {
            *n -= 1;
            if *n == 0 {
                state.in_flight.remove(&self.hash);
            }
        }
    }
}

impl ShardGate {
    /// A gate hashing `key`, admitting nothing yet.
    pub(crate) fn new(key: ShardKey) -> Self {
        Self {
            key,
            state: Mutex::new(GateState {
                working: RangeSet::default(),
                in_flight: HashMap::new(),
                term: CancellationToken::new(),
                until: None,
                closed: false,
            }),
            sweeps: Mutex::new(Vec::new()),
            informers: Mutex::new(Vec::new()),
        }
    }

    /// The shard key.
    pub(crate) fn key(&self) -> ShardKey {
        self.key
    }

    /// The shard hash of `obj`.
    pub(crate) fn hash_of<K: kube::Resource + 'static>(&self, obj: &K) -> u64 {
        shard_hash(self.key.value_of(obj))
    }

    /// Admits a reconcile of an object hashing to `hash`, if this member works on it now.
    pub(crate) fn try_start(self: &Arc<Self>, hash: u64) -> Option<InFlight> {
        let mut state = self.state.lock();
        let live = state.until.is_some_and(|until| Instant::now() < until);
        if state.closed || !live || !state.working.contains(hash) {
            return None;
        }
        *state.in_flight.entry(hash).or_default() += 1;
        Some(InFlight {
            gate: Arc::clone(self),
            hash,
            term: state.term.clone(),
        })
    }

    /// The hashes new reconciles may start on.
    pub(crate) fn set_working(&self, working: &RangeSet) {
        self.state.lock().working = working.clone();
    }

    /// The end of this member's lease by the local clock (`None`: not a member).
    pub(crate) fn set_until(&self, until: Option<Instant>) {
        self.state.lock().until = until;
    }

    /// How many admitted reconciles are still running on hashes in `set`.
    pub(crate) fn in_flight_within(&self, set: &RangeSet) -> usize {
        let state = self.state.lock();
        state
            .in_flight
            .iter()
            .filter(|(hash, _)| set.contains(**hash))
            .map(|(_, n)| *n)
            .sum()
    }

    /// Stops everything at once: nothing is admitted, every admitted reconcile is told to
    /// stop.
    pub(crate) fn stop_all(&self) {
        let mut state = self.state.lock();
        state.working = RangeSet::default();
        state.until = None;
        let term = std::mem::take(&mut state.term);
        term.cancel();
    }

    /// Admits nothing from now on, and the fence refuses every write; the reconciles in
    /// flight go on until they return (the manager is shutting down: queued keys are
    /// dropped, since whoever takes their ranges next sweeps them).
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
    }

    /// Registers a controller's sweep, called with every set this member starts working
    /// on (and to count objects for the metrics).
    pub(crate) fn add_sweep(&self, controller: &str, sweep: SweepFn) {
        self.sweeps.lock().push((controller.to_string(), sweep));
    }

    /// Registers an informer of `resource` the controllers use: narrowed to the held
    /// ranges by [`narrow`](Self::narrow), hashing the key `narrow` names (and no other use
    /// says otherwise).
    pub(crate) fn add_informer(
        &self,
        resource: &str,
        control: ShardControl,
        wait: ShardWaitFn,
        narrow: Option<ShardKey>,
    ) {
        self.informers.lock().push(GatedInformer {
            resource: resource.to_string(),
            control,
            wait,
            narrow,
        });
    }

    /// Makes every narrowed informer cache the objects whose shard hash (by its key) is in
    /// `set` (nothing for the empty set); returns a future ready once each informer's cache
    /// reflects that, or `None` when no informer is narrowed.
    pub(crate) fn narrow(&self, set: &RangeSet) -> Option<BoxFuture<'static, ()>> {
        let informers = self.informers.lock();
        let mut waits = Vec::new();
        let mut done: Vec<&str> = Vec::new();
        for informer in informers.iter() {
            let Some(key) = informer.narrow else { continue };
            let kept_whole = informers
                .iter()
                .any(|i| i.resource == informer.resource && i.narrow != Some(key));
            if kept_whole || done.contains(&informer.resource.as_str()) {
                continue;
            }
            done.push(&informer.resource);
            let target = match ShardSelector::new(key, set.ranges()) {
                Ok(selector) => ShardTarget::Shard(selector),
                Err(_) => ShardTarget::Nothing,
            };
            let generation = informer.control.set(target);
            waits.push((informer.wait)(generation));
        }
        (!waits.is_empty()).then(|| join_all(waits).map(|_| ()).boxed())
    }

    /// Enqueues every cached primary object in `set`, in every controller.
    pub(crate) fn sweep(&self, set: &RangeSet) {
        for (_, sweep) in self.sweeps.lock().iter() {
            sweep(set, true);
        }
    }

    /// The cached primary objects in `set`, per controller.
    pub(crate) fn count(&self, set: &RangeSet) -> Vec<(String, usize)> {
        let sweeps = self.sweeps.lock();
        sweeps
            .iter()
            .map(|(name, sweep)| (name.clone(), sweep(set, false)))
            .collect()
    }

    /// The hashes a reconcile may start on now (empty when the lease is not valid by the
    /// clock).
    #[cfg(test)]
    pub(crate) fn admits(&self) -> RangeSet {
        let state = self.state.lock();
        match state.until {
            Some(until) if !state.closed && Instant::now() < until => state.working.clone(),
            _ => RangeSet::default(),
        }
    }

    /// The hashes with a reconcile in flight.
    #[cfg(test)]
    pub(crate) fn in_flight_hashes(&self) -> Vec<u64> {
        self.state.lock().in_flight.keys().copied().collect()
    }

    /// A write guard refusing writes unless this member's lease is valid by the clock and
    /// the gate is open.
    pub(crate) fn fence(self: &Arc<Self>) -> kubekit_client::rest::WriteGuard {
        let gate = Arc::clone(self);
        Arc::new(move || {
            let state = gate.state.lock();
            match state.until {
                _ if state.closed => Err("the shard member is shutting down: its ranges are \
                                          being handed over"
                    .into()),
                Some(until) if Instant::now() < until => Ok(()),
                _ => Err(
                    "not a live shard member (its lease is not renewed by the local clock)".into(),
                ),
            }
        })
    }
}
