//! Integration tests of `kubekit::leaderelection` against the real API server: candidates
//! on one `coordination.k8s.io/v1` Lease, with short timings (lease 3 s, renew deadline
//! 2 s, retry 0.5 s).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kubekit::clientset::{Clientset, GetOptions, ResourceClient, UpdateOptions};
use kubekit::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionMetrics, LeaderElectionRecord,
    LeaderElector, LeaseLock, Lock, RunOutcome, VersionedRecord,
};
use kubekit::rest::Result;
use prometheus_client::registry::Registry;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

use crate::common::{admin_client, namespace};
use testenv::eventually;

const LEASE: &str = "it-leader";

/// A [`LeaseLock`] that counts the 409 Conflicts the API server answered to its updates.
#[derive(Clone)]
struct CountingLock {
    inner: Arc<LeaseLock>,
    conflicts: Arc<AtomicUsize>,
}

impl Lock for CountingLock {
    async fn get(&self) -> Result<Option<VersionedRecord>> {
        self.inner.get().await
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<VersionedRecord> {
        self.inner.create(record).await
    }

    async fn update(&self, record: &LeaderElectionRecord, rv: &str) -> Result<VersionedRecord> {
        let result = self.inner.update(record, rv).await;
        if result.as_ref().is_err_and(|e| e.is_conflict()) {
            self.conflicts.fetch_add(1, Ordering::SeqCst);
        }
        result
    }

    fn name(&self) -> &str {
        self.inner.name()
    }
}

struct Candidate {
    elector: LeaderElector<CountingLock>,
    conflicts: Arc<AtomicUsize>,
    cancel: CancellationToken,
    run: JoinHandle<RunOutcome>,
}

fn config(clientset: &Clientset, ns: &str, identity: &str) -> LeaderElectionConfig<CountingLock> {
    let lock = CountingLock {
        inner: Arc::new(LeaseLock::from_clientset(clientset, ns, LEASE)),
        conflicts: Arc::default(),
    };
    LeaderElectionConfig::new(lock)
        .identity(identity)
        .lease_duration(Duration::from_secs(3))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(500))
}

/// Runs a candidate whose work waits for its token.
fn start(config: LeaderElectionConfig<CountingLock>) -> Candidate {
    let elector = LeaderElector::new(config).expect("valid config");
    let cancel = CancellationToken::new();
    let run = {
        let (elector, cancel) = (elector.clone(), cancel.clone());
        tokio::spawn(async move {
            let callbacks = LeaderCallbacks::new(|leading: CancellationToken| async move {
                leading.cancelled().await;
            });
            elector.run(cancel, callbacks).await
        })
    };
    Candidate {
        conflicts: Arc::clone(&elector.lock().conflicts),
        elector,
        cancel,
        run,
    }
}

impl Candidate {
    async fn wait_leading(&self, what: &str) {
        eventually(15, what, || async {
            self.elector.is_leader().then_some(())
        })
        .await;
    }

    async fn stop(self) -> RunOutcome {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.run)
            .await
            .expect("run returns after cancel")
            .expect("run did not panic")
    }
}

async fn setup(prefix: &str) -> (Clientset, String, ResourceClient<Lease>) {
    let clientset = Clientset::from_rest_client(admin_client().await);
    let ns = namespace(prefix).await;
    let leases = clientset.coordination_v1().leases(&ns);
    (clientset, ns, leases)
}

async fn lease(leases: &ResourceClient<Lease>) -> Lease {
    leases
        .get(LEASE, &GetOptions::default())
        .await
        .expect("get the lease")
}

/// Changes the Lease from outside the elector: read, `change`, write on the version read
/// (again if the elector renewed in between).
async fn write_outside(leases: &ResourceClient<Lease>, change: impl Fn(&mut Lease)) -> Lease {
    loop {
        let mut l = lease(leases).await;
        change(&mut l);
        match leases.update(&l, &UpdateOptions::default()).await {
            Ok(written) => return written,
            Err(e) if e.is_conflict() => continue,
            Err(e) => panic!("write the lease: {e}"),
        }
    }
}

fn holder(lease: &Lease) -> &str {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .unwrap_or("")
}

#[tokio::test]
async fn two_candidates_on_one_lease_exactly_one_leads_and_the_lease_names_it() {
    let (clientset, ns, leases) = setup("le-two").await;
    let a = start(config(&clientset, &ns, "a"));
    let b = start(config(&clientset, &ns, "b"));
    let leader = eventually(15, "a leader", || async {
        match (a.elector.is_leader(), b.elector.is_leader()) {
            (true, true) => panic!("two leaders"),
            (true, false) => Some("a"),
            (false, true) => Some("b"),
            (false, false) => None,
        }
    })
    .await;

    // Longer than the lease: renewals keep the same single leader.
    let end = Instant::now() + Duration::from_secs(4);
    while Instant::now() < end {
        assert_eq!(a.elector.is_leader(), leader == "a");
        assert_eq!(b.elector.is_leader(), leader == "b");
        sleep(Duration::from_millis(100)).await;
    }
    let l = lease(&leases).await;
    assert_eq!(holder(&l), leader);
    let spec = l.spec.as_ref().expect("spec");
    assert_eq!(spec.lease_duration_seconds, Some(3));
    assert_eq!(spec.lease_transitions, Some(0));
    assert!(spec.renew_time.is_some() && spec.acquire_time.is_some());
    assert_eq!(a.elector.get_leader().as_deref(), Some(leader));
    assert_eq!(b.elector.get_leader().as_deref(), Some(leader));

    assert_eq!(a.stop().await, RunOutcome::Cancelled);
    assert_eq!(b.stop().await, RunOutcome::Cancelled);
}

