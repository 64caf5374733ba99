//! The membership and handover of sharded managers, on paused time, over an in-memory ring
//! that keeps the API server's resourceVersion preconditions.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::sleep;

use super::store::Sightings;
use super::*;
use kubekit_client::rest::Error;

const RETRY: Duration = DEFAULT_RETRY_PERIOD;
const LEASE: Duration = DEFAULT_LEASE_DURATION;
/// The longest a round's requests take: a read, a write and a read-back, each with two
/// [`latency`]s of up to 30 ms. A member's next round starts a jittered retry period
/// after its last one ended.
const ROUND: Duration = Duration::from_millis(180);

/// The members' records, as the API server would keep them.
#[derive(Default)]
struct Ring {
    records: Mutex<BTreeMap<String, (MemberRecord, u64)>>,
    versions: AtomicU64,
    /// Every store's watch of the ring.
    watches: Mutex<Vec<Watch>>,
}

/// A store's record name, and its watch of the ring: what it notifies of releases, and
/// where it records what it saw.
type Watch = (String, Arc<Notify>, Arc<Sightings>);

impl Ring {
    fn next_version(&self) -> u64 {
        self.versions.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Writes a record as a member that is not a kubekit member would (a test's).
    fn put(&self, name: &str, holder: &str, held: &str) {
        let version = self.next_version();
        let record = MemberRecord {
            holder: holder.into(),
            lease_duration_seconds: 15,
            renew: version.to_string(),
            held: held.into(),
        };
        self.records.lock().insert(name.into(), (record, version));
    }
}

fn refusal(code: i32, reason: &str) -> Error {
    let status = Status {
        code: Some(code),
        reason: Some(reason.into()),
        ..Status::default()
    };
    Error::from_status("PUT", "memory", status)
}

/// A request's latency each way: 0 to 30 ms, so that members' rounds interleave.
async fn latency() {
    sleep(Duration::from_millis(fastrand::u64(0..30))).await;
}

struct FakeStore {
    ring: Arc<Ring>,
    name: String,
    /// Every request fails while set (the member cannot reach the server).
    cut: Arc<AtomicBool>,
    released: Arc<Notify>,
    sightings: Arc<Sightings>,
}

impl FakeStore {
    fn new(ring: &Arc<Ring>, name: String, cut: Arc<AtomicBool>) -> Self {
        let released = Arc::new(Notify::new());
        let sightings = Arc::new(Sightings::default());
        ring.watches
            .lock()
            .push((name.clone(), Arc::clone(&released), Arc::clone(&sightings)));
        Self {
            ring: Arc::clone(ring),
            name,
            cut,
            released,
            sightings,
        }
    }

    fn check(&self) -> kubekit_client::rest::Result<()> {
        match self.cut.load(Ordering::Relaxed) {
            true => Err(refusal(503, "ServiceUnavailable")),
            false => Ok(()),
        }
    }
}

impl MemberStore for FakeStore {
    async fn list(&self) -> kubekit_client::rest::Result<Vec<StoredMember>> {
        latency().await;
        self.check()?;
        let list = self
            .ring
            .records
            .lock()
            .iter()
            .map(|(name, (record, version))| StoredMember {
                name: name.clone(),
                record: record.clone(),
                resource_version: version.to_string(),
            })
            .collect();
        latency().await;
        Ok(list)
    }

    async fn write(
        &self,
        holder: &str,
        lease_duration_seconds: i32,
        held: &RangeSet,
        resource_version: Option<&str>,
    ) -> kubekit_client::rest::Result<String> {
        latency().await;
        self.check()?;
        let written = self.write_now(holder, lease_duration_seconds, held, resource_version);
        latency().await;
        written
    }

    async fn delete(&self, name: &str, resource_version: &str) -> kubekit_client::rest::Result<()> {
        self.check()?;
        let mut records = self.ring.records.lock();
        match records.get(name) {
            Some((_, version)) if version.to_string() == resource_version => {
                records.remove(name);
                Ok(())
            }
            Some(_) => Err(refusal(409, "Conflict")),
            None => Err(refusal(404, "NotFound")),
        }
    }

    fn released(&self) -> impl Future<Output = ()> + Send + use<> {
        let released = Arc::clone(&self.released);
        async move { released.notified().await }
    }

    fn first_seen(&self, name: &str, record: &MemberRecord) -> Option<Instant> {
        self.sightings.first_seen(name, record)
    }

    fn own_name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

impl FakeStore {
    fn write_now(
        &self,
        holder: &str,
        lease_duration_seconds: i32,
        held: &RangeSet,
        resource_version: Option<&str>,
    ) -> kubekit_client::rest::Result<String> {
        let mut records = self.ring.records.lock();
        match (records.get(&self.name), resource_version) {
            (Some(_), None) => return Err(refusal(409, "AlreadyExists")),
            (None, Some(_)) => return Err(refusal(404, "NotFound")),
            (Some((_, current)), Some(rv)) if current.to_string() != rv => {
                return Err(refusal(409, "Conflict"));
            }
            _ => {}
        }
        let version = self.ring.next_version();
        let record = MemberRecord {
            holder: holder.into(),
            lease_duration_seconds,
            renew: version.to_string(),
            held: held.to_string(),
        };
        records.insert(self.name.clone(), (record.clone(), version));
        // The others' watches see it (with a watch's latency), and wake on a release.
        for (name, released, sightings) in self.ring.watches.lock().iter() {
            if *name != self.name {
                let (released, sightings) = (Arc::clone(released), Arc::clone(sightings));
                let (writer, record) = (self.name.clone(), record.clone());
                tokio::spawn(async move {
                    latency().await;
                    let release = record.holder.is_empty();
                    sightings.saw(&writer, record);
                    if release {
                        released.notify_one();
                    }
                });
            }
        }
        Ok(version.to_string())
    }
}

/// A running member.
struct Node {
    gate: Arc<ShardGate>,
    release: CancellationToken,
    cut: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

fn start(ring: &Arc<Ring>, identity: &str) -> Node {
    start_with(ring, identity, None)
}

fn start_with(ring: &Arc<Ring>, identity: &str, metrics: Option<ShardingMetrics>) -> Node {
    let sharding = Sharding::new("ring", ShardKey::Uid).identity(identity);
    sharding.validate().unwrap();
    let cut = Arc::new(AtomicBool::new(false));
    let store = FakeStore::new(ring, sharding.lease_name(), Arc::clone(&cut));
    let gate = Arc::new(ShardGate::new(ShardKey::Uid));
    let member = Member::new(store, Arc::clone(&gate), &sharding, metrics);
    let release = CancellationToken::new();
    let task = tokio::spawn(member.run(release.clone()));
    Node {
        gate,
        release,
        cut,
        task,
    }
}

fn half(i: usize) -> RangeSet {
    ShardRange::even_parts(2)[i].into()
}

/// Checks, every 10 ms until dropped, that no hash may be reconciled by two gates: none
/// admitted by two, none admitted by one while another still runs a reconcile of it.
struct Overlaps {
    task: JoinHandle<()>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Overlaps {
    fn watch(gates: Vec<Arc<ShardGate>>) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let found = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            loop {
                for (i, a) in gates.iter().enumerate() {
                    for (j, b) in gates.iter().enumerate() {
                        if i == j {
                            continue;
                        }
                        let admitted = a.admits();
                        let both = admitted.intersect(&b.admits());
                        if i < j && !both.is_empty() {
                            found.lock().push(format!("{i} and {j} both admit {both}"));
                        }
                        for hash in b.in_flight_hashes() {
                            if admitted.contains(hash) {
                                found
                                    .lock()
                                    .push(format!("{i} admits {hash:#x} in flight on {j}"));
                            }
                        }
                    }
                }
                sleep(Duration::from_millis(10)).await;
            }
        });
        Self { task, seen }
    }

    fn assert_none(self) {
        self.task.abort();
        let mut seen = self.seen.lock().clone();
        seen.dedup();
        seen.truncate(5);
        assert_eq!(seen, Vec::<String>::new());
    }
}

/// Waits (up to `limit`) until `done`, in steps of 10 ms; returns the time it took.
async fn until(limit: Duration, done: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "not within {limit:?}");
        sleep(Duration::from_millis(10)).await;
    }
    start.elapsed()
}

