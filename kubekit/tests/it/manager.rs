//! The manager and the controller builder against the real control plane: controllers
//! built from plain `async fn`s reconcile, owned objects enqueue their owner, predicates
//! filter, requeue-after and retries behave, readiness follows the caches, `/metrics` is
//! scraped with curl, a lost leadership stops the manager with an error, a permanent error
//! becomes a Warning Event and waits for a change, and a resync reconciles unchanged
//! objects.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubekit::clientset::{Clientset, CreateOptions, GetOptions, ListOptions, UpdateOptions};
use kubekit::controller::{ReconcileAction, ReconcileError};
use kubekit::leaderelection::{LeaderElectionConfig, LeaseLock};
use kubekit::manager::{Change, Manager, ManagerError, PERMANENT_ERROR_REASON, Predicate};
use kubekit::rest::RestConfig;
use parking_lot::Mutex;
use testenv::eventually;
use tokio_util::sync::CancellationToken;

use crate::common::namespace;

/// Reconciles per controller and object name.
#[derive(Default, Debug)]
struct Seen(Mutex<HashMap<(&'static str, String), usize>>);

impl Seen {
    fn record(&self, controller: &'static str, name: &str) -> usize {
        let mut seen = self.0.lock();
        let n = seen.entry((controller, name.to_string())).or_default();
        *n += 1;
        *n
    }

    fn count(&self, controller: &'static str, name: &str) -> usize {
        let seen = self.0.lock();
        seen.get(&(controller, name.to_string()))
            .copied()
            .unwrap_or_default()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0} always fails")]
struct AlwaysFails(String);

/// The first controller: `requeue-*` asks to come back twice, `fail-*` always fails.
async fn reconcile_primary(
    cm: Arc<ConfigMap>,
    seen: Arc<Seen>,
) -> Result<ReconcileAction, AlwaysFails> {
    let name = cm.metadata.name.clone().unwrap_or_default();
    let n = seen.record("primary", &name);
    if name.starts_with("fail") {
        return Err(AlwaysFails(name));
    }
    if name.starts_with("requeue") && n < 3 {
        return Ok(ReconcileAction::RequeueAfter(Duration::from_millis(200)));
    }
    Ok(ReconcileAction::Done)
}

/// The second controller, on the same type: it sees everything.
async fn reconcile_second(
    cm: Arc<ConfigMap>,
    seen: Arc<Seen>,
) -> Result<ReconcileAction, AlwaysFails> {
    seen.record("second", cm.metadata.name.as_deref().unwrap_or_default());
    Ok(ReconcileAction::Done)
}

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm
}

/// A free local port (bound and released), below the kernel's ephemeral ports (32768 and
/// up by default), so that no outgoing connection takes it before the manager binds it.
fn free_address() -> SocketAddr {
    let start = 10_000 + (std::process::id() % 20_000) as u16;
    (start..32_768)
        .chain(10_000..start)
        .find_map(|port| std::net::TcpListener::bind(("127.0.0.1", port)).ok())
        .and_then(|listener| listener.local_addr().ok())
        .expect("a free port of 127.0.0.1 below 32768")
}

/// `curl` of `url`: the status code and the body.
async fn curl(url: String) -> (u16, String) {
    let out = tokio::process::Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}", &url])
        .output()
        .await
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.parse().unwrap_or(0), body.to_string())
}

/// The value of the series `line_prefix` (its whole name and labels) in `metrics`.
fn value(metrics: &str, line_prefix: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(line_prefix)?.trim().parse().ok())
}

async fn admin_config() -> RestConfig {
    let cp = testenv::control_plane();
    RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .unwrap()
        .with_rate_limit(100.0, 200)
}