#[tokio::test]
async fn release_on_cancel_hands_the_lease_over_within_about_one_retry_period() {
    let (clientset, ns, leases) = setup("le-release").await;
    let a = start(config(&clientset, &ns, "a").release_on_cancel(true));
    a.wait_leading("a to lead").await;
    let b = start(config(&clientset, &ns, "b"));
    eventually(5, "b to see a", || async {
        (b.elector.get_leader().as_deref() == Some("a")).then_some(())
    })
    .await;
    assert!(!b.elector.is_leader());

    let cancelled = Instant::now();
    assert_eq!(a.stop().await, RunOutcome::Cancelled);
    let l = lease(&leases).await;
    assert!(
        ["", "b"].contains(&holder(&l)),
        "released (holder cleared) or already taken by b: {:?}",
        holder(&l)
    );
    let took = eventually(5, "b to take over", || async {
        b.elector.is_leader().then(|| cancelled.elapsed())
    })
    .await;
    eprintln!("b took over {took:?} after a was cancelled");
    // Without the release b would wait the whole lease (3 s) after it last saw a renew.
    assert!(
        took < Duration::from_millis(2500),
        "took {took:?}: b waited for expiry instead of taking the released lease"
    );
    let l = lease(&leases).await;
    assert_eq!(holder(&l), "b");
    assert_eq!(l.spec.as_ref().and_then(|s| s.lease_transitions), Some(1));
    assert_eq!(b.stop().await, RunOutcome::Cancelled);
}

#[tokio::test]
async fn an_outside_write_makes_the_renewal_conflict_and_the_lease_is_read_again_not_overwritten() {
    let (clientset, ns, leases) = setup("le-conflict").await;
    let a = start(config(&clientset, &ns, "a"));
    a.wait_leading("a to lead").await;

    // 1. Someone labels the Lease: a's next renewal (on the version a wrote) gets a 409;
    //    a reads the Lease again, still holds it, and renews on the new version, keeping
    //    the label.
    write_outside(&leases, |l| {
        l.metadata.labels = Some([("touched".to_string(), "yes".to_string())].into());
    })
    .await;
    eventually(5, "a conflict on renewal", || async {
        (a.conflicts.load(Ordering::SeqCst) >= 1).then_some(())
    })
    .await;
    sleep(Duration::from_millis(1500)).await;
    assert!(a.elector.is_leader(), "the label did not take the lease");
    let l = lease(&leases).await;
    assert_eq!(holder(&l), "a");
    assert_eq!(
        l.metadata
            .labels
            .as_ref()
            .and_then(|m| m.get("touched"))
            .map(String::as_str),
        Some("yes"),
        "the renewal kept what it did not own"
    );

    // 2. Someone takes the Lease: a's renewal gets a 409, a reads the new holder and stops
    //    leading at once (not at its renew deadline), without writing the Lease again.
    let conflicts = a.conflicts.load(Ordering::SeqCst);
    let taken = write_outside(&leases, |l| {
        let spec = l.spec.as_mut().expect("spec");
        spec.holder_identity = Some("intruder".into());
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        spec.lease_duration_seconds = Some(60);
    })
    .await;
    let at = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(5), a.run)
        .await
        .expect("a stops")
        .expect("no panic");
    assert_eq!(outcome, RunOutcome::LeadershipLost);
    assert!(
        at.elapsed() < Duration::from_millis(1500),
        "lost at the next renewal, not at the deadline: {:?}",
        at.elapsed()
    );
    assert!(a.conflicts.load(Ordering::SeqCst) > conflicts);
    assert_eq!(a.elector.get_leader().as_deref(), Some("intruder"));
    sleep(Duration::from_secs(1)).await;
    let l = lease(&leases).await;
    assert_eq!(holder(&l), "intruder");
    assert_eq!(
        l.metadata.resource_version, taken.metadata.resource_version,
        "nobody wrote after the intruder"
    );
}

#[tokio::test]
async fn master_status_gauge_reflects_leadership() {
    let (clientset, ns, _) = setup("le-metrics").await;
    let (mut ra, mut rb) = (Registry::default(), Registry::default());
    let (ma, mb) = (LeaderElectionMetrics::new(), LeaderElectionMetrics::new());
    ma.register(&mut ra);
    mb.register(&mut rb);
    let status = |registry: &Registry| {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).expect("encode");
        if text.contains(&format!(
            "leader_election_master_status{{name=\"{LEASE}\"}} 1"
        )) {
            1
        } else {
            assert!(
                text.contains(&format!(
                    "leader_election_master_status{{name=\"{LEASE}\"}} 0"
                )),
                "{text}"
            );
            0
        }
    };

    let a = start(
        config(&clientset, &ns, "a")
            .metrics(&ma)
            .release_on_cancel(true),
    );
    a.wait_leading("a to lead").await;
    let b = start(config(&clientset, &ns, "b").metrics(&mb));
    sleep(Duration::from_secs(1)).await;
    assert_eq!((status(&ra), status(&rb)), (1, 0));

    assert_eq!(a.stop().await, RunOutcome::Cancelled);
    assert_eq!(status(&ra), 0);
    b.wait_leading("b to take over").await;
    assert_eq!((status(&ra), status(&rb)), (0, 1));
    assert_eq!(b.stop().await, RunOutcome::Cancelled);
    assert_eq!(status(&rb), 0);
}