#[tokio::test(start_paused = true)]
async fn a_lone_member_works_on_the_whole_hash_space_once_its_claim_is_read_back() {
    let ring = Arc::new(Ring::default());
    let a = start(&ring, "a");
    let took = until(RETRY, || a.gate.admits() == RangeSet::full()).await;
    assert!(
        took < Duration::from_millis(200),
        "three requests: {took:?}"
    );
    let held = ring.records.lock()["ring-a"].0.held.clone();
    assert_eq!(held, "0x0000000000000000-0x10000000000000000");
}

#[tokio::test(start_paused = true)]
async fn a_joining_member_gets_its_half_only_after_the_other_gave_it_up_and_never_overlaps() {
    let ring = Arc::new(Ring::default());
    let a = start(&ring, "a");
    until(RETRY, || a.gate.admits() == RangeSet::full()).await;
    let b = start(&ring, "b");
    let overlaps = Overlaps::watch(vec![a.gate.clone(), b.gate.clone()]);
    let took = until(3 * RETRY, || {
        a.gate.admits() == half(0) && b.gate.admits() == half(1)
    })
    .await;
    // b's first round finds a holding everything; a gives the half up at its next round,
    // and b claims it at its next round after that: its third at the latest.
    assert!(
        took <= 2 * (RETRY.mul_f64(1.2) + ROUND) + ROUND,
        "b's third round at the latest: {took:?}"
    );
    // And it stays so.
    sleep(LEASE * 2).await;
    assert_eq!((a.gate.admits(), b.gate.admits()), (half(0), half(1)));
    overlaps.assert_none();
}