#[tokio::test]
async fn built_controllers_reconcile_share_informers_and_are_observable() {
    let ns = namespace("manager").await;
    let config = admin_config().await;
    let admin = Clientset::new(&config).unwrap();
    let cms = admin.core_v1().config_maps(&ns);
    for (name, labels) in [
        ("plain", &[][..]),
        ("requeue-me", &[][..]),
        ("fail-me", &[][..]),
        ("ignored", &[("skip", "true")][..]),
    ] {
        cms.create(&config_map(name, labels), &CreateOptions::default())
            .await
            .unwrap();
    }

    let address = free_address();
    let lease_ns = ns.clone();
    let mut mgr = Manager::builder(config)
        .namespace(&ns)
        .metrics_bind_address(address)
        .leader_election(move |clientset| {
            short_lease(clientset, &lease_ns, "manager-it").release_on_cancel(true)
        })
        .build()
        .unwrap();
    let configmaps = mgr.factory().core_v1().config_maps().informer().clone();
    let seen = Arc::new(Seen::default());
    let unlabelled = Predicate::new(|change| {
        let meta = match change {
            Change::Create(m) | Change::Delete(m) => m,
            Change::Update { new, .. } => new,
        };
        !meta.labels.as_ref().is_some_and(|l| l.contains_key("skip"))
    });
    mgr.controller::<ConfigMap>("primary")
        .owns::<Secret>()
        .with_event_filter(unlabelled)
        .with_event_filter(Predicate::resource_version_changed())
        .workers(2)
        .max_retries(2)
        .reconcile_timeout(Duration::from_secs(10))
        .build(reconcile_primary, seen.clone())
        .unwrap();
    mgr.controller::<ConfigMap>("second")
        .build(reconcile_second, seen.clone())
        .unwrap();
    assert!(matches!(
        mgr.controller::<ConfigMap>("second")
            .build(reconcile_second, seen.clone()),
        Err(ManagerError::DuplicateController(_))
    ));

    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));

    // /readyz: 500 until the caches synced, then 200.
    let ready = eventually(30, "/readyz 200", || async {
        let (status, body) = curl(format!("http://{address}/readyz")).await;
        if status == 200 {
            assert!(configmaps.has_synced(), "ready before the cache synced");
            return Some(());
        }
        if status == 500 {
            assert!(
                body.contains("[-]informers failed: caches not synced"),
                "{body}"
            );
        }
        None
    });
    ready.await;
    let (status, _) = curl(format!("http://{address}/healthz")).await;
    assert_eq!(status, 200);

    // Both controllers reconcile from the one shared cache.
    eventually(30, "both controllers reconcile `plain`", || async {
        (seen.count("primary", "plain") == 1 && seen.count("second", "plain") == 1).then_some(())
    })
    .await;
    // Requeue-after: two requeues, then done.
    eventually(30, "`requeue-me` reconciled three times", || async {
        (seen.count("primary", "requeue-me") == 3).then_some(())
    })
    .await;
    // Errors: the first try and two retries, then dropped.
    eventually(30, "`fail-me` tried three times", || async {
        (seen.count("primary", "fail-me") == 3).then_some(())
    })
    .await;
    // The predicate: `second` saw `ignored`, `primary` never did.
    eventually(30, "`second` reconciles `ignored`", || async {
        (seen.count("second", "ignored") == 1).then_some(())
    })
    .await;

    // An owned Secret's changes enqueue its controlling ConfigMap (and only the
    // controller=true reference counts).
    let plain = cms.get("plain", &GetOptions::default()).await.unwrap();
    let other = cms.get("requeue-me", &GetOptions::default()).await.unwrap();
    let mut secret = Secret::default();
    secret.metadata.name = Some("child".into());
    secret.metadata.owner_references = Some(vec![
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "plain".into(),
            uid: plain.metadata.uid.clone().unwrap(),
            controller: Some(true),
            block_owner_deletion: None,
        },
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "requeue-me".into(),
            uid: other.metadata.uid.clone().unwrap(),
            controller: None,
            block_owner_deletion: None,
        },
    ]);
    admin
        .core_v1()
        .secrets(&ns)
        .create(&secret, &CreateOptions::default())
        .await
        .unwrap();
    eventually(30, "the Secret enqueues its owner", || async {
        let n = seen.count("primary", "plain");
        assert!(n <= 2, "plain reconciled {n} times");
        (n == 2).then_some(())
    })
    .await;

    // A status-like write that changes nothing the filter looks at still passes
    // resource_version_changed; a relabel to skip=true is filtered.
    let mut ignored_later = cms.get("plain", &GetOptions::default()).await.unwrap();
    ignored_later.metadata.labels = Some([("skip".to_string(), "true".to_string())].into());
    cms.update(&ignored_later, &UpdateOptions::default())
        .await
        .unwrap();
    eventually(30, "`second` sees the relabel", || async {
        (seen.count("second", "plain") == 2).then_some(())
    })
    .await;
    // A change `primary` does take, made after the relabel: once `primary` has reconciled
    // it, the relabel went through its event filter before.
    cms.create(&config_map("marker", &[]), &CreateOptions::default())
        .await
        .unwrap();
    eventually(30, "`primary` reconciles the marker", || async {
        (seen.count("primary", "marker") == 1).then_some(())
    })
    .await;

    let (status, metrics) = curl(format!("http://{address}/metrics")).await;
    assert_eq!(status, 200);
    for (series, at_least) in [
        (r#"workqueue_adds_total{name="primary"}"#.to_string(), 5.0),
        (
            r#"controller_runtime_reconcile_total{controller="primary",result="success"}"#.into(),
            3.0,
        ),
        (
            r#"controller_runtime_reconcile_total{controller="primary",result="requeue_after"}"#
                .into(),
            2.0,
        ),
        (
            r#"controller_runtime_reconcile_errors_total{controller="primary"}"#.into(),
            3.0,
        ),
        (
            r#"controller_runtime_reconcile_time_seconds_count{controller="second"}"#.into(),
            5.0,
        ),
        (
            format!(r#"reflector_lists_total{{name="configmaps.v1 in namespace {ns}"}}"#),
            1.0,
        ),
        (
            format!(r#"informer_objects{{name="configmaps.v1 in namespace {ns}"}}"#),
            4.0,
        ),
        (
            r#"leader_election_master_status{name="manager-it"}"#.into(),
            1.0,
        ),
    ] {
        let v = value(&metrics, &series).unwrap_or_else(|| panic!("{series} missing:\n{metrics}"));
        assert!(
            v >= at_least,
            "{series} is {v}, expected at least {at_least}"
        );
    }
    // One informer per type for both controllers: a single list of ConfigMaps.
    assert_eq!(
        value(
            &metrics,
            &format!(r#"reflector_lists_total{{name="configmaps.v1 in namespace {ns}"}}"#)
        ),
        Some(1.0)
    );
    for family in [
        "rest_client_requests_total{",
        "rest_client_request_duration_seconds_count{",
        "workqueue_depth{",
        "reflector_watch_events_total{",
    ] {
        assert!(metrics.contains(family), "{family} missing:\n{metrics}");
    }
    assert_eq!(
        seen.count("primary", "ignored"),
        0,
        "filtered by the predicate"
    );
    assert_eq!(
        seen.count("primary", "fail-me"),
        3,
        "dropped after max retries"
    );
    assert_eq!(
        seen.count("primary", "plain"),
        2,
        "the relabel to skip=true is filtered"
    );

    cancel.cancel();
    manager.await.unwrap().unwrap();
    let lease: Lease = admin
        .coordination_v1()
        .leases(&ns)
        .get("manager-it", &GetOptions::default())
        .await
        .unwrap();
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert_eq!(holder, "", "released on cancel");
    assert!(
        tokio::net::TcpStream::connect(address).await.is_err(),
        "the endpoints stopped with the manager"
    );
}

#[tokio::test]
async fn a_manager_that_loses_its_lease_stops_its_controllers_and_returns_an_error() {
    let (admin, ns, mut mgr) = leader_elected_manager("manager-lost", "lost-it", true).await;
    let elector = mgr.elector().unwrap().clone();
    let seen = Arc::new(Seen::default());
    mgr.controller::<ConfigMap>("lost")
        .build(reconcile_second, seen.clone())
        .unwrap();
    let manager = tokio::spawn(mgr.start(CancellationToken::new()));
    eventually(30, "the manager leads and reconciles", || async {
        (elector.is_leader() && seen.count("second", "one") == 1).then_some(())
    })
    .await;

    usurp(&admin, &ns, "lost-it").await;
    stops_with_lost_leadership(manager, "the manager stops after losing its lease").await;
    assert!(!elector.is_leader());
}

#[tokio::test]
async fn a_manager_that_loses_its_lease_is_a_candidate_again_and_reconciles_once_it_leads_again() {
    let (admin, ns, mut mgr) =
        leader_elected_manager("manager-candidate", "candidate", false).await;
    let cms = admin.core_v1().config_maps(&ns);
    let elector = mgr.elector().unwrap().clone();
    let seen = Arc::new(Seen::default());
    mgr.controller::<ConfigMap>("second")
        .build(reconcile_second, seen.clone())
        .unwrap();
    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));
    eventually(30, "the manager leads and reconciles", || async {
        (elector.is_leader() && seen.count("second", "one") == 1).then_some(())
    })
    .await;

    usurp(&admin, &ns, "candidate").await;
    eventually(10, "the lease lost", || async {
        (!elector.is_leader()).then_some(())
    })
    .await;
    // Changed while another holds the lease: left queued, not reconciled here.
    cms.create(&config_map("two", &[]), &CreateOptions::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    if !elector.is_leader() {
        assert_eq!(
            seen.count("second", "two"),
            0,
            "no reconcile without the lease"
        );
    }
    // The usurper never renews: once its lease expires this replica takes it back.
    eventually(
        30,
        "leading again and reconciling what changed meanwhile",
        || async { (elector.is_leader() && seen.count("second", "two") == 1).then_some(()) },
    )
    .await;
    assert!(!manager.is_finished(), "the manager did not exit");
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(20), manager)
        .await
        .expect("stops on cancel")
        .unwrap()
        .unwrap();
}

/// An admin clientset, a fresh namespace (prefix `prefix`) holding ConfigMap `one`, and a
/// manager watching it with leader election on Lease `lease` (3 s / 2 s / 500 ms), exiting
/// when it loses the lease if `exit`, a candidate again otherwise.
async fn leader_elected_manager(
    prefix: &str,
    lease: &'static str,
    exit: bool,
) -> (Clientset, String, Manager) {
    let ns = namespace(prefix).await;
    let config = admin_config().await;
    let admin = Clientset::new(&config).unwrap();
    admin
        .core_v1()
        .config_maps(&ns)
        .create(&config_map("one", &[]), &CreateOptions::default())
        .await
        .unwrap();
    let lease_ns = ns.clone();
    let mgr = Manager::builder(config)
        .namespace(&ns)
        .leader_election(move |clientset| short_lease(clientset, &lease_ns, lease))
        .exit_on_lost_leadership(exit)
        .build()
        .unwrap();
    (admin, ns, mgr)
}

/// Leader election on Lease `lease` in `ns`, with the short timings of these tests.
fn short_lease(clientset: &Clientset, ns: &str, lease: &str) -> LeaderElectionConfig<LeaseLock> {
    LeaderElectionConfig::new(LeaseLock::from_clientset(clientset, ns, lease))
        .lease_duration(Duration::from_secs(3))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(500))
}

