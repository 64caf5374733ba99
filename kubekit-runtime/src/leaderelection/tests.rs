//! Unit tests of the election algorithm: candidates on a scripted [`Lock`] (an in-memory
//! record with resourceVersion preconditions, whose answers the test scripts: failures,
//! hangs, latency, writes by someone else between two calls), under paused time.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until};
use tokio_util::sync::CancellationToken;

use super::*;
use kubekit_client::rest::{Error, Result};

// ---------------------------------------------------------------------------------------
// The scripted lock.

/// How the lock answers one candidate.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Like a server with resourceVersion preconditions.
    Normal,
    /// Every call fails with 503.
    Fail,
    /// Every call waits forever.
    Hang,
    /// Every call takes this long, and takes effect at its end.
    Slow(Duration),
}

/// One call the lock received.
#[derive(Clone, Debug, PartialEq)]
enum Call {
    Get,
    Create,
    /// An update of the record to `holder` on `rv`, accepted or refused with a conflict.
    Update {
        holder: String,
        rv: String,
        accepted: bool,
    },
}

type Hook = Box<dyn FnOnce(&mut Store) + Send>;

#[derive(Default)]
struct Store {
    current: Option<VersionedRecord>,
    next_rv: u64,
    /// (who, call), in order.
    calls: Vec<(&'static str, Call)>,
    /// Runs inside the next update, before its precondition is checked: a write by
    /// someone else between the candidate's read and its write.
    before_next_update: Option<Hook>,
}

impl Store {
    fn put(&mut self, record: LeaderElectionRecord) -> VersionedRecord {
        self.next_rv += 1;
        let stored = VersionedRecord {
            record,
            resource_version: self.next_rv.to_string(),
        };
        self.current = Some(stored.clone());
        stored
    }
}

/// One candidate's view of a shared scripted record.
#[derive(Clone)]
struct ScriptedLock {
    store: Arc<Mutex<Store>>,
    mode: Arc<Mutex<Mode>>,
    who: &'static str,
}

fn api_error(code: i32, reason: &str) -> Error {
    Error::from_status(
        "PUT",
        "scripted",
        Status {
            code: Some(code),
            reason: Some(reason.into()),
            message: Some(format!("scripted {reason}")),
            ..Status::default()
        },
    )
}

fn record(holder: &str, lease_seconds: i32, renew: Timestamp) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: holder.into(),
        lease_duration_seconds: lease_seconds,
        acquire_time: Some(renew),
        renew_time: Some(renew),
        leader_transitions: 3,
    }
}

