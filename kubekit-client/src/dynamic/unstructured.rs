//! [`Unstructured`]: an object of any kind, with typed metadata and the rest as JSON
//! (apimachinery's `unstructured.Unstructured`).
//!
//! # Why this shape
//!
//! client-go's `Unstructured` is a `map[string]interface{}` and every metadata access is a
//! walk through that map. kubekit keeps the same idea for the body (everything but
//! `apiVersion`, `kind` and `metadata` stays a JSON map, exactly as the server sent it,
//! so a read-modify-write loses no field it does not know), but decodes `metadata` into
//! the typed [`ObjectMeta`]:
//!
//! - names, namespaces, labels, resourceVersions and owner references are plain fields,
//!   read without lookups or string matching;
//! - [`kube::Resource`] is implemented (its [`meta`](kube::Resource::meta) needs an
//!   `ObjectMeta`), so key functions, indexers and informers treat an `Unstructured`
//!   like any typed object;
//! - decoding is one pass over the input (a hand-written visitor, not `serde(flatten)`,
//!   which buffers every field and decodes it twice — the cost `kube`'s `DynamicObject`
//!   pays).
//!
//! The price: metadata must be valid `ObjectMeta`. An object whose metadata is malformed
//! does not decode, and in a list is skipped and reported like any malformed object.
//!
//! # Contract
//!
//! - Serializing writes `apiVersion` and `kind` (when set), `metadata`, then every field
//!   of [`Unstructured::fields`]; decoding puts every top-level field other than those
//!   three into `fields`. A round trip preserves every field.
//! - `apiVersion` and `kind` are empty when the input had none (list items of built-in
//!   types; the dynamic client fills them in from the list's kind).
//!
//! ```
//! use kubekit::dynamic::Unstructured;
//! use serde_json::json;
//!
//! let obj: Unstructured = serde_json::from_value(json!({
//!     "apiVersion": "apps/v1",
//!     "kind": "Deployment",
//!     "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
//!     "spec": {"replicas": 3},
//! }))
//! .unwrap();
//! assert_eq!(obj.name(), Some("web"));
//! assert_eq!(obj.labels().get("app").map(String::as_str), Some("web"));
//! assert_eq!(obj.gvk().to_string(), "apps/v1, Kind=Deployment");
//! assert_eq!(obj.nested(&["spec", "replicas"]), Some(&json!(3)));
//! ```

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::meta::{GroupVersion, GroupVersionKind};

/// An object of any kind; see the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unstructured {
    /// `apiVersion`: `v1`, `apps/v1`, …; empty when unknown.
    pub api_version: String,
    /// `kind`: `Pod`, `Deployment`, …; empty when unknown.
    pub kind: String,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// Every other top-level field (`spec`, `status`, `data`, …), as JSON.
    pub fields: Map<String, Value>,
}

/// Labels and annotations of an object that has none.
static EMPTY: BTreeMap<String, String> = BTreeMap::new();

impl Unstructured {
    /// An empty object of `api_version` and `kind`.
    pub fn new(api_version: &str, kind: &str) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
            ..Self::default()
        }
    }

    /// The group, version and kind, from `apiVersion` and `kind`.
    pub fn gvk(&self) -> GroupVersionKind {
        let gv = GroupVersion::parse_api_version(&self.api_version);
        GroupVersionKind::new(&gv.group, &gv.version, &self.kind)
    }

    /// `metadata.name`.
    pub fn name(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> Option<&str> {
        self.metadata.uid.as_deref()
    }

    /// `metadata.labels` (empty when there are none).
    pub fn labels(&self) -> &BTreeMap<String, String> {
        self.metadata.labels.as_ref().unwrap_or(&EMPTY)
    }

    /// `metadata.annotations` (empty when there are none).
    pub fn annotations(&self) -> &BTreeMap<String, String> {
        self.metadata.annotations.as_ref().unwrap_or(&EMPTY)
    }

    /// The top-level field `key` (other than `apiVersion`, `kind` and `metadata`).
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// The field at `path` below the top level, e.g. `["spec", "replicas"]`; `None` when a
    /// step is missing or not an object.
    pub fn nested(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        rest.iter()
            .try_fold(self.fields.get(*first)?, |v, key| v.as_object()?.get(*key))
    }

    /// A description for messages: `Deployment "demo/web"`.
    pub(crate) fn describe(&self) -> String {
        describe_object(&self.kind, &self.metadata)
    }
}

/// An object for messages, from its kind and metadata: `Deployment "demo/web"`.
pub(crate) fn describe_object(kind: &str, metadata: &ObjectMeta) -> String {
    let kind = if kind.is_empty() { "object" } else { kind };
    match (metadata.namespace.as_deref(), metadata.name.as_deref()) {
        (Some(ns), Some(name)) => format!("{kind} \"{ns}/{name}\""),
        (None, Some(name)) => format!("{kind} \"{name}\""),
        (_, None) => format!("{kind} without a name"),
    }
}