/// Waits (at most 20 s) for `manager` to return, and checks it returned `LeadershipLost`.
async fn stops_with_lost_leadership(
    manager: tokio::task::JoinHandle<Result<(), ManagerError>>,
    what: &str,
) {
    let result = tokio::time::timeout(Duration::from_secs(20), manager)
        .await
        .expect(what)
        .unwrap();
    assert!(
        matches!(result, Err(ManagerError::LeadershipLost)),
        "{result:?}"
    );
}

/// Someone else takes Lease `name` (as a candidate that judged it expired would).
async fn usurp(admin: &Clientset, ns: &str, name: &str) {
    let leases = admin.coordination_v1().leases(ns);
    loop {
        let mut lease = leases.get(name, &GetOptions::default()).await.unwrap();
        lease.spec.as_mut().unwrap().holder_identity = Some("usurper".into());
        match leases.update(&lease, &UpdateOptions::default()).await {
            Ok(_) => return,
            Err(e) if e.is_conflict() => continue,
            Err(e) => panic!("take the lease: {e}"),
        }
    }
}

/// A reconciler that never returns.
async fn reconcile_stuck(
    cm: Arc<ConfigMap>,
    seen: Arc<Seen>,
) -> Result<ReconcileAction, AlwaysFails> {
    seen.record("stuck", cm.metadata.name.as_deref().unwrap_or_default());
    std::future::pending().await
}

