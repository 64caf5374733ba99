//! What a controller uses, in one `use kubekit::prelude::*;`.
//!
//! Every name here can be glob-imported beside `kube`'s and `k8s-openapi`'s: where a
//! kubekit type has the name of a `kube` type a controller imports too, the prelude gives
//! it another one (the type is the same; its module keeps its own name):
//!
//! | in the prelude | kubekit's module path | the `kube` name it would clash with |
//! |---|---|---|
//! | [`RestConfig`] | [`rest::Config`](crate::rest::Config) | `kube::Config` |
//! | [`PatchBody`] | [`clientset::Patch`](crate::clientset::Patch) | `kube::api::Patch` |
//! | [`ReconcileAction`] | [`controller::Action`](crate::controller::Action) | `kube::runtime::controller::Action` |
//! | [`FinalizerEvent`] | [`finalizer::Event`](crate::finalizer::Event) | `kube::runtime::finalizer::Event` |
//!
//! `kube`'s [`Resource`] and [`ResourceExt`] traits are included (the same items as
//! `kube::Resource` and `kube::ResourceExt`, so importing those too is no clash), and so
//! is tokio-util's [`CancellationToken`], which [`Manager::start`] takes.
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
//! let ours: Option<RestConfig> = None; // kubekit::rest::Config
//! let merge = Patch::Merge(serde_json::json!({})); // kube::api::Patch
//! let apply = PatchBody::Apply(serde_json::json!({})); // kubekit::clientset::Patch
//! assert!(apply.is_apply() && theirs.is_none() && ours.is_none());
//! let policy = PropagationPolicy::Foreground; // kube::api's; kubekit's is not in the prelude
//! # let _ = (merge, policy, ReconcileAction::Done, ObjectKey::new("ns", "name"));
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

pub use kube::{Resource, ResourceExt};
pub use tokio_util::sync::CancellationToken;

pub use crate::clientset::{
    Clientset, CreateOptions, DeleteOptions, GetOptions, ListOptions, Patch as PatchBody,
    PatchOptions, ResourceClient, UpdateOptions,
};
pub use crate::conditions::{
    CONDITION_FALSE, CONDITION_TRUE, CONDITION_UNKNOWN, find_status_condition,
    is_status_condition_false, is_status_condition_present_and_equal, is_status_condition_true,
    new_condition, remove_status_condition, set_status_condition,
};
pub use crate::controller::{Action as ReconcileAction, ReconcileError, shutdown_signal};
pub use crate::finalizer::{
    Event as FinalizerEvent, FinalizerError, add_finalizer, finalizer, has_finalizer,
    remove_finalizer,
};
pub use crate::informers::SharedInformerFactory;
pub use crate::labels::Selector;
pub use crate::listers::{Lister, NamespaceLister};
pub use crate::manager::{ControllerBuilder, Manager, ManagerError, Predicate};
pub use crate::meta::{ObjectKey, controller_ref, is_controlled_by};
pub use crate::record::{EventRecorder, EventType};
pub use crate::rest::Config as RestConfig;
