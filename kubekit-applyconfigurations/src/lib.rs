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
//! - **Read back.** A configuration deserializes from what it serializes (a field missing
//!   or `null` is unset, unknown fields are ignored, a field that does not decode is an
//!   error naming it), and [`configuration_of`] makes one from a k8s-openapi value.
//! - **Extract** ([`extract`], [`extract_status`], [`extract_from`]): the configuration a
//!   field manager owns in an object, rebuilt from its `managedFields`, to change and apply
//!   again (client-go's `Extract<Kind>`).
//! - **Custom resources** derive theirs: [`ApplyConfiguration`](derive@ApplyConfiguration)
//!   beside kube's `CustomResource`; a field of a k8s-openapi type is configured by that
//!   type's configuration here ([`Configurable`]).

// The docs of the generated types are the API's own descriptions, as kube-apiserver
// serves them: their Markdown is not rustdoc's. A field named as a trait method (`add`
// and `drop` of a container's capabilities) keeps its name; one named `default` is
// `default_`, so that `Type::default()` stays `Default::default`.
mod extract;
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

pub use extract::{ExtractError, extract, extract_from, extract_status};
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

/// A type that has an apply configuration: what a field of this type becomes in the
/// configuration of a struct that holds it (`#[derive(ApplyConfiguration)]`'s twins). A
/// k8s-openapi struct's is its generated configuration (`api::apps::v1::DeploymentStatus`
/// for `k8s_openapi::api::apps::v1::DeploymentStatus`, for the types every supported
/// version has, compiled with its group's feature: a custom resource that embeds a
/// `batch` type needs `apply-batch`); a list's and a map's are lists and maps of their items'; a scalar, a
/// string, a leaf (`Quantity`, `IntOrString`, `Time`, …), a JSON value or an enum that
/// derives `ApplyConfiguration` is applied whole and is its own.
pub trait Configurable {
    /// The apply configuration.
    type Configuration: Clone
        + std::fmt::Debug
        + PartialEq
        + serde::Serialize
        + serde::de::DeserializeOwned;
}

/// The configuration that sets every field `value` has: for a value a controller applies
/// whole, such as an observed status it copies into its object's. Through `value`'s JSON,
/// so what `value` serializes (k8s-openapi's required fields, even when empty) is set.
///
/// ```
/// use k8s_openapi::api::apps::v1::DeploymentStatus;
/// use kubekit_applyconfigurations::configuration_of;
///
/// let observed = DeploymentStatus { replicas: Some(3), ready_replicas: Some(2), ..Default::default() };
/// let config = configuration_of(&observed).unwrap();
/// assert_eq!(config.replicas, Some(3));
/// assert_eq!(config.available_replicas, None);
/// ```
///
/// An error only for a value whose JSON does not fit its configuration: one whose
/// `Serialize` a program wrote to disagree with its schema.
pub fn configuration_of<T: Configurable + serde::Serialize>(
    value: &T,
) -> Result<T::Configuration, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(value)?)
}

/// Derives the apply configuration of a custom resource and of the structs in it
/// (kubekit-derive): see [its docs](derive@kubekit_derive::ApplyConfiguration).
///
/// ```
/// use kubekit_applyconfigurations::{ApplyConfiguration, Configurable};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, ApplyConfiguration)]
/// #[apply(crate = "kubekit_applyconfigurations")]
/// #[serde(rename_all = "camelCase")]
/// struct Backup {
///     schedule_cron: String,
///     keep: u32,
///     targets: Vec<Target>,
/// }
///
/// #[derive(Serialize, Deserialize, ApplyConfiguration)]
/// #[apply(crate = "kubekit_applyconfigurations")]
/// struct Target {
///     database: String,
/// }
///
/// let config = BackupApply::default()
///     .keep(7)
///     .targets([TargetApply::default().database("orders")]);
/// assert_eq!(
///     serde_json::to_value(&config).unwrap(),
///     serde_json::json!({ "keep": 7, "targets": [{ "database": "orders" }] })
/// );
/// ```
pub use kubekit_derive::ApplyConfiguration;

/// How the generated configurations deserialize: through a JSON object, each field taken
/// out by its name.
mod de {
    use serde::de::{DeserializeOwned, Error};
    use serde_json::{Map, Value};

    /// An object's fields, not decoded yet.
    pub(crate) struct Fields(Map<String, Value>);

    impl<'de> serde::Deserialize<'de> for Fields {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            Map::deserialize(deserializer).map(Fields)
        }
    }

    impl Fields {
        /// The field `key` decoded, `None` when it is missing or null; an error naming it
        /// when it does not decode.
        pub(crate) fn take<T: DeserializeOwned, E: Error>(
            &mut self,
            key: &str,
        ) -> Result<Option<T>, E> {
            match self.0.remove(key) {
                None | Some(Value::Null) => Ok(None),
                Some(value) => serde_json::from_value(value)
                    .map(Some)
                    .map_err(|e| E::custom(format_args!("{key}: {e}"))),
            }
        }
    }
}

/// What the derive's expansion names; not an API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
}

/// Types applied whole: their configuration is the value.
macro_rules! whole {
    ($($t:ty),* $(,)?) => {
        $(impl Configurable for $t {
            type Configuration = $t;
        })*
    };
}

whole!(
    bool,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    f32,
    f64,
    String,
    serde_json::Value,
    k8s_openapi::ByteString,
);

impl<T: Configurable> Configurable for Option<T> {
    type Configuration = T::Configuration;
}

impl<T: Configurable> Configurable for Box<T> {
    type Configuration = Box<T::Configuration>;
}

impl<T: Configurable> Configurable for Vec<T> {
    type Configuration = Vec<T::Configuration>;
}

impl<K, V> Configurable for std::collections::BTreeMap<K, V>
where
    K: Ord + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
    V: Configurable,
{
    type Configuration = std::collections::BTreeMap<K, V::Configuration>;
}

impl<K, V> Configurable for std::collections::HashMap<K, V>
where
    K: Eq
        + std::hash::Hash
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
    V: Configurable,
{
    type Configuration = std::collections::HashMap<K, V::Configuration>;
}