#[tokio::test]
async fn a_lease_lost_while_draining_after_cancel_stops_the_controllers_at_once() {
    let (admin, ns, mut mgr) = leader_elected_manager("manager-drain", "drain-it", true).await;
    let elector = mgr.elector().unwrap().clone();
    let seen = Arc::new(Seen::default());
    mgr.controller::<ConfigMap>("stuck")
        .build(reconcile_stuck, seen.clone())
        .unwrap();
    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));
    // One worker, stuck on the first ConfigMap it gets (ours, or the namespace's
    // kube-root-ca.crt).
    eventually(30, "a reconcile in flight", || async {
        let stuck = seen.count("stuck", "one") + seen.count("stuck", "kube-root-ca.crt");
        (elector.is_leader() && stuck == 1).then_some(())
    })
    .await;
    // Cancelled: the drain waits for the reconcile in flight, which never ends...
    cancel.cancel();
    // ...until the lease is lost: then the controllers stop at once.
    usurp(&admin, &ns, "drain-it").await;
    stops_with_lost_leadership(
        manager,
        "the manager stops once its lease is lost, drain or not",
    )
    .await;
}

/// Fails permanently until the ConfigMap has a `valid` key.
async fn reconcile_until_valid(
    cm: Arc<ConfigMap>,
    seen: Arc<Seen>,
) -> Result<ReconcileAction, ReconcileError> {
    seen.record(
        "until-valid",
        cm.metadata.name.as_deref().unwrap_or_default(),
    );
    if cm.data.as_ref().is_some_and(|d| d.contains_key("valid")) {
        return Ok(ReconcileAction::Done);
    }
    Err(ReconcileError::new("no valid key").permanent())
}

