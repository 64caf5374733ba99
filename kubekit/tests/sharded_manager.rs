//! Sharded managers against the real control plane: three managers in one process, members
//! of one ring, reconcile ConfigMaps in three namespaces (each object again every 300 ms);
//! every object is reconciled, never by two managers at once (a shared map of the keys in
//! flight), through a manager cancelled (its ranges released and taken over), one joining
//! (split again) and one dying without release (taken over once its Lease expired).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::cache::ShardKey;
use kubekit::clientset::{Clientset, CreateOptions, GetOptions};
use kubekit::controller::{ReconcileAction, ReconcileError};
use kubekit::manager::{Manager, Sharding};
use kubekit::rest::{RestClient, RestConfig};
use parking_lot::Mutex;
use testenv::eventually;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const LABEL_KEY: &str = "sharded-manager";

/// Every reconcile of the test's objects, by every manager.
#[derive(Default)]
struct Tracker {
    /// The manager reconciling each key now.
    in_flight: Mutex<HashMap<String, usize>>,
    /// Two managers reconciling one key at once.
    overlaps: Mutex<Vec<String>>,
    /// Every reconcile's end: key, manager, when.
    done: Mutex<Vec<(String, usize, Instant)>>,
}

impl Tracker {
    /// The managers that reconciled each key since `since`.
    fn by_key_since(&self, since: Instant) -> BTreeMap<String, BTreeSet<usize>> {
        let mut by_key: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        for (key, manager, at) in self.done.lock().iter() {
            if *at >= since {
                by_key.entry(key.clone()).or_default().insert(*manager);
            }
        }
        by_key
    }
}

struct Ctx {
    manager: usize,
    run: String,
    tracker: Arc<Tracker>,
}

/// Records the reconcile as in flight for 20 ms, and comes back every 300 ms so that every
/// object is reconciled again and again, across every handover.
async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<ReconcileAction, ReconcileError> {
    let labels = cm.metadata.labels.as_ref();
    if labels.and_then(|l| l.get(LABEL_KEY)) != Some(&ctx.run) {
        return Ok(ReconcileAction::Done);
    }
    let key = format!(
        "{}/{}",
        cm.metadata.namespace.as_deref().unwrap_or_default(),
        cm.metadata.name.as_deref().unwrap_or_default()
    );
    let tracker = &ctx.tracker;
    if let Some(other) = tracker.in_flight.lock().insert(key.clone(), ctx.manager) {
        tracker.overlaps.lock().push(format!(
            "{key}: manager {} started while manager {other} was reconciling it",
            ctx.manager
        ));
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    tracker.in_flight.lock().remove(&key);
    tracker.done.lock().push((key, ctx.manager, Instant::now()));
    Ok(ReconcileAction::RequeueAfter(Duration::from_millis(300)))
}

struct Running {
    /// The manager's ConfigMap informer cache.
    cache: Arc<kubekit::cache::Indexer<ConfigMap>>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kubekit::manager::ManagerError>>,
}

fn start_manager(
    config: &RestConfig,
    ring: &str,
    lease_namespace: &str,
    manager: usize,
    run: &str,
    tracker: &Arc<Tracker>,
) -> Running {
    let sharding = Sharding::new(ring, ShardKey::Uid)
        .lease_namespace(lease_namespace)
        .identity(format!("manager-{manager}"))
        .lease_duration(Duration::from_secs(3))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(500));
    let mut mgr = Manager::builder(config.clone())
        .sharding(sharding)
        .build()
        .expect("sharded manager");
    let ctx = Arc::new(Ctx {
        manager,
        run: run.to_string(),
        tracker: Arc::clone(tracker),
    });
    mgr.controller::<ConfigMap>("configmaps")
        .workers(4)
        .build(reconcile, ctx)
        .expect("controller");
    let cache = mgr
        .factory()
        .for_type::<ConfigMap>()
        .informer()
        .indexer()
        .clone();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(mgr.start(cancel.clone()));
    Running {
        cache,
        cancel,
        task,
    }
}

/// Waits until the managers' informers hold every object of the run exactly once between
/// them (each only its share: its caches are narrowed to its ranges); returns the shares.
async fn cached_once(managers: &[Running], run: &str, total: usize, what: &str) -> Vec<usize> {
    let caches: Vec<_> = managers.iter().map(|m| Arc::clone(&m.cache)).collect();
    eventually(30, what, || {
        let shares: Vec<usize> = caches
            .iter()
            .map(|c| {
                c.list()
                    .iter()
                    .filter(|cm| {
                        cm.metadata
                            .labels
                            .as_ref()
                            .and_then(|l| l.get(LABEL_KEY))
                            .is_some_and(|v| v == run)
                    })
                    .count()
            })
            .collect();
        let ok = shares.iter().sum::<usize>() == total && shares.iter().all(|n| *n < total);
        async move { ok.then_some(shares) }
    })
    .await
}

/// Waits until, in a 1 s window, every object is reconciled by exactly one manager and
/// the managers reconciling are exactly `owners`; returns the managers of each key in
/// that window.
async fn settled(
    tracker: &Arc<Tracker>,
    keys: &BTreeSet<String>,
    owners: &[usize],
    what: &str,
) -> BTreeMap<String, BTreeSet<usize>> {
    let owners: BTreeSet<usize> = owners.iter().copied().collect();
    eventually(60, what, || {
        let (tracker, keys, owners) = (Arc::clone(tracker), keys.clone(), owners.clone());
        async move {
            let since = Instant::now();
            tokio::time::sleep(Duration::from_secs(1)).await;
            let by_key = tracker.by_key_since(since);
            let covered = by_key.keys().cloned().collect::<BTreeSet<_>>() == keys;
            let single = by_key.values().all(|m| m.len() == 1);
            let seen: BTreeSet<usize> = by_key.values().flatten().copied().collect();
            (covered && single && seen == owners).then_some(by_key)
        }
    })
    .await
}