fn ts(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

impl ScriptedLock {
    fn empty() -> Self {
        Self {
            store: Arc::default(),
            mode: Arc::new(Mutex::new(Mode::Normal)),
            who: "a",
        }
    }

    fn holding(r: LeaderElectionRecord) -> Self {
        let lock = Self::empty();
        lock.store.lock().put(r);
        lock
    }

    /// The same record, seen by candidate `who` with its own mode.
    fn for_candidate(&self, who: &'static str) -> Self {
        Self {
            store: Arc::clone(&self.store),
            mode: Arc::new(Mutex::new(Mode::Normal)),
            who,
        }
    }

    fn set_mode(&self, mode: Mode) {
        *self.mode.lock() = mode;
    }

    fn current(&self) -> VersionedRecord {
        self.store.lock().current.clone().expect("a record")
    }

    /// Someone else writes `r`.
    fn write_outside(&self, r: LeaderElectionRecord) {
        self.store.lock().put(r);
    }

    /// Someone else changes the object without changing the record (a label, say): only
    /// the resourceVersion moves.
    fn touch_outside(&self) {
        let mut store = self.store.lock();
        let r = store.current.clone().expect("a record").record;
        store.put(r);
    }

    fn before_next_update(&self, hook: impl FnOnce(&mut Store) + Send + 'static) {
        self.store.lock().before_next_update = Some(Box::new(hook));
    }

    /// The calls made so far, from index `from`.
    fn calls_since(&self, from: usize) -> Vec<(&'static str, Call)> {
        self.store.lock().calls[from..].to_vec()
    }

    fn call_count(&self) -> usize {
        self.store.lock().calls.len()
    }

    /// Applies the candidate's mode: fail, hang, or wait.
    async fn gate(&self) -> Result<()> {
        let mode = *self.mode.lock();
        match mode {
            Mode::Normal => Ok(()),
            Mode::Fail => Err(api_error(503, "ServiceUnavailable")),
            Mode::Hang => std::future::pending().await,
            Mode::Slow(d) => {
                sleep(d).await;
                Ok(())
            }
        }
    }
}

impl Lock for ScriptedLock {
    async fn get(&self) -> Result<Option<VersionedRecord>> {
        self.gate().await?;
        let mut store = self.store.lock();
        store.calls.push((self.who, Call::Get));
        Ok(store.current.clone())
    }

    async fn create(&self, r: &LeaderElectionRecord) -> Result<VersionedRecord> {
        self.gate().await?;
        let mut store = self.store.lock();
        store.calls.push((self.who, Call::Create));
        if store.current.is_some() {
            return Err(api_error(409, "AlreadyExists"));
        }
        Ok(store.put(r.clone()))
    }

    async fn update(&self, r: &LeaderElectionRecord, rv: &str) -> Result<VersionedRecord> {
        self.gate().await?;
        let mut store = self.store.lock();
        if let Some(hook) = store.before_next_update.take() {
            hook(&mut store);
        }
        let Some(current) = store.current.clone() else {
            return Err(api_error(404, "NotFound"));
        };
        let accepted = current.resource_version == rv;
        store.calls.push((
            self.who,
            Call::Update {
                holder: r.holder_identity.clone(),
                rv: rv.to_owned(),
                accepted,
            },
        ));
        if !accepted {
            return Err(api_error(409, "Conflict"));
        }
        Ok(store.put(r.clone()))
    }

    fn name(&self) -> &str {
        "scripted"
    }
}

// ---------------------------------------------------------------------------------------
// Candidates.

#[derive(Clone, Debug, PartialEq)]
enum Ev {
    Started,
    WorkCancelled,
    WorkReturned,
    Stopped,
    NewLeader(String),
}

type Events = Arc<Mutex<Vec<(Duration, Ev)>>>;

struct Candidate {
    elector: LeaderElector<ScriptedLock>,
    cancel: CancellationToken,
    events: Events,
    run: JoinHandle<RunOutcome>,
}

/// How the candidate's work behaves.
#[derive(Clone, Copy)]
enum Work {
    /// Runs until its token is cancelled, then takes `linger` to return.
    UntilCancelled { linger: Duration },
    /// Returns on its own after this long.
    ReturnsAfter(Duration),
}

const UNTIL_CANCELLED: Work = Work::UntilCancelled {
    linger: Duration::ZERO,
};

impl Candidate {
    fn start(t0: Instant, config: LeaderElectionConfig<ScriptedLock>) -> Self {
        Self::start_with(t0, config, UNTIL_CANCELLED)
    }

    fn start_with(t0: Instant, config: LeaderElectionConfig<ScriptedLock>, work: Work) -> Self {
        let elector = LeaderElector::new(config).expect("valid config");
        let events: Events = Arc::default();
        let log = move |events: &Events, ev: Ev| events.lock().push((t0.elapsed(), ev));
        let cancel = CancellationToken::new();
        let (e1, e2, e3) = (events.clone(), events.clone(), events.clone());
        let callbacks = LeaderCallbacks::new(move |leading: CancellationToken| async move {
            log(&e1, Ev::Started);
            match work {
                Work::UntilCancelled { linger } => {
                    leading.cancelled().await;
                    log(&e1, Ev::WorkCancelled);
                    sleep(linger).await;
                }
                Work::ReturnsAfter(d) => sleep(d).await,
            }
            log(&e1, Ev::WorkReturned);
        })
        .on_stopped_leading(move || log(&e2, Ev::Stopped))
        .on_new_leader(move |id| log(&e3, Ev::NewLeader(id.to_owned())));
        let run = {
            let elector = elector.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move { elector.run(cancel, callbacks).await })
        };
        Self {
            elector,
            cancel,
            events,
            run,
        }
    }

    /// When `ev` first happened, from the test's start.
    fn at(&self, ev: &Ev) -> Option<Duration> {
        self.events
            .lock()
            .iter()
            .find(|(_, e)| e == ev)
            .map(|(t, _)| *t)
    }

    fn new_leaders(&self) -> Vec<String> {
        self.events
            .lock()
            .iter()
            .filter_map(|(_, e)| match e {
                Ev::NewLeader(id) => Some(id.clone()),
                _ => None,
            })
            .collect()
    }

    async fn outcome(self) -> RunOutcome {
        self.run.await.expect("run did not panic")
    }
}