async fn reconcile_resyncing(
    cm: Arc<ConfigMap>,
    seen: Arc<Seen>,
) -> Result<ReconcileAction, ReconcileError> {
    seen.record("resyncing", cm.metadata.name.as_deref().unwrap_or_default());
    Ok(ReconcileAction::Done)
}

#[tokio::test]
async fn a_permanent_error_is_a_warning_event_and_waits_for_a_change_while_a_resync_reconciles_unchanged_objects()
 {
    let ns = namespace("manager-permanent").await;
    let config = admin_config().await;
    let admin = Clientset::new(&config).unwrap();
    let cms = admin.core_v1().config_maps(&ns);
    cms.create(&config_map("invalid", &[]), &CreateOptions::default())
        .await
        .unwrap();
    let mut mgr = Manager::builder(config).namespace(&ns).build().unwrap();
    let seen = Arc::new(Seen::default());
    // Two controllers on one informer: only the second one resyncs.
    mgr.controller::<ConfigMap>("until-valid")
        .build(reconcile_until_valid, seen.clone())
        .unwrap();
    mgr.controller::<ConfigMap>("resyncing")
        .resync_period(Duration::from_secs(1))
        .build(reconcile_resyncing, seen.clone())
        .unwrap();
    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));

    eventually(30, "three resyncs of an unchanged object", || async {
        (seen.count("resyncing", "invalid") >= 3).then_some(())
    })
    .await;
    let event = eventually(30, "the Warning Event of the permanent error", || async {
        let events = admin
            .core_v1()
            .events(&ns)
            .list(&ListOptions::default())
            .await
            .ok()?;
        events.items.into_iter().find(|e| {
            e.reason.as_deref() == Some(PERMANENT_ERROR_REASON)
                && e.involved_object.name.as_deref() == Some("invalid")
        })
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.involved_object.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(
        event.message.as_deref(),
        Some("no valid key; not retried until the object changes")
    );
    // Seconds have passed (three resyncs), in which a retried key would have been
    // reconciled again after 5, 10, 20 … ms; the other controller's resyncs do not reach
    // this one.
    assert_eq!(seen.count("until-valid", "invalid"), 1);

    let mut valid = cms.get("invalid", &GetOptions::default()).await.unwrap();
    valid.data = Some([("valid".to_string(), "yes".to_string())].into());
    cms.update(&valid, &UpdateOptions::default()).await.unwrap();
    eventually(30, "the changed object reconciled again", || async {
        (seen.count("until-valid", "invalid") == 2).then_some(())
    })
    .await;

    cancel.cancel();
    manager.await.unwrap().unwrap();
}

/// Takes 2 s per ConfigMap.
async fn reconcile_slowly(
    cm: Arc<ConfigMap>,
    seen: Arc<Seen>,
) -> Result<ReconcileAction, AlwaysFails> {
    seen.record("slow", cm.metadata.name.as_deref().unwrap_or_default());
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(ReconcileAction::Done)
}

/// The first reconcile of a manager that leads after the one under test released.
async fn reconcile_next(
    cm: Arc<ConfigMap>,
    seen: Arc<Seen>,
) -> Result<ReconcileAction, AlwaysFails> {
    let _ = cm;
    seen.record("next", "any");
    Ok(ReconcileAction::Done)
}

/// Keys queued by the shutdown test: 200, or `KUBEKIT_SHUTDOWN_KEYS` (10000 measures the
/// bound of the manager's shutdown with as many).
fn shutdown_keys() -> usize {
    std::env::var("KUBEKIT_SHUTDOWN_KEYS")
        .ok()
        .map(|n| n.parse().expect("KUBEKIT_SHUTDOWN_KEYS: a count"))
        .unwrap_or(200)
}

#[tokio::test]
async fn on_cancel_queued_keys_are_dropped_the_reconcile_in_flight_finishes_and_the_lease_is_released()
 {
    use futures_util::{StreamExt as _, stream};
    let keys = shutdown_keys();
    let ns = namespace("manager-shutdown").await;
    let config = admin_config().await;
    let admin = Clientset::new(&config).unwrap();
    let cms = admin.core_v1().config_maps(&ns);
    stream::iter(0..keys)
        .for_each_concurrent(16, |i| {
            let cms = cms.clone();
            async move {
                let cm = config_map(&format!("cm-{i}"), &[]);
                cms.create(&cm, &CreateOptions::default()).await.unwrap();
            }
        })
        .await;
    let manager_on = |config: RestConfig, lease: &str| {
        let lease_ns = ns.clone();
        let lease = lease.to_string();
        Manager::builder(config)
            .namespace(&ns)
            .graceful_shutdown_timeout(Duration::from_secs(10))
            .leader_election(move |clientset| {
                short_lease(clientset, &lease_ns, &lease).release_on_cancel(true)
            })
    };
    let mut mgr = manager_on(config.clone(), "shutdown").build().unwrap();
    let seen = Arc::new(Seen::default());
    mgr.controller::<ConfigMap>("slow")
        .build(reconcile_slowly, seen.clone())
        .unwrap();
    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));
    let started = || {
        (0..keys)
            .map(|i| seen.count("slow", &format!("cm-{i}")))
            .sum::<usize>()
    };
    // One worker, in the first of the queued reconciles of 2 s each.
    eventually(60, "a reconcile in flight", || async {
        (started() >= 1).then_some(())
    })
    .await;
    // A candidate for the same Lease, its caches synced while it waits.
    let mut next = manager_on(config, "shutdown").build().unwrap();
    next.controller::<ConfigMap>("next")
        .build(reconcile_next, seen.clone())
        .unwrap();
    let stop_next = CancellationToken::new();
    let next = tokio::spawn(next.start(stop_next.clone()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        seen.count("next", "any"),
        0,
        "the candidate reconciles only once it leads"
    );

    cancel.cancel();
    let at_cancel = started();
    let stopping = std::time::Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(30), manager)
        .await
        .expect("the manager stops within its grace period, not after its queue")
        .unwrap();
    let took = stopping.elapsed();
    result.unwrap();
    let released = std::time::Instant::now();
    assert_eq!(started(), at_cancel, "no reconcile started after cancel");
    let lease = admin
        .coordination_v1()
        .leases(&ns)
        .get("shutdown", &GetOptions::default())
        .await
        .unwrap();
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert_eq!(holder, "", "the lease is released when the manager returns");
    eventually(30, "the candidate leads and reconciles", || async {
        (seen.count("next", "any") > 0).then_some(())
    })
    .await;
    let successor = released.elapsed();
    eprintln!(
        "stopped {took:?} after cancel, {at_cancel} reconcile(s) started, {keys} queued; the \
         candidate's first reconcile {successor:?} after the release"
    );
    // The reconcile in flight (2 s) returns, then the Lease is released.
    assert!(
        took <= Duration::from_secs(4),
        "stopped {took:?} after cancel with {keys} keys queued"
    );
    stop_next.cancel();
    next.await.unwrap().unwrap();
}