#[tokio::test(start_paused = true)]
async fn a_released_members_ranges_are_taken_within_two_rounds_of_the_release() {
    let ring = Arc::new(Ring::default());
    let a = start(&ring, "a");
    let b = start(&ring, "b");
    until(4 * RETRY, || {
        a.gate.admits() == half(0) && b.gate.admits() == half(1)
    })
    .await;
    let overlaps = Overlaps::watch(vec![a.gate.clone(), b.gate.clone()]);
    b.release.cancel();
    b.task.await.unwrap();
    assert_eq!(b.gate.admits(), RangeSet::default());
    let released = ring.records.lock()["ring-b"].0.clone();
    assert_eq!((released.holder.as_str(), released.held.as_str()), ("", ""));
    let took = until(2 * RETRY, || a.gate.admits() == RangeSet::full()).await;
    // Woken by its watch: the round right after, or the one after a round that read just
    // before the release (a watch's latency being less than a round's).
    assert!(took <= 2 * ROUND, "{took:?}");
    overlaps.assert_none();
    // The released record is deleted once it has been seen released for a lease duration.
    sleep(LEASE + 2 * RETRY).await;
    assert!(!ring.records.lock().contains_key("ring-b"));
}

#[tokio::test(start_paused = true)]
async fn a_closed_gate_admits_nothing_more_refuses_writes_and_leaves_the_reconciles_in_flight_running()
 {
    let ring = Arc::new(Ring::default());
    let a = start(&ring, "a");
    until(RETRY, || a.gate.admits() == RangeSet::full()).await;
    let fence = a.gate.fence();
    assert!(fence().is_ok(), "a live member writes");
    let running = a.gate.try_start(7).expect("a works on everything");
    a.gate.close();
    assert!(a.gate.try_start(8).is_none(), "nothing starts once closed");
    let refused = fence().expect_err("no write once closed, though the lease holds");
    assert!(refused.contains("shutting down"), "{refused}");
    sleep(RETRY * 3).await;
    assert!(
        a.gate.try_start(8).is_none(),
        "nor after the member's next rounds"
    );
    assert!(
        !running.term().is_cancelled(),
        "the reconcile in flight goes on"
    );
    assert_eq!(a.gate.in_flight_within(&RangeSet::full()), 1);
    drop(running);
    a.release.cancel();
    a.task.await.unwrap();
    let released = ring.records.lock()["ring-a"].0.clone();
    assert_eq!((released.holder.as_str(), released.held.as_str()), ("", ""));
}

/// Starts members a and b, kills b (no release: its record stays as last written)
/// `offset` after they split the ring, a's watch of the ring cut unless `watched`, and
/// returns how long after the kill a took b's half.
async fn kill_one_of_two(offset: Duration, watched: bool) -> Duration {
    let ring = Arc::new(Ring::default());
    let a = start(&ring, "a");
    let b = start(&ring, "b");
    until(4 * RETRY, || {
        a.gate.admits() == half(0) && b.gate.admits() == half(1)
    })
    .await;
    if !watched {
        ring.watches.lock().retain(|(name, ..)| name != "ring-a");
    }
    sleep(offset).await;
    b.task.abort();
    let took = until(LEASE + 2 * RETRY, || a.gate.admits() == RangeSet::full()).await;
    // b's last write ended at most one of its rounds before the kill, and a saw it after.
    assert!(
        took >= LEASE - RETRY.mul_f64(1.2) - ROUND,
        "taken {took:?} after the kill, before b's lease could expire"
    );
    took
}

