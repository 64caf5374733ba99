//! [`PartialObjectMetadata`]: an object of any kind reduced to its metadata (apimachinery's
//! `metav1.PartialObjectMetadata`).
//!
//! # Contract
//!
//! - Decoding keeps `apiVersion`, `kind` and `metadata` and skips every other field
//!   without building it, so the same type decodes what the API server sends when asked
//!   for metadata only (`{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
//!   "metadata": {…}}`) and a whole object (a server that does not negotiate).
//! - [`kube::Resource`] is implemented with a run-time type ([`ApiResource`]), as for
//!   [`Unstructured`](crate::dynamic::Unstructured): keys, indexers, listers and informers
//!   treat it like any object, and `kube::ResourceExt` gives `name_any`, `labels`,
//!   `owner_references`, ….
//! - Serializing writes `apiVersion` and `kind` when set, and `metadata`.
//!
//! ```
//! use kubekit::metadata::PartialObjectMetadata;
//!
//! let partial: PartialObjectMetadata = serde_json::from_str(
//!     r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "uid": "u"},
//!         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}"#,
//! )
//! .unwrap();
//! assert_eq!(partial.metadata.name.as_deref(), Some("web"));
//! assert!(!partial.is_partial(), "the server sent the whole Pod");
//! ```
//!
//! [`ApiResource`]: kube::core::ApiResource

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Deserializer, Serialize};

use crate::dynamic::unstructured::{describe_object, impl_runtime_resource};
use crate::rest::{Error, ObjectList, Result, WatchEvent};

/// The `apiVersion` of [`PartialObjectMetadata`] as the API server sends it.
pub const API_VERSION: &str = "meta.k8s.io/v1";

/// The `kind` of [`PartialObjectMetadata`] as the API server sends it.
pub const KIND: &str = "PartialObjectMetadata";

/// An object's metadata without the rest of it; see the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialObjectMetadata {
    /// `apiVersion`: [`API_VERSION`] when the server sent metadata only; empty when it
    /// sent the whole object and the [metadata client](super::MetadataClient) kept its
    /// metadata.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    /// `kind`: [`KIND`] when the server sent metadata only; empty otherwise (see
    /// [`api_version`](Self::api_version)).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub kind: String,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: ObjectMeta,
}

/// A field that may be `null` or missing, either read as its default.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

impl_runtime_resource!(PartialObjectMetadata);

impl PartialObjectMetadata {
    /// A `PartialObjectMetadata` (as the API server sends it) with `metadata`.
    pub fn new(metadata: ObjectMeta) -> Self {
        Self {
            api_version: API_VERSION.into(),
            kind: KIND.into(),
            metadata,
        }
    }

    /// Whether this is typed as the API server's `meta.k8s.io/v1` `PartialObjectMetadata`,
    /// i.e. the server sent metadata only.
    pub fn is_partial(&self) -> bool {
        self.api_version == API_VERSION && self.kind == KIND
    }
}

/// Whether `meta` looks like the metadata of an object (client-go's
/// `isLikelyObjectMetadata`): a name, a generateName, a uid or a creation time.
fn is_likely_object_metadata(meta: &ObjectMeta) -> bool {
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    set(&meta.name)
        || set(&meta.generate_name)
        || set(&meta.uid)
        || meta.creation_timestamp.is_some()
}

/// `obj` as the metadata client hands it out: as it came when the server sent a
/// `PartialObjectMetadata`; else, when the server sent the whole object, its metadata
/// with `apiVersion` and `kind` cleared (as client-go does); an error naming `what` when
/// it is neither.
pub(crate) fn checked(
    mut obj: PartialObjectMetadata,
    what: impl FnOnce() -> String,
) -> Result<PartialObjectMetadata> {
    if obj.is_partial() {
        return Ok(obj);
    }
    if !is_likely_object_metadata(&obj.metadata) {
        let found = describe_object(&obj.kind, &obj.metadata);
        let reason = format!(
            "the server sent neither a PartialObjectMetadata nor an object with metadata \
             (got {found}: no name, generateName, uid or creationTimestamp)"
        );
        return Err(Error::decode(what(), serde::de::Error::custom(reason), b""));
    }
    obj.api_version.clear();
    obj.kind.clear();
    Ok(obj)
}