/// How many times each object of the read-your-own-writes test is written.
const ROUNDS: u64 = 12;

/// The read-your-own-writes test's controller: writes its primary ConfigMap and an owned
/// Secret every reconcile, and counts the reconciles that read either older than this
/// process last wrote it.
struct Churn {
    clientset: Clientset,
    secrets: Arc<kubekit::cache::Indexer<Secret>>,
    /// The resourceVersion of each object's last write (`ConfigMap/<name>`, `Secret/<name>`).
    written: Mutex<HashMap<String, u64>>,
    stale: std::sync::atomic::AtomicUsize,
}

fn version(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> u64 {
    let rv = meta.resource_version.as_deref().unwrap_or_default();
    rv.parse().unwrap_or_default()
}

async fn reconcile_churn(
    cm: Arc<ConfigMap>,
    ctx: Arc<Churn>,
) -> Result<ReconcileAction, kubekit::rest::Error> {
    use kubekit::applyconfigurations::api::core::v1 as apply;
    use kubekit::clientset::{PatchBody, PatchOptions};
    let ns = cm.metadata.namespace.clone().unwrap_or_default();
    let name = cm.metadata.name.clone().unwrap_or_default();
    let child = ctx.secrets.get(&format!("{ns}/{name}"));
    {
        let written = ctx.written.lock();
        let older = |what: &str, read: u64| written.get(what).is_some_and(|w| read < *w);
        let child_version = child.as_ref().map_or(0, |s| version(&s.metadata));
        if older(&format!("ConfigMap/{name}"), version(&cm.metadata))
            || older(&format!("Secret/{name}"), child_version)
        {
            ctx.stale.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let data = cm.data.as_ref();
    let round: u64 = data
        .and_then(|d| d.get("round"))
        .and_then(|r| r.parse().ok())
        .unwrap_or_default();
    if round >= ROUNDS {
        return Ok(ReconcileAction::Done);
    }
    let next = (round + 1).to_string();
    let secret = apply::Secret::new(&name, &ns).string_data([("round", next.clone())]);
    let secrets = ctx.clientset.core_v1().secrets(&ns);
    let child = secrets.apply_owned(&*cm, secret, "churn").await?;
    let patch = PatchBody::Merge(serde_json::json!({ "data": { "round": next } }));
    let cms = ctx.clientset.core_v1().config_maps(&ns);
    let cm = cms.patch(&name, &patch, &PatchOptions::default()).await?;
    let mut written = ctx.written.lock();
    written.insert(format!("Secret/{name}"), version(&child.metadata));
    written.insert(format!("ConfigMap/{name}"), version(&cm.metadata));
    // At once: the reconcile that reads the cache before the informer has seen the write.
    Ok(ReconcileAction::RequeueAfter(Duration::ZERO))
}

/// Runs the churn controller over 10 ConfigMaps, `ROUNDS` writes each, with
/// read-your-own-writes `on` or off: the stale reads counted, and the manager's metrics.
async fn churn(on: bool) -> (usize, String) {
    let ns = namespace("manager-own-writes").await;
    let config = admin_config().await;
    let admin = Clientset::new(&config).unwrap();
    let cms = admin.core_v1().config_maps(&ns);
    for i in 0..10 {
        let cm = config_map(&format!("cm-{i}"), &[]);
        cms.create(&cm, &CreateOptions::default()).await.unwrap();
    }
    let address = free_address();
    let mut mgr = Manager::builder(config)
        .namespace(&ns)
        .metrics_bind_address(address)
        .read_your_writes(on)
        .build()
        .unwrap();
    let ctx = Arc::new(Churn {
        clientset: mgr.clientset().clone(),
        secrets: mgr
            .factory()
            .core_v1()
            .secrets()
            .informer()
            .indexer()
            .clone(),
        written: Mutex::default(),
        stale: Default::default(),
    });
    mgr.controller::<ConfigMap>("churn")
        .owns::<Secret>()
        .workers(4)
        .build(reconcile_churn, ctx.clone())
        .unwrap();
    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));
    eventually(60, "every ConfigMap written ROUNDS times", || async {
        let list = cms.list(&ListOptions::default()).await.ok()?;
        let done = list.items.iter().all(|cm| {
            let round = cm.data.as_ref().and_then(|d| d.get("round"));
            round.is_some_and(|r| *r == ROUNDS.to_string())
        });
        done.then_some(())
    })
    .await;
    let (_, metrics) = curl(format!("http://{address}/metrics")).await;
    cancel.cancel();
    manager.await.unwrap().unwrap();
    (
        ctx.stale.load(std::sync::atomic::Ordering::Relaxed),
        metrics,
    )
}

#[tokio::test]
async fn a_reconcile_never_reads_older_objects_than_its_own_last_writes_unless_turned_off() {
    let (stale, metrics) = churn(true).await;
    assert_eq!(
        stale, 0,
        "reconciles that read an object older than their own last write"
    );
    let deferred = value(
        &metrics,
        r#"kubekit_read_your_writes_deferrals_total{controller="churn"}"#,
    );
    assert!(
        deferred.is_some_and(|d| d > 0.0),
        "keys were held back:\n{metrics}"
    );
    for resource in ["v1/configmaps", "v1/secrets"] {
        let series =
            format!(r#"kubekit_informer_write_lag_seconds_count{{resource="{resource}"}}"#);
        assert!(
            value(&metrics, &series).is_some_and(|n| n > 0.0),
            "{series}:\n{metrics}"
        );
    }
    let (stale_off, _) = churn(false).await;
    assert!(
        stale_off > 0,
        "without read-your-own-writes, some reconciles read stale objects"
    );
    eprintln!("stale reads: 0 with read-your-own-writes, {stale_off} without");
}

/// A kind whose CRD only the test below installs, late.
#[derive(kube::CustomResource, Clone, Debug, serde::Deserialize, serde::Serialize)]
#[kube(
    group = "late.kubekit.test",
    version = "v1",
    kind = "Late",
    namespaced,
    schema = "disabled"
)]
struct LateSpec {
    note: String,
}

