//! Typed clients (client-go's `kubernetes` clientset and its typed interfaces).
//!
//! - [`Clientset`]: the entry point; `clientset.core_v1().pods(ns)`,
//!   `clientset.apps_v1().deployments(ns)`, … for the built-in groups (generated from one
//!   table of every group version `k8s-openapi` has types for, see [`groups`] and
//!   [`built_in_resources`]), and [`Clientset::resource`] / [`Clientset::cluster_resource`]
//!   for any other type, custom resources included; [`Clientset::for_object`] for an
//!   object's own kind in its own namespace.
//! - [`ResourceClient<K>`]: the verbs on one resource: create, get, list, watch, update,
//!   update_status, patch, patch_status, delete, delete_collection, get_status.
//! - Options mirroring metav1's ([`ListOptions`], [`GetOptions`], [`CreateOptions`],
//!   [`UpdateOptions`], [`PatchOptions`], [`DeleteOptions`]), the [`PatchBody`] body, and
//!   [`DeleteResponse`], the object or `Status` a delete returns.
//!
//! Everything is built on [`RestClient`](crate::rest::RestClient): the same rate
//! limiting, retries and [`Error`](crate::rest::Error) kinds.
//!
//! ```no_run
//! # async fn demo() -> kubekit::rest::Result<()> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kubekit::clientset::{Clientset, CreateOptions, GetOptions};
//! use kubekit::rest::RestConfig;
//!
//! let clientset = Clientset::new(&RestConfig::infer().await?)?;
//! let config_maps = clientset.core_v1().config_maps("default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! match config_maps.create(&cm, &CreateOptions::default()).await {
//!     Err(e) if e.is_already_exists() => {}
//!     other => {
//!         other?;
//!     }
//! }
//! let cm = config_maps.get("settings", &GetOptions::default()).await?;
//! # let _ = cm;
//! # Ok(())
//! # }
//! ```

#[allow(clippy::module_inception)]
mod clientset;
pub mod delete_response;
pub(crate) mod endpoint;
pub mod groups;
pub mod options;
pub mod patch;
pub mod resource_client;
pub(crate) mod table;

pub use clientset::{CRD_ESTABLISHED_TIMEOUT, Clientset};
pub use delete_response::DeleteResponse;
pub(crate) use delete_response::{TypeHead, decode_delete};
pub use endpoint::WatchStream;
pub(crate) use endpoint::{Accept, Endpoint};
pub use groups::*;
pub use options::{
    CreateOptions, DeleteOptions, FieldValidation, GetOptions, ListOptions, PatchOptions,
    Preconditions, PropagationPolicy, QueryParams, ResourceVersionMatch, UpdateOptions,
    WriteOptions,
};
pub use patch::PatchBody;

/// The former name of [`PatchBody`], renamed because it clashed with `kube::api::Patch`.
///
/// ```
/// # #![allow(deprecated)]
/// use kubekit::clientset::{Patch, PatchBody};
///
/// let patch: PatchBody = Patch::Merge(serde_json::json!({ "data": { "a": "b" } }));
/// assert!(matches!(patch, Patch::Merge(_)));
/// ```
#[deprecated(note = "renamed `PatchBody` (the old name clashed with `kube::api::Patch`)")]
pub type Patch<T = serde_json::Value> = PatchBody<T>;
pub use resource_client::{KnownScope, ResourceClient};
