//! [`ObjectReconciler`]: a reconcile function of an object, the signature a manager's
//! controllers take, as the key-based [`Reconciler`] a [`Runner`](super::Runner) runs.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use kube::Resource;

use super::error::ReconcileError;
use super::reconciler::{ReconcileAction, Reconciler};
use crate::cache::Indexer;

/// A reconcile function of the objects in a cache
/// (`Fn(Arc<K>, Arc<C>) -> Result<ReconcileAction, E>`, the signature a manager's
/// controllers take), run on their keys.
///
/// # Contract
///
/// - A key is looked up in the cache given (an informer's [`Indexer`]); the function is
///   called with the cached object itself (no copy) and the context.
/// - A key whose object is not cached (deleted since it was queued) is done: logged at
///   INFO, not an error, the function not called. A controller that must act on a
///   deletion uses a finalizer (see [`finalizer`](crate::finalizer)), or implements
///   [`Reconciler`] on keys itself.
/// - The function's error becomes a [`ReconcileError`] (`E: Into<ReconcileError>`), its
///   policy kept.
///
/// ```no_run
/// # async fn demo(factory: kubekit::informers::SharedInformerFactory) -> Result<(), kubekit::controller::RunError> {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubekit::controller::{ObjectReconciler, ReconcileAction, ReconcileError, Runner, enqueue_handler, shutdown_signal};
/// use kubekit::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
///
/// // The same function a manager's controller takes.
/// async fn reconcile(cm: Arc<ConfigMap>, _ctx: Arc<()>) -> Result<ReconcileAction, ReconcileError> {
///     println!("{:?}", cm.metadata.name);
///     Ok(ReconcileAction::Done)
/// }
///
/// let informer = factory.core_v1().config_maps().informer().clone();
/// let queue = RateLimitingQueue::new(default_controller_rate_limiter());
/// informer.add_event_handler(enqueue_handler(&queue));
/// factory.start();
/// let reconciler = ObjectReconciler::new(informer.indexer().clone(), reconcile, Arc::new(()));
/// let cancel = shutdown_signal();
/// let synced = informer.wait_for_sync(&cancel);
/// Runner::new("configmaps", queue).run(Arc::new(reconciler), 2, synced, cancel.clone()).await
/// # }
/// ```
pub struct ObjectReconciler<K, F, C> {
    indexer: Arc<Indexer<K>>,
    reconcile: F,
    ctx: Arc<C>,
}

impl<K, F, C> fmt::Debug for ObjectReconciler<K, F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectReconciler").finish_non_exhaustive()
    }
}

impl<K, F, C> ObjectReconciler<K, F, C> {
    /// Reconciles the objects of `indexer` with `reconcile`, handing it `ctx`.
    pub fn new(indexer: Arc<Indexer<K>>, reconcile: F, ctx: Arc<C>) -> Self {
        Self {
            indexer,
            reconcile,
            ctx,
        }
    }

    /// The cached object of `key`, if any.
    pub fn object(&self, key: &str) -> Option<Arc<K>>
    where
        K: Resource + 'static,
    {
        self.indexer.get(key)
    }

    /// The reconcile of `obj`: the function called with it and the context.
    pub fn call<Fut>(&self, obj: Arc<K>) -> Fut
    where
        F: Fn(Arc<K>, Arc<C>) -> Fut,
    {
        (self.reconcile)(obj, Arc::clone(&self.ctx))
    }
}

impl<K, F, Fut, E, C> Reconciler for ObjectReconciler<K, F, C>
where
    K: Resource + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReconcileAction, E>> + Send + 'static,
    E: Into<ReconcileError>,
    C: Send + Sync + 'static,
{
    fn reconcile<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<ReconcileAction, ReconcileError>> {
        match self.object(key) {
            // The runner's span names the controller and the key.
            None => {
                tracing::info!("object in work queue no longer exists");
                Box::pin(std::future::ready(Ok(ReconcileAction::Done)))
            }
            Some(obj) => {
                let reconcile = self.call(obj);
                Box::pin(async move { reconcile.await.map_err(Into::into) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::controller::ErrorPolicy;

    fn cached(names: &[&str]) -> Arc<Indexer<ConfigMap>> {
        let indexer = Arc::new(Indexer::new());
        for name in names {
            let mut cm = ConfigMap::default();
            cm.metadata.namespace = Some("ns".into());
            cm.metadata.name = Some((*name).into());
            indexer.add(Arc::new(cm)).unwrap();
        }
        indexer
    }

    #[tokio::test]
    async fn a_cached_key_calls_the_function_with_the_cached_object_and_the_context() {
        let indexer = cached(&["a"]);
        let reconcile = |cm: Arc<ConfigMap>, seen: Arc<std::sync::Mutex<Vec<String>>>| async move {
            seen.lock().unwrap().push(cm.metadata.name.clone().unwrap());
            Ok::<_, ReconcileError>(ReconcileAction::Done)
        };
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let r = ObjectReconciler::new(Arc::clone(&indexer), reconcile, Arc::clone(&seen));
        assert_eq!(r.reconcile("ns/a").await.unwrap(), ReconcileAction::Done);
        assert_eq!(*seen.lock().unwrap(), ["a"]);
        let same = Arc::ptr_eq(&r.object("ns/a").unwrap(), &indexer.get("ns/a").unwrap());
        assert!(same, "the cached object itself, not a copy");
    }

    #[tokio::test]
    async fn a_key_no_longer_cached_is_done_without_calling_the_function() {
        let reconcile = |_: Arc<ConfigMap>, _: Arc<()>| async {
            Err::<ReconcileAction, _>(ReconcileError::new("called"))
        };
        let r = ObjectReconciler::new(cached(&[]), reconcile, Arc::new(()));
        assert_eq!(r.reconcile("ns/gone").await.unwrap(), ReconcileAction::Done);
    }

    #[tokio::test]
    async fn the_functions_error_keeps_its_policy() {
        let reconcile = |_: Arc<ConfigMap>, _: Arc<()>| async {
            Err::<ReconcileAction, _>(ReconcileError::new("bad spec").permanent())
        };
        let r = ObjectReconciler::new(cached(&["a"]), reconcile, Arc::new(()));
        let err = r.reconcile("ns/a").await.unwrap_err();
        assert_eq!(err.policy(), ErrorPolicy::Permanent);
        assert_eq!(err.to_string(), "bad spec");
    }
}