/// Kill offsets across two rounds, so that a's reads fall anywhere between b's writes.
fn offsets() -> impl Iterator<Item = Duration> {
    (0..8).map(|i| RETRY.mul_f64(0.3 * f64::from(i)))
}

#[tokio::test(start_paused = true)]
async fn a_dead_members_ranges_are_taken_once_its_lease_expired_from_its_last_write_seen() {
    for offset in offsets() {
        let took = kill_one_of_two(offset, true).await;
        // a's watch saw b's last write within a latency of it, before the kill, and a takes
        // b's half in the round it starts the moment b expires (or right after the round
        // under way then), wherever a's own rounds fall.
        assert!(took <= LEASE + 2 * ROUND, "offset {offset:?}: {took:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn without_a_watch_of_the_ring_a_dead_members_ranges_are_taken_within_a_round_more() {
    for offset in offsets() {
        let took = kill_one_of_two(offset, false).await;
        // a saw b's last write in a read at most one of its own rounds after the kill.
        let bound = LEASE + RETRY.mul_f64(1.2) + 2 * ROUND;
        assert!(took <= bound, "offset {offset:?}: {took:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_member_that_cannot_renew_stops_on_its_own_clock_before_another_may_take_over() {
    let ring = Arc::new(Ring::default());
    let a = start(&ring, "a");
    let b = start(&ring, "b");
    until(4 * RETRY, || {
        a.gate.admits() == half(0) && b.gate.admits() == half(1)
    })
    .await;
    let overlaps = Overlaps::watch(vec![a.gate.clone(), b.gate.clone()]);
    let running = b
        .gate
        .try_start(u64::MAX)
        .expect("b works on the upper half");
    // b cannot reach the server any more; its record stays as last written.
    b.cut.store(true, Ordering::Relaxed);
    let fence = b.gate.fence();
    assert!(fence().is_ok());
    // The member's timer and this loop may wake at the same instant in either order: the
    // reconcile in flight is waited for, and nothing may be admitted by then.
    let stopped = until(DEFAULT_RENEW_DEADLINE + RETRY, || {
        running.term().is_cancelled()
    })
    .await;
    assert!(
        stopped <= DEFAULT_RENEW_DEADLINE,
        "the reconcile in flight was told to stop {stopped:?} after the cut, within the \
         renew deadline of its last renewal"
    );
    assert!(b.gate.admits().is_empty(), "nothing is admitted any more");
    assert!(fence().is_err(), "writes are refused from then on");
    drop(running);
    assert!(a.gate.admits() == half(0), "a has not taken b's half yet");
    let taken = until(LEASE, || a.gate.admits() == RangeSet::full()).await;
    assert!(
        taken + Duration::from_millis(100) >= LEASE - DEFAULT_RENEW_DEADLINE,
        "a took over {taken:?} after b stopped: at least lease duration - renew deadline"
    );
    // b comes back: it joins again and the halves are split anew, without overlap.
    b.cut.store(false, Ordering::Relaxed);
    until(4 * RETRY, || {
        a.gate.admits() == half(0) && b.gate.admits() == half(1)
    })
    .await;
    overlaps.assert_none();
}

#[tokio::test(start_paused = true)]
async fn a_range_given_up_is_published_only_after_its_reconcile_in_flight_returned() {
    let ring = Arc::new(Ring::default());
    let a = start(&ring, "a");
    until(RETRY, || a.gate.admits() == RangeSet::full()).await;
    // A reconcile of an object hashing into the upper half runs on a.
    let running = a.gate.try_start(u64::MAX).expect("a works on everything");
    let b = start(&ring, "b");
    let overlaps = Overlaps::watch(vec![a.gate.clone(), b.gate.clone()]);
    until(3 * RETRY, || a.gate.admits() == half(0)).await;
    assert!(
        a.gate.try_start(u64::MAX).is_none(),
        "no new reconcile starts on a range given up"
    );
    sleep(LEASE * 2).await;
    assert!(
        b.gate.admits().is_empty(),
        "b waits for the reconcile in flight, however long"
    );
    drop(running);
    let took = until(3 * RETRY, || b.gate.admits() == half(1)).await;
    assert!(
        took <= 2 * (RETRY.mul_f64(1.2) + ROUND) + ROUND,
        "a's next round, then b's next one after it: {took:?}"
    );
    overlaps.assert_none();
}

#[tokio::test(start_paused = true)]
async fn a_member_with_unreadable_held_ranges_counts_as_holding_everything_until_it_expires() {
    let ring = Arc::new(Ring::default());
    ring.put("ring-x", "x", "not ranges");
    let a = start(&ring, "a");
    sleep(LEASE - RETRY).await;
    assert!(a.gate.admits().is_empty(), "x may hold anything");
    let took = until(3 * RETRY, || a.gate.admits() == RangeSet::full()).await;
    assert!(took <= RETRY + 2 * ROUND, "taken when x expired: {took:?}");
}

#[test]
fn lease_names_are_made_of_the_ring_and_a_dns_safe_identity() {
    let name = |identity: &str| {
        Sharding::new("apps", ShardKey::Namespace)
            .identity(identity)
            .lease_name()
    };
    assert_eq!(name("pod-0"), "apps-pod-0");
    assert_eq!(name("Host_AbC12"), "apps-host-abc12");
    assert_eq!(name("_x_"), "apps-x");
    assert!(name(&"z".repeat(300)).len() <= 253);
    let invalid = Sharding::new("apps", ShardKey::Uid).identity("__");
    assert!(matches!(
        invalid.validate(),
        Err(ShardingError::InvalidIdentity(_))
    ));
    let timing = Sharding::new("apps", ShardKey::Uid).renew_deadline(LEASE);
    assert!(matches!(timing.validate(), Err(ShardingError::Timing(_))));
}

#[tokio::test(start_paused = true)]
async fn under_random_joins_releases_kills_and_cuts_no_hash_is_ever_admitted_by_two_members() {
    for seed in 0..5 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let ring = Arc::new(Ring::default());
        let mut nodes: Vec<Option<Node>> = Vec::new();
        let mut gates = Vec::new();
        // Start each member with the gates of all members so far watched.
        let mut overlaps: Option<Overlaps> = None;
        for step in 0..40 {
            let live: Vec<usize> = (0..nodes.len()).filter(|i| nodes[*i].is_some()).collect();
            match rng.u8(0..10) {
                0..=3 if live.len() < 4 => {
                    // One or, at the same instant, two members join.
                    for k in 0..rng.usize(1..=2) {
                        let node = start(&ring, &format!("m{seed}-{step}-{k}"));
                        gates.push(node.gate.clone());
                        nodes.push(Some(node));
                    }
                    if let Some(o) = overlaps.take() {
                        o.assert_none();
                    }
                    overlaps = Some(Overlaps::watch(gates.clone()));
                }
                4 | 5 if !live.is_empty() => {
                    let node = nodes[live[rng.usize(..live.len())]].take().unwrap();
                    node.release.cancel();
                    node.task.await.unwrap();
                }
                6 if !live.is_empty() => {
                    // Killed: it does nothing any more (its gate stops being watched by
                    // keeping it, which admits nothing once its renew deadline passes,
                    // and which no one else may overlap before then).
                    let node = nodes[live[rng.usize(..live.len())]].take().unwrap();
                    node.task.abort();
                }
                7 | 8 if !live.is_empty() => {
                    let node = nodes[live[rng.usize(..live.len())]].as_ref().unwrap();
                    let cut = !node.cut.load(Ordering::Relaxed);
                    node.cut.store(cut, Ordering::Relaxed);
                }
                _ => {}
            }
            sleep(Duration::from_millis(rng.u64(0..20_000))).await;
        }
        if let Some(o) = overlaps {
            o.assert_none();
        }
        for node in nodes.into_iter().flatten() {
            node.task.abort();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn metrics_show_the_ranges_held_the_members_the_objects_and_the_handovers() {
    use kubekit_runtime::cache::test_support::assert_metric_lines;

    let metrics = ShardingMetrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let ring = Arc::new(Ring::default());
    let a = start_with(&ring, "a", Some(metrics));
    // A controller with 7 cached objects in whatever set it is asked about.
    a.gate.add_sweep("c", Box::new(|_, _| 7));
    until(RETRY, || a.gate.admits() == RangeSet::full()).await;
    sleep(RETRY * 2).await;
    assert_metric_lines(
        &registry,
        &[
            r#"kubekit_shard_ranges_held{ring="ring"} 1"#,
            r#"kubekit_shard_hash_space_held_ratio{ring="ring"} 1.0"#,
            r#"kubekit_shard_members{ring="ring"} 1"#,
            r#"kubekit_shard_objects{ring="ring",controller="c"} 7"#,
            r#"kubekit_shard_handovers_total{ring="ring",direction="acquired"} 1"#,
            r#"kubekit_shard_handover_duration_seconds_count{ring="ring",direction="acquired"} 1"#,
        ],
    );
    let b = start(&ring, "b");
    until(3 * RETRY, || b.gate.admits() == half(1)).await;
    sleep(RETRY * 2).await;
    assert_metric_lines(
        &registry,
        &[
            r#"kubekit_shard_hash_space_held_ratio{ring="ring"} 0.5"#,
            r#"kubekit_shard_members{ring="ring"} 2"#,
            r#"kubekit_shard_handovers_total{ring="ring",direction="released"} 1"#,
        ],
    );
}

#[tokio::test(start_paused = true)]
async fn a_taken_range_is_worked_on_only_once_the_narrowed_informers_hold_its_objects() {
    use kubekit_runtime::cache::{ShardControl, ShardSelector, ShardTarget};
    let ring = Arc::new(Ring::default());
    let sharding = Sharding::new("ring", ShardKey::Uid).identity("a");
    let store = FakeStore::new(
        &ring,
        sharding.lease_name(),
        Arc::new(AtomicBool::new(false)),
    );
    let gate = Arc::new(ShardGate::new(ShardKey::Uid));
    // The informer holds what it was told once `synced` says so.
    let (synced, rx) = tokio::sync::watch::channel(false);
    let wait = move |_generation| -> ShardWaitFn {
        let rx = rx.clone();
        Box::new(move |_| {
            let mut rx = rx.clone();
            Box::pin(async move {
                let _ = rx.wait_for(|s| *s).await;
            })
        })
    };
    let primary = ShardControl::new(ShardTarget::Everything);
    gate.add_informer(
        "v1/configmaps",
        primary.clone(),
        wait(0),
        Some(ShardKey::Uid),
    );
    // One controller's primary type is another's watched type with uid sharding: kept
    // whole.
    let whole = ShardControl::new(ShardTarget::Everything);
    gate.add_informer(
        "apps/v1/deployments",
        whole.clone(),
        wait(0),
        Some(ShardKey::Uid),
    );
    gate.add_informer("apps/v1/deployments", whole.clone(), wait(0), None);
    // An owned type narrows by its controller's uid.
    let owned = ShardControl::new(ShardTarget::Everything);
    let by_controller = Some(ShardKey::ControllerUid);
    gate.add_informer("v1/services", owned.clone(), wait(0), by_controller);
    gate.add_informer("v1/services", owned.clone(), wait(0), by_controller);

    let mut member = Member::new(store, Arc::clone(&gate), &sharding, None);
    member.narrow_informers();
    assert_eq!(
        primary.target().1,
        ShardTarget::Nothing,
        "nothing is cached before a range is taken"
    );
    let release = CancellationToken::new();
    let task = tokio::spawn(member.run(release.clone()));

    until(RETRY, || {
        matches!(primary.target().1, ShardTarget::Shard(_))
    })
    .await;
    let all = |key| ShardTarget::Shard(ShardSelector::new(key, RangeSet::full().ranges()).unwrap());
    assert_eq!(primary.target().1, all(ShardKey::Uid));
    assert_eq!(owned.target().1, all(ShardKey::ControllerUid));
    sleep(RETRY * 3).await;
    assert!(
        gate.admits().is_empty(),
        "taken, but not worked on before the informer holds its objects"
    );
    assert_eq!(
        ring.records.lock()["ring-a"].0.held,
        RangeSet::full().to_string(),
        "published while the informers sync"
    );
    synced.send(true).unwrap();
    until(Duration::from_millis(100), || {
        gate.admits() == RangeSet::full()
    })
    .await;
    assert_eq!(whole.target().1, ShardTarget::Everything);

    release.cancel();
    task.await.unwrap();
}
