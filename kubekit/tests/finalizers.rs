//! Finalizers against the real control plane: the guarded patches of
//! `add_finalizer`/`remove_finalizer` never clobber a list someone else changed, and
//! `finalizer` adds itself, runs apply and cleanup, keeps a deleted object until its
//! cleanup succeeded, and completes a cleanup that a crash interrupted when a fresh
//! manager starts.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kubekit::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, PatchBody, PatchOptions,
};
use kubekit::controller::ReconcileAction;
use kubekit::finalizer::{
    FinalizerError, FinalizerEvent, add_finalizer, finalizer, remove_finalizer,
};
use kubekit::manager::{Change, Manager, Predicate};
use kubekit::rest::RestConfig;
use testenv::eventually;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const FINALIZER: &str = "kubekit.test/cleanup";

async fn setup(prefix: &str) -> (RestConfig, Clientset, String) {
    let cp = testenv::control_plane();
    let ns = cp.create_namespace(&cp.client().await, prefix).await;
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .expect("admin kubeconfig")
        .with_rate_limit(100.0, 200);
    let clientset = Clientset::new(&config).expect("clientset");
    (config, clientset, ns)
}

fn config_map(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm
}

fn finalizers(cm: &ConfigMap) -> Vec<&str> {
    cm.metadata
        .finalizers
        .iter()
        .flatten()
        .map(String::as_str)
        .collect()
}