/// Each item of `list` [`checked`]; those that fail move to `skipped` (and are logged), as
/// items that do not decode do.
pub(crate) fn checked_list(
    mut list: ObjectList<PartialObjectMetadata>,
    what: &str,
) -> ObjectList<PartialObjectMetadata> {
    let items = std::mem::take(&mut list.items);
    list.items.reserve_exact(items.len());
    for (i, item) in items.into_iter().enumerate() {
        match checked(item, || format!("item {i} of {what}")) {
            Ok(item) => list.items.push(item),
            Err(e) => {
                tracing::warn!(error = %e, "skipping a listed object without metadata");
                list.skipped.push(e);
            }
        }
    }
    list
}

/// The object of an `ADDED`, `MODIFIED` or `DELETED` event [`checked`]; other events as
/// they are.
pub(crate) fn checked_event(
    event: WatchEvent<PartialObjectMetadata>,
    what: &str,
) -> Result<WatchEvent<PartialObjectMetadata>> {
    let kind = event.type_name();
    let what = || format!("{kind} event of {what}");
    Ok(match event {
        WatchEvent::Added(obj) => WatchEvent::Added(checked(obj, what)?),
        WatchEvent::Modified(obj) => WatchEvent::Modified(checked(obj, what)?),
        WatchEvent::Deleted(obj) => WatchEvent::Deleted(checked(obj, what)?),
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(value: serde_json::Value) -> PartialObjectMetadata {
        serde_json::from_value(value).expect("decodes")
    }

    #[test]
    fn a_partial_object_is_kept_as_the_server_sent_it() {
        let obj = decode(json!({
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
        }));
        assert!(obj.is_partial());
        let kept = checked(obj.clone(), || unreachable!()).expect("metadata");
        assert_eq!(kept, obj);
        assert_eq!(
            serde_json::to_value(&kept).unwrap()["kind"],
            "PartialObjectMetadata"
        );
    }

    #[test]
    fn a_whole_object_gives_its_metadata_with_the_type_cleared_as_client_go_does() {
        let obj = decode(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "uid": "u"},
            "data": {"big": "x".repeat(1000)},
        }));
        assert!(!obj.is_partial());
        let kept = checked(obj, || unreachable!()).expect("metadata");
        assert_eq!(
            serde_json::to_value(&kept).unwrap(),
            json!({"metadata": {"name": "c", "namespace": "n", "uid": "u"}})
        );
    }

    #[test]
    fn an_answer_without_object_metadata_is_an_error_naming_it() {
        let status = decode(json!({
            "apiVersion": "v1", "kind": "Status", "status": "Success", "metadata": {},
        }));
        let err = checked(status, || "configmaps \"c\" from GET /api/v1/...".into())
            .expect_err("a Status has no object metadata");
        assert!(matches!(err, Error::Decode { .. }));
        assert_eq!(
            err.to_string(),
            "decoding configmaps \"c\" from GET /api/v1/...: the server sent neither a \
             PartialObjectMetadata nor an object with metadata (got Status without a name: \
             no name, generateName, uid or creationTimestamp)"
        );
    }

    #[test]
    fn null_and_missing_fields_decode_as_empty() {
        let obj = decode(json!({"kind": null, "metadata": null}));
        assert_eq!(obj, PartialObjectMetadata::default());
        assert!(serde_json::from_str::<PartialObjectMetadata>("[1]").is_err());
        assert!(
            serde_json::from_str::<PartialObjectMetadata>(r#"{"metadata":{"name":5}}"#).is_err()
        );
    }

    #[test]
    fn list_items_and_events_without_metadata_are_reported_not_kept() {
        let list = ObjectList {
            items: vec![
                decode(json!({"metadata": {"name": "a"}})),
                decode(json!({"metadata": {}})),
                PartialObjectMetadata::new(ObjectMeta {
                    name: Some("c".into()),
                    ..ObjectMeta::default()
                }),
            ],
            ..ObjectList::default()
        };
        let list = checked_list(list, "configmaps");
        let names: Vec<_> = list
            .items
            .iter()
            .map(|o| o.metadata.name.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(list.skipped.len(), 1);
        assert!(
            list.skipped[0]
                .to_string()
                .starts_with("decoding item 1 of configmaps: "),
            "{}",
            list.skipped[0]
        );

        let err = checked_event(
            WatchEvent::Modified(PartialObjectMetadata::default()),
            "pods.v1",
        )
        .expect_err("no metadata");
        assert!(
            err.to_string()
                .starts_with("decoding MODIFIED event of pods.v1: "),
            "{err}"
        );
        let bookmark = WatchEvent::Bookmark(Default::default());
        assert_eq!(
            checked_event(bookmark.clone(), "pods.v1").unwrap(),
            bookmark
        );
    }
}
