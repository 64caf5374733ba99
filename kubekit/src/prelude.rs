//! What a controller uses, in one `use kubekit::prelude::*;`.
//!
//! Every name here can be glob-imported beside `kube`'s and `k8s-openapi`'s. Four kubekit
//! types once had the name of a `kube` type a controller imports too; they were renamed,
//! and their old names stay, deprecated, for one release:
//!
//! | name | the old name (deprecated) | the `kube` name it clashed with |
//! |---|---|---|
//! | [`RestConfig`] | `rest::Config` | `kube::Config` |
//! | [`PatchBody`] | `clientset::Patch` | `kube::api::Patch` |
//! | [`ReconcileAction`] | `controller::Action` | `kube::runtime::controller::Action` |
//! | [`FinalizerEvent`] | `finalizer::Event` | `kube::runtime::finalizer::Event` |
//!
//! `kube`'s [`Resource`] and [`ResourceExt`] traits are included (the same items as
//! `kube::Resource` and `kube::ResourceExt`, so importing those too is no clash), and so
//! are tokio-util's [`CancellationToken`], which [`Manager::start`] takes, and
//! apimachinery's [`Condition`], which [`set_status_condition`] and the other condition
//! helpers work on. So are `k8s-openapi`'s scopes, [`NamespaceResourceScope`] and
//! [`ClusterResourceScope`], and kubekit's [`KnownScope`], which a helper generic over the
//! kind it reconciles names in its bounds (`K: Resource<Scope = NamespaceResourceScope>`,
//! or `K::Scope: KnownScope` for either scope, as [`Clientset::for_object`] has it);
//! `kube::core` re-exports the first two, the same items, so importing them from there
//! too is no clash.
//! [`Object`](crate::meta::Object) and
//! [`PropagationPolicy`](crate::clientset::PropagationPolicy) are left out: `kube::api`
//! has types of those names.
//!
//! Glob-imported beside `kube`'s own names, nothing is ambiguous:
//!
//! ```
//! use kube::*;
//! use kube::api::*;
//! use kubekit::prelude::*;
//!
//! let theirs: Option<Config> = None; // kube::Config
//! let ours: Option<RestConfig> = None; // kubekit::rest::RestConfig
//! let merge = Patch::Merge(serde_json::json!({})); // kube::api::Patch
//! let apply = PatchBody::Apply(serde_json::json!({})); // kubekit::clientset::PatchBody
//! assert!(apply.is_apply() && theirs.is_none() && ours.is_none());
//! let policy = PropagationPolicy::Foreground; // kube::api's; kubekit's is not in the prelude
//! # let _ = (merge, policy, ReconcileAction::Done, ObjectKey::new("ns", "name"));
//!
//! // The scopes and the condition builder: kubekit's (or k8s-openapi's) only.
//! use kubekit::k8s_openapi::api::core::v1::{Namespace, Node, Pod};
//! fn namespaced<K: Resource<Scope = NamespaceResourceScope>>() {}
//! fn cluster_scoped<K: Resource<Scope = ClusterResourceScope>>() {}
//! fn is_namespaced<K: Resource>() -> bool where K::Scope: KnownScope {
//!     <K::Scope as KnownScope>::NAMESPACED
//! }
//! namespaced::<Pod>();
//! cluster_scoped::<Node>();
//! assert!(is_namespaced::<Pod>() && !is_namespaced::<Namespace>());
//! let ready: ConditionBuilder = condition("Ready").status(true).reason("Listening");
//! assert_eq!(Condition::from(ready).status, CONDITION_TRUE);
//! ```
//!
//! ```no_run
//! use std::sync::Arc;
//! use kubekit::k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::prelude::*;
//!
//! async fn reconcile(cm: Arc<ConfigMap>, _: Arc<()>) -> Result<ReconcileAction, ReconcileError> {
//!     println!("{}", cm.name_any());
//!     Ok(ReconcileAction::Done)
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut mgr = Manager::builder(RestConfig::infer().await?).build()?;
//! mgr.controller::<ConfigMap>("printer").build(reconcile, Arc::new(()))?;
//! mgr.start(shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! A controller with a finalizer, a condition in its object's status and error policies
//! needs nothing else:
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use kubekit::k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::prelude::*;
//!
//! const FINALIZER: &str = "example.com/cleanup";
//!
//! async fn apply(cm: &ConfigMap, clientset: &Clientset) -> Result<ReconcileAction, ReconcileError> {
//!     let Some(port) = cm.data.as_ref().and_then(|d| d.get("port")) else {
//!         // Retrying cannot help until the ConfigMap changes.
//!         return Err(ReconcileError::new("data.port is missing").permanent());
//!     };
//!     let port: u16 = port.parse().permanent()?;
//!     let mut conditions: Vec<Condition> = Vec::new();
//!     let ready = condition("Ready").status(true).reason("Listening").message(format!("port {port}"));
//!     set_status_condition(&mut conditions, ready);
//!     let config_maps = clientset.for_object(cm);
//!     // Not there yet: look again in 10 s rather than backing off.
//!     config_maps.get(&format!("{}-peer", cm.name_any()), &GetOptions::default())
//!         .await
//!         .requeue_after(Duration::from_secs(10))?;
//!     Ok(ReconcileAction::Done)
//! }
//!
//! async fn reconcile(cm: Arc<ConfigMap>, clientset: Arc<Clientset>) -> Result<ReconcileAction, ReconcileError> {
//!     let clientset: &Clientset = &clientset;
//!     // A permanent error of `apply` stays permanent through the finalizer's error.
//!     Ok(finalizer(clientset, FINALIZER, cm, |event| async move {
//!         match event {
//!             FinalizerEvent::Apply(cm) => apply(&cm, clientset).await,
//!             FinalizerEvent::Cleanup(_) => Ok(ReconcileAction::Done),
//!         }
//!     })
//!     .await?)
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut mgr = Manager::builder(RestConfig::infer().await?).build()?;
//! let clientset = Arc::new(mgr.clientset().clone());
//! mgr.controller::<ConfigMap>("ports")
//!     .error_policy(|_cm, err| match err.policy() {
//!         ErrorPolicy::Retry => ErrorPolicy::RequeueAfter(Duration::from_secs(5)),
//!         policy => policy,
//!     })
//!     .build(reconcile, clientset)?;
//! mgr.start(shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
pub use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
pub use kube::{Resource, ResourceExt};
pub use tokio_util::sync::CancellationToken;

pub use crate::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, KnownScope, ListOptions, PatchBody,
    PatchOptions, ResourceClient, UpdateOptions,
};
pub use crate::conditions::{
    CONDITION_FALSE, CONDITION_TRUE, CONDITION_UNKNOWN, ConditionBuilder, condition,
    find_status_condition, is_status_condition_false, is_status_condition_present_and_equal,
    is_status_condition_true, new_condition, remove_status_condition, set_status_condition,
};
pub use crate::controller::{
    AsyncReconciler, ErrorPolicy, ReconcileAction, ReconcileError, ReconcileResultExt,
    shutdown_signal,
};
pub use crate::finalizer::{
    FinalizerError, FinalizerEvent, add_finalizer, finalizer, has_finalizer, remove_finalizer,
};
pub use crate::informers::SharedInformerFactory;
pub use crate::labels::Selector;
pub use crate::listers::{Lister, NamespaceLister};
pub use crate::manager::{ControllerBuilder, Manager, ManagerError, Predicate};
pub use crate::meta::{ObjectKey, controller_ref, is_controlled_by};
pub use crate::record::{EventRecorder, EventType};
pub use crate::rest::RestConfig;