fn config(lock: &ScriptedLock) -> LeaderElectionConfig<ScriptedLock> {
    LeaderElectionConfig::new(lock.clone()).identity(lock.who)
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Lets the spawned candidates run up to `t0 + at`.
/// Candidate `a` started at 0 s, then `b` at 0.5 s (so `a` leads), each with its handle
/// on `lock`.
async fn a_then_b(
    t0: Instant,
    lock: &ScriptedLock,
) -> (ScriptedLock, Candidate, ScriptedLock, Candidate) {
    let la = lock.for_candidate("a");
    let a = Candidate::start(t0, config(&la));
    until(t0, 0.5).await;
    let lb = lock.for_candidate("b");
    let b = Candidate::start(t0, config(&lb));
    (la, a, lb, b)
}

async fn until(t0: Instant, at: f64) {
    sleep_until(t0 + secs(at)).await;
}

// ---------------------------------------------------------------------------------------
// Configuration.

#[test]
fn config_validation_requires_lease_above_renew_deadline_above_1_2_retry() {
    let lock = ScriptedLock::empty();
    let ok = |c: LeaderElectionConfig<ScriptedLock>| c.validate();
    assert_eq!(ok(config(&lock)), Ok(()), "client-go's defaults are valid");
    assert_eq!(
        ok(config(&lock)
            .lease_duration(secs(3.0))
            .renew_deadline(secs(2.0))
            .retry_period(secs(0.5))),
        Ok(())
    );

    let err = ok(config(&lock).lease_duration(secs(10.0))).unwrap_err();
    assert_eq!(
        err,
        ConfigError::LeaseNotLongerThanRenewDeadline {
            lease_duration: secs(10.0),
            renew_deadline: secs(10.0)
        }
    );
    assert_eq!(
        err.to_string(),
        "leader election: lease duration (10s) must be greater than the renew deadline (10s)"
    );

    let err = ok(config(&lock).renew_deadline(secs(2.3))).unwrap_err();
    assert!(
        matches!(err, ConfigError::RenewDeadlineTooShort { .. }),
        "{err}"
    );
    assert!(
        err.to_string().starts_with(
            "leader election: renew deadline (2.3s) must be greater than 1.2 × the retry period (2s"
        ),
        "{err}"
    );
    assert_eq!(ok(config(&lock).renew_deadline(secs(2.5))), Ok(()));

    for (c, what) in [
        (
            config(&lock).retry_period(Duration::ZERO),
            "the retry period",
        ),
        (
            config(&lock).renew_deadline(Duration::ZERO),
            "the renew deadline",
        ),
        (
            config(&lock).lease_duration(Duration::ZERO),
            "the lease duration",
        ),
    ] {
        let err = ok(c).unwrap_err();
        assert_eq!(err, ConfigError::Zero(what));
        assert_eq!(
            err.to_string(),
            format!("leader election: {what} must be greater than zero")
        );
    }

    let err = ok(config(&lock)
        .lease_duration(secs(2.5))
        .renew_deadline(secs(2.0))
        .retry_period(secs(0.5)))
    .unwrap_err();
    assert_eq!(err, ConfigError::LeaseDurationNotWholeSeconds(secs(2.5)));
    assert!(err.to_string().contains("whole number of seconds"), "{err}");

    let err = ok(config(&lock).identity("")).unwrap_err();
    assert_eq!(err, ConfigError::EmptyIdentity);
    assert!(
        LeaderElector::new(config(&lock).renew_deadline(secs(20.0))).is_err(),
        "new validates"
    );
}

#[test]
fn every_renewal_changes_the_renew_time_even_if_the_wall_clock_did_not_move() {
    let t = ts("2030-01-01T00:00:00Z");
    let later = ts("2030-01-01T00:00:01Z");
    assert_eq!(strictly_after(later, Some(t)), later);
    assert_eq!(strictly_after(t, None), t);
    assert_eq!(
        strictly_after(t, Some(t)),
        ts("2030-01-01T00:00:00.000001Z")
    );
    assert_eq!(
        strictly_after(t, Some(later)),
        ts("2030-01-01T00:00:01.000001Z"),
        "a clock stepped back"
    );
}

#[test]
fn default_identity_is_the_host_name_and_a_random_suffix() {
    let (a, b) = (default_identity(), default_identity());
    assert_ne!(a, b);
    let (host, suffix) = a.rsplit_once('_').expect("host_suffix");
    assert!(!host.is_empty());
    assert_eq!(suffix.len(), 10);
    let elector = LeaderElector::new(LeaderElectionConfig::new(ScriptedLock::empty())).unwrap();
    assert!(elector.identity().contains('_'), "{}", elector.identity());
}

// ---------------------------------------------------------------------------------------
// Acquiring.

#[tokio::test(start_paused = true)]
async fn a_missing_lease_is_created_and_renewed_on_its_resource_version() {
    let t0 = Instant::now();
    let lock = ScriptedLock::empty();
    let a = Candidate::start(t0, config(&lock));
    until(t0, 0.1).await;
    assert!(a.elector.is_leader());
    assert_eq!(a.at(&Ev::Started), Some(Duration::ZERO));
    assert_eq!(a.new_leaders(), ["a"]);
    assert_eq!(a.elector.get_leader().as_deref(), Some("a"));
    let created = lock.current();
    assert_eq!(created.record.holder_identity, "a");
    assert_eq!(created.record.lease_duration_seconds, 15);
    assert_eq!(created.record.leader_transitions, 0);
    assert_eq!(lock.calls_since(0), [("a", Call::Get), ("a", Call::Create)]);

    // Renewals every retry period, each on the resourceVersion of the previous write.
    until(t0, 4.1).await;
    let calls = lock.calls_since(2);
    assert_eq!(
        calls,
        [
            (
                "a",
                Call::Update {
                    holder: "a".into(),
                    rv: "1".into(),
                    accepted: true
                }
            ),
            (
                "a",
                Call::Update {
                    holder: "a".into(),
                    rv: "2".into(),
                    accepted: true
                }
            ),
        ]
    );
    let renewed = lock.current().record;
    assert_eq!(renewed.acquire_time, created.record.acquire_time);
    assert_eq!(renewed.leader_transitions, 0);

    a.cancel.cancel();
    let a_events = a.events.clone();
    assert_eq!(a.outcome().await, RunOutcome::Cancelled);
    let stopped = a_events.lock().iter().any(|(_, e)| *e == Ev::Stopped);
    assert!(stopped);
    assert_eq!(
        lock.current().record.holder_identity,
        "a",
        "without release_on_cancel the lease is left to expire"
    );
}

#[tokio::test(start_paused = true)]
async fn expiry_is_judged_by_the_local_clock_never_by_the_remote_renew_time() {
    let t0 = Instant::now();
    // One record renewed "long ago", one "in the future", by the holder's clock: neither
    // matters. Both expire 15 s after this candidate first saw them.
    let old = ScriptedLock::holding(record("other", 15, ts("2000-01-01T00:00:00Z")));
    let future = ScriptedLock::holding(record("other", 15, ts("2100-01-01T00:00:00Z")));
    let a = Candidate::start(t0, config(&old));
    let b = Candidate::start(t0, config(&future).identity("b"));

    until(t0, 14.9).await;
    for c in [&a, &b] {
        assert!(!c.elector.is_leader(), "took an unexpired lease");
        assert_eq!(c.elector.get_leader().as_deref(), Some("other"));
        assert_eq!(c.new_leaders(), ["other"]);
    }
    assert_eq!(old.current().record.holder_identity, "other");

    until(t0, 15.0 + 2.0 * 2.2 + 0.1).await;
    for (c, lock, id) in [(&a, &old, "a"), (&b, &future, "b")] {
        let started = c.at(&Ev::Started).expect("acquired once expired");
        assert!(started >= secs(15.0), "acquired at {started:?}");
        let r = lock.current().record;
        assert_eq!(r.holder_identity, id);
        assert_eq!(r.leader_transitions, 4, "one more transition");
        assert_ne!(r.acquire_time, Some(ts("2000-01-01T00:00:00Z")));
        assert_eq!(c.new_leaders(), ["other", id]);
    }
}

#[tokio::test(start_paused = true)]
async fn a_lease_its_holder_keeps_renewing_is_never_taken() {
    let t0 = Instant::now();
    let lock = ScriptedLock::holding(record("other", 15, ts("2030-01-01T00:00:00Z")));
    let a = Candidate::start(t0, config(&lock));
    // The holder renews every 3 s for a minute (a new renewTime each time).
    for i in 1..=20 {
        until(t0, 3.0 * f64::from(i)).await;
        lock.write_outside(record(
            "other",
            15,
            Timestamp::from_second(1_900_000_000 + i64::from(i)).unwrap(),
        ));
    }
    assert!(!a.elector.is_leader());
    assert_eq!(a.at(&Ev::Started), None);
    // The holder stops at 60 s; the candidate sees that last change by 60 + 4.4 s and
    // takes the lease 15 s after it saw it.
    until(t0, 60.0 + 14.9).await;
    assert!(!a.elector.is_leader());
    until(t0, 60.0 + 4.4 + 15.0 + 4.4 + 0.1).await;
    assert!(a.elector.is_leader());
}

#[tokio::test(start_paused = true)]
async fn a_takeover_that_conflicts_is_not_forced_and_the_record_is_read_again() {
    let t0 = Instant::now();
    let lock = ScriptedLock::holding(record("other", 15, ts("2030-01-01T00:00:00Z")));
    // Between the candidate's read of the expired lease and its write, the holder renews.
    lock.before_next_update(|store| {
        store.put(record("other", 15, ts("2030-01-01T00:00:20Z")));
    });
    let a = Candidate::start(t0, config(&lock));
    until(t0, 15.0 + 4.4 + 0.1).await;
    let calls = lock.calls_since(0);
    let updates: Vec<_> = calls
        .iter()
        .filter(|(_, c)| matches!(c, Call::Update { .. }))
        .collect();
    assert_eq!(
        updates,
        [&(
            "a",
            Call::Update {
                holder: "a".into(),
                rv: "1".into(),
                accepted: false
            }
        )],
        "one takeover attempt, on the version read, refused"
    );
    assert!(!a.elector.is_leader());
    let r = lock.current();
    assert_eq!(
        (
            r.record.holder_identity.as_str(),
            r.resource_version.as_str()
        ),
        ("other", "2"),
        "the holder's write stands"
    );
    // The next read sees the renewed record: the 15 s start over from then.
    until(t0, 15.0 + 2.0 + 14.0).await;
    assert!(!a.elector.is_leader());
}

// ---------------------------------------------------------------------------------------
// Renewing and losing.

#[tokio::test(start_paused = true)]
async fn a_conflict_on_renew_reads_again_and_another_holder_ends_leadership_at_once() {
    let t0 = Instant::now();
    let lock = ScriptedLock::empty();
    let a = Candidate::start(t0, config(&lock));
    until(t0, 3.0).await;
    assert!(a.elector.is_leader());
    // Someone else takes the lease (an admin, or a candidate whose clock jumped).
    lock.write_outside(record("b", 15, ts("2030-01-01T00:00:00Z")));
    let taken = lock.current();
    let from = lock.call_count();

    until(t0, 4.1).await;
    assert!(!a.elector.is_leader());
    assert_eq!(
        a.at(&Ev::WorkCancelled),
        Some(secs(4.0)),
        "lost at the first renewal that saw it, not at the renew deadline"
    );
    assert_eq!(a.at(&Ev::Stopped), Some(secs(4.0)));
    assert_eq!(
        lock.calls_since(from),
        [
            (
                "a",
                Call::Update {
                    holder: "a".into(),
                    rv: "2".into(),
                    accepted: false
                }
            ),
            ("a", Call::Get),
        ],
        "the optimistic renewal is refused, the lease read again, and not overwritten"
    );
    assert_eq!(lock.current(), taken);
    assert_eq!(a.new_leaders(), ["a", "b"]);
    assert_eq!(a.elector.get_leader().as_deref(), Some("b"));
    assert_eq!(a.outcome().await, RunOutcome::LeadershipLost);
    assert_eq!(lock.current(), taken);
}

#[tokio::test(start_paused = true)]
async fn a_conflict_from_an_unrelated_change_reads_again_and_renews_on_the_new_version() {
    let t0 = Instant::now();
    let lock = ScriptedLock::empty();
    let a = Candidate::start(t0, config(&lock));
    until(t0, 3.0).await;
    lock.touch_outside(); // rv 2 → 3, same record
    let from = lock.call_count();
    until(t0, 4.1).await;
    assert_eq!(
        lock.calls_since(from),
        [
            (
                "a",
                Call::Update {
                    holder: "a".into(),
                    rv: "2".into(),
                    accepted: false
                }
            ),
            ("a", Call::Get),
            (
                "a",
                Call::Update {
                    holder: "a".into(),
                    rv: "3".into(),
                    accepted: true
                }
            ),
        ]
    );
    until(t0, 30.0).await;
    assert!(a.elector.is_leader());
    assert_eq!(a.at(&Ev::WorkCancelled), None);
}

#[tokio::test(start_paused = true)]
async fn renew_deadline_passed_cancels_the_work_before_another_candidate_may_acquire() {
    let (t0, lock) = (Instant::now(), ScriptedLock::empty());
    let (la, a, _, b) = a_then_b(t0, &lock).await;
    // a renews at 2 and 4, then cannot reach the API any more; b still can.
    until(t0, 5.0).await;
    la.set_mode(Mode::Fail);
    assert!(a.elector.is_leader());

    until(t0, 13.9).await;
    assert!(a.elector.is_leader(), "still within the renew deadline");
    until(t0, 14.1).await;
    assert!(!a.elector.is_leader());
    let lost = a.at(&Ev::WorkCancelled).expect("work cancelled");
    assert_eq!(
        lost,
        secs(14.0),
        "last successful renewal sent at 4 s + 10 s"
    );

    until(t0, 4.0 + 4.4 + 15.0 + 4.4 + 0.1).await;
    let taken = b
        .at(&Ev::Started)
        .expect("b takes over once the lease expired");
    assert!(
        taken >= secs(4.0 + 15.0),
        "b waited the lease duration: {taken:?}"
    );
    assert!(lost < taken);
    assert_eq!(lock.current().record.holder_identity, "b");
    assert_eq!(lock.current().record.leader_transitions, 1);
    assert_eq!(a.outcome().await, RunOutcome::LeadershipLost);
}

#[tokio::test(start_paused = true)]
async fn the_fence_allows_writes_only_from_acquisition_to_the_renew_deadline_of_the_last_renewal() {
    let (t0, lock) = (Instant::now(), ScriptedLock::empty());
    let (la, a, _, b) = a_then_b(t0, &lock).await;
    until(t0, 1.0).await;
    fence_allows(&a, true);
    fence_allows(&b, false);
    // a renews at 2 and 4, then cannot reach the API any more: its last renewal was sent
    // at 4 s, so it may write until 14 s (here its deadline timer runs first and clears
    // the fence; the clock rule alone is checked by
    // `the_fence_refuses_writes_past_the_deadline_by_the_clock_alone`).
    until(t0, 5.0).await;
    la.set_mode(Mode::Hang);
    until(t0, 13.9).await;
    fence_allows(&a, true);
    until(t0, 14.1).await;
    fence_allows(&a, false);
    fence_allows(&b, false);
    b.elector
        .is_leader()
        .then(|| panic!("b waits for the lease to expire"));
}

#[tokio::test(start_paused = true)]
async fn the_fence_refuses_writes_past_the_deadline_by_the_clock_alone() {
    // No elector task runs here: only the clock moves, as for a process paused and
    // resumed before its timers fire.
    let fence = Fence {
        lock: "ns/lease".into(),
        until: Mutex::new(Some(Instant::now() + Duration::from_secs(10))),
    };
    tokio::time::advance(Duration::from_millis(9_900)).await;
    assert_eq!(fence.check(), Ok(()));
    tokio::time::advance(Duration::from_millis(200)).await;
    let refusal = fence.check().expect_err("past the deadline");
    assert!(
        refusal.contains("renew deadline of leader lease ns/lease has passed"),
        "{refusal}"
    );
}

/// Whether `candidate`'s fence allows a write now.
fn fence_allows(candidate: &Candidate, expected: bool) {
    let verdict = candidate.elector.fence()();
    assert_eq!(verdict.is_ok(), expected, "{verdict:?}");
    if let Err(reason) = verdict {
        assert!(reason.contains("does not hold leader lease"), "{reason}");
    }
}

#[tokio::test(start_paused = true)]
async fn renew_deadline_passes_while_a_renewal_hangs() {
    let t0 = Instant::now();
    let lock = ScriptedLock::empty();
    let a = Candidate::start(t0, config(&lock));
    until(t0, 1.0).await;
    lock.set_mode(Mode::Hang);
    until(t0, 10.1).await;
    assert_eq!(
        a.at(&Ev::WorkCancelled),
        Some(secs(10.0)),
        "the renewal sent at 2 s never answered; acquired at 0 s + 10 s"
    );
    assert_eq!(a.outcome().await, RunOutcome::LeadershipLost);
}

#[tokio::test(start_paused = true)]
async fn the_renew_deadline_counts_from_when_the_last_renewal_was_sent() {
    let t0 = Instant::now();
    let lock = ScriptedLock::empty();
    let a = Candidate::start(t0, config(&lock));
    until(t0, 1.0).await;
    // The renewal sent at 2 s lands at 5 s; then the API fails.
    lock.set_mode(Mode::Slow(secs(3.0)));
    until(t0, 5.5).await;
    assert!(a.elector.is_leader());
    lock.set_mode(Mode::Fail);
    until(t0, 12.1).await;
    assert_eq!(
        a.at(&Ev::WorkCancelled),
        Some(secs(12.0)),
        "2 s + 10 s, not 5 s + 10 s"
    );
}

#[tokio::test(start_paused = true)]
async fn a_deleted_lease_ends_leadership() {
    let t0 = Instant::now();
    let lock = ScriptedLock::empty();
    let a = Candidate::start(t0, config(&lock));
    until(t0, 1.0).await;
    lock.store.lock().current = None;
    until(t0, 2.1).await;
    assert_eq!(a.at(&Ev::WorkCancelled), Some(secs(2.0)));
    assert_eq!(a.outcome().await, RunOutcome::LeadershipLost);
}

// ---------------------------------------------------------------------------------------
// Releasing.

#[tokio::test(start_paused = true)]
async fn release_on_cancel_waits_for_the_work_then_clears_the_holder_for_an_immediate_takeover() {
    let t0 = Instant::now();
    let lock = ScriptedLock::empty();
    let la = lock.for_candidate("a");
    let a = Candidate::start_with(
        t0,
        config(&la).release_on_cancel(true),
        Work::UntilCancelled { linger: secs(3.0) },
    );
    until(t0, 0.5).await;
    let lb = lock.for_candidate("b");
    let b = Candidate::start(t0, config(&lb));

    until(t0, 5.0).await;
    a.cancel.cancel();
    until(t0, 7.9).await;
    assert_eq!(a.at(&Ev::WorkCancelled), Some(secs(5.0)));
    assert!(
        a.elector.is_leader(),
        "still leading (and renewing) while the work winds down"
    );
    assert_eq!(lock.current().record.holder_identity, "a");
    assert!(
        lock.calls_since(0).contains(&(
            "a",
            Call::Update {
                holder: "a".into(),
                rv: "3".into(),
                accepted: true
            }
        )),
        "renewed at 6 s"
    );

    until(t0, 8.1).await;
    assert_eq!(a.at(&Ev::WorkReturned), Some(secs(8.0)));
    assert_eq!(a.at(&Ev::Stopped), Some(secs(8.0)));
    assert!(
        lock.calls_since(0).iter().any(|(who, call)| *who == "a"
            && matches!(call, Call::Update { holder, accepted: true, .. } if holder.is_empty())),
        "a cleared the holder"
    );
    // b's retries are jittered: its next attempt may already have taken the free lease.
    let now = lock.current().record;
    match now.holder_identity.as_str() {
        "" => {
            assert_eq!(now.lease_duration_seconds, 1);
            assert_eq!(now.leader_transitions, 0);
        }
        "b" => assert!(
            b.at(&Ev::Started) > Some(secs(8.0)),
            "b took it after the release"
        ),
        other => panic!("held by {other:?} after the release"),
    }
    assert!(!a.elector.is_leader());

    until(t0, 8.0 + 2.0 * 2.2 + 0.1).await;
    let taken = b.at(&Ev::Started).expect("b took over");
    assert!(
        taken > secs(8.0) && taken <= secs(8.0 + 4.4),
        "at its next attempt, not after the lease expired: {taken:?}"
    );
    let r = lock.current().record;
    assert_eq!(r.holder_identity, "b");
    assert_eq!(r.leader_transitions, 1);
    assert_eq!(a.outcome().await, RunOutcome::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn without_release_on_cancel_the_successor_waits_for_the_lease_to_expire() {
    let (t0, lock) = (Instant::now(), ScriptedLock::empty());
    let (_, a, _, b) = a_then_b(t0, &lock).await;
    until(t0, 5.0).await;
    a.cancel.cancel();
    assert_eq!(a.outcome().await, RunOutcome::Cancelled);
    assert_eq!(lock.current().record.holder_identity, "a");
    // a last renewed at 4 s; b saw that by 4 + 4.4 s at the latest.
    until(t0, 4.0 + 15.0 - 0.1).await;
    assert_eq!(b.at(&Ev::Started), None);
    until(t0, 4.0 + 4.4 + 15.0 + 4.4 + 0.1).await;
    assert!(b.at(&Ev::Started).is_some());
}

#[tokio::test(start_paused = true)]
async fn work_returning_on_its_own_ends_leadership_and_releases() {
    let t0 = Instant::now();
    let lock = ScriptedLock::empty();
    let a = Candidate::start_with(
        t0,
        config(&lock).release_on_cancel(true),
        Work::ReturnsAfter(secs(3.0)),
    );
    until(t0, 3.1).await;
    assert_eq!(a.at(&Ev::Stopped), Some(secs(3.0)));
    assert_eq!(lock.current().record.holder_identity, "");
    assert_eq!(a.outcome().await, RunOutcome::WorkFinished);
}

#[tokio::test(start_paused = true)]
async fn cancel_before_leading_returns_without_callbacks() {
    let t0 = Instant::now();
    let lock = ScriptedLock::holding(record("other", 15, ts("2030-01-01T00:00:00Z")));
    let a = Candidate::start(t0, config(&lock).release_on_cancel(true));
    until(t0, 3.0).await;
    a.cancel.cancel();
    let events = a.events.clone();
    assert_eq!(a.outcome().await, RunOutcome::Cancelled);
    assert_eq!(
        events
            .lock()
            .iter()
            .map(|(_, e)| e.clone())
            .collect::<Vec<_>>(),
        [Ev::NewLeader("other".into())]
    );
    assert_eq!(lock.current().record.holder_identity, "other");
}

#[tokio::test(start_paused = true)]
async fn dropping_run_cancels_the_work_token() {
    let lock = ScriptedLock::empty();
    let elector = LeaderElector::new(config(&lock)).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let run = {
        let elector = elector.clone();
        tokio::spawn(async move {
            elector
                .run(
                    CancellationToken::new(),
                    LeaderCallbacks::new(|leading: CancellationToken| async move {
                        tokio::spawn(async move {
                            leading.cancelled().await;
                            let _ = tx.send(());
                        });
                        std::future::pending::<()>().await;
                    }),
                )
                .await
        })
    };
    sleep(secs(1.0)).await;
    assert!(elector.is_leader());
    run.abort();
    let _ = run.await;
    rx.await.expect("the work's token was cancelled");
    assert!(!elector.is_leader());
}

// ---------------------------------------------------------------------------------------
// Metrics.

#[tokio::test(start_paused = true)]
async fn master_status_gauge_is_one_exactly_while_leading() {
    let t0 = Instant::now();
    let mut registry = Registry::default();
    let metrics = LeaderElectionMetrics::new();
    metrics.register(&mut registry);
    let encode = || {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    };
    let lock = ScriptedLock::holding(record("other", 15, ts("2030-01-01T00:00:00Z")));
    let a = Candidate::start(t0, config(&lock).metrics(&metrics));
    until(t0, 1.0).await;
    assert!(
        encode().contains(r#"leader_election_master_status{name="scripted"} 0"#),
        "{}",
        encode()
    );
    until(t0, 15.0 + 4.4 + 0.1).await;
    assert!(a.elector.is_leader());
    assert!(encode().contains(r#"leader_election_master_status{name="scripted"} 1"#));
    lock.write_outside(record("other", 15, ts("2030-01-01T00:01:00Z")));
    assert_eq!(a.outcome().await, RunOutcome::LeadershipLost);
    assert!(encode().contains(r#"leader_election_master_status{name="scripted"} 0"#));
}

// ---------------------------------------------------------------------------------------
// All rules at once.

/// One leading interval: who, from the start of its work to the cancellation of its token.
type Intervals = Arc<Mutex<Vec<(&'static str, Duration, Option<Duration>)>>>;

#[tokio::test(start_paused = true)]
async fn under_random_faults_no_two_candidates_ever_lead_at_once() {
    for seed in 1..=8 {
        simulate(seed).await;
    }
}

/// Three candidates, each running again whenever its run ends, with faults switched at
/// random for 15 simulated minutes; checks that their leading intervals never overlap.
async fn simulate(seed: u64) {
    fastrand::seed(seed);
    let t0 = Instant::now();
    let end = t0 + secs(900.0);
    let store = ScriptedLock::empty();
    let intervals: Intervals = Arc::default();
    let mut locks = Vec::new();
    for who in ["a", "b", "c"] {
        let lock = store.for_candidate(who);
        locks.push(lock.clone());
        let intervals = intervals.clone();
        tokio::spawn(async move {
            // Each candidate runs again whenever its run ends, until the end.
            while Instant::now() < end {
                let elector = LeaderElector::new(
                    config(&lock)
                        .lease_duration(secs(3.0))
                        .renew_deadline(secs(2.0))
                        .retry_period(secs(0.5)),
                )
                .unwrap();
                let cancel = CancellationToken::new();
                let stop = cancel.clone();
                tokio::spawn(async move {
                    sleep_until(end).await;
                    stop.cancel();
                });
                let intervals = intervals.clone();
                let work = LeaderCallbacks::new(move |leading: CancellationToken| async move {
                    let i = {
                        let mut v = intervals.lock();
                        v.push((who, t0.elapsed(), None));
                        v.len() - 1
                    };
                    leading.cancelled().await;
                    intervals.lock()[i].2 = Some(t0.elapsed());
                });
                elector.run(cancel, work).await;
            }
        });
    }
    // Faults: now and then one candidate's API calls fail, hang, or slow down (up to
    // longer than the renew deadline), or come back to normal.
    while Instant::now() < end {
        sleep(secs(0.2 + 4.0 * fastrand::f64())).await;
        let lock = &locks[fastrand::usize(..locks.len())];
        lock.set_mode(match fastrand::u8(..6) {
            0 => Mode::Fail,
            1 => Mode::Hang,
            2 => Mode::Slow(secs(3.0 * fastrand::f64())),
            _ => Mode::Normal,
        });
    }
    sleep(secs(5.0)).await;
    let mut v = intervals.lock().clone();
    v.sort_by_key(|(_, start, _)| *start);
    assert!(
        v.len() >= 20,
        "leadership changed hands only {} times",
        v.len()
    );
    let holders: std::collections::HashSet<_> = v.iter().map(|(who, ..)| *who).collect();
    assert_eq!(
        holders.len(),
        3,
        "seed {seed}: every candidate led at some point"
    );
    for pair in v.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        let prev_end = prev
            .2
            .unwrap_or_else(|| panic!("{prev:?} never ended but {next:?} started"));
        // The same candidate may take its own lease back at the instant it gave up.
        assert!(
            prev_end < next.1 || (prev.0 == next.0 && prev_end == next.1),
            "seed {seed}: {} led until {prev_end:?}, {} from {:?}",
            prev.0,
            next.0,
            next.1
        );
    }
}