impl Serialize for Unstructured {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if !self.api_version.is_empty() {
            map.serialize_entry("apiVersion", &self.api_version)?;
        }
        if !self.kind.is_empty() {
            map.serialize_entry("kind", &self.kind)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        for (key, value) in &self.fields {
            if !matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Unstructured {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(UnstructuredVisitor)
    }
}

struct UnstructuredVisitor;

impl<'de> Visitor<'de> for UnstructuredVisitor {
    type Value = Unstructured;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unstructured, A::Error> {
        let mut obj = Unstructured::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => {
                    obj.api_version = map.next_value::<Option<String>>()?.unwrap_or_default()
                }
                "kind" => obj.kind = map.next_value::<Option<String>>()?.unwrap_or_default(),
                "metadata" => {
                    obj.metadata = map
                        .next_value::<Option<ObjectMeta>>()
                        .map_err(|e| de::Error::custom(format_args!("metadata: {e}")))?
                        .unwrap_or_default();
                }
                _ => {
                    let value = map.next_value::<Value>()?;
                    obj.fields.insert(key, value);
                }
            }
        }
        Ok(obj)
    }
}

/// Implements [`kube::Resource`] for an object type whose type information is known at
/// run time, as an [`ApiResource`] (group, version, kind, plural; as for `kube`'s
/// `DynamicObject`), and whose metadata is its `metadata` field.
macro_rules! impl_runtime_resource {
    ($Type:ty) => {
        impl kube::Resource for $Type {
            type DynamicType = kube::core::ApiResource;
            type Scope = kube::core::DynamicResourceScope;

            fn kind(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(&dt.kind)
            }

            fn group(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(&dt.group)
            }

            fn version(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(&dt.version)
            }

            fn api_version(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(&dt.api_version)
            }

            fn plural(dt: &kube::core::ApiResource) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed(&dt.plural)
            }

            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }

            fn meta_mut(
                &mut self,
            ) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}
pub(crate) use impl_runtime_resource;

// The type information of an `Unstructured` is known at run time.
impl_runtime_resource!(Unstructured);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_keeps_every_field() {
        let input = json!({
            "apiVersion": "appcontroller.k8s.io/v1",
            "kind": "App",
            "metadata": {"name": "a", "namespace": "n", "resourceVersion": "9", "uid": "u"},
            "spec": {"deploymentTemplate": {"name": "d", "replicas": 2}},
            "status": {"whatever": [1, 2, {"x": null}]},
            "extra": "kept",
        });
        let obj: Unstructured = serde_json::from_value(input.clone()).expect("decodes");
        assert_eq!(
            obj.gvk(),
            GroupVersionKind::new("appcontroller.k8s.io", "v1", "App")
        );
        assert_eq!((obj.name(), obj.namespace()), (Some("a"), Some("n")));
        assert_eq!((obj.resource_version(), obj.uid()), (Some("9"), Some("u")));
        assert_eq!(obj.field("extra"), Some(&json!("kept")));
        assert_eq!(
            obj.nested(&["spec", "deploymentTemplate", "replicas"]),
            Some(&json!(2))
        );
        assert_eq!(obj.nested(&["spec", "missing", "x"]), None);
        assert_eq!(obj.nested(&["extra", "x"]), None, "a string has no fields");
        assert!(obj.labels().is_empty() && obj.annotations().is_empty());
        assert_eq!(serde_json::to_value(&obj).expect("encodes"), input);
    }

    #[test]
    fn objects_without_type_or_metadata_decode_with_empty_ones() {
        let obj: Unstructured =
            serde_json::from_str(r#"{"data":{"k":"v"},"kind":null}"#).expect("decodes");
        assert!(obj.api_version.is_empty() && obj.kind.is_empty());
        assert_eq!(obj.metadata, ObjectMeta::default());
        assert_eq!(obj.describe(), "object without a name");
        let encoded = serde_json::to_value(&obj).expect("encodes");
        assert_eq!(encoded, json!({"metadata": {}, "data": {"k": "v"}}));
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [
            r#"[1,2]"#,
            r#""text""#,
            r#"{"metadata":{"name":5}}"#,
            r#"{"metadata":"#,
            r#"{"kind":{"nested":true}}"#,
        ] {
            let err = serde_json::from_str::<Unstructured>(bad).expect_err(bad);
            assert!(!err.to_string().is_empty());
        }
        let err = serde_json::from_str::<Unstructured>(r#"{"metadata":{"labels":[1]}}"#)
            .expect_err("labels");
        assert!(err.to_string().starts_with("metadata:"), "{err}");
    }
}
