//! Finalizers (controller-runtime's `controllerutil.AddFinalizer` / `RemoveFinalizer` /
//! `ContainsFinalizer`, kube-runtime's `finalizer`): clean up what an object stands for
//! before the API server lets it go.
//!
//! # Contract
//!
//! - [`add_finalizer`] and [`remove_finalizer`] write with a JSON patch guarded by a `test`
//!   of the finalizer list they read from the object given (add: the whole list, or its
//!   absence; remove: the finalizer at its index): a list that someone else changed since
//!   is never overwritten, the server refuses the patch (422) and the caller retries from
//!   a fresher copy. Other fields may have changed meanwhile; they are not touched.
//! - [`finalizer`] runs one reconcile of an object through its finalizer `name`:
//!   - not being deleted, without the finalizer: the finalizer is added first, then
//!     [`FinalizerEvent::Apply`] runs with the object as the server returned it, so nothing is
//!     made for an object that could go away without its cleanup;
//!   - not being deleted, with the finalizer: [`FinalizerEvent::Apply`];
//!   - being deleted (`deletionTimestamp` set), with the finalizer: [`FinalizerEvent::Cleanup`],
//!     and the finalizer is removed **only when cleanup returned `Ok`**;
//!   - being deleted without the finalizer: nothing runs, there is nothing left to clean.
//! - Nothing is remembered between calls: what happens is decided from the object alone.
//!   A controller stopped or killed during a cleanup (or whose cleanup failed) leaves the
//!   finalizer on the object, so the object stays, and the next reconcile, in this process
//!   or the next, runs the cleanup again. Cleanup must therefore be idempotent: deleting
//!   what is already gone is success.
//! - Writes go through the given [`Clientset`]; a manager's is guarded by leader election.
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::clientset::Clientset;
//! use kubekit::controller::ReconcileAction;
//! use kubekit::finalizer::{FinalizerEvent, FinalizerError, finalizer};
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("{0}")]
//! struct Error(String);
//!
//! async fn reconcile(cm: Arc<ConfigMap>, clientset: Arc<Clientset>) -> Result<ReconcileAction, FinalizerError<Error>> {
//!     finalizer(&clientset, "example.com/cleanup", cm, |event| async move {
//!         match event {
//!             FinalizerEvent::Apply(cm) => println!("making what {:?} asks for", cm.metadata.name),
//!             FinalizerEvent::Cleanup(cm) => println!("removing what {:?} made", cm.metadata.name),
//!         }
//!         Ok::<_, Error>(ReconcileAction::Done)
//!     })
//!     .await
//! }
//! ```

use std::future::Future;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::cache::meta_ref;
use crate::controller::{ErrorPolicy, ReconcileAction, ReconcileError};
use kubekit_client::clientset::{Clientset, PatchBody, PatchOptions, ResourceClient};
use kubekit_client::meta::{GroupVersionResource, Object};
use kubekit_client::rest::Error;

/// What [`finalizer`]'s reconcile function is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub enum FinalizerEvent<K> {
    /// Bring the world in line with the object, which has the finalizer and is not being
    /// deleted. Must be idempotent.
    Apply(Arc<K>),
    /// Undo what `Apply` made: the object is being deleted and has the finalizer, which is
    /// removed once this returns `Ok`. Must be idempotent: it may run again after a crash.
    Cleanup(Arc<K>),
}

/// The former name of [`FinalizerEvent`], renamed because it clashed with kube-runtime's
/// `finalizer::Event`.
///
/// ```
/// # #![allow(deprecated)]
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubekit::finalizer::{Event, FinalizerEvent};
///
/// let event: FinalizerEvent<ConfigMap> = Event::Apply(Arc::new(ConfigMap::default()));
/// assert!(matches!(event, Event::Apply(_)));
/// ```
#[deprecated(
    note = "renamed `FinalizerEvent` (the old name clashed with `kube::runtime::finalizer::Event`)"
)]
pub type Event<K> = FinalizerEvent<K>;