#[tokio::test]
async fn sharded_managers_reconcile_every_object_never_two_at_once_through_a_release_a_join_and_a_death()
 {
    let cp = testenv::control_plane();
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .expect("admin kubeconfig")
        .with_rate_limit(500.0, 1000);
    let clientset = Clientset::from_rest_client(RestClient::new(&config).expect("rest client"));
    let client = cp.client().await;
    let mut namespaces = Vec::new();
    for _ in 0..3 {
        namespaces.push(cp.create_namespace(&client, "sharded-manager").await);
    }
    let run = namespaces[0].clone();
    let mut keys = BTreeSet::new();
    for ns in &namespaces {
        let cms = clientset.core_v1().config_maps(ns);
        for i in 0..20 {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some(format!("cm-{i}"));
            cm.metadata.labels = Some([(LABEL_KEY.to_string(), run.clone())].into());
            cms.create(&cm, &CreateOptions::default())
                .await
                .expect("create a ConfigMap");
            keys.insert(format!("{ns}/cm-{i}"));
        }
    }

    let tracker = Arc::new(Tracker::default());
    let ring = format!("ring-{run}");
    let started = Instant::now();
    let mut managers: Vec<Running> = (0..3)
        .map(|m| start_manager(&config, &ring, &namespaces[0], m, &run, &tracker))
        .collect();

    // Every object reconciled, and the work split three ways: in a window after the
    // ranges settled, each object is reconciled by exactly one manager, and each manager
    // has some.
    let split = settled(
        &tracker,
        &keys,
        &[0, 1, 2],
        "every object reconciled by exactly one of three managers",
    )
    .await;
    println!(
        "split after {:?}: {:?} objects per manager",
        started.elapsed(),
        (0..3)
            .map(|m| split.values().filter(|o| o.contains(&m)).count())
            .collect::<Vec<_>>()
    );

    let shares = cached_once(
        &managers,
        &run,
        keys.len(),
        "each cache holds only its share",
    )
    .await;
    println!("objects cached per manager: {shares:?}");

    // Manager 2 is cancelled: it drains, releases its Lease, and its objects are taken
    // over by the other two.
    let leaving: BTreeSet<String> = split
        .iter()
        .filter(|(_, o)| o.contains(&2))
        .map(|(k, _)| k.clone())
        .collect();
    let gone = managers.pop().expect("manager 2");
    gone.cancel.cancel();
    gone.task
        .await
        .expect("manager task")
        .expect("a cancelled manager stops without error");
    let cancelled_at = Instant::now();
    let lease = clientset
        .coordination_v1()
        .leases(&namespaces[0])
        .get(&format!("{ring}-manager-2"), &GetOptions::default())
        .await
        .expect("the released lease");
    let spec = lease.spec.unwrap_or_default();
    assert_eq!(spec.holder_identity, None, "released: no holder");
    let held = lease.metadata.annotations.unwrap_or_default();
    assert_eq!(
        held.get(kubekit::manager::HELD_ANNOTATION)
            .map(String::as_str),
        Some(""),
        "released: nothing held"
    );
    settled(
        &tracker,
        &keys,
        &[0, 1],
        "the cancelled manager's objects taken over",
    )
    .await;
    println!(
        "the cancelled manager's {} objects taken over within {:?} (and a 1 s window)",
        leaving.len(),
        cancelled_at.elapsed()
    );

    let shares = cached_once(
        &managers,
        &run,
        keys.len(),
        "the remaining caches narrowed to the new split",
    )
    .await;
    println!("objects cached per manager after one left: {shares:?}");

    // A third manager joins: the work is split three ways again.
    managers.push(start_manager(
        &config,
        &ring,
        &namespaces[0],
        3,
        &run,
        &tracker,
    ));
    let joined = Instant::now();
    settled(
        &tracker,
        &keys,
        &[0, 1, 3],
        "the work split with a joining manager",
    )
    .await;
    println!(
        "split with the joining manager within {:?}",
        joined.elapsed()
    );
    let shares = cached_once(&managers, &run, keys.len(), "caches split with a joiner").await;
    println!("objects cached per manager after one joined: {shares:?}");

    // Manager 0 dies (its task dropped: no release). Its workers admit nothing once its
    // renew deadline has passed by its clock; the others take its objects once its Lease
    // has expired by theirs.
    managers.remove(0).task.abort();
    let killed = Instant::now();
    settled(
        &tracker,
        &keys,
        &[1, 3],
        "the dead manager's objects taken over",
    )
    .await;
    let took = killed.elapsed();
    println!("the dead manager's objects taken over within {took:?} (and a 1 s window)");
    assert!(
        took < Duration::from_secs(3 + 1 + 3),
        "within lease duration + retry period (and the window): {took:?}"
    );

    for m in managers {
        m.cancel.cancel();
        m.task.await.expect("manager task").expect("manager stops");
    }
    let overlaps = tracker.overlaps.lock().clone();
    assert!(overlaps.is_empty(), "overlapping reconciles: {overlaps:#?}");
    let total = tracker.done.lock().len();
    println!("{total} reconciles, none overlapping");
}
