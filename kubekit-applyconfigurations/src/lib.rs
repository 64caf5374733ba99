//! Typed server-side apply: client-go's `applyconfigurations` for Rust.
//!
//! A controller that writes with server-side apply sends only the fields it means to own;
//! the server merges them with what others own. k8s-openapi's structs cannot say that:
//! their required fields are always serialized (an applier of a default `StatefulSetSpec`
//! sends `selector: {}` and `serviceName: ""`, and so takes those fields over). An apply
//! configuration here is the same type with every field an `Option`, serialized only when
//! set, and a builder method per field:
//!
//! ```
//! use kubekit_applyconfigurations::api::apps::v1::{Deployment, DeploymentSpec};
//! use kubekit_applyconfigurations::api::core::v1::{Container, PodSpec, PodTemplateSpec};
//! use kubekit_applyconfigurations::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
//!
//! let labels = [("app", "web".to_string())];
//! let deployment = Deployment::new("web", "demo").spec(
//!     DeploymentSpec::default()
//!         .replicas(3)
//!         .selector(LabelSelector::default().match_labels(labels.clone()))
//!         .template(
//!             PodTemplateSpec::default()
//!                 .metadata(ObjectMeta::default().labels(labels))
//!                 .spec(PodSpec::default().containers([Container::default()
//!                     .name("web")
//!                     .image("nginx:1.29")])),
//!         ),
//! );
//! assert_eq!(
//!     serde_json::to_value(&deployment).unwrap(),
//!     serde_json::json!({
//!         "apiVersion": "apps/v1",
//!         "kind": "Deployment",
//!         "metadata": { "name": "web", "namespace": "demo" },
//!         "spec": {
//!             "replicas": 3,
//!             "selector": { "matchLabels": { "app": "web" } },
//!             "template": {
//!                 "metadata": { "labels": { "app": "web" } },
//!                 "spec": { "containers": [{ "name": "web", "image": "nginx:1.29" }] }
//!             }
//!         }
//!     })
//! );
//! ```
//!
//! # Contract
//!
//! - **Generated** by `cargo run -p kubekit-applyconfigurations-gen` from the OpenAPI v3
//!   documents of the pinned kube-apiserver, for every kind the server can patch and every
//!   type nested in one; a test fails when the checked-in code is not what they give. The
//!   modules follow k8s-openapi's paths: `api::apps::v1::Deployment` configures
//!   `k8s_openapi::api::apps::v1::Deployment`.
//! - **Only what is set is sent.** Every field is an `Option` and skipped when `None`; a
//!   list or map set to empty is sent empty (which, applied, says the manager owns it
//!   empty).
//! - **Builders add.** A list's builder method appends its items and a map's adds its
//!   entries, so calls can be chained; the fields are public for anything else.
//! - **Merge semantics in the docs.** Each list and map field says how the server merges
//!   it with other managers' (`x-kubernetes-list-type` `map` keyed by its keys, `set`, or
//!   `atomic`; `x-kubernetes-map-type`): an atomic list is owned whole by whoever applied
//!   it last.
//! - **Leaves are k8s-openapi's**: `Quantity`, `IntOrString`, `Time`, `MicroTime`,
//!   `RawExtension`, `FieldsV1` and apiextensions' `JSON` types, as client-go keeps
//!   apimachinery's. `ObjectMeta` has no `managedFields` or `selfLink`: the server writes
//!   those.
//! - **Paid for per group.** A Cargo feature per API group (`core`, `apps`, `batch`, …,
//!   `all`) compiles its modules; a group that names another's types turns it on
//!   (`apps` turns on `core`). apimachinery's meta types are always there.
//! - **Kinds newer than the program's k8s-openapi version** are here too: the server, not
//!   k8s-openapi, decides what it serves.

// The docs of the generated types are the API's own descriptions, as kube-apiserver
// serves them: their Markdown is not rustdoc's. A field named as a trait method (`add`
// and `drop` of a container's capabilities) keeps its name.
#[allow(
    clippy::doc_lazy_continuation,
    clippy::doc_overindented_list_items,
    clippy::should_implement_trait,
    rustdoc::bare_urls,
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::invalid_rust_codeblocks
)]
mod generated;

pub use generated::*;

use apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// An apply configuration of a whole object, a kind the server can apply: what a client's
/// `apply` sends.
pub trait ApplyConfiguration: serde::Serialize {
    /// The kind's `apiVersion` (`apps/v1`).
    const API_VERSION: &'static str;
    /// The kind (`Deployment`).
    const KIND: &'static str;
    /// Whether its objects live in a namespace.
    const NAMESPACED: bool;

    /// Its metadata, if set (where the name and namespace are).
    fn metadata(&self) -> Option<&ObjectMeta>;

    /// Its metadata, set to empty first if it was not.
    fn metadata_mut(&mut self) -> &mut ObjectMeta;

    /// The object's name, if set.
    fn name(&self) -> Option<&str> {
        self.metadata()?.name.as_deref()
    }

    /// The object's namespace, if set.
    fn namespace(&self) -> Option<&str> {
        self.metadata()?.namespace.as_deref()
    }
}