/// Why [`finalizer`] failed. The finalizer's own failures are worth a retry; the reconcile
/// function's are what it says: with a [`ReconcileError`] as `E`, its
/// [policy](FinalizerError::policy) is kept when this error becomes a `ReconcileError`
/// (`?`, or returned to a manager's controller).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalizerError<E> {
    /// The reconcile function failed at [`FinalizerEvent::Apply`].
    #[error("apply failed: {0}")]
    ApplyFailed(E),
    /// The reconcile function failed at [`FinalizerEvent::Cleanup`]; the finalizer stays.
    #[error("cleanup failed: {0}")]
    CleanupFailed(E),
    /// The finalizer could not be added (a 422 when the finalizer list changed since the
    /// object was read).
    #[error("adding the finalizer: {0}")]
    AddFinalizer(#[source] Error),
    /// The finalizer could not be removed after a successful cleanup (a 422 when the
    /// finalizer list changed since the object was read); the cleanup runs again.
    #[error("removing the finalizer: {0}")]
    RemoveFinalizer(#[source] Error),
    /// The object has no name (it cannot be patched).
    #[error("the object has no name")]
    UnnamedObject,
}

impl FinalizerError<ReconcileError> {
    /// The [`ErrorPolicy`] of the reconcile function's error (`None` for the finalizer's
    /// own failures, which are retried). Converting this error into a [`ReconcileError`]
    /// (`?` in a reconcile, or what a manager's controller does with the error a reconcile
    /// returns) keeps it: a `.permanent()` error of `Apply` stays permanent.
    pub fn policy(&self) -> Option<ErrorPolicy> {
        match self {
            Self::ApplyFailed(e) | Self::CleanupFailed(e) => Some(e.policy()),
            _ => None,
        }
    }
}

/// Whether `obj` has the finalizer `name` (`controllerutil.ContainsFinalizer`).
pub fn has_finalizer<K: kube::Resource + 'static>(obj: &K, name: &str) -> bool {
    meta_ref(obj).finalizers().any(|f| f == name)
}

/// The client of `obj`'s resource in `obj`'s namespace, and `obj`'s name; an object
/// without a name gets the not-found error of a nameless object.
fn client_of<K: Object>(
    clientset: &Clientset,
    obj: &K,
) -> Result<(ResourceClient<K>, String), Error> {
    let meta = meta_ref(obj);
    let Some(name) = meta.name().filter(|n| !n.is_empty()) else {
        let gvr = GroupVersionResource::of::<K>();
        return Err(Error::not_found(&gvr.group, &gvr.resource, ""));
    };
    let namespace = meta.namespace().unwrap_or_default();
    let client = ResourceClient::new(clientset.rest_client().clone(), namespace);
    Ok((client, name.to_string()))
}

/// The guarded JSON patch adding `name` to the finalizer list `current`.
fn add_patch(current: &[&str], name: &str) -> Value {
    if current.is_empty() {
        json!([
            { "op": "test", "path": "/metadata/finalizers", "value": null },
            { "op": "add", "path": "/metadata/finalizers", "value": [name] },
        ])
    } else {
        json!([
            { "op": "test", "path": "/metadata/finalizers", "value": current },
            { "op": "add", "path": "/metadata/finalizers/-", "value": name },
        ])
    }
}

/// The guarded JSON patch removing the finalizer `name` found at `index`.
fn remove_patch(index: usize, name: &str) -> Value {
    let path = format!("/metadata/finalizers/{index}");
    json!([
        { "op": "test", "path": path, "value": name },
        { "op": "remove", "path": path },
    ])
}

/// Adds the finalizer `name` to `obj` on the server, unless `obj` has it already
/// (`controllerutil.AddFinalizer` and the patch that writes it): the object as patched,
/// or `None` when `obj` had it (no request is made). Guarded as the
/// [module docs](self) say. An object without a name is reported as not found.
pub async fn add_finalizer<K: Object>(
    clientset: &Clientset,
    obj: &K,
    name: &str,
) -> Result<Option<K>, Error> {
    let meta = meta_ref(obj);
    let current: Vec<&str> = meta.finalizers().collect();
    if current.contains(&name) {
        return Ok(None);
    }
    let (client, object) = client_of(clientset, obj)?;
    let patch = PatchBody::Json(add_patch(&current, name));
    client
        .patch(&object, &patch, &PatchOptions::default())
        .await
        .map(Some)
}

/// Removes the finalizer `name` from `obj` on the server (`controllerutil.RemoveFinalizer`
/// and the patch that writes it): the object as patched (it is gone from the server when
/// this was its last finalizer and it was being deleted), or `None` when `obj` has no
/// such finalizer or the object no longer exists. Guarded as the [module docs](self) say.
pub async fn remove_finalizer<K: Object>(
    clientset: &Clientset,
    obj: &K,
    name: &str,
) -> Result<Option<K>, Error> {
    let Some(index) = meta_ref(obj).finalizers().position(|f| f == name) else {
        return Ok(None);
    };
    let (client, object) = client_of(clientset, obj)?;
    let patch = PatchBody::Json(remove_patch(index, name));
    let patched = client
        .patch(&object, &patch, &PatchOptions::default())
        .await;
    kubekit_client::rest::error::found(patched)
}