async fn reconcile_late(late: Arc<Late>, seen: Arc<Seen>) -> Result<ReconcileAction, AlwaysFails> {
    seen.record("late", late.metadata.name.as_deref().unwrap_or_default());
    Ok(ReconcileAction::Done)
}

async fn reconcile_present(
    cm: Arc<ConfigMap>,
    seen: Arc<Seen>,
) -> Result<ReconcileAction, AlwaysFails> {
    seen.record("present", cm.metadata.name.as_deref().unwrap_or_default());
    Ok(ReconcileAction::Done)
}

#[tokio::test]
async fn a_controller_of_a_kind_not_served_holds_no_other_back_and_starts_once_its_crd_is_installed()
 {
    let ns = namespace("manager-late-crd").await;
    let config = admin_config().await;
    let admin = Clientset::new(&config).unwrap();
    admin
        .core_v1()
        .config_maps(&ns)
        .create(&config_map("here", &[]), &CreateOptions::default())
        .await
        .unwrap();
    let mut mgr = Manager::builder(config).namespace(&ns).build().unwrap();
    let seen = Arc::new(Seen::default());
    mgr.controller::<ConfigMap>("present")
        .build(reconcile_present, seen.clone())
        .unwrap();
    mgr.controller::<Late>("late")
        .build(reconcile_late, seen.clone())
        .unwrap();
    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));

    // The ConfigMap controller runs though the other kind is not served.
    eventually(30, "the ConfigMap reconciled", || async {
        (seen.count("present", "here") > 0).then_some(())
    })
    .await;

    // Installed later: its controller starts and reconciles what is created.
    admin
        .install_crd(
            crate::clientset::crd("late.kubekit.test", "lates", "Late"),
            "kubekit-tests",
        )
        .await
        .expect("install the CRD");
    let late = Late::new("first", LateSpec { note: "x".into() });
    eventually(60, "the Late created once served", || async {
        admin
            .resource::<Late>(&ns)
            .create(&late, &CreateOptions::default())
            .await
            .ok()
    })
    .await;
    eventually(30, "the Late reconciled", || async {
        (seen.count("late", "first") > 0).then_some(())
    })
    .await;
    cancel.cancel();
    manager.await.unwrap().unwrap();
}
