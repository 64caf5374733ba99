//! What a controller's business logic implements: [`Reconciler`] or [`AsyncReconciler`],
//! and what a reconcile returns, [`ReconcileAction`] (or [`ReconcileTimeout`] when it
//! outlasts its bound).

use std::future::Future;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::error::ReconcileError;

/// What to do with a key after a successful reconcile (controller-runtime's `Result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReconcileAction {
    /// Nothing more until the next change of a watched object.
    #[default]
    Done,
    /// Reconcile the key again after this delay (its error backoff starts over).
    RequeueAfter(Duration),
}

/// The former name of [`ReconcileAction`], renamed because it clashed with kube-runtime's
/// `controller::Action`.
///
/// ```
/// # #![allow(deprecated)]
/// use kubekit::controller::{Action, ReconcileAction};
///
/// let action: ReconcileAction = Action::Done;
/// assert_eq!(action, Action::default());
/// ```
#[deprecated(
    note = "renamed `ReconcileAction` (the old name clashed with `kube::runtime::controller::Action`)"
)]
pub type Action = ReconcileAction;

/// The business logic of a controller: bring the object named by `key` to its desired
/// state. Implement [`AsyncReconciler`] instead to write it as an `async fn`.
pub trait Reconciler: Send + Sync + 'static {
    /// Reconciles one key; an error is handled as its [`ErrorPolicy`](super::ErrorPolicy) says.
    fn reconcile<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<ReconcileAction, ReconcileError>>;

    /// Asked before each reconcile of `key`: `None` (the default) reconciles it now;
    /// `Some(delay)` puts it back on the queue for `delay`, which counts as neither a
    /// reconcile nor a retry. The manager defers a key until its informers have delivered
    /// what the key's last reconcile wrote (read-your-own-writes).
    fn defer(&self, key: &str) -> Option<Duration> {
        let _ = key;
        None
    }
}

/// A [`Reconciler`] written as an `async fn` (`async fn reconcile(&self, key: &str) ->
/// Result<ReconcileAction, ReconcileError>`); every `AsyncReconciler` is a `Reconciler`. Its future
/// must be `Send` (workers are tokio tasks). Unlike `Reconciler`, it cannot be used as a
/// trait object.
pub trait AsyncReconciler: Send + Sync + 'static {
    /// Reconciles one key; an error is handled as its [`ErrorPolicy`](super::ErrorPolicy) says.
    fn reconcile(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<ReconcileAction, ReconcileError>> + Send;
}

impl<R: AsyncReconciler> Reconciler for R {
    fn reconcile<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<ReconcileAction, ReconcileError>> {
        Box::pin(AsyncReconciler::reconcile(self, key))
    }
}

/// The error counted when a reconcile outlasts [`Runner::reconcile_timeout`](super::Runner::reconcile_timeout).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reconcile timed out after {0:?}")]
pub struct ReconcileTimeout(pub Duration);