/// Appends `name` to the object's finalizers without any guard, as another controller
/// would.
async fn add_unguarded(clientset: &Clientset, ns: &str, cm: &str, name: &str) -> ConfigMap {
    let patch = PatchBody::Json(serde_json::json!([
        { "op": "add", "path": "/metadata/finalizers/-", "value": name }
    ]));
    let cms = clientset.core_v1().config_maps(ns);
    cms.patch(cm, &patch, &PatchOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn guarded_patches_add_and_remove_a_finalizer_and_never_clobber_a_changed_list() {
    let (_, clientset, ns) = setup("finalizer-patch").await;
    let cms = clientset.core_v1().config_maps(&ns);
    let created = cms
        .create(&config_map("guarded"), &CreateOptions::default())
        .await
        .unwrap();

    let added = add_finalizer(&clientset, &created, FINALIZER)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(finalizers(&added), [FINALIZER]);
    assert!(
        add_finalizer(&clientset, &added, FINALIZER)
            .await
            .unwrap()
            .is_none(),
        "present already: no request"
    );

    // A stale copy without a list: another finalizer was added since.
    let other = add_unguarded(&clientset, &ns, "guarded", "other.test/x").await;
    assert_eq!(finalizers(&other), [FINALIZER, "other.test/x"]);
    let stale = add_finalizer(&clientset, &created, "third.test/y")
        .await
        .unwrap_err();
    assert_eq!(stale.code(), Some(422), "{stale}");
    // A stale copy with a list.
    let stale = add_finalizer(&clientset, &added, "third.test/y")
        .await
        .unwrap_err();
    assert_eq!(stale.code(), Some(422), "{stale}");
    let now = cms.get("guarded", &GetOptions::default()).await.unwrap();
    assert_eq!(
        finalizers(&now),
        [FINALIZER, "other.test/x"],
        "nothing clobbered"
    );

    // Removing "other" from a copy where it sits at another index than on the server.
    let mut moved = now.clone();
    moved.metadata.finalizers = Some(vec!["other.test/x".into()]);
    let stale = remove_finalizer(&clientset, &moved, "other.test/x")
        .await
        .unwrap_err();
    assert_eq!(stale.code(), Some(422), "{stale}");

    let removed = remove_finalizer(&clientset, &now, FINALIZER)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(finalizers(&removed), ["other.test/x"]);
    assert!(
        remove_finalizer(&clientset, &removed, FINALIZER)
            .await
            .unwrap()
            .is_none(),
        "absent: no request"
    );
    let removed = remove_finalizer(&clientset, &removed, "other.test/x")
        .await
        .unwrap()
        .unwrap();
    assert!(finalizers(&removed).is_empty());
}

#[tokio::test]
async fn finalizer_adds_itself_before_apply_and_lets_the_object_go_only_after_cleanup_succeeds() {
    let (_, clientset, ns) = setup("finalizer-flow").await;
    let cms = clientset.core_v1().config_maps(&ns);
    let cm = cms
        .create(&config_map("flow"), &CreateOptions::default())
        .await
        .unwrap();

    // Apply sees the finalizer already on the object.
    let action = finalizer(&clientset, FINALIZER, Arc::new(cm), |event| async move {
        match event {
            FinalizerEvent::Apply(cm) => {
                assert_eq!(finalizers(&cm), [FINALIZER]);
                Ok(ReconcileAction::RequeueAfter(Duration::from_secs(7)))
            }
            FinalizerEvent::Cleanup(_) => Err("no cleanup expected"),
        }
    })
    .await
    .unwrap();
    assert_eq!(
        action,
        ReconcileAction::RequeueAfter(Duration::from_secs(7))
    );

    cms.delete("flow", &DeleteOptions::default()).await.unwrap();
    let deleting = cms.get("flow", &GetOptions::default()).await.unwrap();
    assert!(
        deleting.metadata.deletion_timestamp.is_some(),
        "kept by the finalizer"
    );

    // A failed cleanup keeps the finalizer, and so the object.
    let failed = finalizer(
        &clientset,
        FINALIZER,
        Arc::new(deleting.clone()),
        |event| async move {
            assert!(matches!(event, FinalizerEvent::Cleanup(_)));
            Err::<ReconcileAction, _>("the outside resource is unreachable")
        },
    )
    .await;
    assert!(
        matches!(failed, Err(FinalizerError::CleanupFailed(_))),
        "{failed:?}"
    );
    let still = cms.get("flow", &GetOptions::default()).await.unwrap();
    assert_eq!(finalizers(&still), [FINALIZER]);

    let cleaned = finalizer(&clientset, FINALIZER, Arc::new(still), |event| async move {
        assert!(matches!(event, FinalizerEvent::Cleanup(_)));
        Ok::<_, &str>(ReconcileAction::Done)
    })
    .await;
    assert_eq!(cleaned.unwrap(), ReconcileAction::Done);
    let gone = cms.get_opt("flow", &GetOptions::default()).await.unwrap();
    assert!(
        gone.is_none(),
        "deleted once its last finalizer went: {gone:?}"
    );
}

/// The "outside resource" a ConfigMap stands for in the crash test: a Secret of the same
/// name, made by apply and deleted by cleanup.
struct Ctx {
    clientset: Clientset,
    cleanups_started: Arc<AtomicUsize>,
    /// Cleanups wait for this before deleting anything, unless `None`.
    hold_cleanup: Option<Arc<Notify>>,
}

async fn reconcile(
    cm: Arc<ConfigMap>,
    ctx: Arc<Ctx>,
) -> Result<ReconcileAction, FinalizerError<kubekit::rest::Error>> {
    let ns = cm.metadata.namespace.clone().unwrap_or_default();
    let secrets = ctx.clientset.core_v1().secrets(&ns);
    let ctx: &Ctx = &ctx;
    finalizer(&ctx.clientset, FINALIZER, cm, |event| async move {
        match event {
            FinalizerEvent::Apply(cm) => {
                let mut secret = Secret::default();
                secret.metadata.name = cm.metadata.name.clone();
                match secrets.create(&secret, &CreateOptions::default()).await {
                    Err(e) if !e.is_already_exists() => return Err(e),
                    _ => {}
                }
            }
            FinalizerEvent::Cleanup(cm) => {
                ctx.cleanups_started.fetch_add(1, Ordering::SeqCst);
                if let Some(hold) = &ctx.hold_cleanup {
                    hold.notified().await;
                }
                let name = cm.metadata.name.as_deref().unwrap_or_default();
                match secrets.delete(name, &DeleteOptions::default()).await {
                    Err(e) if !e.is_not_found() => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(ReconcileAction::Done)
    })
    .await
}

#[tokio::test]
async fn a_cleanup_dropped_midway_runs_again_in_a_fresh_manager_and_the_object_goes() {
    let (config, clientset, ns) = setup("finalizer-crash").await;
    let cms = clientset.core_v1().config_maps(&ns);
    let secrets = clientset.core_v1().secrets(&ns);
    let cm = cms
        .create(&config_map("crash"), &CreateOptions::default())
        .await
        .unwrap();
    let first = Arc::new(Ctx {
        clientset: clientset.clone(),
        cleanups_started: Arc::default(),
        hold_cleanup: Some(Arc::new(Notify::new())),
    });
    reconcile(Arc::new(cm), first.clone()).await.unwrap();
    secrets
        .get("crash", &GetOptions::default())
        .await
        .expect("apply made the secret");

    // The first controller "crashes" in the middle of the cleanup: its future is dropped
    // after the cleanup started and before it deleted anything.
    cms.delete("crash", &DeleteOptions::default())
        .await
        .unwrap();
    let deleting = cms.get("crash", &GetOptions::default()).await.unwrap();
    let crashed = tokio::time::timeout(
        Duration::from_millis(500),
        reconcile(Arc::new(deleting), first.clone()),
    )
    .await;
    assert!(crashed.is_err(), "the held cleanup cannot finish");
    assert_eq!(first.cleanups_started.load(Ordering::SeqCst), 1);
    let kept = cms.get("crash", &GetOptions::default()).await.unwrap();
    assert_eq!(
        finalizers(&kept),
        [FINALIZER],
        "the finalizer stays after the crash"
    );
    secrets
        .get("crash", &GetOptions::default())
        .await
        .expect("not cleaned up yet");

    // A fresh manager finds the object in its first list and finishes the cleanup.
    let second = Arc::new(Ctx {
        clientset: clientset.clone(),
        cleanups_started: Arc::default(),
        hold_cleanup: None,
    });
    let mut mgr = Manager::builder(config).namespace(&ns).build().unwrap();
    // Only "crash": the namespace's other ConfigMaps (kube-root-ca.crt) are not ours.
    let only_crash = Predicate::new(|change| {
        let (Change::Create(meta) | Change::Delete(meta) | Change::Update { new: meta, .. }) =
            change;
        meta.name.as_deref() == Some("crash")
    });
    mgr.controller::<ConfigMap>("finalizer-crash")
        .with_event_filter(only_crash)
        .build(reconcile, second.clone())
        .unwrap();
    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));
    eventually(30, "the ConfigMap gone", || async {
        let cm = cms.get_opt("crash", &GetOptions::default()).await.unwrap();
        cm.is_none().then_some(())
    })
    .await;
    let secret = secrets
        .get_opt("crash", &GetOptions::default())
        .await
        .unwrap();
    assert!(secret.is_none(), "the cleanup ran to its end: {secret:?}");
    assert!(second.cleanups_started.load(Ordering::SeqCst) >= 1);
    cancel.cancel();
    manager.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_permanent_error_of_apply_stays_permanent_through_the_finalizer_in_a_manager() {
    use kubekit::clientset::ListOptions;
    use kubekit::controller::ReconcileError;
    use kubekit::manager::PERMANENT_ERROR_REASON;

    let (config, clientset, ns) = setup("finalizer-permanent").await;
    let cms = clientset.core_v1().config_maps(&ns);
    cms.create(&config_map("invalid"), &CreateOptions::default())
        .await
        .unwrap();
    let applies = Arc::new(AtomicUsize::new(0));
    let mut mgr = Manager::builder(config).namespace(&ns).build().unwrap();
    let only_invalid = Predicate::new(|change| {
        let (Change::Create(meta) | Change::Delete(meta) | Change::Update { new: meta, .. }) =
            change;
        meta.name.as_deref() == Some("invalid")
    });
    let ctx = Arc::new((clientset.clone(), applies.clone()));
    mgr.controller::<ConfigMap>("finalizer-permanent")
        .with_event_filter(only_invalid)
        .with_event_filter(Predicate::generation_changed().or(Predicate::labels_changed()))
        .build(
            |cm: Arc<ConfigMap>, ctx: Arc<(Clientset, Arc<AtomicUsize>)>| async move {
                let (clientset, applies) = &*ctx;
                finalizer(clientset, FINALIZER, cm, |event| async move {
                    match event {
                        FinalizerEvent::Apply(_) => {
                            applies.fetch_add(1, Ordering::SeqCst);
                            Err(ReconcileError::new("data.port is missing").permanent())
                        }
                        FinalizerEvent::Cleanup(_) => Ok(ReconcileAction::Done),
                    }
                })
                .await
            },
            ctx,
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let manager = tokio::spawn(mgr.start(cancel.clone()));
    let event = eventually(30, "the Warning Event of the permanent error", || async {
        let events = clientset
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
    assert_eq!(
        event.message.as_deref(),
        Some("apply failed: data.port is missing; not retried until the object changes")
    );
    // A retried key would have been reconciled again after 5, 10, 20 … ms.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(applies.load(Ordering::SeqCst), 1, "not retried");
    let kept = cms.get("invalid", &GetOptions::default()).await.unwrap();
    assert_eq!(finalizers(&kept), [FINALIZER], "added before Apply ran");
    cancel.cancel();
    manager.await.unwrap().unwrap();
}