/// Reconciles `obj` through its finalizer `name`: adds it, runs `reconcile` with
/// [`FinalizerEvent::Apply`] or [`FinalizerEvent::Cleanup`], and removes it after a successful cleanup; see
/// the [module docs](self) for when each happens. `reconcile`'s [`ReconcileAction`] is returned
/// (after a cleanup too; the object is usually gone by then), or
/// [`ReconcileAction::Done`] when nothing ran.
pub async fn finalizer<K, F, Fut, E>(
    clientset: &Clientset,
    name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> Result<ReconcileAction, FinalizerError<E>>
where
    K: Object,
    F: FnOnce(FinalizerEvent<K>) -> Fut,
    Fut: Future<Output = Result<ReconcileAction, E>>,
{
    if meta_ref(&*obj).name().is_none_or(str::is_empty) {
        return Err(FinalizerError::UnnamedObject);
    }
    let deleting = meta_ref(&*obj).deletion_timestamp().is_some();
    match (has_finalizer(&*obj, name), deleting) {
        (true, false) => reconcile(FinalizerEvent::Apply(obj))
            .await
            .map_err(FinalizerError::ApplyFailed),
        (true, true) => {
            let action = reconcile(FinalizerEvent::Cleanup(obj.clone()))
                .await
                .map_err(FinalizerError::CleanupFailed)?;
            remove_finalizer(clientset, &*obj, name)
                .await
                .map_err(FinalizerError::RemoveFinalizer)?;
            Ok(action)
        }
        (false, false) => {
            let added = add_finalizer(clientset, &*obj, name)
                .await
                .map_err(FinalizerError::AddFinalizer)?;
            let obj = added.map_or(obj, Arc::new);
            reconcile(FinalizerEvent::Apply(obj))
                .await
                .map_err(FinalizerError::ApplyFailed)
        }
        (false, true) => Ok(ReconcileAction::Done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn config_map(finalizers: &[&str]) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("cm".into());
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.finalizers =
            (!finalizers.is_empty()).then(|| finalizers.iter().map(|f| f.to_string()).collect());
        cm
    }

    #[test]
    fn has_finalizer_matches_whole_names_only() {
        let cm = config_map(&["a.example.com/x", "b"]);
        assert!(has_finalizer(&cm, "b"));
        assert!(has_finalizer(&cm, "a.example.com/x"));
        assert!(!has_finalizer(&cm, "a.example.com"));
        assert!(!has_finalizer(&config_map(&[]), "b"));
    }

    #[test]
    fn adding_to_an_absent_list_tests_that_it_is_still_absent() {
        assert_eq!(
            add_patch(&[], "f"),
            json!([
                { "op": "test", "path": "/metadata/finalizers", "value": null },
                { "op": "add", "path": "/metadata/finalizers", "value": ["f"] },
            ])
        );
    }

    #[test]
    fn adding_to_a_list_tests_the_whole_list_then_appends() {
        assert_eq!(
            add_patch(&["a", "b"], "f"),
            json!([
                { "op": "test", "path": "/metadata/finalizers", "value": ["a", "b"] },
                { "op": "add", "path": "/metadata/finalizers/-", "value": "f" },
            ])
        );
    }

    #[test]
    fn removing_tests_the_finalizer_at_its_index() {
        assert_eq!(
            remove_patch(1, "f"),
            json!([
                { "op": "test", "path": "/metadata/finalizers/1", "value": "f" },
                { "op": "remove", "path": "/metadata/finalizers/1" },
            ])
        );
    }

    /// A clientset whose every request fails to connect: the cases below must not write.
    fn offline() -> Clientset {
        let config = kubekit_client::rest::RestConfig::from_url("http://127.0.0.1:9").unwrap();
        Clientset::new(&config).unwrap()
    }

    #[tokio::test]
    async fn with_the_finalizer_and_no_deletion_only_apply_runs_and_nothing_is_written() {
        let cm = Arc::new(config_map(&["f"]));
        let action = finalizer(&offline(), "f", cm, |event| async move {
            assert!(matches!(event, FinalizerEvent::Apply(_)), "{event:?}");
            Ok::<_, std::fmt::Error>(ReconcileAction::RequeueAfter(
                std::time::Duration::from_secs(1),
            ))
        })
        .await
        .unwrap();
        assert_eq!(
            action,
            ReconcileAction::RequeueAfter(std::time::Duration::from_secs(1))
        );
    }

    fn being_deleted(mut cm: ConfigMap) -> Arc<ConfigMap> {
        let now = k8s_openapi::jiff::Timestamp::now();
        cm.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
        Arc::new(cm)
    }

    #[tokio::test]
    async fn a_failed_cleanup_keeps_the_finalizer_without_writing() {
        let cm = being_deleted(config_map(&["f"]));
        let result = finalizer(&offline(), "f", cm, |event| async move {
            assert!(matches!(event, FinalizerEvent::Cleanup(_)), "{event:?}");
            Err::<ReconcileAction, _>(std::fmt::Error)
        })
        .await;
        assert!(
            matches!(result, Err(FinalizerError::CleanupFailed(_))),
            "{result:?}"
        );
    }

    #[tokio::test]
    async fn an_object_being_deleted_without_the_finalizer_runs_nothing() {
        let cm = being_deleted(config_map(&["someone-else"]));
        let result = finalizer(&offline(), "f", cm, |_| async {
            Err::<ReconcileAction, _>(std::fmt::Error) // would fail the test if it ran
        })
        .await;
        assert_eq!(result.unwrap(), ReconcileAction::Done);
    }

    #[tokio::test]
    async fn the_policy_of_an_apply_or_cleanup_error_survives_the_conversion_to_a_reconcile_error()
    {
        use std::time::Duration;

        async fn reconcile(
            cm: Arc<ConfigMap>,
            error: fn() -> ReconcileError,
        ) -> Result<ReconcileAction, ReconcileError> {
            let action = finalizer(&offline(), "f", cm, |_| async move { Err(error()) }).await?;
            Ok(action)
        }
        let cm = Arc::new(config_map(&["f"]));
        let err = reconcile(cm.clone(), || {
            ReconcileError::new("spec.port is out of range").permanent()
        })
        .await
        .unwrap_err();
        assert_eq!(err.policy(), ErrorPolicy::Permanent, "{err:?}");
        assert_eq!(err.to_string(), "apply failed: spec.port is out of range");
        let err = reconcile(being_deleted(config_map(&["f"])), || {
            ReconcileError::new("the bucket is busy").requeue_after(Duration::from_secs(30))
        })
        .await
        .unwrap_err();
        assert_eq!(
            err.policy(),
            ErrorPolicy::RequeueAfter(Duration::from_secs(30))
        );
        assert!(
            err.downcast_ref::<FinalizerError<ReconcileError>>()
                .is_some_and(|e| matches!(e, FinalizerError::CleanupFailed(_))),
            "{err:?}"
        );
        let err = reconcile(cm, || "conflict".into()).await.unwrap_err();
        assert_eq!(err.policy(), ErrorPolicy::Retry);

        // The finalizer's own failures are retried, as any error without a policy is.
        let own: FinalizerError<ReconcileError> = FinalizerError::UnnamedObject;
        assert_eq!(own.policy(), None);
        assert_eq!(ReconcileError::from(own).policy(), ErrorPolicy::Retry);
        let other = FinalizerError::ApplyFailed(std::fmt::Error);
        assert_eq!(ReconcileError::from(other).policy(), ErrorPolicy::Retry);

        // Found as the source of another error too (errors.As through the chain).
        #[derive(Debug, thiserror::Error)]
        #[error("reconciling: {0}")]
        struct Wrapped(#[source] FinalizerError<ReconcileError>);
        let inner = ReconcileError::new("invalid").permanent();
        let err = ReconcileError::new(Wrapped(FinalizerError::CleanupFailed(inner)));
        assert_eq!(err.policy(), ErrorPolicy::Permanent);
        // And an explicit policy set afterwards wins.
        let inner = ReconcileError::new("invalid").permanent();
        let err =
            ReconcileError::new(FinalizerError::ApplyFailed(inner)).with_policy(ErrorPolicy::Retry);
        assert_eq!(err.policy(), ErrorPolicy::Retry);
    }

    #[tokio::test]
    async fn an_unnamed_object_is_refused_before_anything_runs() {
        let mut cm = config_map(&[]);
        cm.metadata.name = None;
        let result = finalizer(&offline(), "f", Arc::new(cm), |_| async {
            Ok::<_, std::fmt::Error>(ReconcileAction::Done)
        })
        .await;
        assert!(matches!(result, Err(FinalizerError::UnnamedObject)));
    }
}
